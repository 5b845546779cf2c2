// The cpu family's Eigen products, one per x86-64 level (kernels/cpu/eigen_product.hpp), on the CPU:
// every level this machine runs gives the exact product where every order of summation is exact
// (small integers), stays within its bound on U[0,1), repeats its bits launch to launch; the levels
// are distinct code (v2 without FMA and v3 with it differ in some bits: had the link kept one copy of
// Eigen's templates for all levels they could not); a level this CPU lacks is refused, never run.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <random>
#include <string>
#include <vector>

#include "kernels/cpu/eigen_product.hpp"

using namespace gemmlab::eigen_cpu;

namespace {

// (M, K) and (K, N) row-major operands of integers in [-8, 8] (seeded), and their exact product.
template <class T>
struct IntegerProblem {
  int M, N, K;
  std::vector<T> A, B, C;
  IntegerProblem(int m, int n, int k, std::uint64_t seed) : M(m), N(n), K(k), A(m * k), B(k * n), C(m * n) {
    std::mt19937_64 g(seed);
    std::uniform_int_distribution<int> v(-8, 8);
    for (auto& x : A) x = static_cast<T>(v(g));
    for (auto& x : B) x = static_cast<T>(v(g));
    for (int i = 0; i < M; ++i)
      for (int j = 0; j < N; ++j) {
        long long s = 0;
        for (int t = 0; t < K; ++t) s += static_cast<long long>(A[i * K + t]) * static_cast<long long>(B[t * N + j]);
        C[i * N + j] = static_cast<T>(s);
      }
  }
};

std::vector<float> uniform01(int n, std::uint64_t seed) {
  std::mt19937_64 g(seed);
  std::uniform_real_distribution<float> u(0.0f, 1.0f);
  std::vector<float> v(n);
  for (auto& x : v) x = u(g);
  return v;
}

std::vector<Level> runnable_levels() {
  std::vector<Level> out;
  for (Level l : all_levels())
    if (cpu_runs(l)) out.push_back(l);
  return out;
}

}  // namespace

TEST(EigenLevels, WidestRunnableLevelIsPickedAndDescribed) {
  const std::vector<Level> run = runnable_levels();
  ASSERT_FALSE(run.empty()) << "gemmlab is built for x86-64-v2: this CPU should run at least that";
  EXPECT_EQ(widest_level(), run.back());
  for (Level l : run) {
    EXPECT_GE(max_threads(l), 1) << to_string(l);
    const std::string d = describe(l);
    EXPECT_NE(d.find(std::string("host CPU, Eigen 3.")), std::string::npos) << d;
    EXPECT_NE(d.find(to_string(l)), std::string::npos) << d;
    EXPECT_NE(d.find(simd(l)), std::string::npos) << d;
    EXPECT_NE(d.find("OpenMP thread"), std::string::npos) << d;
  }
  EXPECT_STREQ(simd(Level::v2), "SSE4.2, no FMA");
  if (cpu_runs(Level::v3)) EXPECT_STREQ(simd(Level::v3), "AVX2 + FMA");
  if (cpu_runs(Level::v4)) EXPECT_STREQ(simd(Level::v4), "AVX-512 + FMA");
}

// |sum| <= K * 64 = 19,200 < 2^24: every partial sum is an integer exact in fp32 (and fp64), so every
// order of summation, fused or not, gives the exact product. Sizes off every SIMD width and block.
TEST(EigenLevels, EveryRunnableLevelIsExactOnSmallIntegers) {
  const IntegerProblem<float> f(67, 93, 300, 1);
  const IntegerProblem<double> d(67, 93, 300, 2);
  for (Level l : runnable_levels()) {
    std::vector<float> cf(f.C.size(), NAN);
    std::vector<double> cd(d.C.size(), NAN);
    product(l, f.A.data(), f.B.data(), cf.data(), f.M, f.N, f.K);
    product(l, d.A.data(), d.B.data(), cd.data(), d.M, d.N, d.K);
    EXPECT_EQ(cf, f.C) << to_string(l) << " fp32";
    EXPECT_EQ(cd, d.C) << to_string(l) << " fp64";
  }
}

// U[0,1) fp32 at 256^3 against the products summed in binary64 (each fp32 product is exact there; the
// sum's own error is at most gamma_K(2^-53) |A||B|, about 2.8e-14 relative, added to the bound). The
// bound is the cpu kernels' record: accumulation `library`, unknown rounding, so the truncating model
// u_eff = 2u, |C^ - C| <= gamma_K(u_eff) |A||B| (Higham, Accuracy and Stability, Thm 3.5 / eq. 3.12;
// any order of summation, FMA or not). And two calls give the same bits.
TEST(EigenLevels, WithinTheRecordsBoundAndRepeatable) {
  const int n = 256;
  const std::vector<float> A = uniform01(n * n, 3), B = uniform01(n * n, 4);
  const double u_eff = 2 * std::ldexp(1.0, -24), gamma = n * u_eff / (1 - n * u_eff);
  const double gamma64 = n * std::ldexp(1.0, -53) / (1 - n * std::ldexp(1.0, -53));
  for (Level l : runnable_levels()) {
    std::vector<float> C(n * n), again(n * n);
    product(l, A.data(), B.data(), C.data(), n, n, n);
    product(l, A.data(), B.data(), again.data(), n, n, n);
    EXPECT_EQ(C, again) << to_string(l) << ": two calls differ";
    long long above = 0, inexact = 0;
    for (int i = 0; i < n; ++i)
      for (int j = 0; j < n; ++j) {
        double exact = 0, abs = 0;  // |A||B| = A B here (non-negative inputs)
        for (int t = 0; t < n; ++t) exact += double(A[i * n + t]) * double(B[t * n + j]);
        abs = exact;
        const double err = std::fabs(double(C[i * n + j]) - exact);
        above += err > (gamma + gamma64) * abs;
        inexact += err > 0;
      }
    EXPECT_EQ(above, 0) << to_string(l) << ": entries above gamma_K(2u)|A||B|";
    EXPECT_GT(inexact, 0) << to_string(l) << ": an fp32 GEMM of 256 terms that rounds nowhere: not a product";
  }
}

// Were the levels' Eigen templates one copy after the link (the hazard CMakeLists.txt's partial link
// removes), v2's entry would run the same code as v3's. v2 rounds each product and each sum; v3
// fuses them: on U[0,1) at 256^3 they must disagree somewhere.
TEST(EigenLevels, LevelsAreDistinctCode) {
  if (!cpu_runs(Level::v3)) GTEST_SKIP() << "this CPU does not run x86-64-v3: only one level to compare";
  const int n = 256;
  const std::vector<float> A = uniform01(n * n, 5), B = uniform01(n * n, 6);
  std::vector<float> c2(n * n), c3(n * n);
  product(Level::v2, A.data(), B.data(), c2.data(), n, n, n);
  product(Level::v3, A.data(), B.data(), c3.data(), n, n, n);
  long long differ = 0;
  for (int i = 0; i < n * n; ++i) differ += c2[i] != c3[i];
  EXPECT_GT(differ, 0) << "x86-64-v2 (no FMA) and v3 (FMA) gave the same bits in all " << n * n << " entries";
}

TEST(EigenLevels, ALevelThisCpuLacksIsRefusedNotRun) {
  std::vector<Level> lacking;
  for (Level l : all_levels())
    if (!cpu_runs(l)) lacking.push_back(l);
  if (lacking.empty()) GTEST_SKIP() << "this CPU runs every level built (v2, v3, v4): nothing to refuse here";
  float a = 1, b = 1, c = 0;
  for (Level l : lacking) {
    EXPECT_THROW(product(l, &a, &b, &c, 1, 1, 1), std::invalid_argument) << to_string(l);
    EXPECT_THROW(max_threads(l), std::invalid_argument) << to_string(l);
  }
}
