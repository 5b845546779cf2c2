// sgemm_10_warptiling: Boehm's kernel 10, warptiling (template and design notes in
// sgemm_10_warptiling.cuh). Block tile (BM, BN) = (128, 128), BK = 8, 256 threads = 8 warps each
// owning a (64, 32) warp tile walked as 2 x 2 sub-tiles of (32, 16), each lane a (4, 4) block of
// every sub-tile: 8 x 8 = 64 accumulators per lane, at most 128 registers so two blocks share an SM.
// Beyond Boehm's kernel 10 it prefetches the next K-step's tiles into registers during the compute
// (one shared stage, two barriers per K-step; sgemm_11 adds the second stage).
// Measurements: results/simt/README.md#sgemm_10.
//
// Numerics: identical to sgemm_01_naive: each accumulator starts at +0 and gets one __fmaf_rn per k
// in increasing k. Bit-identical to naive (tested). Sizes: M, N multiples of 128, K of 8 (declared).
#include "kernels/simt/sgemm_10_warptiling.cuh"

namespace gemmlab::kernels {
namespace {
constexpr int BM = 128, BN = 128, BK = 8, WM = 64, WN = 32, WNITER = 2, TM = 4, TN = 4, NT = 256, MINB = 2;
constexpr bool PREFETCH = true;
}  // namespace

const Kernel& sgemm_10_warptiling() {
  static const Kernel k{
      .name = "sgemm_10_warptiling",
      .family = "simt",
      .description = "block, warp and lane tiles (128x128, BK=8 / 64x32 / 2x2 of 4x4), float4, register prefetch, fp32 FMA in k order",
      .numerics = cuda_core_fp32_fma(),
      .layout_a = Layout::row_major, .layout_b = Layout::row_major,
      .m_multiple = BM, .n_multiple = BN, .k_multiple = BK,
      .min_cc = 50, .requires_sm90a = false, .workspace_bytes = 0,
      .launch = sgemm10::launch<BM, BN, BK, WM, WN, WNITER, TM, TN, NT, MINB, PREFETCH>,
  };
  return k;
}

}  // namespace gemmlab::kernels
