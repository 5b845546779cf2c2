// sgemm_04_blocktile_1d: Boehm's kernel 4, 1D blocktiling. A block of 512 threads computes a
// (BM, BN) = (64, 64) tile of C, staging (BM, BK) = (64, 8) of A and (BK, BN) = (8, 64) of B in
// shared memory; each thread computes TM = 8 entries of one column of C, so one shared-memory load of
// B(k, j) feeds 8 FMAs (arithmetic intensity per thread up from 1/2 to 8/9 FMA per load).
//
// Numerics: identical to sgemm_01_naive: each of a thread's TM accumulators starts at +0 and gets one
// __fmaf_rn per k in increasing k. Bit-identical to the naive kernel (tested).
// Sizes: M, N multiples of 64, K a multiple of 8 (declared in the descriptor; others are rejected).
#include "kernels/common/cuda_check.cuh"
#include "kernels/kernel.hpp"

namespace gemmlab::kernels {
namespace {

constexpr int BM = 64, BN = 64, BK = 8, TM = 8;
constexpr int THREADS = BM * BN / TM;  // 512: one thread per (TM, 1) column strip of the C tile
static_assert(THREADS == BM * BK, "one thread loads one element of the (BM, BK) tile of A");
static_assert(THREADS == BK * BN, "one thread loads one element of the (BK, BN) tile of B");
static_assert(BM % TM == 0, "TM must divide BM");

__global__ void __launch_bounds__(THREADS)
    sgemm_blocktile_1d(int M, int N, int K, const float* __restrict__ A, const float* __restrict__ B,
                       float* __restrict__ C) {
  __shared__ float As[BM][BK];  // (BM, BK) tile of A, row-major
  __shared__ float Bs[BK][BN];  // (BK, BN) tile of B, row-major
  const int tcol = threadIdx.x % BN;  // column of C within the tile
  const int trow = threadIdx.x / BN;  // rows trow*TM .. trow*TM+TM-1 within the tile
  const int a_r = threadIdx.x / BK, a_c = threadIdx.x % BK;  // element of A this thread loads
  const int b_r = threadIdx.x / BN, b_c = threadIdx.x % BN;  // element of B this thread loads
  A += (size_t)blockIdx.y * BM * K;
  B += (size_t)blockIdx.x * BN;
  C += (size_t)blockIdx.y * BM * N + (size_t)blockIdx.x * BN;

  float acc[TM] = {};  // (TM, 1) strip of C, +0 initially
  for (int k0 = 0; k0 < K; k0 += BK) {
    As[a_r][a_c] = A[(size_t)a_r * K + k0 + a_c];
    Bs[b_r][b_c] = B[(size_t)(k0 + b_r) * N + b_c];
    __syncthreads();
#pragma unroll
    for (int k = 0; k < BK; ++k) {
      const float b = Bs[k][tcol];
#pragma unroll
      for (int i = 0; i < TM; ++i) acc[i] = __fmaf_rn(As[trow * TM + i][k], b, acc[i]);
    }
    __syncthreads();
  }
#pragma unroll
  for (int i = 0; i < TM; ++i) C[(size_t)(trow * TM + i) * N + tcol] = acc[i];
}

void launch(const GemmArgs& a) {
  dim3 grid(a.N / BN, a.M / BM);
  sgemm_blocktile_1d<<<grid, THREADS, 0, as_stream(a.stream)>>>(a.M, a.N, a.K, static_cast<const float*>(a.A),
                                                               static_cast<const float*>(a.B),
                                                               static_cast<float*>(a.C));
  GEMMLAB_LAUNCH_CHECK("sgemm_04_blocktile_1d");
}

}  // namespace

const Kernel& sgemm_04_blocktile_1d() {
  static const Kernel k{
      .name = "sgemm_04_blocktile_1d",
      .family = "simt",
      .description = "64x64 block tile, BK=8, each thread an 8x1 strip of C, fp32 FMA in k order",
      .numerics = cuda_core_fp32_fma(),
      .layout_a = Layout::row_major, .layout_b = Layout::row_major,
      .m_multiple = BM, .n_multiple = BN, .k_multiple = BK,
      .min_cc = 50, .requires_sm90a = false, .workspace_bytes = 0,
      .launch = launch,
  };
  return k;
}

}  // namespace gemmlab::kernels
