// Controlled input distributions: the generator (Philox known answers, hand-written elementary
// functions), determinism, representability, names, and each distribution's defining property.
// Statistical checks use a fixed seed and a tolerance of 5 standard errors computed from the
// distribution's known moments (a false failure has probability below 1e-6 per check).
#include <gtest/gtest.h>

#include <algorithm>
#include <bit>
#include <cmath>
#include <cstdint>
#include <map>
#include <random>
#include <set>
#include <stdexcept>
#include <string>
#include <vector>

#include "reference/distributions.hpp"
#include "reference/exact_gemm.hpp"
#include "reference/formats.hpp"
#include "reference/portable_fp.hpp"
#include "reference/rng.hpp"

using namespace gemmlab;

namespace {

constexpr std::uint64_t kSeed = 20240601;

struct Moments {
  double mean, var, m4;  // sample mean, sample variance, and sample 4th central moment
};

Moments moments(const std::vector<double>& v) {
  long double s = 0;
  for (double x : v) s += x;
  const long double mean = s / v.size();
  long double s2 = 0, s4 = 0;
  for (double x : v) {
    const long double d = x - mean;
    s2 += d * d;
    s4 += d * d * d * d;
  }
  return {static_cast<double>(mean), static_cast<double>(s2 / (v.size() - 1)),
          static_cast<double>(s4 / v.size())};
}

// Mean and variance within 5 standard errors of the truth: SE(mean) = sigma / sqrt(n),
// SE(variance) = sqrt((mu4 - sigma^4) / n).
void expect_moments(const std::vector<double>& v, double mean, double var, double mu4) {
  const double n = static_cast<double>(v.size());
  const Moments m = moments(v);
  EXPECT_NEAR(m.mean, mean, 5 * std::sqrt(var / n));
  EXPECT_NEAR(m.var, var, 5 * std::sqrt((mu4 - var * var) / n));
}

}  // namespace

// ---- the generator ---------------------------------------------------------------------------

TEST(DistributionsRng, PhiloxMatchesRandom123KnownAnswers) {
  // Random123 tests/kat_vectors, "philox4x32 10".
  struct Kat {
    rng::Block ctr;
    std::uint32_t k0, k1;
    rng::Block expect;
  };
  const Kat kats[] = {
      {{{0, 0, 0, 0}}, 0, 0, {{0x6627e8d5, 0xe169c58d, 0xbc57ac4c, 0x9b00dbd8}}},
      {{{0xffffffff, 0xffffffff, 0xffffffff, 0xffffffff}}, 0xffffffff, 0xffffffff,
       {{0x408f276d, 0x41c83b0e, 0xa20bc7c6, 0x6d5451fd}}},
      {{{0x243f6a88, 0x85a308d3, 0x13198a2e, 0x03707344}}, 0xa4093822, 0x299f31d0,
       {{0xd16cfe09, 0x94fdcceb, 0x5001e420, 0x24126ea1}}},
  };
  for (const Kat& k : kats) {
    const rng::Block got = rng::philox4x32_10(k.ctr, k.k0, k.k1);
    for (int w = 0; w < 4; ++w) EXPECT_EQ(got.w[w], k.expect.w[w]) << "word " << w;
  }
}

TEST(DistributionsRng, HandWrittenElementaryFunctionsAreAccurate) {
  // Not libm (whose last bit varies between libraries), but within a few ulps of it.
  for (double x : {0x1p-53, 1e-300, 0x1p-1060, 0.1, 0.5, 0.70710678, 0.999999, 1.0, 1.5, 3.0}) {
    const double ref = std::log(x);
    EXPECT_NEAR(rng::ln(x), ref, 4 * std::fabs(ref) * 0x1p-52 + 1e-300) << "ln " << x;
  }
  EXPECT_EQ(rng::ln(1.0), 0.0);
  for (int k = 0; k < 1000; ++k) {
    const double t = k / 1000.0;
    EXPECT_NEAR(rng::cos_2pi(t), std::cos(2 * M_PI * t), 1e-15) << "cos_2pi " << t;
    EXPECT_NEAR(rng::exp2_frac(t), std::exp2(t), 4 * 0x1p-52 * 2) << "exp2 " << t;
  }
  EXPECT_EQ(rng::cos_2pi(0.0), 1.0);
  EXPECT_EQ(rng::exp2_frac(0.0), 1.0);
}

TEST(DistributionsRng, UniformUses53BitsAndOpenIntervalNeverZero) {
  EXPECT_EQ(rng::uniform53(0), 0.0);
  EXPECT_EQ(rng::uniform53(~0ull), 1.0 - 0x1p-53);
  EXPECT_EQ(rng::uniform53(std::uint64_t{1} << 11), 0x1p-53);  // lowest bit used
  EXPECT_EQ(rng::uniform53_open0(0), 0x1p-53);
  EXPECT_EQ(rng::uniform53_open0(~0ull), 1.0);
  EXPECT_EQ(rng::below(~0ull, 17), 16u);
  EXPECT_EQ(rng::below(0, 17), 0u);
}

TEST(DistributionsRng, PortableLdexpEqualsStdLdexp) {
  // pfp::ldexp scales logunif's magnitudes and rng::exp's result on the host and the GPU alike; it
  // must round exactly as std::ldexp: overflow, gradual underflow and ties in the subnormal range.
  std::mt19937_64 gen(kSeed);
  std::size_t bad = 0, tested = 0;
  auto check = [&](double x, int n) {
    ++tested;
    if (std::bit_cast<std::uint64_t>(pfp::ldexp(x, n)) != std::bit_cast<std::uint64_t>(std::ldexp(x, n)))
      if (bad++ == 0) ADD_FAILURE() << "pfp::ldexp(" << std::hexfloat << x << ", " << std::dec << n << ") = "
                                    << std::hexfloat << pfp::ldexp(x, n) << ", std::ldexp " << std::ldexp(x, n);
  };
  for (int i = 0; i < 400000; ++i) {
    double x = std::bit_cast<double>(gen());
    if (!std::isfinite(x)) continue;
    check(x, static_cast<int>(gen() % 4401) - 2200);
  }
  // [1, 2) scaled into and across the subnormal range, with the last bits set so ties occur.
  for (int n = -1080; n <= -1015; ++n)
    for (std::uint64_t low : {0ull, 1ull, 0x7ffull, 0x800ull, 0x801ull, 0xfffull})
      for (int k = 0; k < 50; ++k) {
        const double x = std::bit_cast<double>(0x3ff0000000000000ull | ((gen() >> 12) & ~0xfffull) | low);
        check(x, n);
        check(-x, n);
      }
  for (int n : {1022, 1023, 1024, 2046, 2047, 2098, -2098, -2100})
    for (double x : {1.0, 1.5, 0x1.fffffffffffffp0, 0x1p-1074, 0x1p-1022, 0x1.fffffffffffffp+1023}) check(x, n);
  EXPECT_EQ(bad, 0u) << bad << " of " << tested << " differ";
}

// ---- determinism -----------------------------------------------------------------------------

TEST(Distributions, SameSeedSameValuesDifferentSeedDifferentValues) {
  for (const Distribution& d : default_distributions()) {
    const Matrix a = generate(d, Operand::A, 37, 64, Format::fp32, kSeed);
    const Matrix b = generate(d, Operand::A, 37, 64, Format::fp32, kSeed);
    const Matrix c = generate(d, Operand::A, 37, 64, Format::fp32, kSeed + 1);
    const Matrix bop = generate(d, Operand::B, 37, 64, Format::fp32, kSeed);
    EXPECT_EQ(a.v, b.v) << d.name();
    std::size_t same_seed = 0, same_op = 0;
    for (std::size_t i = 0; i < a.size(); ++i) {
      same_seed += a.v[i] == c.v[i];
      same_op += a.v[i] == bop.v[i];
    }
    // exactint_8 has 17 values: two independent streams agree on about 1/17 of the entries.
    const double limit = d.kind == DistKind::exactint ? 0.15 : 0.01;
    EXPECT_LT(same_seed, limit * a.size()) << d.name() << ": another seed gives the same values";
    EXPECT_LT(same_op, limit * a.size()) << d.name() << ": A and B share a stream";
  }
}

TEST(Distributions, ThreadCountDoesNotChangeValues) {
  // 300 x 300 = 90000 entries: above the size where generate() starts threads.
  for (const Distribution& d : default_distributions()) {
    for (Operand op : {Operand::A, Operand::B}) {
      const Matrix one = generate(d, op, 300, 300, Format::fp16, kSeed, 1);
      for (int threads : {2, 3, 7, 0}) {
        const Matrix many = generate(d, op, 300, 300, Format::fp16, kSeed, threads);
        EXPECT_EQ(one.v, many.v) << d.name() << " threads " << threads;
      }
    }
  }
}

TEST(Distributions, EntryDependsOnlyOnSeedOperandAndPosition) {
  // A sub-block of a larger matrix holds the same values (not for cancel, whose pairing depends
  // on K by design).
  for (const Distribution& d : default_distributions()) {
    if (d.kind == DistKind::cancel) continue;
    const Matrix small = generate(d, Operand::B, 5, 7, Format::bf16, kSeed);
    const Matrix big = generate(d, Operand::B, 50, 70, Format::bf16, kSeed);
    for (int i = 0; i < 5; ++i)
      for (int j = 0; j < 7; ++j) EXPECT_EQ(small(i, j), big(i, j)) << d.name() << " (" << i << "," << j << ")";
  }
}

TEST(Distributions, FixedSeedRegression) {
  // Pins the stream layout: a change to the generator or its counters changes recorded results
  // and must be deliberate. uniform_0_1 in fp64 is the raw 53-bit uniform.
  const Matrix a = generate(parse_distribution("uniform_0_1"), Operand::A, 1, 1, Format::fp64, 0);
  const rng::Block b = rng::bits(0, (0u << 8) | 0u, 0, 0);
  EXPECT_EQ(a(0, 0), rng::uniform53(rng::word64(b, 0)));
  EXPECT_EQ(a(0, 0), rng::uniform53(rng::word64(rng::philox4x32_10({{0, 0, 0, 0x67656d6du}}, 0, 0), 0)));
  // Values recorded when the layout was fixed (identical at -O0 and -O2): seed 0, A(0, 0..1).
  const struct {
    const char* name;
    double v0, v1;
  } pinned[] = {
      {"uniform_0_1", 0x1.8a87325db46a4p-3, 0x1.8c76e2e008d7bp-1},
      {"normal_0_1", -0x1.13e945b85d593p+0, 0x1.27298cd38b37dp+1},
      {"logunif_-8_8", -0x1.2992599745a03p+4, 0x1.2db42bdeca2d1p-8},
  };
  for (const auto& p : pinned) {
    const Matrix m = generate(parse_distribution(p.name), Operand::A, 1, 2, Format::fp64, 0);
    EXPECT_EQ(m(0, 0), p.v0) << p.name;
    EXPECT_EQ(m(0, 1), p.v1) << p.name;
  }
}

// ---- representability and names --------------------------------------------------------------

TEST(Distributions, EveryValueIsRepresentableAndFinite) {
  for (Format f : all_formats()) {
    for (const Distribution& d : default_distributions()) {
      if (!unusable_reason(d, f).empty()) continue;
      for (Operand op : {Operand::A, Operand::B}) {
        const Matrix m = generate(d, op, 64, 96, f, kSeed);
        std::size_t bad = 0;
        for (double x : m.v) bad += !std::isfinite(x) || !is_representable(f, x);
        EXPECT_EQ(bad, 0u) << d.name() << " in " << info(f).name;
      }
    }
  }
}

TEST(Distributions, DefaultsAreUsableInWideFormats) {
  for (Format f : {Format::fp64, Format::fp32, Format::tf32, Format::fp16})
    for (const Distribution& d : default_distributions())
      EXPECT_EQ(unusable_reason(d, f), "") << d.name() << " in " << info(f).name;
}

TEST(Distributions, NamesRoundTripThroughParse) {
  std::vector<std::string> names = {"uniform_0_1", "uniform_-1_1", "normal_0_1", "logunif_-8_8",
                                    "logunif_-30_-10", "logunif_0_1", "cancel_-10", "cancel_-1",
                                    "exactint_8", "exactint_1", "exactint_2048"};
  for (const Distribution& d : default_distributions()) names.push_back(d.name());
  for (const std::string& n : names) {
    const Distribution d = parse_distribution(n);
    EXPECT_EQ(d.name(), n);
    EXPECT_EQ(parse_distribution(d.name()).kind, d.kind);
  }
  EXPECT_EQ(default_distributions().size(), 6u);
  std::set<DistKind> kinds;
  for (const Distribution& d : default_distributions()) kinds.insert(d.kind);
  EXPECT_EQ(kinds.size(), 6u) << "one of each kind";
}

TEST(Distributions, AliasesGiveDefaultParameters) {
  const std::map<std::string, std::string> alias = {
      {"uniform01", "uniform_0_1"}, {"uniform_pm1", "uniform_-1_1"}, {"normal", "normal_0_1"},
      {"logunif", "logunif_-8_8"},  {"cancel", "cancel_-10"},        {"exactint", "exactint_8"}};
  for (const auto& [a, canonical] : alias) EXPECT_EQ(parse_distribution(a).name(), canonical) << a;
}

TEST(Distributions, BadNamesAreRejectedWithAHelpfulMessage) {
  for (const char* bad : {"", "uniform", "gauss", "uniform_0_2", "logunif_8_-8", "logunif_1_1",
                          "logunif_-8", "logunif_a_b", "logunif_-8_8_", "logunif_-8_8.5",
                          "logunif_-2000_8", "cancel_5", "cancel_0", "cancel_", "cancel_-x",
                          "cancel_-100", "exactint_0", "exactint_-3", "exactint_+3", "exactint_8x",
                          "exactint_99999999999", "NORMAL"}) {
    try {
      parse_distribution(bad);
      ADD_FAILURE() << "accepted '" << bad << "'";
    } catch (const std::invalid_argument& e) {
      const std::string msg = e.what();
      EXPECT_NE(msg.find("'" + std::string(bad) + "'"), std::string::npos) << msg;
      EXPECT_NE(msg.find("logunif_L_H"), std::string::npos) << msg;
      EXPECT_NE(msg.find("exactint_R"), std::string::npos) << msg;
    }
  }
}

// ---- statistics of each distribution -----------------------------------------------------------

TEST(DistributionsStats, UniformAndNormalMomentsMatchTheTruth) {
  // n = 2^18 values in fp64 (the raw generator) and in fp32 (after rounding).
  for (Format f : {Format::fp64, Format::fp32}) {
    const Matrix u = generate(parse_distribution("uniform_0_1"), Operand::A, 256, 1024, f, kSeed);
    expect_moments(u.v, 0.5, 1.0 / 12, 1.0 / 80);
    const Matrix p = generate(parse_distribution("uniform_-1_1"), Operand::B, 256, 1024, f, kSeed);
    expect_moments(p.v, 0.0, 1.0 / 3, 1.0 / 5);
    const Matrix z = generate(parse_distribution("normal_0_1"), Operand::A, 256, 1024, f, kSeed);
    expect_moments(z.v, 0.0, 1.0, 3.0);
    // The shape too, not just two moments: P(|z| < 1) and P(|z| < 2) within 5 binomial SEs.
    const double n = static_cast<double>(z.size());
    for (auto [t, prob] : {std::pair{1.0, 0.682689492137086}, std::pair{2.0, 0.954499736103642}}) {
      double inside = 0;
      for (double x : z.v) inside += std::fabs(x) < t;
      EXPECT_NEAR(inside / n, prob, 5 * std::sqrt(prob * (1 - prob) / n)) << "|z| < " << t;
    }
    for (double x : u.v) ASSERT_TRUE(x >= 0 && x < 1);
    for (double x : p.v) ASSERT_TRUE(x >= -1 && x < 1);
  }
}

TEST(DistributionsStats, LogUniformCoversEveryBinadeEvenly) {
  const Distribution d = parse_distribution("logunif_-8_8");
  const Matrix m = generate(d, Operand::A, 256, 256, Format::fp32, kSeed);
  const double n = static_cast<double>(m.size());
  std::map<int, double> count;
  double negative = 0, frac_sum = 0;
  for (double x : m.v) {
    ASSERT_NE(x, 0.0);
    const double l = std::log2(std::fabs(x));
    ASSERT_GE(l, -8.0);
    ASSERT_LE(l, 8.0);  // 2^8 itself can be reached by rounding up
    const int b = static_cast<int>(std::floor(l));
    count[std::min(b, 7)] += 1;
    frac_sum += l - b;
    negative += x < 0;
  }
  EXPECT_EQ(count.size(), 16u);
  for (int b = -8; b < 8; ++b)
    EXPECT_NEAR(count[b] / n, 1.0 / 16, 5 * std::sqrt((1.0 / 16) * (15.0 / 16) / n)) << "binade " << b;
  EXPECT_NEAR(negative / n, 0.5, 5 * std::sqrt(0.25 / n));
  // log2|x| - floor is U[0,1): mean 1/2, SE sqrt(1/12 / n).
  EXPECT_NEAR(frac_sum / n, 0.5, 5 * std::sqrt(1.0 / 12 / n));
}

TEST(DistributionsStats, LogUniformRangeIsCheckedAgainstTheFormat) {
  EXPECT_EQ(unusable_reason(parse_distribution("logunif_-8_15"), Format::fp16), "");
  EXPECT_NE(unusable_reason(parse_distribution("logunif_-8_16"), Format::fp16), "");
  EXPECT_EQ(unusable_reason(parse_distribution("logunif_-8_8"), Format::e4m3), "");
  EXPECT_NE(unusable_reason(parse_distribution("logunif_-8_9"), Format::e4m3), "");
  EXPECT_THROW(generate(parse_distribution("logunif_0_16"), Operand::A, 4, 4, Format::fp16, 1),
               std::invalid_argument);
  // The top of the range stays finite after rounding: fp16 logunif_14_15 reaches at most 2^15.
  const Matrix m = generate(parse_distribution("logunif_14_15"), Operand::A, 128, 128, Format::fp16, kSeed);
  for (double x : m.v) ASSERT_TRUE(std::isfinite(x) && std::fabs(x) <= 32768.0) << x;
}

// Exact C of a small fp16 cancel problem: fp16 values are multiples of 2^-24, so products scaled
// by 2^48 are integers below 2^48 and their sums are exact in __int128.
TEST(DistributionsStats, CancelReallyCancels) {
  const Distribution d = parse_distribution("cancel_-10");
  const int M = 8, N = 8;
  for (int K : {64, 65}) {
    const Matrix A = generate(d, Operand::A, M, K, Format::fp16, kSeed);
    const Matrix B = generate(d, Operand::B, K, N, Format::fp16, kSeed);
    const int h = K / 2;
    for (int i = 0; i < M; ++i)
      for (int k = 0; k < h; ++k) ASSERT_EQ(A(i, h + k), A(i, k));
    if (K % 2) {
      for (int i = 0; i < M; ++i) EXPECT_EQ(A(i, K - 1), 0.0);
      for (int j = 0; j < N; ++j) EXPECT_EQ(B(K - 1, j), 0.0);
    }
    const double u = info(Format::fp16).unit_roundoff;
    int nonzero = 0;
    double worst_ratio = 0, ratio_sum = 0;
    for (int i = 0; i < M; ++i)
      for (int j = 0; j < N; ++j) {
        __int128 c = 0;
        long double first_half_abs = 0, abs_ab = 0, partial = 0;
        for (int k = 0; k < K; ++k) {
          const double p = A(i, k) * B(k, j);  // exact: 22 significant bits
          c += static_cast<__int128>(std::ldexp(p, 48));
          ASSERT_EQ(std::ldexp(p, 48), std::trunc(std::ldexp(p, 48)));
          abs_ab += std::fabs(p);
          if (k < h) {
            first_half_abs += std::fabs(p);
            partial += p;
          }
        }
        const long double exact = std::ldexp(static_cast<long double>(c), -48);
        nonzero += c != 0;
        // By construction |C| <= (2^E + 2u) sum_{k<h} |A(i,k) B(k,j)|.
        EXPECT_LE(std::fabs(exact), (0x1p-10 + 2 * u) * first_half_abs) << i << "," << j;
        const double r = static_cast<double>(std::fabs(exact) / abs_ab);
        worst_ratio = std::max(worst_ratio, r);
        ratio_sum += r;
        (void)partial;
      }
    // Not a trivial cancellation: at least 90% of the entries are nonzero, and on average C is
    // far below |A||B| (about 2^E / sqrt(K) for random data; require below 2^E).
    EXPECT_GE(nonzero, 0.9 * M * N) << "K " << K;
    EXPECT_LT(ratio_sum / (M * N), 0x1p-10) << "K " << K;
    EXPECT_LT(worst_ratio, 0x1p-9) << "K " << K;
  }
}

TEST(DistributionsStats, CancelPerturbationIsSmallAndSurvivesRounding) {
  const Distribution d = parse_distribution("cancel_-20");
  const int K = 256, N = 64, h = K / 2;
  const Matrix B = generate(d, Operand::B, K, N, Format::fp32, kSeed);
  const double u = info(Format::fp32).unit_roundoff;
  int perturbed = 0;
  for (int k = 0; k < h; ++k)
    for (int j = 0; j < N; ++j) {
      const double s = B(k, j) + B(h + k, j);  // exact: Sterbenz
      EXPECT_LE(std::fabs(s), (0x1p-20 + 2 * u) * std::fabs(B(k, j)));
      perturbed += s != 0;
    }
  EXPECT_GT(perturbed, 0.9 * h * N);
  EXPECT_NE(unusable_reason(parse_distribution("cancel_-10"), Format::bf16), "");
  EXPECT_EQ(unusable_reason(parse_distribution("cancel_-7"), Format::bf16), "");
  EXPECT_NE(unusable_reason(parse_distribution("cancel_-25"), Format::fp32), "");
  EXPECT_THROW(generate(parse_distribution("cancel_-10"), Operand::B, 8, 8, Format::bf16, 1),
               std::invalid_argument);
}

// The wide-range and cancellation distributions in fp64, where fp32 refuses them: logunif over
// binades -1000..1000 (subnormal to 2^1000) and cancel_-40 (a perturbation fp32 would lose). The
// cancel structure holds in binary64: |C| <= (2^E + 2u) sum_{k<h} |A(i,k) B(k,j)| <= (2^E + 2u) |A||B|,
// checked on the exact reference; and C is not trivially zero.
TEST(DistributionsStats, WideRangeAndCancellationInFp64) {
  const Distribution wide = parse_distribution("logunif_-1000_1000"), cancel = parse_distribution("cancel_-40");
  EXPECT_NE(unusable_reason(wide, Format::fp32), "");
  EXPECT_NE(unusable_reason(cancel, Format::fp32), "");
  EXPECT_EQ(unusable_reason(wide, Format::fp64), "");
  EXPECT_EQ(unusable_reason(cancel, Format::fp64), "");
  const Matrix W = generate(wide, Operand::A, 64, 64, Format::fp64, 5);
  double lo = 1e300, hi = 0;
  for (double x : W.v)
    if (x != 0) lo = std::min(lo, std::fabs(x)), hi = std::max(hi, std::fabs(x));
  EXPECT_LT(lo, 0x1p-900);
  EXPECT_GT(hi, 0x1p900);

  const int M = 12, N = 10, K = 64;
  const Matrix A = generate(cancel, Operand::A, M, K, Format::fp64, 9), B = generate(cancel, Operand::B, K, N, Format::fp64, 9);
  const GemmReference r = exact_gemm(A, B, Format::fp64);
  int nonzero = 0;
  for (std::size_t i = 0; i < r.c.size(); ++i) {
    EXPECT_LE(std::fabs(r.c[i]), (0x1p-40 + 0x1p-52) * r.abs_ab[i]) << "entry " << i;
    nonzero += r.c[i] != 0;
  }
  EXPECT_GT(nonzero, M * N * 9 / 10);
}

TEST(DistributionsStats, ExactIntTakesEveryIntegerInRange) {
  const Matrix m = generate(parse_distribution("exactint_8"), Operand::A, 128, 128, Format::e4m3, kSeed);
  std::map<double, double> count;
  for (double x : m.v) {
    ASSERT_EQ(x, std::trunc(x));
    ASSERT_LE(std::fabs(x), 8.0);
    count[x] += 1;
  }
  EXPECT_EQ(count.size(), 17u);
  const double n = static_cast<double>(m.size()), p = 1.0 / 17;
  for (const auto& [v, c] : count) EXPECT_NEAR(c / n, p, 5 * std::sqrt(p * (1 - p) / n)) << v;
}

TEST(DistributionsStats, ExactInChecksTheOutputAndInputFormats) {
  const Distribution r8 = parse_distribution("exactint_8");
  // fp32 output: K R^2 <= 2^24, R = 8: K <= 2^18.
  EXPECT_EQ(exact_in(r8, Format::fp32, Format::fp32, 1 << 18), "");
  EXPECT_NE(exact_in(r8, Format::fp32, Format::fp32, (1 << 18) + 1), "");
  // fp16 output: K R^2 <= 2^11: K <= 32.
  EXPECT_EQ(exact_in(r8, Format::fp16, Format::fp16, 32), "");
  EXPECT_NE(exact_in(r8, Format::fp16, Format::fp16, 33), "");
  EXPECT_EQ(exact_in(r8, Format::fp16, Format::fp32, 4096), "");
  // Input format: e4m3 holds integers up to 2^4 = 16, e5m2 up to 8, bf16 up to 256.
  EXPECT_EQ(exact_in(parse_distribution("exactint_16"), Format::e4m3, Format::fp32, 4096), "");
  EXPECT_NE(exact_in(parse_distribution("exactint_17"), Format::e4m3, Format::fp32, 4096), "");
  EXPECT_EQ(exact_in(r8, Format::e5m2, Format::fp32, 4096), "");
  EXPECT_NE(exact_in(parse_distribution("exactint_9"), Format::e5m2, Format::fp32, 4096), "");
  EXPECT_NE(exact_in(parse_distribution("exactint_257"), Format::bf16, Format::fp32, 1), "");
  // fp64: K R^2 <= 2^53 with R = 2^20: K <= 2^13.
  EXPECT_EQ(exact_in(parse_distribution("exactint_1048576"), Format::fp64, Format::fp64, 8192), "");
  EXPECT_NE(exact_in(parse_distribution("exactint_1048576"), Format::fp64, Format::fp64, 8193), "");
  // Only exactint is exact.
  EXPECT_NE(exact_in(parse_distribution("uniform_0_1"), Format::fp32, Format::fp32, 1), "");
  EXPECT_THROW(generate(parse_distribution("exactint_17"), Operand::A, 2, 2, Format::e4m3, 1),
               std::invalid_argument);
}
