// The quantized operands' element and scale formats (reference/formats.hpp quantized_formats()):
// every code point against its value written out from OCP MX v1.0's tables (and NVFP4's and two's
// complement's definitions), rounding against CUDA's host conversions (cuda_fp4.h, cuda_fp6.h,
// cuda_fp8.h's e8m0 decoding) and against the MPFR path at perturbed midpoints, and the run formats'
// list unchanged.
//
// Deliberate differences from CUDA, each pinned below:
//  * NaN: cuda_fp4.h / cuda_fp6.h convert a NaN to +MAXNORM; round_to keeps NaN (a value those formats
//    cannot hold: is_representable is false, to_bits refuses it). Only non-NaN inputs are compared.
//  * ue8m0 of a negative value: CUDA rounds |x|; round_to saturates to the lowest value 2^-127 (an unsigned
//    format takes a negative value to the low end of its range, as ue4m3 and uint4 do).
#include <cuda_fp4.h>
#include <cuda_fp6.h>
#include <cuda_fp8.h>
#include <gtest/gtest.h>
#include <mpfr.h>

#include <bit>
#include <cmath>
#include <cstdint>
#include <iostream>
#include <limits>
#include <random>
#include <sstream>
#include <string>
#include <vector>

#include "reference/formats.hpp"
#include "reference/formats_mpfr.hpp"

namespace gemmlab {
namespace {

constexpr double kInf = std::numeric_limits<double>::infinity();
constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();
constexpr std::uint64_t kSeed = 20261129;

std::string hex(double x) {
  std::ostringstream s;
  s << std::hexfloat << x;
  return s.str();
}

struct Mpfr {
  mpfr_t v;
  explicit Mpfr(mpfr_prec_t prec = 256) { mpfr_init2(v, prec); }
  ~Mpfr() { mpfr_clear(v); }
  Mpfr(const Mpfr&) = delete;
  Mpfr& operator=(const Mpfr&) = delete;
};

// m + s 2^(exponent(m) - 80), formed exactly in MPFR, rounded by the MPFR path.
double mpfr_round_perturbed(Format f, double m, int s) {
  Mpfr x;
  mpfr_set_d(x.v, m, MPFR_RNDN);
  if (s != 0 && m != 0.0) {
    Mpfr d;
    mpfr_set_si_2exp(d.v, s, mpfr_get_exp(x.v) - 80, MPFR_RNDN);
    mpfr_add(x.v, x.v, d.v, MPFR_RNDN);
  }
  return round_to(f, x.v);
}

// ---- every code point, from the definitions --------------------------------------------------

// A binary format's value of (sign, exponent field, fraction field): OCP MX v1.0 section 5.3.
double float_value(int sign, int field, int frac, int frac_bits, int bias) {
  const double mag = field == 0 ? std::ldexp(frac, 1 - bias - frac_bits)
                                : std::ldexp((1 << frac_bits) + frac, field - bias - frac_bits);
  return sign ? -mag : mag;
}

struct Expected {
  std::uint64_t bits;
  double value;  // NaN for the NaN codes
};

std::vector<Expected> expected_codes(Format f) {
  std::vector<Expected> v;
  auto fp = [&](int exp_bits, int frac_bits, int bias, bool sign, std::uint64_t nan_code, bool has_nan) {
    const int total = (sign ? 1 : 0) + exp_bits + frac_bits;
    for (std::uint64_t b = 0; b < (1ull << total); ++b) {
      const int s = sign ? static_cast<int>(b >> (total - 1)) : 0;
      const int field = static_cast<int>((b >> frac_bits) & ((1u << exp_bits) - 1));
      const int frac = static_cast<int>(b & ((1u << frac_bits) - 1));
      const bool nan = has_nan && (b & ((1ull << (exp_bits + frac_bits)) - 1)) == nan_code;
      v.push_back({b, nan ? kNaN : float_value(s, field, frac, frac_bits, bias)});
    }
  };
  switch (f) {
    case Format::e2m1: fp(2, 1, 1, true, 0, false); break;
    case Format::e2m3: fp(2, 3, 1, true, 0, false); break;
    case Format::e3m2: fp(3, 2, 3, true, 0, false); break;
    case Format::ue4m3: fp(4, 3, 7, false, 0x7F, true); break;
    case Format::ue8m0:
      for (std::uint64_t b = 0; b < 256; ++b) v.push_back({b, b == 0xFF ? kNaN : std::ldexp(1.0, static_cast<int>(b) - 127)});
      break;
    case Format::int8:
      for (std::uint64_t b = 0; b < 256; ++b) v.push_back({b, static_cast<double>(static_cast<std::int8_t>(b))});
      break;
    case Format::int4:
      for (std::uint64_t b = 0; b < 16; ++b) v.push_back({b, b < 8 ? double(b) : double(b) - 16});
      break;
    case Format::uint4:
      for (std::uint64_t b = 0; b < 16; ++b) v.push_back({b, double(b)});
      break;
    default: ADD_FAILURE() << "not a quantized format";
  }
  return v;
}

TEST(QuantizedFormats, RunFormatsUnchangedAndQuantizedApart) {
  ASSERT_EQ(all_formats().size(), 7u);  // the formats a run's operands may have
  ASSERT_EQ(quantized_formats().size(), 8u);
  for (Format f : quantized_formats()) {
    const FormatInfo& fi = info(f);
    EXPECT_EQ(fi.format, f);
    EXPECT_EQ(parse_format(fi.name), std::nullopt) << fi.name << " is not a run format";
    EXPECT_EQ(parse_any_format(fi.name), f) << fi.name;
    EXPECT_FALSE(fi.has_infinity) << fi.name;
    EXPECT_TRUE(is_representable(f, fi.max_finite)) << fi.name;
    EXPECT_TRUE(is_representable(f, fi.lowest)) << fi.name;
    EXPECT_FALSE(is_representable(f, kInf)) << fi.name;
    EXPECT_EQ(is_representable(f, kNaN), fi.has_nan) << fi.name;
  }
  for (Format f : all_formats()) {
    EXPECT_EQ(parse_any_format(info(f).name), f);
    EXPECT_EQ(info(f).lowest, -info(f).max_finite) << info(f).name;
    EXPECT_TRUE(info(f).has_nan) << info(f).name;
    EXPECT_FALSE(info(f).integer) << info(f).name;
  }
  // The E2M1 values of OCP MX v1.0, table 5 (and NVFP4's elements).
  std::vector<double> e2m1;
  for (std::uint64_t b = 0; b < 8; ++b) e2m1.push_back(from_bits(Format::e2m1, b));
  EXPECT_EQ(e2m1, (std::vector<double>{0, 0.5, 1, 1.5, 2, 3, 4, 6}));
  EXPECT_EQ(info(Format::e2m3).max_finite, 7.5);
  EXPECT_EQ(info(Format::e3m2).max_finite, 28.0);
  EXPECT_EQ(from_bits(Format::e2m3, 1), 0.125);   // smallest subnormal
  EXPECT_EQ(from_bits(Format::e3m2, 1), 0.0625);  // smallest subnormal
  EXPECT_EQ(from_bits(Format::ue8m0, 127), 1.0);
  EXPECT_EQ(from_bits(Format::ue8m0, 0), 0x1p-127);
  EXPECT_TRUE(std::isnan(from_bits(Format::ue8m0, 0xFF)));
  EXPECT_EQ(from_bits(Format::ue4m3, 0x7E), 448.0);
  EXPECT_TRUE(std::isnan(from_bits(Format::ue4m3, 0x7F)));
  EXPECT_EQ(from_bits(Format::int8, 0x80), -128.0);
  EXPECT_EQ(from_bits(Format::int4, 0x8), -8.0);
  EXPECT_EQ(from_bits(Format::uint4, 0xF), 15.0);
}

TEST(QuantizedFormats, EveryCodePointDecodesAndRoundTrips) {
  for (Format f : quantized_formats()) {
    int checked = 0;
    for (const Expected& e : expected_codes(f)) {
      const double got = from_bits(f, e.bits);
      ++checked;
      if (std::isnan(e.value)) {
        EXPECT_TRUE(std::isnan(got)) << info(f).name << " code " << e.bits;
        EXPECT_EQ(to_bits(f, kNaN), e.bits) << info(f).name << ": the canonical NaN";
        continue;
      }
      EXPECT_EQ(got, e.value) << info(f).name << " code " << e.bits;
      EXPECT_EQ(std::signbit(got), std::signbit(e.value)) << info(f).name << " code " << e.bits;
      EXPECT_TRUE(is_representable(f, got)) << info(f).name << " " << hex(got);
      EXPECT_EQ(round_to(f, got), got) << info(f).name << " " << hex(got);
      EXPECT_EQ(to_bits(f, got), e.bits) << info(f).name << " " << hex(got);
      // One rounding through MPFR gives the value back too.
      EXPECT_EQ(mpfr_round_perturbed(f, got, 0), got) << info(f).name << " " << hex(got);
    }
    EXPECT_EQ(checked, 1 << (f == Format::ue4m3 ? 7 : info(f).storage_bits)) << info(f).name;
  }
  // ue4m3's bit 7 is not part of it (no sign): ignored on decoding, never set on encoding.
  EXPECT_EQ(from_bits(Format::ue4m3, 0x80 | 0x38), 1.0);
  EXPECT_EQ(to_bits(Format::ue4m3, 1.0), 0x38u);
  EXPECT_THROW(to_bits(Format::e2m1, kNaN), std::invalid_argument);
  EXPECT_THROW(to_bits(Format::int8, 0.5), std::invalid_argument);
  EXPECT_THROW(to_bits(Format::ue8m0, 0.0), std::invalid_argument);
  EXPECT_THROW(to_bits(Format::ue4m3, -1.0), std::invalid_argument);
}

// Rounding, by hand: ties, saturation, the unsigned and integer ends.
TEST(QuantizedFormats, RoundingHandCases) {
  struct Case {
    Format f;
    double x, want;
  };
  const Case cases[] = {
      {Format::e2m1, 0.25, 0.0},   {Format::e2m1, 0.26, 0.5},   {Format::e2m1, 0.75, 1.0},  // tie to even 1.0
      {Format::e2m1, 1.25, 1.0},   {Format::e2m1, 1.75, 2.0},   {Format::e2m1, 2.5, 2.0},   {Format::e2m1, 3.5, 4.0},
      {Format::e2m1, 5.0, 4.0},    {Format::e2m1, 5.0001, 6.0}, {Format::e2m1, 7.0, 6.0},   {Format::e2m1, 1e30, 6.0},
      {Format::e2m1, -kInf, -6.0}, {Format::e2m1, -0.1, -0.0},
      {Format::e2m3, 7.75, 7.5},   {Format::e2m3, 0.0625, 0.0}, {Format::e2m3, 0.1875, 0.25},
      {Format::e3m2, 30.0, 28.0},  {Format::e3m2, 0.03125, 0.0}, {Format::e3m2, 0.09375, 0.125},
      {Format::ue8m0, 3.0, 4.0},   {Format::ue8m0, 2.9, 2.0},   {Format::ue8m0, 0.0, 0x1p-127},
      {Format::ue8m0, -1.0, 0x1p-127}, {Format::ue8m0, 0x1p-200, 0x1p-127}, {Format::ue8m0, 0x1p200, 0x1p127},
      {Format::ue8m0, kInf, 0x1p127},
      {Format::ue4m3, -1.0, 0.0},  {Format::ue4m3, 500.0, 448.0}, {Format::ue4m3, 0x1p-10, 0.0},
      {Format::ue4m3, 0x1.8p-10, 0x1p-9},
      {Format::int8, 2.5, 2.0},    {Format::int8, 3.5, 4.0},    {Format::int8, -2.5, -2.0}, {Format::int8, 127.5, 127.0},
      {Format::int8, -128.5, -128.0}, {Format::int8, -1e9, -128.0}, {Format::int8, 0.4999, 0.0},
      {Format::int4, 7.4, 7.0},    {Format::int4, -9.0, -8.0},  {Format::int4, 6.5, 6.0},
      {Format::uint4, -3.0, 0.0},  {Format::uint4, 15.4, 15.0}, {Format::uint4, 14.5, 14.0}, {Format::uint4, 99.0, 15.0},
  };
  for (const Case& c : cases) {
    const double got = round_to(c.f, c.x);
    EXPECT_EQ(got, c.want) << info(c.f).name << " " << hex(c.x) << " -> " << hex(got);
    EXPECT_EQ(std::signbit(got), std::signbit(c.want)) << info(c.f).name << " " << hex(c.x);
    EXPECT_EQ(mpfr_round_perturbed(c.f, c.x, 0), got) << info(c.f).name << " " << hex(c.x) << " (MPFR path)";
  }
  EXPECT_FALSE(std::signbit(round_to(Format::ue4m3, -0.0)));  // no -0 in an unsigned format
  EXPECT_FALSE(std::signbit(round_to(Format::uint4, -0.2)));
  EXPECT_TRUE(std::isnan(round_to(Format::e2m1, kNaN)));
  EXPECT_FALSE(is_representable(Format::e2m1, kNaN));
  EXPECT_FALSE(is_representable(Format::ue8m0, 0.0));
  EXPECT_FALSE(is_representable(Format::uint4, -0.0));
}

// Both neighbours of every midpoint of every format (the saturation threshold above the largest value
// included), nudged by 2^-80 relative in MPFR and exactly at the tie, against the binary64 path.
TEST(QuantizedFormats, MidpointsAgreeBetweenMpfrAndBinary64) {
  for (Format f : quantized_formats()) {
    std::vector<double> values;
    for (const Expected& e : expected_codes(f))
      if (!std::isnan(e.value)) values.push_back(e.value);
    std::sort(values.begin(), values.end());
    values.erase(std::unique(values.begin(), values.end()), values.end());
    // The would-be next values past both ends (the saturation thresholds are their midpoints).
    const double step_hi = values.back() - values[values.size() - 2];
    values.push_back(values.back() + (f == Format::ue8m0 ? values.back() : step_hi));
    if (info(f).lowest < 0) values.insert(values.begin(), values.front() - (values[1] - values[0]));
    int checked = 0;
    for (std::size_t i = 0; i + 1 < values.size(); ++i) {
      const double v = values[i], w = values[i + 1];
      const double m = 0.5 * (v + w);  // exact
      for (int s : {-1, 0, 1}) {
        const double mp = mpfr_round_perturbed(f, m, s);
        const double want = s > 0 ? round_to(f, w) : s < 0 ? round_to(f, v) : round_to(f, m);
        ++checked;
        EXPECT_EQ(mp, want) << info(f).name << " between " << hex(v) << " and " << hex(w) << " nudge " << s;
        if (s != 0 && m != 0.0) {  // the binary64 path at the nearest doubles on each side
          const double d = std::nextafter(m, s > 0 ? kInf : -kInf);
          EXPECT_EQ(round_to(f, d), want) << info(f).name << " " << hex(d);
        }
      }
      // Exactly at the tie: to even (the integers and floats), up for ue8m0 (one significant bit).
      const double tie = round_to(f, m);
      if (f == Format::ue8m0) {
        EXPECT_EQ(tie, round_to(f, w)) << hex(m);
      } else if (m > info(f).lowest && m < info(f).max_finite) {
        const double even = (to_bits(f, round_to(f, v)) & 1) == 0 ? round_to(f, v) : round_to(f, w);
        EXPECT_EQ(tie, even) << info(f).name << " tie " << hex(m);
      }
    }
    std::cout << "[ info ] " << info(f).name << ": " << checked << " midpoints checked\n";
  }
}

TEST(QuantizedFormats, RandomDoublesAgreeBetweenMpfrAndBinary64) {
  std::mt19937_64 rng(kSeed);
  std::cout << "[ seed ] " << kSeed << "\n";
  Mpfr x(53);
  for (Format f : quantized_formats()) {
    const int lo = info(f).emin - info(f).precision - 3, hi = info(f).emax + 3;
    int bad = 0;
    for (int i = 0; i < 50'000; ++i) {
      std::uniform_int_distribution<int> e(lo, hi);
      const std::uint64_t r = rng();
      double d = std::ldexp(1.0 + std::ldexp(static_cast<double>(r >> 12), -52), e(rng));
      if (r & 1) d = -d;
      mpfr_set_d(x.v, d, MPFR_RNDN);
      const double a = round_to(f, x.v), b = round_to(f, d);
      if (!(a == b && std::signbit(a) == std::signbit(b)) && bad++ < 5)
        ADD_FAILURE() << info(f).name << " x=" << hex(d) << " mpfr " << hex(a) << " binary64 " << hex(b);
    }
    EXPECT_EQ(bad, 0) << info(f).name;
  }
}

// ---- CUDA's host conversions --------------------------------------------------------------------

TEST(QuantizedFormats, RoundingMatchesCudaFp4Fp6Satfinite) {
  std::mt19937_64 rng(kSeed + 1);
  std::cout << "[ seed ] " << kSeed + 1 << "\n";
  struct Kind {
    Format f;
    int cuda;  // 0 fp4 e2m1, 1 fp6 e2m3, 2 fp6 e3m2
  };
  for (Kind k : {Kind{Format::e2m1, 0}, Kind{Format::e2m3, 1}, Kind{Format::e3m2, 2}}) {
    auto cuda_bits = [&](double x) -> std::uint64_t {
      if (k.cuda == 0) return __nv_cvt_double_to_fp4(x, __NV_E2M1, cudaRoundNearest) & 0xF;
      return __nv_cvt_double_to_fp6(x, k.cuda == 1 ? __NV_E2M3 : __NV_E3M2, cudaRoundNearest) & 0x3F;
    };
    std::vector<double> xs;
    for (const Expected& e : expected_codes(k.f)) {  // every value, its midpoints and their neighbours
      xs.push_back(e.value);
      for (const Expected& g : expected_codes(k.f)) {
        const double m = 0.5 * (e.value + g.value);
        xs.insert(xs.end(), {m, std::nextafter(m, kInf), std::nextafter(m, -kInf)});
      }
    }
    for (int i = 0; i < 20'000; ++i) {
      std::uniform_int_distribution<int> e(info(k.f).emin - 6, info(k.f).emax + 3);
      const std::uint64_t r = rng();
      const double d = std::ldexp(1.0 + std::ldexp(static_cast<double>(r >> 12), -52), e(rng));
      xs.push_back((r & 1) ? -d : d);
    }
    xs.insert(xs.end(), {kInf, -kInf, 1e300, -1e300, 0.0, -0.0});
    int bad = 0;
    for (double x : xs) {
      const std::uint64_t want = cuda_bits(x);
      const std::uint64_t got = to_bits(k.f, round_to(k.f, x));
      if (got != want && bad++ < 5)
        ADD_FAILURE() << info(k.f).name << " x=" << hex(x) << " ours " << got << " cuda " << want;
    }
    EXPECT_EQ(bad, 0) << info(k.f).name << " over " << xs.size() << " inputs";
    // The one difference: NaN (CUDA: +MAXNORM).
    EXPECT_TRUE(std::isnan(round_to(k.f, kNaN)));
  }
}

TEST(QuantizedFormats, E8m0DecodesLikeCuda) {
  for (unsigned b = 0; b < 256; ++b) {
    const __nv_bfloat16_raw r = __nv_cvt_e8m0_to_bf16raw(static_cast<__nv_fp8_storage_t>(b));
    const double cuda = std::bit_cast<float>(static_cast<std::uint32_t>(r.x) << 16);
    const double ours = from_bits(Format::ue8m0, b);
    if (b == 0xFF) {
      EXPECT_TRUE(std::isnan(cuda) && std::isnan(ours));
    } else {
      EXPECT_EQ(ours, cuda) << "code " << b;
    }
  }
  // Powers of two convert to themselves whatever CUDA's rounding direction.
  for (int e = -127; e <= 127; ++e) {
    const double x = std::ldexp(1.0, e);
    EXPECT_EQ(__nv_cvt_double_to_e8m0(x, __NV_SATFINITE, cudaRoundZero), to_bits(Format::ue8m0, round_to(Format::ue8m0, x)));
  }
}

}  // namespace
}  // namespace gemmlab
