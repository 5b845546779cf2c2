// sgemm_09_autotuned: Boehm's kernel 9, autotuning. The vectorized 2D-blocktiling kernel (template
// in sgemm_09_autotuned.cuh) instantiated with the (BM, BN, BK, TM, TN) that `gemmlab tune` found
// fastest on the GPU named in sgemm_09_autotuned_config.hpp.
//
// Numerics: identical to sgemm_01_naive: each accumulator starts at +0 and gets one __fmaf_rn per k
// in increasing k. Bit-identical to naive (tested). Sizes: M, N, K multiples of BM, BN, BK.
#include "kernels/simt/sgemm_09_autotuned.cuh"
#include "kernels/simt/sgemm_09_autotuned_config.hpp"

namespace gemmlab::kernels {
namespace {
namespace cfg = sgemm09::tuned;
using TunedShape = sgemm09::Shape<cfg::BM, cfg::BN, cfg::BK, cfg::TM, cfg::TN>;
static_assert(TunedShape::threads > 0, "the tuned configuration must be a valid shape");
}  // namespace

const Kernel& sgemm_09_autotuned() {
  static const Kernel k{
      .name = "sgemm_09_autotuned",
      .family = "simt",
      .description = "vectorized 2D blocktiling with tile sizes from `gemmlab tune`, fp32 FMA in k order",
      .numerics = cuda_core_fp32_fma(),
      .layout_a = Layout::row_major, .layout_b = Layout::row_major,
      .m_multiple = cfg::BM, .n_multiple = cfg::BN, .k_multiple = cfg::BK,
      .min_cc = 50, .requires_sm90a = false, .workspace_bytes = 0,
      .launch = sgemm09::launch<cfg::BM, cfg::BN, cfg::BK, cfg::TM, cfg::TN>,
  };
  return k;
}

}  // namespace gemmlab::kernels
