// sgemm_02_coalesce: Boehm's kernel 2, global-memory coalescing. One thread per output entry, with
// the 1024 threads of a block laid out so that the 32 lanes of a warp take 32 consecutive columns of
// one row of C: their loads of B(k, :) and stores of C(i, :) fall in one 128-byte line each, and
// A(i, k) is one broadcast. (Kernel 1, sgemm_01_naive, maps threadIdx.x to rows, so a warp strides
// through memory.)
//
// Numerics: identical to sgemm_01_naive. C(i,j) = fma(A(i,K-1), B(K-1,j), ... fma(A(i,0), B(0,j), +0)):
// one fp32 FMA (__fmaf_rn) per k, in increasing k, from +0. Outputs are bit-identical to the naive
// kernel's (tested in tests/gpu/test_simt.cpp). Any M, N, K (bounds checks).
#include "kernels/common/cuda_check.cuh"
#include "kernels/kernel.hpp"

namespace gemmlab::kernels {
namespace {

constexpr int TILE = 32;  // (TILE, TILE) tile of C per block, TILE*TILE threads
static_assert(TILE * TILE <= 1024, "a block holds at most 1024 threads");

__global__ void __launch_bounds__(TILE * TILE)
    sgemm_coalesce(int M, int N, int K, const float* __restrict__ A, const float* __restrict__ B,
                   float* __restrict__ C) {
  // Lane l of warp w: row w, column l of the block's (TILE, TILE) tile of C.
  const int row = blockIdx.y * TILE + threadIdx.x / TILE;
  const int col = blockIdx.x * TILE + threadIdx.x % TILE;
  if (row >= M || col >= N) return;
  const float* a = A + (size_t)row * K;  // row `row` of A, (1, K)
  const float* b = B + col;              // column `col` of B, stride N
  float acc = 0.0f;
  for (int k = 0; k < K; ++k) acc = __fmaf_rn(a[k], b[(size_t)k * N], acc);
  C[(size_t)row * N + col] = acc;
}

void launch(const GemmArgs& a) {
  dim3 grid((a.N + TILE - 1) / TILE, (a.M + TILE - 1) / TILE);
  sgemm_coalesce<<<grid, TILE * TILE, 0, as_stream(a.stream)>>>(a.M, a.N, a.K, static_cast<const float*>(a.A),
                                                               static_cast<const float*>(a.B),
                                                               static_cast<float*>(a.C));
  GEMMLAB_LAUNCH_CHECK("sgemm_02_coalesce");
}

}  // namespace

const Kernel& sgemm_02_coalesce() {
  static const Kernel k{
      .name = "sgemm_02_coalesce",
      .family = "simt",
      .description = "one thread per output, warp lanes on consecutive columns (coalesced), fp32 FMA in k order",
      .numerics = cuda_core_fp32_fma(),
      .layout_a = Layout::row_major, .layout_b = Layout::row_major,
      .m_multiple = 1, .n_multiple = 1, .k_multiple = 1,
      .min_cc = 50, .requires_sm90a = false, .workspace_bytes = 0,
      .launch = launch,
  };
  return k;
}

}  // namespace gemmlab::kernels
