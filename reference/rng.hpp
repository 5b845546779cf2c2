// Counter-based random numbers for gemmlab's input distributions.
//
// Philox-4x32-10 (Salmon, Moraes, Dror, Shaw, "Parallel random numbers: as easy as 1, 2, 3",
// SC'11; the Random123 reference, checked against its known-answer vectors in
// tests/cpu/test_distributions.cpp). A value is a pure function of (key, counter): gemmlab keys
// with the seed and counts with (row, column, stream), so entry (i, j) of an operand depends only on
// (seed, operand, distribution, i, j): the same on every platform, for every thread count, and for
// every matrix shape that contains (i, j).
//
// Everything here uses only integer arithmetic and the IEEE basic operations (+ - * / sqrt, which
// are correctly rounded), never libm's log/cos/exp (their last bit differs between libraries) and
// never std::normal_distribution (implementation-defined). The floating-point operations are
// pfp:: calls (reference/portable_fp.hpp): unfused binary64 operations on the host (the reference
// library is built with -ffp-contract=off) and __dadd_rn & co. on a GPU, so the functions of
// gemmlab::rng are GEMMLAB_HD and give the same bits on the CPU and on the GPU generator
// (experiments/device/inputs_gpu.cu).
#pragma once
#include <cstdint>

#include "reference/portable_fp.hpp"

namespace gemmlab {

// splitmix64 (Steele, Lea, Flood, "Fast splittable pseudorandom number generators", OOPSLA 2014):
// a 64-bit mixing function; SplitMix steps it as a sequential stream. For choosing spot-checked
// entries and probe tiles from a seed, where a short sequential stream is enough.
constexpr std::uint64_t splitmix64(std::uint64_t x) {
  x += 0x9e3779b97f4a7c15ull;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
  return x ^ (x >> 31);
}
struct SplitMix {
  std::uint64_t s;
  std::uint64_t next() {
    const std::uint64_t z = splitmix64(s);
    s += 0x9e3779b97f4a7c15ull;
    return z;
  }
  double uniform() { return static_cast<double>(next() >> 11) * 0x1.0p-53; }
};

}  // namespace gemmlab

namespace gemmlab::rng {

struct Block {
  std::uint32_t w[4];
};

GEMMLAB_HD void mulhilo32(std::uint32_t a, std::uint32_t b, std::uint32_t& hi, std::uint32_t& lo) {
  const std::uint64_t p = static_cast<std::uint64_t>(a) * b;
  hi = static_cast<std::uint32_t>(p >> 32);
  lo = static_cast<std::uint32_t>(p);
}

// Philox-4x32 with 10 rounds: counter (c0..c3), key (k0, k1).
GEMMLAB_HD Block philox4x32_10(Block c, std::uint32_t k0, std::uint32_t k1) {
  constexpr std::uint32_t M0 = 0xD2511F53u, M1 = 0xCD9E8D57u;
  constexpr std::uint32_t W0 = 0x9E3779B9u, W1 = 0xBB67AE85u;
  for (int round = 0; round < 10; ++round) {
    if (round > 0) {
      k0 += W0;
      k1 += W1;
    }
    std::uint32_t hi0, lo0, hi1, lo1;
    mulhilo32(M0, c.w[0], hi0, lo0);
    mulhilo32(M1, c.w[2], hi1, lo1);
    c = Block{{hi1 ^ c.w[1] ^ k0, lo1, hi0 ^ c.w[3] ^ k1, lo0}};
  }
  return c;
}

// 128 random bits for entry (i, j) of one stream. `stream` separates operands and distributions
// (see distribution_entry.hpp); the 64-bit seed is the key.
GEMMLAB_HD Block bits(std::uint64_t seed, std::uint32_t stream, std::uint32_t i, std::uint32_t j) {
  return philox4x32_10(Block{{i, j, stream, 0x67656d6du /* "gemm" */}},
                       static_cast<std::uint32_t>(seed), static_cast<std::uint32_t>(seed >> 32));
}

GEMMLAB_HD std::uint64_t word64(const Block& b, int half) {
  return (static_cast<std::uint64_t>(b.w[2 * half]) << 32) | b.w[2 * half + 1];
}

// Uniform in [0, 1) with 53 random bits: a multiple of 2^-53 (the integer converts exactly).
GEMMLAB_HD double uniform53(std::uint64_t x) { return pfp::mul(static_cast<double>(x >> 11), 0x1p-53); }
// Uniform in (0, 1]: a multiple of 2^-53, never zero (for logarithms).
GEMMLAB_HD double uniform53_open0(std::uint64_t x) {
  return pfp::mul(static_cast<double>((x >> 11) + 1), 0x1p-53);
}
// Uniform integer in [0, n) by Lemire's multiply-high (bias below n 2^-64: immaterial).
GEMMLAB_HD std::uint64_t below(std::uint64_t x, std::uint64_t n) {
#if defined(__CUDA_ARCH__)
  return __umul64hi(x, n);
#else
  return static_cast<std::uint64_t>((static_cast<unsigned __int128>(x) * n) >> 64);
#endif
}

// ---- Deterministic elementary functions (basic operations only) ------------------------------

constexpr double kLn2 = 0x1.62e42fefa39efp-1;  // ln 2 rounded to binary64

// Series coefficients, rounded once at compile time (IEEE division, the same everywhere), so the
// loops below multiply instead of divide. Each function holds its table as a local constant
// (device code cannot read a host-side table); the loops have constant bounds, so both compilers
// unroll them and the coefficients become immediates.
template <class F>
constexpr auto coeff_table(F f) {
  struct T {
    double v[48];
    constexpr double operator[](int i) const { return v[i]; }
  } t{};
  for (int i = 1; i < 48; ++i) t.v[i] = f(i);
  return t;
}
constexpr auto inv_table() { return coeff_table([](int k) { return 1.0 / k; }); }
constexpr auto inv_cos_table() { return coeff_table([](int n) { return 1.0 / ((2.0 * n - 1.0) * (2.0 * n)); }); }
constexpr auto inv_sin_table() { return coeff_table([](int n) { return 1.0 / ((2.0 * n) * (2.0 * n + 1.0)); }); }

// ln(x) for x > 0 finite: x = m 2^e with m in [sqrt(1/2), sqrt(2)), ln m = 2 atanh(s),
// s = (m-1)/(m+1), |s| < 0.172; the odd series to s^41 leaves a truncation error below 1e-33.
// Accurate to a few ulps.
GEMMLAB_HD double ln(double x) {
  using namespace pfp;
  constexpr auto kInv = inv_table();
  std::uint64_t b = pfp::bits(x);  // (rng::bits is the Philox block)
  int e = static_cast<int>((b >> 52) & 0x7ff);
  if (e == 0) {  // subnormal: scale into the normal range first
    x = mul(x, 0x1p54);
    b = pfp::bits(x);
    e = static_cast<int>((b >> 52) & 0x7ff) - 54;
  }
  e -= 1023;
  b = (b & 0x000fffffffffffffull) | 0x3ff0000000000000ull;  // m in [1, 2)
  double m = pfp::from_bits(b);
  if (m > 0x1.6a09e667f3bcdp+0) {  // > sqrt(2): halve (exact)
    m = mul(m, 0.5);
    e += 1;
  }
  const double s = div(sub(m, 1.0), add(m, 1.0));
  const double s2 = mul(s, s);
  double series = 0.0;
  for (int k = 41; k >= 3; k -= 2) series = mul(add(series, kInv[k]), s2);
  const double lnm = add(mul(2.0, s), mul(mul(2.0, s), series));
  return add(mul(static_cast<double>(e), kLn2), lnm);
}

// cos(2 pi t) for t in [0, 1): t*4 is split exactly into a quadrant q and f in [0, 1); the
// quadrant rotation is exact, leaving cos or sin of f pi/2 in [0, pi/2), by Taylor series to
// degree 22/23 (truncation error below 1e-18).
GEMMLAB_HD double cos_2pi(double t) {
  using namespace pfp;
  constexpr auto kInvCos = inv_cos_table();
  constexpr auto kInvSin = inv_sin_table();
  constexpr double half_pi = 0x1.921fb54442d18p+0;
  const double t4 = mul(t, 4.0);  // exact
  const int q = static_cast<int>(t4);
  const double a = mul(sub(t4, static_cast<double>(q)), half_pi);  // t4 - q is exact
  const double a2 = mul(a, a);
  // cos a and sin a by Horner on the Taylor coefficients, built from the top:
  // sum_{n=0}^{11} (-1)^n a^{2n}/(2n)! and a sum_{n=0}^{11} (-1)^n a^{2n}/(2n+1)!.
  double c = 1.0;
  for (int n = 11; n >= 1; --n) c = sub(1.0, mul(mul(a2, kInvCos[n]), c));
  double term_s = 1.0;
  for (int n = 11; n >= 1; --n) term_s = sub(1.0, mul(mul(a2, kInvSin[n]), term_s));
  const double s = mul(a, term_s);
  switch (q & 3) {
    case 0: return c;    // cos(a)
    case 1: return -s;   // cos(a + pi/2)
    case 2: return -c;   // cos(a + pi)
    default: return s;   // cos(a + 3pi/2)
  }
}

// 2^f for f in [0, 1): exp(f ln 2) by Taylor series to degree 24 (argument below 0.7, truncation
// error below 1e-26).
GEMMLAB_HD double exp2_frac(double f) {
  using namespace pfp;
  constexpr auto kInv = inv_table();
  const double x = mul(f, kLn2);
  double r = 1.0;
  for (int n = 24; n >= 1; --n) r = add(1.0, mul(mul(x, kInv[n]), r));
  return r;
}

// e^x for |x| <= 700 (basic operations only): x = n ln2 + r with n = nearest integer to x / ln2
// and r = (x - n ln2_hi) - n ln2_lo (Cody & Waite: ln2_hi has 33 significant bits, so n ln2_hi is
// exact for |n| < 2^20), |r| <= 0.35; e^r by its Taylor series to degree 27 (truncation below
// 1e-35), then scaled by 2^n exactly (|n| <= 1010 and e^r in [0.7, 1.42]: the product is a normal
// number, so the multiplication by 2^n is exact, as ldexp would be). Accurate to a few ulps, the
// same bits everywhere.
GEMMLAB_HD double exp(double x) {
  using namespace pfp;
  constexpr auto kInv = inv_table();
  constexpr double ln2_hi = 0x1.62e42fefp-1;          // ln 2 to 33 bits
  constexpr double ln2_lo = 0x1.473de6af278edp-34;    // ln 2 - ln2_hi
  constexpr double inv_ln2 = 0x1.71547652b82fep+0;
  const double t = mul(x, inv_ln2);
  const double n = static_cast<double>(static_cast<long long>(t < 0 ? sub(t, 0.5) : add(t, 0.5)));
  const double r = sub(sub(x, mul(n, ln2_hi)), mul(n, ln2_lo));
  double e = 1.0;
  for (int k = 27; k >= 1; --k) e = add(1.0, mul(mul(r, kInv[k]), e));
  return mul(e, pow2(static_cast<int>(n)));
}

// Standard normal from two uniforms by Box-Muller (cosine branch): sqrt(-2 ln u1) cos(2 pi u2),
// u1 in (0, 1], u2 in [0, 1). |z| <= sqrt(2 * 53 ln 2) = 8.57.
GEMMLAB_HD double normal(std::uint64_t x1, std::uint64_t x2) {
  const double u1 = uniform53_open0(x1);
  const double u2 = uniform53(x2);
  return pfp::mul(pfp::sqrt(pfp::mul(-2.0, ln(u1))), cos_2pi(u2));
}

}  // namespace gemmlab::rng
