// The arithmetic of quantized recipes (reference/quantized_recipe.hpp), written once for the CPU
// (reference/quantized.cpp) and the GPU (experiments/device/quantized_gpu.cu), which therefore give the
// same bits: every floating-point operation is a pfp:: call (unfused binary64 on the host, __ddiv_rn &
// co. on the device), the roundings are pfp::round_format, the rest is integer logic. A block's amax,
// min and max are exact and independent of the order they are taken in.
//
// Why one binary64 quotient then one rounding is the correctly rounded quotient: x (24 bits) divided by
// a scale of at most 28 significant bits (NVFP4's b t; fp32 and bf16 scales have fewer; an E8M0 scale
// divides exactly) is either exactly a rounding midpoint of the target (at most 4 significant bits:
// then the binary64 quotient is exact too) or at least 2^-32 relative away from every midpoint, far
// beyond binary64's 2^-53. The recipes' other two-step operations (uint4's (x - z) / s and min + 8 s)
// are definitions: binary64 operations in this order, rounded as written.
//
// Plain C++: no CUDA header. Under nvcc the functions are __host__ __device__.
#pragma once
#include <cstdint>

#include "reference/portable_fp.hpp"

namespace gemmlab::quant_detail {

// What quantizing one operand needs, as plain data (a GPU kernel takes it by value).
struct QuantPlan {
  int scheme = 0;              // QuantScheme as an int (plain 0, mx 1, nvfp4 2, channel 3, group 4)
  bool zero = false;           // group: uint4 with a zero point
  pfp::FormatParams element;   // the elements' rounding (integers: the grid of integers)
  double element_max = 0;      // largest element magnitude: saturation (6, 7.5, 28, 448, 57344, 127, 7)
  int element_emax = 0;        // MX: the element format's emax
  pfp::FormatParams scale;     // fp32, bf16 or ue4m3 (mx: unused)
  int block_rows = 1, block_cols = 1;  // one scale's block in the operand: A (1, block), B (block, 1)
  int grid_cols = 1;           // scales per row of the scale grid
};

// Why a block has no usable scale (0: it has one). The host turns these into messages.
enum QuantProblem : int {
  quant_ok = 0,
  quant_amax_zero = 1,        // every value of the block is 0: no scale (refused, as scaled fp8 does)
  quant_nonfinite = 2,        // a NaN or infinite source value
  quant_scale_range = 3,      // the scale is 0 in its format, or an E8M0 exponent outside -127 .. 127
  quant_constant_group = 4,   // uint4: max == min, so the scale (max - min) / 15 is 0
  quant_inexact = 5,          // uint4: (q - 8) s + z is not exact in binary64
};

GEMMLAB_HD long long scale_index(const QuantPlan& p, int i, int j) {
  return static_cast<long long>(i / p.block_rows) * p.grid_cols + j / p.block_cols;
}

// floor(log2 |x|) of a finite non-zero binary64 value.
GEMMLAB_HD int floor_log2(double x) {
  const pfp::Split s = pfp::split_magnitude(pfp::bits(x) & 0x7FFFFFFFFFFFFFFFull);
  return s.e + (63 - pfp::clz64(s.m));
}

// The element stored for x under the dequantization scale s: RN(x / s) into the element format,
// saturated to +-element_max (OCP MX's conversion with saturation; e5m2 would otherwise overflow to inf,
// the integers' grid is unbounded).
GEMMLAB_HD double quantize_element(double x, double s, const QuantPlan& p) {
  double q = pfp::round_format(pfp::div(x, s), p.element);
  if (q > p.element_max) q = p.element_max;
  if (q < -p.element_max) q = -p.element_max;
  return q;
}

// MX: the scale 2^e of a block of largest magnitude amax, e = floor(log2 amax) - emax_elem (OCP MX
// v1.0's shared exponent). Refused: amax 0 or non-finite, e outside E8M0's -127 .. 127.
GEMMLAB_HD double mx_scale(double amax, const QuantPlan& p, int* problem) {
  *problem = quant_ok;
  if (!pfp::is_finite(amax)) return *problem = quant_nonfinite, 0.0;
  if (amax == 0.0) return *problem = quant_amax_zero, 0.0;
  const int e = floor_log2(amax) - p.element_emax;
  if (e < -127 || e > 127) return *problem = quant_scale_range, 0.0;
  return pfp::ldexp(1.0, e);
}

// A scale RN_scale(amax / divisor): int8's fp32 amax / 127, int4's bf16 amax / 7, NVFP4's fp32 tensor
// scale amax / (448 6) and its ue4m3 block scale amax_block / (6 t) (divisor 6 t). Refused: amax 0 or
// non-finite, a scale that rounds to 0.
GEMMLAB_HD double ratio_scale(double amax, double divisor, const pfp::FormatParams& f, int* problem) {
  *problem = quant_ok;
  if (!pfp::is_finite(amax)) return *problem = quant_nonfinite, 0.0;
  if (amax == 0.0) return *problem = quant_amax_zero, 0.0;
  const double s = pfp::round_format(pfp::div(amax, divisor), f);
  if (s == 0.0) *problem = quant_scale_range;
  return s;
}

// uint4: the scale RN_bf16((max - min) / 15) and the zero RN_bf16(min + 8 s) of a group.
GEMMLAB_HD double uint4_scale(double mn, double mx, const QuantPlan& p, int* problem) {
  *problem = quant_ok;
  if (!pfp::is_finite(mn) || !pfp::is_finite(mx)) return *problem = quant_nonfinite, 0.0;
  if (mx == mn) return *problem = quant_constant_group, 0.0;
  const double s = pfp::round_format(pfp::div(pfp::sub(mx, mn), 15.0), p.scale);
  if (s == 0.0) *problem = quant_scale_range;
  return s;
}
GEMMLAB_HD double uint4_zero(double mn, double s, const QuantPlan& p) {
  return pfp::round_format(pfp::add(mn, pfp::mul(8.0, s)), p.scale);
}
// uint4: q = RN_int((x - z) / s) + 8, in [0, 15].
GEMMLAB_HD double quantize_uint4(double x, double s, double z, const QuantPlan& p) {
  double q = pfp::add(pfp::round_format(pfp::div(pfp::sub(x, z), s), p.element), 8.0);
  if (q < 0.0) q = 0.0;
  if (q > 15.0) q = 15.0;
  return q;
}

// The dequantized value of element q under its block's scale s (and zero z, tensor scale t):
//  plain q;  mx, channel, int4 q s;  nvfp4 q (s t);  uint4 (q - 8) s + z.
// Exact in binary64 (at most 2 + 4 + 24 bits; uint4's sum is checked: *inexact set when it rounded).
GEMMLAB_HD double dequantize(double q, double s, double z, double t, const QuantPlan& p, bool* inexact) {
  switch (p.scheme) {
    case 0: return q;
    case 2: return pfp::mul(q, pfp::mul(s, t));
    case 4:
      if (p.zero) {
        const pfp::DD r = pfp::two_sum(pfp::mul(pfp::sub(q, 8.0), s), z);
        if (r.lo != 0.0) *inexact = true;
        return r.hi;
      }
      return pfp::mul(q, s);
    default: return pfp::mul(q, s);
  }
}

// An operand of unit scale (every scale 1, NVFP4's tensor scale 1, uint4's zero 0): the element that holds v,
// so that the dequantized value is v exactly (uint4: q = v + 8). Returns false where no element does (v outside
// the element's values, or not finite): *q is then the element nearest it. A plain operand (bf16, fp16) holds
// every value of its format, NaN and the infinities among them. gemmlab explain writes its probes into a quantized
// kernel's tensors this way.
GEMMLAB_HD bool unit_scale_element(double v, const QuantPlan& p, double* q) {
  if (p.scheme == 0 && !pfp::is_finite(v)) return *q = v, true;
  *q = p.scheme == 0 ? pfp::round_format(v, p.element)
       : p.zero      ? quantize_uint4(v, 1.0, 0.0, p)
                     : quantize_element(v, 1.0, p);
  bool inexact = false;
  const double back = dequantize(*q, 1.0, 0.0, 1.0, p, &inexact);
  return pfp::is_finite(v) && !inexact && back == v;
}

// ---- where an int8 kernel applies its scales (QuantScales::output) ----------------------------------------

// The fp32 epilogues an int8 rowwise kernel may compute from its exact int32 sum S (|S| < 2^31: exact in fp32's
// conversion input) and its row's and column's fp32 scales sa, sb, each operation rounded to nearest even in fp32
// (the words of numerics.hpp's ScaleApplication):
//  0 epilogue_mul_mul     RN(RN(RN(S) sa) sb)   (torch: (C.float() * a_scale[:, None]) * b_scale)
//  1 epilogue_mul_mul_ba  RN(RN(RN(S) sb) sa)
//  2 epilogue             RN(RN(S) RN(sa sb))
//  3 once                 RN(S sa sb): the exact value rounded once (an epilogue in higher precision)
// Every product of two fp32 values is exact in binary64, so each RN above is one round_format; `once` rounds the
// 79-bit S sa sb through its binary64 pair hi + lo (Dekker's product), deciding a midpoint of hi by lo's sign.
constexpr int kEpilogueCandidates = 4;
GEMMLAB_HD double fp32_product(double x, double y) {
  pfp::FormatParams f;
  f.precision = 24, f.emin = -126, f.max_finite = 0x1.fffffep+127, f.has_infinity = true, f.identity = false;
  return pfp::round_format(pfp::mul(x, y), f);
}
GEMMLAB_HD double fp32_rounded(double x) {
  pfp::FormatParams f;
  f.precision = 24, f.emin = -126, f.max_finite = 0x1.fffffep+127, f.has_infinity = true, f.identity = false;
  return pfp::round_format(x, f);
}
GEMMLAB_HD void epilogue_candidates(double S, double sa, double sb, double* out) {
  const double s = fp32_rounded(S);
  out[0] = fp32_product(fp32_product(s, sa), sb);
  out[1] = fp32_product(fp32_product(s, sb), sa);
  out[2] = fp32_product(s, fp32_product(sa, sb));
  // once: p = sa sb (exact, 48 bits), S p = hi + lo exactly (Veltkamp's split of both, |S| < 2^31).
  const double p = pfp::mul(sa, sb), hi = pfp::mul(p, S);
  const double cp = pfp::mul(134217729.0, p), ph = pfp::sub(cp, pfp::sub(cp, p)), pl = pfp::sub(p, ph);
  const double cs = pfp::mul(134217729.0, S), sh = pfp::sub(cs, pfp::sub(cs, S)), sl = pfp::sub(S, sh);
  const double lo = pfp::add(pfp::add(pfp::add(pfp::sub(pfp::mul(ph, sh), hi), pfp::mul(ph, sl)), pfp::mul(pl, sh)),
                             pfp::mul(pl, sl));
  double r = fp32_rounded(hi);
  pfp::FormatParams half;  // the grid of fp32's midpoints: one more bit
  half.precision = 25, half.emin = -126, half.max_finite = 0x1.ffffffp+127, half.has_infinity = true, half.identity = false;
  if (lo != 0.0 && r != hi && pfp::round_format(hi, half) == hi) {  // hi is a midpoint: lo's sign decides
    const double other = pfp::sub(pfp::mul(2.0, hi), r);           // hi's other fp32 neighbour
    if ((lo > 0) == (other > r)) r = other;
  }
  out[3] = r;
}

// ---- codes of the kernel layouts (reference/quantized_layout.hpp) -------------------------------------

// How an element or scale value is encoded in a kernel's tensor: a binary format (sign bits, exponent bits,
// fraction bits, exponent bias), E8M0 (2^e as e + 127), or a two's complement / unsigned integer of `bits`.
struct Code {
  int kind = 0;  // 0 binary format, 1 e8m0, 2 integer
  int sign_bits = 1, exp_bits = 0, frac_bits = 0, bias = 0;
  int bits = 8;  // the code's width
};

// The code of v, a value of the format (exact). A NaN or an infinity reaches a kernel's tensor only on a plain
// operand (bf16, fp16: explain's probes, unit_scale_element), as IEEE codes them: the exponent all ones, the
// fraction's top bit (a quiet NaN) or 0 (an infinity).
GEMMLAB_HD std::uint32_t encode(double v, const Code& c) {
  if (c.kind == 2) return static_cast<std::uint32_t>(static_cast<long long>(v)) & ((1u << c.bits) - 1);
  if (c.kind == 1) return static_cast<std::uint32_t>(floor_log2(v) + 127);
  const std::uint32_t sign = c.sign_bits && (pfp::bits(v) >> 63) ? 1u << (c.exp_bits + c.frac_bits) : 0u;
  if (!pfp::is_finite(v))
    return sign | (((1u << c.exp_bits) - 1) << c.frac_bits) | (pfp::is_nan(v) ? 1u << (c.frac_bits - 1) : 0u);
  const double a = pfp::fabs(v);
  if (a == 0.0) return sign;
  const int emin = 1 - c.bias;
  const int e = floor_log2(a);
  if (e < emin)  // subnormal: a = frac 2^(emin - frac_bits)
    return sign | static_cast<std::uint32_t>(pfp::ldexp(a, c.frac_bits - emin));
  const auto sig = static_cast<std::uint32_t>(pfp::ldexp(a, c.frac_bits - e));  // in [2^f, 2^(f+1))
  return sign | (static_cast<std::uint32_t>(e + c.bias) << c.frac_bits) | (sig & ((1u << c.frac_bits) - 1));
}

// The word at index t (row-major) of an operand's element tensor, from its element values q(i, j) (rows,
// cols): one code per word, or two 4-bit codes per byte along K (A: q(i, 2c) low, q(i, 2c + 1) high, over
// (rows, cols / 2); B: q(2r, j) low, q(2r + 1, j) high, over (rows / 2, cols)).
struct ElementPack {
  Code code;
  bool two_per_byte = false;
  bool operand_a = true;
  int rows = 0, cols = 0;  // the operand's
};
template <class Q>
GEMMLAB_HD std::uint32_t element_word(const Q& q, long long t, const ElementPack& p) {
  if (!p.two_per_byte) return encode(q(static_cast<int>(t / p.cols), static_cast<int>(t % p.cols)), p.code);
  if (p.operand_a) {
    const int half = p.cols / 2, i = static_cast<int>(t / half), c = static_cast<int>(t % half);
    return encode(q(i, 2 * c), p.code) | encode(q(i, 2 * c + 1), p.code) << 4;
  }
  const int r = static_cast<int>(t / p.cols), j = static_cast<int>(t % p.cols);
  return encode(q(2 * r, j), p.code) | encode(q(2 * r + 1, j), p.code) << 4;
}

// The word at index t of a scale (or zero) tensor, from the (grid_rows, grid_cols) row-major grid g: the grid
// itself, or (transposed: B's MX and NVFP4 scales) the (grid_cols, grid_rows) transpose.
struct ScalePack {
  Code code;
  bool transposed = false;
  int grid_rows = 0, grid_cols = 0;
};
template <class G>
GEMMLAB_HD std::uint32_t scale_word(const G& g, long long t, const ScalePack& p) {
  if (!p.transposed) return encode(g(t), p.code);
  const long long n = t / p.grid_rows, kb = t % p.grid_rows;
  return encode(g(kb * p.grid_cols + n), p.code);
}

}  // namespace gemmlab::quant_detail
