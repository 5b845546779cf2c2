// GPU tests of the Hopper family (wgmma/TMA, sm_90a) and the cuBLASLt fp8 baselines: every variant
// against the exact reference with its analytic bound on several sizes (non-square multiples of the
// tile, a partial last promotion interval, more tiles than SMs with a partial super_M group), exact
// results on integer inputs, and rejected sizes. Skipped with the reason where the GPU or the build
// cannot run them. The DISABLED_ tests are the benchmark and the fp8 promotion experiment (run with
// --gtest_also_run_disabled_tests); they print a table and write CSV to $GEMMLAB_BENCH_DIR if set.
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
  for (const Kernel* k : all_kernels())
    if (std::string(k->family) == "hopper") v.push_back(k);
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

FILE* open_csv(const char* file, const char* header) {
  const char* dir = std::getenv("GEMMLAB_BENCH_DIR");
  if (!dir) return nullptr;
  FILE* f = std::fopen((std::string(dir) + "/" + file).c_str(), "w");
  if (f) std::fprintf(f, "%s\n", header);
  return f;
}

// Benchmark: every Hopper variant and the library baselines at 4096^3 and 8192^3, one run, median of
// 15 repetitions (L2 flushed, C poisoned), ratio to cuBLAS fp16->fp32 and to the same-format baseline.
TEST(HopperBench, DISABLED_SeriesVsCublas) {
  GEMMLAB_REQUIRE_FAMILY("hopper");
  const Kernel* c16 = find_kernel("cublas_gemmex_fp16_f32");
  const Kernel* cbf = find_kernel("cublas_gemmex_bf16_f32");
  ASSERT_TRUE(c16 && cbf);
  GEMMLAB_REQUIRE_KERNEL(*hopper_kernels().front());
  std::vector<const Kernel*> ks = {c16, cbf};
  for (const Kernel* k : fp8_baselines()) ks.push_back(k);
  for (const Kernel* k : hopper_kernels()) ks.push_back(k);
  FILE* csv = open_csv("hopper_bench.csv", "kernel,M,N,K,time_ms,time_ms_min,time_ms_max,tflops,ratio_cublas_fp16,ratio_cublas_same_format,gpu");
  const std::string gpu = query_device().name;
  std::printf("\n%-58s %6s %9s %8s %8s %8s\n", "kernel", "size", "time_ms", "TFLOP/s", "x_fp16", "x_same");
  for (int n : {4096, 8192}) {
    std::map<Format, std::pair<Matrix, Matrix>> inputs;
    std::map<std::string, double> t;
    const char* only = std::getenv("GEMMLAB_BENCH_ONLY");  // substring filter on kernel names (baselines always run)
    for (const Kernel* k : ks) {
      if (only && std::string(k->family) == "hopper" && std::string(k->name).find(only) == std::string::npos) continue;
      if (!check_size(*k, n, n, n).empty() || !hardware_support(*k, query_device()).empty()) continue;
      if (!inputs.count(k->input)) {
        Distribution d = parse_distribution("uniform_-1_1");
        inputs.emplace(k->input, std::make_pair(generate(d, Operand::A, n, n, k->input, 1),
                                                generate(d, Operand::B, n, n, k->input, 1)));
      }
      auto& ab = inputs.at(k->input);
      TimingOptions opt;
      opt.warmup = 5;
      opt.reps = 15;
      KernelRun run = run_kernel(*k, ab.first, ab.second, opt);
      EXPECT_EQ(run.unwritten, 0) << k->name;
      t[k->name] = run.time_ms_median;
      const double r16 = t.count(c16->name) ? t[c16->name] / run.time_ms_median : 0;
      const char* same = k->input == Format::bf16 ? cbf->name
                         : (k->input == Format::e4m3 || k->input == Format::e5m2) ? "cublaslt_fp8_e4m3_f32_fast_accum"
                                                                                  : c16->name;
      const double rs = t.count(same) ? t[same] / run.time_ms_median : 0;
      std::printf("%-58s %6d %9.4f %8.1f %8.3f %8.3f\n", k->name, n, run.time_ms_median, run.tflops, r16, rs);
      if (csv)
        std::fprintf(csv, "%s,%d,%d,%d,%.6f,%.6f,%.6f,%.3f,%.4f,%.4f,%s\n", k->name, n, n, n, run.time_ms_median,
                     run.time_ms_min, run.time_ms_max, run.tflops, r16, rs, gpu.c_str());
      std::fflush(stdout);
    }
  }
  if (csv) std::fclose(csv);
}

// The fp8 promotion experiment: error statistics of every fp8 variant against the exact reference as
// K grows (M = N = 256), beside cuBLASLt with and without fast accumulation.
TEST(HopperBench, DISABLED_Fp8Promotion) {
  GEMMLAB_REQUIRE_FAMILY("hopper");
  GEMMLAB_REQUIRE_KERNEL(*hopper_kernels().front());
  std::vector<const Kernel*> ks = fp8_baselines();
  for (const Kernel* k : hopper_kernels())
    if (k->input == Format::e4m3 || k->input == Format::e5m2) ks.push_back(k);
  FILE* csv = open_csv("fp8_promotion.csv",
                       "kernel,input,accumulation,promotion_interval_k,distribution,M,N,K,seed,rel_mean,rel_mean_ci95,"
                       "rel_std,rel_max_abs,normwise,componentwise,gamma_bound,within_bound");
  std::printf("\n%-58s %6s %12s %12s %12s %12s\n", "kernel", "K", "bias", "spread", "max_rel", "normwise");
  for (const char* dist : {"uniform_0_1", "normal_0_1"}) {
    for (int K : {512, 1024, 2048, 4096, 8192, 16384}) {
      for (const Kernel* k : ks) {
        auto r = testing::run_and_check(*k, 256, 256, K, dist, 21);
        const auto& s = r.stats;
        if (std::string(dist) == "uniform_0_1")
          std::printf("%-58s %6d %12.3e %12.3e %12.3e %12.3e\n", k->name, K, s.rel_mean, s.rel_std, s.rel_max_abs,
                      s.normwise);
        if (csv)
          std::fprintf(csv, "%s,%s,%s,%d,%s,256,256,%d,21,%.6e,%.6e,%.6e,%.6e,%.6e,%.6e,%.6e,%d\n", k->name,
                       info(k->input).name, to_string(k->accumulation), k->promotion_interval_k, dist, K, s.rel_mean,
                       s.rel_mean_ci95, s.rel_std, s.rel_max_abs, s.normwise, s.componentwise, s.gamma_bound,
                       int(s.within_bound));
      }
    }
  }
  if (csv) std::fclose(csv);
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

// Step 6 against cuBLAS and step 4's fastest in one run: 4096^3 and 8192^3, median of
// GEMMLAB_BENCH_REPS (default 21) repetitions; CSV hopper_step6_bench.csv to $GEMMLAB_BENCH_DIR.
TEST(HopperBench, DISABLED_Step6VsCublas) {
  GEMMLAB_REQUIRE_FAMILY("hopper");
  const Kernel* c16 = find_kernel("cublas_gemmex_fp16_f32");
  const Kernel* cbf = find_kernel("cublas_gemmex_bf16_f32");
  ASSERT_TRUE(c16 && cbf);
  GEMMLAB_REQUIRE_KERNEL(*hopper_kernels().front());
  std::vector<const Kernel*> ks = {c16, cbf};
  for (const char* n : {"hgemm_wgmma_04_persistent_sm16_fp16_in_wgmma", "hgemm_wgmma_04_persistent_sm16_bf16_in_wgmma"})
    if (const Kernel* k = find_kernel(n)) ks.push_back(k);
  for (const Kernel* k : step_kernels("hgemm_wgmma_06_")) ks.push_back(k);
  const int reps = std::getenv("GEMMLAB_BENCH_REPS") ? std::atoi(std::getenv("GEMMLAB_BENCH_REPS")) : 21;
  FILE* csv = open_csv("hopper_step6_bench.csv",
                       "kernel,M,N,K,reps,time_ms,time_ms_min,time_ms_max,tflops,ratio_cublas_fp16,ratio_cublas_same_format,gpu");
  const std::string gpu = query_device().name;
  std::printf("\n%-58s %6s %9s %8s %8s %8s\n", "kernel", "size", "time_ms", "TFLOP/s", "x_fp16", "x_same");
  for (int n : {4096, 8192}) {
    std::map<Format, std::pair<Matrix, Matrix>> inputs;
    std::map<std::string, double> t;
    for (const Kernel* k : ks) {
      if (!check_size(*k, n, n, n).empty() || !hardware_support(*k, query_device()).empty()) continue;
      if (!inputs.count(k->input)) {
        Distribution d = parse_distribution("uniform_-1_1");
        inputs.emplace(k->input, std::make_pair(generate(d, Operand::A, n, n, k->input, 1),
                                                generate(d, Operand::B, n, n, k->input, 1)));
      }
      auto& ab = inputs.at(k->input);
      TimingOptions opt;
      opt.warmup = 5;
      opt.reps = reps;
      KernelRun run = run_kernel(*k, ab.first, ab.second, opt);
      EXPECT_EQ(run.unwritten, 0) << k->name;
      t[k->name] = run.time_ms_median;
      const double r16 = t.count(c16->name) ? t[c16->name] / run.time_ms_median : 0;
      const char* same = k->input == Format::bf16 ? cbf->name : c16->name;
      const double rs = t.count(same) ? t[same] / run.time_ms_median : 0;
      std::printf("%-58s %6d %9.4f %8.1f %8.3f %8.3f\n", k->name, n, run.time_ms_median, run.tflops, r16, rs);
      if (csv)
        std::fprintf(csv, "%s,%d,%d,%d,%d,%.6f,%.6f,%.6f,%.3f,%.4f,%.4f,%s\n", k->name, n, n, n, reps,
                     run.time_ms_median, run.time_ms_min, run.time_ms_max, run.tflops, r16, rs, gpu.c_str());
      std::fflush(stdout);
    }
  }
  if (csv) std::fclose(csv);
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
    Matrix A = generate(d, Operand::A, M, K, k->input, 11);
    Matrix B = generate(d, Operand::B, K, N, k->input, 11);
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
      Matrix A = generate(d, Operand::A, M, K, k->input, 21);
      Matrix B = generate(d, Operand::B, K, N, k->input, 21);
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
