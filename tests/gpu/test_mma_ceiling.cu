// The register-only mma.sync ceiling loop (experiments/device/mma_ceiling.hpp; timed by
// `gemmlab bench-mma-ceiling`): MmaCeiling.ModesAgreeExactly checks the loop's arithmetic (small
// exact integers: every mode gives the same exact sum).
#include <cuda_runtime.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include "experiments/device/mma_ceiling.hpp"
#include "tests/gpu/gpu_test_util.hpp"

namespace gemmlab {
namespace {

// Exact arithmetic check: with a in {1, 2} and b = 1, every mma adds 16 * a(row, k) summed over k per
// entry; all entries of the warp tile of one thread sum to the same total in both modes, exactly.
TEST(MmaCeiling, ModesAgreeExactly) {
  GEMMLAB_REQUIRE_GPU();
  if (query_device().cc() < 80) GTEST_SKIP() << "mma.sync.m16n8k16 needs sm_80 or newer";
  const int iters = 64;
  for (const MmaCeilingConfig& c : mma_ceiling_configs()) {
    SCOPED_TRACE(c.name);
    std::vector<float> sums;
    time_mma_ceiling(c, 2, iters, 1, &sums);
    // Per entry: row g of A fragment registers: the k values of a row alternate 1 and 2 in pairs per
    // register -> per mma each entry gets sum_k a(row,k) * 1 = 16 * 1.5 = 24. Per thread: MT*NT*4
    // entries x iters mma.
    const double expect = 24.0 * iters * (c.wm / 16) * (c.wn / 8) * 4;
    for (std::size_t i = 0; i < sums.size(); ++i) ASSERT_EQ(double(sums[i]), expect) << "thread " << i;
  }
}

}  // namespace
}  // namespace gemmlab
