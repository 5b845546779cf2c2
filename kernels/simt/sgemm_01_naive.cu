// sgemm_01_naive: one thread per output entry, the textbook loop.
//
// Numerics: fp32 in, fp32 out. C(i,j) = fma(A(i,K-1), B(K-1,j), ... fma(A(i,0), B(0,j), 0)):
// one fp32 FMA per k, in increasing k, each rounding to nearest-even. This order and rounding are
// the baseline every CUDA-core variant that keeps the same order must match bit for bit.
#include "kernels/common/cuda_check.cuh"
#include "kernels/kernel.hpp"

namespace gemmlab::kernels {
namespace {

// Thread (tx, ty) of block (bx, by) computes C(bx*32 + tx, by*32 + ty), as in the worklog's first
// kernel: consecutive threads of a warp take consecutive ROWS, so each warp reads 32 different rows
// of A and writes C with a stride of N (uncoalesced). sgemm_02_coalesce swaps the mapping; the
// arithmetic, and so every output bit, is the same.
__global__ void sgemm_naive(int M, int N, int K, const float* __restrict__ A, const float* __restrict__ B,
                            float* __restrict__ C) {
  const int row = blockIdx.x * blockDim.x + threadIdx.x;
  const int col = blockIdx.y * blockDim.y + threadIdx.y;
  if (row >= M || col >= N) return;
  float acc = 0.0f;
  for (int k = 0; k < K; ++k) acc = __fmaf_rn(A[(size_t)row * K + k], B[(size_t)k * N + col], acc);
  C[(size_t)row * N + col] = acc;
}

void launch(const GemmArgs& a) {
  dim3 block(32, 32);
  dim3 grid((a.M + 31) / 32, (a.N + 31) / 32);
  sgemm_naive<<<grid, block, 0, as_stream(a.stream)>>>(a.M, a.N, a.K, static_cast<const float*>(a.A),
                                                      static_cast<const float*>(a.B), static_cast<float*>(a.C));
  GEMMLAB_LAUNCH_CHECK("sgemm_01_naive");
}

}  // namespace

const Kernel& sgemm_01_naive() {
  static const Kernel k{
      .name = "sgemm_01_naive",
      .family = "simt",
      .description = "one thread per output, fp32 FMA in k order",
      .numerics = cuda_core_fp32_fma(),
      .layout_a = Layout::row_major, .layout_b = Layout::row_major,
      .m_multiple = 1, .n_multiple = 1, .k_multiple = 1,
      .min_cc = 50, .requires_sm90a = false, .workspace_bytes = 0,
      .launch = launch,
  };
  return k;
}

}  // namespace gemmlab::kernels
