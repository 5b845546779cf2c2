// GPU tests of the harness itself and of the first two entries (naive SGEMM, cuBLAS baselines).
#include <cmath>

#include "experiments/report/result.hpp"
#include "tests/gpu/gpu_test_util.hpp"

namespace gemmlab {
namespace {

const Kernel& kernel(const char* name) {
  const Kernel* k = find_kernel(name);
  if (!k) throw std::runtime_error(std::string("test needs kernel ") + name);
  return *k;
}

// Small integers: every product and partial sum is exact in fp32, so any correct kernel returns the
// exact result, whatever its order of summation.
TEST(GpuHarness, NaiveSgemmExactOnIntegers) {
  GEMMLAB_REQUIRE_FAMILY("simt");
  const Kernel& k = kernel("sgemm_01_naive");
  GEMMLAB_REQUIRE_KERNEL(k);
  auto r = testing::run_and_check(k, 67, 45, 129, "exactint_8", 7);
  EXPECT_EQ(r.run.unwritten, 0);
  EXPECT_EQ(r.stats.normwise, 0.0);
  EXPECT_EQ(r.stats.frac_correctly_rounded, 1.0);
}

// The naive kernel is a sequential fp32 FMA chain: reproduce it on the CPU exactly.
TEST(GpuHarness, NaiveSgemmMatchesSequentialFmaBitForBit) {
  GEMMLAB_REQUIRE_FAMILY("simt");
  const Kernel& k = kernel("sgemm_01_naive");
  GEMMLAB_REQUIRE_KERNEL(k);
  const int M = 33, N = 65, K = 257;
  Distribution d = parse_distribution("normal_0_1");
  Matrix A = generate(d, Operand::A, M, K, Format::fp32, 3);
  Matrix B = generate(d, Operand::B, K, N, Format::fp32, 3);
  TimingOptions opt;
  opt.warmup = 0;
  opt.reps = 1;
  auto run = run_kernel(k, A, B, opt);
  long long mismatches = 0;
  for (int i = 0; i < M; ++i)
    for (int j = 0; j < N; ++j) {
      float acc = 0.0f;
      for (int kk = 0; kk < K; ++kk) acc = std::fmaf(float(A(i, kk)), float(B(kk, j)), acc);
      if (double(acc) != run.c[size_t(i) * N + j]) ++mismatches;
    }
  EXPECT_EQ(mismatches, 0);
}

TEST(GpuHarness, KernelsWithinBoundOnNonSquare) {
  GEMMLAB_REQUIRE_FAMILY("simt");
  GEMMLAB_REQUIRE_FAMILY("cublas");
  for (const char* name : {"sgemm_01_naive", "cublas_gemmex_fp32_pedantic", "cublas_gemmex_fp16_f32"}) {
    const Kernel& k = kernel(name);
    GEMMLAB_REQUIRE_KERNEL(k);
    for (const char* dist : {"uniform_0_1", "uniform_-1_1", "normal_0_1", "logunif_-8_8"}) {
      auto r = testing::run_and_check(k, 200, 136, 520, dist, 11);
      EXPECT_EQ(r.stats.nonfinite, 0) << name << " " << dist;
      EXPECT_TRUE(r.stats.within_bound) << name << " on " << dist << ": componentwise error "
                                        << r.stats.componentwise << " > bound " << r.stats.gamma_bound;
      EXPECT_GT(r.stats.rel_count, 0);
    }
  }
}

TEST(GpuHarness, TimingRecordsEveryRepetition) {
  GEMMLAB_REQUIRE_FAMILY("cublas");
  const Kernel& k = kernel("cublas_gemmex_fp16_f32");
  GEMMLAB_REQUIRE_KERNEL(k);
  Distribution d = parse_distribution("uniform_0_1");
  Matrix A = generate(d, Operand::A, 256, 256, k.numerics.input, 1);
  Matrix B = generate(d, Operand::B, 256, 256, k.numerics.input, 1);
  TimingOptions opt;
  opt.warmup = 2;
  opt.reps = 7;
  auto run = run_kernel(k, A, B, opt);
  ASSERT_EQ(run.times_ms.size(), 7u);
  EXPECT_LE(run.time_ms_min, run.time_ms_median);
  EXPECT_LE(run.time_ms_median, run.time_ms_max);
  EXPECT_GT(run.time_ms_min, 0.0);
  // The noise: q75 - q25 of the 7 repetitions (report/result.hpp), within the whole range.
  EXPECT_EQ(run.time_ms_iqr, interquartile_range(std::vector<double>(run.times_ms.begin(), run.times_ms.end())));
  EXPECT_GE(run.time_ms_iqr, 0.0);
  EXPECT_LE(run.time_ms_iqr, run.time_ms_max - run.time_ms_min);
  EXPECT_EQ(run.unwritten, 0);
}

}  // namespace
}  // namespace gemmlab
