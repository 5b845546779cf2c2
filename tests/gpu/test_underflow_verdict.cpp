// The false verdict of issue 13 on the hardware: fp32 logunif_-140_-120 at 256^3, whose exact sums
// lie below fp32's smallest subnormal. sgemm_01_naive and cublas_gemmex_fp32_pedantic return the
// correctly rounded result in every entry, and must then pass (they were failed_bound before the
// bound had its absolute underflow term). The CPU half of this check is tests/cpu/test_underflow.cpp.
#include <string>

#include "experiments/engine/run.hpp"
#include "tests/gpu/gpu_test_util.hpp"

namespace gemmlab {
namespace {

TEST(UnderflowVerdict, CorrectlyRoundedKernelsPassBelowTheSubnormals) {
  const std::string dist = "logunif_-140_-120";
  for (const char* name : {"sgemm_01_naive", "cublas_gemmex_fp32_pedantic"}) {
    const Kernel* k = find_kernel(name);
    if (!k) GTEST_SKIP() << name << " is not in this build (GEMMLAB_FAMILIES)";
    GEMMLAB_REQUIRE_KERNEL(*k);
    const testing::Checked c = testing::run_and_check(*k, 256, 256, 256, dist);
    EXPECT_GT(c.stats.subnormal_reference, 0) << name << ": the case must have exact values below the normal range";
    EXPECT_EQ(c.stats.frac_correctly_rounded, 1.0) << name;
    EXPECT_EQ(c.stats.bound_violations, 0) << name;
    EXPECT_TRUE(c.stats.within_bound) << name;
    ResultRow row;
    row.K = 256;
    judge(row, c.stats, parse_distribution(dist), k->numerics);
    EXPECT_EQ(row.status, Status::passed) << name << ": " << row.note;
  }
}

}  // namespace
}  // namespace gemmlab
