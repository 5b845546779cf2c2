// cublaslt_*: cuBLAS baselines through cublasLtMatmul, one registered entry per compute type (the
// same types as cublas_gemmex_*), and the shared cuBLASLt path every cublaslt_* kernel launches
// through (cublaslt.hpp).
//
// Numerics: the library chooses the algorithm (tile, stages, split-K and its reduction scheme)
// per size and workspace from its heuristic, so the order of summation and the rounding of the
// accumulation are unknown (Rounding::unknown, as for cublas_gemmex_*). Unlike cublasGemmEx, the
// heuristic's choice can be read back, so `gemmlab invariance` reports it per size.
// Row-major C = A*B is computed as column-major C^T = B^T A^T, so A and B stay row-major (the fp8
// kernels use the "TN" form instead: kernels/cublas/cublaslt_fp8.cu).
#include <cublasLt.h>

#include <cstdint>
#include <memory>
#include <string>
#include <map>
#include <mutex>
#include <sstream>
#include <tuple>

#include "kernels/common/cuda_check.cuh"
#include "kernels/cublas/cublaslt_problem.cuh"
#include "kernels/cublas/library_kernel.hpp"
#include "kernels/kernel.hpp"

namespace gemmlab {
namespace {

void lt_check(cublasStatus_t s, const char* what, int line) {
  if (s != CUBLAS_STATUS_SUCCESS) cublas_fail(s, what, __FILE__, line);
}
#define LT_CHECK(call) lt_check((call), #call, __LINE__)

// Descriptors of one (problem, M, N, K) on one handle; destroyed with it.
struct Descriptors {
  cublasLtMatmulDesc_t op = nullptr;
  cublasLtMatrixLayout_t a = nullptr, b = nullptr, c = nullptr;
  Descriptors(const LtProblem& p, int M, int N, int K) {
    LT_CHECK(cublasLtMatmulDescCreate(&op, p.compute, p.scale));
    const cublasOperation_t ta = p.tn ? CUBLAS_OP_T : CUBLAS_OP_N, tb = CUBLAS_OP_N;
    LT_CHECK(cublasLtMatmulDescSetAttribute(op, CUBLASLT_MATMUL_DESC_TRANSA, &ta, sizeof(ta)));
    LT_CHECK(cublasLtMatmulDescSetAttribute(op, CUBLASLT_MATMUL_DESC_TRANSB, &tb, sizeof(tb)));
    if (p.fast_accum) {
      const std::int8_t fast = 1;
      LT_CHECK(cublasLtMatmulDescSetAttribute(op, CUBLASLT_MATMUL_DESC_FAST_ACCUM, &fast, sizeof(fast)));
    }
    if (p.tn) {
      // Column-major operands: first = B as (K, N) with ld K, transposed; second = A^T as (K, M), ld K.
      LT_CHECK(cublasLtMatrixLayoutCreate(&a, p.in, K, N, K));
      LT_CHECK(cublasLtMatrixLayoutCreate(&b, p.in, K, M, K));
    } else {
      // Column-major view: C^T (N, M) = B^T (N, K) * A^T (K, M); the row-major buffers are exactly these.
      LT_CHECK(cublasLtMatrixLayoutCreate(&a, p.in, N, K, N));
      LT_CHECK(cublasLtMatrixLayoutCreate(&b, p.in, K, M, K));
    }
    LT_CHECK(cublasLtMatrixLayoutCreate(&c, p.out, N, M, N));
  }
  ~Descriptors() {
    cublasLtMatmulDescDestroy(op);
    cublasLtMatrixLayoutDestroy(a);
    cublasLtMatrixLayoutDestroy(b);
    cublasLtMatrixLayoutDestroy(c);
  }
  Descriptors(const Descriptors&) = delete;
  Descriptors& operator=(const Descriptors&) = delete;
};

cublasLtMatmulAlgo_t heuristic(cublasLtHandle_t h, const LtProblem& p, const Descriptors& d, int M, int N, int K,
                               std::size_t ws) {
  cublasLtMatmulPreference_t pref = nullptr;
  LT_CHECK(cublasLtMatmulPreferenceCreate(&pref));
  LT_CHECK(cublasLtMatmulPreferenceSetAttribute(pref, CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES, &ws, sizeof(ws)));
  cublasLtMatmulHeuristicResult_t res{};
  int found = 0;
  cublasStatus_t st = cublasLtMatmulAlgoGetHeuristic(h, d.op, d.a, d.b, d.c, d.c, pref, 1, &res, &found);
  cublasLtMatmulPreferenceDestroy(pref);
  if (st != CUBLAS_STATUS_SUCCESS || found == 0)  // the library's refusal, not a fault: a not_supported row
    throw KernelNotSupported(std::string(p.label) + ": cuBLASLt offers no algorithm for M=" + std::to_string(M) +
                             " N=" + std::to_string(N) + " K=" + std::to_string(K) + " with " + std::to_string(ws) +
                             " bytes of workspace on this GPU (" + p.needs + ")");
  return res.algo;
}

// The heuristic's choice, kept while (problem, size, workspace, handle) repeats, so that timed
// repetitions measure the GEMM and not the query.
struct Plan {
  std::unique_ptr<Descriptors> d;
  cublasLtMatmulAlgo_t algo{};
};
Plan& plan_for(cublasLtHandle_t h, const LtProblem& p, int M, int N, int K, std::size_t ws) {
  using Key = std::tuple<const void*, const void*, int, int, int, std::size_t>;
  static thread_local std::map<Key, Plan> plans;
  Plan& plan = plans[Key{h, &p, M, N, K, ws}];
  if (!plan.d) {
    auto d = std::make_unique<Descriptors>(p, M, N, K);
    plan.algo = heuristic(h, p, *d, M, N, K, ws);
    plan.d = std::move(d);
  }
  return plan;
}

template <typename T>
std::string attr(const cublasLtMatmulAlgo_t& algo, cublasLtMatmulAlgoConfigAttributes_t a) {
  T v{};
  std::size_t written = 0;
  if (cublasLtMatmulAlgoConfigGetAttribute(&algo, a, &v, sizeof(v), &written) != CUBLAS_STATUS_SUCCESS) return "?";
  return std::to_string(static_cast<long long>(v));
}

const char* reduction_name(const std::string& id) {
  if (id == std::to_string(CUBLASLT_REDUCTION_SCHEME_NONE)) return "none";
  if (id == std::to_string(CUBLASLT_REDUCTION_SCHEME_INPLACE)) return "inplace";
  if (id == std::to_string(CUBLASLT_REDUCTION_SCHEME_COMPUTE_TYPE)) return "compute_type";
  if (id == std::to_string(CUBLASLT_REDUCTION_SCHEME_OUTPUT_TYPE)) return "output_type";
  return "?";
}

std::string describe(const cublasLtMatmulAlgo_t& algo) {
  std::ostringstream s;
  const std::string splitk = attr<std::uint32_t>(algo, CUBLASLT_ALGO_CONFIG_SPLITK_NUM);
  s << "algo " << attr<std::int32_t>(algo, CUBLASLT_ALGO_CONFIG_ID) << " tile "
    << attr<std::uint32_t>(algo, CUBLASLT_ALGO_CONFIG_TILE_ID) << " stages "
    << attr<std::uint32_t>(algo, CUBLASLT_ALGO_CONFIG_STAGES_ID) << " split-K " << (splitk == "0" ? "1" : splitk)
    << " reduction " << reduction_name(attr<std::uint32_t>(algo, CUBLASLT_ALGO_CONFIG_REDUCTION_SCHEME))
    << " swizzle " << attr<std::uint32_t>(algo, CUBLASLT_ALGO_CONFIG_CTA_SWIZZLING) << " custom "
    << attr<std::uint32_t>(algo, CUBLASLT_ALGO_CONFIG_CUSTOM_OPTION);
  return s.str();
}

}  // namespace

void cublaslt_launch(const GemmArgs& g) {
  auto h = static_cast<cublasLtHandle_t>(g.cublaslt);
  const auto* p = static_cast<const LtProblem*>(g.context);
  if (!h || !p) throw std::runtime_error("cublaslt: the harness passed no cuBLASLt handle or no problem (context)");
  Plan& plan = plan_for(h, *p, g.M, g.N, g.K, g.workspace_bytes);
  // alpha = 1, beta = 0 in the problem's scale type (fp16, int32 for the int8 GEMM, else fp32).
  const float one = 1.0f, zero = 0.0f;
  const __half one_h = __float2half(1.0f), zero_h = __float2half(0.0f);
  const std::int32_t one_i = 1, zero_i = 0;
  const void* alpha = p->scale == CUDA_R_16F   ? static_cast<const void*>(&one_h)
                      : p->scale == CUDA_R_32I ? static_cast<const void*>(&one_i)
                                               : static_cast<const void*>(&one);
  const void* beta = p->scale == CUDA_R_16F   ? static_cast<const void*>(&zero_h)
                     : p->scale == CUDA_R_32I ? static_cast<const void*>(&zero_i)
                                              : static_cast<const void*>(&zero);
  LT_CHECK(cublasLtMatmul(h, plan.d->op, alpha, g.B, plan.d->a, g.A, plan.d->b, beta, g.C, plan.d->c, g.C,
                          plan.d->c, &plan.algo, g.workspace, g.workspace_bytes, as_stream(g.stream)));
}

bool is_cublaslt(const Kernel& k) { return k.launch == cublaslt_launch && k.context != nullptr; }

std::string cublaslt_algorithm(const Kernel& k, int M, int N, int K, std::size_t workspace_bytes, void* lt_handle) {
  if (!is_cublaslt(k)) return "";
  auto h = static_cast<cublasLtHandle_t>(lt_handle);
  if (!h) {
    static thread_local cublasLtHandle_t own = nullptr;  // never destroyed: lives as long as the thread
    if (!own) LT_CHECK(cublasLtCreate(&own));
    h = own;
  }
  return describe(plan_for(h, *static_cast<const LtProblem*>(k.context), M, N, K, workspace_bytes).algo);
}

namespace kernels {
namespace {

constexpr std::size_t kWorkspace = 32u << 20;  // 32 MiB, as cuBLAS recommends for Hopper

}  // namespace

#define GEMMLAB_CUBLASLT_VARIANT(id, desc, in, compute, acc, out, InT, OutT, ComputeT, ScaleT, min_cc)          \
  const Kernel& id() {                                                                                         \
    static const LtProblem problem{#id, InT, OutT, ComputeT, ScaleT, false, false, "compute capability " #min_cc}; \
    static const Kernel k = library_kernel(#id, desc, Format::in, Format::compute, Format::acc, Format::out,      \
                                           cublaslt_launch, min_cc, kWorkspace, &problem);                       \
    return k;                                                                                                  \
  }

GEMMLAB_CUBLASLT_VARIANT(cublaslt_fp32_pedantic, "cuBLASLt fp32, CUBLAS_COMPUTE_32F_PEDANTIC (CUDA cores)", fp32, fp32,
                         fp32, fp32, CUDA_R_32F, CUDA_R_32F, CUBLAS_COMPUTE_32F_PEDANTIC, CUDA_R_32F, 50)
GEMMLAB_CUBLASLT_VARIANT(cublaslt_fp32_fast_tf32, "cuBLASLt fp32 in/out, CUBLAS_COMPUTE_32F_FAST_TF32", fp32, tf32,
                         fp32, fp32, CUDA_R_32F, CUDA_R_32F, CUBLAS_COMPUTE_32F_FAST_TF32, CUDA_R_32F, 80)
GEMMLAB_CUBLASLT_VARIANT(cublaslt_fp16_f32, "cuBLASLt fp16 in, fp32 compute and out", fp16, fp16, fp32, fp32,
                         CUDA_R_16F, CUDA_R_32F, CUBLAS_COMPUTE_32F, CUDA_R_32F, 70)
GEMMLAB_CUBLASLT_VARIANT(cublaslt_bf16_f32, "cuBLASLt bf16 in, fp32 compute and out", bf16, bf16, fp32, fp32,
                         CUDA_R_16BF, CUDA_R_32F, CUBLAS_COMPUTE_32F, CUDA_R_32F, 80)
GEMMLAB_CUBLASLT_VARIANT(cublaslt_fp16_f16, "cuBLASLt fp16 in, fp16 compute and out", fp16, fp16, fp16, fp16,
                         CUDA_R_16F, CUDA_R_16F, CUBLAS_COMPUTE_16F, CUDA_R_16F, 70)

}  // namespace kernels
}  // namespace gemmlab
