// Plugin kernels that fail the way kernels still being written do, for the watchdog's GPU tests
// (tests/gpu/test_watchdog.cpp, scripts/lab/gpu_watchdog.sh). Built as
// tests/plugins/libgemmlab_faulting_plugin.so (target gemmlab_faulting_plugin) against the plugin C ABI
// alone, like a plugin built outside the tree.
//
//   fault_spin_fp32     waits for a flag nobody sets (a stream-K fix-up waiting for a partial that never
//                       comes): the launch never ends, and holds the GPU until its process ends
//   fault_trap_fp32     __trap(): cudaErrorLaunchFailure, after which the process's CUDA context is lost
//   fault_illegal_fp32  a store 2^40 floats past C: cudaErrorIllegalAddress, the context lost as well
//
// Each first computes C = A B as sgemm_01_naive does (one fp32 FMA chain in k order), so a launch that
// were let through would be judged as that kernel; each misbehaves on every launch.
#include <cuda_runtime.h>

#include <cstdio>
#include <cstring>

#include "gemmlab_plugin.h"

namespace {

enum class Fault { spin, trap, illegal };

__device__ int never_set = 0;

__global__ void faulting_kernel(Fault fault, int M, int N, int K, const float* __restrict__ A,
                                const float* __restrict__ B, float* __restrict__ C) {
  const int row = blockIdx.y * blockDim.y + threadIdx.y;
  const int col = blockIdx.x * blockDim.x + threadIdx.x;
  if (row < M && col < N) {
    float acc = 0.0f;
    for (int k = 0; k < K; ++k) acc = __fmaf_rn(A[(size_t)row * K + k], B[(size_t)k * N + col], acc);
    C[(size_t)row * N + col] = acc;
  }
  if (blockIdx.x != 0 || blockIdx.y != 0 || threadIdx.x != 0 || threadIdx.y != 0) return;
  switch (fault) {
    case Fault::spin:
      while (*static_cast<volatile int*>(&never_set) == 0) __nanosleep(1000);
      break;
    case Fault::trap: __trap(); break;
    case Fault::illegal: C[(size_t)1 << 40] = 1.0f; break;
  }
}

template <Fault F>
int launch(const gemmlab_gemm_args* a, char* error, size_t error_len) {
  const dim3 block(32, 8);
  const dim3 grid((a->N + 31) / 32, (a->M + 7) / 8);
  faulting_kernel<<<grid, block, 0, static_cast<cudaStream_t>(a->stream)>>>(
      F, a->M, a->N, a->K, static_cast<const float*>(a->A), static_cast<const float*>(a->B), static_cast<float*>(a->C));
  const cudaError_t e = cudaGetLastError();
  if (e == cudaSuccess) return 0;
  std::snprintf(error, error_len, "faulting_kernel: %s (%s)", cudaGetErrorName(e), cudaGetErrorString(e));
  return 1;
}

gemmlab_kernel_desc describe(const char* name, const char* what, int (*fn)(const gemmlab_gemm_args*, char*, size_t)) {
  gemmlab_kernel_desc d{};
  d.name = name;
  d.family = "plugin";
  d.description = what;
  d.input_format = d.compute_format = d.accumulator_format = d.output_format = "fp32";
  d.accumulation = "fma";
  d.instruction = nullptr;
  d.k_step = 1;
  d.promotion_interval_k = 0;
  d.split_k = 1;
  d.accumulation_rounding = "nearest_even";
  d.acc_unit_roundoff = 0.0;
  d.subnormals_flushed = 0;
  d.layout_a = d.layout_b = "row";
  d.m_multiple = d.n_multiple = d.k_multiple = 1;
  d.min_cc = 70;  // __nanosleep
  d.requires_sm90a = 0;
  d.workspace_bytes = 0;
  d.launch = fn;
  d.supports = nullptr;
  return d;
}

const gemmlab_kernel_desc kernels[] = {
    describe("fault_spin_fp32", "test plugin: waits forever for a flag nobody sets", launch<Fault::spin>),
    describe("fault_trap_fp32", "test plugin: __trap() after computing C", launch<Fault::trap>),
    describe("fault_illegal_fp32", "test plugin: a store 2^40 floats past C", launch<Fault::illegal>),
};
const gemmlab_plugin table = {GEMMLAB_PLUGIN_ABI_VERSION, sizeof(gemmlab_kernel_desc), "gemmlab_faulting_plugin",
                              static_cast<int>(sizeof kernels / sizeof kernels[0]), kernels};

}  // namespace

const gemmlab_plugin* gemmlab_plugin_v1(void) { return &table; }
