// Error statistics on hand-made results whose every statistic is known by hand, and the analytic
// bound factors against hand values.
#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <stdexcept>
#include <vector>

#include "reference/error_stats.hpp"

using namespace gemmlab;

namespace {

GemmReference make_ref(int M, int N, std::vector<double> c, std::vector<double> c_out,
                       std::vector<double> abs_ab, Format out = Format::fp32) {
  GemmReference r;
  r.M = M;
  r.N = N;
  r.K = 4;
  r.c = std::move(c);
  r.c_out = std::move(c_out);
  r.abs_ab = std::move(abs_ab);
  r.out = out;
  r.engine = "hand";
  return r;
}

BoundModel fp32_model(int K, Rounding rounding = Rounding::nearest_even) {
  BoundModel m;
  m.K = K;
  m.rounding = rounding;
  return m;
}

constexpr double kInf = std::numeric_limits<double>::infinity();

}  // namespace

// ---- bound factors -----------------------------------------------------------------------------

TEST(ErrorStatsBound, GammaForFp32Nearest) {
  const double ku = 4096 * 0x1p-24;
  EXPECT_DOUBLE_EQ(gamma_bound_factor(fp32_model(4096)), ku / (1 - ku));
  EXPECT_DOUBLE_EQ(sqrtk_u(fp32_model(4096)), 64 * 0x1p-24);
}

TEST(ErrorStatsBound, TruncationDoublesTheUnitRoundoff) {
  const double ku = 4096 * 0x1p-23;
  EXPECT_DOUBLE_EQ(gamma_bound_factor(fp32_model(4096, Rounding::toward_zero)), ku / (1 - ku));
  EXPECT_DOUBLE_EQ(gamma_bound_factor(fp32_model(4096, Rounding::unknown)), ku / (1 - ku));
  EXPECT_DOUBLE_EQ(sqrtk_u(fp32_model(4096, Rounding::toward_zero)), 64 * 0x1p-23);
}

TEST(ErrorStatsBound, Tf32ComputeOnFp32InputsAddsTheInputRounding) {
  BoundModel m = fp32_model(4096);
  m.compute = Format::tf32;
  const double ku = 4096 * 0x1p-24, g = ku / (1 - ku);
  // (1 + d)(1 + g) - 1 with d = (1 + 2^-11)^2 - 1, expanded so double keeps every digit.
  const double d = 2 * 0x1p-11 + 0x1p-22;
  EXPECT_DOUBLE_EQ(gamma_bound_factor(m), d + g + d * g);
  // fp16 inputs and fp16 compute: products exact, no d_prod.
  BoundModel h = fp32_model(4096);
  h.input = h.compute = Format::fp16;
  EXPECT_DOUBLE_EQ(gamma_bound_factor(h), g);
}

TEST(ErrorStatsBound, SplitOperandsAddTheDroppedProductsAndMultiplyTheTerms) {
  // 3xTF32 (Triton's tf32x3): two tf32 pieces cut toward zero at worst (mu = 2^-10), products
  // big x big, big x small, small x big (pieces 00, 01, 10): 3 K terms summed through truncation.
  BoundModel m = fp32_model(4096, Rounding::toward_zero);
  m.compute = Format::tf32;
  m.split = OperandSplit{.pieces = 2, .products = static_cast<std::uint16_t>(OperandSplit::bit(0, 0) | OperandSplit::bit(0, 1) |
                                                                            OperandSplit::bit(1, 0)),
                         .rounding = Rounding::toward_zero};
  EXPECT_EQ(accumulated_terms(m), 3 * 4096);
  const double mu = 0x1p-10, s = (1 + mu) * (1 + mu), E = mu * mu;
  const double nu = 3 * 4096 * 0x1p-23, g = nu / (1 - nu);
  // delta: small x small (s mu^2) plus both representation errors (2 E + E^2); rho: s (1 + 2 mu).
  const double delta = s * mu * mu + 2 * E + E * E, rho = s * (1 + 2 * mu);
  EXPECT_DOUBLE_EQ(gamma_bound_factor(m), delta + rho * g);
  // The products' error: 5 2^-22 at most with nearest pieces (mu = 2^-11), against the plain TF32 bound's 2^-10.
  m.split.rounding = Rounding::nearest_even;
  m.K = 1;
  const double mu1 = 0x1p-11, s1 = (1 + mu1) * (1 + mu1), g1 = 3 * 0x1p-23 / (1 - 3 * 0x1p-23);
  EXPECT_DOUBLE_EQ(gamma_bound_factor(m), s1 * mu1 * mu1 + 2 * mu1 * mu1 + mu1 * mu1 * mu1 * mu1 + s1 * (1 + 2 * mu1) * g1);
  // The underflow term counts the 3 K sums too.
  m.K = 16;
  const double g16 = 48 * 0x1p-23 / (1 - 48 * 0x1p-23);
  EXPECT_DOUBLE_EQ(underflow_term(m), 48 * 0x1p-149 * (1 + g16) + 0x1p-149);  // truncation: eta = 2^-149
  // Every product formed: only the representation error is left.
  m.split.products = OperandSplit::bit(0, 0) | OperandSplit::bit(0, 1) | OperandSplit::bit(1, 0) | OperandSplit::bit(1, 1);
  EXPECT_EQ(accumulated_terms(m), 4 * 16);
  // Past K u_eff = 1 in terms, no bound: 3 K counts, not K.
  m.split.products = OperandSplit::bit(0, 0) | OperandSplit::bit(0, 1) | OperandSplit::bit(1, 0);
  m.K = (1 << 23) / 3 + 1;
  EXPECT_EQ(gamma_bound_factor(m), kInf);
}

TEST(ErrorStatsBound, SplitOfNoProductsOrTooManyPiecesIsRefused) {
  BoundModel m = fp32_model(64, Rounding::toward_zero);
  m.compute = Format::bf16;
  m.split.pieces = 2;  // products 0
  EXPECT_THROW(gamma_bound_factor(m), std::invalid_argument);
  m.split.pieces = 4;
  m.split.products = 1;
  EXPECT_THROW(gamma_bound_factor(m), std::invalid_argument);
  m.split.pieces = 2;  // piece 2 of a two-piece split
  m.split.products = OperandSplit::bit(0, 0) | OperandSplit::bit(2, 0);
  EXPECT_THROW(gamma_bound_factor(m), std::invalid_argument);
}

TEST(ErrorStatsBound, SplitProblemNamesWhatIsWrong) {
  EXPECT_EQ(split_problem(OperandSplit{}), "");
  EXPECT_EQ(split_problem(OperandSplit{.pieces = 3, .products = OperandSplit::bit(2, 0)}), "");
  EXPECT_NE(split_problem(OperandSplit{.pieces = 0}).find("0 pieces"), std::string::npos);
  EXPECT_NE(split_problem(OperandSplit{.pieces = 4, .products = 1}).find("4 pieces"), std::string::npos);
  EXPECT_NE(split_problem(OperandSplit{.pieces = 2, .products = OperandSplit::bit(1, 2)}).find("beyond the 2 pieces"),
            std::string::npos);
  EXPECT_NE(split_problem(OperandSplit{.pieces = 2}).find("must form some"), std::string::npos);
  EXPECT_NE(split_problem(OperandSplit{.pieces = 1, .products = 1}).find("not split"), std::string::npos);
}

TEST(ErrorStatsBound, SplitProductsTextRoundTrips) {
  OperandSplit s{.pieces = 3, .products = 0};
  EXPECT_EQ(products_text(s), "");
  ASSERT_TRUE(parse_products("11 20 02 10 01 00", s));
  EXPECT_EQ(s.passes(), 6);
  EXPECT_EQ(products_text(s), "00 01 02 10 11 20");  // row-major order of the pairs
  OperandSplit two{.pieces = 2};
  EXPECT_FALSE(parse_products("00 02", two));  // piece 2 of a two-piece split
  EXPECT_FALSE(parse_products("000", two));
  EXPECT_FALSE(parse_products("0a", two));
  EXPECT_TRUE(parse_products("", two));
  EXPECT_EQ(two.products, 0);
}

TEST(ErrorStatsBound, NarrowOutputAddsItsUnitRoundoff) {
  BoundModel m = fp32_model(4096);
  m.input = m.compute = Format::fp16;
  m.output = Format::fp16;
  const double ku = 4096 * 0x1p-24, g = ku / (1 - ku);
  EXPECT_DOUBLE_EQ(gamma_bound_factor(m), g + 0x1p-11 + g * 0x1p-11);  // (1 + g)(1 + 2^-11) - 1
  // fp16 accumulator and fp16 output: the output rounding is the accumulator's, no extra term.
  m.accumulator = Format::fp16;
  const double ku16 = 64 * 0x1p-11;
  m.K = 64;
  EXPECT_DOUBLE_EQ(gamma_bound_factor(m), ku16 / (1 - ku16));
}

TEST(ErrorStatsBound, AccumulatorUnitRoundoffOverride) {
  BoundModel m = fp32_model(32, Rounding::toward_zero);
  m.input = m.compute = Format::e4m3;
  m.acc_unit_roundoff = 0x1p-13;
  const double ku = 32 * 0x1p-12;
  EXPECT_DOUBLE_EQ(gamma_bound_factor(m), ku / (1 - ku));
  EXPECT_DOUBLE_EQ(sqrtk_u(m), std::sqrt(32.0) * 0x1p-12);
}

TEST(ErrorStatsBound, NoBoundWhenKuReachesOne) {
  EXPECT_EQ(gamma_bound_factor(fp32_model(1 << 24)), kInf);
  EXPECT_LT(gamma_bound_factor(fp32_model((1 << 24) - 1)), kInf);
  EXPECT_EQ(gamma_bound_factor(fp32_model(1 << 23, Rounding::toward_zero)), kInf);
  BoundModel h = fp32_model(2048);
  h.input = h.compute = h.accumulator = h.output = Format::fp16;
  EXPECT_EQ(gamma_bound_factor(h), kInf);
}

// ---- statistics on hand-made results --------------------------------------------------------------

// c = {1, 2, 4, 8, 16}, r = {-2, -1, 0, 1, 3} 2^-20, so C^ = c (1 + r), all exact in fp32.
// mean 0.2 2^-20; deviations -2.2 -1.2 -0.2 0.8 2.8, sum of squares 14.8, sample variance 3.7;
// median 0; p01 at position 0.04: -2 + 0.04 = -1.96; p99 at 3.96: 1 + 0.96 * 2 = 2.92;
// |C^ - C| = {2, 2, 0, 8, 48} 2^-20: normwise sqrt(4+4+0+64+2304) / sqrt(1+4+16+64+256) 2^-20;
// abs_ab = {2, 2, 4, 8, 32}: componentwise max {1, 1, 0, 1, 1.5} 2^-20 = 1.5 2^-20;
// c_out equals C^ at entries 0 and 2: 2/5 correctly rounded.
TEST(ErrorStats, HandComputedStatistics) {
  const double s = 0x1p-20;
  const std::vector<double> c = {1, 2, 4, 8, 16};
  const std::vector<double> r = {-2, -1, 0, 1, 3};
  std::vector<double> computed(5);
  for (int i = 0; i < 5; ++i) computed[i] = c[i] * (1 + r[i] * s);
  std::vector<double> c_out = c;
  c_out[0] = computed[0];
  const GemmReference ref = make_ref(1, 5, c, c_out, {2, 2, 4, 8, 32});
  const ErrorStats st = compute_error_stats(computed, ref, fp32_model(4));

  EXPECT_EQ(st.entries, 5);
  EXPECT_EQ(st.rel_count, 5);
  EXPECT_EQ(st.zero_reference, 0);
  EXPECT_EQ(st.nonfinite, 0);
  EXPECT_DOUBLE_EQ(st.rel_mean, 0.2 * s);
  EXPECT_DOUBLE_EQ(st.rel_std, std::sqrt(3.7) * s);
  EXPECT_DOUBLE_EQ(st.rel_mean_ci95, 1.96 * std::sqrt(3.7) / std::sqrt(5.0) * s);
  EXPECT_EQ(st.rel_median, 0.0);
  EXPECT_DOUBLE_EQ(st.rel_p01, -1.96 * s);
  EXPECT_DOUBLE_EQ(st.rel_p99, 2.92 * s);
  EXPECT_EQ(st.rel_max_abs, 3 * s);
  EXPECT_EQ(st.u_out, 0x1p-24);
  EXPECT_DOUBLE_EQ(st.rel_mean_u, 0.2 * 16);
  EXPECT_DOUBLE_EQ(st.rel_std_u, std::sqrt(3.7) * 16);
  EXPECT_EQ(st.rel_median_u, 0.0);
  EXPECT_DOUBLE_EQ(st.rel_p01_u, -1.96 * 16);
  EXPECT_DOUBLE_EQ(st.rel_p99_u, 2.92 * 16);
  EXPECT_EQ(st.rel_max_abs_u, 48.0);
  EXPECT_DOUBLE_EQ(st.normwise, std::sqrt(2376.0 / 341.0) * s);
  EXPECT_EQ(st.componentwise, 1.5 * s);
  // Signed componentwise e = {-1, -1, 0, 1, 1.5} 2^-20: mean 0.1, deviations -1.1 -1.1 -0.1 0.9 1.4,
  // sum of squares 5.2, sample variance 1.3.
  EXPECT_DOUBLE_EQ(st.cw_mean, 0.1 * s);
  EXPECT_DOUBLE_EQ(st.cw_std, std::sqrt(1.3) * s);
  EXPECT_DOUBLE_EQ(st.cw_mean_ci95, 1.96 * std::sqrt(1.3) / std::sqrt(5.0) * s);
  EXPECT_DOUBLE_EQ(st.frac_correctly_rounded, 0.4);
  const double g = 4 * 0x1p-24 / (1 - 4 * 0x1p-24);
  EXPECT_DOUBLE_EQ(st.gamma_bound, g);
  EXPECT_DOUBLE_EQ(st.cw_over_gamma, 1.5 * s / g);
  EXPECT_DOUBLE_EQ(st.sqrtk_u, 2 * 0x1p-24);
  EXPECT_DOUBLE_EQ(st.cw_over_sqrtk_u, 1.5 * s / (2 * 0x1p-24));
  EXPECT_FALSE(st.within_bound) << "1.5 2^-20 exceeds gamma_4 = 2^-22";

  // With K = 2^20 (gamma about 2^-4) the same errors are within the bound.
  const ErrorStats wide = compute_error_stats(computed, ref, fp32_model(1 << 20));
  EXPECT_TRUE(wide.within_bound);
}

TEST(ErrorStats, EvenCountMedianInterpolates) {
  const std::vector<double> c = {1, 1, 1, 1};
  const std::vector<double> computed = {1 + 0x1p-20, 1 - 0x1p-20, 1 + 0x1p-19, 1};  // r: 1, -1, 2, 0
  const ErrorStats st = compute_error_stats(computed, make_ref(2, 2, c, c, {1, 1, 1, 1}), fp32_model(4));
  EXPECT_EQ(st.rel_median, 0.5 * 0x1p-20);            // between 0 and 1
  EXPECT_DOUBLE_EQ(st.rel_p01, (-1 + 0.03) * 0x1p-20);  // position 0.03
  EXPECT_DOUBLE_EQ(st.rel_p99, (1 + 0.97) * 0x1p-20);   // position 2.97
  EXPECT_EQ(st.frac_correctly_rounded, 0.25);
}

TEST(ErrorStats, RelativeErrorSignFollowsTheComputedValueForNegativeReferences) {
  // (C^ - C) / |C|: C = -2, C^ = -2 (1 + 2^-20) is further from zero, so its r is negative.
  const std::vector<double> c = {-2};
  const std::vector<double> computed = {-2 * (1 + 0x1p-20)};
  const ErrorStats st = compute_error_stats(computed, make_ref(1, 1, c, c, {2}), fp32_model(1));
  EXPECT_EQ(st.rel_mean, -0x1p-20);
  EXPECT_EQ(st.rel_std, 0.0);
  EXPECT_EQ(st.rel_mean_ci95, 0.0);
}

TEST(ErrorStats, ZeroReferenceEntriesAreCountedSeparately) {
  // Entry 0: C = 0, C^ = 0. Entry 1: C = 0, C^ = 2^-100 (abs_ab 1). Entry 2: C = 1 exact.
  const std::vector<double> c = {0, 0, 1};
  const std::vector<double> computed = {0, 0x1p-100, 1};
  const ErrorStats st = compute_error_stats(computed, make_ref(1, 3, c, c, {1, 1, 1}), fp32_model(4));
  EXPECT_EQ(st.zero_reference, 2);
  EXPECT_EQ(st.zero_ref_nonzero, 1);
  EXPECT_EQ(st.rel_count, 1);
  EXPECT_EQ(st.rel_mean, 0.0);
  EXPECT_EQ(st.rel_max_abs, 0.0);
  EXPECT_EQ(st.componentwise, 0x1p-100);
  EXPECT_DOUBLE_EQ(st.normwise, 0x1p-100);
  EXPECT_DOUBLE_EQ(st.frac_correctly_rounded, 2.0 / 3);
  EXPECT_TRUE(st.within_bound);
}

TEST(ErrorStats, ZeroAbsABWithAnErrorIsAnInfiniteComponentwiseError) {
  // |A||B| = 0 means every product is zero: any nonzero C^ is an unbounded error.
  const std::vector<double> c = {0, 1};
  const ErrorStats bad = compute_error_stats({0x1p-149, 1}, make_ref(1, 2, c, c, {0, 1}), fp32_model(4));
  EXPECT_EQ(bad.componentwise, kInf);
  EXPECT_EQ(bad.cw_over_gamma, kInf);
  EXPECT_FALSE(bad.within_bound);
  const ErrorStats good = compute_error_stats({0, 1}, make_ref(1, 2, c, c, {0, 1}), fp32_model(4));
  EXPECT_EQ(good.componentwise, 0.0);
  EXPECT_TRUE(good.within_bound);
  EXPECT_EQ(good.frac_correctly_rounded, 1.0);
}

TEST(ErrorStats, NonFiniteOutputIsCountedExcludedAndFails) {
  const double nan = std::numeric_limits<double>::quiet_NaN();
  const std::vector<double> c = {1, 2, 4, 0};
  const std::vector<double> computed = {nan, kInf, 4 * (1 + 0x1p-22), nan};
  const ErrorStats st = compute_error_stats(computed, make_ref(2, 2, c, c, {1, 2, 4, 1}), fp32_model(1 << 20));
  EXPECT_EQ(st.nonfinite, 3);
  EXPECT_EQ(st.rel_count, 1);
  EXPECT_EQ(st.zero_reference, 1);
  EXPECT_EQ(st.zero_ref_nonzero, 1);  // NaN is not zero
  EXPECT_EQ(st.rel_mean, 0x1p-22);
  EXPECT_EQ(st.rel_max_abs, 0x1p-22);
  EXPECT_DOUBLE_EQ(st.normwise, 0x1p-22);   // over the finite entries only: 4 2^-22 / 4
  EXPECT_EQ(st.componentwise, 0x1p-22);     // finite and tiny ...
  EXPECT_FALSE(st.within_bound);            // ... yet the NaN fails the run
  EXPECT_EQ(st.frac_correctly_rounded, 0.0);
  EXPECT_FALSE(std::isnan(st.rel_mean) || std::isnan(st.normwise) || std::isnan(st.componentwise));
}

TEST(ErrorStats, EmptyRelativeSetGivesZerosNotNaN) {
  const std::vector<double> c = {0, 0};
  const ErrorStats st = compute_error_stats({0, 0}, make_ref(1, 2, c, c, {1, 1}), fp32_model(4));
  EXPECT_EQ(st.rel_count, 0);
  EXPECT_EQ(st.rel_mean, 0.0);
  EXPECT_EQ(st.rel_std, 0.0);
  EXPECT_EQ(st.rel_median, 0.0);
  EXPECT_EQ(st.normwise, 0.0);
  EXPECT_TRUE(st.within_bound);
}

TEST(ErrorStats, MismatchedSizesAreRejected) {
  const std::vector<double> c = {1, 2};
  EXPECT_THROW(compute_error_stats({1}, make_ref(1, 2, c, c, {1, 1}), fp32_model(4)), std::invalid_argument);
  EXPECT_THROW(compute_error_stats({1, 2}, make_ref(1, 2, c, {1}, {1, 1}), fp32_model(4)), std::invalid_argument);
}

TEST(ErrorStats, OutputUnitRoundoffFollowsTheReferenceFormat) {
  const std::vector<double> c = {1};
  const ErrorStats st = compute_error_stats({1 + 0x1p-10}, make_ref(1, 1, c, c, {1}, Format::fp16), fp32_model(4));
  EXPECT_EQ(st.u_out, 0x1p-11);
  EXPECT_EQ(st.rel_mean_u, 2.0);
}

// fp64 output: u_out = 2^-53 and the bound of a binary64 FMA chain, gamma_K(2^-53). One ulp above
// c = 1 + 2^-51 is r = 2^-52 / (1 + 2^-51), about 2 u; the other entry is correctly rounded.
// (For binary64 output the relative error is measured against c, the exact C rounded to binary64,
// so it resolves the computed value's distance from the correctly rounded result.)
TEST(ErrorStats, Fp64OutputUsesBinary64UnitRoundoffAndBound) {
  const double c0 = 1 + 0x1p-51;
  const std::vector<double> c = {c0, 2};
  BoundModel m;
  m.K = 1024, m.input = m.compute = m.accumulator = m.output = Format::fp64;
  const ErrorStats st =
      compute_error_stats({std::nextafter(c0, 4.0), 2}, make_ref(1, 2, c, c, {c0, 2}, Format::fp64), m);
  EXPECT_EQ(st.u_out, 0x1p-53);
  EXPECT_EQ(st.rel_max_abs, 0x1p-52 / c0);
  EXPECT_EQ(st.rel_max_abs_u, 0x1p-52 / c0 / 0x1p-53);
  EXPECT_DOUBLE_EQ(st.frac_correctly_rounded, 0.5);
  const double ku = 1024 * 0x1p-53;
  EXPECT_DOUBLE_EQ(st.gamma_bound, ku / (1 - ku));
  EXPECT_TRUE(st.within_bound);
}

// 16M entries with r = r0 +- 2^-40 alternating, r0 = fl(1 + 1e-3) - 1 (about 1e-3): the exact
// mean is r0 and the exact sample std 2^-40 sqrt(n / (n-1)). The naive one-pass formula
// E[r^2] - E[r]^2 in double loses every digit of the variance (its rounding errors, about
// 1e-22, dwarf the true variance 2^-80 = 8e-25); Welford in long double keeps them.
TEST(ErrorStats, WelfordKeepsDigitsOver16MEntriesWithALargeOffset) {
  const std::size_t n = std::size_t{1} << 24;
  const int M = 4096, N = 4096;
  const double base = 1 + 1e-3, r0 = base - 1, d = 0x1p-40;
  GemmReference ref;
  ref.M = M;
  ref.N = N;
  ref.K = 1;
  ref.out = Format::fp64;
  ref.c.assign(n, 1.0);
  ref.c_out.assign(n, 1.0);
  ref.abs_ab.assign(n, 1.0);
  std::vector<double> computed(n);
  for (std::size_t i = 0; i < n; ++i) computed[i] = base + ((i & 1) ? d : -d);

  BoundModel m;
  m.K = 1;
  m.input = m.compute = m.accumulator = m.output = Format::fp64;
  const ErrorStats st = compute_error_stats(computed, ref, m, 0);
  const double exact_std = d * std::sqrt(static_cast<double>(n) / (n - 1));
  EXPECT_EQ(st.rel_count, static_cast<std::int64_t>(n));
  EXPECT_NEAR(st.rel_mean, r0, 1e-3 * d);
  EXPECT_NEAR(st.rel_std, exact_std, 1e-6 * exact_std);
  EXPECT_EQ(st.rel_median, r0);
  EXPECT_EQ(st.rel_p01, r0 - d);
  EXPECT_EQ(st.rel_p99, r0 + d);
  EXPECT_EQ(st.rel_max_abs, r0 + d);
  // normwise: sqrt(sum r^2 / n) = sqrt(r0^2 + d^2).
  EXPECT_NEAR(st.normwise, std::sqrt(r0 * r0 + d * d), 1e-14 * r0);

  // The naive formula fails on the same data (shows the test can tell the difference).
  double s1 = 0, s2 = 0;
  for (std::size_t i = 0; i < n; ++i) {
    const double r = computed[i] - 1;
    s1 += r;
    s2 += r * r;
  }
  const double naive_var = s2 / n - (s1 / n) * (s1 / n);
  const double naive_std = naive_var > 0 ? std::sqrt(naive_var * n / (n - 1)) : 0;
  EXPECT_GT(std::fabs(naive_std - exact_std), 0.5 * exact_std) << "naive summation kept the digits?";

  // Every thread count gives the same bits (fixed chunking, merged in order).
  const ErrorStats one = compute_error_stats(computed, ref, m, 1);
  const ErrorStats three = compute_error_stats(computed, ref, m, 3);
  for (const ErrorStats* o : {&one, &three}) {
    EXPECT_EQ(o->rel_mean, st.rel_mean);
    EXPECT_EQ(o->rel_std, st.rel_std);
    EXPECT_EQ(o->normwise, st.normwise);
    EXPECT_EQ(o->rel_median, st.rel_median);
  }
}

// ---- the measures of other tools: calc_diff, snr_db, max_abs_err, assert_close --------------------

TEST(ErrorStatsOtherTools, TorchDefaultTolerancesArePyTorchs) {
  // torch/testing/_comparison.py _DTYPE_PRECISIONS; the float8 dtypes are not listed: (0, 0).
  const struct {
    Format f;
    double rtol, atol;
  } want[] = {{Format::fp16, 1e-3, 1e-5}, {Format::bf16, 1.6e-2, 1e-5}, {Format::fp32, 1.3e-6, 1e-5},
              {Format::tf32, 1.3e-6, 1e-5}, {Format::fp64, 1e-7, 1e-7}, {Format::e4m3, 0, 0}, {Format::e5m2, 0, 0}};
  for (const auto& w : want) {
    double rtol = -1, atol = -1;
    stats_detail::torch_default_tolerances(w.f, rtol, atol);
    EXPECT_EQ(rtol, w.rtol) << info(w.f).name;
    EXPECT_EQ(atol, w.atol) << info(w.f).name;
  }
}

TEST(ErrorStatsOtherTools, TorchIsCloseDecidesAsAtenDoes) {
  using stats_detail::torch_isclose;
  const double nan = std::numeric_limits<double>::quiet_NaN();
  // fp16 defaults at c = 1: allowed 1e-5 + 1e-3. One fp16 ulp (2^-10 = 0.00098) passes, two fail.
  EXPECT_TRUE(torch_isclose(1 + 0x1p-10, 1, 1e-3, 1e-5));
  EXPECT_TRUE(torch_isclose(1 - 0x1p-10, 1, 1e-3, 1e-5));
  EXPECT_FALSE(torch_isclose(1 + 0x1p-9, 1, 1e-3, 1e-5));
  // bf16 defaults at c = 1: allowed 0.01601, so 2 bf16 ulps (2^-6 = 0.0156) pass, 4 fail.
  EXPECT_TRUE(torch_isclose(1 + 0x1p-6, 1, 1.6e-2, 1e-5));
  EXPECT_FALSE(torch_isclose(1 + 0x1p-5, 1, 1.6e-2, 1e-5));
  // The tolerance is relative to the expected value c (the second argument), not to x.
  EXPECT_FALSE(torch_isclose(-8.5, -8, 0.06, 0)) << "0.5 > 0.06 * 8 = 0.48";
  EXPECT_TRUE(torch_isclose(-8, -8.5, 0.06, 0)) << "0.5 <= 0.06 * 8.5 = 0.51";
  EXPECT_TRUE(torch_isclose(-8.5, -8, 0.0625, 0)) << "0.5 <= 0.0625 * 8: the bound itself passes";
  // Near zero the absolute part decides: atol 1e-5 lets 2^-17 (7.6e-6) pass, 2^-16 (1.5e-5) not.
  EXPECT_TRUE(torch_isclose(0x1p-17, 0, 1e-3, 1e-5));
  EXPECT_FALSE(torch_isclose(0x1p-16, 0, 1e-3, 1e-5));
  // Zero tolerances (fp8 outputs): equality only; -0 equals +0.
  EXPECT_TRUE(torch_isclose(0.25, 0.25, 0, 0));
  EXPECT_TRUE(torch_isclose(-0.0, 0.0, 0, 0));
  EXPECT_FALSE(torch_isclose(0.25 + 0x1p-54, 0.25, 0, 0));  // one ulp
  // equal_nan=False: NaN never matches; an infinity only the same infinity.
  EXPECT_FALSE(torch_isclose(nan, nan, 1e-3, 1e-5));
  EXPECT_FALSE(torch_isclose(nan, 1, 1e-3, 1e-5));
  EXPECT_TRUE(torch_isclose(kInf, kInf, 1e-3, 1e-5));
  EXPECT_FALSE(torch_isclose(-kInf, kInf, 1e-3, 1e-5));
  EXPECT_FALSE(torch_isclose(kInf, 1e300, 1.6e-2, 1e-5));
  EXPECT_FALSE(torch_isclose(1, kInf, 1.6e-2, 1e-5)) << "|1 - inf| is not finite";
}

// c = {1, 2, 4, 8}, x = {1, 2 + 2^-20, 4, 8 - 2^-19}: d = {0, 2^-20, 0, -2^-19}, so
// sum d^2 = 2^-40 + 2^-38 = 5 2^-40, sum c^2 = 85, sum x^2 = 85 + 2^-18 - 2^-15 + 5 2^-40 (each sum
// exact in binary64: at most 48 significant bits).
TEST(ErrorStatsOtherTools, HandComputedFp32Output) {
  const std::vector<double> c = {1, 2, 4, 8};
  const std::vector<double> x = {1, 2 + 0x1p-20, 4, 8 - 0x1p-19};
  const ErrorStats st = compute_error_stats(x, make_ref(2, 2, c, c, {1, 2, 4, 8}), fp32_model(4));
  const double err2 = 5 * 0x1p-40, ref2 = 85, x2 = 85 + 0x1p-18 - 0x1p-15 + 5 * 0x1p-40;
  // DeepGEMM: 1 - 2 <x, c> / (<x, x> + <c, c>) = sum d^2 / (sum x^2 + sum c^2).
  EXPECT_EQ(st.calc_diff, err2 / (x2 + ref2));
  EXPECT_NEAR(st.calc_diff, 5 * 0x1p-40 / 170, 1e-6 * 5 * 0x1p-40 / 170);
  EXPECT_EQ(st.snr_db, 10 * (std::log10(ref2) - std::log10(err2)));
  EXPECT_NEAR(st.snr_db, 132.7165, 1e-4);  // 10 (log10 17 + 40 log10 2)
  EXPECT_EQ(st.max_abs_err, 0x1p-19);
  // fp32 defaults: |d| <= 1e-5 + 1.3e-6 |c| everywhere (2^-19 = 1.9e-6).
  EXPECT_EQ(st.assert_close, 1);
  EXPECT_EQ(st.assert_close_mismatches, 0);

  // 2^-15 = 3.05e-5 at c = 8 exceeds 1e-5 + 1.3e-6 * 8 = 2.04e-5: one mismatch.
  std::vector<double> y = x;
  y[3] = 8 - 0x1p-15;
  const ErrorStats bad = compute_error_stats(y, make_ref(2, 2, c, c, {1, 2, 4, 8}), fp32_model(4));
  EXPECT_EQ(bad.assert_close, 0);
  EXPECT_EQ(bad.assert_close_mismatches, 1);
  EXPECT_EQ(bad.max_abs_err, 0x1p-15);
}

// fp16 output, entries: c = 0, x = 2^-17 (within atol); c = 1, x = 1 + 2^-10 (one ulp, within
// 1e-3); c = 2, x = 2 + 2^-7 (0.0078 > 1e-5 + 2e-3: a mismatch); c = 4, x = NaN (a mismatch, not in
// F); c = 1, x = 1. F = entries 0, 1, 2, 4.
TEST(ErrorStatsOtherTools, HandComputedFp16OutputWithANaN) {
  const std::vector<double> c = {0, 1, 2, 4, 1};
  const std::vector<double> x = {0x1p-17, 1 + 0x1p-10, 2 + 0x1p-7, std::numeric_limits<double>::quiet_NaN(), 1};
  const ErrorStats st = compute_error_stats(x, make_ref(1, 5, c, c, {1, 1, 2, 4, 1}, Format::fp16), fp32_model(4));
  EXPECT_EQ(st.assert_close_mismatches, 2);
  EXPECT_EQ(st.assert_close, 0);
  EXPECT_EQ(st.max_abs_err, 0x1p-7);
  const double err2 = 0x1p-34 + 0x1p-20 + 0x1p-14, ref2 = 0 + 1 + 4 + 1;
  const double x2 = 0x1p-34 + (1 + 0x1p-9 + 0x1p-20) + (4 + 0x1p-5 + 0x1p-14) + 1;  // each square exact
  EXPECT_EQ(st.calc_diff, err2 / (x2 + ref2));
  EXPECT_EQ(st.snr_db, 10 * (std::log10(ref2) - std::log10(err2)));
  EXPECT_EQ(st.nonfinite, 1);
}

TEST(ErrorStatsOtherTools, ExactOutputHasInfiniteSnrAndNoDifference) {
  const std::vector<double> c = {0.5, -3, 0, 1024};
  const ErrorStats st = compute_error_stats(c, make_ref(2, 2, c, c, {1, 3, 1, 1024}), fp32_model(4));
  EXPECT_EQ(st.snr_db, kInf);
  EXPECT_EQ(st.calc_diff, 0.0);
  EXPECT_EQ(st.max_abs_err, 0.0);
  EXPECT_EQ(st.assert_close, 1);
  // All zero on both sides: DeepGEMM's 0 / 0 is defined as 0 here, the SNR +inf (no error).
  const std::vector<double> z = {0, 0};
  const ErrorStats zero = compute_error_stats(z, make_ref(1, 2, z, z, {1, 1}), fp32_model(4));
  EXPECT_EQ(zero.calc_diff, 0.0);
  EXPECT_EQ(zero.snr_db, kInf);
  // An error on a zero reference: no signal at all.
  const ErrorStats noise = compute_error_stats({0x1p-30, 0}, make_ref(1, 2, z, z, {1, 1}), fp32_model(4));
  EXPECT_EQ(noise.snr_db, -kInf);
  EXPECT_EQ(noise.calc_diff, 1.0);  // sum d^2 / (sum x^2 + 0) with d = x
}

TEST(ErrorStatsOtherTools, NonFiniteReferencesAreOutsideFAndJudgedAsTorchDoes) {
  // c = +inf with x = +inf matches (equal); with x finite it does not. Neither is in F.
  const std::vector<double> c = {kInf, kInf, 2};
  const std::vector<double> x = {kInf, 5, 2 + 0x1p-30};
  const ErrorStats st = compute_error_stats(x, make_ref(1, 3, c, c, {kInf, kInf, 2}), fp32_model(4));
  EXPECT_EQ(st.assert_close_mismatches, 1);
  EXPECT_EQ(st.max_abs_err, 0x1p-30);
  EXPECT_EQ(st.snr_db, 10 * (std::log10(4.0) - std::log10(0x1p-60)));
  EXPECT_EQ(st.calc_diff, 0x1p-60 / (4 + 0x1p-28 + 0x1p-60 + 4));
}

// fp8 outputs are judged by equality (PyTorch has no default tolerance for them).
TEST(ErrorStatsOtherTools, Fp8OutputNeedsEquality) {
  const std::vector<double> c = {1, 2};
  GemmReference ref = make_ref(1, 2, c, c, {1, 2}, Format::e4m3);
  EXPECT_EQ(compute_error_stats({1, 2}, ref, fp32_model(4)).assert_close, 1);
  const ErrorStats st = compute_error_stats({1, 2 + 0x1p-40}, ref, fp32_model(4));
  EXPECT_EQ(st.assert_close, 0);
  EXPECT_EQ(st.assert_close_mismatches, 1);
}

TEST(ErrorStatsOtherTools, EveryThreadCountGivesTheSameBits) {
  // 5000 entries over several leaf blocks, errors of mixed sizes and a NaN.
  const int n = 5000;
  std::vector<double> c(n), x(n), ab(n);
  for (int i = 0; i < n; ++i) {
    c[i] = std::ldexp(1.0 + (i % 7) / 8.0, (i % 11) - 5);
    x[i] = c[i] + std::ldexp((i % 5) - 2.0, (i % 13) - 40);
    ab[i] = std::fabs(c[i]);
  }
  x[4321] = std::numeric_limits<double>::quiet_NaN();
  const GemmReference ref = make_ref(50, 100, c, c, ab);
  const ErrorStats one = compute_error_stats(x, ref, fp32_model(4), 1);
  const ErrorStats three = compute_error_stats(x, ref, fp32_model(4), 3);
  EXPECT_EQ(one.calc_diff, three.calc_diff);
  EXPECT_EQ(one.snr_db, three.snr_db);
  EXPECT_EQ(one.max_abs_err, three.max_abs_err);
  EXPECT_EQ(one.assert_close_mismatches, three.assert_close_mismatches);
  EXPECT_GE(one.assert_close_mismatches, 1);
  EXPECT_GT(one.calc_diff, 0.0);
}
