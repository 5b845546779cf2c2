// MPFR oracle for C = A*B.
//
// Numerics: every finite input is m * 2^lsb with m odd (long_accumulator.hpp), so every product
// and every partial sum of row i of A against column j of B is an integer multiple of
// 2^(lsb_min(A) + lsb_min(B)) below 2^(top(A) + top(B) + ceil(log2 K)) in magnitude.
// mpfr_exact_precision covers that span (plus a margin), so each mpfr_fma is exact; the ternary
// value of every operation is checked, and a non-zero one (a rounding) throws std::logic_error.
// The exact sum is then rounded once: mpfr_get_d (nearest-even, gradual underflow) for c and
// round_to(out, mpfr value) for c_out. An exact zero sum is +0 (the accumulator starts at +0).
#include "reference/mpfr_gemm.hpp"

#include <mpfr.h>

#include <atomic>
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

// acc = sum_k a[k] * b[k], exactly; throws if MPFR reports a rounding.
void exact_sum(mpfr_ptr acc, const __mpfr_struct* a, const __mpfr_struct* b, int K) {
  mpfr_set_zero(acc, +1);
  for (int k = 0; k < K; ++k)
    if (mpfr_fma(acc, a + k, b + k, acc, MPFR_RNDN) != 0)
      throw std::logic_error("mpfr_gemm: an mpfr_fma rounded at precision " +
                             std::to_string(mpfr_get_prec(acc)) +
                             " bits; mpfr_exact_precision is too small for these inputs (a bug)");
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
  r.c_out.assign(mn, 0.0);
  const long prec = mpfr_exact_precision(A, B);
  const MpfrMatrix ma(A, false), mb(B, true);  // (M, K) and (N, K)
  const int nt = std::min(resolve_threads(threads), std::max(r.M, 1));
  // Rows dealt round-robin to nt tasks; each task owns one accumulator and frees MPFR's
  // per-thread caches when done.
  parallel_for(nt, nt, [&](long t) {
    mpfr_t acc;
    mpfr_init2(acc, prec);
    try {
      for (int i = static_cast<int>(t); i < r.M; i += nt)
        for (int j = 0; j < r.N; ++j) {
          exact_sum(acc, ma.v.data() + static_cast<std::size_t>(i) * r.K, mb.v.data() + static_cast<std::size_t>(j) * r.K,
                    r.K);
          const std::size_t idx = static_cast<std::size_t>(i) * r.N + j;
          r.c[idx] = mpfr_get_d(acc, MPFR_RNDN);
          r.c_out[idx] = round_to(out, acc);
        }
    } catch (...) {
      mpfr_clear(acc);
      mpfr_free_cache();
      throw;
    }
    mpfr_clear(acc);
    mpfr_free_cache();
  });
  r.abs_ab = detail::abs_product(A, B, threads);
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
  mpfr_t acc;
  mpfr_init2(acc, mpfr_exact_precision(a, b));
  double result;
  try {
    exact_sum(acc, ma.v.data(), mb.v.data(), a.cols);
    result = mpfr_get_d(acc, MPFR_RNDN);
  } catch (...) {
    mpfr_clear(acc);
    throw;
  }
  mpfr_clear(acc);
  return result;
}

}  // namespace gemmlab
