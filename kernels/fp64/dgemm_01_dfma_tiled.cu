// dgemm_01_dfma_tiled: CUDA-core DGEMM, 2D block tiling. A block of 256 threads computes a
// (BM, BN) = (64, 64) tile of C from (64, 8) tiles of A and (8, 64) tiles of B in shared memory; each
// thread computes a (TM, TN) = (4, 4) block of C as an outer product of 4 values of A and 4 of B held
// in registers.
//
// Numerics: binary64 throughout (cuda_core_fp64_fma): each of a thread's 16 accumulators starts at +0
// and gets one __fma_rn (DFMA, one rounding to nearest even) per k in increasing k, so every entry is
// the same FMA chain as the CPU's std::fma loop (reference/kernel_emulation: predicted bit for bit).
// Sizes: M, N multiples of 64, K a multiple of 8 (declared in the descriptor; other sizes are
// not_supported rows, never zero-padded, which could turn a -0 sum into +0).
#include "kernels/common/cuda_check.cuh"
#include "kernels/kernel.hpp"

namespace gemmlab::kernels {
namespace {

constexpr int BM = 64, BN = 64, BK = 8, TM = 4, TN = 4;
constexpr int THREADS = (BM / TM) * (BN / TN);  // 256
static_assert(THREADS * 2 == BM * BK, "each thread loads two entries of the A tile");
static_assert(THREADS * 2 == BK * BN, "each thread loads two entries of the B tile");

__global__ void __launch_bounds__(THREADS)
    dgemm_dfma_tiled(int M, int N, int K, const double* __restrict__ A, const double* __restrict__ B,
                     double* __restrict__ C) {
  __shared__ double As[BK][BM];  // (BK, BM): the (BM, BK) tile of A, k-major (broadcast reads)
  __shared__ double Bs[BK][BN];  // (BK, BN) tile of B, row-major
  const int tcol = threadIdx.x % (BN / TN);  // thread's (TM, TN) block: columns tcol*TN ..
  const int trow = threadIdx.x / (BN / TN);  // rows trow*TM ..
  A += (size_t)blockIdx.y * BM * K;
  B += (size_t)blockIdx.x * BN;
  C += (size_t)blockIdx.y * BM * N + (size_t)blockIdx.x * BN;

  double acc[TM][TN] = {};  // (TM, TN) block of C, +0 initially
  double regM[TM], regN[TN];
  for (int k0 = 0; k0 < K; k0 += BK) {
#pragma unroll
    for (int l = 0; l < 2; ++l) {
      const int e = threadIdx.x + l * THREADS;
      const int ar = e / BK, ac = e % BK;  // A tile entry (ar, ac)
      As[ac][ar] = A[(size_t)ar * K + k0 + ac];
      const int br = e / BN, bc = e % BN;  // B tile entry (br, bc)
      Bs[br][bc] = B[(size_t)(k0 + br) * N + bc];
    }
    __syncthreads();
#pragma unroll
    for (int k = 0; k < BK; ++k) {
#pragma unroll
      for (int i = 0; i < TM; ++i) regM[i] = As[k][trow * TM + i];
#pragma unroll
      for (int j = 0; j < TN; ++j) regN[j] = Bs[k][tcol * TN + j];
#pragma unroll
      for (int i = 0; i < TM; ++i)
#pragma unroll
        for (int j = 0; j < TN; ++j) acc[i][j] = __fma_rn(regM[i], regN[j], acc[i][j]);
    }
    __syncthreads();
  }
#pragma unroll
  for (int i = 0; i < TM; ++i)
#pragma unroll
    for (int j = 0; j < TN; ++j) C[(size_t)(trow * TM + i) * N + tcol * TN + j] = acc[i][j];
}

void launch(const GemmArgs& a) {
  dim3 grid(a.N / BN, a.M / BM);
  dgemm_dfma_tiled<<<grid, THREADS, 0, as_stream(a.stream)>>>(a.M, a.N, a.K, static_cast<const double*>(a.A),
                                                             static_cast<const double*>(a.B),
                                                             static_cast<double*>(a.C));
  GEMMLAB_LAUNCH_CHECK("dgemm_01_dfma_tiled");
}

}  // namespace

const Kernel& dgemm_01_dfma_tiled() {
  static const Kernel k{
      .name = "dgemm_01_dfma_tiled",
      .family = "fp64",
      .description = "CUDA-core DGEMM, 64x64 block tile, BK=8, each thread a 4x4 block of C, binary64 FMA in k order",
      .numerics = cuda_core_fp64_fma(),
      .layout_a = Layout::row_major, .layout_b = Layout::row_major,
      .m_multiple = BM, .n_multiple = BN, .k_multiple = BK,
      .min_cc = 50, .requires_sm90a = false, .workspace_bytes = 0,
      .launch = launch,
  };
  return k;
}

}  // namespace gemmlab::kernels
