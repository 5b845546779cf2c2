// The residue split of the GPU exact reference (reference/crt_split.hpp), proven on the CPU: the moduli
// are a CRT basis whose plans reach every bit count the split takes, the symmetric residues are the
// integers' residues, the reconstruction returns every X with |X| < M / 2 from any congruent int32 sums,
// and the whole algorithm (residues on the row grids, int8 products summed per modulus, the CRT
// composition, one rounding) emulated on the host equals exact_gemm bit for bit (c, c_odd, |A||B|). The GPU
// tests (tests/gpu/test_gpu_oracle.cpp) check the GPU's two splits against each other and the CPU.
#include <gtest/gtest.h>

#include <algorithm>
#include <bit>
#include <climits>
#include <cstdint>
#include <numeric>
#include <random>
#include <vector>

#include "experiments/device/exact_reference_gpu.hpp"
#include "reference/crt_split.hpp"
#include "reference/distributions.hpp"
#include "reference/exact_gemm.hpp"
#include "reference/long_accumulator.hpp"
#include "tests/row_grids.hpp"
#include "tests/same_bits.hpp"

namespace gemmlab {
namespace {

using testing::same_bits;
using Limbs = std::uint64_t[crt::kLimbs];

int bit_length(const Limbs& a) {
  for (int w = crt::kLimbs - 1; w >= 0; --w)
    if (a[w]) return 64 * w + static_cast<int>(std::bit_width(a[w]));
  return 0;
}
// a mod m (m < 2^32).
std::uint32_t mod_small(const Limbs& a, std::uint32_t m) {
  unsigned __int128 r = 0;
  for (int w = crt::kLimbs - 1; w >= 0; --w) r = ((r << 64) | a[w]) % m;
  return static_cast<std::uint32_t>(r);
}
bool equal(const Limbs& a, const Limbs& b) { return std::equal(a, a + crt::kLimbs, b); }

TEST(CrtSplit, ModuliArePairwiseCoprimeOddAndFitTheLimbs) {
  Limbs M = {1, 0, 0};
  for (int p = 0; p < crt::kMaxModuli; ++p) {
    const int m = crt::kModuli[p];
    EXPECT_EQ(m % 2, 1) << m;
    EXPECT_LT(m, 256);
    EXPECT_EQ(crt::modulus(p), m);
    for (int q = 0; q < p; ++q) EXPECT_EQ(std::gcd(m, crt::kModuli[q]), 1) << m << " " << crt::kModuli[q];
    Limbs next;
    crt::detail::mul_small(M, static_cast<std::uint64_t>(m), next);
    std::copy(next, next + crt::kLimbs, M);
  }
  // The composition sums P terms below M each: P M must stay below 2^192.
  EXPECT_LE(bit_length(M) + 5, 64 * crt::kLimbs) << bit_length(M);
  // The widest product the split takes: 183 bits (e.g. two 82-bit spreads, K = 2^17, a sign); 184 are refused.
  crt::Plan plan;
  EXPECT_TRUE(crt::make_plan(183, plan));
  EXPECT_EQ(plan.P, crt::kMaxModuli);
  EXPECT_FALSE(crt::make_plan(184, plan));
}

TEST(CrtSplit, PlansAreTheFewestModuliReachingTheBits) {
  int last_p = 0;
  for (int bits = 1; bits <= 186; ++bits) {
    crt::Plan pl;
    if (!crt::make_plan(bits, pl)) {
      EXPECT_EQ(bits, 184) << "no plan for " << bits << " bits";
      break;
    }
    EXPECT_GT(bit_length(pl.M), bits) << bits;  // M >= 2^bits (M odd, so M > 2^bits)
    EXPECT_GE(pl.P, last_p);
    last_p = pl.P;
    // One modulus fewer would not do.
    Limbs fewer = {1, 0, 0};
    for (int p = 0; p + 1 < pl.P; ++p) {
      Limbs next;
      crt::detail::mul_small(fewer, static_cast<std::uint64_t>(pl.m[p]), next);
      std::copy(next, next + crt::kLimbs, fewer);
    }
    EXPECT_LE(bit_length(fewer), bits) << bits;
    for (int p = 0; p < pl.P; ++p) {
      EXPECT_EQ(mod_small(pl.Mp[p], static_cast<std::uint32_t>(pl.m[p])) * pl.y[p] % pl.m[p], 1u) << bits << " " << p;
      Limbs back;
      crt::detail::mul_small(pl.Mp[p], static_cast<std::uint64_t>(pl.m[p]), back);
      EXPECT_TRUE(equal(back, pl.M));
    }
    Limbs twice;
    crt::detail::mul_small(pl.half, 2, twice);
    twice[0] += 1;
    EXPECT_TRUE(equal(twice, pl.M));
  }
}

TEST(CrtSplit, ResiduesAreSymmetricAndCongruent) {
  std::mt19937_64 rng(20261130);
  for (int trial = 0; trial < 200000; ++trial) {
    const int bits = static_cast<int>(rng() % 121);
    const std::uint64_t m53 = (rng() >> 11) | 1;
    const int shift = bits > 53 ? bits - 53 : 0;
    std::uint64_t hi = 0, lo = 0;
    crt::shifted(bits == 0 ? 0 : m53 >> (bits < 53 ? 53 - bits : 0), shift, hi, lo);
    const unsigned __int128 mag = (static_cast<unsigned __int128>(hi) << 64) | lo;
    ASSERT_EQ(mag, bits == 0 ? 0 : static_cast<unsigned __int128>(m53 >> (bits < 53 ? 53 - bits : 0)) << shift);
    const bool neg = (rng() & 1) != 0;
    const int m = crt::kModuli[rng() % crt::kMaxModuli];
    const int r = crt::residue(hi, lo, neg, m);
    ASSERT_LE(std::abs(r), (m - 1) / 2);
    const long long want = static_cast<long long>(mag % static_cast<unsigned>(m));
    ASSERT_EQ(((neg ? -r : r) % m + m) % m, want) << bits << " " << m;
    if (hi == 0) ASSERT_EQ(crt::residue(lo, neg, m), r);
  }
}

// Every X with |X| < M / 2 comes back from residue sums that are any int32 congruent to it.
TEST(CrtSplit, ReconstructionIsExact) {
  std::mt19937_64 rng(42);
  for (int bits : {8, 30, 60, 64, 100, 127, 140, 160, 183}) {
    crt::Plan pl;
    ASSERT_TRUE(crt::make_plan(bits, pl));
    for (int trial = 0; trial < 3000; ++trial) {
      Limbs x = {0, 0, 0};
      const int kind = trial % 6;
      if (kind == 1) {
        x[0] = 1;
      } else if (kind == 2) {
        std::copy(pl.half, pl.half + crt::kLimbs, x);  // the largest magnitude, (M - 1) / 2
      } else if (kind >= 3) {
        const int len = static_cast<int>(rng() % static_cast<unsigned>(bits)) + 1;
        for (int w = 0; w < crt::kLimbs; ++w) x[w] = rng();
        for (int w = 0; w < crt::kLimbs; ++w) {
          const int lo = 64 * w;
          if (lo >= len) x[w] = 0;
          else if (lo + 64 > len) x[w] &= (~0ull) >> (64 - (len - lo));
        }
        if (crt::detail::less(pl.half, x)) std::copy(pl.half, pl.half + crt::kLimbs, x);
      }
      const bool neg = kind != 0 && (rng() & 1);
      std::vector<std::int32_t> g(pl.P);
      for (int p = 0; p < pl.P; ++p) {
        const long long r = mod_small(x, static_cast<std::uint32_t>(pl.m[p]));
        long long v = neg ? -r : r;
        v += pl.m[p] * static_cast<long long>(static_cast<int>(rng() % 2000001) - 1000000);  // any congruent int32
        g[p] = static_cast<std::int32_t>(v);
      }
      Limbs mag;
      bool got_neg = false;
      crt::reconstruct(pl, [&](int p) { return g[p]; }, mag, got_neg);
      ASSERT_TRUE(equal(mag, x)) << "bits " << bits << " trial " << trial;
      const bool zero = bit_length(x) == 0;
      ASSERT_EQ(got_neg, neg && !zero) << "bits " << bits << " trial " << trial;
    }
  }
}

// The GPU's residue algorithm on the host: row grids, residues, per-modulus int32 sums, composition,
// rounding: bit for bit exact_gemm's c, c_odd and |A||B|. widest: the largest spread seen.
int widest = 0;
void emulate(const Matrix& A, const Matrix& B, std::vector<double>& c, std::vector<double>& c_odd,
             std::vector<double>& abs_ab) {
  const int M = A.rows, K = A.cols, N = B.cols;
  std::vector<int> ea, eb;
  int wa = 0, wb = 0;
  testing::row_grids(M, K, [&](int r, int k) { return A(r, k); }, ea, wa);
  testing::row_grids(N, K, [&](int r, int k) { return B(k, r); }, eb, wb);
  widest = std::max({widest, wa, wb});
  ASSERT_LE(wa, crt::kMaxSpread);
  ASSERT_LE(wb, crt::kMaxSpread);
  crt::Plan pl;
  ASSERT_TRUE(crt::make_plan(wa + wb + static_cast<int>(std::bit_width(static_cast<unsigned>(K - 1))) + 1, pl));
  auto res = [&](double x, int e, int p, bool with_sign) {
    if (x == 0) return 0;
    const detail::Decomposed d = detail::decompose(x);
    std::uint64_t hi = 0, lo = 0;
    crt::shifted(d.m, d.lsb - e, hi, lo);
    const int v = crt::residue(hi, lo, false, pl.m[p]);
    return with_sign && d.neg ? -v : v;
  };
  c.assign(static_cast<std::size_t>(M) * N, 0);
  c_odd = c, abs_ab = c;
  for (int i = 0; i < M; ++i)
    for (int j = 0; j < N; ++j) {
      const long e0 = (ea[i] == INT_MAX || eb[j] == INT_MAX) ? 0 : static_cast<long>(ea[i]) + eb[j];
      for (int pass = 0; pass < 2; ++pass) {
        std::vector<std::int32_t> g(pl.P, 0);
        for (int p = 0; p < pl.P; ++p) {
          std::int64_t sum = 0;
          for (int k = 0; k < K; ++k) {
            const int ra = res(A(i, k), ea[i], p, pass == 0), rb = res(B(k, j), eb[j], p, pass == 0);
            ASSERT_LE(std::abs(ra), 127);
            ASSERT_LE(std::abs(rb), 127);
            sum += static_cast<std::int64_t>(ra) * rb;
          }
          ASSERT_LT(std::abs(sum), std::int64_t{1} << 31);
          g[p] = static_cast<std::int32_t>(sum);
        }
        Limbs mag;
        bool neg = false;
        crt::reconstruct(pl, [&](int p) { return g[p]; }, mag, neg);
        const std::size_t at = static_cast<std::size_t>(i) * N + j;
        if (pass == 0) {
          c[at] = detail::round_bigint(mag, crt::kLimbs, e0, neg, false);
          c_odd[at] = detail::round_bigint(mag, crt::kLimbs, e0, neg, true);
        } else {
          abs_ab[at] = detail::round_bigint(mag, crt::kLimbs, e0, false, false);
        }
      }
    }
}

TEST(CrtSplit, EmulatedAlgorithmEqualsExactGemm) {
  struct Case {
    const char* dist;
    Format f;
  };
  for (const Case cs : {Case{"normal_0_1", Format::fp32}, Case{"uniform_-1_1", Format::fp32},
                        Case{"logunif_-8_8", Format::fp32}, Case{"cancel_-10", Format::fp32},
                        Case{"uniform_0_1", Format::fp16}, Case{"normal_0_1", Format::bf16},
                        Case{"normal_0_1", Format::fp64}, Case{"logunif_-8_8", Format::fp64}}) {
    SCOPED_TRACE(std::string(cs.dist) + " " + info(cs.f).name);
    const Distribution d = parse_distribution(cs.dist);
    Matrix A = generate(d, Operand::A, 9, 37, cs.f, 7), B = generate(d, Operand::B, 37, 8, cs.f, 7);
    // Row 0 all zero; row 1 cancels to (1 + 2^-23) 2^-23; column 0 of B spans 2^-38 to 2^1.
    for (int k = 0; k < 37; ++k) A(0, k) = 0, A(1, k) = 0;
    A(1, 0) = 1 + 0x1p-23, A(1, 1) = -1;
    B(0, 1) = 1 + 0x1p-23, B(1, 1) = 1 + 0x1p-23;
    for (int k = 2; k < 37; ++k) B(k, 1) = 0;
    B(0, 0) = 0x1p-38, B(1, 0) = -(1 + 0x1p-23);  // lsb 2^-38 beside a top of 2^1: 39 bits
    std::vector<double> c, c_odd, ab;
    emulate(A, B, c, c_odd, ab);
    const GemmReference r = exact_gemm(A, B, Format::fp64);
    EXPECT_TRUE(same_bits(c, r.c, B.cols));
    EXPECT_TRUE(same_bits(c_odd, r.c_odd, B.cols));
    EXPECT_TRUE(same_bits(ab, r.abs_ab, B.cols));
    EXPECT_EQ(c[static_cast<std::size_t>(1) * B.cols + 1], (1 + 0x1p-23) * (1 + 0x1p-23) - (1 + 0x1p-23));
  }
  EXPECT_GT(widest, 64) << "no case used the residues' second word";
}

// GEMMLAB_REFERENCE_SPLIT's values, and a clear refusal of any other (the GPU reference reads it first).
TEST(CrtSplit, TheSplitVariableTakesItsThreeValuesAndNamesAnyOther) {
  using device::parse_reference_split;
  using device::ReferenceSplit;
  EXPECT_EQ(parse_reference_split(""), ReferenceSplit::automatic);
  EXPECT_EQ(parse_reference_split("auto"), ReferenceSplit::automatic);
  EXPECT_EQ(parse_reference_split("digits"), ReferenceSplit::digits);
  EXPECT_EQ(parse_reference_split("residues"), ReferenceSplit::residues);
  for (const char* bad : {"residue", "Digits", "crt", " digits"}) {
    try {
      parse_reference_split(bad);
      ADD_FAILURE() << bad << " was taken";
    } catch (const std::invalid_argument& e) {
      EXPECT_NE(std::string(e.what()).find(std::string("GEMMLAB_REFERENCE_SPLIT='") + bad + "'"), std::string::npos);
      EXPECT_NE(std::string(e.what()).find("digits, residues or auto"), std::string::npos);
    }
  }
}

}  // namespace
}  // namespace gemmlab
