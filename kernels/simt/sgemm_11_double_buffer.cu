// sgemm_11_double_buffer: Boehm's kernel 11, double buffering (template and design notes in
// sgemm_11_double_buffer.cuh): sgemm_10's warptiling with two shared-memory stages and the next
// K-step's global loads in flight in registers during the compute, one barrier per K-step.
// Block tile (128, 128), BK = 16, 128 threads, (64, 64) warp tiles, (8, 4) x 1 x 4 lane tiles.
//
// Numerics: identical to sgemm_01_naive: each accumulator starts at +0 and gets one __fmaf_rn per k
// in increasing k. Bit-identical to naive (tested). Sizes: M, N multiples of 128, K of 16 (declared).
#include "kernels/simt/sgemm_11_double_buffer.cuh"

namespace gemmlab::kernels {
namespace {
constexpr int BM = 128, BN = 128, BK = 16, WM = 64, WN = 64, WNITER = 4, TM = 8, TN = 4, NT = 128;
}  // namespace

const Kernel& sgemm_11_double_buffer() {
  static const Kernel k{
      .name = "sgemm_11_double_buffer",
      .family = "simt",
      .description = "sgemm_10 warptiling with two shared-memory stages and register prefetch, fp32 FMA in k order",
      .input = Format::fp32, .compute = Format::fp32, .accumulator = Format::fp32, .output = Format::fp32,
      .accumulation = Accumulation::fma, .promotion_interval_k = 0, .acc_rounding = AccRounding::nearest,
      .layout_a = Layout::row_major, .layout_b = Layout::row_major,
      .m_multiple = BM, .n_multiple = BN, .k_multiple = BK,
      .min_cc = 50, .requires_sm90a = false, .workspace_bytes = 0,
      .launch = sgemm11::launch<BM, BN, BK, WM, WN, WNITER, TM, TN, NT>,
  };
  return k;
}

}  // namespace gemmlab::kernels
