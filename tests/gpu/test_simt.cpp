// GPU tests of the CUDA-core SGEMM series (kernels/simt, Boehm's kernels 1-11): every variant bit for
// bit against sgemm_01_naive (all of them keep its order: one fp32 FMA per k, increasing k, from +0),
// every variant against the exact reference with its analytic bound, exact results on exactly
// representable data, and size rejection. Disabled by default: a 4096^3 benchmark against cuBLAS fp32
// pedantic and the tuner (run with --gtest_also_run_disabled_tests --gtest_filter=SimtBench.*).
#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <string>
#include <vector>

#include "experiments/tune_sgemm.hpp"
#include "tests/gpu/gpu_test_util.hpp"

namespace gemmlab {
namespace {

std::vector<const Kernel*> simt_kernels() {
  std::vector<const Kernel*> v;
  for (const Kernel* k : all_kernels())
    if (std::strcmp(k->family, "simt") == 0) v.push_back(k);
  return v;
}

const Kernel& kernel(const std::string& name) {
  const Kernel* k = find_kernel(name);
  if (!k) throw std::runtime_error("test needs kernel " + name);
  return *k;
}

int round_up(int x, int m) { return (x + m - 1) / m * m; }

// Awkward base sizes (non-square, no power of two), rounded up to each kernel's multiples; kernels
// that take any size get them as they are.
struct Size {
  int M, N, K;
};
const Size kBaseSizes[] = {{300, 200, 520}, {72, 650, 1000}, {37, 75, 13}};

Size fit(const Kernel& k, Size s) {
  return {round_up(s.M, k.m_multiple), round_up(s.N, k.n_multiple), round_up(s.K, k.k_multiple)};
}

std::uint32_t bits(double x) {
  const float f = static_cast<float>(x);  // exact: the output is fp32
  std::uint32_t u;
  std::memcpy(&u, &f, 4);
  return u;
}

TimingOptions one_run() {
  TimingOptions o;
  o.warmup = 0;
  o.reps = 1;
  o.flush_l2 = false;
  return o;
}

TEST(SimtKernels, FamilyIsRegistered) {
  GEMMLAB_REQUIRE_FAMILY("simt");
  const auto ks = simt_kernels();
  ASSERT_EQ(ks.size(), 11u) << "sgemm_01 .. sgemm_11";
  for (const Kernel* k : ks) {
    EXPECT_EQ(std::string(k->name).rfind("sgemm_", 0), 0u) << k->name;
    EXPECT_EQ(k->accumulation, Accumulation::fma) << k->name;
    EXPECT_EQ(k->acc_rounding, AccRounding::nearest) << k->name;
    EXPECT_EQ(k->input, Format::fp32) << k->name;
    EXPECT_EQ(k->output, Format::fp32) << k->name;
  }
}

// The headline numerics claim: every variant computes exactly the naive kernel's FMA chain, so its
// output matches bit for bit (sign of zero included) on every size and distribution.
TEST(SimtKernels, BitIdenticalToNaive) {
  GEMMLAB_REQUIRE_FAMILY("simt");
  GEMMLAB_REQUIRE_KERNEL(kernel("sgemm_01_naive"));
  const Kernel& naive = kernel("sgemm_01_naive");
  for (const Kernel* k : simt_kernels()) {
    if (k == &naive) continue;
    GEMMLAB_REQUIRE_KERNEL(*k);
    for (const Size& base : kBaseSizes) {
      const Size s = fit(*k, base);
      for (const char* dist : {"uniform_-1_1", "uniform_0_1", "normal_0_1", "logunif_-20_20", "cancel_-20"}) {
        const std::uint64_t seed = 17;
        const Distribution d = parse_distribution(dist);
        const Matrix A = generate(d, Operand::A, s.M, s.K, Format::fp32, seed);
        const Matrix B = generate(d, Operand::B, s.K, s.N, Format::fp32, seed);
        const KernelRun ref = run_kernel(naive, A, B, one_run());
        const KernelRun run = run_kernel(*k, A, B, one_run());
        ASSERT_EQ(run.c.size(), ref.c.size());
        long long mismatches = 0;
        std::size_t first = 0;
        for (std::size_t i = 0; i < run.c.size(); ++i)
          if (bits(run.c[i]) != bits(ref.c[i]) && mismatches++ == 0) first = i;
        EXPECT_EQ(run.unwritten, 0) << k->name;
        EXPECT_EQ(mismatches, 0) << k->name << " differs from sgemm_01_naive at " << s.M << "x" << s.N << "x" << s.K
                                 << " on " << dist << " seed " << seed << ": first at entry " << first << " ("
                                 << run.c[first] << " vs " << ref.c[first] << ")";
      }
    }
  }
}

// Against the exact reference: the deterministic bound gamma_K |A||B| with round-to-nearest.
TEST(SimtKernels, EveryVariantWithinBound) {
  GEMMLAB_REQUIRE_FAMILY("simt");
  GEMMLAB_REQUIRE_GPU();
  for (const Kernel* k : simt_kernels()) {
    GEMMLAB_REQUIRE_KERNEL(*k);
    for (const Size& base : {kBaseSizes[0], kBaseSizes[2]}) {
      const Size s = fit(*k, base);
      for (const char* dist : {"uniform_0_1", "uniform_-1_1", "normal_0_1", "logunif_-8_8"}) {
        auto r = testing::run_and_check(*k, s.M, s.N, s.K, dist, 11);
        EXPECT_EQ(r.run.unwritten, 0) << k->name;
        EXPECT_EQ(r.stats.nonfinite, 0) << k->name << " " << dist;
        EXPECT_TRUE(r.stats.within_bound) << k->name << " " << s.M << "x" << s.N << "x" << s.K << " on " << dist
                                          << ": componentwise " << r.stats.componentwise << " > bound "
                                          << r.stats.gamma_bound;
        EXPECT_GT(r.stats.rel_count, 0) << k->name;
        EXPECT_LT(r.stats.normwise, 1e-5) << k->name << " " << dist;  // fp32 round-to-nearest FMA chain
      }
    }
  }
}

// Small integers: every product and partial sum is exact in fp32, so the only correct error is zero.
TEST(SimtKernels, ExactOnIntegers) {
  GEMMLAB_REQUIRE_FAMILY("simt");
  GEMMLAB_REQUIRE_GPU();
  for (const Kernel* k : simt_kernels()) {
    GEMMLAB_REQUIRE_KERNEL(*k);
    const Size s = fit(*k, {150, 90, 260});
    auto r = testing::run_and_check(*k, s.M, s.N, s.K, "exactint_8", 7);
    EXPECT_EQ(r.run.unwritten, 0) << k->name;
    EXPECT_EQ(r.stats.normwise, 0.0) << k->name;
    EXPECT_EQ(r.stats.frac_correctly_rounded, 1.0) << k->name;
  }
}

// Sizes a kernel cannot take are refused by check_size with a message naming the kernel (no GPU needed).
TEST(SimtKernels, UnfitSizesRejected) {
  GEMMLAB_REQUIRE_FAMILY("simt");
  for (const Kernel* k : simt_kernels()) {
    const int m = k->m_multiple, n = k->n_multiple, kk = k->k_multiple;
    EXPECT_EQ(check_size(*k, 4 * m, 2 * n, 3 * kk), "") << k->name;
    if (m == 1 && n == 1 && kk == 1) {
      EXPECT_EQ(check_size(*k, 37, 75, 13), "") << k->name << " takes any size";
      continue;
    }
    for (const Size& bad : {Size{m + 1, n, kk}, Size{m, n + 1, kk}, Size{m, n, kk + 1}}) {
      if ((bad.M % m == 0) && (bad.N % n == 0) && (bad.K % kk == 0)) continue;  // a multiple of 1
      const std::string why = check_size(*k, bad.M, bad.N, bad.K);
      EXPECT_NE(why.find(k->name), std::string::npos) << k->name << " accepted " << bad.M << "x" << bad.N << "x" << bad.K
                                                      << " (message: '" << why << "')";
      EXPECT_NE(why.find("multiple"), std::string::npos) << why;
    }
  }
  EXPECT_NE(check_size(kernel("sgemm_10_warptiling"), 4096, 4096, 4100), "");
}

// Benchmark at 4096^3 (or GEMMLAB_BENCH_SIZE): every simt kernel and cuBLAS fp32 pedantic in one run,
// median of GEMMLAB_BENCH_REPS (default 20) repetitions through run_kernel; writes a CSV to
// GEMMLAB_BENCH_CSV when set. Not a unit test: disabled unless asked for.
TEST(SimtBench, DISABLED_Simt4096) {
  GEMMLAB_REQUIRE_FAMILY("simt");
  GEMMLAB_REQUIRE_GPU();
  const int n = std::getenv("GEMMLAB_BENCH_SIZE") ? std::atoi(std::getenv("GEMMLAB_BENCH_SIZE")) : 4096;
  const int reps = std::getenv("GEMMLAB_BENCH_REPS") ? std::atoi(std::getenv("GEMMLAB_BENCH_REPS")) : 20;
  const Distribution d = parse_distribution("uniform_-1_1");
  const Matrix A = generate(d, Operand::A, n, n, Format::fp32, 1);
  const Matrix B = generate(d, Operand::B, n, n, Format::fp32, 1);
  TimingOptions opt;
  opt.warmup = 3;
  opt.reps = reps;
  std::vector<const Kernel*> ks = {&kernel("cublas_gemmex_fp32_pedantic")};
  for (const Kernel* k : simt_kernels()) ks.push_back(k);
  struct Row {
    std::string name;
    double ms, ms_min, ms_max, tflops;
    long long mismatches;
  };
  std::vector<Row> rows;
  std::vector<double> naive_c;
  for (const Kernel* k : ks) {
    if (!check_size(*k, n, n, n).empty() || !hardware_support(*k, query_device()).empty()) continue;
    KernelRun run = run_kernel(*k, A, B, opt);
    long long mism = -1;
    if (std::string(k->name) == "sgemm_01_naive") naive_c = run.c;
    if (!naive_c.empty() && std::string(k->family) == "simt") {
      mism = 0;
      for (std::size_t i = 0; i < run.c.size(); ++i) mism += bits(run.c[i]) != bits(naive_c[i]);
    }
    rows.push_back({k->name, run.time_ms_median, run.time_ms_min, run.time_ms_max, run.tflops, mism});
    EXPECT_EQ(run.unwritten, 0) << k->name;
  }
  ASSERT_FALSE(rows.empty());
  const double cublas_ms = rows.front().ms;
  std::string csv = "kernel,gpu,M,N,K,reps,time_ms_median,time_ms_min,time_ms_max,tflops,ratio_to_cublas_pedantic,"
                    "mismatches_vs_naive\n";
  std::printf("\n%s, %dx%dx%d, uniform_-1_1, median of %d reps\n", query_device().name.c_str(), n, n, n, reps);
  std::printf("%-28s %10s %10s %8s %9s %10s\n", "kernel", "time_ms", "min_ms", "tflops", "x_cublas", "bit_diff");
  for (const Row& r : rows) {
    std::printf("%-28s %10.3f %10.3f %8.2f %9.3f %10lld\n", r.name.c_str(), r.ms, r.ms_min, r.tflops, cublas_ms / r.ms,
                r.mismatches);
    char line[512];
    std::snprintf(line, sizeof line, "%s,%s,%d,%d,%d,%d,%.6f,%.6f,%.6f,%.4f,%.4f,%lld\n", r.name.c_str(),
                  query_device().name.c_str(), n, n, n, reps, r.ms, r.ms_min, r.ms_max, r.tflops, cublas_ms / r.ms,
                  r.mismatches);
    csv += line;
  }
  if (const char* path = std::getenv("GEMMLAB_BENCH_CSV")) std::ofstream(path) << csv;
}

// The tuner (`gemmlab tune`) without the CLI: GEMMLAB_TUNE_SIZE (4096), GEMMLAB_TUNE_REPS (10),
// GEMMLAB_TUNE_HEADER (where to write the winner; unset: print only).
TEST(SimtBench, DISABLED_Tune) {
  GEMMLAB_REQUIRE_FAMILY("simt");
  GEMMLAB_REQUIRE_GPU();
  const int n = std::getenv("GEMMLAB_TUNE_SIZE") ? std::atoi(std::getenv("GEMMLAB_TUNE_SIZE")) : 4096;
  const int reps = std::getenv("GEMMLAB_TUNE_REPS") ? std::atoi(std::getenv("GEMMLAB_TUNE_REPS")) : 10;
  const char* header = std::getenv("GEMMLAB_TUNE_HEADER");
  EXPECT_EQ(tune_sgemm(n, n, n, reps, header ? header : ""), 0);
}

}  // namespace
}  // namespace gemmlab
