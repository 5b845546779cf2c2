// The exact reference GEMM (reference/exact_gemm.*) against the MPFR oracle (reference/mpfr_gemm.*)
// and against hand-computed answers: results must agree bit for bit, for c (binary64) and for
// c_out in every output format, on random data of several input formats and on adversarial data
// (cancellation, the whole fp32 exponent range, subnormal and overflowing results, exact ties).
#include <gtest/gtest.h>

#include <bit>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <limits>
#include <random>
#include <string>
#include <vector>

#include "reference/exact_gemm.hpp"
#include "reference/formats.hpp"
#include "reference/mpfr_gemm.hpp"
#include "tests/same_bits.hpp"

namespace gemmlab {
namespace {

const std::vector<Format> kOutFormats = {Format::fp32, Format::fp16, Format::bf16, Format::fp64};

using testing::hex;
using testing::same_bits;

void expect_same(const GemmReference& got, const GemmReference& want) {
  ASSERT_EQ(got.M, want.M);
  ASSERT_EQ(got.N, want.N);
  ASSERT_EQ(got.K, want.K);
  EXPECT_TRUE(same_bits(got.c, want.c, got.N)) << "c: " << got.engine << " vs " << want.engine;
  EXPECT_TRUE(same_bits(got.c_out, want.c_out, got.N))
      << "c_out (" << info(got.out).name << "): " << got.engine << " vs " << want.engine;
  EXPECT_TRUE(same_bits(got.abs_ab, want.abs_ab, got.N)) << "abs_ab";
}

// Every exact engine that can take the data, for every output format, against MPFR.
// Returns the engine the automatic choice took.
std::string expect_all_engines_match_mpfr(const Matrix& A, const Matrix& B) {
  std::string automatic;
  for (Format out : kOutFormats) {
    SCOPED_TRACE(std::string("out = ") + info(out).name);
    const GemmReference oracle = mpfr_gemm(A, B, out);
    EXPECT_EQ(oracle.engine, "mpfr");
    const GemmReference fast = exact_gemm(A, B, out);
    automatic = fast.engine;
    expect_same(fast, oracle);
    expect_same(exact_gemm(A, B, out, 0, ExactEngine::kulisch), oracle);
    if (fits_fixed_int128(A, B)) {
      EXPECT_EQ(fast.engine, "fixed_int128");
      expect_same(exact_gemm(A, B, out, 0, ExactEngine::fixed_int128), oracle);
    } else {
      EXPECT_EQ(fast.engine, "kulisch");
    }
  }
  return automatic;
}

// ---- inputs ----------------------------------------------------------------------------------

enum class Kind { uniform01, uniform_pm1, normal, any_bits };

const char* kind_name(Kind k) {
  switch (k) {
    case Kind::uniform01: return "uniform01";
    case Kind::uniform_pm1: return "uniform_pm1";
    case Kind::normal: return "normal";
    case Kind::any_bits: return "any_bits";
  }
  return "?";
}

double uniform01(std::mt19937_64& rng) { return static_cast<double>(rng() >> 11) * 0x1p-53; }

// A value of format f drawn from kind; any_bits: a uniformly random finite bit pattern of f
// (every exponent, subnormals and zeros included).
double draw(Format f, Kind kind, std::mt19937_64& rng) {
  switch (kind) {
    case Kind::uniform01: return round_to(f, uniform01(rng));
    case Kind::uniform_pm1: return round_to(f, 2 * uniform01(rng) - 1);
    case Kind::normal: return round_to(f, std::normal_distribution<double>()(rng));
    case Kind::any_bits:
      for (;;) {
        const int bits = info(f).storage_bits;
        const double x = from_bits(f, bits == 64 ? rng() : rng() & ((1ull << bits) - 1));
        if (std::isfinite(x)) return x;
      }
  }
  return 0;
}

Matrix random_matrix(int rows, int cols, Format f, Kind kind, std::mt19937_64& rng) {
  Matrix X(rows, cols);
  for (double& x : X.v) x = draw(f, kind, rng);
  return X;
}

// sign * (1 + fraction) * 2^e, e uniform in [lo, hi], rounded to f (so below emin: subnormals).
double log_uniform(Format f, int lo, int hi, std::mt19937_64& rng) {
  const int e = lo + static_cast<int>(rng() % static_cast<std::uint64_t>(hi - lo + 1));
  const double x = std::ldexp(1 + uniform01(rng), e);
  return round_to(f, (rng() & 1) ? -x : x);
}

// One dot product sum_k a[k] * b[k] as a (1, K) x (K, 1) product.
std::pair<Matrix, Matrix> dot_case(const std::vector<double>& a, const std::vector<double>& b) {
  Matrix A(1, static_cast<int>(a.size())), B(static_cast<int>(b.size()), 1);
  for (std::size_t k = 0; k < a.size(); ++k) A(0, static_cast<int>(k)) = a[k], B(static_cast<int>(k), 0) = b[k];
  return {A, B};
}

// ---- tests -----------------------------------------------------------------------------------

TEST(ExactGemm, HandComputedSmallIntegers) {
  Matrix A(2, 2), B(2, 3);
  A.v = {1, -2, 3, 4};
  B.v = {5, 6, -1, 7, 8, 0.5};
  const GemmReference r = exact_gemm(A, B, Format::fp32);
  EXPECT_EQ(r.engine, "fixed_int128");
  EXPECT_EQ(r.c, (std::vector<double>{-9, -10, -2, 43, 50, -1}));
  EXPECT_EQ(r.c_out, r.c);
  EXPECT_EQ(r.abs_ab, (std::vector<double>{19, 22, 2, 43, 50, 5}));
  const GemmReference k = exact_gemm(A, B, Format::fp32, 1, ExactEngine::kulisch);
  EXPECT_EQ(k.engine, "kulisch");
  EXPECT_EQ(k.c, r.c);
  EXPECT_EQ(mpfr_gemm(A, B, Format::fp32).c, r.c);
}

// Exact sums whose binary64 rounding needs the sticky bit or breaks a tie (the naive sum in
// binary64 would get several of these wrong).
TEST(ExactGemm, HandComputedBinary64Rounding) {
  struct Case {
    std::vector<double> a, b;
    double want;
  };
  const double dmax = std::numeric_limits<double>::max(), inf = std::numeric_limits<double>::infinity();
  const std::vector<Case> cases = {
      {{1, 0x1p-53, 0x1p-60}, {1, 1, 1}, 1 + 0x1p-52},         // above half an ulp: up
      {{1, 0x1p-53}, {1, 1}, 1.0},                             // tie, 1 is even
      {{1, 3 * 0x1p-53}, {1, 1}, 1 + 0x1p-51},                 // tie between 1+u (odd) and 1+2u
      {{0x1p-53, 1, -0x1p-80}, {1, 1, 1}, 1.0},                // just below the tie
      {{0x1p60, 1, -0x1p60}, {1, 1, 1}, 1.0},                  // cancellation of the big terms
      {{0x1p-537}, {0x1p-538}, 0.0},                           // 2^-1075: tie between 0 and 2^-1074
      {{0x1p-537, 0x1p-600}, {3 * 0x1p-538, 0x1p-600}, 0x1p-1073},  // 3*2^-1075 + tiny: up to even
      {{0x1p-537, 0x1p-600}, {0x1p-538, 0x1p-500}, 0x1p-1074}, // 2^-1075 + 2^-1100: up
      {{0x1p-537, 0x1p-600}, {0x1p-538, 0x1p-600}, 0x1p-1074}, // 2^-1075 + 2^-1200: up (a 53-bit
                                                               // rounding first would make it a tie)
      {{dmax, 0x1p970}, {1, 1}, inf},                          // tie at the top: 2^1024 overflows
      {{dmax, 0x1p969}, {1, 1}, dmax},                         // below the tie: stays finite
      {{-dmax, -0x1p970}, {1, 1}, -inf},
  };
  for (std::size_t n = 0; n < cases.size(); ++n) {
    SCOPED_TRACE("case " + std::to_string(n));
    const auto [A, B] = dot_case(cases[n].a, cases[n].b);
    const double want = cases[n].want;
    EXPECT_EQ(exact_gemm(A, B, Format::fp64, 1, ExactEngine::kulisch).c[0], want);
    if (fits_fixed_int128(A, B)) {
      EXPECT_EQ(exact_gemm(A, B, Format::fp64, 1, ExactEngine::fixed_int128).c[0], want);
    }
    EXPECT_EQ(mpfr_gemm(A, B, Format::fp64).c[0], want);
    EXPECT_EQ(exact_dot(A, B, 0, 0), want);
    EXPECT_EQ(mpfr_dot(A, B, 0, 0), want);
  }
}

// Exact sums exactly halfway between two values of the output format must go to the even one, and
// a tiny term beyond the tie must decide it: c_out is one rounding of the exact sum, never the
// output format's rounding of the binary64 result (that would get the +-2^-80 cases wrong).
TEST(ExactGemm, OutputFormatTiesRoundToEven) {
  struct Case {
    Format out;
    std::vector<double> a, b;
    double want;
  };
  const std::vector<Case> cases = {
      {Format::fp32, {1, 0x1p-24}, {1, 1}, 1.0},                              // tie: 1 is even
      {Format::fp32, {1, 3 * 0x1p-24}, {1, 1}, 1 + 0x1p-22},                  // tie: up to even
      {Format::fp32, {1, 0x1p-24, 0x1p-40}, {1, 1, 0x1p-40}, 1 + 0x1p-23},    // tie + 2^-80: up
      {Format::fp32, {1, 0x1p-24, -0x1p-40}, {1, 1, 0x1p-40}, 1.0},           // tie - 2^-80: down
      {Format::fp32, {-1, -0x1p-24, -0x1p-40}, {1, 1, 0x1p-40}, -1 - 0x1p-23},
      {Format::fp16, {1, 0x1p-11}, {1, 1}, 1.0},
      {Format::fp16, {1, 3 * 0x1p-11}, {1, 1}, 1 + 0x1p-9},
      {Format::fp16, {1, 0x1p-11, 0x1p-30}, {1, 1, 0x1p-30}, 1 + 0x1p-10},    // tie + 2^-60
      {Format::bf16, {1, 0x1p-8, 0x1p-40}, {1, 1, 0x1p-40}, 1 + 0x1p-7},
      {Format::bf16, {1, 0x1p-8}, {1, 1}, 1.0},
      // fp32 subnormal range: quantum 2^-149
      {Format::fp32, {0x1p-75}, {0x1p-75}, 0.0},                              // 2^-150: tie to 0
      {Format::fp32, {0x1p-75}, {3 * 0x1p-75}, 0x1p-148},                     // 3*2^-150: to even
      {Format::fp32, {0x1p-75, 0x1p-100}, {0x1p-75, 0x1p-100}, 0x1p-149},     // 2^-150 + 2^-200: up
      {Format::fp32, {-0x1p-75, 0x1p-100}, {0x1p-75, 0x1p-100}, -0.0},        // -2^-150 + 2^-200
      // fp16 overflow: 65504 is the largest, 65520 the tie with 2^16
      {Format::fp16, {65504, 16}, {1, 1}, std::numeric_limits<double>::infinity()},
      {Format::fp16, {65504, 16, -0x1p-20}, {1, 1, 1}, 65504.0},
      {Format::fp16, {-65504, -16}, {1, 1}, -std::numeric_limits<double>::infinity()},
  };
  for (std::size_t n = 0; n < cases.size(); ++n) {
    const Case& cs = cases[n];
    SCOPED_TRACE("case " + std::to_string(n) + ", out = " + info(cs.out).name);
    const auto [A, B] = dot_case(cs.a, cs.b);
    const auto check = [&](const GemmReference& r) {
      EXPECT_EQ(std::bit_cast<std::uint64_t>(r.c_out[0]), std::bit_cast<std::uint64_t>(cs.want))
          << r.engine << ": " << hex(r.c_out[0]) << ", want " << hex(cs.want);
    };
    check(exact_gemm(A, B, cs.out, 1, ExactEngine::kulisch));
    if (fits_fixed_int128(A, B)) check(exact_gemm(A, B, cs.out, 1, ExactEngine::fixed_int128));
    check(mpfr_gemm(A, B, cs.out));
  }
  // The same sums inside a larger product, with a far-away pair +-2^100 that cancels exactly and
  // pushes the range past the int128 engine: the automatic choice must still get them right.
  Matrix A(1, 5), B(5, 1);
  A.v = {1, 0x1p-24, 0x1p-40, 0x1p100, -0x1p100};
  B.v = {1, 1, 0x1p-40, 1, 1};
  const GemmReference r = exact_gemm(A, B, Format::fp32);
  EXPECT_EQ(r.engine, "kulisch");
  EXPECT_EQ(r.c_out[0], 1 + 0x1p-23);
  EXPECT_EQ(r.c[0], 1 + 0x1p-24);
}

TEST(ExactGemm, MatchesMpfrOnRandomInputs) {
  struct Shape {
    int M, N, K;
  };
  const std::uint64_t seed = 20240611;
  std::mt19937_64 rng(seed);
  for (Shape s : {Shape{17, 33, 65}, Shape{64, 64, 256}})
    for (Format f : {Format::fp16, Format::bf16, Format::fp32})
      for (Kind kind : {Kind::uniform01, Kind::uniform_pm1, Kind::normal, Kind::any_bits}) {
        if (s.K == 256 && kind == Kind::uniform_pm1) continue;  // keeps the test short
        SCOPED_TRACE("seed " + std::to_string(seed) + ", " + std::to_string(s.M) + "x" + std::to_string(s.N) +
                     "x" + std::to_string(s.K) + ", " + info(f).name + " " + kind_name(kind));
        const Matrix A = random_matrix(s.M, s.K, f, kind, rng);
        const Matrix B = random_matrix(s.K, s.N, f, kind, rng);
        const std::string engine = expect_all_engines_match_mpfr(A, B);
        // fp16 always fits the int128 engine; the full bf16/fp32 exponent range never does.
        if (f == Format::fp16 || (f == Format::fp32 && kind == Kind::uniform01)) {
          EXPECT_EQ(engine, "fixed_int128");
        } else if (kind == Kind::any_bits) {
          EXPECT_EQ(engine, "kulisch");
        }
      }
}

// Pairs x, -x with |x| up to 2^40 (fp32) or 2^15 (fp16), placed at random positions so the partial
// sums grow large before they cancel, plus a few tiny terms: the exact result is about 1e-30 of
// |A||B| (fp32), and exactly +0 where no tiny term is left.
TEST(ExactGemm, MassiveCancellation) {
  const std::uint64_t seed = 7;
  std::mt19937_64 rng(seed);
  SCOPED_TRACE("seed " + std::to_string(seed));
  for (Format f : {Format::fp32, Format::fp16}) {
    SCOPED_TRACE(info(f).name);
    const int M = 12, N = 10, K = 96;
    const int big_hi = f == Format::fp32 ? 40 : 14, big_lo = f == Format::fp32 ? 20 : 8;
    const int tiny_hi = f == Format::fp32 ? -50 : -12, tiny_lo = f == Format::fp32 ? -60 : -14;
    Matrix A(M, K), B(K, N);
    for (int j = 0; j < N; ++j)
      for (int k = 0; k < K; ++k) B(k, j) = log_uniform(f, -2, 2, rng);
    // Columns of B are arbitrary, so cancellation needs B(k) == B(k') for paired k, k': use two
    // copies of each B row, k and k + K/2, and put x at one and -x at the other.
    for (int k = 0; k < K / 2; ++k)
      for (int j = 0; j < N; ++j) B(k + K / 2, j) = B(k, j);
    for (int i = 0; i < M; ++i) {
      for (int k = 0; k < K / 2; ++k) {
        const double x = log_uniform(f, big_lo, big_hi, rng);
        A(i, k) = x, A(i, k + K / 2) = -x;
      }
      // Rows i < M - 2: replace one pair by a tiny unpaired term; the last two rows cancel to 0.
      if (i < M - 2) {
        const int k = static_cast<int>(rng() % (K / 2));
        A(i, k) = log_uniform(f, tiny_lo, tiny_hi, rng);
        A(i, k + K / 2) = 0;
      }
    }
    expect_all_engines_match_mpfr(A, B);
    const GemmReference r = exact_gemm(A, B, Format::fp32);
    EXPECT_EQ(r.engine, f == Format::fp16 ? "fixed_int128" : "kulisch");
    double max_ratio = 0;
    for (int i = 0; i < M; ++i)
      for (int j = 0; j < N; ++j) {
        const double c = r.c[static_cast<std::size_t>(i) * N + j];
        if (i >= M - 2) {
          EXPECT_EQ(std::bit_cast<std::uint64_t>(c), 0u) << "(" << i << ", " << j << ") must be +0";
        } else {
          EXPECT_NE(c, 0.0);
          max_ratio = std::max(max_ratio, std::fabs(c) / r.abs_ab[static_cast<std::size_t>(i) * N + j]);
        }
      }
    EXPECT_LT(max_ratio, f == Format::fp32 ? 1e-25 : 1e-8);
  }
}

// Terms over the whole fp32 range: subnormals down to 2^-149, values up to the largest fp32, exact
// zeros; products span 2^-298 .. 2^256, which only the Kulisch accumulator holds.
TEST(ExactGemm, WholeFp32ExponentRangeUsesKulisch) {
  const std::uint64_t seed = 99;
  std::mt19937_64 rng(seed);
  SCOPED_TRACE("seed " + std::to_string(seed));
  const int M = 9, N = 11, K = 40;
  Matrix A(M, K), B(K, N);
  for (double& x : A.v) x = log_uniform(Format::fp32, -149, 127, rng);
  for (double& x : B.v) x = log_uniform(Format::fp32, -149, 127, rng);
  const double fmax = info(Format::fp32).max_finite;
  A(0, 0) = 0x1p-149, A(0, 1) = -0x1p-149, A(1, 0) = fmax, A(2, 2) = -fmax, A(3, 3) = 0;
  B(0, 0) = 0x1p-149, B(1, 0) = fmax, B(2, 1) = -0x1p-149, B(3, 3) = 0;
  // Entry (4, 4): only subnormal * subnormal terms (2^-298 scale): rounds to 0 in fp32, not in fp64.
  for (int k = 0; k < K; ++k) A(4, k) = 0x1p-149 * (k + 1), B(k, 4) = -0x1p-149 * (2 * k + 1);
  EXPECT_FALSE(fits_fixed_int128(A, B));
  EXPECT_THROW(exact_gemm(A, B, Format::fp32, 0, ExactEngine::fixed_int128), std::invalid_argument);
  EXPECT_EQ(expect_all_engines_match_mpfr(A, B), "kulisch");
  EXPECT_GE(mpfr_exact_precision(A, B), 554 + 6);
  const GemmReference r = exact_gemm(A, B, Format::fp16);
  EXPECT_LT(r.c[4 * N + 4], 0.0);
  EXPECT_GT(r.c[4 * N + 4], -0x1p-280);
  EXPECT_EQ(std::bit_cast<std::uint64_t>(r.c_out[4 * N + 4]), std::bit_cast<std::uint64_t>(-0.0));
  int inf_count = 0;
  for (double x : r.c_out) inf_count += std::isinf(x);
  EXPECT_GT(inf_count, 0) << "expected some entries to overflow fp16";
}

// Products near 2^-145 so the sums land in fp32's subnormal range (quantum 2^-149), with random
// signs; and sums just around fp16's overflow threshold.
TEST(ExactGemm, SubnormalAndOverflowingResults) {
  const std::uint64_t seed = 3;
  std::mt19937_64 rng(seed);
  SCOPED_TRACE("seed " + std::to_string(seed));
  const int M = 16, N = 16, K = 24;
  Matrix A(M, K), B(K, N);
  for (double& x : A.v) x = log_uniform(Format::fp32, -80, -72, rng);
  for (double& x : B.v) x = log_uniform(Format::fp32, -76, -68, rng);
  expect_all_engines_match_mpfr(A, B);
  const GemmReference r = exact_gemm(A, B, Format::fp32);
  int subnormal = 0;
  for (double x : r.c_out) subnormal += x != 0 && std::fabs(x) < 0x1p-126;
  EXPECT_GT(subnormal, M * N / 4);

  Matrix C(M, K), D(K, N);
  for (double& x : C.v) x = log_uniform(Format::fp16, 6, 9, rng);
  for (double& x : D.v) x = std::fabs(log_uniform(Format::fp16, 3, 5, rng));
  for (int k = 0; k < K; ++k) C(0, k) = C(1, k) = 0;
  C(0, 0) = 65504, C(0, 1) = 16, D(0, 0) = D(1, 0) = 1;       // (0, 0): 65520, the overflow tie
  C(1, 0) = 65504, C(1, 1) = 15.5, D(0, 1) = D(1, 1) = 1;     // (1, 1): 65519.5, stays 65504
  expect_all_engines_match_mpfr(C, D);
  const GemmReference h = exact_gemm(C, D, Format::fp16);
  EXPECT_TRUE(std::isinf(h.c_out[0]));
  EXPECT_EQ(h.c_out[N + 1], 65504.0);
}

TEST(ExactGemm, ExactZeros) {
  for (auto [M, N, K] : {std::tuple{5, 7, 9}, std::tuple{5, 7, 0}, std::tuple{0, 7, 9}, std::tuple{5, 0, 9}}) {
    SCOPED_TRACE(std::to_string(M) + "x" + std::to_string(N) + "x" + std::to_string(K));
    Matrix A(M, K), B(K, N);
    for (Format out : kOutFormats) {
      const GemmReference r = exact_gemm(A, B, out);
      EXPECT_EQ(r.c.size(), static_cast<std::size_t>(M) * N);
      for (double x : r.c) EXPECT_EQ(std::bit_cast<std::uint64_t>(x), 0u);
      for (double x : r.c_out) EXPECT_EQ(std::bit_cast<std::uint64_t>(x), 0u);
      expect_same(r, mpfr_gemm(A, B, out));
    }
  }
  // Zero rows and columns and -0 entries in otherwise random data; x - x is +0.
  std::mt19937_64 rng(11);
  Matrix A = random_matrix(6, 8, Format::fp16, Kind::normal, rng), B = random_matrix(8, 5, Format::fp16, Kind::normal, rng);
  for (int k = 0; k < 8; ++k) A(2, k) = -0.0, B(k, 3) = 0;
  A(4, 0) = 3, A(4, 1) = -3;
  for (int k = 2; k < 8; ++k) A(4, k) = 0;
  B(0, 0) = B(1, 0) = 0.25;
  expect_all_engines_match_mpfr(A, B);
  const GemmReference r = exact_gemm(A, B, Format::fp16);
  for (int j = 0; j < 5; ++j) EXPECT_EQ(std::bit_cast<std::uint64_t>(r.c[2 * 5 + j]), 0u);
  for (int i = 0; i < 6; ++i) EXPECT_EQ(std::bit_cast<std::uint64_t>(r.c[i * 5 + 3]), 0u);
  EXPECT_EQ(std::bit_cast<std::uint64_t>(r.c[4 * 5 + 0]), 0u);
}

TEST(ExactGemm, EnginesAgreeInBothRegimes) {
  std::mt19937_64 rng(5);
  // fp16 and fp32 N(0,1) data fit the int128 engine; fp32 over 2^-60 .. 2^60 does not.
  const Matrix A16 = random_matrix(23, 41, Format::fp16, Kind::normal, rng);
  const Matrix B16 = random_matrix(41, 19, Format::fp16, Kind::normal, rng);
  const Matrix A32 = random_matrix(23, 41, Format::fp32, Kind::normal, rng);
  const Matrix B32 = random_matrix(41, 19, Format::fp32, Kind::normal, rng);
  Matrix Aw(23, 41), Bw(41, 19);
  for (double& x : Aw.v) x = log_uniform(Format::fp32, -60, 60, rng);
  for (double& x : Bw.v) x = log_uniform(Format::fp32, -60, 60, rng);
  EXPECT_TRUE(fits_fixed_int128(A16, B16));
  EXPECT_TRUE(fits_fixed_int128(A32, B32));
  EXPECT_FALSE(fits_fixed_int128(Aw, Bw));
  for (Format out : {Format::fp32, Format::fp16}) {
    expect_same(exact_gemm(A16, B16, out, 0, ExactEngine::fixed_int128), exact_gemm(A16, B16, out, 0, ExactEngine::kulisch));
    expect_same(exact_gemm(A32, B32, out, 0, ExactEngine::fixed_int128), exact_gemm(A32, B32, out, 0, ExactEngine::kulisch));
    const GemmReference w = exact_gemm(Aw, Bw, out);
    EXPECT_EQ(w.engine, "kulisch");
    expect_same(w, mpfr_gemm(Aw, Bw, out));
  }
}

TEST(ExactGemm, ResultDoesNotDependOnThreadCount) {
  std::mt19937_64 rng(13);
  const Matrix A = random_matrix(70, 130, Format::fp16, Kind::uniform_pm1, rng);
  const Matrix B = random_matrix(130, 67, Format::fp16, Kind::uniform_pm1, rng);
  Matrix Aw(37, 50), Bw(50, 29);
  for (double& x : Aw.v) x = log_uniform(Format::fp32, -149, 127, rng);
  for (double& x : Bw.v) x = log_uniform(Format::fp32, -149, 127, rng);
  for (ExactEngine e : {ExactEngine::fixed_int128, ExactEngine::kulisch}) {
    const GemmReference one = exact_gemm(A, B, Format::bf16, 1, e);
    for (int t : {2, 3, 8}) expect_same(exact_gemm(A, B, Format::bf16, t, e), one);
  }
  const GemmReference one = exact_gemm(Aw, Bw, Format::fp16, 1);
  EXPECT_EQ(one.engine, "kulisch");
  for (int t : {2, 5}) expect_same(exact_gemm(Aw, Bw, Format::fp16, t), one);
  const GemmReference m1 = mpfr_gemm(Aw, Bw, Format::fp16, 1);
  expect_same(mpfr_gemm(Aw, Bw, Format::fp16, 3), m1);
  expect_same(one, m1);
}

TEST(ExactGemm, SpotChecksMatchFullProduct) {
  std::mt19937_64 rng(17);
  const Matrix A = random_matrix(8, 300, Format::fp32, Kind::any_bits, rng);
  const Matrix B = random_matrix(300, 6, Format::fp32, Kind::any_bits, rng);
  const GemmReference r = exact_gemm(A, B, Format::fp64);
  for (int i = 0; i < 8; ++i)
    for (int j = 0; j < 6; ++j) {
      const double want = r.c[static_cast<std::size_t>(i) * 6 + j];
      EXPECT_EQ(std::bit_cast<std::uint64_t>(exact_dot(A, B, i, j)), std::bit_cast<std::uint64_t>(want));
      EXPECT_EQ(std::bit_cast<std::uint64_t>(mpfr_dot(A, B, i, j)), std::bit_cast<std::uint64_t>(want));
    }
  EXPECT_THROW(exact_dot(A, B, 8, 0), std::out_of_range);
  EXPECT_THROW(mpfr_dot(A, B, 0, -1), std::out_of_range);
}

// The engines never assume an input format: full 53-bit doubles (whose products are not exact in
// binary64) are still summed exactly.
TEST(ExactGemm, FullPrecisionDoubleInputs) {
  std::mt19937_64 rng(19);
  const Matrix A = random_matrix(7, 45, Format::fp64, Kind::normal, rng);
  const Matrix B = random_matrix(45, 9, Format::fp64, Kind::uniform_pm1, rng);
  EXPECT_EQ(expect_all_engines_match_mpfr(A, B), "kulisch");
}

// fp64 inputs: a product of two doubles has up to 106 significand bits and an exponent anywhere in
// [2^-2148, 2^2048), so the sum needs the whole Kulisch range. (1 + 2^-52)^2 = 1 + 2^-51 + 2^-104:
// alone it rounds to 1 + 2^-51 (nearest) and 1 + 2^-51 + 2^-52 (odd: the 2^-104 is sticky); minus
// (1 + 2^-51) it leaves exactly 2^-104, which only an exact sum keeps.
TEST(ExactGemm, Fp64ProductsKeepAll106Bits) {
  const double a = 1 + 0x1p-52;
  {
    const auto [A, B] = dot_case({a}, {a});
    expect_all_engines_match_mpfr(A, B);
    const GemmReference r = exact_gemm(A, B, Format::fp64);
    EXPECT_EQ(hex(r.c[0]), hex(1 + 0x1p-51));
    EXPECT_EQ(hex(r.c_odd[0]), hex(1 + 0x1p-51 + 0x1p-52));
  }
  {
    const auto [A, B] = dot_case({a, -1.0}, {a, 1 + 0x1p-51});
    expect_all_engines_match_mpfr(A, B);
    const GemmReference r = exact_gemm(A, B, Format::fp64);
    EXPECT_EQ(hex(r.c[0]), hex(0x1p-104));
    EXPECT_EQ(hex(r.c_odd[0]), hex(0x1p-104));
    EXPECT_EQ(hex(r.abs_ab[0]), hex(2 + 0x1p-50));  // 1 + 2^-51 + 2^-104 + 1 + 2^-51, rounded to nearest
  }
}

// The ends of binary64's range in one sum: DBL_MAX * 2 - DBL_MAX * 2 cancels at 2^1025 (beyond the
// finite range, so no intermediate may be rounded or overflow), leaving the product of the two
// smallest subnormals, 2^-2148: +0 to nearest, 2^-1074 to odd (the sticky bit), while |A||B| =
// 4 DBL_MAX overflows to infinity. Negated, the tiny sum rounds to -0 (a non-zero negative sum).
TEST(ExactGemm, Fp64WholeRangeEndsInOneSum) {
  const double big = std::numeric_limits<double>::max(), tiny = 0x1p-1074;
  for (const double sign : {1.0, -1.0}) {
    const auto [A, B] = dot_case({big, big, tiny}, {2, -2, sign * tiny});
    expect_all_engines_match_mpfr(A, B);
    const GemmReference r = exact_gemm(A, B, Format::fp64);
    EXPECT_EQ(hex(r.c[0]), hex(sign * 0.0));
    EXPECT_EQ(hex(r.c_odd[0]), hex(sign * tiny));
    EXPECT_TRUE(std::isinf(r.abs_ab[0]));
  }
}

// Random 53-bit doubles over the whole binary64 exponent range (subnormals included, magnitudes up
// to 2^1020 so a row of 40 products stays finite): both CPU engines equal MPFR bit for bit in c,
// c_odd, |A||B| and c_out of every output format.
TEST(ExactGemm, Fp64WholeExponentRangeMatchesMpfr) {
  const std::uint64_t seed = 2311;
  std::mt19937_64 rng(seed);
  SCOPED_TRACE("seed " + std::to_string(seed));
  const int M = 8, N = 9, K = 40;
  Matrix A(M, K), B(K, N);
  for (double& x : A.v) x = log_uniform(Format::fp64, -1074, 500, rng);
  for (double& x : B.v) x = log_uniform(Format::fp64, -1074, 500, rng);
  // Entry (0, 0): subnormal * subnormal only; entry (1, 1): subnormal * huge (a normal result).
  for (int k = 0; k < K; ++k) A(0, k) = std::ldexp(static_cast<double>(2 * k + 1), -1074), B(k, 0) = -0x1p-1070;
  for (int k = 0; k < K; ++k) A(1, k) = 0x1p-1074 * (k + 1), B(k, 1) = std::ldexp(1 + 0x1p-52 * k, 1000);
  EXPECT_FALSE(fits_fixed_int128(A, B));
  EXPECT_EQ(expect_all_engines_match_mpfr(A, B), "kulisch");
  EXPECT_GE(mpfr_exact_precision(A, B), 2 * (500 + 1074) + 6);
  const GemmReference r = exact_gemm(A, B, Format::fp64);
  // -sum (2k + 1) 2^-2144 = -1600 2^-2144, below half the smallest subnormal: -0 to nearest.
  EXPECT_EQ(hex(r.c[0]), hex(-0.0));
  EXPECT_EQ(hex(r.c_odd[0]), hex(-0x1p-1074));
  EXPECT_GT(std::fabs(r.c[N + 1]), 0x1p-80);
}

TEST(ExactGemm, NonFiniteInputsFollowIeee) {
  const double inf = std::numeric_limits<double>::infinity();
  Matrix A(3, 2), B(2, 3);
  A.v = {inf, 1, 1, 2, -inf, 0};
  B.v = {1, 0, -1, 2, 3, 4};
  // row 0: inf*1+2 = inf; inf*0 + 3 = NaN; inf*-1 + 4 = -inf. Row 2: -inf, NaN, +inf.
  for (ExactEngine e : {ExactEngine::fixed_int128, ExactEngine::kulisch}) {
    const GemmReference r = exact_gemm(A, B, Format::fp16, 1, e);
    const GemmReference m = mpfr_gemm(A, B, Format::fp16);
    for (std::size_t n = 0; n < 9; ++n) {
      EXPECT_EQ(std::isnan(r.c[n]), std::isnan(m.c[n])) << n;
      if (!std::isnan(m.c[n])) {
        EXPECT_EQ(r.c[n], m.c[n]) << n;
        EXPECT_EQ(r.c_out[n], m.c_out[n]) << n;
      }
    }
    EXPECT_EQ(r.c[0], inf);
    EXPECT_TRUE(std::isnan(r.c[1]));
    EXPECT_EQ(r.c[2], -inf);
    EXPECT_EQ(r.c[3], 5.0);
  }
}

TEST(ExactGemm, RejectsMismatchedShapes) {
  const Matrix A(3, 4), B(5, 2);
  EXPECT_THROW(exact_gemm(A, B, Format::fp32), std::invalid_argument);
  EXPECT_THROW(mpfr_gemm(A, B, Format::fp32), std::invalid_argument);
  EXPECT_THROW(exact_dot(A, B, 0, 0), std::invalid_argument);
}

}  // namespace
}  // namespace gemmlab
