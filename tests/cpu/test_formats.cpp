// Number formats: bit patterns and round-to-nearest-even checked against the CUDA headers' host-side
// conversions (cuda_fp16.h, cuda_bf16.h, cuda_fp8.h compile with g++ and need no GPU), against the
// x86-64 binary32 conversion, against independent bit tricks, and the MPFR path against exact
// midpoints that a detour through binary64 would round wrongly.
//
// Deliberate differences from CUDA, each pinned by a test below:
//  * e5m2 follows IEEE overflow (to +-inf), i.e. cuda_fp8.h's __NV_NOSAT; its __NV_SATFINITE
//    (used by the __nv_fp8_e5m2 constructors) clamps to +-57344 instead.
//  * e4m3 saturates to +-448, i.e. __NV_SATFINITE; __NV_NOSAT returns NaN above 464.
//  * NaN encodings: to_bits returns one canonical quiet NaN per format (fp16 0x7E00, bf16 0x7FC0,
//    e4m3 0x7F, e5m2 0x7E); CUDA's float->half returns 0x7FFF. Only "is NaN" is compared.
#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_fp8.h>
#include <gtest/gtest.h>
#include <mpfr.h>

#include <bit>
#include <cfloat>
#include <cmath>
#include <cstdint>
#include <iostream>
#include <random>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "reference/formats.hpp"
#include "reference/formats_mpfr.hpp"

namespace gemmlab {
namespace {

constexpr double kInf = std::numeric_limits<double>::infinity();
constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();

// One seed for every random stream in this file, printed so a failure can be replayed.
constexpr std::uint64_t kSeed = 20250101;

std::mt19937_64 seeded_rng(std::uint64_t stream) {
  std::cout << "[ seed ] " << kSeed << " stream " << stream << "\n";
  return std::mt19937_64(kSeed * 1000003u + stream);
}

float f32(std::uint32_t b) { return std::bit_cast<float>(b); }
std::uint32_t bits32(float f) { return std::bit_cast<std::uint32_t>(f); }

std::string hex(double x) {
  std::ostringstream s;
  s << std::hexfloat << x;
  return s.str();
}

// Collects mismatches in a hot loop without drowning the log: the first few are reported in full.
class Mismatches {
 public:
  explicit Mismatches(std::string what) : what_(std::move(what)) {}
  void add(const std::string& detail) {
    if (count_++ < 8) ADD_FAILURE() << what_ << ": " << detail;
  }
  void checked() { ++checked_; }
  ~Mismatches() {
    EXPECT_EQ(count_, 0u) << what_ << ": " << count_ << " mismatches out of " << checked_;
    std::cout << "[ info ] " << what_ << ": " << checked_ << " inputs checked\n";
  }

 private:
  std::string what_;
  std::uint64_t count_ = 0;
  std::uint64_t checked_ = 0;
};

// A random double with a random sign, a uniform binade in [lo, hi] and a random 52-bit fraction.
double random_double(std::mt19937_64& rng, int lo, int hi) {
  std::uniform_int_distribution<int> e(lo, hi);
  const std::uint64_t r = rng();
  const double frac = 1.0 + std::ldexp(static_cast<double>(r >> 12), -52);
  const double v = std::ldexp(frac, e(rng));
  return (r & 1) ? -v : v;
}

// ---- CUDA host conversions, as bit patterns -------------------------------------------------

std::uint16_t cuda_f2h(float f) { return static_cast<__half_raw>(__float2half_rn(f)).x; }
std::uint16_t cuda_d2h(double d) { return static_cast<__half_raw>(__double2half(d)).x; }
std::uint16_t cuda_f2bf(float f) { return static_cast<__nv_bfloat16_raw>(__float2bfloat16_rn(f)).x; }
std::uint16_t cuda_d2bf(double d) { return static_cast<__nv_bfloat16_raw>(__double2bfloat16(d)).x; }
float cuda_h2f(std::uint16_t b) {
  __half_raw r;
  r.x = b;
  return __half2float(__half(r));
}
float cuda_bf2f(std::uint16_t b) {
  __nv_bfloat16_raw r;
  r.x = b;
  return __bfloat162float(__nv_bfloat16(r));
}
float cuda_fp8_to_float(std::uint8_t b, __nv_fp8_interpretation_t kind) {
  return __half2float(__half(__nv_cvt_fp8_to_halfraw(static_cast<__nv_fp8_storage_t>(b), kind)));
}

bool fp16_bits_nan(std::uint16_t b) { return (b & 0x7FFF) > 0x7C00; }
bool bf16_bits_nan(std::uint16_t b) { return (b & 0x7FFF) > 0x7F80; }
bool e4m3_bits_nan(std::uint8_t b) { return (b & 0x7F) == 0x7F; }
bool e5m2_bits_nan(std::uint8_t b) { return (b & 0x7F) > 0x7C; }

// ours vs a reference bit pattern of the same format; NaN matches NaN whatever the payload.
void compare_bits(Mismatches& mm, Format f, double x, std::uint64_t ref_bits, bool ref_is_nan) {
  mm.checked();
  const double r = round_to(f, x);
  if (ref_is_nan || std::isnan(r)) {
    if (!(ref_is_nan && std::isnan(r)))
      mm.add("x=" + hex(x) + " ours=" + hex(r) + " reference bits=" + std::to_string(ref_bits));
    return;
  }
  const std::uint64_t ours = to_bits(f, r);
  if (ours != ref_bits)
    mm.add("x=" + hex(x) + " ours=" + hex(r) + " (bits " + std::to_string(ours) + ") reference bits " +
           std::to_string(ref_bits));
}

// Inputs shaped for a 16-bit target whose rounding position is bit `cut` of the fp32 pattern:
// every combination of the bits above `cut` (sign, exponent, kept fraction: all targets, both
// signs, inf and NaN inputs included) with low parts at and around the midpoint and the ends.
std::vector<std::uint32_t> low_patterns(int cut, std::mt19937_64& rng) {
  const std::uint32_t half = 1u << (cut - 1), all = (1u << cut) - 1;
  std::vector<std::uint32_t> lows = {0, 1, 2, half - 2, half - 1, half, half + 1, half + 2, all - 1, all};
  for (int i = 0; i < 4; ++i) lows.push_back(static_cast<std::uint32_t>(rng()) & all);
  return lows;
}

// Every positive finite value v of a 16-bit/8-bit format, with the next value w above it (past the
// largest finite value, w is the would-be next grid point, so (v + w) / 2 is the overflow
// threshold). Values are exact doubles.
std::vector<std::pair<double, double>> neighbours(Format f) {
  std::vector<std::pair<double, double>> out;
  const int bits = info(f).storage_bits;
  const std::uint64_t sign = 1ull << (bits - 1);
  for (std::uint64_t b = 0; b < sign; ++b) {
    const double v = from_bits(f, b);
    if (!std::isfinite(v)) continue;
    double w = from_bits(f, b + 1);
    if (!std::isfinite(w) || w <= v) {  // v is the largest finite: extend the grid by one step
      w = v + (v - from_bits(f, b - 1));
    }
    out.emplace_back(v, w);
  }
  return out;
}

// Midpoints and their near neighbours in binary32 and binary64, both signs.
std::vector<double> midpoint_inputs(Format f) {
  std::vector<double> xs;
  for (auto [v, w] : neighbours(f)) {
    const double m = 0.5 * (v + w);  // exact: one more bit than the format has
    const float mf = static_cast<float>(m);
    const double cand[] = {m,
                           std::nextafter(m, kInf),
                           std::nextafter(m, -kInf),
                           std::nextafter(mf, INFINITY),
                           std::nextafter(mf, -INFINITY),
                           std::nextafter(std::nextafter(mf, INFINITY), INFINITY),
                           std::nextafter(std::nextafter(mf, -INFINITY), -INFINITY),
                           v,
                           w};
    for (double c : cand) {
      xs.push_back(c);
      xs.push_back(-c);
    }
  }
  return xs;
}

// ---- the table ------------------------------------------------------------------------------

TEST(FormatsTable, NamesAndParameters) {
  ASSERT_EQ(all_formats().size(), 7u);
  for (Format f : all_formats()) {
    const FormatInfo& fi = info(f);
    EXPECT_EQ(fi.format, f);
    EXPECT_EQ(parse_format(fi.name), f) << fi.name;
    EXPECT_EQ(fi.unit_roundoff, std::ldexp(1.0, -fi.precision)) << fi.name;
    // max_finite lies in the top binade and is representable; the smallest normal too.
    EXPECT_GE(fi.max_finite, std::ldexp(1.0, fi.emax)) << fi.name;
    EXPECT_LT(fi.max_finite, std::ldexp(1.0, fi.emax + 1)) << fi.name;
    EXPECT_TRUE(is_representable(f, fi.max_finite)) << fi.name;
    EXPECT_TRUE(is_representable(f, std::ldexp(1.0, fi.emin))) << fi.name;
    EXPECT_TRUE(is_representable(f, std::ldexp(1.0, fi.emin - fi.precision + 1))) << fi.name;
    if (f != Format::fp64) {  // 2^-1075 is not a double at all
      EXPECT_FALSE(is_representable(f, std::ldexp(1.0, fi.emin - fi.precision))) << fi.name;
    }
    EXPECT_EQ(is_representable(f, kInf), fi.has_infinity) << fi.name;
    EXPECT_TRUE(is_representable(f, kNaN)) << fi.name;
  }
  EXPECT_EQ(info(Format::fp16).max_finite, 65504.0);
  EXPECT_EQ(info(Format::e4m3).max_finite, 448.0);
  EXPECT_EQ(info(Format::e5m2).max_finite, 57344.0);
  EXPECT_EQ(info(Format::fp32).max_finite, static_cast<double>(FLT_MAX));
  EXPECT_EQ(info(Format::fp64).max_finite, DBL_MAX);
  EXPECT_FALSE(info(Format::e4m3).has_infinity);
  EXPECT_EQ(info(Format::tf32).storage_bits, 32);
  EXPECT_EQ(parse_format("half"), std::nullopt);
  EXPECT_EQ(parse_format(""), std::nullopt);
  EXPECT_EQ(parse_format("FP16"), std::nullopt);
}

// ---- exhaustive 16-bit decode ---------------------------------------------------------------

TEST(FormatsFp16, AllPatternsDecodeLikeCudaAndRoundTrip) {
  Mismatches mm("fp16 decode");
  for (std::uint32_t b = 0; b < 65536; ++b) {
    mm.checked();
    const double ours = from_bits(Format::fp16, b);
    const float cuda = cuda_h2f(static_cast<std::uint16_t>(b));
    if (std::isnan(cuda) || std::isnan(ours)) {
      if (!(std::isnan(cuda) && std::isnan(ours))) mm.add("bits " + std::to_string(b));
      continue;
    }
    if (ours != static_cast<double>(cuda) || std::signbit(ours) != std::signbit(cuda) ||
        round_to(Format::fp16, ours) != ours || to_bits(Format::fp16, ours) != b)
      mm.add("bits " + std::to_string(b) + " ours " + hex(ours) + " cuda " + hex(cuda));
  }
}

TEST(FormatsBf16, AllPatternsDecodeLikeCudaAndRoundTrip) {
  Mismatches mm("bf16 decode");
  for (std::uint32_t b = 0; b < 65536; ++b) {
    mm.checked();
    const double ours = from_bits(Format::bf16, b);
    const float cuda = cuda_bf2f(static_cast<std::uint16_t>(b));
    if (std::isnan(cuda) || std::isnan(ours)) {
      if (!(std::isnan(cuda) && std::isnan(ours))) mm.add("bits " + std::to_string(b));
      continue;
    }
    if (ours != static_cast<double>(cuda) || std::signbit(ours) != std::signbit(cuda) ||
        round_to(Format::bf16, ours) != ours || to_bits(Format::bf16, ours) != b)
      mm.add("bits " + std::to_string(b) + " ours " + hex(ours) + " cuda " + hex(cuda));
  }
}

// ---- 16-bit rounding vs CUDA ----------------------------------------------------------------

TEST(FormatsFp16, RoundingMatchesCudaFloat2HalfRn) {
  auto rng = seeded_rng(1);
  Mismatches mm("fp16 round vs __float2half_rn");
  auto check = [&](float x) {
    const std::uint16_t c = cuda_f2h(x);
    compare_bits(mm, Format::fp16, x, c, fp16_bits_nan(c));
  };
  // fp16 keeps the top 10 of binary32's 23 fraction bits for normal targets: cut at bit 13.
  for (std::uint32_t low : low_patterns(13, rng))
    for (std::uint32_t hi = 0; hi < (1u << 19); ++hi) check(f32((hi << 13) | low));
  // Subnormal targets round at higher bits: every binary32 in [2^-26, 2^-14), stride 7.
  for (std::uint32_t b = bits32(0x1p-26f); b < bits32(0x1p-14f); b += 7) check(f32(b));
  for (double x : midpoint_inputs(Format::fp16))
    if (std::fabs(x) < 1e38 && static_cast<double>(static_cast<float>(x)) == x) check(static_cast<float>(x));
  for (int i = 0; i < 4'000'000; ++i) check(f32(static_cast<std::uint32_t>(rng())));
}

TEST(FormatsFp16, RoundingMatchesCudaDouble2Half) {
  auto rng = seeded_rng(2);
  Mismatches mm("fp16 round vs __double2half");
  auto check = [&](double x) {
    const std::uint16_t c = cuda_d2h(x);
    compare_bits(mm, Format::fp16, x, c, fp16_bits_nan(c));
  };
  // Includes midpoint +- 1 binary64 ulp: a detour through binary32 would turn those into ties.
  for (double x : midpoint_inputs(Format::fp16)) check(x);
  for (int i = 0; i < 2'000'000; ++i) check(random_double(rng, -27, 17));
  for (int i = 0; i < 500'000; ++i) check(std::bit_cast<double>(rng()));
  for (double x : {0.0, -0.0, kInf, -kInf, kNaN, DBL_MAX, DBL_TRUE_MIN, 65520.0, 0x1.ffdfffffffffffp15})
    check(x);
}

TEST(FormatsBf16, RoundingMatchesCudaFloat2Bfloat16Rn) {
  auto rng = seeded_rng(3);
  Mismatches mm("bf16 round vs __float2bfloat16_rn");
  auto check = [&](float x) {
    const std::uint16_t c = cuda_f2bf(x);
    compare_bits(mm, Format::bf16, x, c, bf16_bits_nan(c));
  };
  // bf16 is the top half of binary32 and shares its subnormal range: cut at bit 16 covers all.
  for (std::uint32_t low : low_patterns(16, rng))
    for (std::uint32_t hi = 0; hi < (1u << 16); ++hi) check(f32((hi << 16) | low));
  for (double x : midpoint_inputs(Format::bf16))
    if (static_cast<double>(static_cast<float>(x)) == x) check(static_cast<float>(x));
  for (int i = 0; i < 4'000'000; ++i) check(f32(static_cast<std::uint32_t>(rng())));
}

TEST(FormatsBf16, RoundingMatchesCudaDouble2Bfloat16) {
  auto rng = seeded_rng(4);
  Mismatches mm("bf16 round vs __double2bfloat16");
  auto check = [&](double x) {
    const std::uint16_t c = cuda_d2bf(x);
    compare_bits(mm, Format::bf16, x, c, bf16_bits_nan(c));
  };
  for (double x : midpoint_inputs(Format::bf16)) check(x);
  for (int i = 0; i < 2'000'000; ++i) check(random_double(rng, -140, 130));
  for (int i = 0; i < 500'000; ++i) check(std::bit_cast<double>(rng()));
  for (double x : {0.0, -0.0, kInf, -kInf, kNaN, DBL_MAX, DBL_TRUE_MIN, 0x1p-134, 0x1.8p-134}) check(x);
}

// ---- fp8 ------------------------------------------------------------------------------------

TEST(FormatsFp8, AllPatternsDecodeLikeCudaAndRoundTrip) {
  for (auto [f, kind] : {std::pair{Format::e4m3, __NV_E4M3}, std::pair{Format::e5m2, __NV_E5M2}}) {
    Mismatches mm(std::string(info(f).name) + " decode");
    for (std::uint32_t b = 0; b < 256; ++b) {
      mm.checked();
      const double ours = from_bits(f, b);
      const float cuda = cuda_fp8_to_float(static_cast<std::uint8_t>(b), kind);
      if (std::isnan(cuda) || std::isnan(ours)) {
        if (!(std::isnan(cuda) && std::isnan(ours))) mm.add("bits " + std::to_string(b));
        continue;
      }
      if (ours != static_cast<double>(cuda) || std::signbit(ours) != std::signbit(cuda) ||
          round_to(f, ours) != ours || to_bits(f, ours) != b)
        mm.add("bits " + std::to_string(b) + " ours " + hex(ours) + " cuda " + hex(cuda));
    }
  }
  EXPECT_TRUE(std::isnan(from_bits(Format::e4m3, 0x7F)));
  EXPECT_TRUE(std::isnan(from_bits(Format::e4m3, 0xFF)));
  EXPECT_EQ(from_bits(Format::e4m3, 0x7E), 448.0);
  EXPECT_EQ(from_bits(Format::e4m3, 0x01), 0x1p-9);
  EXPECT_EQ(from_bits(Format::e5m2, 0x7C), kInf);
  EXPECT_EQ(from_bits(Format::e5m2, 0x7B), 57344.0);
  EXPECT_EQ(from_bits(Format::e5m2, 0x01), 0x1p-16);
}

std::vector<double> fp8_inputs(Format f, std::mt19937_64& rng) {
  std::vector<double> xs = midpoint_inputs(f);
  for (std::uint32_t b = 0; b < 65536; ++b) xs.push_back(from_bits(Format::fp16, b));  // incl. inf, NaN
  for (int i = 0; i < 1'000'000; ++i) xs.push_back(random_double(rng, -20, 20));
  for (int i = 0; i < 200'000; ++i) xs.push_back(std::bit_cast<double>(rng()));
  for (double x : {kInf, -kInf, kNaN, 0.0, -0.0, DBL_MAX, -DBL_MAX, DBL_TRUE_MIN, 464.0, 480.0,
                   61440.0, std::nextafter(61440.0, 0.0), 0x1p-10, 0x1p-17})
    xs.push_back(x);
  return xs;
}

TEST(FormatsFp8, E4m3RoundingMatchesCudaSatfinite) {
  auto rng = seeded_rng(5);
  Mismatches mm("e4m3 round vs __nv_cvt_double_to_fp8(SATFINITE)");
  for (double x : fp8_inputs(Format::e4m3, rng)) {
    const auto c = static_cast<std::uint8_t>(__nv_cvt_double_to_fp8(x, __NV_SATFINITE, __NV_E4M3));
    compare_bits(mm, Format::e4m3, x, c, e4m3_bits_nan(c));
    // Float inputs go through __nv_cvt_float_to_fp8 as well.
    const float xf = static_cast<float>(x);
    if (static_cast<double>(xf) == x || std::isnan(x)) {
      const auto cf = static_cast<std::uint8_t>(__nv_cvt_float_to_fp8(xf, __NV_SATFINITE, __NV_E4M3));
      compare_bits(mm, Format::e4m3, xf, cf, e4m3_bits_nan(cf));
    }
  }
}

TEST(FormatsFp8, E5m2RoundingMatchesCudaNosat) {
  auto rng = seeded_rng(6);
  Mismatches mm("e5m2 round vs __nv_cvt_double_to_fp8(NOSAT)");
  for (double x : fp8_inputs(Format::e5m2, rng)) {
    const auto c = static_cast<std::uint8_t>(__nv_cvt_double_to_fp8(x, __NV_NOSAT, __NV_E5M2));
    compare_bits(mm, Format::e5m2, x, c, e5m2_bits_nan(c));
    const float xf = static_cast<float>(x);
    if (static_cast<double>(xf) == x || std::isnan(x)) {
      const auto cf = static_cast<std::uint8_t>(__nv_cvt_float_to_fp8(xf, __NV_NOSAT, __NV_E5M2));
      compare_bits(mm, Format::e5m2, xf, cf, e5m2_bits_nan(cf));
    }
  }
}

// The documented differences: only overflow handling differs, and exactly where expected.
TEST(FormatsFp8, DifferencesFromCudaAreOnlyOverflowHandling) {
  auto rng = seeded_rng(7);
  for (double x : fp8_inputs(Format::e4m3, rng)) {
    if (std::isnan(x)) continue;
    const auto c = static_cast<std::uint8_t>(__nv_cvt_double_to_fp8(x, __NV_NOSAT, __NV_E4M3));
    const double r = round_to(Format::e4m3, x);
    if (std::fabs(x) > 464.0) {  // 448 + half an ulp: NOSAT gives NaN, we saturate
      ASSERT_TRUE(e4m3_bits_nan(c)) << hex(x);
      ASSERT_EQ(std::fabs(r), 448.0) << hex(x);
    } else {
      ASSERT_EQ(to_bits(Format::e4m3, r), c) << hex(x);
    }
  }
  for (double x : fp8_inputs(Format::e5m2, rng)) {
    if (std::isnan(x)) continue;
    const auto c = static_cast<std::uint8_t>(__nv_cvt_double_to_fp8(x, __NV_SATFINITE, __NV_E5M2));
    const double r = round_to(Format::e5m2, x);
    if (std::fabs(x) >= 61440.0) {  // 57344 + half an ulp: SATFINITE clamps, we (IEEE) overflow
      ASSERT_EQ(c & 0x7F, 0x7B) << hex(x);
      ASSERT_TRUE(std::isinf(r)) << hex(x);
    } else {
      ASSERT_EQ(to_bits(Format::e5m2, r), c) << hex(x);
    }
  }
}

// ---- fp32, tf32, fp64 -----------------------------------------------------------------------

TEST(FormatsFp32, HandCases) {
  const Format f = Format::fp32;
  EXPECT_EQ(round_to(f, 1.0 + 0x1p-24), 1.0);                       // tie, 1 is even
  EXPECT_EQ(round_to(f, 1.0 + 0x1p-24 + 0x1p-52), 1.0 + 0x1p-23);    // just above the tie
  EXPECT_EQ(round_to(f, 1.0 + 3 * 0x1p-24), 1.0 + 0x1p-22);         // tie, goes up to even
  EXPECT_EQ(round_to(f, 0x1p-149), 0x1p-149);                       // smallest subnormal
  EXPECT_EQ(to_bits(f, 0x1p-149), 1u);
  EXPECT_EQ(round_to(f, 0x1p-150), 0.0);                            // tie with 0: even is 0
  EXPECT_TRUE(std::signbit(round_to(f, -0x1p-150)));
  EXPECT_EQ(round_to(f, 0x1p-150 + 0x1p-200), 0x1p-149);
  EXPECT_EQ(round_to(f, 3 * 0x1p-150), 0x1p-148);                   // 1.5 quanta: tie to even 2
  EXPECT_EQ(round_to(f, 0x1.fffffep-127), 0x1p-126);                // rounds up into the normals
  const double max = FLT_MAX, half_ulp = 0x1p103;
  EXPECT_EQ(round_to(f, max + half_ulp * 0.99), max);
  EXPECT_EQ(round_to(f, max + half_ulp), kInf);                     // tie: overflows (IEEE)
  EXPECT_EQ(round_to(f, -max - half_ulp), -kInf);
  EXPECT_EQ(round_to(f, DBL_MAX), kInf);
  EXPECT_TRUE(std::isnan(round_to(f, kNaN)));
  EXPECT_EQ(to_bits(f, kNaN), 0x7FC00000u);
  EXPECT_EQ(to_bits(f, -0.0), 0x80000000u);
  EXPECT_EQ(to_bits(f, kInf), 0x7F800000u);
  EXPECT_THROW(to_bits(f, 1.0 + 0x1p-30), std::invalid_argument);
}

TEST(FormatsFp32, RoundingMatchesHardwareCast) {
  auto rng = seeded_rng(8);
  Mismatches mm("fp32 round vs (float) cast");
  auto check = [&](double x) {
    const float c = static_cast<float>(x);  // cvtsd2ss: round-to-nearest-even on x86-64
    compare_bits(mm, Format::fp32, x, bits32(c), std::isnan(c));
  };
  for (int i = 0; i < 2'000'000; ++i) check(random_double(rng, -155, 130));
  for (int i = 0; i < 1'000'000; ++i) check(std::bit_cast<double>(rng()));
  // Midpoints of binary32 neighbours across all binades (subnormal and top included), +-1 ulp.
  for (std::uint32_t b = 0; b < 0x7F800000u; b += 4099) {
    const double v = f32(b), w = (b + 1 == 0x7F800000u) ? 0x1p128 : f32(b + 1);
    const double m = 0.5 * (v + w);
    for (double x : {m, std::nextafter(m, kInf), std::nextafter(m, -kInf)}) {
      check(x);
      check(-x);
    }
  }
}

TEST(FormatsFp32, BitPatternsRoundTrip) {
  Mismatches mm("fp32 bits");
  auto check = [&](std::uint32_t b) {
    mm.checked();
    const float v = f32(b);
    const double d = from_bits(Format::fp32, b);
    if (std::isnan(v)) {
      if (!std::isnan(d)) mm.add("bits " + std::to_string(b));
      return;
    }
    if (d != static_cast<double>(v) || std::signbit(d) != std::signbit(v) || to_bits(Format::fp32, d) != b)
      mm.add("bits " + std::to_string(b));
  };
  for (std::uint64_t b = 0; b < (1ull << 32); b += 997) check(static_cast<std::uint32_t>(b));
  for (std::uint32_t b : {0u, 1u, 0x007FFFFFu, 0x00800000u, 0x7F7FFFFFu, 0x7F800000u, 0x80000001u, 0xFF800000u})
    check(b);
}

// tf32 = binary32's sign and exponent with 10 fraction bits. Reference: RNE on the binary32 pattern
// (add 0xFFF plus the kept lsb, clear the low 13 bits); the carry may ripple into the exponent,
// which is correct, including overflow to inf and subnormal inputs (same exponent range).
TEST(FormatsTf32, RoundingMatchesBitTrickOnBinary32) {
  auto rng = seeded_rng(9);
  Mismatches mm("tf32 round vs binary32 bit trick");
  auto check = [&](std::uint32_t u) {
    const float x = f32(u);
    if ((u & 0x7F800000u) == 0x7F800000u) {  // inf and NaN pass through
      compare_bits(mm, Format::tf32, x, u & 0xFFFFE000u, std::isnan(x));
      return;
    }
    const std::uint32_t ref = (u + 0xFFFu + ((u >> 13) & 1u)) & 0xFFFFE000u;
    compare_bits(mm, Format::tf32, x, ref, false);
  };
  for (std::uint32_t low : low_patterns(13, rng))
    for (std::uint32_t hi = 0; hi < (1u << 19); ++hi) check((hi << 13) | low);
  for (int i = 0; i < 2'000'000; ++i) check(static_cast<std::uint32_t>(rng()));
}

TEST(FormatsTf32, HandCases) {
  const Format f = Format::tf32;
  EXPECT_EQ(round_to(f, 1.0 + 0x1p-11), 1.0);                  // tie, to even
  EXPECT_EQ(round_to(f, 1.0 + 3 * 0x1p-11), 1.0 + 0x1p-9);     // tie, up to even
  EXPECT_EQ(round_to(f, 1.0 + 0x1p-11 + 0x1p-40), 1.0 + 0x1p-10);
  EXPECT_EQ(round_to(f, 0x1p-136), 0x1p-136);                  // smallest tf32 subnormal
  EXPECT_EQ(round_to(f, 0x1p-137), 0.0);                       // tie with 0
  EXPECT_EQ(round_to(f, 0x1p-149), 0.0);                       // fp32's smallest is below tf32's grid
  const double max = info(f).max_finite;
  EXPECT_EQ(max, 0x1.ffcp127);
  EXPECT_EQ(round_to(f, 0x1.ffep127 - 0x1p80), max);
  EXPECT_EQ(round_to(f, 0x1.ffep127), kInf);                   // max + half ulp (ulp 2^117)
  EXPECT_EQ(round_to(f, FLT_MAX), kInf);
  EXPECT_EQ(to_bits(f, 1.0 + 0x1p-10), 0x3F802000u);            // the 32-bit container
  EXPECT_EQ(to_bits(f, max), 0x7F7FE000u);
  EXPECT_EQ(from_bits(f, 0x3F802000u), 1.0 + 0x1p-10);
  EXPECT_EQ(from_bits(f, 0x3F803FFFu), 1.0 + 0x1p-10);         // low 13 bits ignored
  EXPECT_TRUE(std::isnan(from_bits(f, 0x7F800001u)));           // but a NaN stays NaN
  EXPECT_EQ(from_bits(f, 0x7F800000u), kInf);
  EXPECT_FALSE(is_representable(f, 1.0 + 0x1p-11));
}

TEST(FormatsFp64, IdentityAndBits) {
  auto rng = seeded_rng(10);
  for (int i = 0; i < 100'000; ++i) {
    const std::uint64_t b = rng();
    const double x = std::bit_cast<double>(b);
    if (std::isnan(x)) {
      ASSERT_TRUE(std::isnan(round_to(Format::fp64, x)));
      continue;
    }
    ASSERT_EQ(std::bit_cast<std::uint64_t>(round_to(Format::fp64, x)), b);
    ASSERT_EQ(to_bits(Format::fp64, x), b);
    ASSERT_EQ(std::bit_cast<std::uint64_t>(from_bits(Format::fp64, b)), b);
  }
}

// ---- hand-checked facts (shared/NUMERICS.md) and edge cases for every format -----------------

TEST(FormatsFacts, ExactProductsAndOverflowThresholds) {
  // (1 - 2^-11)^2 = 1 - 2^-10 + 2^-22: exact in binary64 and binary32 (22 bits), not in fp16,
  // where it lies between 1 - 2^-10 and 1 - 2^-11 (spacing 2^-11 below 1), nearer the former.
  const double a = 1.0 - 0x1p-11;
  ASSERT_TRUE(is_representable(Format::fp16, a));
  EXPECT_EQ(a * a, 1.0 - 0x1p-10 + 0x1p-22);
  EXPECT_EQ(round_to(Format::fp32, a * a), a * a);
  EXPECT_EQ(round_to(Format::fp16, a * a), 1.0 - 0x1p-10);
  EXPECT_EQ(round_to(Format::tf32, a * a), 1.0 - 0x1p-10);
  // C = 2^-149 passes through binary32 as a subnormal.
  EXPECT_TRUE(is_representable(Format::fp32, 0x1p-149));

  // Overflow thresholds: max + half ulp goes to inf (or saturates), just below stays finite.
  struct Case { Format f; double threshold; double over; };
  for (const Case& c : {Case{Format::fp16, 65520.0, kInf}, Case{Format::bf16, 0x1.ffp127, kInf},
                        Case{Format::e5m2, 61440.0, kInf}, Case{Format::e4m3, 464.0, 448.0},
                        Case{Format::fp32, 0x1.ffffffp127, kInf}, Case{Format::tf32, 0x1.ffep127, kInf}}) {
    const double max = info(c.f).max_finite;
    EXPECT_EQ(round_to(c.f, std::nextafter(c.threshold, 0.0)), max) << info(c.f).name;
    EXPECT_EQ(round_to(c.f, -std::nextafter(c.threshold, 0.0)), -max) << info(c.f).name;
    if (c.f != Format::e4m3) {
      EXPECT_EQ(round_to(c.f, c.threshold), c.over) << info(c.f).name;
      EXPECT_EQ(round_to(c.f, -c.threshold), -c.over) << info(c.f).name;
    }
    EXPECT_EQ(round_to(c.f, 1e300), c.over) << info(c.f).name;
    EXPECT_EQ(round_to(c.f, kInf), c.over) << info(c.f).name;
    EXPECT_EQ(round_to(c.f, -kInf), -c.over) << info(c.f).name;
  }
  // e4m3: 464 is a tie between 448 (fraction 110, even) and 480 (the NaN slot): stays 448, and
  // anything larger saturates.
  EXPECT_EQ(round_to(Format::e4m3, 464.0), 448.0);
  EXPECT_EQ(round_to(Format::e4m3, 479.0), 448.0);
  EXPECT_FALSE(is_representable(Format::e4m3, 480.0));
  EXPECT_THROW(to_bits(Format::e4m3, kInf), std::invalid_argument);
  EXPECT_EQ(to_bits(Format::e4m3, -448.0), 0xFEu);

  for (Format f : all_formats()) {
    EXPECT_TRUE(std::isnan(round_to(f, kNaN))) << info(f).name;
    EXPECT_TRUE(std::isnan(from_bits(f, to_bits(f, kNaN)))) << info(f).name;
    EXPECT_TRUE(std::signbit(round_to(f, -0.0))) << info(f).name;
    EXPECT_TRUE(std::signbit(round_to(f, -DBL_TRUE_MIN))) << info(f).name;
    EXPECT_EQ(round_to(f, 1.0), 1.0) << info(f).name;
    EXPECT_EQ(round_to(f, -3.0), -3.0) << info(f).name;
  }
}

// ---- MPFR path ------------------------------------------------------------------------------

struct Mpfr {
  mpfr_t v;
  explicit Mpfr(mpfr_prec_t prec = 256) { mpfr_init2(v, prec); }
  ~Mpfr() { mpfr_clear(v); }
  Mpfr(const Mpfr&) = delete;
  Mpfr& operator=(const Mpfr&) = delete;
};

// x = (v + w) / 2 + s * 2^(exponent - 80), formed exactly in MPFR (even where binary64 cannot hold
// the midpoint): for s = +-1 strictly between two doubles.
double round_near_midpoint(Format f, double v, double w, int s) {
  Mpfr x;
  mpfr_set_d(x.v, v, MPFR_RNDN);
  mpfr_add_d(x.v, x.v, w, MPFR_RNDN);
  mpfr_div_2ui(x.v, x.v, 1, MPFR_RNDN);
  if (s != 0 && !mpfr_zero_p(x.v)) {
    Mpfr d;
    mpfr_set_si_2exp(d.v, s, mpfr_get_exp(x.v) - 80, MPFR_RNDN);
    mpfr_add(x.v, x.v, d.v, MPFR_RNDN);  // exact at 256 bits
  }
  return round_to(f, x.v);
}

double round_perturbed(Format f, double m, int s) { return round_near_midpoint(f, m, m, s); }

double round_mpfr(Format f, double x) {
  Mpfr v(64);
  mpfr_set_d(v.v, x, MPFR_RNDN);
  return round_to(f, v.v);
}

TEST(FormatsMpfr, HandCasesBetweenDoubles) {
  // Ties that a detour through binary64 would make: the perturbation decides.
  EXPECT_EQ(round_perturbed(Format::fp16, 1.0 + 0x1p-11, +1), 1.0 + 0x1p-10);
  EXPECT_EQ(round_perturbed(Format::fp16, 1.0 + 0x1p-11, -1), 1.0);
  EXPECT_EQ(round_perturbed(Format::fp16, 1.0 + 3 * 0x1p-11, -1), 1.0 + 0x1p-10);
  EXPECT_EQ(round_perturbed(Format::fp16, 1.0 + 3 * 0x1p-11, +1), 1.0 + 0x1p-9);
  EXPECT_EQ(round_perturbed(Format::fp16, -(1.0 + 0x1p-11), -1), -(1.0 + 0x1p-10));
  // binary64's own midpoints are not doubles: formed from the neighbours in MPFR.
  EXPECT_EQ(round_near_midpoint(Format::fp64, 1.0, 1.0 + 0x1p-52, +1), 1.0 + 0x1p-52);
  EXPECT_EQ(round_near_midpoint(Format::fp64, 1.0, 1.0 + 0x1p-52, 0), 1.0);
  EXPECT_EQ(round_near_midpoint(Format::fp64, 1.0 + 0x1p-52, 1.0 + 0x1p-51, -1), 1.0 + 0x1p-52);
  EXPECT_EQ(round_near_midpoint(Format::fp64, 1.0 + 0x1p-52, 1.0 + 0x1p-51, 0), 1.0 + 0x1p-51);
  EXPECT_EQ(round_perturbed(Format::fp32, 1.0 + 0x1p-24, +1), 1.0 + 0x1p-23);
  EXPECT_EQ(round_perturbed(Format::bf16, 1.0 + 0x1p-8, +1), 1.0 + 0x1p-7);
  EXPECT_EQ(round_perturbed(Format::tf32, 1.0 + 0x1p-11, +1), 1.0 + 0x1p-10);
  EXPECT_EQ(round_perturbed(Format::e4m3, 1.0 + 0x1p-4, +1), 1.0 + 0x1p-3);
  EXPECT_EQ(round_perturbed(Format::e5m2, 1.0 + 0x1p-3, +1), 1.0 + 0x1p-2);
  // Subnormal targets: half the smallest subnormal, just above and just below, and exactly.
  EXPECT_EQ(round_perturbed(Format::fp16, 0x1p-25, +1), 0x1p-24);
  EXPECT_EQ(round_perturbed(Format::fp16, 0x1p-25, -1), 0.0);
  EXPECT_EQ(round_mpfr(Format::fp16, 0x1p-25), 0.0);
  EXPECT_EQ(round_perturbed(Format::fp16, 3 * 0x1p-25, -1), 0x1p-24);
  EXPECT_EQ(round_perturbed(Format::fp16, 3 * 0x1p-25, +1), 0x1p-23);
  EXPECT_EQ(round_perturbed(Format::fp32, 0x1p-150, +1), 0x1p-149);
  EXPECT_EQ(round_perturbed(Format::e4m3, 0x1p-10, +1), 0x1p-9);
  // Overflow thresholds, perturbed.
  EXPECT_EQ(round_perturbed(Format::fp16, 65520.0, -1), 65504.0);
  EXPECT_EQ(round_mpfr(Format::fp16, 65520.0), kInf);
  EXPECT_EQ(round_perturbed(Format::e5m2, 61440.0, -1), 57344.0);
  EXPECT_EQ(round_perturbed(Format::e4m3, 464.0, +1), 448.0);
  EXPECT_EQ(round_perturbed(Format::fp64, DBL_MAX, +1), DBL_MAX);
  // Beyond binary64's range: only MPFR can hold these inputs.
  Mpfr x;
  mpfr_set_ui_2exp(x.v, 1, 2000, MPFR_RNDN);
  EXPECT_EQ(round_to(Format::fp64, x.v), kInf);
  EXPECT_EQ(round_to(Format::e4m3, x.v), 448.0);
  mpfr_neg(x.v, x.v, MPFR_RNDN);
  EXPECT_EQ(round_to(Format::bf16, x.v), -kInf);
  mpfr_set_ui_2exp(x.v, 1, -1075, MPFR_RNDN);  // half of binary64's smallest subnormal: a tie
  EXPECT_EQ(round_to(Format::fp64, x.v), 0.0);
  Mpfr tiny;
  mpfr_set_ui_2exp(tiny.v, 1, -1200, MPFR_RNDN);
  mpfr_add(x.v, x.v, tiny.v, MPFR_RNDN);  // just above the tie
  EXPECT_EQ(round_to(Format::fp64, x.v), 0x1p-1074);
  mpfr_set_ui_2exp(x.v, 3, -1075, MPFR_RNDN);  // 1.5 quanta: tie to even 2 quanta
  EXPECT_EQ(round_to(Format::fp64, x.v), 0x1p-1073);
  mpfr_set_si_2exp(x.v, -1, -5000, MPFR_RNDN);
  EXPECT_EQ(round_to(Format::fp16, x.v), 0.0);
  EXPECT_TRUE(std::signbit(round_to(Format::fp16, x.v)));
  mpfr_set_nan(x.v);
  EXPECT_TRUE(std::isnan(round_to(Format::fp16, x.v)));
  mpfr_set_inf(x.v, -1);
  EXPECT_EQ(round_to(Format::e4m3, x.v), -448.0);
  EXPECT_EQ(round_to(Format::e5m2, x.v), -kInf);
}

// For every format: random midpoints of neighbouring values (the overflow threshold and subnormal
// midpoints included), nudged by +-2^-80 relative, must round to the neighbour on the nudged side;
// the exact midpoint must round to the even one.
TEST(FormatsMpfr, PerturbedMidpointsRoundToTheNearerNeighbour) {
  auto rng = seeded_rng(11);
  for (Format f : all_formats()) {
    Mismatches mm(std::string("mpfr perturbed midpoints ") + info(f).name);
    std::vector<std::pair<double, double>> pairs;
    if (info(f).storage_bits <= 16) {
      pairs = neighbours(f);
    } else {
      // Random patterns plus the bottom and top of the range; tf32 steps by 2^13 in its container.
      const std::uint64_t step = f == Format::tf32 ? 0x2000 : 1;
      const std::uint64_t top = f == Format::fp64 ? 0x7FEFFFFFFFFFFFFFull : (0x7F7FFFFFull & ~(step - 1));
      std::vector<std::uint64_t> bs = {0, step, 2 * step, top - step, top};
      for (int i = 0; i < 100'000; ++i) bs.push_back((rng() % top) & ~(step - 1));
      for (std::uint64_t b : bs) {
        const double v = from_bits(f, b);
        const double w = b == top ? v + (v - from_bits(f, top - step)) : from_bits(f, b + step);
        pairs.emplace_back(v, w);
      }
    }
    for (auto [v, w] : pairs) {
      if (!std::isfinite(w)) continue;  // fp64's top: covered by the hand cases
      const bool over = w > info(f).max_finite;
      const double w_r = over ? (info(f).has_infinity ? kInf : info(f).max_finite) : w;
      const int lsb = f == Format::tf32 ? 13 : 0;  // tf32's last kept bit in its container
      const double even = ((to_bits(f, v) >> lsb) & 1) == 0 ? v : w_r;
      for (int sgn : {1, -1}) {
        mm.checked();
        const double up = round_near_midpoint(f, sgn * v, sgn * w, sgn);
        const double down = round_near_midpoint(f, sgn * v, sgn * w, -sgn);
        const double tie = round_near_midpoint(f, sgn * v, sgn * w, 0);
        if (up != sgn * w_r || down != sgn * v || tie != sgn * even)
          mm.add("v=" + hex(sgn * v) + " w=" + hex(sgn * w) + " up " + hex(up) + " down " + hex(down) +
                 " tie " + hex(tie));
      }
    }
  }
}

TEST(FormatsMpfr, AgreesWithDoublePathOnRandomDoubles) {
  auto rng = seeded_rng(12);
  Mpfr x(53);
  for (Format f : all_formats()) {
    Mismatches mm(std::string("mpfr vs double path ") + info(f).name);
    const int lo = info(f).emin - info(f).precision - 2, hi = info(f).emax + 2;
    for (int i = 0; i < 200'000; ++i) {
      const double d = (i % 4 == 0) ? std::bit_cast<double>(rng()) : random_double(rng, lo, hi);
      mpfr_set_d(x.v, d, MPFR_RNDN);
      const double a = round_to(f, x.v), b = round_to(f, d);
      mm.checked();
      if (!(a == b && std::signbit(a) == std::signbit(b)) && !(std::isnan(a) && std::isnan(b)))
        mm.add("x=" + hex(d) + " mpfr " + hex(a) + " double " + hex(b));
    }
  }
}

TEST(FormatsMpfr, LeavesExponentRangeAloneAndIsThreadSafe) {
  const mpfr_exp_t emin = mpfr_get_emin(), emax = mpfr_get_emax();
  std::vector<std::thread> threads;
  std::vector<int> bad(4, 0);
  for (int t = 0; t < 4; ++t)
    threads.emplace_back([t, &bad] {
      std::mt19937_64 rng(kSeed + t);
      Mpfr x(53);
      for (int i = 0; i < 50'000; ++i) {
        const double d = random_double(rng, -30, 20);
        mpfr_set_d(x.v, d, MPFR_RNDN);
        for (Format f : all_formats())
          if (round_to(f, x.v) != round_to(f, d)) ++bad[t];
      }
    });
  for (auto& th : threads) th.join();
  for (int t = 0; t < 4; ++t) EXPECT_EQ(bad[t], 0) << "thread " << t;
  EXPECT_EQ(mpfr_get_emin(), emin);
  EXPECT_EQ(mpfr_get_emax(), emax);
}

}  // namespace
}  // namespace gemmlab
