// Number formats gemmlab knows: binary64, binary32, tf32, binary16, bfloat16, fp8 e4m3 and e5m2.
// Plain C++ (no CUDA header). Every value of every format is exactly representable in a double,
// so values travel as double and bit patterns as uint64_t (low bits used).
#pragma once
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "reference/portable_fp.hpp"

namespace gemmlab {

enum class Format { fp64, fp32, tf32, fp16, bf16, e4m3, e5m2 };

struct FormatInfo {
  Format format;
  const char* name;       // "fp64", "fp32", "tf32", "fp16", "bf16", "e4m3", "e5m2": used in CLI and CSV
  int precision;          // significand bits including the implicit one (fp32: 24, fp16: 11, e4m3: 4)
  int emin;               // exponent of the smallest normal number (fp16: -14)
  int emax;               // exponent of the largest finite number (fp16: 15; e4m3: 8)
  int storage_bits;       // bits of the encoding (tf32 is stored as a 32-bit float with the low 13 bits zero)
  bool has_infinity;      // false for e4m3 (saturating, NaN only)
  double max_finite;      // 65504 for fp16, 448 for e4m3, 57344 for e5m2
  double unit_roundoff;   // u = 2^-precision
};

const FormatInfo& info(Format f);

// gemmlab's one rounding vocabulary, used for the accumulation of a kernel (Numerics), the
// alignment and output of a tensor-core instruction (tc::TcParams) and the rounding helpers:
//  nearest_even  round to nearest, ties to even
//  toward_zero   truncate the magnitude
//  floor         toward -infinity (two's-complement truncation)
//  unknown       not known (a library's internals): judged as the weaker toward_zero
enum class Rounding { nearest_even, toward_zero, floor, unknown };
const char* to_string(Rounding r);
std::optional<Rounding> parse_rounding(std::string_view name);  // the words of to_string
std::optional<Format> parse_format(std::string_view name);
const std::vector<Format>& all_formats();

// Round a double to the format, round-to-nearest-even, with gradual underflow (subnormals).
// Overflow: to +-infinity where the format has one; for e4m3 (no infinity) saturate to +-max_finite,
// matching cuda_fp8.h's __NV_SATFINITE. NaN stays NaN. fp64 is the identity.
double round_to(Format f, double x);
// The rounding parameters of a format for pfp::round_format, the same rounding as round_to written
// for the host and the GPU alike (reference/portable_fp.hpp).
pfp::FormatParams format_params(Format f);

// Bit patterns. to_bits requires x to be representable in f (call round_to first); NaN maps to the
// format's canonical NaN. tf32 uses its 32-bit container (fp32 bits with the low 13 bits zero).
std::uint64_t to_bits(Format f, double x);
double from_bits(Format f, std::uint64_t bits);
bool is_representable(Format f, double x);

}  // namespace gemmlab
