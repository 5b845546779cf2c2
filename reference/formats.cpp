// Number formats: table, rounding from binary64, bit patterns.
//
// Numerics: every format here is a binary floating-point format described by (precision p, emin,
// emax); its finite values are the multiples of 2^(max(e, emin) - p + 1) with at most p significant
// bits, e = floor(log2 |x|). round_to works on the exact integer significand of the input double
// (x = m * 2^e, m < 2^53), shifts it to the target quantum and applies round-to-nearest-even on the
// shifted-out bits: one rounding, exact integer arithmetic, no dependence on the FPU rounding mode
// and no intermediate float (so no double rounding, also for subnormal targets).
// Overflow is decided on the rounded value with an unbounded exponent: it overflows exactly when
// |x| >= max_finite + ulp(max_finite)/2 (the tie goes up because max_finite's significand is odd),
// which is IEEE 754's rule. e4m3's grid also contains 480 = 1.111b * 2^8, which is its NaN
// encoding, so there "overflow" means a rounded magnitude above 448; e4m3 then saturates.
// The quantized formats are the same kind of grid: the fp6 and fp4 elements and ue4m3 are binary
// formats without infinity; ue8m0 is the grid of one significant bit (every value a power of two);
// an integer format is a grid whose every magnitude is subnormal (emin = p - 1, quantum 2^0 = 1), so
// rounding onto it is rounding to the nearest integer, ties to even. Their ranges are not symmetric
// (int8's -128, the unsigned formats' 0, ue8m0's 2^-127): finish_rounding saturates to [lowest,
// max_finite].
#include "reference/formats.hpp"

#include <bit>
#include <cmath>
#include <cstring>
#include <iterator>
#include <limits>
#include <stdexcept>

namespace gemmlab {

const char* to_string(Rounding r) {
  switch (r) {
    case Rounding::nearest_even: return "nearest_even";
    case Rounding::toward_zero: return "toward_zero";
    case Rounding::floor: return "floor";
    case Rounding::unknown: return "unknown";
  }
  return "?";
}

std::optional<Rounding> parse_rounding(std::string_view name) {
  for (Rounding r : {Rounding::nearest_even, Rounding::toward_zero, Rounding::floor, Rounding::unknown})
    if (name == to_string(r)) return r;
  return std::nullopt;
}

namespace {

// Encoding of a format in its storage: sign (sign_bits: 1, or 0 for the unsigned formats) | exponent
// field (exp_bits) | fraction (p - 1 bits), exponent bias 1 - emin. tf32 is encoded as the binary32
// pattern of its (exactly representable) value, so it is handled through fp32's encoding. ue8m0 and
// the integers are encoded apart (to_bits, from_bits).
struct Encoding {
  int sign_bits;
  int exp_bits;
  int frac_bits;
  std::uint64_t canonical_nan;  // quiet NaN, positive sign (0 where the format has none)
};

constexpr double kInf = std::numeric_limits<double>::infinity();
constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();

// Table order follows enum Format.
const FormatInfo kInfo[] = {
    {Format::fp64, "fp64", 53, -1022, 1023, 64, true, std::numeric_limits<double>::max(), 0x1p-53,
     -std::numeric_limits<double>::max()},
    {Format::fp32, "fp32", 24, -126, 127, 32, true, 0x1.fffffep+127, 0x1p-24, -0x1.fffffep+127},
    {Format::tf32, "tf32", 11, -126, 127, 32, true, 0x1.ffcp+127, 0x1p-11, -0x1.ffcp+127},
    {Format::fp16, "fp16", 11, -14, 15, 16, true, 65504.0, 0x1p-11, -65504.0},
    {Format::bf16, "bf16", 8, -126, 127, 16, true, 0x1.fep+127, 0x1p-8, -0x1.fep+127},
    {Format::e4m3, "e4m3", 4, -6, 8, 8, false, 448.0, 0x1p-4, -448.0},
    {Format::e5m2, "e5m2", 3, -14, 15, 8, true, 57344.0, 0x1p-3, -57344.0},
    {Format::e2m1, "e2m1", 2, 0, 2, 4, false, 6.0, 0x1p-2, -6.0, false},
    {Format::e2m3, "e2m3", 4, 0, 2, 6, false, 7.5, 0x1p-4, -7.5, false},
    {Format::e3m2, "e3m2", 3, -2, 4, 6, false, 28.0, 0x1p-3, -28.0, false},
    {Format::ue8m0, "ue8m0", 1, -127, 127, 8, false, 0x1p127, 0x1p-1, 0x1p-127},
    {Format::ue4m3, "ue4m3", 4, -6, 8, 8, false, 448.0, 0x1p-4, 0.0},
    {Format::int8, "int8", 8, 7, 6, 8, false, 127.0, 0.5, -128.0, false, true},
    {Format::int4, "int4", 4, 3, 2, 4, false, 7.0, 0.5, -8.0, false, true},
    {Format::uint4, "uint4", 4, 3, 3, 4, false, 15.0, 0.5, 0.0, false, true},
};

const Encoding kEncoding[] = {
    {1, 11, 52, 0x7FF8000000000000ull},  // fp64
    {1, 8, 23, 0x7FC00000ull},           // fp32
    {1, 8, 23, 0x7FC00000ull},           // tf32 (its fp32 container)
    {1, 5, 10, 0x7E00ull},               // fp16
    {1, 8, 7, 0x7FC0ull},                // bf16
    {1, 4, 3, 0x7Full},                  // e4m3: S.1111.111 is its only NaN
    {1, 5, 2, 0x7Eull},                  // e5m2: what cuda_fp8.h returns for a NaN input
    {1, 2, 1, 0},                        // e2m1: no NaN
    {1, 2, 3, 0},                        // e2m3
    {1, 3, 2, 0},                        // e3m2
    {0, 8, 0, 0xFFull},                  // ue8m0 (encoded apart: bias 127, no zero)
    {0, 4, 3, 0x7Full},                  // ue4m3: .1111.111 is its only NaN
    {1, 0, 7, 0},                        // int8 (two's complement, encoded apart)
    {1, 0, 3, 0},                        // int4
    {0, 0, 4, 0},                        // uint4
};

int index_of(Format f) {
  const int i = static_cast<int>(f);
  if (i < 0 || i >= static_cast<int>(std::size(kInfo)))
    throw std::invalid_argument("gemmlab: invalid Format value " + std::to_string(i));
  return i;
}

// Round |x| (finite, non-zero, as m * 2^e) to p bits with quantum floor 2^(emin - p + 1).
// Returns the magnitude of the result, before the overflow check (it may exceed max_finite).
double round_magnitude(double ax, int p, int emin) {
  std::uint64_t bits = std::bit_cast<std::uint64_t>(ax);
  const int biased = static_cast<int>(bits >> 52);
  std::uint64_t m = bits & ((1ull << 52) - 1);
  int e;
  if (biased == 0) {
    e = -1074;  // subnormal double
  } else {
    m |= 1ull << 52;
    e = biased - 1075;
  }
  const int top = e + (63 - std::countl_zero(m));  // floor(log2 |x|)
  const int quantum = (top > emin ? top : emin) - (p - 1);
  const int shift = quantum - e;
  if (shift <= 0) return ax;  // already on the grid (at most p significant bits above the quantum)
  if (shift > 54) return 0.0;  // m < 2^53 <= 2^(shift-2): less than half a quantum
  std::uint64_t q = m >> shift;
  const std::uint64_t rem = m & ((1ull << shift) - 1);
  const std::uint64_t half = 1ull << (shift - 1);
  if (rem > half || (rem == half && (q & 1))) ++q;
  return std::ldexp(static_cast<double>(q), quantum);  // q <= 2^p: exact
}

}  // namespace

const FormatInfo& info(Format f) { return kInfo[index_of(f)]; }

std::optional<Format> parse_format(std::string_view name) {
  for (Format f : all_formats())
    if (name == info(f).name) return f;
  return std::nullopt;
}

std::optional<Format> parse_any_format(std::string_view name) {
  for (const FormatInfo& i : kInfo)
    if (name == i.name) return i.format;
  return std::nullopt;
}

const std::vector<Format>& all_formats() {
  static const std::vector<Format> formats = {Format::fp64, Format::fp32, Format::tf32, Format::fp16,
                                              Format::bf16, Format::e4m3, Format::e5m2};
  return formats;
}

const std::vector<Format>& quantized_formats() {
  static const std::vector<Format> formats = {Format::e2m1,  Format::e2m3, Format::e3m2, Format::ue8m0,
                                              Format::ue4m3, Format::int8, Format::int4, Format::uint4};
  return formats;
}

double finish_rounding(Format f, bool negative, double magnitude) {
  const FormatInfo& fi = info(f);
  double r = negative ? -magnitude : magnitude;
  if (r > fi.max_finite) r = fi.has_infinity ? kInf : fi.max_finite;
  if (r < fi.lowest) r = fi.has_infinity ? -kInf : fi.lowest;
  if (r == 0.0 && fi.lowest >= 0.0) r = 0.0;  // an unsigned format has no -0
  return r;
}

double round_to(Format f, double x) {
  const FormatInfo& fi = info(f);
  if (f == Format::fp64 || std::isnan(x)) return x;
  const double ax = std::fabs(x);
  if (ax == 0.0) return finish_rounding(f, std::signbit(x), 0.0);
  const double r = std::isinf(ax) ? kInf : round_magnitude(ax, fi.precision, fi.emin);
  return finish_rounding(f, std::signbit(x), r);
}

pfp::FormatParams format_params(Format f) {
  const FormatInfo& fi = info(f);
  pfp::FormatParams p;
  p.precision = fi.precision;
  p.emin = fi.emin;
  p.max_finite = fi.max_finite;
  p.has_infinity = fi.has_infinity;
  p.identity = f == Format::fp64;
  return p;
}

bool is_representable(Format f, double x) {
  const FormatInfo& fi = info(f);
  if (std::isnan(x)) return fi.has_nan;
  if (std::isinf(x)) return fi.has_infinity;
  if (x == 0.0 && fi.lowest >= 0.0) return fi.lowest == 0.0 && !std::signbit(x);  // unsigned: +0 only; ue8m0: none
  return round_to(f, x) == x;
}

std::uint64_t to_bits(Format f, double x) {
  const FormatInfo& fi = info(f);
  const Encoding& enc = kEncoding[index_of(f)];
  if (f == Format::fp64) return std::isnan(x) ? enc.canonical_nan : std::bit_cast<std::uint64_t>(x);
  if (!is_representable(f, x))
    throw std::invalid_argument(std::string("gemmlab::to_bits: value is not representable in ") +
                                fi.name + "; round it with round_to first");
  if (std::isnan(x)) return enc.canonical_nan;
  if (fi.integer) {  // two's complement in storage_bits bits
    const auto v = static_cast<std::int64_t>(x);
    return static_cast<std::uint64_t>(v) & ((1ull << fi.storage_bits) - 1);
  }
  if (f == Format::ue8m0) {  // 2^e -> e + 127
    int e;
    std::frexp(x, &e);
    return static_cast<std::uint64_t>(e - 1 + 127);
  }
  const int total_bits = enc.sign_bits + enc.exp_bits + enc.frac_bits;
  const std::uint64_t sign = enc.sign_bits && std::signbit(x) ? 1ull << (total_bits - 1) : 0;
  const double ax = std::fabs(x);
  const std::uint64_t exp_all_ones = (1ull << enc.exp_bits) - 1;
  if (std::isinf(ax)) return sign | (exp_all_ones << enc.frac_bits);
  if (ax == 0.0) return sign;
  // tf32 goes through its fp32 container: the same encoding with fp32's precision.
  const int p = enc.frac_bits + 1;
  const int bias = 1 - fi.emin;
  int e;
  std::frexp(ax, &e);
  e -= 1;  // floor(log2 ax)
  if (e < fi.emin) {
    // Subnormal: ax = frac * 2^(emin - p + 1), exponent field 0.
    const auto frac = static_cast<std::uint64_t>(std::ldexp(ax, -(fi.emin - p + 1)));
    return sign | frac;
  }
  const auto sig = static_cast<std::uint64_t>(std::ldexp(ax, -(e - p + 1)));  // in [2^(p-1), 2^p)
  const std::uint64_t field = static_cast<std::uint64_t>(e + bias);
  return sign | (field << enc.frac_bits) | (sig & ((1ull << enc.frac_bits) - 1));
}

// Decodes a pattern of the format's storage width (higher bits are ignored). tf32: the low 13
// fraction bits of the 32-bit container are ignored (as the tensor cores do with tf32 operands),
// except that a NaN stays NaN even if its payload lies only in those bits.
double from_bits(Format f, std::uint64_t bits) {
  const FormatInfo& fi = info(f);
  const Encoding& enc = kEncoding[index_of(f)];
  if (f == Format::fp64) return std::bit_cast<double>(bits);
  if (fi.integer) {
    bits &= (1ull << fi.storage_bits) - 1;
    const bool neg = fi.lowest < 0 && ((bits >> (fi.storage_bits - 1)) & 1);
    return neg ? static_cast<double>(bits) - std::ldexp(1.0, fi.storage_bits) : static_cast<double>(bits);
  }
  if (f == Format::ue8m0) {
    bits &= 0xFF;
    return bits == 0xFF ? kNaN : std::ldexp(1.0, static_cast<int>(bits) - 127);
  }
  const int total_bits = enc.sign_bits + enc.exp_bits + enc.frac_bits;
  if (total_bits < 64) bits &= (1ull << total_bits) - 1;
  const bool neg = enc.sign_bits && ((bits >> (total_bits - 1)) & 1);
  const std::uint64_t field = (bits >> enc.frac_bits) & ((1ull << enc.exp_bits) - 1);
  std::uint64_t frac = bits & ((1ull << enc.frac_bits) - 1);
  const std::uint64_t exp_all_ones = (1ull << enc.exp_bits) - 1;
  const std::uint64_t frac_all_ones = (1ull << enc.frac_bits) - 1;
  double r;
  if (fi.has_infinity && field == exp_all_ones) {
    r = frac == 0 ? kInf : kNaN;
  } else if (fi.has_nan && !fi.has_infinity && field == exp_all_ones && frac == frac_all_ones) {
    r = kNaN;  // e4m3: S.1111.111; ue4m3: .1111.111
  } else {
    if (f == Format::tf32) frac &= ~((1ull << 13) - 1);
    const int p = enc.frac_bits + 1;
    if (field == 0) {
      r = std::ldexp(static_cast<double>(frac), fi.emin - p + 1);
    } else {
      const int e = static_cast<int>(field) - (1 - fi.emin);
      r = std::ldexp(static_cast<double>(frac | (1ull << enc.frac_bits)), e - p + 1);
    }
  }
  return neg ? -r : r;
}

}  // namespace gemmlab
