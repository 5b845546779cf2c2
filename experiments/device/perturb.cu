// Schedule perturbations on the GPU (see perturb.hpp).
#include "experiments/device/perturb.hpp"
#include "experiments/device/device_free.hpp"

#include <cuda.h>
#include <cuda_runtime.h>
#include <cudaTypedefs.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdint>
#include <map>
#include <stdexcept>
#include <string>

#include "experiments/device/runner.hpp"
#include "kernels/common/cuda_check.cuh"

namespace gemmlab {

std::string Perturbation::name() const {
  return (kind == Kind::fewer_sms ? "fewer_sms_" : "busy_sms_") + std::to_string(sms);
}

std::string Perturbation::words(int sm_count) const {
  const std::string of = std::to_string(sms) + " of the GPU's " + std::to_string(sm_count) + " SMs";
  return kind == Kind::fewer_sms ? "in a green context of " + of
                                 : "beside a kernel holding " + of + " from before each launch to its end";
}

double Perturbation::patience_seconds(double undisturbed, int sm_count) const {
  const int left = kind == Kind::fewer_sms ? sms : sm_count - sms;
  return std::max(20.0, 50.0 * undisturbed * sm_count / std::max(1, left));
}

double Perturbation::release_seconds(double undisturbed, int sm_count) const {
  constexpr double kFloor = 0.05, kLimit = 10.0;  // kLimit: the holding blocks' own (kHoldLimitNs)
  if (!(undisturbed > 0)) return kLimit;
  const int left = kind == Kind::fewer_sms ? sms : sm_count - sms;
  return std::clamp(20.0 * undisturbed * sm_count / std::max(1, left), kFloor, kLimit);
}

std::optional<Perturbation> parse_perturbation(const std::string& name) {
  for (auto [prefix, kind] : {std::pair{"fewer_sms_", Perturbation::Kind::fewer_sms},
                              std::pair{"busy_sms_", Perturbation::Kind::busy_sms}}) {
    const std::string p = prefix;
    if (name.rfind(p, 0) != 0 || name.size() == p.size()) continue;
    const std::string digits = name.substr(p.size());
    if (digits.find_first_not_of("0123456789") != std::string::npos || digits.size() > 4) return std::nullopt;
    const int n = std::stoi(digits);
    if (n < 1) return std::nullopt;
    return Perturbation{kind, n};
  }
  return std::nullopt;
}

std::vector<Perturbation> default_perturbations(int sm_count) {
  const int half = std::max(8, sm_count / 2 / 8 * 8);
  std::vector<Perturbation> out{{Perturbation::Kind::fewer_sms, half}};
  if (sm_count > 32) out.push_back({Perturbation::Kind::fewer_sms, 16});
  out.push_back({Perturbation::Kind::busy_sms, sm_count / 2});
  return out;
}

namespace {

// The spinner's state in device memory. `resident` counts the blocks that started, `release` is set
// after the launch, `expired` counts the blocks that left on their own time limit. The early release
// (before()'s release_after) is that limit itself, kept by the blocks on the GPU's global timer: two
// releases from the host while the launch ran (a copy on a stream of its own, then a store to mapped
// host memory the blocks polled, from a host thread) were never seen on the H200 (2026-11-29): every
// hold lasted the blocks' 10 s.
struct SpinState {
  unsigned resident, release, expired;
  unsigned beside;  // set by the wait on the launch's stream: it ran while every holding block still held its SM
};

__device__ __forceinline__ unsigned long long global_ns() {
  unsigned long long t;
  asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t));
  return t;
}

// One block per SM held: the dynamic shared memory it asks for (the SM's whole) keeps every other
// block that needs shared memory off that SM; one thread spins, the others wait at the barrier.
__global__ void __launch_bounds__(1024) hold_sms_kernel(SpinState* s, unsigned long long limit_ns) {
  extern __shared__ unsigned char held[];
  if (threadIdx.x == 0) {
    held[0] = 1;
    atomicAdd(&s->resident, 1u);
    const unsigned long long t0 = global_ns();
    while (atomicAdd(&s->release, 0u) == 0) {
      if (global_ns() - t0 > limit_ns) {
        atomicAdd(&s->expired, 1u);
        break;
      }
      __nanosleep(2000);
    }
  }
  __syncthreads();
}

// On the launch's stream: waits until `want` spinner blocks are resident (or the limit passes).
__global__ void wait_resident_kernel(SpinState* s, unsigned want, unsigned long long limit_ns) {
  const unsigned long long t0 = global_ns();
  while (atomicAdd(&s->resident, 0u) < want && global_ns() - t0 < limit_ns) __nanosleep(1000);
  s->beside = atomicAdd(&s->resident, 0u) >= want && atomicAdd(&s->expired, 0u) == 0u;
}

__global__ void release_kernel(SpinState* s) { atomicExch(&s->release, 1u); }

// A driver entry point by name, or nullptr (the driver is older than `version`).
template <class F>
F driver_entry(const char* symbol, unsigned version) {
  void* fn = nullptr;
  cudaDriverEntryPointQueryResult found{};
  if (cudaGetDriverEntryPointByVersion(symbol, &fn, version, cudaEnableDefault, &found) != cudaSuccess ||
      found != cudaDriverEntryPointSuccess)
    return nullptr;
  return reinterpret_cast<F>(fn);
}

std::string cu_error(CUresult r) { return "CUDA driver error " + std::to_string(static_cast<int>(r)); }

// The spinner's own time limit: a kernel that needs every SM at once (stream-K) still ends, after it.
// Below the 20 s a perturbed launch may take before the runner gives up on it.
constexpr unsigned long long kHoldLimitNs = 10ull * 1000 * 1000 * 1000;
constexpr unsigned long long kResidentLimitNs = 1000ull * 1000 * 1000;   // waiting for it to hold its SMs
// The first trial's hold (Impl::probe_corun): long beside the microseconds a kernel takes to start on
// another stream, short beside the 10 s every trial would wait on a GPU that cannot run it beside the hold.
constexpr unsigned long long kProbeHoldNs = 250ull * 1000 * 1000;

}  // namespace

struct Perturber::Impl {
  int device = 0;
  int sms = 0;
  std::size_t max_smem = 0;
  // Green contexts (fewer_sms), by SM count: the stream, or why there is none.
  struct Green {
    CUgreenCtx ctx = nullptr;
    CUstream stream = nullptr;
    std::string why;
  };
  std::map<int, Green> green;
  // The spinner (busy_sms).
  SpinState* state = nullptr;
  cudaStream_t spin_stream = nullptr;
  bool spinner_ready = false;
  std::string spinner_why;
  // Why busy_sms cannot be applied here, once a trial found it (probe_corun, before()): available()'s answer
  // from then on.
  std::string no_corun;
  bool corun_probed = false;
  cudaStream_t probe_stream = nullptr;
  // The hold's limit (before()'s release_after where it is below the blocks' own 10 s), for after()'s words.
  double release_after = 0;

  PFN_cuGreenCtxDestroy_v12040 green_destroy = nullptr;

  Green make_green(int n) {
    Green g;
    auto get_resource = driver_entry<PFN_cuDeviceGetDevResource_v12040>("cuDeviceGetDevResource", 12040);
    auto split = driver_entry<PFN_cuDevSmResourceSplitByCount_v12040>("cuDevSmResourceSplitByCount", 12040);
    auto desc_of = driver_entry<PFN_cuDevResourceGenerateDesc_v12040>("cuDevResourceGenerateDesc", 12040);
    auto create = driver_entry<PFN_cuGreenCtxCreate_v12040>("cuGreenCtxCreate", 12040);
    auto stream_create = driver_entry<PFN_cuGreenCtxStreamCreate_v12050>("cuGreenCtxStreamCreate", 12050);
    auto device_get = driver_entry<PFN_cuDeviceGet_v2000>("cuDeviceGet", 2000);
    green_destroy = driver_entry<PFN_cuGreenCtxDestroy_v12040>("cuGreenCtxDestroy", 12040);
    if (!get_resource || !split || !desc_of || !create || !stream_create || !device_get || !green_destroy) {
      g.why = "this CUDA driver has no green contexts (cuGreenCtxCreate and cuGreenCtxStreamCreate need CUDA 12.5)";
      return g;
    }
    CUdevice dev{};
    if (CUresult r = device_get(&dev, device); r != CUDA_SUCCESS) {
      g.why = "cuDeviceGet: " + cu_error(r);
      return g;
    }
    CUdevResource all{};
    if (CUresult r = get_resource(dev, &all, CU_DEV_RESOURCE_TYPE_SM); r != CUDA_SUCCESS) {
      g.why = "cuDeviceGetDevResource: " + cu_error(r);
      return g;
    }
    if (n >= static_cast<int>(all.sm.smCount)) {
      g.why = "the GPU has " + std::to_string(all.sm.smCount) + " SMs: a green context of " + std::to_string(n) +
              " is no fewer";
      return g;
    }
    CUdevResource part{}, rest{};
    unsigned groups = 1;
    if (CUresult r = split(&part, &groups, &all, &rest, 0, static_cast<unsigned>(n)); r != CUDA_SUCCESS || groups < 1) {
      g.why = "cuDevSmResourceSplitByCount(" + std::to_string(n) + " SMs): " + cu_error(r) +
              " (partitions on this GPU are multiples of " + std::to_string(all.sm.smCoscheduledAlignment) +
              " SMs, at least " + std::to_string(all.sm.minSmPartitionSize) + ")";
      return g;
    }
    if (static_cast<int>(part.sm.smCount) != n) {
      g.why = "a green context of " + std::to_string(n) + " SMs cannot be made here: the split gave " +
              std::to_string(part.sm.smCount) + " (partitions are multiples of " +
              std::to_string(all.sm.smCoscheduledAlignment) + " SMs)";
      return g;
    }
    CUdevResourceDesc desc{};
    if (CUresult r = desc_of(&desc, &part, 1); r != CUDA_SUCCESS) {
      g.why = "cuDevResourceGenerateDesc: " + cu_error(r);
      return g;
    }
    if (CUresult r = create(&g.ctx, desc, dev, CU_GREEN_CTX_DEFAULT_STREAM); r != CUDA_SUCCESS) {
      g.why = "cuGreenCtxCreate: " + cu_error(r);
      g.ctx = nullptr;
      return g;
    }
    if (CUresult r = stream_create(&g.stream, g.ctx, CU_STREAM_NON_BLOCKING, 0); r != CUDA_SUCCESS) {
      g.why = "cuGreenCtxStreamCreate: " + cu_error(r);
      green_destroy(g.ctx);
      g.ctx = nullptr;
      g.stream = nullptr;
    }
    return g;
  }

  // Whether a kernel on another stream starts once `n` holding blocks hold their SMs, as a launch under
  // busy_sms must, found once with a hold of kProbeHoldNs: the host waits until they are resident (a copy
  // of their count, on another stream), then launches a one-thread kernel there. A GPU that runs neither
  // the copy nor the kernel beside them before they leave (the H200 of 2026-11-29,
  // results/probes/h200_20261129_corun_kill/corun.log) sets no_corun, and no trial waits out a hold.
  // Blocks that do not all become resident (other work on the GPU) leave the question to before().
  void probe_corun(unsigned n) {
    corun_probed = true;
    if (!spinner_ready) make_spinner();
    if (!probe_stream) GEMMLAB_CUDA_CHECK(cudaStreamCreateWithFlags(&probe_stream, cudaStreamNonBlocking));
    GEMMLAB_CUDA_CHECK(cudaMemset(state, 0, sizeof(SpinState)));  // synchronous: read from zero
    hold_sms_kernel<<<n, 1024, max_smem, spin_stream>>>(state, kProbeHoldNs);
    GEMMLAB_LAUNCH_CHECK("hold_sms_kernel");
    SpinState h{};
    const auto t0 = std::chrono::steady_clock::now();
    do {  // the kernel below must start after they hold their SMs, not before (it would then run anyway)
      GEMMLAB_CUDA_CHECK(cudaMemcpyAsync(&h, state, sizeof h, cudaMemcpyDeviceToHost, probe_stream));
      GEMMLAB_CUDA_CHECK(cudaStreamSynchronize(probe_stream));
    } while (h.resident < n && !h.expired &&
             std::chrono::steady_clock::now() - t0 < std::chrono::nanoseconds(kResidentLimitNs));
    if (h.resident >= n && !h.expired) {
      wait_resident_kernel<<<1, 1, 0, probe_stream>>>(state, n, kResidentLimitNs);
      GEMMLAB_LAUNCH_CHECK("wait_resident_kernel");
      GEMMLAB_CUDA_CHECK(cudaStreamSynchronize(probe_stream));
      GEMMLAB_CUDA_CHECK(cudaMemcpyAsync(&h, state, sizeof h, cudaMemcpyDeviceToHost, probe_stream));
      GEMMLAB_CUDA_CHECK(cudaStreamSynchronize(probe_stream));
      if (!h.beside) no_corun = kNoCorun;
    } else if (h.resident >= n) {
      no_corun = kNoCorun;  // the copy itself waited until they had left
    }
    release_kernel<<<1, 1, 0, probe_stream>>>(state);
    GEMMLAB_LAUNCH_CHECK("release_kernel");
    GEMMLAB_CUDA_CHECK(cudaStreamSynchronize(spin_stream));
  }
  static constexpr const char* kNoCorun =
      "this GPU did not run the launch's stream beside the holding blocks (the launch could start only once they "
      "had reached their limit): the SMs cannot be held during a launch here";

  void make_spinner() {
    spinner_ready = true;
    int optin = 0;
    GEMMLAB_CUDA_CHECK(cudaDeviceGetAttribute(&optin, cudaDevAttrMaxSharedMemoryPerBlockOptin, device));
    max_smem = static_cast<std::size_t>(optin);
    GEMMLAB_CUDA_CHECK(cudaFuncSetAttribute(hold_sms_kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, optin));
    GEMMLAB_CUDA_CHECK(cudaMalloc(&state, sizeof(SpinState)));
    GEMMLAB_CUDA_CHECK(cudaStreamCreateWithFlags(&spin_stream, cudaStreamNonBlocking));
  }
};

Perturber::Perturber(int device) : impl_(std::make_unique<Impl>()) {
  impl_->device = device;
  impl_->sms = query_device(device).sm_count;
}

Perturber::~Perturber() {
  for (auto& [n, g] : impl_->green) {
    if (g.stream) cudaStreamDestroy(reinterpret_cast<cudaStream_t>(g.stream));
    if (g.ctx && impl_->green_destroy) impl_->green_destroy(g.ctx);
  }
  if (impl_->spin_stream) cudaStreamDestroy(impl_->spin_stream);
  if (impl_->probe_stream) cudaStreamDestroy(impl_->probe_stream);
  if (impl_->state) device_free(impl_->state);
}

int Perturber::sm_count() const { return impl_->sms; }

std::string Perturber::available(const Perturbation& p) {
  Impl& m = *impl_;
  if (p.sms < 1 || p.sms >= m.sms)
    return p.name() + ": the GPU has " + std::to_string(m.sms) + " SMs; give between 1 and " + std::to_string(m.sms - 1);
  if (p.kind == Perturbation::Kind::busy_sms) {
    // The launch's own blocks and the wait kernel need SMs the spinner leaves free.
    if (p.sms > m.sms - 8) return p.name() + ": leave at least 8 of the " + std::to_string(m.sms) + " SMs free";
    if (!m.corun_probed) m.probe_corun(static_cast<unsigned>(p.sms));
    return m.no_corun.empty() ? "" : p.name() + ": " + m.no_corun;
  }
  auto it = m.green.find(p.sms);
  if (it == m.green.end()) it = m.green.emplace(p.sms, m.make_green(p.sms)).first;
  return it->second.why.empty() ? "" : p.name() + ": " + it->second.why;
}

void* Perturber::stream(const Perturbation& p, void* base) {
  if (p.kind != Perturbation::Kind::fewer_sms) return base;
  if (std::string why = available(p); !why.empty()) throw std::runtime_error(why);
  return reinterpret_cast<void*>(impl_->green.at(p.sms).stream);
}

void Perturber::before(const Perturbation& p, void* launch_stream, double release_after) {
  if (p.kind != Perturbation::Kind::busy_sms) return;
  Impl& m = *impl_;
  if (std::string why = available(p); !why.empty()) {
    if (!m.no_corun.empty()) throw PerturbationUnavailable(why);
    throw std::runtime_error(why);
  }
  if (!m.spinner_ready) m.make_spinner();
  const auto s = static_cast<cudaStream_t>(launch_stream);
  // The hold lasts until after() releases it, or its limit: release_after where that is below the
  // blocks' own 10 s (a launch still running then waits for the held SMs), kept on the GPU.
  const double limit = release_after > 0 ? std::min(release_after, static_cast<double>(kHoldLimitNs) * 1e-9)
                                         : static_cast<double>(kHoldLimitNs) * 1e-9;
  m.release_after = limit;
  // The previous hold ended with its launch (the spin stream is in order): start from zero, before the wait
  // on the launch's stream (another stream) can read the state.
  GEMMLAB_CUDA_CHECK(cudaMemsetAsync(m.state, 0, sizeof(SpinState), m.spin_stream));
  GEMMLAB_CUDA_CHECK(cudaStreamSynchronize(m.spin_stream));
  hold_sms_kernel<<<p.sms, 1024, m.max_smem, m.spin_stream>>>(m.state, static_cast<unsigned long long>(limit * 1e9));
  GEMMLAB_LAUNCH_CHECK("hold_sms_kernel");
  wait_resident_kernel<<<1, 1, 0, s>>>(m.state, static_cast<unsigned>(p.sms), kResidentLimitNs);
  GEMMLAB_LAUNCH_CHECK("wait_resident_kernel");
  // On the host too: a kernel on streams gemmlab cannot see (JAX) starts only after this returns.
  GEMMLAB_CUDA_CHECK(cudaStreamSynchronize(s));
  SpinState h{};
  GEMMLAB_CUDA_CHECK(cudaMemcpy(&h, m.state, sizeof h, cudaMemcpyDeviceToHost));
  if (h.resident < static_cast<unsigned>(p.sms) || !h.beside) {
    release_kernel<<<1, 1, 0, s>>>(m.state);
    GEMMLAB_LAUNCH_CHECK("release_kernel");
    GEMMLAB_CUDA_CHECK(cudaStreamSynchronize(m.spin_stream));
    if (h.resident >= static_cast<unsigned>(p.sms)) {  // the wait on the launch's stream ran only once the hold was over
      // Worded without this trial's counts: the same reason for every launch after it (available()).
      m.no_corun = Impl::kNoCorun;
      throw PerturbationUnavailable(p.name() + ": " + m.no_corun);
    }
    throw std::runtime_error(p.name() + ": only " + std::to_string(h.resident) + " of the " + std::to_string(p.sms) +
                             " holding blocks became resident within a second (other work on the GPU?)");
  }
}

std::string Perturber::after(const Perturbation& p, void* launch_stream) {
  if (p.kind != Perturbation::Kind::busy_sms) return "";
  Impl& m = *impl_;
  const auto s = static_cast<cudaStream_t>(launch_stream);
  release_kernel<<<1, 1, 0, s>>>(m.state);
  GEMMLAB_LAUNCH_CHECK("release_kernel");
  // The spinner ends when the launch has (the release above runs after it), or at its limit if that
  // comes first; only then is it known whether the launch ended under the hold.
  GEMMLAB_CUDA_CHECK(cudaStreamSynchronize(m.spin_stream));
  SpinState h{};
  GEMMLAB_CUDA_CHECK(cudaMemcpy(&h, m.state, sizeof h, cudaMemcpyDeviceToHost));
  if (!h.expired) return "";
  char what[64];
  std::snprintf(what, sizeof what, "%.0f ms", 1e3 * m.release_after);
  if (m.release_after < static_cast<double>(kHoldLimitNs) * 1e-9)
    return p.name() + ": the launch had not ended " + what + " after the " + std::to_string(p.sms) +
           " SMs were taken (20 times its time undisturbed on the SMs left): it waits for the held SMs (a grid "
           "sized for the whole GPU), so they were released before it ended";
  return p.name() + ": " + std::to_string(h.expired) + " holding blocks reached their " +
         std::to_string(kHoldLimitNs / 1000000000ull) + " s limit before the launch ended";
}

}  // namespace gemmlab
