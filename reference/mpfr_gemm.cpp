// MPFR oracle for C = A*B.
//
// Numerics: every finite input is m * 2^lsb with m odd (long_accumulator.hpp), so every product
// and every partial sum of row i of A against column j of B is an integer multiple of
// 2^(lsb_min(A) + lsb_min(B)) below 2^(top(A) + top(B) + ceil(log2 K)) in magnitude.
// mpfr_exact_precision covers that span (plus a margin), so each mpfr_fma is exact; the ternary
// value of every operation is checked, and a non-zero one (a rounding) throws std::logic_error.
// The exact sum is then rounded once: mpfr_get_d (nearest-even, gradual underflow) for c,
// round_to(out, mpfr value) for c_out (directly from MPFR, so the tests check the round-to-odd
// route of the fast engines independently), and round-to-odd for c_odd: mpfr_get_d toward zero,
// then the last bit set when that was inexact (on the binary64 grid with gradual underflow; an
// overflow gives the largest finite double). |A||B| is a second exact sum, of |a||b|, rounded to
// nearest-even. An exact zero sum is +0 (the accumulator starts at +0).
#include "reference/mpfr_gemm.hpp"

#include <mpfr.h>

#include <atomic>
#include <bit>
#include <cmath>
#include <chrono>
#include <stdexcept>
#include <string>

#include "reference/formats_mpfr.hpp"
#include "reference/long_accumulator.hpp"
#include "reference/parallel.hpp"

namespace gemmlab {
namespace {

long precision_for(const detail::ExponentRange& a, const detail::ExponentRange& b, long K) {
  if (!a.any_nonzero || !b.any_nonzero) return 64;
  const long span = static_cast<long>(a.top_max) + b.top_max - (static_cast<long>(a.lsb_min) + b.lsb_min);
  return std::max(64L, span + detail::ceil_log2(K) + 2);
}

// Inputs held as 53-bit MPFR numbers (exact for every double), shared read-only by the threads.
struct MpfrMatrix {
  std::vector<__mpfr_struct> v;
  MpfrMatrix(const Matrix& X, bool transpose) : v(X.v.size()) {
    const int R = transpose ? X.cols : X.rows, C = transpose ? X.rows : X.cols;
    for (int r = 0; r < R; ++r)
      for (int c = 0; c < C; ++c) {
        mpfr_ptr p = &v[static_cast<std::size_t>(r) * C + c];
        mpfr_init2(p, 53);
        mpfr_set_d(p, transpose ? X(c, r) : X(r, c), MPFR_RNDN);
      }
  }
  ~MpfrMatrix() {
    for (__mpfr_struct& x : v) mpfr_clear(&x);
  }
  MpfrMatrix(const MpfrMatrix&) = delete;
  MpfrMatrix& operator=(const MpfrMatrix&) = delete;
};

// acc = sum_k a[k] * b[k] (magnitudes: sum_k |a[k]| |b[k]|), exactly; throws if MPFR reports a
// rounding. tmp: scratch at the same precision.
void exact_sum(mpfr_ptr acc, mpfr_ptr tmp, const __mpfr_struct* a, const __mpfr_struct* b, int K,
               bool magnitudes = false) {
  mpfr_set_zero(acc, +1);
  for (int k = 0; k < K; ++k) {
    int inexact;
    if (magnitudes) {
      inexact = mpfr_mul(tmp, a + k, b + k, MPFR_RNDN);
      mpfr_abs(tmp, tmp, MPFR_RNDN);
      inexact |= mpfr_add(acc, acc, tmp, MPFR_RNDN);
    } else {
      inexact = mpfr_fma(acc, a + k, b + k, acc, MPFR_RNDN);
    }
    if (inexact != 0)
      throw std::logic_error("mpfr_gemm: an MPFR sum rounded at precision " +
                             std::to_string(mpfr_get_prec(acc)) +
                             " bits; mpfr_exact_precision is too small for these inputs (a bug)");
  }
}

// acc rounded to binary64 with round-to-odd.
double round_odd(mpfr_srcptr acc) {
  const double z = mpfr_get_d(acc, MPFR_RNDZ);
  if (std::isnan(z) || mpfr_cmp_d(acc, z) == 0) return z;
  return std::bit_cast<double>(std::bit_cast<std::uint64_t>(z) | 1);
}

}  // namespace

long mpfr_exact_precision(const Matrix& A, const Matrix& B) {
  detail::check_shapes(A, B, "mpfr_exact_precision");
  return precision_for(detail::scan_range(A), detail::scan_range(B), A.cols);
}

GemmReference mpfr_gemm(const Matrix& A, const Matrix& B, Format out, int threads) {
  const auto t0 = std::chrono::steady_clock::now();
  detail::check_shapes(A, B, "mpfr_gemm");
  GemmReference r;
  r.M = A.rows, r.N = B.cols, r.K = A.cols, r.out = out, r.engine = "mpfr";
  const std::size_t mn = static_cast<std::size_t>(r.M) * r.N;
  r.c.assign(mn, 0.0);
  r.c_odd.assign(mn, 0.0);
  r.c_out.assign(mn, 0.0);
  r.abs_ab.assign(mn, 0.0);
  r.row_max_a = row_max_abs(A);
  r.col_max_b = col_max_abs(B);
  const long prec = mpfr_exact_precision(A, B);
  const MpfrMatrix ma(A, false), mb(B, true);  // (M, K) and (N, K)
  const int nt = std::min(resolve_threads(threads), std::max(r.M, 1));
  // Rows dealt round-robin to nt tasks; each task owns one accumulator and frees MPFR's
  // per-thread caches when done.
  parallel_for(nt, nt, [&](long t) {
    mpfr_t acc, tmp;
    mpfr_init2(acc, prec);
    mpfr_init2(tmp, prec);
    try {
      for (int i = static_cast<int>(t); i < r.M; i += nt)
        for (int j = 0; j < r.N; ++j) {
          const __mpfr_struct* a = ma.v.data() + static_cast<std::size_t>(i) * r.K;
          const __mpfr_struct* b = mb.v.data() + static_cast<std::size_t>(j) * r.K;
          exact_sum(acc, tmp, a, b, r.K);
          const std::size_t idx = static_cast<std::size_t>(i) * r.N + j;
          r.c[idx] = mpfr_get_d(acc, MPFR_RNDN);
          r.c_odd[idx] = round_odd(acc);
          r.c_out[idx] = round_to(out, acc);
          exact_sum(acc, tmp, a, b, r.K, true);
          r.abs_ab[idx] = mpfr_get_d(acc, MPFR_RNDN);
        }
    } catch (...) {
      mpfr_clear(acc);
      mpfr_clear(tmp);
      mpfr_free_cache();
      throw;
    }
    mpfr_clear(acc);
    mpfr_clear(tmp);
    mpfr_free_cache();
  });
  r.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  return r;
}

double mpfr_dot(const Matrix& A, const Matrix& B, int i, int j) {
  detail::check_shapes(A, B, "mpfr_dot");
  if (i < 0 || i >= A.rows || j < 0 || j >= B.cols)
    throw std::out_of_range("mpfr_dot: entry (" + std::to_string(i) + ", " + std::to_string(j) +
                            ") is outside the " + std::to_string(A.rows) + "x" + std::to_string(B.cols) +
                            " result");
  Matrix a(1, A.cols), b(B.rows, 1);
  for (int k = 0; k < A.cols; ++k) a(0, k) = A(i, k), b(k, 0) = B(k, j);
  const MpfrMatrix ma(a, false), mb(b, true);
  mpfr_t acc, tmp;
  mpfr_init2(acc, mpfr_exact_precision(a, b));
  mpfr_init2(tmp, mpfr_get_prec(acc));
  double result;
  try {
    exact_sum(acc, tmp, ma.v.data(), mb.v.data(), a.cols);
    result = mpfr_get_d(acc, MPFR_RNDN);
  } catch (...) {
    mpfr_clear(acc);
    mpfr_clear(tmp);
    throw;
  }
  mpfr_clear(acc);
  mpfr_clear(tmp);
  return result;
}

}  // namespace gemmlab
