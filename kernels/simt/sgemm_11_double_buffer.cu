// sgemm_11_double_buffer: Boehm's kernel 11, double buffering (template and design notes in
// sgemm_11_double_buffer.cuh): sgemm_10's warptiling with two shared-memory stages and the next
// K-step's global loads in flight in registers during the compute, one barrier per K-step.
// Block tile (128, 128), BK = 8, 256 threads, (64, 32) warp tiles, 2 x 2 lane tiles of (4, 4), at most
// 128 registers (two blocks per SM): the fastest sgemm_11 shape in `gemmlab tune`. With BK = 16 and no
// register cap the prefetch registers leave room for only one block per SM. It is not faster than
// sgemm_10 with register prefetch: the second stage saves one barrier per K-step but costs the larger
// shared footprint and stage-address arithmetic; Boehm saw no gain either.
// Measurements: results/simt/README.md#sgemm_11.
//
// Numerics: identical to sgemm_01_naive: each accumulator starts at +0 and gets one __fmaf_rn per k
// in increasing k. Bit-identical to naive (tested). Sizes: M, N multiples of 128, K of 8 (declared).
#include "kernels/simt/sgemm_11_double_buffer.cuh"

namespace gemmlab::kernels {
namespace {
constexpr int BM = 128, BN = 128, BK = 8, WM = 64, WN = 32, WNITER = 2, TM = 4, TN = 4, NT = 256, MINB = 2;
}  // namespace

const Kernel& sgemm_11_double_buffer() {
  static const Kernel k{
      .name = "sgemm_11_double_buffer",
      .family = "simt",
      .description = "sgemm_10 warptiling (128x128, BK=8, 64x32 warp tiles) with two shared-memory stages and register prefetch, fp32 FMA in k order",
      .numerics = cuda_core_fp32_fma(),
      .layout_a = Layout::row_major, .layout_b = Layout::row_major,
      .m_multiple = BM, .n_multiple = BN, .k_multiple = BK,
      .min_cc = 50, .requires_sm90a = false, .workspace_bytes = 0,
      .launch = sgemm11::launch<BM, BN, BK, WM, WN, WNITER, TM, TN, NT, MINB>,
  };
  return k;
}

}  // namespace gemmlab::kernels
