// Floating-point operations that give the same bits on the CPU and on a CUDA GPU.
//
// Why: the error statistics (error_stats.cpp) and the GPU statistics (experiments/device/) must
// agree bit for bit. Both compile the functions below from this one source. Every operation is an
// explicitly named IEEE binary64 basic operation rounded to nearest-even (add, sub, mul, div,
// sqrt), never contracted into an FMA and never evaluated in a wider format:
//  * on the device they are __dadd_rn, __dsub_rn, __dmul_rn, __ddiv_rn, __dsqrt_rn, which nvcc
//    never fuses;
//  * on the host they are plain binary64 operators; the files that use them are compiled with
//    -ffp-contract=off (CMakeLists.txt) and x86-64 SSE2 arithmetic (no x87 extended precision).
// Integer-only helpers (bit patterns, rounding to a narrower format) are exact by construction.
//
// Plain C++: no CUDA header. Under nvcc the functions are __host__ __device__.
#pragma once
#include <cmath>
#include <cstdint>
#include <cstring>

#if defined(__CUDACC__)
#define GEMMLAB_HD __host__ __device__ __forceinline__
#else
#define GEMMLAB_HD inline
#endif

namespace gemmlab::pfp {

GEMMLAB_HD double add(double a, double b) {
#if defined(__CUDA_ARCH__)
  return __dadd_rn(a, b);
#else
  return a + b;
#endif
}
GEMMLAB_HD double sub(double a, double b) {
#if defined(__CUDA_ARCH__)
  return __dsub_rn(a, b);
#else
  return a - b;
#endif
}
GEMMLAB_HD double mul(double a, double b) {
#if defined(__CUDA_ARCH__)
  return __dmul_rn(a, b);
#else
  return a * b;
#endif
}
GEMMLAB_HD double div(double a, double b) {
#if defined(__CUDA_ARCH__)
  return __ddiv_rn(a, b);
#else
  return a / b;
#endif
}
GEMMLAB_HD double sqrt(double a) {
#if defined(__CUDA_ARCH__)
  return __dsqrt_rn(a);
#else
  return std::sqrt(a);
#endif
}

GEMMLAB_HD std::uint64_t bits(double x) {
#if defined(__CUDA_ARCH__)
  return static_cast<std::uint64_t>(__double_as_longlong(x));
#else
  std::uint64_t b;
  std::memcpy(&b, &x, sizeof b);
  return b;
#endif
}
GEMMLAB_HD double from_bits(std::uint64_t b) {
#if defined(__CUDA_ARCH__)
  return __longlong_as_double(static_cast<long long>(b));
#else
  double x;
  std::memcpy(&x, &b, sizeof x);
  return x;
#endif
}
GEMMLAB_HD bool is_finite(double x) { return (bits(x) & 0x7FF0000000000000ull) != 0x7FF0000000000000ull; }
GEMMLAB_HD bool is_nan(double x) { return (bits(x) & 0x7FFFFFFFFFFFFFFFull) > 0x7FF0000000000000ull; }
GEMMLAB_HD double fabs(double x) { return from_bits(bits(x) & 0x7FFFFFFFFFFFFFFFull); }
GEMMLAB_HD int clz64(std::uint64_t x) {
#if defined(__CUDA_ARCH__)
  return __clzll(static_cast<long long>(x));
#else
  return x == 0 ? 64 : __builtin_clzll(x);
#endif
}
// A finite binary64 magnitude (bit pattern with the sign cleared) as m * 2^e: m the integer
// significand (< 2^53, 0 for zero), e the exponent of its last bit (-1074 for subnormals).
struct Split {
  std::uint64_t m;
  int e;
};
GEMMLAB_HD Split split_magnitude(std::uint64_t abs_bits) {
  const int biased = static_cast<int>(abs_bits >> 52);
  const std::uint64_t frac = abs_bits & ((1ull << 52) - 1);
  if (biased == 0) return {frac, -1074};
  return {frac | (1ull << 52), biased - 1075};
}
// 2^e for -1022 <= e <= 1023 (exact).
GEMMLAB_HD double pow2(int e) { return from_bits(static_cast<std::uint64_t>(e + 1023) << 52); }
// x 2^n rounded once to nearest-even, as std::ldexp gives (overflow to infinity, gradual
// underflow), for any finite x and int n: musl's scalbn. Going up, the steps of 2^1023 are exact
// or overflow. Going down, a step of 2^-969 is exact whenever |x| >= 2^-53, and the last factor
// is then below 2^-53, so only the last multiplication rounds; for |x| < 2^-53 the true result is
// below 2^-1075 and every path gives zero. (Tested against std::ldexp in test_distributions.cpp.)
GEMMLAB_HD double ldexp(double x, int n) {
  if (n > 1023) {
    x = mul(x, pow2(1023));
    n -= 1023;
    if (n > 1023) {
      x = mul(x, pow2(1023));
      n -= 1023;
      if (n > 1023) n = 1023;
    }
  } else if (n < -1022) {
    x = mul(x, pow2(-1022 + 53));
    n += 1022 - 53;
    if (n < -1022) {
      x = mul(x, pow2(-1022 + 53));
      n += 1022 - 53;
      if (n < -1022) n = -1022;
    }
  }
  return mul(x, pow2(n));
}

// ---- rounding to a narrower format --------------------------------------------------------------

// The parameters of a binary format (reference/formats.hpp's FormatInfo) that rounding needs.
struct FormatParams {
  int precision = 53;
  int emin = -1022;
  double max_finite = 0;
  bool has_infinity = true;
  bool identity = true;  // fp64: rounding is the identity
};

// Round-to-nearest-even of x into the format, gradual underflow, overflow to infinity (or to
// max_finite where the format has no infinity), NaN stays NaN: exactly reference/formats.cpp's
// round_to (tested equal there), in integer arithmetic.
GEMMLAB_HD double round_format(double x, const FormatParams& f) {
  if (f.identity || is_nan(x) || x == 0.0) return x;
  const std::uint64_t b = bits(x);
  const bool neg = (b >> 63) != 0;
  const std::uint64_t ab = b & 0x7FFFFFFFFFFFFFFFull;
  double r;
  if (ab == 0x7FF0000000000000ull) {
    r = from_bits(0x7FF0000000000000ull);
  } else {
    const auto [m, e] = split_magnitude(ab);
    const int top = e + (63 - clz64(m));
    const int quantum = (top > f.emin ? top : f.emin) - (f.precision - 1);
    const int shift = quantum - e;
    if (shift <= 0) {
      r = from_bits(ab);
    } else if (shift > 54) {
      r = 0.0;
    } else {
      std::uint64_t q = m >> shift;
      const std::uint64_t rem = m & ((1ull << shift) - 1);
      const std::uint64_t half = 1ull << (shift - 1);
      if (rem > half || (rem == half && (q & 1))) ++q;
      r = mul(static_cast<double>(q), pow2(quantum));  // q <= 2^p, quantum >= -1022 - 52: exact
    }
  }
  if (r > f.max_finite) r = f.has_infinity ? from_bits(0x7FF0000000000000ull) : f.max_finite;
  return neg ? -r : r;
}

// ---- double-double arithmetic (only the basic operations above) -------------------------------

struct DD {
  double hi = 0, lo = 0;
};

// Knuth's TwoSum: s + e == a + b exactly (no overflow).
GEMMLAB_HD DD two_sum(double a, double b) {
  const double s = add(a, b);
  const double bb = sub(s, a);
  const double e = add(sub(a, sub(s, bb)), sub(b, bb));
  return {s, e};
}
// Dekker's Fast2Sum (|a| >= |b| or a == 0).
GEMMLAB_HD DD fast_two_sum(double a, double b) {
  const double s = add(a, b);
  return {s, sub(b, sub(s, a))};
}
// Sum of two double-doubles: AccurateDWPlusDW (Joldes, Muller, Popescu, ACM TOMS 2017, Alg. 6),
// relative error below 3 u^2 + 13 u^3 (u = 2^-53).
GEMMLAB_HD DD dd_add(const DD& x, const DD& y) {
  const DD s = two_sum(x.hi, y.hi);
  const DD t = two_sum(x.lo, y.lo);
  const DD v = fast_two_sum(s.hi, add(s.lo, t.hi));
  return fast_two_sum(v.hi, add(v.lo, t.lo));
}
// a^2 exactly as hi + lo by Dekker's product with Veltkamp's split (no FMA), exact unless
// a^2 underflows below 2^-969 (then lo carries a tiny deterministic error); beyond |a| = 2^500,
// where the split would overflow, lo = 0.
GEMMLAB_HD DD square(double a) {
  const double p = mul(a, a);
  if (!is_finite(p) || fabs(a) > 0x1p500) return {p, 0.0};
  const double c = mul(134217729.0, a);  // 2^27 + 1
  const double ah = sub(c, sub(c, a));
  const double al = sub(a, ah);
  const double e = add(add(sub(mul(ah, ah), p), mul(2.0, mul(ah, al))), mul(al, al));
  return {p, e};
}

}  // namespace gemmlab::pfp
