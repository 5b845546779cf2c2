// GPU tests of the WMMA kernels (kernels/wmma): bounds, exactness (which also checks that v4 writes
// C from the accumulator fragment in the PTX ISA's mma.m16n8k16 layout), in_mma vs external, sizes.
#include <cmath>
#include <cstring>
#include <string>
#include <vector>

#include "tests/gpu/gpu_test_util.hpp"

namespace gemmlab {
namespace {

std::vector<const Kernel*> wmma_kernels() {
  std::vector<const Kernel*> v;
  for (const Kernel* k : all_kernels())
    if (std::strcmp(k->family, "wmma") == 0) v.push_back(k);
  return v;
}

TEST(WmmaKernels, EveryVariantWithinBound) {
  GEMMLAB_REQUIRE_FAMILY("wmma");
  GEMMLAB_REQUIRE_GPU();
  ASSERT_GE(wmma_kernels().size(), 4u);
  for (const Kernel* k : wmma_kernels()) {
    GEMMLAB_REQUIRE_KERNEL(*k);
    const int sizes[2][3] = {{256, 256, 256}, {3 * k->m_multiple, 5 * k->n_multiple, 352}};
    for (const auto& s : sizes)
      for (const char* dist : {"uniform_0_1", "uniform_-1_1", "normal_0_1"}) {
        auto r = testing::run_and_check(*k, s[0], s[1], s[2], dist, 9);
        EXPECT_EQ(r.run.unwritten, 0) << k->name;
        EXPECT_TRUE(r.stats.within_bound) << k->name << " " << s[0] << "x" << s[1] << "x" << s[2] << " on " << dist
                                          << ": componentwise " << r.stats.componentwise << " > bound "
                                          << r.stats.gamma_bound;
        EXPECT_LT(r.stats.normwise, 1e-4) << k->name << " " << dist;
      }
  }
}

// Exact integer data: any misplaced entry (a wrong guess of the accumulator fragment layout in
// v4's direct C store: x[e] at row g + 8((e/2)%2), col 2t + (e%2) + 8(e/4), as for two mma.m16n8k16
// C fragments side by side) would make the normwise error non-zero. Distinct integers per entry,
// non-square sizes, so a transposition or swap of the two n8 halves cannot go unnoticed.
TEST(WmmaKernels, ExactOnIntegersChecksFragmentLayout) {
  GEMMLAB_REQUIRE_FAMILY("wmma");
  GEMMLAB_REQUIRE_GPU();
  for (const Kernel* k : wmma_kernels()) {
    GEMMLAB_REQUIRE_KERNEL(*k);
    auto r = testing::run_and_check(*k, 2 * k->m_multiple, 3 * k->n_multiple, 512, "exactint_8", 17);
    EXPECT_EQ(r.run.unwritten, 0) << k->name;
    EXPECT_EQ(r.stats.normwise, 0.0) << k->name;
    EXPECT_EQ(r.stats.frac_correctly_rounded, 1.0) << k->name;
  }
}

TEST(WmmaAccumulation, InMmaDiffersFromExternal) {
  GEMMLAB_REQUIRE_FAMILY("wmma");
  GEMMLAB_REQUIRE_GPU();
  for (const char* stem : {"hgemm_wmma_v4", "hgemm_wmma_v5_multistage_s3"}) {
    const Kernel* in = find_kernel(std::string(stem) + "_in_mma");
    const Kernel* ex = find_kernel(std::string(stem) + "_external");
    ASSERT_TRUE(in && ex) << stem;
    GEMMLAB_REQUIRE_KERNEL(*in);
    auto a = testing::run_and_check(*in, 128, 256, 4096, "uniform_0_1", 21);
    auto b = testing::run_and_check(*ex, 128, 256, 4096, "uniform_0_1", 21);
    long long differ = 0;
    for (size_t i = 0; i < a.run.c.size(); ++i) differ += a.run.c[i] != b.run.c[i];
    EXPECT_GT(differ, (long long)a.run.c.size() / 10) << stem;
    EXPECT_LT(a.stats.rel_mean, 0.0) << in->name;
    EXPECT_LT(std::fabs(b.stats.rel_mean), std::fabs(a.stats.rel_mean)) << ex->name;
  }
}

TEST(WmmaKernels, RejectsSizesOffTheTile) {
  GEMMLAB_REQUIRE_FAMILY("wmma");
  for (const Kernel* k : wmma_kernels()) {
    EXPECT_FALSE(check_size(*k, k->m_multiple + 8, k->n_multiple, k->k_multiple).empty()) << k->name;
    EXPECT_FALSE(check_size(*k, k->m_multiple, k->n_multiple + 8, k->k_multiple).empty()) << k->name;
    EXPECT_FALSE(check_size(*k, k->m_multiple, k->n_multiple, k->k_multiple + 8).empty()) << k->name;
  }
}

}  // namespace
}  // namespace gemmlab
