// The fast exact reference GEMM.
//
// Numerics: every finite double is exactly sign * m * 2^lsb with m an odd integer below 2^53
// (long_accumulator.hpp), so every product of two inputs is exactly (ma * mb) * 2^(lsba + lsbb), an
// integer of at most 106 bits times a power of two, whatever format the inputs came from. Each
// C(i,j) is therefore an exact sum of such terms, which two engines accumulate without any rounding:
//  * fixed_int128: all of A is scaled to int64 on the common grid 2^ea (ea = smallest lsb in A), all
//    of B to int64 on 2^eb; when bits(max|ia|) + bits(max|ib|) + ceil(log2 K) + 1 <= 126 every
//    partial sum fits a signed __int128, so the dot products are plain integer multiply-adds. This
//    is the hot path (fp16 data; fp32 data of moderate range such as U[0,1) or N(0,1)).
//  * kulisch: a two's-complement fixed-point accumulator of 64-bit limbs covering the whole product
//    exponent range of the data (lsb_min(A) + lsb_min(B) up to top(A) + top(B) + log2 K), into which
//    each 106-bit product is added at its bit offset with carry/borrow propagation. Any finite data.
// The same engines sum |a||b| exactly for abs_ab (a second accumulator fed the magnitudes; in
// fixed_int128 the signed one when A and B are non-negative).
// The exact sum is then rounded once: to binary64 round-to-nearest-even for c, round-to-odd for
// c_odd, and for c_out to binary64 round-to-odd followed by round_to(out, .), which equals a
// single round-to-nearest-even into any format of precision <= 51 bits (Boldo & Melquiond, "Emulation of FMA and correctly
// rounded sums: proved algorithms using rounding to odd", IEEE TC 2008); out == fp64 takes c.
// Entries whose row of A or column of B holds an infinity or NaN follow IEEE/MPFR semantics
// (nonfinite_dot). An exact zero sum is +0, as MPFR's round-to-nearest sums give.
#include "reference/exact_gemm.hpp"

#include <atomic>
#include <cmath>
#include <chrono>
#include <cstring>
#include <exception>
#include <limits>
#include <mutex>
#include <stdexcept>
#include <thread>

#include "reference/long_accumulator.hpp"
#include "reference/parallel.hpp"

namespace gemmlab {
namespace detail {

double round_bigint(const std::uint64_t* mag, int limbs, long e0, bool neg, bool odd) {
  int t = limbs - 1;
  while (t >= 0 && mag[t] == 0) --t;
  if (t < 0) return 0.0;
  const long L = 64L * t + std::bit_width(mag[t]);  // bit length of mag
  const long E = e0 + L - 1;                         // exponent of the leading bit
  const double sign = neg ? -1.0 : 1.0;
  if (E > 1023) return sign * (odd ? std::numeric_limits<double>::max() : std::numeric_limits<double>::infinity());
  const long q = std::max(E - 52, -1074L);  // exponent of the result's last bit (subnormals: -1074)
  const long d = q - e0;                    // bits of mag below the result's last bit
  if (d <= 0) return sign * std::ldexp(static_cast<double>(mag[0]), static_cast<int>(e0));  // L <= 53
  auto bit = [&](long pos) -> std::uint64_t {
    return (pos >> 6) < limbs ? (mag[pos >> 6] >> (pos & 63)) & 1 : 0;
  };
  // kept = mag >> d (at most 53 bits)
  const long lo = d >> 6;
  const int sh = static_cast<int>(d & 63);
  std::uint64_t kept = lo < limbs ? mag[lo] >> sh : 0;
  if (sh != 0 && lo + 1 < limbs) kept |= mag[lo + 1] << (64 - sh);
  const std::uint64_t half = bit(d - 1);
  bool sticky = false;
  const long sb = d - 1;  // sticky bits: [0, d - 1)
  for (long w = 0; w < (sb >> 6) && !sticky; ++w) sticky = mag[w] != 0;
  if (!sticky && (sb & 63) != 0) sticky = (mag[sb >> 6] & ((1ull << (sb & 63)) - 1)) != 0;
  if (odd) {
    if (half | sticky) kept |= 1;
  } else if (half && (sticky || (kept & 1))) {
    ++kept;  // may reach 2^53: still exact as a double; ldexp overflows to inf past the top
  }
  return sign * std::ldexp(static_cast<double>(kept), static_cast<int>(q));
}

double nonfinite_dot(const Matrix& A, const Matrix& B, int i, int j) {
  bool pos_inf = false, neg_inf = false;
  for (int k = 0; k < A.cols; ++k) {
    const double p = A(i, k) * B(k, j);  // inf * finite non-zero = inf, inf * 0 = NaN
    if (std::isnan(p)) return std::numeric_limits<double>::quiet_NaN();
    if (std::isinf(p)) (p > 0 ? pos_inf : neg_inf) = true;
  }
  if (pos_inf && neg_inf) return std::numeric_limits<double>::quiet_NaN();
  return pos_inf ? std::numeric_limits<double>::infinity() : -std::numeric_limits<double>::infinity();
}

void check_shapes(const Matrix& A, const Matrix& B, const char* who) {
  if (A.rows < 0 || A.cols < 0 || B.rows < 0 || B.cols < 0 ||
      A.v.size() != static_cast<std::size_t>(A.rows) * A.cols ||
      B.v.size() != static_cast<std::size_t>(B.rows) * B.cols)
    throw std::invalid_argument(std::string(who) + ": a matrix's storage does not match its rows x cols");
  if (A.cols != B.rows)
    throw std::invalid_argument(std::string(who) + ": A is " + std::to_string(A.rows) + "x" +
                                std::to_string(A.cols) + " but B is " + std::to_string(B.rows) + "x" +
                                std::to_string(B.cols) + "; A's columns must equal B's rows (K)");
}

double nonfinite_abs_dot(const Matrix& A, const Matrix& B, int i, int j) {
  bool inf = false;
  for (int k = 0; k < A.cols; ++k) {
    const double p = std::fabs(A(i, k)) * std::fabs(B(k, j));  // inf * 0 = NaN
    if (std::isnan(p)) return std::numeric_limits<double>::quiet_NaN();
    inf = inf || std::isinf(p);
  }
  return inf ? std::numeric_limits<double>::infinity() : 0.0;  // (callers only ask when inf or NaN occurs)
}

}  // namespace detail

namespace {

using detail::Decomposed;
using detail::ExponentRange;
using i128 = __int128;
using u128 = unsigned __int128;

struct Ranges {
  ExponentRange a, b;
  int log2k = 0;
};

Ranges scan(const Matrix& A, const Matrix& B) {
  return {detail::scan_range(A), detail::scan_range(B), detail::ceil_log2(A.cols)};
}

bool fits_int128(const Ranges& r) {
  return r.a.bits() <= 63 && r.b.bits() <= 63 && r.a.bits() + r.b.bits() + r.log2k + 1 <= 126;
}

// Rows of A and columns of B that hold an infinity or NaN.
struct NonFinite {
  std::vector<char> row, col;
  bool any = false;
};

NonFinite find_nonfinite(const Matrix& A, const Matrix& B) {
  NonFinite nf;
  nf.row.assign(A.rows, 0);
  nf.col.assign(B.cols, 0);
  for (int i = 0; i < A.rows; ++i)
    for (int k = 0; k < A.cols; ++k)
      if (!std::isfinite(A(i, k))) nf.row[i] = nf.any = true;
  for (int k = 0; k < B.rows; ++k)
    for (int j = 0; j < B.cols; ++j)
      if (!std::isfinite(B(k, j))) nf.col[j] = nf.any = true;
  return nf;
}

// Writes c, c_odd and c_out of entry (i, j) from the exact sum sign * mag * 2^e0, and abs_ab from
// the exact sum of |a||b|, amag * 2^e0.
struct Output {
  GemmReference& r;
  const Matrix& A;
  const Matrix& B;
  const NonFinite& nf;
  void set(int i, int j, const std::uint64_t* mag, int limbs, long e0, bool neg) const {
    const std::size_t idx = static_cast<std::size_t>(i) * r.N + j;
    if (nf.any && (nf.row[i] || nf.col[j])) {
      r.c[idx] = r.c_odd[idx] = detail::nonfinite_dot(A, B, i, j);
      r.c_out[idx] = round_to(r.out, r.c[idx]);
      return;
    }
    r.c[idx] = detail::round_bigint(mag, limbs, e0, neg, false);
    r.c_odd[idx] = detail::round_bigint(mag, limbs, e0, neg, true);
    r.c_out[idx] = r.out == Format::fp64 ? r.c[idx] : round_to(r.out, r.c_odd[idx]);
  }
  void set_abs(int i, int j, const std::uint64_t* amag, int limbs, long e0) const {
    const std::size_t idx = static_cast<std::size_t>(i) * r.N + j;
    if (nf.any && (nf.row[i] || nf.col[j]))
      r.abs_ab[idx] = detail::nonfinite_abs_dot(A, B, i, j);
    else
      r.abs_ab[idx] = detail::round_bigint(amag, limbs, e0, false, false);
  }
};

// ---- fixed_int128 ---------------------------------------------------------------------------

// X scaled to integers on the grid 2^lsb_min: (rows, K) row-major, or transposed for B.
std::vector<std::int64_t> to_int64(const Matrix& X, int lsb_min, bool transpose, int padded_rows) {
  const int R = transpose ? X.cols : X.rows, K = transpose ? X.rows : X.cols;
  std::vector<std::int64_t> out(static_cast<std::size_t>(padded_rows) * K, 0);
  for (int r = 0; r < R; ++r)
    for (int k = 0; k < K; ++k) {
      const double x = transpose ? X(k, r) : X(r, k);
      if (x == 0.0 || !std::isfinite(x)) continue;
      const Decomposed d = detail::decompose(x);
      const auto v = static_cast<std::int64_t>(d.m << (d.lsb - lsb_min));  // < 2^63 (fits_int128)
      out[static_cast<std::size_t>(r) * K + k] = d.neg ? -v : v;
    }
  return out;
}

// (2, 2) block of dot products over n terms: acc[2*r + c] += sum_k a_r[k] * b_c[k], exact in int128.
inline void micro_2x2(const std::int64_t* a0, const std::int64_t* a1, const std::int64_t* b0,
                      const std::int64_t* b1, int n, i128* acc) {
  i128 s00 = acc[0], s01 = acc[1], s10 = acc[2], s11 = acc[3];
  for (int k = 0; k < n; ++k) {
    const std::int64_t x0 = a0[k], x1 = a1[k], y0 = b0[k], y1 = b1[k];
    s00 += static_cast<i128>(x0) * y0;
    s01 += static_cast<i128>(x0) * y1;
    s10 += static_cast<i128>(x1) * y0;
    s11 += static_cast<i128>(x1) * y1;
  }
  acc[0] = s00, acc[1] = s01, acc[2] = s10, acc[3] = s11;
}

void run_fixed_int128(const Matrix& A, const Matrix& B, const Ranges& rg, const Output& o, int threads) {
  const int M = A.rows, K = A.cols, N = B.cols;
  const int Mp = M + (M & 1), Np = N + (N & 1);  // padded with zero rows for the 2x2 blocks
  const int ea = rg.a.any_nonzero ? rg.a.lsb_min : 0, eb = rg.b.any_nonzero ? rg.b.lsb_min : 0;
  const std::vector<std::int64_t> ia = to_int64(A, ea, false, Mp);
  const std::vector<std::int64_t> ib = to_int64(B, eb, true, Np);  // (N, K): B transposed
  // With no negative entry, |A||B| = A B and one accumulator serves both; otherwise |ia|, |ib|.
  const bool nonneg = std::none_of(ia.begin(), ia.end(), [](std::int64_t v) { return v < 0; }) &&
                      std::none_of(ib.begin(), ib.end(), [](std::int64_t v) { return v < 0; });
  std::vector<std::int64_t> iaa, iba;
  if (!nonneg) {
    iaa.resize(ia.size()), iba.resize(ib.size());
    for (std::size_t x = 0; x < ia.size(); ++x) iaa[x] = ia[x] < 0 ? -ia[x] : ia[x];
    for (std::size_t x = 0; x < ib.size(); ++x) iba[x] = ib[x] < 0 ? -ib[x] : ib[x];
  }
  // Output tiles of (kBI, kBJ) entries; K in chunks of kKC so that the tile's (kBI + kBJ) rows of
  // kKC int64 stay in L2 while every pair of rows meets.
  constexpr int kBI = 32, kBJ = 32, kKC = 512;
  const long tiles_i = (Mp + kBI - 1) / kBI, tiles_j = (Np + kBJ - 1) / kBJ;
  parallel_for(tiles_i * tiles_j, threads, [&](long t) {
    const int i0 = static_cast<int>(t / tiles_j) * kBI, j0 = static_cast<int>(t % tiles_j) * kBJ;
    const int i1 = std::min(i0 + kBI, Mp), j1 = std::min(j0 + kBJ, Np);
    // acc[(i - i0) * kBJ + (j - j0)]: sum of products; aacc: sum of |products| (< 2^125: fits)
    i128 acc[kBI * kBJ] = {}, aacc[kBI * kBJ] = {};
    for (int k0 = 0; k0 < K; k0 += kKC) {
      const int n = std::min(kKC, K - k0);
      for (int i = i0; i < i1; i += 2) {
        const std::int64_t* a0 = ia.data() + static_cast<std::size_t>(i) * K + k0;
        for (int j = j0; j < j1; j += 2) {
          const std::int64_t* b0 = ib.data() + static_cast<std::size_t>(j) * K + k0;
          const int at[4] = {(i - i0) * kBJ + j - j0, (i - i0) * kBJ + j + 1 - j0, (i + 1 - i0) * kBJ + j - j0,
                             (i + 1 - i0) * kBJ + j + 1 - j0};
          i128 s[4] = {acc[at[0]], acc[at[1]], acc[at[2]], acc[at[3]]};
          micro_2x2(a0, a0 + K, b0, b0 + K, n, s);
          if (!nonneg) {  // the magnitudes: a second pass over |ia|, |ib| (faster than one fused pass)
            const std::int64_t* aa0 = iaa.data() + static_cast<std::size_t>(i) * K + k0;
            const std::int64_t* bb0 = iba.data() + static_cast<std::size_t>(j) * K + k0;
            i128 m[4] = {aacc[at[0]], aacc[at[1]], aacc[at[2]], aacc[at[3]]};
            micro_2x2(aa0, aa0 + K, bb0, bb0 + K, n, m);
            for (int q = 0; q < 4; ++q) aacc[at[q]] = m[q];
          }
          for (int q = 0; q < 4; ++q) acc[at[q]] = s[q];
        }
      }
    }
    for (int i = i0; i < std::min(i1, M); ++i)
      for (int j = j0; j < std::min(j1, N); ++j) {
        const i128 s = acc[(i - i0) * kBJ + j - j0];
        const u128 mag = s < 0 ? -static_cast<u128>(s) : static_cast<u128>(s);
        const std::uint64_t limbs[2] = {static_cast<std::uint64_t>(mag), static_cast<std::uint64_t>(mag >> 64)};
        o.set(i, j, limbs, 2, static_cast<long>(ea) + eb, s < 0);
        const auto amag = static_cast<u128>(nonneg ? s : aacc[(i - i0) * kBJ + j - j0]);
        const std::uint64_t alimbs[2] = {static_cast<std::uint64_t>(amag), static_cast<std::uint64_t>(amag >> 64)};
        o.set_abs(i, j, alimbs, 2, static_cast<long>(ea) + eb);
      }
  });
}

// ---- kulisch --------------------------------------------------------------------------------

struct Term {
  std::uint64_t m;  // odd significand (0 for zero or non-finite entries)
  std::int32_t lsb;
  std::int32_t neg;
};

std::vector<Term> to_terms(const Matrix& X, bool transpose) {
  const int R = transpose ? X.cols : X.rows, K = transpose ? X.rows : X.cols;
  std::vector<Term> out(static_cast<std::size_t>(R) * K, Term{0, 0, 0});
  for (int r = 0; r < R; ++r)
    for (int k = 0; k < K; ++k) {
      const double x = transpose ? X(k, r) : X(r, k);
      if (x == 0.0 || !std::isfinite(x)) continue;
      const Decomposed d = detail::decompose(x);
      out[static_cast<std::size_t>(r) * K + k] = Term{d.m, d.lsb, d.neg};
    }
  return out;
}

void run_kulisch(const Matrix& A, const Matrix& B, const Ranges& rg, const Output& o, int threads) {
  const int M = A.rows, K = A.cols, N = B.cols;
  const std::vector<Term> ta = to_terms(A, false);
  const std::vector<Term> tb = to_terms(B, true);  // (N, K)
  const long base = rg.a.any_nonzero && rg.b.any_nonzero ? static_cast<long>(rg.a.lsb_min) + rg.b.lsb_min : 0;
  // Magnitudes stay below 2^(bits(A) + bits(B) + log2 K); one more bit for the sign, and three
  // spare limbs so that a product's three-limb window never leaves the array.
  const long width = static_cast<long>(rg.a.bits()) + rg.b.bits() + rg.log2k + 1;
  const int limbs = static_cast<int>((width + 63) / 64) + 3;
  constexpr int kBI = 16, kBJ = 16;
  const long tiles_i = (M + kBI - 1) / kBI, tiles_j = (N + kBJ - 1) / kBJ;
  parallel_for(tiles_i * tiles_j, threads, [&](long t) {
    const int i0 = static_cast<int>(t / tiles_j) * kBI, j0 = static_cast<int>(t % tiles_j) * kBJ;
    std::vector<std::uint64_t> acc(limbs), aacc(limbs);  // sum of products, of |products|
    for (int i = i0; i < std::min(i0 + kBI, M); ++i)
      for (int j = j0; j < std::min(j0 + kBJ, N); ++j) {
        std::fill(acc.begin(), acc.end(), 0);
        std::fill(aacc.begin(), aacc.end(), 0);
        const Term* a = ta.data() + static_cast<std::size_t>(i) * K;
        const Term* b = tb.data() + static_cast<std::size_t>(j) * K;
        for (int k = 0; k < K; ++k) {
          if ((a[k].m == 0) | (b[k].m == 0)) continue;
          const u128 p = static_cast<u128>(a[k].m) * b[k].m;
          const long at = static_cast<long>(a[k].lsb) + b[k].lsb - base;
          detail::kulisch_add(acc.data(), limbs, at, p, a[k].neg != b[k].neg);
          detail::kulisch_add(aacc.data(), limbs, at, p, false);
        }
        const bool neg = detail::kulisch_to_magnitude(acc.data(), limbs);
        o.set(i, j, acc.data(), limbs, base, neg);
        o.set_abs(i, j, aacc.data(), limbs, base);
      }
  });
}

GemmReference compute(const Matrix& A, const Matrix& B, Format out, int threads, ExactEngine engine,
                      bool with_abs) {
  const auto t0 = std::chrono::steady_clock::now();
  detail::check_shapes(A, B, "exact_gemm");
  GemmReference r;
  r.M = A.rows, r.N = B.cols, r.K = A.cols, r.out = out;
  const std::size_t mn = static_cast<std::size_t>(r.M) * r.N;
  r.c.assign(mn, 0.0);
  r.c_odd.assign(mn, 0.0);
  r.c_out.assign(mn, 0.0);
  r.abs_ab.assign(mn, 0.0);
  const Ranges rg = scan(A, B);
  const NonFinite nf = (rg.a.any_nonfinite || rg.b.any_nonfinite) ? find_nonfinite(A, B) : NonFinite{};
  const Output o{r, A, B, nf};
  const bool fits = fits_int128(rg);
  if (engine == ExactEngine::fixed_int128 && !fits)
    throw std::invalid_argument(
        "exact_gemm: the fixed_int128 engine was forced, but the inputs need " +
        std::to_string(rg.a.bits()) + " + " + std::to_string(rg.b.bits()) + " + log2 K (" +
        std::to_string(rg.log2k) + ") + 1 bits, more than 126; use ExactEngine::automatic or kulisch");
  if (engine == ExactEngine::kulisch || (engine == ExactEngine::automatic && !fits)) {
    r.engine = "kulisch";
    run_kulisch(A, B, rg, o, threads);
  } else {
    r.engine = "fixed_int128";
    run_fixed_int128(A, B, rg, o, threads);
  }
  if (!with_abs) r.abs_ab.clear();
  r.row_max_a = row_max_abs(A);
  r.col_max_b = col_max_abs(B);
  r.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  return r;
}

}  // namespace

std::vector<double> output_reference(const GemmReference& ref, Format out) {
  if (out == Format::fp64) return ref.c;
  if (ref.c_odd.size() != ref.c.size())
    throw std::invalid_argument("output_reference: this reference has no c_odd (" + std::to_string(ref.c_odd.size()) +
                                " entries for " + std::to_string(ref.c.size()) + ")");
  std::vector<double> r(ref.c_odd.size());
  for (std::size_t i = 0; i < r.size(); ++i) r[i] = round_to(out, ref.c_odd[i]);
  return r;
}

GemmReference exact_gemm(const Matrix& A, const Matrix& B, Format out, int threads, ExactEngine engine) {
  return compute(A, B, out, threads, engine, true);
}

GemmReference exact_gemm(const Matrix& A, const Matrix& B, Format out, int threads) {
  return compute(A, B, out, threads, ExactEngine::automatic, true);
}

std::vector<double> row_max_abs(const Matrix& A) {
  std::vector<double> m(static_cast<std::size_t>(std::max(A.rows, 0)), 0.0);
  for (int i = 0; i < A.rows; ++i)
    for (int k = 0; k < A.cols; ++k) m[i] = std::fmax(m[i], std::fabs(A(i, k)));
  return m;
}

std::vector<double> col_max_abs(const Matrix& B) {
  std::vector<double> m(static_cast<std::size_t>(std::max(B.cols, 0)), 0.0);
  for (int k = 0; k < B.rows; ++k)
    for (int j = 0; j < B.cols; ++j) m[j] = std::fmax(m[j], std::fabs(B(k, j)));
  return m;
}

bool fits_fixed_int128(const Matrix& A, const Matrix& B) {
  detail::check_shapes(A, B, "fits_fixed_int128");
  return fits_int128(scan(A, B));
}

double exact_dot(const Matrix& A, const Matrix& B, int i, int j) {
  detail::check_shapes(A, B, "exact_dot");
  if (i < 0 || i >= A.rows || j < 0 || j >= B.cols)
    throw std::out_of_range("exact_dot: entry (" + std::to_string(i) + ", " + std::to_string(j) +
                            ") is outside the " + std::to_string(A.rows) + "x" + std::to_string(B.cols) +
                            " result");
  Matrix a(1, A.cols), b(B.rows, 1);
  for (int k = 0; k < A.cols; ++k) a(0, k) = A(i, k), b(k, 0) = B(k, j);
  return compute(a, b, Format::fp64, 1, ExactEngine::kulisch, false).c[0];
}

}  // namespace gemmlab
