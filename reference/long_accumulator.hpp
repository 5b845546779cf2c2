// Private helpers of the exact reference engines (exact_gemm.cpp, mpfr_gemm.cpp, their tests):
// exact decomposition of doubles into odd integer significands, the inputs' exponent range,
// correct rounding of a big integer to binary64.
// Not part of the public interface.
#pragma once
#include <algorithm>
#include <bit>
#include <climits>
#include <cmath>
#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "reference/matrix.hpp"

namespace gemmlab::detail {

// A finite non-zero double x is exactly sign * m * 2^lsb with m odd, m < 2^53.
// top = lsb + bit_width(m): |x| < 2^top.
struct Decomposed {
  std::uint64_t m = 0;
  int lsb = 0;
  bool neg = false;
};

inline Decomposed decompose(double x) {
  const std::uint64_t bits = std::bit_cast<std::uint64_t>(x);
  const int biased = static_cast<int>((bits >> 52) & 0x7FF);
  std::uint64_t m = bits & ((1ull << 52) - 1);
  int e;
  if (biased == 0) {
    e = -1074;  // subnormal double
  } else {
    m |= 1ull << 52;
    e = biased - 1075;
  }
  Decomposed d;
  d.neg = (bits >> 63) != 0;
  if (m == 0) return d;
  const int tz = std::countr_zero(m);
  d.m = m >> tz;
  d.lsb = e + tz;
  return d;
}

// Exponent range of the finite non-zero values of a matrix: every such value is a multiple of
// 2^lsb_min and smaller than 2^top_max in magnitude.
struct ExponentRange {
  bool any_nonzero = false;
  bool any_nonfinite = false;
  int lsb_min = INT_MAX;
  int top_max = INT_MIN;
  int bits() const { return any_nonzero ? top_max - lsb_min : 0; }
};

inline ExponentRange scan_range(const Matrix& X) {
  ExponentRange r;
  for (double x : X.v) {
    if (!std::isfinite(x)) {
      r.any_nonfinite = true;
      continue;
    }
    if (x == 0.0) continue;
    const Decomposed d = decompose(x);
    r.any_nonzero = true;
    r.lsb_min = std::min(r.lsb_min, d.lsb);
    r.top_max = std::max(r.top_max, d.lsb + static_cast<int>(std::bit_width(d.m)));
  }
  return r;
}

inline int ceil_log2(long n) {
  int b = 0;
  while ((1L << b) < n) ++b;
  return b;
}

// Round sign * mag * 2^e0 (mag: little-endian 64-bit limbs) to binary64 with gradual underflow.
// odd = false: round-to-nearest-even, overflow to infinity.
// odd = true: round-to-odd (truncate, then set the last bit if anything was dropped), overflow to
// the largest finite double. An exact zero gives +0.
double round_bigint(const std::uint64_t* mag, int limbs, long e0, bool neg, bool odd);

// Kulisch accumulation (exact_gemm's kulisch engine; tc_model's binary64 fused sum).
// acc += (-1)^neg * p * 2^s, two's complement over `limbs` limbs; p < 2^128 spans limbs
// s/64 .. s/64 + 2, which the caller guarantees exist.
inline void kulisch_add(std::uint64_t* acc, int limbs, long s, unsigned __int128 p, bool neg) {
  const long idx = s >> 6;
  const int sh = static_cast<int>(s & 63);
  const auto lo = static_cast<std::uint64_t>(p), hi = static_cast<std::uint64_t>(p >> 64);
  std::uint64_t w0 = lo, w1 = hi, w2 = 0;
  if (sh != 0) w0 = lo << sh, w1 = (hi << sh) | (lo >> (64 - sh)), w2 = hi >> (64 - sh);
  std::uint64_t* a = acc + idx;
  std::uint64_t* const end = acc + limbs;
  if (!neg) {
    unsigned __int128 t = static_cast<unsigned __int128>(a[0]) + w0;
    a[0] = static_cast<std::uint64_t>(t);
    t = static_cast<unsigned __int128>(a[1]) + w1 + static_cast<std::uint64_t>(t >> 64);
    a[1] = static_cast<std::uint64_t>(t);
    t = static_cast<unsigned __int128>(a[2]) + w2 + static_cast<std::uint64_t>(t >> 64);
    a[2] = static_cast<std::uint64_t>(t);
    if (t >> 64)
      for (std::uint64_t* q = a + 3; q < end && ++*q == 0; ++q) {
      }
  } else {
    unsigned __int128 t = static_cast<unsigned __int128>(a[0]) - w0;
    a[0] = static_cast<std::uint64_t>(t);
    t = static_cast<unsigned __int128>(a[1]) - w1 - static_cast<std::uint64_t>((t >> 64) & 1);
    a[1] = static_cast<std::uint64_t>(t);
    t = static_cast<unsigned __int128>(a[2]) - w2 - static_cast<std::uint64_t>((t >> 64) & 1);
    a[2] = static_cast<std::uint64_t>(t);
    if ((t >> 64) & 1)
      for (std::uint64_t* q = a + 3; q < end && (*q)-- == 0; ++q) {
      }
  }
}

// Turns a two's-complement accumulator into its magnitude in place; returns whether it was negative.
inline bool kulisch_to_magnitude(std::uint64_t* acc, int limbs) {
  const bool neg = (acc[limbs - 1] >> 63) != 0;
  if (neg) {
    std::uint64_t carry = 1;
    for (int w = 0; w < limbs; ++w) {
      acc[w] = ~acc[w] + carry;
      carry = carry && acc[w] == 0;
    }
  }
  return neg;
}

// Result of a dot product that involves an infinity or NaN, following IEEE/MPFR: NaN if any product
// is NaN (0 * inf, NaN input) or infinities of both signs occur, else the infinity.
double nonfinite_dot(const Matrix& A, const Matrix& B, int i, int j);

// (|A||B|)(i, j) when row i of A or column j of B holds an infinity or NaN: NaN if some |a||b| is
// NaN (|inf| * 0, a NaN input), else +infinity.
double nonfinite_abs_dot(const Matrix& A, const Matrix& B, int i, int j);

// Throws std::invalid_argument unless A is (M, K) and B is (K, N).
void check_shapes(const Matrix& A, const Matrix& B, const char* who);

}  // namespace gemmlab::detail
