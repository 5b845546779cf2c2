// The residue split of the GPU exact reference (experiments/device/exact_reference_gpu.cu), written
// once for the host and the device so that the CPU tests prove the same code the GPU runs.
//
// Numerics (Ozaki scheme II: Ozaki, Uchino, Imamura, "Ozaki Scheme II: A GEMM-oriented emulation of
// floating-point matrix multiplication using an integer modular technique", 2025; here exact, not
// truncated): on the row grids of int8_split.hpp, entry (i, k) of A is the integer Ia = +-m 2^(lsb -
// ea(i)), |Ia| < 2^wa, and likewise Ib for B, so C(i, j) 2^-(ea(i) + eb(j)) is the integer
// X = sum_k Ia Ib, |X| < Kp 2^(wa + wb). With pairwise coprime odd moduli m_1..m_P (at most 255) and
// M = prod m_p >= 2^(wa + wb + ceil(log2 Kp) + 1) > 2 |X|:
//  * each Ia is reduced to its symmetric residue r in [-127, 127] per modulus (int8), and so is Ib;
//  * one int8 GEMM per modulus gives G_p = sum_k ra rb exactly in int32 (|ra rb| <= 127^2 < 2^14 and
//    Kp <= 2^17 terms: below 2^31, the digit split's rule), and G_p = X mod m_p;
//  * X mod M is rebuilt by the Chinese remainder theorem, X' = sum_p u_p (M / m_p) with u_p = G_p
//    ((M / m_p)^-1 mod m_p) mod m_p, less the multiple of M that brings it into [0, M) (estimated in
//    floating point, then corrected exactly), and X is that value or that value less M (the symmetric
//    range: M > 2 |X| tells the two apart). Nothing is rounded until X 2^(ea + eb) is rounded once.
// P GEMMs per pass instead of the digit split's S_A S_B: for fp32 data of 49-bit rows, 15 instead of
// 49. The split applies where both spreads fit 120 bits (Ia, Ib in two 64-bit words), Kp <= 2^17, and
// the moduli reach the bits needed (kModuli's product is about 2^184); elsewhere the digit split runs.
//
// Plain C++ (no CUDA header): under nvcc the functions are __host__ __device__.
#pragma once
#include <array>
#include <cstdint>

#include "reference/portable_fp.hpp"

namespace gemmlab::crt {

constexpr int kMaxModuli = 24;
constexpr int kLimbs = 3;       // M < 2^192
constexpr int kMaxSpread = 120;  // bits of a row's or a column's integers (two 64-bit words)
constexpr long kMaxTerms = 1L << 17;

// Pairwise coprime odd moduli below 256, largest first (255 = 3 5 17, 253 = 11 23, 247 = 13 19,
// 217 = 7 31, the rest prime): residues fit int8 symmetrically, [-127, 127]. modulus(p) is the list, a
// switch so that device code can read it (a constant once p is: the loops over p are unrolled); kModuli,
// below, the same list as an array for the host.
GEMMLAB_HD constexpr int modulus(int p) {
  switch (p) {
    case 0: return 255;
    case 1: return 253;
    case 2: return 251;
    case 3: return 247;
    case 4: return 241;
    case 5: return 239;
    case 6: return 233;
    case 7: return 229;
    case 8: return 227;
    case 9: return 223;
    case 10: return 217;
    case 11: return 211;
    case 12: return 199;
    case 13: return 197;
    case 14: return 193;
    case 15: return 191;
    case 16: return 181;
    case 17: return 179;
    case 18: return 173;
    case 19: return 167;
    case 20: return 163;
    case 21: return 157;
    case 22: return 151;
    default: return 149;
  }
}
constexpr std::array<int, kMaxModuli> kModuli = [] {
  std::array<int, kMaxModuli> a{};
  for (int p = 0; p < kMaxModuli; ++p) a[p] = modulus(p);
  return a;
}();

// The moduli of one reference and the constants of its reconstruction.
struct Plan {
  int P = 0;
  int m[kMaxModuli] = {};
  int y[kMaxModuli] = {};                    // (M / m_p)^-1 mod m_p
  double inv[kMaxModuli] = {};               // 1 / m_p (the quotient's estimate)
  std::uint64_t Mp[kMaxModuli][kLimbs] = {};  // M / m_p
  std::uint64_t M[kLimbs] = {};
  std::uint64_t half[kLimbs] = {};  // (M - 1) / 2 (M is odd): X' above it stands for X' - M
};

namespace detail {

GEMMLAB_HD void mul_small(const std::uint64_t (&a)[kLimbs], std::uint64_t v, std::uint64_t (&out)[kLimbs]) {
  std::uint64_t carry = 0;
#pragma unroll
  for (int w = 0; w < kLimbs; ++w) {
#ifdef __CUDA_ARCH__
    const std::uint64_t lo = a[w] * v, hi = __umul64hi(a[w], v);
#else
    const unsigned __int128 p = static_cast<unsigned __int128>(a[w]) * v;
    const std::uint64_t lo = static_cast<std::uint64_t>(p), hi = static_cast<std::uint64_t>(p >> 64);
#endif
    const std::uint64_t s = lo + carry;
    carry = hi + (s < lo);
    out[w] = s;
  }
}
GEMMLAB_HD void add_to(std::uint64_t (&acc)[kLimbs], const std::uint64_t (&b)[kLimbs]) {
  std::uint64_t carry = 0;
#pragma unroll
  for (int w = 0; w < kLimbs; ++w) {
    const std::uint64_t s1 = acc[w] + b[w], c1 = s1 < b[w];
    const std::uint64_t s2 = s1 + carry;
    carry = c1 | (s2 < carry);
    acc[w] = s2;
  }
}
// acc -= b; returns true when it borrowed (acc < b before).
GEMMLAB_HD bool sub_from(std::uint64_t (&acc)[kLimbs], const std::uint64_t (&b)[kLimbs]) {
  std::uint64_t borrow = 0;
#pragma unroll
  for (int w = 0; w < kLimbs; ++w) {
    const std::uint64_t d1 = acc[w] - b[w], b1 = acc[w] < b[w];
    const std::uint64_t d2 = d1 - borrow, b2 = d1 < borrow;
    borrow = b1 | b2;
    acc[w] = d2;
  }
  return borrow != 0;
}
GEMMLAB_HD bool less(const std::uint64_t (&a)[kLimbs], const std::uint64_t (&b)[kLimbs]) {
  for (int w = kLimbs - 1; w >= 0; --w)
    if (a[w] != b[w]) return a[w] < b[w];
  return false;
}

}  // namespace detail

// The fewest moduli of kModuli whose product M is at least 2^bits; false (plan untouched) when all of
// them fall short.
inline bool make_plan(int bits, Plan& plan) {
  if (bits < 1) bits = 1;
  std::uint64_t M[kLimbs] = {1, 0, 0};
  int P = 0;
  auto bit_length = [](const std::uint64_t (&a)[kLimbs]) {
    for (int w = kLimbs - 1; w >= 0; --w)
      if (a[w]) return 64 * w + 64 - __builtin_clzll(a[w]);
    return 0;
  };
  // M >= 2^bits  <=>  bit_length(M) > bits, or M = 2^bits exactly (impossible: M is odd and > 1).
  while (bit_length(M) <= bits) {
    if (P == kMaxModuli) return false;
    std::uint64_t next[kLimbs];
    detail::mul_small(M, static_cast<std::uint64_t>(kModuli[P]), next);
    for (int w = 0; w < kLimbs; ++w) M[w] = next[w];
    ++P;
  }
  Plan p;
  p.P = P;
  for (int w = 0; w < kLimbs; ++w) p.M[w] = M[w];
  for (int q = 0; q < P; ++q) {
    p.m[q] = kModuli[q];
    p.inv[q] = 1.0 / kModuli[q];
    std::uint64_t Mq[kLimbs] = {1, 0, 0};
    for (int r = 0; r < P; ++r) {
      if (r == q) continue;
      std::uint64_t next[kLimbs];
      detail::mul_small(Mq, static_cast<std::uint64_t>(kModuli[r]), next);
      for (int w = 0; w < kLimbs; ++w) Mq[w] = next[w];
    }
    for (int w = 0; w < kLimbs; ++w) p.Mp[q][w] = Mq[w];
    // (M / m_q) mod m_q, then its inverse by trial (m_q < 256).
    int red = 1;
    for (int r = 0; r < P; ++r)
      if (r != q) red = red * (kModuli[r] % kModuli[q]) % kModuli[q];
    p.y[q] = 0;
    for (int t = 1; t < kModuli[q]; ++t)
      if (red * t % kModuli[q] == 1) p.y[q] = t;
  }
  // half = (M - 1) / 2
  std::uint64_t h[kLimbs];
  for (int w = 0; w < kLimbs; ++w) h[w] = M[w];
  h[0] -= 1;  // M is odd: no borrow
  for (int w = 0; w < kLimbs; ++w) p.half[w] = (h[w] >> 1) | (w + 1 < kLimbs ? h[w + 1] << 63 : 0);
  plan = p;
  return true;
}

// The symmetric residue in [-(m-1)/2, (m-1)/2] of the integer (neg ? -mag : mag) with mag = hi 2^64 + lo,
// m odd, m < 256. With m a compile-time constant (crt::modulus(p) in an unrolled loop) every % is a
// multiplication.
GEMMLAB_HD int residue(std::uint64_t hi, std::uint64_t lo, bool neg, int m) {
  const std::uint32_t um = static_cast<std::uint32_t>(m);
  const std::uint32_t two32 = static_cast<std::uint32_t>((static_cast<std::uint64_t>(1) << 32) % um);
  // Base 2^32 words, from the top: r = (r 2^32 + w) mod m, with r < m: (m-1) two32 + (w mod m) < 2^32.
  const std::uint32_t w[4] = {static_cast<std::uint32_t>(hi >> 32), static_cast<std::uint32_t>(hi),
                              static_cast<std::uint32_t>(lo >> 32), static_cast<std::uint32_t>(lo)};
  std::uint32_t r = 0;
#pragma unroll
  for (int i = 0; i < 4; ++i) r = (r * two32 + w[i] % um) % um;
  int s = static_cast<int>(r);
  if (s > (m - 1) / 2) s -= m;
  return neg ? -s : s;
}
GEMMLAB_HD int residue(std::uint64_t mag, bool neg, int m) { return residue(0, mag, neg, m); }

// The integer m 2^shift (m < 2^53, 0 <= shift, m 2^shift < 2^128) as two words.
GEMMLAB_HD void shifted(std::uint64_t m, int shift, std::uint64_t& hi, std::uint64_t& lo) {
  if (m == 0) {
    hi = lo = 0;
  } else if (shift >= 64) {
    hi = m << (shift - 64), lo = 0;
  } else {
    hi = shift == 0 ? 0 : m >> (64 - shift), lo = m << shift;
  }
}

// X from its per-modulus sums g(p) (any integers congruent to X mod m_p, |g| < 2^31): X = (neg ?
// -mag : mag), exact, given |X| < M / 2. The plan's moduli are kModuli's first P (make_plan), read as
// constants so that each % is a multiplication.
template <class G>
GEMMLAB_HD void reconstruct(const Plan& pl, G g, std::uint64_t (&mag)[kLimbs], bool& neg) {
  // acc = sum_p u_p (M / m_p) in base-2^32 words, each word's products summed in 64 bits (u_p < 2^8, a
  // word < 2^32, P <= 24 terms: below 2^45), the carries propagated once.
  std::uint64_t w32[2 * kLimbs] = {};
  double q = 0;  // sum_p u_p / m_p = acc / M exactly (as rationals); here rounded
#pragma unroll
  for (int p = 0; p < kMaxModuli; ++p) {
    if (p < pl.P) {
      const int m = modulus(p);
      int r = static_cast<int>(g(p) % m);
      if (r < 0) r += m;
      const std::uint64_t u = static_cast<std::uint64_t>(r * pl.y[p] % m);
#pragma unroll
      for (int w = 0; w < kLimbs; ++w) {
        w32[2 * w] += u * (pl.Mp[p][w] & 0xFFFFFFFFull);
        w32[2 * w + 1] += u * (pl.Mp[p][w] >> 32);
      }
      q += static_cast<double>(u) * pl.inv[p];
    }
  }
  std::uint64_t acc[kLimbs];
#pragma unroll
  for (int w = 0; w + 1 < 2 * kLimbs; ++w) {
    w32[w + 1] += w32[w] >> 32;
    w32[w] &= 0xFFFFFFFFull;
  }
#pragma unroll
  for (int w = 0; w < kLimbs; ++w) acc[w] = w32[2 * w] | (w32[2 * w + 1] << 32);  // acc < P M < 2^192
  // acc = k M + (X mod M), 0 <= k < P; q is within P 2^-45 of acc / M, so floor(q) - 1 <= k and
  // acc - (floor(q) - 1) M lies in [0, 3 M): at most two exact corrections.
  const long k0 = static_cast<long>(q) - 1;
  if (k0 > 0) {
    std::uint64_t t[kLimbs];
    detail::mul_small(pl.M, static_cast<std::uint64_t>(k0), t);
    detail::sub_from(acc, t);
  }
  for (int it = 0; it < 3 && !detail::less(acc, pl.M); ++it) detail::sub_from(acc, pl.M);
  neg = detail::less(pl.half, acc);  // acc > (M - 1) / 2: X = acc - M < 0
  if (neg) {
    std::uint64_t t[kLimbs];
    for (int w = 0; w < kLimbs; ++w) t[w] = pl.M[w];
    detail::sub_from(t, acc);  // M - acc
    for (int w = 0; w < kLimbs; ++w) mag[w] = t[w];
  } else {
    for (int w = 0; w < kLimbs; ++w) mag[w] = acc[w];
  }
}

}  // namespace gemmlab::crt
