// GPU tests of the mma.sync series (kernels/mma): every variant against the exact reference with
// its analytic bound, exact results on exactly-representable data, in_mma vs external really
// differing on U[0,1) data, size rejection. The 4096^3 benchmark against cuBLAS is the suite
// experiments/suites/mma_series.toml.
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <string>
#include <vector>

#include "tests/gpu/gpu_test_util.hpp"

namespace gemmlab {
namespace {

std::vector<const Kernel*> family(const char* fam) {
  std::vector<const Kernel*> v;
  for (const Kernel* k : all_kernels())
    if (std::strcmp(k->family, fam) == 0) v.push_back(k);
  return v;
}

const Kernel& kernel(const std::string& name) {
  const Kernel* k = find_kernel(name);
  if (!k) throw std::runtime_error("test needs kernel " + name);
  return *k;
}

// fp16 accumulators overflow the bound's validity (K u_eff < 1) and lose integers above 2048 sooner.
bool fp16_acc(const Kernel& k) { return k.numerics.accumulator == Format::fp16; }

TEST(MmaKernels, FamilyIsRegistered) {
  GEMMLAB_REQUIRE_FAMILY("mma");
  EXPECT_GE(family("mma").size(), 20u);
  for (const Kernel* k : family("mma")) {
    EXPECT_EQ(std::string(k->name).rfind("hgemm_mma_", 0), 0u) << k->name;
    if (k->numerics.accumulation == Accumulation::promoted) EXPECT_GT(k->numerics.promotion_interval_k, 0) << k->name;
    EXPECT_EQ(k->numerics.accumulation_rounding, Rounding::toward_zero) << k->name;
  }
}

// Every variant, square and non-square sizes (multiples of its tile), three distributions.
TEST(MmaKernels, EveryVariantWithinBound) {
  GEMMLAB_REQUIRE_FAMILY("mma");
  GEMMLAB_REQUIRE_GPU();
  for (const Kernel* k : family("mma")) {
    GEMMLAB_REQUIRE_KERNEL(*k);
    const int sizes[2][3] = {{256, 256, 256}, {3 * k->m_multiple, 2 * k->n_multiple, 320}};
    for (const auto& s : sizes)
      for (const char* dist : {"uniform_0_1", "uniform_-1_1", "normal_0_1"}) {
        auto r = testing::run_and_check(*k, s[0], s[1], s[2], dist, 5);
        EXPECT_EQ(r.run.unwritten, 0) << k->name;
        EXPECT_EQ(r.stats.nonfinite, 0) << k->name << " " << dist;
        EXPECT_TRUE(r.stats.within_bound) << k->name << " " << s[0] << "x" << s[1] << "x" << s[2] << " on " << dist
                                          << ": componentwise " << r.stats.componentwise << " > bound "
                                          << r.stats.gamma_bound;
        // fp32 accumulation: far below the deterministic bound; fp16 accumulation: same order.
        if (!fp16_acc(*k)) EXPECT_LT(r.stats.normwise, 1e-4) << k->name << " " << dist;
      }
  }
}

// Small integers: every product and partial sum is exact in the accumulator (|sum| <= 64 K < 2^24
// for fp32; <= 4 * 512 = 2048 for fp16), so every correct kernel returns the exact result whatever
// its summation order and truncation: a wrong index, fragment layout or race shows up at once.
TEST(MmaKernels, ExactOnIntegers) {
  GEMMLAB_REQUIRE_FAMILY("mma");
  GEMMLAB_REQUIRE_GPU();
  for (const Kernel* k : family("mma")) {
    GEMMLAB_REQUIRE_KERNEL(*k);
    const char* dist = fp16_acc(*k) ? "exactint_2" : "exactint_8";
    auto r = testing::run_and_check(*k, 2 * k->m_multiple, 3 * k->n_multiple, 512, dist, 13);
    EXPECT_EQ(r.run.unwritten, 0) << k->name;
    EXPECT_EQ(r.stats.normwise, 0.0) << k->name;
    EXPECT_EQ(r.stats.frac_correctly_rounded, 1.0) << k->name;
  }
}

// The knob this harness studies: with U[0,1) data and K = 4096, D = A*B + D (truncating in the
// tensor core) and T = A*B + 0; acc += T (round to nearest) must give different bits, the in-mma
// result biased low, and the external one less biased.
TEST(MmaAccumulation, InMmaDiffersFromExternal) {
  GEMMLAB_REQUIRE_FAMILY("mma");
  GEMMLAB_REQUIRE_GPU();
  int pairs = 0;
  for (const Kernel* k : family("mma")) {
    if (k->numerics.accumulation != Accumulation::in_mma || fp16_acc(*k)) continue;
    std::string ext = k->name;
    ext.replace(ext.rfind("in_mma"), 6, "external");
    const Kernel* e = find_kernel(ext);
    if (!e) continue;
    GEMMLAB_REQUIRE_KERNEL(*k);
    ++pairs;
    const int M = 256, N = 256, K = 4096;  // multiples of every mma tile
    auto a = testing::run_and_check(*k, M, N, K, "uniform_0_1", 21);
    auto b = testing::run_and_check(*e, M, N, K, "uniform_0_1", 21);
    long long differ = 0;
    for (size_t i = 0; i < a.run.c.size(); ++i) differ += a.run.c[i] != b.run.c[i];
    EXPECT_GT(differ, (long long)a.run.c.size() / 10) << k->name << " vs " << e->name;
    EXPECT_LT(a.stats.rel_mean, 0.0) << k->name << ": in-mma accumulation should be biased low";
    EXPECT_LT(std::fabs(b.stats.rel_mean), std::fabs(a.stats.rel_mean)) << e->name;
    std::printf("%-52s bias %+.3e  spread %.3e\n%-52s bias %+.3e  spread %.3e\n", k->name, a.stats.rel_mean,
                a.stats.rel_std, e->name, b.stats.rel_mean, b.stats.rel_std);
  }
  EXPECT_GE(pairs, 7);
}

// Promotion sits between the two: shorter intervals approach external accumulation.
TEST(MmaAccumulation, PromotionIntervalOrdersTheBias) {
  GEMMLAB_REQUIRE_FAMILY("mma");
  const Kernel& k = kernel("hgemm_mma_03b_pipeline_tile4x_s4_in_mma");
  GEMMLAB_REQUIRE_KERNEL(k);
  const int M = 128, N = 256, K = 4096;
  const double in_mma = testing::run_and_check(k, M, N, K, "uniform_0_1", 21).stats.rel_mean;
  const double every_32 =
      testing::run_and_check(kernel("hgemm_mma_03b_pipeline_tile4x_s4_promoted_every_32k"), M, N, K, "uniform_0_1", 21)
          .stats.rel_mean;
  EXPECT_LT(in_mma, 0.0);
  EXPECT_LT(std::fabs(every_32), std::fabs(in_mma));
}

TEST(MmaKernels, RejectsSizesOffTheTile) {
  GEMMLAB_REQUIRE_FAMILY("mma");
  for (const Kernel* k : family("mma")) {
    EXPECT_FALSE(check_size(*k, k->m_multiple + 1, k->n_multiple, k->k_multiple).empty()) << k->name;
    EXPECT_FALSE(check_size(*k, k->m_multiple, k->n_multiple + 8, k->k_multiple).empty()) << k->name;
    EXPECT_FALSE(check_size(*k, k->m_multiple, k->n_multiple, k->k_multiple + 8).empty()) << k->name;
    EXPECT_TRUE(check_size(*k, 2 * k->m_multiple, 3 * k->n_multiple, 4 * k->k_multiple).empty()) << k->name;
  }
}

}  // namespace
}  // namespace gemmlab
