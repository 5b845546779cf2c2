// sgemm_05_blocktile_2d: Boehm's kernel 5, 2D blocktiling. A block of 256 threads computes a
// (BM, BN) = (128, 128) tile of C from (128, 8) tiles of A and (8, 128) tiles of B in shared memory;
// each thread computes a (TM, TN) = (8, 8) block of C as an outer product of 8 values of A and 8 of B
// held in registers: 16 shared-memory loads feed 64 FMAs.
//
// Numerics: identical to sgemm_01_naive: each of a thread's 64 accumulators starts at +0 and gets one
// __fmaf_rn per k in increasing k. Bit-identical to the naive kernel (tested).
// Sizes: M, N multiples of 128, K a multiple of 8 (declared in the descriptor).
#include "kernels/common/cuda_check.cuh"
#include "kernels/kernel.hpp"

namespace gemmlab::kernels {
namespace {

constexpr int BM = 128, BN = 128, BK = 8, TM = 8, TN = 8;
constexpr int THREADS = (BM / TM) * (BN / TN);  // 256
constexpr int A_ROWS_PER_PASS = THREADS / BK;   // 32 rows of the A tile loaded per pass
constexpr int B_ROWS_PER_PASS = THREADS / BN;   // 2 rows of the B tile loaded per pass
static_assert(THREADS % BK == 0 && BM % A_ROWS_PER_PASS == 0, "A tile load must tile evenly");
static_assert(THREADS % BN == 0 && BK % B_ROWS_PER_PASS == 0, "B tile load must tile evenly");

__global__ void __launch_bounds__(THREADS)
    sgemm_blocktile_2d(int M, int N, int K, const float* __restrict__ A, const float* __restrict__ B,
                       float* __restrict__ C) {
  __shared__ float As[BM][BK];  // (BM, BK) tile of A, row-major
  __shared__ float Bs[BK][BN];  // (BK, BN) tile of B, row-major
  const int tcol = threadIdx.x % (BN / TN);  // thread's (TM, TN) block: columns tcol*TN ..
  const int trow = threadIdx.x / (BN / TN);  // rows trow*TM ..
  const int a_r = threadIdx.x / BK, a_c = threadIdx.x % BK;
  const int b_r = threadIdx.x / BN, b_c = threadIdx.x % BN;
  A += (size_t)blockIdx.y * BM * K;
  B += (size_t)blockIdx.x * BN;
  C += (size_t)blockIdx.y * BM * N + (size_t)blockIdx.x * BN;

  float acc[TM][TN] = {};  // (TM, TN) block of C, +0 initially
  float regM[TM], regN[TN];
  for (int k0 = 0; k0 < K; k0 += BK) {
#pragma unroll
    for (int r = 0; r < BM; r += A_ROWS_PER_PASS) As[a_r + r][a_c] = A[(size_t)(a_r + r) * K + k0 + a_c];
#pragma unroll
    for (int r = 0; r < BK; r += B_ROWS_PER_PASS) Bs[b_r + r][b_c] = B[(size_t)(k0 + b_r + r) * N + b_c];
    __syncthreads();
#pragma unroll
    for (int k = 0; k < BK; ++k) {
#pragma unroll
      for (int i = 0; i < TM; ++i) regM[i] = As[trow * TM + i][k];
#pragma unroll
      for (int j = 0; j < TN; ++j) regN[j] = Bs[k][tcol * TN + j];
#pragma unroll
      for (int i = 0; i < TM; ++i)
#pragma unroll
        for (int j = 0; j < TN; ++j) acc[i][j] = __fmaf_rn(regM[i], regN[j], acc[i][j]);
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
  sgemm_blocktile_2d<<<grid, THREADS, 0, as_stream(a.stream)>>>(a.M, a.N, a.K, static_cast<const float*>(a.A),
                                                               static_cast<const float*>(a.B),
                                                               static_cast<float*>(a.C));
  GEMMLAB_LAUNCH_CHECK("sgemm_05_blocktile_2d");
}

}  // namespace

const Kernel& sgemm_05_blocktile_2d() {
  static const Kernel k{
      .name = "sgemm_05_blocktile_2d",
      .family = "simt",
      .description = "128x128 block tile, BK=8, each thread an 8x8 block of C (register outer product), fp32 FMA in k order",
      .numerics = cuda_core_fp32_fma(),
      .layout_a = Layout::row_major, .layout_b = Layout::row_major,
      .m_multiple = BM, .n_multiple = BN, .k_multiple = BK,
      .min_cc = 50, .requires_sm90a = false, .workspace_bytes = 0,
      .launch = launch,
  };
  return k;
}

}  // namespace gemmlab::kernels
