// Fixed-point operands (cuBLAS's fp64 emulation): the bound f |A||B| + h alpha_i beta_j + g of
// reference/error_stats.hpp against hand values; the verdict on dyadic inputs whose every quantity is
// known by hand; the CPU model of the scheme (reference/fixed_point.hpp) on hand-made digits, within
// the bound of the bits it keeps on every kind of data, and outside it when it keeps fewer bits than
// its record says; the numerics records of the emulation kernels, their description and CSV column.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <stdexcept>
#include <string>
#include <vector>

#include "experiments/report/result.hpp"
#include "kernels/registry.hpp"
#include "reference/distributions.hpp"
#include "reference/error_stats.hpp"
#include "reference/exact_gemm.hpp"
#include "reference/fixed_point.hpp"
#include "reference/mpfr_gemm.hpp"
#include "reference/numerics.hpp"
#include "reference/portable_fp.hpp"

namespace gemmlab {
namespace {

constexpr double kPhi2 = (383.0 / 127.0) * (383.0 / 127.0);

BoundModel fixed_model(int bits, int K) { return bound_model(fixed_point_fp64_numerics(bits), K); }

double gamma2u(double n) {  // gamma_n with u_eff = 2u of binary64
  const double nu = n * 0x1p-52;
  return nu / (1 - nu);
}

Matrix matrix(int rows, int cols, std::vector<double> v) {
  Matrix m(rows, cols);
  m.v = std::move(v);
  return m;
}

// ---- the bound against hand values -------------------------------------------------------------

// 7 bits: one slice, nothing dropped, one term per K chunk: f = phi^2 gamma_1, h = K (4 delta + 4
// delta^2)(1 + f) with delta = 2^-7.
TEST(FixedPointBound, OneSliceHandValues) {
  const BoundModel m = fixed_model(7, 2);
  EXPECT_EQ(fixed_point_slices(7), 1);
  EXPECT_EQ(accumulated_terms(m), 1);
  const double f = kPhi2 * gamma2u(1);
  EXPECT_DOUBLE_EQ(gamma_bound_factor(m), f);
  EXPECT_DOUBLE_EQ(fixed_point_term(m), 2 * (4 * 0x1p-7 + 4 * 0x1p-14) * (1 + f));
  // Two roundings per term (into binary64, then the sum), eta = 2^-1022 for the unknown rounding.
  EXPECT_DOUBLE_EQ(underflow_term(m), 2 * 0x1p-1022 * (1 + gamma2u(1)) + 0x1p-1022);
}

// 15 bits: two slices, the pair (2, 2) dropped: 4 (S - 1) (256/255) 2^-8S per k; three pairs formed
// in each of the two K chunks of 8192 at K = 10000.
TEST(FixedPointBound, TwoSlicesAndTwoChunksHandValues) {
  const BoundModel m = fixed_model(15, 10000);
  EXPECT_EQ(fixed_point_slices(15), 2);
  EXPECT_EQ(accumulated_terms(m), 6);
  const double f = kPhi2 * gamma2u(6), delta = 0x1p-15;
  EXPECT_DOUBLE_EQ(gamma_bound_factor(m), f);
  EXPECT_DOUBLE_EQ(fixed_point_term(m),
                   10000 * ((4 * delta + 4 * delta * delta) * (1 + f) + 4 * (256.0 / 255.0) * 0x1p-16));
  EXPECT_EQ(accumulated_terms(fixed_model(15, 8192)), 3);
  EXPECT_EQ(accumulated_terms(fixed_model(15, 8193)), 6);
}

// cuBLAS's settings: 16 bits keep 23 (3 slices, 6 pairs), 79 keep 79 (10 slices, 55 pairs). At
// K = 1024 the term of the represented operands and the dropped pairs is 2^-18.9 for 23 bits, and
// the |A||B| part stays below binary64's own gamma_K at 2u.
TEST(FixedPointBound, CublasSettingsHandValues) {
  const BoundModel b16 = fixed_model(cublas_fixed_point_bits(16), 1024);
  EXPECT_EQ(b16.fixed_point_bits, 23);
  EXPECT_EQ(accumulated_terms(b16), 6);
  const double f16 = kPhi2 * gamma2u(6), d16 = 0x1p-23;
  EXPECT_DOUBLE_EQ(fixed_point_term(b16), 1024 * ((4 * d16 + 4 * d16 * d16) * (1 + f16) + 8 * (256.0 / 255.0) * 0x1p-24));
  const BoundModel b79 = fixed_model(cublas_fixed_point_bits(79), 1024);
  EXPECT_EQ(accumulated_terms(b79), 55);
  EXPECT_DOUBLE_EQ(gamma_bound_factor(b79), kPhi2 * gamma2u(55));
  EXPECT_LT(gamma_bound_factor(b79), gamma_bound_factor(bound_model(library_numerics(Format::fp64), 1024)));
  EXPECT_DOUBLE_EQ(fixed_point_term(b79),
                   1024 * ((4 * 0x1p-79 + 4 * 0x1p-158) * (1 + kPhi2 * gamma2u(55)) + 36 * (256.0 / 255.0) * 0x1p-80));
}

TEST(FixedPointBound, FloatingPointOperandsHaveNoTerm) {
  BoundModel m = bound_model(library_numerics(Format::fp64), 4096);
  EXPECT_EQ(fixed_point_term(m), 0.0);
  EXPECT_EQ(accumulated_terms(m), 4096);
  m.fixed_point_bits = -1;
  EXPECT_THROW(gamma_bound_factor(m), std::invalid_argument);
  m.fixed_point_bits = 23;
  m.split = OperandSplit{.pieces = 2, .products = OperandSplit::bit(0, 0)};
  try {
    fixed_point_term(m);
    ADD_FAILURE() << "a split of fixed-point operands was accepted";
  } catch (const std::invalid_argument& e) {
    EXPECT_NE(std::string(e.what()).find("fixed point and split"), std::string::npos) << e.what();
  }
}

// ---- the verdict on dyadic inputs --------------------------------------------------------------

// a = (1, 2^-10), b = (1, 1): C = 1 + 2^-10 = |A||B|, alpha = beta = 1. With 7 bits the model cuts
// 2^-10 to 0 (2^-10 / sigma 2^7 = 2^-4 of a grid step, sigma = 2) and returns exactly 1: an error
// of 2^-10, far above binary64's bound, within the fixed-point one.
TEST(FixedPointBound, VerdictOnDyadicInputs) {
  const Matrix A = matrix(1, 2, {1, 0x1p-10}), B = matrix(2, 1, {1, 1});
  const GemmReference ref = exact_gemm(A, B, Format::fp64);
  ASSERT_EQ(ref.c[0], 1 + 0x1p-10);
  ASSERT_EQ(ref.row_max_a, std::vector<double>{1.0});
  ASSERT_EQ(ref.col_max_b, std::vector<double>{1.0});
  const std::vector<double> x = fixed_point::gemm(A, B, fixed_point::Scheme{.bits = 7});
  ASSERT_EQ(x[0], 1.0);

  const BoundModel m = fixed_model(7, 2);
  const double f = gamma_bound_factor(m), g = underflow_term(m), h = fixed_point_term(m);
  // The statistics' binary64 operations (error_stats.hpp): (f ab + g) + h alpha beta.
  const double bound = pfp::add(pfp::add(pfp::mul(f, 1 + 0x1p-10), g), pfp::mul(h, 1.0));
  const ErrorStats s = compute_error_stats(x, ref, m);
  EXPECT_EQ(s.bound_violations, 0);
  EXPECT_TRUE(s.within_bound);
  EXPECT_EQ(s.fixed_point_bound, h);
  EXPECT_EQ(s.bound_ratio, pfp::div(0x1p-10, bound));
  EXPECT_EQ(s.cw_over_gamma, s.componentwise / f);  // the |A||B| part alone: far above 1 here

  // Beyond h alpha beta: one violation, the ratio above 1.
  const std::vector<double> far = {ref.c[0] - 2 * h};
  const ErrorStats v = compute_error_stats(far, ref, m);
  EXPECT_EQ(v.bound_violations, 1);
  EXPECT_FALSE(v.within_bound);
  EXPECT_GT(v.bound_ratio, 1.0);

  // Judged as binary64 (the record these kernels had), the same output fails.
  const ErrorStats fp64 = compute_error_stats(x, ref, bound_model(library_numerics(Format::fp64), 2));
  EXPECT_EQ(fp64.bound_violations, 1);
  EXPECT_EQ(fp64.fixed_point_bound, 0.0);
  EXPECT_GT(fp64.bound_ratio, 1e10);
}

// The term needs the reference's maxima; one made without them is refused, naming what is missing.
TEST(FixedPointBound, ReferenceWithoutMaximaIsRefused) {
  const Matrix A = matrix(1, 2, {1, 0x1p-10}), B = matrix(2, 1, {1, 1});
  GemmReference ref = exact_gemm(A, B, Format::fp64);
  ref.row_max_a.clear();
  try {
    compute_error_stats({1.0}, ref, fixed_model(7, 2));
    ADD_FAILURE() << "judged without alpha";
  } catch (const std::invalid_argument& e) {
    EXPECT_NE(std::string(e.what()).find("row maxima of A"), std::string::npos) << e.what();
  }
  // Floating-point operands do not read them.
  EXPECT_NO_THROW(compute_error_stats({1.0}, ref, bound_model(library_numerics(Format::fp64), 2)));
}

// Row maxima of A, column maxima of B: the same from both exact engines, NaN passed over.
TEST(FixedPointBound, ReferenceMaxima) {
  const Matrix A = matrix(2, 3, {1, -4, 0x1p-1074, 0, 0, -0.0}), B = matrix(3, 2, {-3, 0.5, 2, -0.25, 1, 0});
  const GemmReference r = exact_gemm(A, B, Format::fp64);
  EXPECT_EQ(r.row_max_a, (std::vector<double>{4, 0}));
  EXPECT_EQ(r.col_max_b, (std::vector<double>{3, 0.5}));
  const GemmReference mp = mpfr_gemm(A, B, Format::fp64);
  EXPECT_EQ(mp.row_max_a, r.row_max_a);
  EXPECT_EQ(mp.col_max_b, r.col_max_b);
  EXPECT_EQ(row_max_abs(matrix(1, 3, {1, NAN, -2})), std::vector<double>{2.0});
}

// ---- the model ---------------------------------------------------------------------------------

// Hand-made digits. sigma = 2 for 1 + 2^-20: 7 bits keep 64 / 2^7 of it, toward zero for both signs
// (to nearest too). 15 bits, a = b = 0.5 + 2^-9 (sigma 1): M = 2^14 + 2^6 = digits (64, 64); the
// triangle drops digit 2 x digit 2 = 2^12 2^-30, so the model gives 0.25 + 2^-9 where the exact
// square is 0.25 + 2^-9 + 2^-18; all pairs formed, it gives the exact square.
TEST(FixedPointModel, HandMadeDigits) {
  const Matrix one = matrix(1, 1, {1});
  for (double a : {1 + 0x1p-20, -(1 + 0x1p-20)}) {
    const Matrix A = matrix(1, 1, {a});
    EXPECT_EQ(fixed_point::gemm(A, one, {.bits = 7})[0], std::copysign(1.0, a));
    EXPECT_EQ(fixed_point::gemm(A, one, {.bits = 7, .rounding = Rounding::nearest_even})[0], std::copysign(1.0, a));
  }
  const Matrix A = matrix(1, 1, {0.5 + 0x1p-9}), B = matrix(1, 1, {0.5 + 0x1p-9});
  EXPECT_EQ(fixed_point::gemm(A, B, {.bits = 15})[0], 0.25 + 0x1p-9);
  EXPECT_EQ(fixed_point::gemm(A, B, {.bits = 15, .triangle = false})[0], 0.25 + 0x1p-9 + 0x1p-18);
  // Balanced digits: 0.75 - 2^-15 (sigma 1) is M = 3 2^13 - 1 = digits (96, -1) after the carry:
  // (96 2^-7 - 2^-15)^2 without the (2, 2) pair is 0.5625 - 2 96 2^-22.
  const Matrix C = matrix(1, 1, {0.75 - 0x1p-15});
  EXPECT_EQ(fixed_point::gemm(C, C, {.bits = 15})[0], 0.5625 - 192 * 0x1p-22);
  EXPECT_THROW(fixed_point::gemm(matrix(1, 1, {INFINITY}), one, {}), std::invalid_argument);
  EXPECT_THROW(fixed_point::gemm(A, one, {.bits = 0}), std::invalid_argument);
}

struct ModelCase {
  const char* dist;
  int bits;
};

// The largest bound_ratio of the model's output, and its violations, judged by the record of
// `declared` bits.
ErrorStats judge_model(const char* dist, int kept, int declared, const fixed_point::Scheme& base, int M = 29,
                       int N = 23, int K = 300) {
  const Distribution d = parse_distribution(dist);
  const Matrix A = generate(d, Operand::A, M, K, Format::fp64, 5), B = generate(d, Operand::B, K, N, Format::fp64, 5);
  const GemmReference ref = exact_gemm(A, B, Format::fp64);
  fixed_point::Scheme s = base;
  s.bits = kept;
  return compute_error_stats(fixed_point::gemm(A, B, s), ref, fixed_model(declared, K));
}

const char* const kDists[] = {"uniform_0_1", "uniform_-1_1", "normal_0_1", "logunif_-8_8", "expspread_0.5",
                              "expspread_2", "expspread_4", "cancel_-40"};

// The scheme as measured, and the variants the bound also covers (rounding to nearest, every pair
// formed, small K chunks), within the bound of the bits they keep on every distribution.
TEST(FixedPointModel, WithinItsOwnBoundOnEveryKindOfData) {
  const fixed_point::Scheme variants[] = {{}, {.rounding = Rounding::nearest_even}, {.triangle = false}, {.chunk_k = 64}};
  for (int bits : {7, 23, 31, 47, 55, 79})
    for (const char* dist : kDists) {
      double worst = 0;
      for (const fixed_point::Scheme& v : variants) {
        const ErrorStats s = judge_model(dist, bits, bits, v);
        EXPECT_EQ(s.bound_violations, 0) << dist << " " << bits << " bits";
        EXPECT_EQ(s.nonfinite, 0) << dist;
        worst = std::max(worst, s.bound_ratio);
      }
      EXPECT_LT(worst, 1.0) << dist << " " << bits;
      std::printf("  %-14s %2d bits: largest |C^ - C| / bound %.3g\n", dist, bits, worst);
    }
}

// A model that keeps one slice (8 bits) fewer than its record declares breaks the bound where the
// truncation errors add up (non-negative data: every operand cut the same way), and on every
// distribution once it keeps two slices fewer, but cancel_-40: its second half of K repeats the first
// with B negated (to 2^-40), so both halves are cut alike and their errors cancel with the products
// (the model's error stays near |C|, 2^-40 |A||B|, whatever the bits). The test can fail. Up to 47
// declared bits at K = 300:
// beyond, the bound's binary64 part (f |A||B|, the worst case of summing the exact terms) is larger
// than what 16 bits fewer lose, so no output can tell them apart from it.
TEST(FixedPointModel, FewerBitsThanDeclaredBreakTheBound) {
  for (int declared : {23, 31, 39, 47}) {
    EXPECT_GT(judge_model("uniform_0_1", declared - 8, declared, {}).bound_violations, 0) << declared;
    for (const char* dist : kDists) {
      if (std::string(dist) == "cancel_-40") continue;
      const ErrorStats s = judge_model(dist, declared - 16, declared, {});
      EXPECT_GT(s.bound_violations, 0) << dist << " " << declared;
      EXPECT_GT(s.bound_ratio, 1.0) << dist << " " << declared;
    }
  }
}

// ---- the records -------------------------------------------------------------------------------

TEST(FixedPointNumerics, CublasBitsFillTheLastSlice) {
  EXPECT_EQ(cublas_fixed_point_bits(1), 7);
  EXPECT_EQ(cublas_fixed_point_bits(7), 7);
  EXPECT_EQ(cublas_fixed_point_bits(8), 15);
  EXPECT_EQ(cublas_fixed_point_bits(16), 23);
  EXPECT_EQ(cublas_fixed_point_bits(55), 55);
  EXPECT_EQ(cublas_fixed_point_bits(64), 71);
  EXPECT_EQ(cublas_fixed_point_bits(72), 79);
  EXPECT_EQ(cublas_fixed_point_bits(79), 79);
}

TEST(FixedPointNumerics, RecordDescriptionAndCsvColumn) {
  const Numerics n = fixed_point_fp64_numerics(23);
  EXPECT_EQ(n.accumulation, Accumulation::library);
  EXPECT_EQ(n.input, Format::fp64);
  EXPECT_FALSE(n.predictable());
  EXPECT_NE(n.describe().find("fixed point: 23 mantissa bits per entry (3 int8 slices)"), std::string::npos)
      << n.describe();
  EXPECT_EQ(library_numerics(Format::fp64).describe().find("fixed point"), std::string::npos);
  EXPECT_EQ(bound_model(n, 64).fixed_point_bits, 23);

  ResultRow r;
  r.kernel = "k";
  r.numerics = n;
  const std::vector<std::string>& cols = result_columns();
  const std::vector<std::string> fields = to_fields(r);
  const auto at = std::find(cols.begin(), cols.end(), "fixed_point_bits") - cols.begin();
  ASSERT_LT(at, static_cast<long>(cols.size()));
  EXPECT_EQ(cols[at - 1], "summation_tree");  // the record's columns: ..., split_products, summation_tree, fixed_point_bits
  EXPECT_EQ(fields[at], "23");
  EXPECT_EQ(from_fields(cols, fields).numerics.fixed_point_bits, 23);
  // A CSV written before the column: floating-point operands.
  std::vector<std::string> old_cols = {"kernel", "status"}, old_fields = {"k", "passed"};
  EXPECT_EQ(from_fields(old_cols, old_fields).numerics.fixed_point_bits, 0);
  std::vector<std::string> bad = fields;
  bad[at] = "-3";
  EXPECT_THROW(from_fields(cols, bad), std::invalid_argument);
}

// The registered emulation kernels carry the precision of their setting: the fixed settings the
// bits they keep, the automatic one binary64's record, BF16x9 its nine-product split.
TEST(FixedPointNumerics, EmulationKernelsCarryTheirPrecision) {
  if (!find_kernel("cublas_dgemm")) GTEST_SKIP() << "this build has no fp64 family (GEMMLAB_FAMILIES)";
  const int settings[][2] = {{16, 23}, {24, 31}, {32, 39}, {40, 47}, {48, 55}, {56, 63}, {64, 71}, {72, 79}, {79, 79}};
  for (const auto& [asked, kept] : settings) {
    const std::string name = "cublas_dgemm_emu_b" + std::to_string(asked);
    const Kernel* k = find_kernel(name);
    ASSERT_NE(k, nullptr) << name;
    EXPECT_EQ(k->numerics, fixed_point_fp64_numerics(kept)) << name;
  }
  EXPECT_EQ(find_kernel("cublas_dgemm_emu_auto")->numerics, library_numerics(Format::fp64));
  EXPECT_EQ(find_kernel("cublas_dgemm")->numerics, library_numerics(Format::fp64));
  EXPECT_EQ(find_kernel("cublas_sgemm_emu_bf16x9")->numerics, bf16x9_numerics());
}

// BF16x9: three bf16 pieces, all nine products, 9 K terms; the split bound with the weaker rounding.
TEST(FixedPointNumerics, Bf16x9IsANinePassSplit) {
  const Numerics n = bf16x9_numerics();
  EXPECT_EQ(n.input, Format::fp32);
  EXPECT_EQ(n.compute, Format::bf16);
  EXPECT_EQ(products_text(n.split), "00 01 02 10 11 12 20 21 22");
  EXPECT_EQ(split_problem(n.split), "");
  const BoundModel m = bound_model(n, 1024);
  EXPECT_EQ(accumulated_terms(m), 9 * 1024);
  const double mu = 0x1p-7, E = mu * mu * mu, nu = 9 * 1024 * 0x1p-23, g = nu / (1 - nu);
  double rho = 0;
  for (int i = 0; i < 3; ++i)
    for (int j = 0; j < 3; ++j) rho += (1 + mu) * (1 + mu) * std::pow(mu, i + j);
  EXPECT_DOUBLE_EQ(gamma_bound_factor(m), 2 * E + E * E + rho * g);
  EXPECT_NE(n.describe().find("split into 3 bf16 pieces"), std::string::npos) << n.describe();
}

}  // namespace
}  // namespace gemmlab
