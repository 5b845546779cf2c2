// sgemm_plugin_naive: gemmlab's example plugin, a kernel gemmlab loads at run time through the C ABI
// of kernels/plugin/gemmlab_plugin.h instead of building it in. It includes that header and the
// CUDA runtime, nothing of gemmlab, and builds outside the tree with one line:
//
//   nvcc -O3 -arch=sm_90 -shared -Xcompiler -fPIC -I<gemmlab>/kernels/plugin \
//        sgemm_plugin_naive.cu -o libsgemm_plugin_naive.so
//   gemmlab run --plugin ./libsgemm_plugin_naive.so -k sgemm_plugin_naive,sgemm_01_naive -s 1024
//
// (CMake builds it as build/libgemmlab_example_plugin.so, target gemmlab_example_plugin.)
//
// Numerics: fp32 in, fp32 out. C(i,j) = fma(A(i,K-1), B(K-1,j), ... fma(A(i,0), B(0,j), +0)): one
// fp32 FMA per k, in increasing k, each rounding to nearest-even; exactly kernels/simt/
// sgemm_01_naive.cu's arithmetic, so its rows equal sgemm_01_naive's in every statistic, and it
// declares accumulation "fma", so `gemmlab predict` computes every output bit and `gemmlab order`
// expects one chain.
#include <cuda_runtime.h>

#include <cstdio>

#include "gemmlab_plugin.h"

namespace {

// Thread (tx, ty) of block (bx, by) computes C(by*8 + ty, bx*32 + tx): consecutive threads of a warp
// take consecutive columns, so a warp reads one row of B and writes one row of C contiguously (the
// mapping of sgemm_02_coalesce). The mapping changes no output bit: each entry is one thread's chain.
__global__ void sgemm_plugin_naive_kernel(int M, int N, int K, const float* __restrict__ A, const float* __restrict__ B,
                                          float* __restrict__ C) {
  const int row = blockIdx.y * blockDim.y + threadIdx.y;
  const int col = blockIdx.x * blockDim.x + threadIdx.x;
  if (row >= M || col >= N) return;
  float acc = 0.0f;
  for (int k = 0; k < K; ++k) acc = __fmaf_rn(A[(size_t)row * K + k], B[(size_t)k * N + col], acc);
  C[(size_t)row * N + col] = acc;
}

// Enqueues on gemmlab's stream and returns; a launch error comes back as a message, never a throw.
int launch(const gemmlab_gemm_args* a, char* error, size_t error_len) {
  const dim3 block(32, 8);
  const dim3 grid((a->N + 31) / 32, (a->M + 7) / 8);
  sgemm_plugin_naive_kernel<<<grid, block, 0, static_cast<cudaStream_t>(a->stream)>>>(
      a->M, a->N, a->K, static_cast<const float*>(a->A), static_cast<const float*>(a->B), static_cast<float*>(a->C));
  const cudaError_t e = cudaGetLastError();
  if (e == cudaSuccess) return 0;
  std::snprintf(error, error_len, "sgemm_plugin_naive_kernel<<<(%u, %u), (32, 8)>>>: %s (%s)", grid.x, grid.y,
                cudaGetErrorName(e), cudaGetErrorString(e));
  return 1;
}

gemmlab_kernel_desc describe() {
  gemmlab_kernel_desc d{};
  d.name = "sgemm_plugin_naive";
  d.family = "plugin";
  d.description = "example plugin: one thread per output, fp32 FMA in k order (sgemm_01_naive's numerics)";
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
  d.min_cc = 50;
  d.requires_sm90a = 0;
  d.workspace_bytes = 0;
  d.launch = launch;
  d.supports = nullptr;
  return d;
}

const gemmlab_kernel_desc kernels[] = {describe()};
const gemmlab_plugin table = {GEMMLAB_PLUGIN_ABI_VERSION, sizeof(gemmlab_kernel_desc), "gemmlab_example_plugin",
                              static_cast<int>(sizeof kernels / sizeof kernels[0]), kernels};

}  // namespace

// Declared extern "C" by the header: the symbol gemmlab looks up.
const gemmlab_plugin* gemmlab_plugin_v1(void) { return &table; }
