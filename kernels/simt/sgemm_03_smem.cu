// sgemm_03_smem: Boehm's kernel 3, shared-memory cache blocking. A block computes a (32, 32) tile of
// C; it walks K in steps of 32, staging a (32, 32) tile of A and of B in shared memory, so each
// global element is read once per block instead of once per thread (32x less global traffic).
//
// Numerics: identical to sgemm_01_naive: each thread keeps one fp32 accumulator, starting at +0, and
// applies one __fmaf_rn per k in increasing k (tile by tile, k in order within a tile). Bit-identical
// to the naive kernel (tested). Any M, N, K: out-of-range tile elements are loaded as zero but never
// used, since the inner loop stops at K (a padded fma(0, 0, acc) would turn -0 into +0).
#include "kernels/common/cuda_check.cuh"
#include "kernels/kernel.hpp"

namespace gemmlab::kernels {
namespace {

constexpr int BS = 32;  // BM = BN = BK = 32, BS*BS threads
static_assert(BS * BS <= 1024, "a block holds at most 1024 threads");

__global__ void __launch_bounds__(BS * BS)
    sgemm_smem(int M, int N, int K, const float* __restrict__ A, const float* __restrict__ B,
               float* __restrict__ C) {
  __shared__ float As[BS][BS];  // (BM, BK) tile of A, row-major: As[i][k]
  __shared__ float Bs[BS][BS];  // (BK, BN) tile of B, row-major: Bs[k][j]
  const int tr = threadIdx.x / BS, tc = threadIdx.x % BS;  // warp = one row, lanes = columns
  const int row = blockIdx.y * BS + tr;
  const int col = blockIdx.x * BS + tc;
  float acc = 0.0f;
  for (int k0 = 0; k0 < K; k0 += BS) {
    // Coalesced loads: lanes of a warp read consecutive k of A and consecutive columns of B.
    As[tr][tc] = (row < M && k0 + tc < K) ? A[(size_t)row * K + k0 + tc] : 0.0f;
    Bs[tr][tc] = (k0 + tr < K && col < N) ? B[(size_t)(k0 + tr) * N + col] : 0.0f;
    __syncthreads();
    const int kend = min(BS, K - k0);
    // As[tr][k] is one broadcast per warp; Bs[k][tc] is 32 consecutive words: no bank conflict.
    for (int k = 0; k < kend; ++k) acc = __fmaf_rn(As[tr][k], Bs[k][tc], acc);
    __syncthreads();
  }
  if (row < M && col < N) C[(size_t)row * N + col] = acc;
}

void launch(const GemmArgs& a) {
  dim3 grid((a.N + BS - 1) / BS, (a.M + BS - 1) / BS);
  sgemm_smem<<<grid, BS * BS, 0, as_stream(a.stream)>>>(a.M, a.N, a.K, static_cast<const float*>(a.A),
                                                       static_cast<const float*>(a.B), static_cast<float*>(a.C));
  GEMMLAB_LAUNCH_CHECK("sgemm_03_smem");
}

}  // namespace

const Kernel& sgemm_03_smem() {
  static const Kernel k{
      .name = "sgemm_03_smem",
      .family = "simt",
      .description = "32x32 tiles of A and B staged in shared memory, one output per thread, fp32 FMA in k order",
      .numerics = cuda_core_fp32_fma(),
      .layout_a = Layout::row_major, .layout_b = Layout::row_major,
      .m_multiple = 1, .n_multiple = 1, .k_multiple = 1,
      .min_cc = 50, .requires_sm90a = false, .workspace_bytes = 0,
      .launch = launch,
  };
  return k;
}

}  // namespace gemmlab::kernels
