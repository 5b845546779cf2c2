// hgemm_mma_01b_tile2x: step 1b of the mma.sync series, step 1 with 2x register tiling in M and N.
// 8 warps (2 in M x 4 in N) own a (64, 64) tile of C; each warp owns a (32, 16) tile, 2 m16 by 2 n8
// mma tiles, so each k16 step issues 4 mma.sync.m16n8k16 and reuses every fragment twice.
// Shared memory and fragments still go element by element, as in step 1.
// A row-major (M, K); B col-major, i.e. B^T (N, K) row-major.
//
// Numerics: as hgemm_mma_01_naive (16 exact products per k-step, k-steps in increasing k):
//  * in_mma:   D = A*B + D inside the tensor core (truncating block additions).
//  * external: T = A*B + 0, then acc += T in fp32 with __fadd_rn.
// Rounding::toward_zero for both (each k-step's block sum truncates even in external mode).
#include <cstdint>

#include "kernels/common/cuda_check.cuh"
#include "kernels/common/mma_ptx.cuh"
#include "kernels/kernel.hpp"

namespace gemmlab::kernels {
namespace {

constexpr int BM = 64, BN = 64, BK = 16, THREADS = 256;
constexpr int WARPS_N = 4, WM = 32, WN = 16;
constexpr int MT = WM / 16, NT = WN / 8;  // 2 x 2 mma tiles per warp
static_assert(THREADS == 32 * (BM / WM) * (BN / WN), "one warp per (32, 16) tile of C");
static_assert((BM * BK) % THREADS == 0 && (BN * BK) % THREADS == 0, "whole elements per thread");

template <Accumulation MODE>
__global__ void __launch_bounds__(THREADS)
    hgemm_mma_tile2x(int M, int N, int K, const uint16_t* __restrict__ A, const uint16_t* __restrict__ Bt,
                     float* __restrict__ C) {
  __shared__ uint16_t As[BM][BK];  // (BM, BK) tile of A, k-major
  __shared__ uint16_t Bs[BN][BK];  // (BN, BK) tile of B^T, k-major
  const int tid = threadIdx.x, lane = tid % 32, warp = tid / 32;
  const int wm = warp / WARPS_N, wn = warp % WARPS_N;
  const int row0 = blockIdx.y * BM, col0 = blockIdx.x * BN;
  const int g = lane / 4, t = lane % 4;

  float acc[MT][NT][4] = {};
  for (int k0 = 0; k0 < K; k0 += BK) {
    for (int e = tid; e < BM * BK; e += THREADS) As[e / BK][e % BK] = A[(size_t)(row0 + e / BK) * K + k0 + e % BK];
    for (int e = tid; e < BN * BK; e += THREADS) Bs[e / BK][e % BK] = Bt[(size_t)(col0 + e / BK) * K + k0 + e % BK];
    __syncthreads();
    uint32_t a[MT][4], b[NT][2];
#pragma unroll
    for (int i = 0; i < MT; ++i) {
      const int r = wm * WM + i * 16 + g;
      a[i][0] = ptx::pack_b16(As[r][2 * t], As[r][2 * t + 1]);
      a[i][1] = ptx::pack_b16(As[r + 8][2 * t], As[r + 8][2 * t + 1]);
      a[i][2] = ptx::pack_b16(As[r][2 * t + 8], As[r][2 * t + 9]);
      a[i][3] = ptx::pack_b16(As[r + 8][2 * t + 8], As[r + 8][2 * t + 9]);
    }
#pragma unroll
    for (int j = 0; j < NT; ++j) {
      const int n = wn * WN + j * 8 + g;
      b[j][0] = ptx::pack_b16(Bs[n][2 * t], Bs[n][2 * t + 1]);
      b[j][1] = ptx::pack_b16(Bs[n][2 * t + 8], Bs[n][2 * t + 9]);
    }
#pragma unroll
    for (int i = 0; i < MT; ++i)
#pragma unroll
      for (int j = 0; j < NT; ++j) ptx::mma_accumulate<MODE>(acc[i][j], a[i], b[j]);
    __syncthreads();
  }
  ptx::store_acc_f32(C, N, row0 + wm * WM, col0 + wn * WN, lane, acc);
}

template <Accumulation MODE>
void launch(const GemmArgs& a) {
  dim3 grid(a.N / BN, a.M / BM);
  hgemm_mma_tile2x<MODE><<<grid, THREADS, 0, as_stream(a.stream)>>>(
      a.M, a.N, a.K, static_cast<const uint16_t*>(a.A), static_cast<const uint16_t*>(a.B), static_cast<float*>(a.C));
  GEMMLAB_LAUNCH_CHECK("hgemm_mma_01b_tile2x");
}

constexpr Kernel base(const char* name, const char* desc, Accumulation mode, void (*fn)(const GemmArgs&)) {
  return ptx::mma_f16_f32_kernel(name, desc, mode, BM, BN, BK, fn);
}

}  // namespace

const Kernel& hgemm_mma_01b_tile2x_in_mma() {
  static const Kernel k = base("hgemm_mma_01b_tile2x_in_mma", "mma.sync, (32, 16) warp tiles, 64x64 block, D = A*B + D",
                               Accumulation::in_mma, launch<Accumulation::in_mma>);
  return k;
}
const Kernel& hgemm_mma_01b_tile2x_external() {
  static const Kernel k = base("hgemm_mma_01b_tile2x_external",
                               "mma.sync, (32, 16) warp tiles, 64x64 block, T = A*B + 0 then acc += T (fp32, nearest)",
                               Accumulation::external, launch<Accumulation::external>);
  return k;
}

}  // namespace gemmlab::kernels
