// The exponent-spread distribution expspread_PHI = (U - 0.5) exp(PHI N(0,1)): names, the
// hand-written exp, bit-exact regression values, its law, the format limits, and the exact
// reference (both CPU engines) against MPFR on it in every input format.
#include <gtest/gtest.h>

#include <bit>
#include <cmath>
#include <cstdint>
#include <random>
#include <stdexcept>
#include <string>

#include "reference/distributions.hpp"
#include "reference/exact_gemm.hpp"
#include "reference/mpfr_gemm.hpp"
#include "reference/rng.hpp"

namespace gemmlab {
namespace {

TEST(ExpSpread, NamesRoundTripAndBadOnesAreRejected) {
  for (const char* n : {"expspread_0.5", "expspread_1", "expspread_4", "expspread_1.25", "expspread_16"})
    EXPECT_EQ(parse_distribution(n).name(), n);
  EXPECT_EQ(parse_distribution("expspread_0.50").name(), "expspread_0.5");
  EXPECT_EQ(parse_distribution("expspread_4").kind, DistKind::expspread);
  for (const char* bad : {"expspread_", "expspread_0", "expspread_-1", "expspread_17", "expspread_abc",
                          "expspread_+1", "expspread_1x", "expspread_nan", "expspread_inf"}) {
    try {
      parse_distribution(bad);
      ADD_FAILURE() << bad << " was accepted";
    } catch (const std::invalid_argument& e) {
      EXPECT_NE(std::string(e.what()).find("expspread_PHI"), std::string::npos) << e.what();
    }
  }
  for (const Distribution& d : default_distributions()) EXPECT_NE(d.kind, DistKind::expspread) << "not in 'all'";
}

TEST(ExpSpread, HandWrittenExpIsAccurate) {
  std::mt19937_64 gen(3);
  double worst = 0;
  for (int i = 0; i < 200000; ++i) {
    const double x = std::ldexp(static_cast<double>(gen() >> 11), -53) * 1400 - 700;
    const double want = std::exp(x), got = rng::exp(x);
    worst = std::max(worst, std::fabs(got - want) / want);
  }
  EXPECT_LT(worst, 4 * 0x1p-53);
  EXPECT_EQ(rng::exp(0.0), 1.0);
}

// Fixed-seed values, bit for bit (seed 42, fp32 and fp64 rounding): any change to the generator,
// the exp or the order of operations shows here.
TEST(ExpSpread, FixedSeedRegression) {
  struct Want {
    const char* name;
    double a[6], b[4];
  };
  const Want wants[] = {
      {"expspread_0.5",
       {0x1.6dea76p-2, -0x1.36c796p-3, 0x1.cc24c8p-5, -0x1.94b222p-2, -0x1.3ffa78p-8, 0x1.6d789ap-1},
       {0x1.ef29382fa18e4p-4, -0x1.86dd64b274dbcp-1, -0x1.30bbfcaa3e405p-1, 0x1.2b9e63e83d539p-3}},
      {"expspread_4",
       {0x1.c0e42cp-4, -0x1.1f4876p-6, 0x1.3db13cp-10, -0x1.2d04f2p+0, -0x1.7c284ep-21, 0x1.31e60cp+5},
       {0x1.0044411a0ea01p-9, -0x1.21e7caeef390ep+5, -0x1.9bc4ab7df9a45p+2, 0x1.eb030fa00f07ep-4}},
  };
  for (const Want& w : wants) {
    const Distribution d = parse_distribution(w.name);
    const Matrix A = generate(d, Operand::A, 2, 3, Format::fp32, 42);
    const Matrix B = generate(d, Operand::B, 2, 2, Format::fp64, 42);
    for (int i = 0; i < 6; ++i)
      EXPECT_EQ(std::bit_cast<std::uint64_t>(A.v[i]), std::bit_cast<std::uint64_t>(w.a[i])) << w.name << " A " << i;
    for (int i = 0; i < 4; ++i)
      EXPECT_EQ(std::bit_cast<std::uint64_t>(B.v[i]), std::bit_cast<std::uint64_t>(w.b[i])) << w.name << " B " << i;
    // Thread count and shape do not change a value.
    const Matrix big = generate(d, Operand::A, 300, 400, Format::fp32, 42, 5);
    EXPECT_EQ(big(1, 2), A(1, 2));
  }
}

// ln|x| = ln|U - 0.5| + PHI z: mean ln(1/2) - 1, variance 1 + PHI^2.
TEST(ExpSpread, LawOfTheLogMagnitude) {
  for (double phi : {0.5, 2.0, 4.0}) {
    const Distribution d = parse_distribution("expspread_" + std::to_string(phi).substr(0, 3));
    const Matrix A = generate(d, Operand::A, 1000, 1000, Format::fp64, 7);
    double s = 0, s2 = 0;
    for (double x : A.v) {
      const double l = std::log(std::fabs(x));
      s += l, s2 += l * l;
    }
    const double n = static_cast<double>(A.v.size()), mean = s / n, var = s2 / n - mean * mean;
    // Standard errors: sqrt(var / n) ~ 0.004 for the mean; the variance within 1%.
    EXPECT_NEAR(mean, std::log(0.5) - 1, 0.02) << phi;
    EXPECT_NEAR(var, 1 + phi * phi, 0.02 * (1 + phi * phi)) << phi;
  }
}

TEST(ExpSpread, FormatLimitsAreChecked) {
  EXPECT_EQ(unusable_reason(parse_distribution("expspread_4"), Format::fp32), "");
  EXPECT_EQ(unusable_reason(parse_distribution("expspread_1"), Format::fp16), "");
  EXPECT_EQ(unusable_reason(parse_distribution("expspread_0.5"), Format::e4m3), "");
  for (const auto& [name, f] : {std::pair{"expspread_2", Format::fp16}, std::pair{"expspread_1", Format::e4m3},
                                std::pair{"expspread_11", Format::fp32}}) {
    const std::string why = unusable_reason(parse_distribution(name), f);
    EXPECT_NE(why.find("use PHI <="), std::string::npos) << name << ": " << why;
    EXPECT_THROW(generate(parse_distribution(name), Operand::A, 4, 4, f, 1), std::invalid_argument);
  }
}

// The oracle on expspread in every input format: both CPU engines equal MPFR bit for bit (c, c_odd,
// |A||B|, c_out).
TEST(ExpSpread, ExactReferenceMatchesMpfrInEveryFormat) {
  for (Format in : {Format::fp32, Format::tf32, Format::fp16, Format::bf16, Format::e4m3, Format::e5m2})
    for (const char* name : {"expspread_0.5", "expspread_1", "expspread_4"}) {
      const Distribution d = parse_distribution(name);
      if (!unusable_reason(d, in).empty()) continue;
      const Matrix A = generate(d, Operand::A, 9, 70, in, 3), B = generate(d, Operand::B, 70, 8, in, 3);
      const GemmReference m = mpfr_gemm(A, B, Format::fp16);
      for (ExactEngine e : {ExactEngine::automatic, ExactEngine::kulisch}) {
        const GemmReference r = exact_gemm(A, B, Format::fp16, 0, e);
        EXPECT_EQ(r.c, m.c) << name << " " << info(in).name;
        EXPECT_EQ(r.c_odd, m.c_odd) << name << " " << info(in).name;
        EXPECT_EQ(r.abs_ab, m.abs_ab) << name << " " << info(in).name;
        EXPECT_EQ(r.c_out, m.c_out) << name << " " << info(in).name;
      }
    }
}

// fp64: expspread at the phi values of GEMMul8's accuracy study (Uchino, Ozaki, Imamura; phi = 0.5
// is HPL-like) is usable in binary64 at every phi it publishes, draws full 53-bit values (most are
// not fp32 values), and the exact reference of those 106-bit products equals MPFR bit for bit.
TEST(ExpSpread, Fp64AtGemmul8PhiValues) {
  for (const char* name : {"expspread_0.5", "expspread_1", "expspread_2", "expspread_4"}) {
    SCOPED_TRACE(name);
    const Distribution d = parse_distribution(name);
    ASSERT_EQ(unusable_reason(d, Format::fp64), "");
    const Matrix A = generate(d, Operand::A, 9, 70, Format::fp64, 3), B = generate(d, Operand::B, 70, 8, Format::fp64, 3);
    int wider_than_fp32 = 0;
    for (double x : A.v) wider_than_fp32 += !is_representable(Format::fp32, x);
    EXPECT_GT(wider_than_fp32, static_cast<int>(A.v.size()) * 9 / 10);
    for (Format out : {Format::fp64, Format::fp32}) {
      const GemmReference m = mpfr_gemm(A, B, out);
      const GemmReference r = exact_gemm(A, B, out);
      EXPECT_EQ(r.engine, "kulisch");
      EXPECT_EQ(r.c, m.c);
      EXPECT_EQ(r.c_odd, m.c_odd);
      EXPECT_EQ(r.abs_ab, m.abs_ab);
      EXPECT_EQ(r.c_out, m.c_out);
    }
  }
  // binary64's range allows every PHI the parser accepts (0.5 e^(8.58 * 16) is about 2^197).
  EXPECT_EQ(unusable_reason(parse_distribution("expspread_16"), Format::fp64), "");
}

}  // namespace
}  // namespace gemmlab
