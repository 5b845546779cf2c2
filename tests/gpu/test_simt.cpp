// GPU tests of the CUDA-core SGEMM series (kernels/simt, Boehm's kernels 1-11): every variant bit for
// bit against sgemm_01_naive (all of them keep its order: one fp32 FMA per k, increasing k, from +0),
// every variant against the exact reference with its analytic bound, exact results on exactly
// representable data, and size rejection. The 4096^3 benchmark against cuBLAS fp32 pedantic is the
// suite experiments/suites/simt_series.toml; the tuner is `gemmlab tune`.
#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <string>
#include <vector>

#include "experiments/device/tune_sgemm.hpp"
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
    EXPECT_EQ(k->numerics.accumulation, Accumulation::fma) << k->name;
    EXPECT_EQ(k->numerics.accumulation_rounding, Rounding::nearest_even) << k->name;
    EXPECT_EQ(k->numerics.input, Format::fp32) << k->name;
    EXPECT_EQ(k->numerics.output, Format::fp32) << k->name;
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

}  // namespace
}  // namespace gemmlab
