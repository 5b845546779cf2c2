// Number formats gemmlab knows: binary64, binary32, tf32, binary16, bfloat16, fp8 e4m3 and e5m2 (the
// formats of a run's operands and outputs: all_formats()), and the element and scale formats of
// quantized operands (quantized_formats(): OCP MX's fp6 and fp4 elements and E8M0 scales, NVFP4's
// unsigned E4M3 scales, int8 and int4; reference/quantized.hpp).
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

// The quantized formats come after the run formats, so that a run format's value (and the table's
// order) is what it was before them.
//  e2m1   OCP MX FP4: 1 sign, 2 exponent (bias 1), 1 fraction bit; 0, 0.5, 1, 1.5, 2, 3, 4, 6; no Inf, no NaN
//  e2m3   OCP MX FP6: 1, 2 (bias 1), 3 bits; subnormals k/8, largest 7.5; no Inf, no NaN
//  e3m2   OCP MX FP6: 1, 3 (bias 3), 2 bits; subnormals k/16, largest 28; no Inf, no NaN
//  ue8m0  OCP MX scale: 8 exponent bits (bias 127), no sign, no fraction: 2^-127 .. 2^127; 0xFF is NaN;
//         no zero
//  ue4m3  NVFP4's block scale: e4m3 without its sign bit (bit 7 is 0): 0 .. 448; 0x7F is NaN
//  int8   two's complement, -128 .. 127;  int4: -8 .. 7;  uint4: 0 .. 15 (no Inf, no NaN)
enum class Format { fp64, fp32, tf32, fp16, bf16, e4m3, e5m2, e2m1, e2m3, e3m2, ue8m0, ue4m3, int8, int4, uint4 };

struct FormatInfo {
  Format format;
  const char* name;       // "fp64", "fp32", "tf32", "fp16", "bf16", "e4m3", "e5m2", "e2m1", ...: used in CLI and CSV
  int precision;          // significand bits including the implicit one (fp32: 24, fp16: 11, e4m3: 4, e2m1: 2);
                          // integers: bits of the magnitudes below 2^precision (int8: 8, int4 and uint4: 4)
  int emin;               // exponent of the smallest normal number (fp16: -14); integers: precision - 1, so
                          // that every magnitude on the grid is a multiple of 2^(emin - precision + 1) = 1
  int emax;               // exponent of the largest finite number (fp16: 15; e4m3: 8; int8: 6)
  int storage_bits;       // bits of the encoding (tf32 is stored as a 32-bit float with the low 13 bits zero)
  bool has_infinity;      // false for e4m3 (saturating, NaN only) and every quantized format
  double max_finite;      // 65504 for fp16, 448 for e4m3, 57344 for e5m2, 6 for e2m1, 127 for int8
  double unit_roundoff;   // u = 2^-precision; integers: 1/2, the absolute rounding error of one step
  // Facts the run formats share (signed, symmetric, a NaN) and the quantized ones may not.
  double lowest = 0;      // the most negative finite value: -max_finite for the signed floating-point formats,
                          // 0 for ue4m3 and uint4, 2^-127 for ue8m0 (no zero), -128 for int8, -8 for int4
  bool has_nan = true;    // false for e2m1, e2m3, e3m2 and the integers
  bool integer = false;   // int8, int4, uint4
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
// The run formats by name (the formats of all_formats()); the quantized formats' names are not run formats.
std::optional<Format> parse_format(std::string_view name);
// The formats a run's operands and outputs may have: fp64, fp32, tf32, fp16, bf16, e4m3, e5m2.
const std::vector<Format>& all_formats();
// The element and scale formats of quantized operands (reference/quantized.hpp): e2m1, e2m3, e3m2, ue8m0,
// ue4m3, int8, int4, uint4. (e4m3 and e5m2 are MX elements too, and run formats.) No kernel's operands or
// output have them: a quantized operand reaches a kernel as its elements and scales.
const std::vector<Format>& quantized_formats();
// Any format by name, run or quantized.
std::optional<Format> parse_any_format(std::string_view name);

// Round a double to the format, round-to-nearest-even, with gradual underflow (subnormals).
// Overflow: to +-infinity where the format has one; for e4m3 (no infinity) saturate to +-max_finite,
// matching cuda_fp8.h's __NV_SATFINITE. NaN stays NaN. fp64 is the identity.
// The quantized formats follow OCP MX v1.0's conversion with saturation: a value beyond
// the range goes to the nearest end of it ([lowest, max_finite]; an unsigned format takes a negative
// value to 0, ue8m0 takes 0 and negative values to 2^-127); the integers round to the nearest integer,
// ties to even. NaN stays NaN (a value e2m1, e2m3, e3m2 and the integers cannot hold: is_representable
// is false). ue8m0's grid has one significant bit, so a tie (1.5 2^e) goes up to 2^(e+1).
double round_to(Format f, double x);
// The end of a rounding shared by the binary64 and the MPFR paths: the signed value of a magnitude
// rounded onto f's grid with an unbounded exponent (infinity when it overflowed binary64), put into f's
// range as round_to says (overflow, saturation, the unsigned and integer formats' ends).
double finish_rounding(Format f, bool negative, double magnitude);
// The rounding parameters of a format for pfp::round_format, the same rounding as round_to written
// for the host and the GPU alike (reference/portable_fp.hpp).
pfp::FormatParams format_params(Format f);

// Bit patterns. to_bits requires x to be representable in f (call round_to first); NaN maps to the
// format's canonical NaN. tf32 uses its 32-bit container (fp32 bits with the low 13 bits zero).
// ue8m0: the exponent field e + 127 of 2^e; int8 / int4: two's complement in 8 / 4 bits.
std::uint64_t to_bits(Format f, double x);
double from_bits(Format f, std::uint64_t bits);
bool is_representable(Format f, double x);

}  // namespace gemmlab
