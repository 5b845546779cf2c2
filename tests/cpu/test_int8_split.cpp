// The digit split of the GPU exact reference (reference/int8_split.hpp), proven on the CPU: the 7-bit
// digits recompose every double exactly (53-bit significands at any offset), the whole algorithm
// (digits, int8 products summed per level in integers, one exact composition, one rounding) emulated
// on the host equals exact_gemm bit for bit on fp64 data, and the fallback rule's boundary (336 bits
// of spread per row or column) sits where the header says. The GPU tests (tests/gpu/
// test_gpu_oracle_fp64.cpp) check the GPU against the CPU engines and MPFR on the same kinds of data.
#include <gtest/gtest.h>

#include <algorithm>
#include <bit>
#include <climits>
#include <cstdint>
#include <random>
#include <string>
#include <vector>

#include "reference/distributions.hpp"
#include "reference/exact_gemm.hpp"
#include "reference/int8_split.hpp"
#include "reference/long_accumulator.hpp"
#include "tests/row_grids.hpp"
#include "tests/same_bits.hpp"

namespace gemmlab {
namespace {

using testing::same_bits;

constexpr int kLimbs = 16;  // 1024 bits: 2 * 336 + log2 K + sign for every case below
using Big = std::vector<std::uint64_t>;

// acc += v * 2^sh, two's complement over kLimbs limbs (v signed, |v| < 2^63).
void add_shifted(Big& acc, std::int64_t v, int sh) {
  const bool neg = v < 0;
  const std::uint64_t mag = neg ? 0 - static_cast<std::uint64_t>(v) : static_cast<std::uint64_t>(v);
  Big t(kLimbs, 0);
  const int w = sh / 64, b = sh % 64;
  t[w] = mag << b;
  if (b != 0 && w + 1 < kLimbs) t[w + 1] = mag >> (64 - b);
  if (neg) {  // t = -t
    std::uint64_t carry = 1;
    for (auto& x : t) x = ~x + carry, carry = carry && x == 0;
  }
  std::uint64_t carry = 0;
  for (int i = 0; i < kLimbs; ++i) {
    const std::uint64_t s1 = acc[i] + t[i], c1 = s1 < t[i];
    const std::uint64_t s2 = s1 + carry;
    carry = c1 | (s2 < carry);
    acc[i] = s2;
  }
}

// The GPU algorithm on the host: signed digits of A's rows and B's columns, level sums
// L_d = sum_{s+t=d} sum_k da_s db_t in int64, C = sum_d L_d 2^(7d) 2^(ea + eb) composed exactly and
// rounded once (nearest-even and odd), as compose_kernel does.
void emulate(const Matrix& A, const Matrix& B, std::vector<double>& c, std::vector<double>& c_odd) {
  const int M = A.rows, K = A.cols, N = B.cols;
  std::vector<int> ea, eb;
  int wa = 0, wb = 0;
  testing::row_grids(M, K, [&](int r, int k) { return A(r, k); }, ea, wa);
  testing::row_grids(N, K, [&](int r, int k) { return B(k, r); }, eb, wb);
  const int SA = split::digits_for(wa), SB = split::digits_for(wb);
  ASSERT_LE(SA, split::kMaxSplitDigits);
  ASSERT_LE(SB, split::kMaxSplitDigits);
  auto digits = [](double x, int e, int S) {
    std::vector<int> d(S, 0);
    if (x == 0) return d;
    const detail::Decomposed q = detail::decompose(x);
    for (int s = 0; s < S; ++s) d[s] = (q.neg ? -1 : 1) * split::digit(q.m, q.lsb - e, s);
    return d;
  };
  c.assign(static_cast<std::size_t>(M) * N, 0);
  c_odd = c;
  for (int i = 0; i < M; ++i)
    for (int j = 0; j < N; ++j) {
      std::vector<std::int64_t> L(SA + SB - 1, 0);
      for (int k = 0; k < K; ++k) {
        const std::vector<int> da = digits(A(i, k), ea[i], SA), db = digits(B(k, j), eb[j], SB);
        for (int s = 0; s < SA; ++s)
          for (int t = 0; t < SB; ++t) L[s + t] += static_cast<std::int64_t>(da[s]) * db[t];
      }
      Big acc(kLimbs, 0);
      for (std::size_t d = 0; d < L.size(); ++d) add_shifted(acc, L[d], split::kDigitBits * static_cast<int>(d));
      const bool neg = acc[kLimbs - 1] >> 63;
      if (neg) {
        std::uint64_t carry = 1;
        for (auto& x : acc) x = ~x + carry, carry = carry && x == 0;
      }
      const long e0 = (ea[i] == INT_MAX || eb[j] == INT_MAX) ? 0 : static_cast<long>(ea[i]) + eb[j];
      c[static_cast<std::size_t>(i) * N + j] = detail::round_bigint(acc.data(), kLimbs, e0, neg, false);
      c_odd[static_cast<std::size_t>(i) * N + j] = detail::round_bigint(acc.data(), kLimbs, e0, neg, true);
    }
}

// Every 53-bit odd significand at every offset up to the 336-bit limit recomposes from its digits.
TEST(Int8Split, DigitsRecomposeEverySignificandAtEveryOffset) {
  std::mt19937_64 rng(2311);
  for (int trial = 0; trial < 20000; ++trial) {
    const std::uint64_t m = (rng() >> 11) | 1 | (1ull << 52);  // 53 bits, odd
    const int shift = static_cast<int>(rng() % (336 - 53 + 1));
    const int S = split::digits_for(shift + 53);
    ASSERT_LE(S, split::kMaxSplitDigits);
    Big got(kLimbs, 0), want(kLimbs, 0);
    for (int s = 0; s < S; ++s) {
      const int d = split::digit(m, shift, s);
      ASSERT_GE(d, 0);
      ASSERT_LE(d, 127);
      add_shifted(got, d, split::kDigitBits * s);
    }
    add_shifted(want, static_cast<std::int64_t>(m), shift);
    ASSERT_EQ(got, want) << "m " << m << " shift " << shift;
  }
}

// The host emulation of the GPU algorithm equals exact_gemm bit for bit on fp64 data: expspread at
// GEMMul8's phi, a wide logunif, subnormal rows and 106-bit cancellation.
TEST(Int8Split, EmulatedAlgorithmEqualsExactGemmOnFp64) {
  for (const char* name : {"expspread_0.5", "expspread_4", "logunif_-200_60", "normal_0_1"}) {
    SCOPED_TRACE(name);
    const Distribution d = parse_distribution(name);
    Matrix A = generate(d, Operand::A, 7, 33, Format::fp64, 4), B = generate(d, Operand::B, 33, 6, Format::fp64, 4);
    // Row 0: subnormals only; row 1: (1 + 2^-52) against -(1 + 2^-51): 2^-104 survives.
    for (int k = 0; k < 33; ++k) A(0, k) = std::ldexp(static_cast<double>(k + 1), -1074);
    for (int k = 0; k < 33; ++k) A(1, k) = 0;
    A(1, 0) = 1 + 0x1p-52, A(1, 1) = -1;
    B(0, 0) = 1 + 0x1p-52, B(1, 0) = 1 + 0x1p-51;
    for (int k = 2; k < 33; ++k) B(k, 0) = 0;
    std::vector<double> c, c_odd;
    emulate(A, B, c, c_odd);
    const GemmReference r = exact_gemm(A, B, Format::fp64);
    EXPECT_TRUE(same_bits(c, r.c, B.cols));
    EXPECT_TRUE(same_bits(c_odd, r.c_odd, B.cols));
    EXPECT_EQ(c[B.cols], 0x1p-104);
  }
}

// The boundary of the fallback rule: 336 bits of spread are 48 digits (the GPU takes them), 337 are 49
// (refused: the CPU computes). 1.0 beside 2^-335 spans 336 bits, beside 2^-336 337 bits; 2^-1074
// beside 1.0 spans 1075.
TEST(Int8Split, FallbackBoundaryIs336BitsOfSpread) {
  auto spread_of = [](std::vector<double> row) {
    std::vector<int> e;
    int w = 0;
    testing::row_grids(1, static_cast<int>(row.size()), [&](int, int k) { return row[k]; }, e, w);
    return w;
  };
  EXPECT_EQ(split::digits_for(spread_of({1.0, 0x1p-335})), 48);
  EXPECT_EQ(split::digits_for(spread_of({1.0, 0x1p-336})), 49);
  EXPECT_EQ(split::digits_for(spread_of({1.0, 0x1p-1074})), 154);
  EXPECT_EQ(split::digits_for(spread_of({1 + 0x1p-52})), 8);  // one 53-bit double: 8 digits
  EXPECT_EQ(split::digits_for(0), 1);
  EXPECT_EQ(split::kMaxSplitDigits * split::kDigitBits, 336);
}

// What the GPU needs for the fp64 distributions of the fp64_emulation suite at K = 4096: the spread
// of 64 rows of A and 64 columns of B (the same law as every row of a 4096^3 problem) fits the GPU's
// 48 digits, so those references run on the GPU. The digit counts are recorded as test properties.
TEST(Int8Split, Fp64SuiteDistributionsFitTheGpuAtK4096) {
  for (const char* name : {"expspread_0.5", "expspread_1", "expspread_2", "expspread_4", "normal_0_1", "uniform_-1_1",
                           "cancel_-40"}) {
    const Distribution d = parse_distribution(name);
    const int K = 4096;
    const Matrix A = generate(d, Operand::A, 64, K, Format::fp64, 1), B = generate(d, Operand::B, K, 64, Format::fp64, 1);
    std::vector<int> e;
    int wa = 0, wb = 0;
    testing::row_grids(64, K, [&](int r, int k) { return A(r, k); }, e, wa);
    testing::row_grids(64, K, [&](int r, int k) { return B(k, r); }, e, wb);
    const int S = split::digits_for(std::max(wa, wb));
    EXPECT_LE(S, split::kMaxSplitDigits) << name;
    RecordProperty(std::string(name) + "_digits", S);
  }
}

}  // namespace
}  // namespace gemmlab
