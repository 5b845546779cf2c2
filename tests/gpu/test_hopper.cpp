// GPU tests of the Hopper family (wgmma/TMA, sm_90a) and the cuBLASLt fp8 baselines: every variant
// against the exact reference with its analytic bound on several sizes (non-square multiples of the
// tile, a partial last promotion interval, more tiles than SMs with a partial super_M group), exact
// results on integer inputs, and rejected sizes. Skipped with the reason where the GPU or the build
// cannot run them. The benchmark and the fp8 promotion experiment are suites
// (experiments/suites/hopper_series.toml, fp8_promotion.toml), run by `gemmlab run`.
#include <cmath>
#include <cstdlib>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <map>
#include <string>
#include <vector>

#include "tests/gpu/gpu_test_util.hpp"

namespace gemmlab {
namespace {

std::vector<const Kernel*> hopper_kernels() {
  std::vector<const Kernel*> v;
  // Scaled fp8 kernels need a recipe's operands and scales: tests/gpu/test_scaled_fp8_gpu.cpp.
  for (const Kernel* k : all_kernels())
    if (std::string(k->family) == "hopper" && k->scale_a == ScaleGranularity::none) v.push_back(k);
  return v;
}

std::vector<const Kernel*> fp8_baselines() {
  std::vector<const Kernel*> v;
  for (const char* n : {"cublaslt_fp8_e4m3_f32", "cublaslt_fp8_e4m3_f32_fast_accum"})
    if (const Kernel* k = find_kernel(n)) v.push_back(k);
  return v;
}

struct Size {
  int M, N, K;
};

// Sizes built from the kernel's multiples: one tile; a non-square 3x2 tile grid whose K ends in a
// partial promotion interval; and 18 tile rows x 8 tile columns (more tiles than the 132 SMs, and
// 18 rows is not a multiple of super_M = 8).
std::vector<Size> sizes_for(const Kernel& k) {
  return {{k.m_multiple, k.n_multiple, 2 * k.k_multiple},
          {3 * k.m_multiple, 2 * k.n_multiple, 5 * k.k_multiple},
          {18 * k.m_multiple, 8 * k.n_multiple, 2 * k.k_multiple}};
}

void check_within_bound(const Kernel& k) {
  int case_no = 0;
  for (const Size& s : sizes_for(k)) {
    const bool big = ++case_no == 3;
    for (const char* dist : {"uniform_0_1", "uniform_-1_1", "normal_0_1"}) {
      if (big && std::string(dist) != "uniform_-1_1") continue;  // the big size once: reference cost
      SCOPED_TRACE(std::string(k.name) + " " + dist + " " + std::to_string(s.M) + "x" + std::to_string(s.N) +
                   "x" + std::to_string(s.K));
      auto r = testing::run_and_check(k, s.M, s.N, s.K, dist, 5);
      EXPECT_EQ(r.run.unwritten, 0);
      EXPECT_EQ(r.stats.nonfinite, 0);
      EXPECT_GT(r.stats.rel_count, 0);
      EXPECT_TRUE(r.stats.within_bound) << "componentwise error " << r.stats.componentwise << " > bound "
                                        << r.stats.gamma_bound;
    }
  }
}

TEST(HopperKernels, EveryVariantWithinBoundOnSeveralSizes) {
  GEMMLAB_REQUIRE_FAMILY("hopper");
  auto ks = hopper_kernels();
  ASSERT_FALSE(ks.empty()) << "no hopper kernels registered";
  GEMMLAB_REQUIRE_KERNEL(*ks.front());
  for (const Kernel* k : ks) check_within_bound(*k);
}

TEST(HopperKernels, CublasLtFp8WithinBound) {
  GEMMLAB_REQUIRE_FAMILY("cublas");
  auto ks = fp8_baselines();
  ASSERT_EQ(ks.size(), 2u);
  GEMMLAB_REQUIRE_KERNEL(*ks.front());
  for (const Kernel* k : ks) {
    for (const char* dist : {"uniform_0_1", "normal_0_1"}) {
      SCOPED_TRACE(std::string(k->name) + " " + dist);
      auto r = testing::run_and_check(*k, 384, 256, 640, dist, 5);
      EXPECT_EQ(r.run.unwritten, 0);
      EXPECT_TRUE(r.stats.within_bound) << "componentwise " << r.stats.componentwise << " > " << r.stats.gamma_bound;
    }
  }
}

// Integers: every product and partial sum is exact (for fp8, the partial sums stay far below 2^13
// times the smallest term, so even the ~13-bit alignment of fp8 wgmma loses nothing).
TEST(HopperKernels, ExactOnIntegers) {
  GEMMLAB_REQUIRE_FAMILY("hopper");
  auto ks = hopper_kernels();
  ASSERT_FALSE(ks.empty());
  GEMMLAB_REQUIRE_KERNEL(*ks.front());
  for (const Kernel* k : ks) {
    SCOPED_TRACE(k->name);
    auto r = testing::run_and_check(*k, 2 * k->m_multiple, k->n_multiple, 4 * k->k_multiple, "exactint_8", 9);
    EXPECT_EQ(r.run.unwritten, 0);
    EXPECT_EQ(r.stats.normwise, 0.0);
    EXPECT_EQ(r.stats.frac_correctly_rounded, 1.0);
  }
}

// Sizes that are not multiples of the tile are refused with a message, never run. CPU-only logic,
// so it runs without a GPU too.
TEST(HopperKernels, RejectsSizesOffTheTile) {
  GEMMLAB_REQUIRE_FAMILY("hopper");
  for (const Kernel* k : hopper_kernels()) {
    SCOPED_TRACE(k->name);
    const int m = k->m_multiple, n = k->n_multiple, kk = k->k_multiple;
    EXPECT_TRUE(check_size(*k, m, n, kk).empty());
    EXPECT_FALSE(check_size(*k, m + 1, n, kk).empty());
    EXPECT_FALSE(check_size(*k, m, n + 8, kk).empty());
    EXPECT_FALSE(check_size(*k, m, n, kk + 16).empty());
    EXPECT_FALSE(check_size(*k, 0, n, kk).empty());
    EXPECT_TRUE(k->requires_sm90a);
    EXPECT_EQ(k->min_cc, 90);
    EXPECT_EQ(k->layout_a, Layout::row_major);
    EXPECT_EQ(k->layout_b, Layout::col_major);  // both K-major (fp8 wgmma requires it)
  }
}

// A quick pass over one variant of each step at one small size, for compute-sanitizer.
TEST(HopperSanitizer, OneVariantPerStepSmall) {
  GEMMLAB_REQUIRE_FAMILY("hopper");
  auto ks = hopper_kernels();
  ASSERT_FALSE(ks.empty());
  GEMMLAB_REQUIRE_KERNEL(*ks.front());
  for (const char* name : {"hgemm_wgmma_01_basic_fp16_in_wgmma", "hgemm_wgmma_02_tma_fp16_in_wgmma",
                           "hgemm_wgmma_03_pipelined_bf16_promoted_every_128k",
                           "hgemm_wgmma_04_persistent_sm8_fp16_in_wgmma",
                           "hgemm_wgmma_04_persistent_sm8_e4m3_promoted_every_128k",
                           "hgemm_wgmma_05_cluster2_sm8_bf16_in_wgmma",
                           "hgemm_wgmma_05_cluster2_sm8_fp16_promoted_every_128k"}) {
    const Kernel* k = find_kernel(name);
    ASSERT_NE(k, nullptr) << name;
    auto r = testing::run_and_check(*k, 2 * k->m_multiple, 2 * k->n_multiple, 3 * k->k_multiple, "uniform_-1_1", 3);
    EXPECT_EQ(r.run.unwritten, 0) << name;
    EXPECT_TRUE(r.stats.within_bound) << name;
  }
}

// Step 6 (hgemm_wgmma_06_*, TMA-store epilogue) on its own, so a device run can check just it:
// bounds on the three sizes, exact integers, and a small size for compute-sanitizer.
// The kernels of one step (name prefix "hgemm_wgmma_0N_"), so a device run can check just that step.
std::vector<const Kernel*> step_kernels(const char* prefix) {
  std::vector<const Kernel*> v;
  for (const Kernel* k : hopper_kernels())
    if (std::string(k->name).find(prefix) == 0) v.push_back(k);
  return v;
}

// Bounds on the three sizes of check_within_bound, then exact integers on 2 x 1 tiles.
void check_step_bounds_and_exact(const std::vector<const Kernel*>& ks) {
  for (const Kernel* k : ks) {
    check_within_bound(*k);
    SCOPED_TRACE(k->name);
    auto r = testing::run_and_check(*k, 2 * k->m_multiple, k->n_multiple, 4 * k->k_multiple, "exactint_8", 9);
    EXPECT_EQ(r.run.unwritten, 0);
    EXPECT_EQ(r.stats.normwise, 0.0);
    EXPECT_EQ(r.stats.frac_correctly_rounded, 1.0);
  }
}

// A small size (in tile multiples) for compute-sanitizer: every entry written, within the bound.
void check_step_small(const std::vector<const Kernel*>& ks, int tiles_m, int tiles_n, int slices_k) {
  for (const Kernel* k : ks) {
    auto r = testing::run_and_check(*k, tiles_m * k->m_multiple, tiles_n * k->n_multiple, slices_k * k->k_multiple,
                                    "uniform_-1_1", 3);
    EXPECT_EQ(r.run.unwritten, 0) << k->name;
    EXPECT_TRUE(r.stats.within_bound) << k->name;
  }
}

// The registered kernels of one Hopper step (name prefix) in `ks`, or a skip with the reason (family
// left out of the build, no GPU, no sm_90a); a step with no kernel registered fails.
#define GEMMLAB_STEP_KERNELS(ks, prefix)                                     \
  GEMMLAB_REQUIRE_FAMILY("hopper");                                          \
  const std::vector<const Kernel*> ks = step_kernels(prefix);                \
  ASSERT_FALSE(ks.empty()) << "no " << (prefix) << "* kernels registered";  \
  GEMMLAB_REQUIRE_KERNEL(*ks.front())

TEST(HopperStep6, WithinBoundAndExact) {
  GEMMLAB_STEP_KERNELS(ks, "hgemm_wgmma_06_");
  check_step_bounds_and_exact(ks);
}

TEST(HopperStep6, SanitizerSmall) {
  GEMMLAB_STEP_KERNELS(ks, "hgemm_wgmma_06_");
  // 3 x 2 tiles on 6 blocks plus a K of 3 slices; more tiles than blocks is covered by the bound test.
  check_step_small(ks, 3, 2, 3);
}

// Step 7 (hgemm_wgmma_07_*, clusters of 2 with B multicast) on its own: bounds on the three sizes
// (the third, 18 x 8 tiles, has more cluster tiles than co-resident clusters), exact integers, and a
// small size for compute-sanitizer (4 x 2 tiles: two clusters, each with a partner).

TEST(HopperStep7, WithinBoundAndExact) {
  GEMMLAB_STEP_KERNELS(ks, "hgemm_wgmma_07_");
  check_step_bounds_and_exact(ks);
}

TEST(HopperStep7, SanitizerSmall) {
  GEMMLAB_STEP_KERNELS(ks, "hgemm_wgmma_07_");
  check_step_small(ks, 2, 2, 3);
}

// Step 8 (hgemm_wgmma_08_*, stream-K tail) on its own: bounds on the three sizes (the third, 18 x 8
// multiples = 144 cluster tiles, has a stream-K tail: 2 waves + 12 tiles on 66 clusters),
// exact integers, a stream-K size for compute-sanitizer, and bit-identical results across launches.

TEST(HopperStep8, WithinBoundAndExact) {
  GEMMLAB_STEP_KERNELS(ks, "hgemm_wgmma_08_");
  check_step_bounds_and_exact(ks);
  for (const Kernel* k : ks) {
    SCOPED_TRACE(k->name);
    // Integers through the stream-K fix-up: 18 x 8 multiples, K of 7 slices (chunks of 1-2 slices).
    auto e = testing::run_and_check(*k, 18 * k->m_multiple, 8 * k->n_multiple, 7 * k->k_multiple, "exactint_8", 10);
    EXPECT_EQ(e.run.unwritten, 0);
    EXPECT_EQ(e.stats.normwise, 0.0);
  }
}

TEST(HopperStep8, SanitizerSmall) {
  GEMMLAB_STEP_KERNELS(ks, "hgemm_wgmma_08_");
  // 9 x 8 multiples (72 cluster tiles: one wave + 6 on 66 clusters) with K of 3 slices: tail tiles
  // split over 3 clusters, so owners add two partials.
  check_step_small(ks, 9, 8, 3);
}

// The stream-K reduction order depends only on the size and the grid: two launches, same bits.
// 18 x 8 multiples with K = 4096 (64 slices): 12 tail tiles split into chunks of ~12 slices.
TEST(HopperStep8, StreamKBitIdenticalAcrossLaunches) {
  GEMMLAB_STEP_KERNELS(ks, "hgemm_wgmma_08_");
  for (const Kernel* k : ks) {
    SCOPED_TRACE(k->name);
    const int M = 18 * k->m_multiple, N = 8 * k->n_multiple, K = 4096;
    auto first = testing::run_and_check(*k, M, N, K, "uniform_-1_1", 11);
    EXPECT_EQ(first.run.unwritten, 0);
    EXPECT_TRUE(first.stats.within_bound);
    Distribution d = parse_distribution("uniform_-1_1");
    Matrix A = generate(d, Operand::A, M, K, k->numerics.input, 11);
    Matrix B = generate(d, Operand::B, K, N, k->numerics.input, 11);
    TimingOptions opt;
    opt.warmup = 2;  // more launches in between: each uses a new flag epoch
    opt.reps = 1;
    opt.flush_l2 = false;
    KernelRun second = run_kernel(*k, A, B, opt);
    ASSERT_EQ(second.c.size(), first.run.c.size());
    long long differ = 0;
    for (std::size_t i = 0; i < second.c.size(); ++i)
      if (std::memcmp(&second.c[i], &first.run.c[i], sizeof(double)) != 0) ++differ;
    EXPECT_EQ(differ, 0) << "entries whose bits differ between two launches";
  }
}


// Step 9 (hgemm_wgmma_09_*, ping-pong consumer warpgroups) on its own: bounds on the three sizes (the
// third, 18 x 8 multiples = 144 items, gives each warpgroup several items and the last cluster fewer),
// exact integers, a sanitizer size, and bit-identity with step 7: the same products summed in the same
// k order in the same wgmma accumulator, so every entry must have the same bits.
TEST(HopperStep9, WithinBoundAndExact) {
  GEMMLAB_STEP_KERNELS(ks, "hgemm_wgmma_09_");
  check_step_bounds_and_exact(ks);
}

TEST(HopperStep9, SanitizerSmall) {
  GEMMLAB_STEP_KERNELS(ks, "hgemm_wgmma_09_");
  check_step_small(ks, 4, 2, 3);   // 8 items on 8 clusters: only warpgroup 0 works
  check_step_small(ks, 40, 4, 3);  // 160 items on 66 clusters: both warpgroups take 1-2 items each
}

// Every output entry of `step` has the bits of step 7's (the same products summed in the same k order
// in the same wgmma accumulator). (4096, 1536, 1024): a multiple of both kernels' tiles, 96 cluster
// tiles of step 7 on 66 clusters, so some clusters run two tiles one after the other.
void expect_bit_identical_to_step7(const char* step) {
  for (const char* fmt : {"fp16", "bf16"}) {
    const Kernel* k = find_kernel(std::string(step) + fmt + "_in_wgmma");
    const Kernel* k7 = find_kernel(std::string("hgemm_wgmma_07_cluster2_sm16_") + fmt + "_in_wgmma");
    ASSERT_NE(k, nullptr) << step << fmt;
    ASSERT_NE(k7, nullptr);
    GEMMLAB_REQUIRE_KERNEL(*k);
    SCOPED_TRACE(k->name);
    const int M = 4096, N = 1536, K = 1024;
    for (const char* dist : {"uniform_0_1", "normal_0_1"}) {
      Distribution d = parse_distribution(dist);
      Matrix A = generate(d, Operand::A, M, K, k->numerics.input, 21);
      Matrix B = generate(d, Operand::B, K, N, k->numerics.input, 21);
      TimingOptions opt;
      opt.warmup = 0;
      opt.reps = 1;
      KernelRun r = run_kernel(*k, A, B, opt);
      KernelRun r7 = run_kernel(*k7, A, B, opt);
      ASSERT_EQ(r.c.size(), r7.c.size());
      ASSERT_EQ(r.c.size(), std::size_t(M) * N);
      long long differ = 0;
      for (std::size_t i = 0; i < r.c.size(); ++i)
        if (std::memcmp(&r.c[i], &r7.c[i], sizeof(double)) != 0) ++differ;
      EXPECT_EQ(differ, 0) << dist << ": entries whose bits differ from step 7";
      EXPECT_EQ(r.unwritten, 0);
      EXPECT_EQ(r7.unwritten, 0);
    }
  }
}

TEST(HopperStep9, BitIdenticalToStep7) {
  GEMMLAB_REQUIRE_FAMILY("hopper");
  expect_bit_identical_to_step7("hgemm_wgmma_09_pingpong_sm16_");
}

// Step 10 (hgemm_wgmma_10_*, half of each epilogue stored during the next tile's mainloop) on its
// own: bounds on the three sizes, exact integers, sanitizer sizes (2 x 2 multiples with K of 3
// slices: the whole stash is flushed after the loop; 40 x 4 multiples with K of 8 slices: 160 cluster
// tiles on 66 clusters, 2-3 tiles each, stash boxes stored inside the next tile's mainloop after
// slices 3 and 7 and the rest flushed before its first half), and bit-identity with step 7 at
// K = 1024 (16 slices: all four stash boxes inside the next mainloop).
TEST(HopperStep10, WithinBoundAndExact) {
  GEMMLAB_STEP_KERNELS(ks, "hgemm_wgmma_10_");
  check_step_bounds_and_exact(ks);
}

TEST(HopperStep10, SanitizerSmall) {
  GEMMLAB_STEP_KERNELS(ks, "hgemm_wgmma_10_");
  check_step_small(ks, 2, 2, 3);
  check_step_small(ks, 40, 4, 8);
}

TEST(HopperStep10, BitIdenticalToStep7) {
  GEMMLAB_REQUIRE_FAMILY("hopper");
  expect_bit_identical_to_step7("hgemm_wgmma_10_epioverlap_sm16_");
}

}  // namespace
}  // namespace gemmlab
