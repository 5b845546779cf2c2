// Blackwell's block-scaled tensor-core instructions: MMA-Sim's arithmetic (see tc_block_scaled.hpp).
// A MODEL FROM THE LITERATURE; no gemmlab probe has run it.
//
// Exactness: a term is a sign, an integer significand m with `frac` fraction bits, and an exponent e (its
// value m 2^(e - frac)). Aligned to the largest exponent E with F fraction bits, its contribution is the
// integer trunc(m 2^(F + e - E - frac)): at most 2^33 (k32: an 8-bit product shifted by at most 25) or 2^46
// (k64: a 19-bit group term shifted by at most 27), so the sums of 33 or 5 of them are exact in int64.
#include "reference/tc_block_scaled.hpp"

#include <algorithm>
#include <bit>
#include <cfloat>
#include <cmath>
#include <cstdint>
#include <limits>
#include <stdexcept>
#include <string>

#include "reference/tc_infer.hpp"

namespace gemmlab::tc {
namespace {

constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();
constexpr double kInf = std::numeric_limits<double>::infinity();

const BlockScaledInfo kInfo[] = {
    {BlockScaledKind::mxf8f6f4, "tcgen05_mxf8f6f4", 32, 25, 100, 32},
    {BlockScaledKind::mxf4, "tcgen05_mxf4", 64, 35, 100, 32},
    {BlockScaledKind::mxf4nvf4, "tcgen05_mxf4nvf4", 64, 35, 100, 16},
};

// A finite value as (sign, integer significand m with frac = p - 1 fraction bits, exponent e): MMA-Sim's
// extract_significand_exponent for the format (a value below the normal range keeps e = emin; a zero is
// (0, -126) whatever the format).
struct Term {
  bool negative = false;
  std::int64_t m = 0;
  int frac = 0;
  int e = 0;
};

int floor_log2(double x) {
  int e;
  std::frexp(x, &e);
  return e - 1;
}

Term term_of(double x, Format f) {
  const FormatInfo& fi = info(f);
  Term t;
  t.negative = std::signbit(x);
  t.frac = fi.precision - 1;
  const double ax = std::fabs(x);
  if (ax == 0.0) {
    t.e = -126;
    return t;
  }
  t.e = std::max(floor_log2(ax), fi.emin);
  t.m = static_cast<std::int64_t>(std::ldexp(ax, t.frac - t.e));  // exact: a value of f on its grid
  return t;
}

void check_value(double x, Format f, const char* what) {
  if (!std::isnan(x) && !is_representable(f, x))
    throw std::invalid_argument(std::string("tcgen05 block-scaled model: ") + what + " " + std::to_string(x) +
                                " is not a value of " + info(f).name);
}

// trunc(m 2^shift) for an integer magnitude m.
std::int64_t shifted(std::int64_t m, int shift) {
  if (shift >= 0) return m << shift;
  return -shift >= 63 ? 0 : m >> -shift;
}

// A term's value, exactly: m 2^(e - frac) (scales included).
double value_of(const Term& t) {
  const double v = std::ldexp(static_cast<double>(t.m), t.e - t.frac);
  return t.negative ? -v : v;
}

// The terms aligned to their largest exponent with F fraction bits, truncated toward zero, summed exactly,
// and written to fp32 toward zero (fp32's subnormal grid below 2^-126; beyond its range, infinity).
// names[i] names terms[i] in the trace.
double fused_sum_to_fp32(const Term* terms, const std::string* names, int n, int F, BlockScaledTrace* trace) {
  int E = terms[0].e, from = 0;
  for (int i = 1; i < n; ++i)
    if (terms[i].e > E) E = terms[i].e, from = i;
  std::int64_t S = 0;
  for (int i = 0; i < n; ++i) {
    const std::int64_t a = shifted(terms[i].m, F + terms[i].e - E - terms[i].frac);
    S += terms[i].negative ? -a : a;
    if (trace)
      trace->terms.push_back({names[i], value_of(terms[i]), terms[i].e,
                              std::ldexp(static_cast<double>(terms[i].negative ? -a : a), E - F)});
  }
  if (trace) {
    trace->rule = "fused sum: every term aligned to the largest exponent with " + std::to_string(F) +
                  " fraction bits (bits below truncated), summed exactly, written to fp32 toward zero";
    trace->max_exponent = E;
    trace->max_from = names[from];
    trace->fraction_bits = F;
    trace->aligned_sum = std::ldexp(static_cast<double>(S), E - F);
  }
  if (S == 0) return 0.0;
  const bool negative = S < 0;
  std::uint64_t mag = static_cast<std::uint64_t>(negative ? -S : S);
  const int lsb = E - F;  // the sum is mag 2^lsb
  const int top = (63 - std::countl_zero(mag)) + lsb;
  const int quantum = std::max(top, -126) - 23;
  if (const int drop = quantum - lsb; drop > 0) mag = drop >= 64 ? 0 : (mag >> drop) << drop;
  double v = std::ldexp(static_cast<double>(mag), lsb);  // mag < 2^53: exact
  if (v > FLT_MAX) v = kInf;
  return negative ? -v : v;
}

// The special values' rule, for the trace.
double special(double d, const std::string& why, BlockScaledTrace* trace) {
  if (trace) trace->rule = "special value: " + why + " gives " + exact_text(d);
  return d;
}

}  // namespace

const BlockScaledInfo& info(BlockScaledKind kind) { return kInfo[static_cast<int>(kind)]; }

const std::vector<BlockScaledKind>& every_block_scaled_kind() {
  static const std::vector<BlockScaledKind> v = {BlockScaledKind::mxf8f6f4, BlockScaledKind::mxf4,
                                                 BlockScaledKind::mxf4nvf4};
  return v;
}

std::optional<BlockScaledKind> parse_block_scaled_kind(const std::string& name) {
  for (BlockScaledKind k : every_block_scaled_kind())
    if (name == info(k).name) return k;
  return std::nullopt;
}

const std::vector<Format>& element_formats(BlockScaledKind kind) {
  static const std::vector<Format> f8f6f4 = {Format::e4m3, Format::e5m2, Format::e2m3, Format::e3m2, Format::e2m1};
  static const std::vector<Format> f4 = {Format::e2m1};
  return kind == BlockScaledKind::mxf8f6f4 ? f8f6f4 : f4;
}

bool takes_scales(BlockScaledKind kind, int block, Format scale_format) {
  if (kind != BlockScaledKind::mxf4nvf4) return block == 32 && scale_format == Format::ue8m0;
  return (block == 16 && (scale_format == Format::ue4m3 || scale_format == Format::ue8m0)) ||
         (block == 32 && scale_format == Format::ue8m0);
}

std::string scales_help(BlockScaledKind kind) {
  return kind == BlockScaledKind::mxf4nvf4 ? "ue4m3 per 16, ue8m0 per 16 or per 32" : "ue8m0 per 32";
}

std::string describe(BlockScaledKind kind) {
  const BlockScaledInfo& i = info(kind);
  const std::string F = std::to_string(i.fraction_bits);
  if (kind == BlockScaledKind::mxf8f6f4)
    return "one fused sum of C and 32 products (the scales in their exponents) at F = " + F +
           ", terms and fp32 result truncated toward zero";
  return "4 groups of 16 products summed exactly, each times its scales; one fused sum of C and the groups at F = " + F +
         ", terms and fp32 result truncated toward zero";
}

Format default_scale_format(BlockScaledKind kind, int block) {
  return kind == BlockScaledKind::mxf4nvf4 && block == 16 ? Format::ue4m3 : Format::ue8m0;
}

// MODEL FROM THE LITERATURE (MMA-Sim's fused_dot_add with scales, F = 25); not probed by gemmlab.
double mxf8f6f4_dot(std::span<const double> a, Format fa, std::span<const double> b, Format fb, double scale_a,
                    double scale_b, double c, BlockScaledTrace* trace) {
  if (a.size() != 32 || b.size() != 32)
    throw std::invalid_argument("tcgen05 kind::mxf8f6f4 takes 32 products, got " + std::to_string(a.size()) + " x " +
                                std::to_string(b.size()));
  for (Format f : {fa, fb})
    if (f != Format::e4m3 && f != Format::e5m2 && f != Format::e2m3 && f != Format::e3m2 && f != Format::e2m1)
      throw std::invalid_argument(std::string("tcgen05 kind::mxf8f6f4 takes e4m3, e5m2, e2m3, e3m2 or e2m1, not ") +
                                  info(f).name);
  for (int i = 0; i < 32; ++i) check_value(a[i], fa, "a"), check_value(b[i], fb, "b");
  check_value(scale_a, Format::ue8m0, "scale_a"), check_value(scale_b, Format::ue8m0, "scale_b");
  check_value(c, Format::fp32, "c");
  // MMA-Sim's pre-check in binary64: a NaN or an infinity decides the result (no finite product overflows
  // binary64 here: at most 57344^2 2^254).
  double pre = c;
  for (int i = 0; i < 32; ++i) pre += a[i] * b[i] * scale_a * scale_b;
  if (std::isnan(pre) || std::isinf(pre))
    return special(pre, "a NaN or an infinity among the operands, scales and C (MMA-Sim's binary64 pre-check)", trace);
  Term terms[33];
  std::string names[33];
  names[0] = "C";
  for (int i = 0; i < 32; ++i) names[i + 1] = "a" + std::to_string(i) + "*b" + std::to_string(i) + "*sa*sb";
  terms[0] = term_of(c, Format::fp32);
  const int es = floor_log2(scale_a) + floor_log2(scale_b);  // E8M0: the scales' exponents only
  for (int i = 0; i < 32; ++i) {
    const Term x = term_of(a[i], fa), y = term_of(b[i], fb);
    terms[i + 1] = Term{x.negative != y.negative, x.m * y.m, x.frac + y.frac, x.e + y.e + es};
  }
  return fused_sum_to_fp32(terms, names, 33, info(BlockScaledKind::mxf8f6f4).fraction_bits, trace);
}

// MODEL FROM THE LITERATURE (MMA-Sim's nv_fused_dot_add_with_block_scale, F = 35); not probed by gemmlab.
double mxf4nvf4_dot(std::span<const double> a, std::span<const double> b, std::span<const double> scales_a,
                    std::span<const double> scales_b, int block, Format scale_format, double c,
                    BlockScaledTrace* trace) {
  if (a.size() != 64 || b.size() != 64)
    throw std::invalid_argument("tcgen05 kind::mxf4nvf4 takes 64 products, got " + std::to_string(a.size()) + " x " +
                                std::to_string(b.size()));
  if (block != 16 && block != 32)
    throw std::invalid_argument("tcgen05 kind::mxf4nvf4 takes a scale per 16 or 32 products, not " + std::to_string(block));
  if (scale_format != Format::ue8m0 && scale_format != Format::ue4m3)
    throw std::invalid_argument(std::string("tcgen05 kind::mxf4nvf4 takes ue8m0 or ue4m3 scales, not ") +
                                info(scale_format).name);
  if (scale_format == Format::ue4m3 && block != 16)
    throw std::invalid_argument("tcgen05 kind::mxf4nvf4 with ue4m3 scales takes a scale per 16 products");
  const std::size_t scales = static_cast<std::size_t>(64 / block);
  if (scales_a.size() != scales || scales_b.size() != scales)
    throw std::invalid_argument("tcgen05 kind::mxf4nvf4 with a scale per " + std::to_string(block) + " takes " +
                                std::to_string(scales) + " scales per operand");
  for (int i = 0; i < 64; ++i) check_value(a[i], Format::e2m1, "a"), check_value(b[i], Format::e2m1, "b");
  for (std::size_t s = 0; s < scales; ++s)
    check_value(scales_a[s], scale_format, "scale_a"), check_value(scales_b[s], scale_format, "scale_b");
  check_value(c, Format::fp32, "c");
  for (std::size_t s = 0; s < scales; ++s)
    if (std::isnan(scales_a[s]) || std::isnan(scales_b[s])) return special(kNaN, "a NaN scale", trace);
  if (std::isnan(c) || std::isinf(c)) return special(c, "a NaN or infinite C (returned as it is)", trace);
  Term terms[5];
  std::string names[5];
  names[0] = "C";
  for (int g = 0; g < 4; ++g)
    names[g + 1] = "group " + std::to_string(g) + " (k " + std::to_string(16 * g) + ".." + std::to_string(16 * g + 15) +
                   ", summed exactly)*sa*sb";
  terms[0] = term_of(c, Format::fp32);
  for (int g = 0; g < 4; ++g) {
    std::int64_t G = 0;  // 4 x the group's sum of 16 products: e2m1 values are multiples of 1/2
    for (int i = 16 * g; i < 16 * g + 16; ++i)
      G += static_cast<std::int64_t>(2 * a[i]) * static_cast<std::int64_t>(2 * b[i]);
    const Term sa = term_of(scales_a[static_cast<std::size_t>(16 * g / block)], scale_format);
    const Term sb = term_of(scales_b[static_cast<std::size_t>(16 * g / block)], scale_format);
    const std::int64_t m = (G < 0 ? -G : G) * sa.m * sb.m;
    terms[g + 1] = Term{G < 0, m, 2 + sa.frac + sb.frac, sa.e + sb.e};
  }
  return fused_sum_to_fp32(terms, names, 5, info(BlockScaledKind::mxf4nvf4).fraction_bits, trace);
}

// MODEL FROM THE LITERATURE (a chain of the instructions above); not probed by gemmlab.
double block_scaled_dot(BlockScaledKind kind, std::span<const double> a, Format fa, std::span<const double> b,
                        Format fb, std::span<const double> scales_a, std::span<const double> scales_b, int block,
                        Format scale_format, double c) {
  const int k = info(kind).k;
  if (a.size() != b.size() || a.size() % static_cast<std::size_t>(k) != 0)
    throw std::invalid_argument(std::string(info(kind).name) + " chains " + std::to_string(k) +
                                " products at a time: K must be a multiple of " + std::to_string(k));
  if (kind != BlockScaledKind::mxf4nvf4 && !takes_scales(kind, block, scale_format))
    throw std::invalid_argument(std::string(info(kind).name) + " takes one ue8m0 scale per 32 products");
  if (scales_a.size() * static_cast<std::size_t>(block) != a.size() ||
      scales_b.size() * static_cast<std::size_t>(block) != b.size())
    throw std::invalid_argument("a block-scaled dot product of K = " + std::to_string(a.size()) + " takes K / " +
                                std::to_string(block) + " scales per operand");
  const std::size_t per = static_cast<std::size_t>(k / block);
  double d = c;
  for (std::size_t t = 0; t * static_cast<std::size_t>(k) < a.size(); ++t) {
    const std::size_t off = t * static_cast<std::size_t>(k);
    if (kind == BlockScaledKind::mxf8f6f4)
      d = mxf8f6f4_dot(a.subspan(off, 32), fa, b.subspan(off, 32), fb, scales_a[t], scales_b[t], d);
    else
      d = mxf4nvf4_dot(a.subspan(off, 64), b.subspan(off, 64), scales_a.subspan(t * per, per),
                       scales_b.subspan(t * per, per), block, scale_format, d);
  }
  return d;
}

}  // namespace gemmlab::tc
