// Library kernels under other settings; see library_variants.hpp.
#include "experiments/device/library_variants.hpp"
#include "experiments/device/device_free.hpp"

#include <cublasLt.h>
#include <cublas_v2.h>
#include <cuda_runtime.h>

#include <cstdlib>
#include <mutex>
#include <optional>

#include "experiments/plan/plan.hpp"
#include "kernels/common/cuda_check.cuh"
#include "kernels/cublas/cublaslt.hpp"

namespace gemmlab {
namespace {

constexpr std::size_t kLarge = 256u << 20;

// CUBLAS_WORKSPACE_CONFIG set to `value` while a handle is created, then put back as it was.
class ScopedWorkspaceConfig {
 public:
  explicit ScopedWorkspaceConfig(const std::string& value) : active_(!value.empty()) {
    if (!active_) return;
    if (const char* old = std::getenv("CUBLAS_WORKSPACE_CONFIG")) old_ = old;
    setenv("CUBLAS_WORKSPACE_CONFIG", value.c_str(), 1);
  }
  ~ScopedWorkspaceConfig() {
    if (!active_) return;
    if (old_) setenv("CUBLAS_WORKSPACE_CONFIG", old_->c_str(), 1);
    else unsetenv("CUBLAS_WORKSPACE_CONFIG");
  }

 private:
  bool active_;
  std::optional<std::string> old_;
};

std::optional<std::size_t> workspace_bytes(const LibrarySetting& s) {
  if (s.workspace == "default") return std::nullopt;
  if (s.workspace == "large") return kLarge;
  return std::stoull(s.workspace);
}

// The handles, workspace and stream of one variant, made on its first launch (on that GPU).
struct VariantState {
  const Kernel* base = nullptr;
  LibrarySetting setting;
  std::once_flag made;
  cublasHandle_t blas = nullptr;
  cublasLtHandle_t lt = nullptr;
  void* workspace = nullptr;
  std::size_t workspace_bytes = 0;
  cudaStream_t stream = nullptr;
  cudaEvent_t before = nullptr, after = nullptr;

  void make() {
    ScopedWorkspaceConfig env(setting.workspace_config);
    GEMMLAB_CUBLAS_CHECK(cublasCreate(&blas));
    GEMMLAB_CUBLAS_CHECK(cublasSetMathMode(blas, CUBLAS_DEFAULT_MATH));
    GEMMLAB_CUBLAS_CHECK(cublasLtCreate(&lt));
    const std::optional<std::size_t> ws = gemmlab::workspace_bytes(setting);
    // cublasGemmEx: "default" leaves the handle's own workspace (sized by CUBLAS_WORKSPACE_CONFIG);
    // cuBLASLt has no workspace of its own, so "default" there is the kernel's Kernel::workspace_bytes.
    workspace_bytes = ws ? *ws : (is_cublaslt(*base) ? base->workspace_bytes : 0);
    if (workspace_bytes) GEMMLAB_CUDA_CHECK(cudaMalloc(&workspace, workspace_bytes));
    if (ws) GEMMLAB_CUBLAS_CHECK(cublasSetWorkspace(blas, workspace, workspace_bytes));
    if (setting.own_stream) {
      GEMMLAB_CUDA_CHECK(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking));
      GEMMLAB_CUDA_CHECK(cudaEventCreateWithFlags(&before, cudaEventDisableTiming));
      GEMMLAB_CUDA_CHECK(cudaEventCreateWithFlags(&after, cudaEventDisableTiming));
    }
  }
  ~VariantState() {
    if (blas) cublasDestroy(blas);
    if (lt) cublasLtDestroy(lt);
    if (workspace) device_free(workspace);
    if (before) cudaEventDestroy(before);
    if (after) cudaEventDestroy(after);
    if (stream) cudaStreamDestroy(stream);
  }

  void launch(const GemmArgs& given) {
    std::call_once(made, [this] { make(); });
    GemmArgs a = given;
    a.cublas = blas;
    a.cublaslt = lt;
    a.workspace = workspace;
    a.workspace_bytes = workspace_bytes;
    a.context = base->context;
    if (!stream) return base->launch(a);
    // On the variant's stream, after everything the harness enqueued and before what it enqueues next.
    auto harness = as_stream(given.stream);
    GEMMLAB_CUDA_CHECK(cudaEventRecord(before, harness));
    GEMMLAB_CUDA_CHECK(cudaStreamWaitEvent(stream, before, 0));
    a.stream = stream;
    base->launch(a);
    GEMMLAB_CUDA_CHECK(cudaEventRecord(after, stream));
    GEMMLAB_CUDA_CHECK(cudaStreamWaitEvent(harness, after, 0));
  }
};

}  // namespace

std::string LibrarySetting::label() const {
  std::string s;
  auto add = [&](const std::string& part) { s += (s.empty() ? "" : ",") + part; };
  if (workspace != "default") add("ws=" + workspace);
  if (!workspace_config.empty()) add("cfg=" + workspace_config);
  if (own_stream) add("stream=own");
  return s.empty() ? "default" : s;
}

LibrarySetting parse_library_setting(const std::string& text) {
  LibrarySetting s;
  if (text == "default" || text.empty()) return s;
  std::size_t start = 0;
  while (start <= text.size()) {
    const std::size_t comma = text.find(',', start);
    const std::string part = text.substr(start, comma == std::string::npos ? std::string::npos : comma - start);
    const std::size_t eq = part.find('=');
    const std::string key = part.substr(0, eq), value = eq == std::string::npos ? "" : part.substr(eq + 1);
    if (key == "ws" && (value == "default" || value == "large" ||
                        (!value.empty() && value.find_first_not_of("0123456789") == std::string::npos)))
      s.workspace = value;
    else if (key == "cfg" && !value.empty())
      s.workspace_config = value;
    else if (key == "stream" && (value == "own" || value == "harness"))
      s.own_stream = value == "own";
    else
      throw UsageError("library setting '" + text + "': '" + part +
                       "' is not one of ws=default|0|large|BYTES, cfg=CUBLAS_WORKSPACE_CONFIG (e.g. :4096:8 or "
                       ":0:0), stream=own|harness (comma-separated, e.g. ws=0,cfg=:4096:8)");
    if (comma == std::string::npos) break;
    start = comma + 1;
  }
  return s;
}

bool takes_library_settings(const Kernel& k) {
  return is_cublaslt(k) || (k.numerics.accumulation == Accumulation::library && std::string(k.family) == "cublas");
}

std::size_t lt_workspace_bytes(const Kernel& k, const LibrarySetting& s) {
  const std::optional<std::size_t> ws = workspace_bytes(s);
  return ws ? *ws : k.workspace_bytes;
}

std::unique_ptr<CallableKernel> library_variant(const Kernel& base, const LibrarySetting& s) {
  auto state = std::make_shared<VariantState>();
  state->base = &base;
  state->setting = s;
  auto ck = make_callable_kernel(base.name, base.family, base.description, base.numerics, base.layout_a,
                                 base.layout_b, [state](const GemmArgs& a) { state->launch(a); }, nullptr);
  Kernel& k = ck->kernel;
  k.m_multiple = base.m_multiple;
  k.n_multiple = base.n_multiple;
  k.k_multiple = base.k_multiple;
  k.min_cc = base.min_cc;
  k.supports = base.supports;
  return ck;
}

}  // namespace gemmlab
