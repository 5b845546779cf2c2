// The tensor-core model's block arithmetic (tc_model.hpp), written once for the host and a CUDA GPU:
// tc_model.cpp runs it on the CPU, experiments/device/emulate_gpu.cu runs explain's composition with it on
// the GPU, so that both are the same code. Exact dyadic numbers in 64- and 128-bit integers (nvcc keeps
// __int128 on the device); every floating-point step is a conversion or an exact scaling.
//
// P is the model's parameters (tc::TcParams on the host, or any type with the same fields), FI a format's
// facts (gemmlab::FormatInfo: precision, emin, max_finite, has_infinity).
//
// What the host raises (a value outside the format, a NaN or infinity reaching the decomposition), the
// device cannot: there it marks the Fault and the caller recomputes that output on the host.
#pragma once
#include <cmath>
#include <cstdint>
#include <limits>

#include "reference/portable_fp.hpp"
#include "reference/tc_model.hpp"

namespace gemmlab::tc::arith {

using i128 = __int128;
using u128 = unsigned __int128;

// Where the device met what the host would have thrown on or taken its rare path for.
struct Fault {
  bool bad = false;
};

// Host only (tc_model.cpp): the rare decompositions (zero, subnormal double, infinity, NaN) and the error.
struct Decomposed {
  bool neg;
  std::uint64_t m;
  int lsb;
  int exponent;  // format exponent: floor(log2|x|) for normals, emin for subnormals
};
Decomposed decompose_rare(double x, int p, int emin);
[[noreturn]] void not_representable();

// An exact dyadic number sign * mag * 2^exp.
struct Exact {
  i128 v = 0;  // signed significand
  int e = 0;   // exponent of its least significant bit
};

GEMMLAB_HD int clz64(std::uint64_t v) {
#if defined(__CUDA_ARCH__)
  return __clzll(static_cast<long long>(v));
#else
  return __builtin_clzll(v);
#endif
}

GEMMLAB_HD int bit_length(u128 v) {
  const std::uint64_t hi = (std::uint64_t)(v >> 64), lo = (std::uint64_t)v;
  if (hi) return 128 - clz64(hi);
  return lo ? 64 - clz64(lo) : 0;
}

GEMMLAB_HD u128 uabs(i128 v) { return v < 0 ? (u128)(-v) : (u128)v; }

GEMMLAB_HD bool sign_of(double x) { return (pfp::bits(x) >> 63) != 0; }
GEMMLAB_HD double with_sign(double mag, bool neg) {
  return pfp::from_bits((pfp::bits(mag) & ~(std::uint64_t(1) << 63)) | (std::uint64_t(neg) << 63));
}
GEMMLAB_HD double abs_of(double x) { return with_sign(x, false); }
GEMMLAB_HD bool finite(double x) { return ((pfp::bits(x) >> 52) & 0x7ff) != 0x7ff; }
// x 2^e, exact where the result is a double (every use here)
GEMMLAB_HD double scale2(double x, int e) {
#if defined(__CUDA_ARCH__)
  return ::ldexp(x, e);
#else
  return std::ldexp(x, e);
#endif
}
GEMMLAB_HD int imax(int a, int b) { return a > b ? a : b; }
GEMMLAB_HD int imin(int a, int b) { return a < b ? a : b; }

// Decompose a finite double x (exactly representable in a format of precision p and minimum normal exponent
// emin) as m * 2^lsb with m an integer of at most p bits, and the exponent the format gives it (emin for
// subnormals). The normal doubles (every value the model sees) are read from their bits here.
GEMMLAB_HD Decomposed decompose(double x, int p, int emin, Fault& f) {
  const std::uint64_t bits = pfp::bits(x);
  const int be = (int)((bits >> 52) & 0x7ff);
  if (be == 0 || be == 0x7ff) [[unlikely]] {
#if defined(__CUDA_ARCH__)
    f.bad = true;
    return {false, 0, 0, 0};
#else
    (void)f;
    return decompose_rare(x, p, emin);
#endif
  }
  Decomposed d{(bits >> 63) != 0, 0, 0, 0};
  const int e = be - 1023;
  const std::uint64_t m53 = (bits & ((std::uint64_t(1) << 52) - 1)) | (std::uint64_t(1) << 52);
  d.exponent = imax(e, emin);
  d.lsb = d.exponent - (p - 1);
  const int shift = d.lsb - (e - 52);  // bits of m53 below the format's last place
  if (shift <= 0) {
    d.m = m53 << -shift;
  } else {
    d.m = shift >= 64 ? 0 : m53 >> shift;
    if (shift >= 64 || (d.m << shift) != m53) {
#if defined(__CUDA_ARCH__)
      f.bad = true;
#else
      not_representable();
#endif
    }
  }
  return d;
}

// Right-shift a signed value by s > 0 bits with the alignment rounding mode: S a signed integer (i128, or
// std::int64_t for block_narrow's terms), U its unsigned twin.
template <class S, class U>
GEMMLAB_HD S shift_right(S v, int s, Rounding mode) {
  constexpr int W = static_cast<int>(sizeof(S)) * 8 - 1;  // a shift this wide or wider leaves nothing
  const bool neg = v < 0;
  const U mag = neg ? U(0) - U(v) : U(v);
  U t = s >= W ? 0 : mag >> s;
  // The remainder only where the mode reads it (toward_zero, the Hopper alignment's, does not).
  switch (mode) {
    case Rounding::toward_zero:
      break;
    case Rounding::floor:
      if (neg && (s >= W ? mag : mag - (t << s)) != 0) t += 1;
      break;
    case Rounding::nearest_even:
      if (s < W) {  // s >= W: the model's values (well below 2^(W - 1)) are below half a unit: no increment
        const U rem = mag - (t << s);
        if (rem != 0) {
          const U half = U(1) << (s - 1);
          if (rem > half || (rem == half && (t & 1))) t += 1;
        }
      }
      break;
    default:  // the models align toward zero, down or to nearest even only
      break;
  }
  return neg ? -(S)t : (S)t;
}

// Exact sum of two dyadic numbers of at most ~60 significant bits each (the model's sums). When
// the exponent gap is too wide for the 126-bit window, the bits of the lower number below the
// window are folded into a sticky bit at the window's last place: with >= 60 bits of window below
// the higher number, no rounding to <= 53 bits can tell the difference.
GEMMLAB_HD Exact add(Exact a, Exact b) {
  if (a.v == 0) return b;
  if (b.v == 0) return a;
  if (a.e < b.e) {  // a has the higher lsb
    const Exact t = a;
    a = b;
    b = t;
  }
  int gap = a.e - b.e;
  const int room = 122 - bit_length(uabs(a.v));
  if (gap > room) {
    const int d = gap - room;
    const bool neg = b.v < 0;
    const u128 mag = uabs(b.v);
    u128 t = d >= 127 ? 0 : mag >> d;
    const bool sticky = d >= 127 ? mag != 0 : (mag - (t << d)) != 0;
    t = (t << 1) | (sticky ? 1 : 0);  // one extra place, so the sticky sits below every kept bit
    b = {neg ? -(i128)t : (i128)t, b.e + d - 1};
    gap = room + 1;
  }
  return {(a.v << gap) + b.v, b.e};
}

// Round an exact number into format ff, keeping `fraction_bits` below the leading bit (-1: the
// format's p - 1) within its exponent range.
template <class FI>
GEMMLAB_HD double round_exact(const FI& ff, Exact x, Rounding mode, bool subnormals, int fraction_bits = -1,
                              Overflow overflow = Overflow::by_rounding) {
  if (x.v == 0) return 0.0;
  const int fb = fraction_bits < 0 ? ff.precision - 1 : imin(fraction_bits, ff.precision - 1);
  const bool neg = x.v < 0;
  const u128 mag = uabs(x.v);
  const int nb = bit_length(mag);
  const int E = x.e + nb - 1;  // exponent of the exact value
  int lsb = imax(E, ff.emin) - fb;
  const int s = lsb - x.e;
  u128 t = mag;
  if (s > 0) {
    u128 rem;
    if (s >= 127) {
      t = 0;
      rem = mag;
    } else {
      t = mag >> s;
      rem = mag - (t << s);
    }
    if (mode == Rounding::nearest_even && rem != 0 && s < 127) {
      const u128 half = (u128)1 << (s - 1);
      if (rem > half || (rem == half && (t & 1))) t += 1;
    }
  } else {
    lsb = x.e;
  }
  double r = scale2((double)t, lsb);  // t has at most p+1 bits: exact
  if (r > ff.max_finite) {
    const bool to_inf = ff.has_infinity && (overflow == Overflow::infinity ||
                                            (overflow == Overflow::by_rounding && mode != Rounding::toward_zero));
    r = to_inf ? std::numeric_limits<double>::infinity() : ff.max_finite;
  }
  if (!subnormals && r < scale2(1.0, ff.emin)) r = 0.0;
  // A non-zero sum that rounds to zero gives +0 (measured on H200: mma.sync writes 0x00000000, not
  // the IEEE -0, for a negative sum below the smallest subnormal).
  if (r == 0) return 0.0;
  return neg ? -r : r;
}

GEMMLAB_HD Exact exact_of(double x, Fault& f) {
  if (x == 0) return {};
  const Decomposed d = decompose(x, 53, -1074, f);
  return {d.neg ? -(i128)d.m : (i128)d.m, d.lsb};
}

// The sign of an exactly zero result (ZeroSign): `all_minus_zero` says whether C and every product
// were -0 (then IEEE 754 gives -0).
template <class P>
GEMMLAB_HD double zero_result(const P& p, double c, bool all_minus_zero) {
  switch (p.zero_sign) {
    case ZeroSign::ieee: return all_minus_zero ? -0.0 : 0.0;
    case ZeroSign::plus: return 0.0;
    case ZeroSign::c_sign: return sign_of(c) ? -0.0 : 0.0;
  }
  return 0.0;
}

// A product's operands as the instruction reads them: subnormals flushed to zero where it does not keep them
// (ea_min, eb_min: the emin of A's and B's input formats).
template <class P>
GEMMLAB_HD void flush_subnormal_inputs(const P& p, int ea_min, int eb_min, double& x, double& y) {
  if (p.subnormal_inputs) return;
  if (abs_of(x) < scale2(1.0, ea_min)) x = with_sign(0.0, sign_of(x));
  if (abs_of(y) < scale2(1.0, eb_min)) y = with_sign(0.0, sign_of(y));
}

// The alignment exponent of a product with a zero operand (ZeroOperandExponent; not none): a zero counts as
// its format's emin, or fp32's.
template <class P, class FI>
GEMMLAB_HD int zero_operand_ref(const P& p, const FI& fa, const FI& fb, double x, double y, Fault& f) {
  const bool fp32 = p.zero_operand_exponent == ZeroOperandExponent::fp32_emin;
  const int ex = x == 0 ? (fp32 ? -126 : fa.emin) : decompose(x, fa.precision, fa.emin, f).exponent;
  const int ey = y == 0 ? (fp32 ? -126 : fb.emin) : decompose(y, fb.precision, fb.emin, f).exponent;
  return ex + ey;
}

// Whether block_narrow computes this model's blocks: every product's significand fits 62 bits and the
// aligned sum F + 9 bits (fp16, bf16, tf32, fp8 and fp32 operands; F <= 52).
template <class FI>
GEMMLAB_HD bool narrow_fits(const FI& fa, const FI& fb, const FI& fo, int F, int n) {
  return fa.precision + fb.precision <= 62 && F <= 52 && fo.precision <= 53 && n <= 64;
}

// One fused block without a trace, c + the n products of a and b (narrow_fits): the model's steps in
// 64-bit integers. Each aligned term is below 2^(F + 2) (its leading bit at most one above the largest
// exponent, which is emax or below), so 64 of them and C stay below 2^(F + 9) <= 2^61.
// tests/cpu/test_tc_model.cpp holds it to the 128-bit path (tc_model.cpp's block) bit for bit.
template <class P, class FI>
GEMMLAB_HD double block_narrow(const P& p, const FI& fa, const FI& fb, const FI& fo, int F, int ea_min, int eb_min,
                               const double* a, const double* b, int n, double c, Fault& f) {
  struct Term64 {
    std::int64_t v;
    int e, ref;
  } terms[64];
  int nt = 0;
  bool all_minus_zero = sign_of(c);
  int zero_ref = std::numeric_limits<int>::min();
  for (int i = 0; i < n; ++i) {
    double x = a[i], y = b[i];
    flush_subnormal_inputs(p, ea_min, eb_min, x, y);
    if (x == 0 || y == 0) {
      all_minus_zero = all_minus_zero && sign_of(x) != sign_of(y);
      if (p.zero_operand_exponent != ZeroOperandExponent::none) zero_ref = imax(zero_ref, zero_operand_ref(p, fa, fb, x, y, f));
      continue;
    }
    all_minus_zero = false;
    const Decomposed dx = decompose(x, fa.precision, fa.emin, f), dy = decompose(y, fb.precision, fb.emin, f);
    const std::uint64_t m = dx.m * dy.m;  // < 2^62
    Term64& t = terms[nt++];
    t.v = (dx.neg != dy.neg) ? -(std::int64_t)m : (std::int64_t)m;
    t.e = dx.lsb + dy.lsb;
    t.ref = p.align_reference == AlignReference::exponent_sum ? dx.exponent + dy.exponent
                                                               : t.e + (64 - clz64(m)) - 1;
  }
  if (!p.subnormal_output && abs_of(c) < scale2(1.0, fo.emin)) c = with_sign(0.0, sign_of(c));
  Exact ce{};
  int cref = 0;
  if (c != 0) {
    const Decomposed dc = decompose(c, fo.precision, fo.emin, f);
    ce = {dc.neg ? -(i128)dc.m : (i128)dc.m, dc.lsb};
    cref = p.align_reference == AlignReference::exponent_sum ? dc.exponent : ce.e + bit_length(uabs(ce.v)) - 1;
  }
  if (nt == 0 && c == 0) return zero_result(p, c, all_minus_zero);
  if (nt == 0 && !p.c_in_alignment && zero_ref == std::numeric_limits<int>::min())
    return round_exact(fo, ce, p.output_rounding, p.subnormal_output, p.result_fraction_bits, p.overflow);
  int emax = std::numeric_limits<int>::min();
  for (int i = 0; i < nt; ++i) emax = imax(emax, terms[i].ref);
  const bool c_joins = p.c_in_alignment && c != 0;
  if (c_joins) emax = imax(emax, cref);
  if (p.zero_c_offset >= 0 && p.c_in_alignment && c == 0) emax = imax(emax, fo.emin - p.zero_c_offset);
  emax = imax(emax, zero_ref);
  const int q = emax - F;
  std::int64_t sum = 0;
  for (int i = 0; i < nt; ++i) {
    const int sh = terms[i].e - q;
    sum += sh >= 0 ? terms[i].v << sh : shift_right<std::int64_t, std::uint64_t>(terms[i].v, -sh, p.align_rounding);
  }
  if (c_joins) {
    const int sh = ce.e - q;
    const auto cv = (std::int64_t)ce.v;  // C's significand: < 2^53
    sum += sh >= 0 ? cv << sh : shift_right<std::int64_t, std::uint64_t>(cv, -sh, p.align_rounding);
  }
  Exact total{(i128)sum, q};
  if (!c_joins && c != 0) total = add(total, ce);
  if (total.v == 0) return zero_result(p, c, false);
  return round_exact(fo, total, p.output_rounding, p.subnormal_output, p.result_fraction_bits, p.overflow);
}

// c_entry final_add: C added to the blocks' result `acc` last, in an addition of its own (an FADD / HADD2):
// IEEE 754 on infinities and NaN (inf - inf gives NaN), else the exact sum rounded to nearest even in the
// output format `fo` (no flush).
template <class FI>
GEMMLAB_HD double final_add(const FI& fo, double acc, double c, Fault& f) {
  if (!finite(acc) || !finite(c)) return pfp::add(acc, c);
  if (c == 0 && acc == 0) return pfp::add(c, acc);  // IEEE sign of a zero sum
  const Exact s = add(exact_of(acc, f), exact_of(c, f));
  if (s.v == 0) return 0.0;
  return round_exact(fo, s, Rounding::nearest_even, true);
}

// One instruction of a block_fused model on finite operands (a NaN or infinite a_i or b_i is dot()'s
// special rule; C may be anything): the blocks chained in order from C (or from +0 with c_entry final_add,
// C then added last), every block narrow (narrow_fits). p.block_size divides k (<= 64 products per block),
// and the blocks are contiguous (step_interleave 0, or one block). `fo` is the output format's facts.
template <class P, class FI>
GEMMLAB_HD double chain_blocks(const P& p, const FI& fa, const FI& fb, const FI& fo, int F, int ea_min, int eb_min,
                               const double* a, const double* b, int k, double c, Fault& f) {
  const bool c_last = p.c_entry == CEntry::final_add;
  double acc = c_last ? 0.0 : c;  // the blocks' running C
  const int bs = p.block_size, nblocks = k / bs;
  for (int j = 0; j < nblocks && finite(acc); ++j)
    acc = block_narrow(p, fa, fb, fo, F, ea_min, eb_min, a + j * bs, b + j * bs, bs, acc, f);
  return c_last ? final_add(fo, acc, c, f) : acc;
}

}  // namespace gemmlab::tc::arith
