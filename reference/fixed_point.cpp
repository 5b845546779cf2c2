// The fixed-point model (fixed_point.hpp): digits per operand, exact integer levels per K chunk,
// binary64 sums. Compiled with -ffp-contract=off like the rest of reference/: the binary64 sums are
// the named additions.
#include "reference/fixed_point.hpp"

#include <cmath>
#include <cstdint>
#include <stdexcept>
#include <string>

#include "reference/parallel.hpp"

namespace gemmlab::fixed_point {
namespace {

using i128 = __int128;

// Exponent e of the scale 2^e of a row or column whose largest magnitude is amax (0 for zeros).
int scale_exponent(double amax) { return amax > 0 ? std::ilogb(amax) + 1 : 0; }

// The S digits of x on the grid 2^(e - t), digit 0 the most significant: x = 2^e sum_s D_s 2^(1 - 8(s + 1))
// up to the rounding of x 2^(t - e) to an integer.
void digits(double x, int e, const Scheme& s, int S, std::int16_t* D) {
  const double y = std::ldexp(x, s.bits - e);  // exact unless |y| < 1 underflows, which rounds to 0 anyway
  const double r = s.rounding == Rounding::nearest_even ? std::nearbyint(y) : std::trunc(y);
  i128 M = 0;
  if (r != 0) {
    int ex = 0;
    const double m = std::frexp(r, &ex);  // r = m 2^ex, |m| in [0.5, 1), ex <= bits <= 126
    const auto mi = static_cast<long long>(std::ldexp(m, 53));
    M = ex >= 53 ? static_cast<i128>(mi) << (ex - 53) : static_cast<i128>(mi >> (53 - ex));
  }
  for (int d = S - 1; d > 0; --d) {  // balanced base-256 digits from the least significant
    long long low = static_cast<long long>(M & 255);
    if (low >= 128) low -= 256;
    D[d] = static_cast<std::int16_t>(low);
    M = (M - low) / 256;
  }
  D[0] = static_cast<std::int16_t>(M);  // |M| <= 2^t = 2^(8S - 1) leaves at most 128 here
}

}  // namespace

std::vector<double> gemm(const Matrix& A, const Matrix& B, const Scheme& s, int threads) {
  if (A.cols != B.rows)
    throw std::invalid_argument("fixed_point::gemm: A is " + std::to_string(A.rows) + "x" + std::to_string(A.cols) +
                                " but B is " + std::to_string(B.rows) + "x" + std::to_string(B.cols));
  if (s.bits < 1 || s.bits > 126)
    throw std::invalid_argument("fixed_point::gemm: " + std::to_string(s.bits) + " mantissa bits; 1 to 126 are modelled");
  if (s.chunk_k < 1) throw std::invalid_argument("fixed_point::gemm: chunk_k must be at least 1");
  if (s.rounding != Rounding::toward_zero && s.rounding != Rounding::nearest_even)
    throw std::invalid_argument("fixed_point::gemm: the scaled entries round toward_zero or nearest_even");
  const int M = A.rows, N = B.cols, K = A.cols, S = (s.bits + 1 + 7) / 8;
  for (const Matrix* X : {&A, &B})
    for (std::size_t i = 0; i < X->v.size(); ++i)
      if (!std::isfinite(X->v[i]))
        throw std::invalid_argument(std::string("fixed_point::gemm: ") + (X == &A ? "A" : "B") + " holds " +
                                    std::to_string(X->v[i]) + " at index " + std::to_string(i) +
                                    "; the model takes finite operands only");
  // Digits: da[(i K + k) S + d] of A's rows, db[(j K + k) S + d] of B's columns.
  std::vector<int> ea(M), eb(N);
  std::vector<std::int16_t> da(static_cast<std::size_t>(M) * K * S), db(static_cast<std::size_t>(N) * K * S);
  for (int i = 0; i < M; ++i) {
    double amax = 0;
    for (int k = 0; k < K; ++k) amax = std::fmax(amax, std::fabs(A(i, k)));
    ea[i] = scale_exponent(amax);
    for (int k = 0; k < K; ++k) digits(A(i, k), ea[i], s, S, &da[(static_cast<std::size_t>(i) * K + k) * S]);
  }
  for (int j = 0; j < N; ++j) {
    double bmax = 0;
    for (int k = 0; k < K; ++k) bmax = std::fmax(bmax, std::fabs(B(k, j)));
    eb[j] = scale_exponent(bmax);
    for (int k = 0; k < K; ++k) digits(B(k, j), eb[j], s, S, &db[(static_cast<std::size_t>(j) * K + k) * S]);
  }
  const int last = s.triangle ? S + 1 : 2 * S;  // largest level d = s + u formed (digits 1-based)
  std::vector<double> C(static_cast<std::size_t>(M) * N, 0.0);
  parallel_for(M, threads, [&](long i) {
    std::vector<long long> level(static_cast<std::size_t>(last + 1));
    for (int j = 0; j < N; ++j) {
      double c = 0;
      for (int k0 = 0; k0 < K; k0 += s.chunk_k) {
        std::fill(level.begin(), level.end(), 0);
        const int k1 = static_cast<int>(std::min<long>(K, static_cast<long>(k0) + s.chunk_k));
        for (int k = k0; k < k1; ++k) {
          const std::int16_t* a = &da[(static_cast<std::size_t>(i) * K + k) * S];
          const std::int16_t* b = &db[(static_cast<std::size_t>(j) * K + k) * S];
          for (int p = 0; p < S; ++p)
            for (int q = 0; q < S && p + q + 2 <= last; ++q) level[p + q + 2] += static_cast<long long>(a[p]) * b[q];
        }
        for (int d = 2; d <= last; ++d)
          if (level[d] != 0) c += std::ldexp(static_cast<double>(level[d]), 2 - 8 * d + ea[i] + eb[j]);
      }
      C[static_cast<std::size_t>(i) * N + j] = c;
    }
  });
  return C;
}

}  // namespace gemmlab::fixed_point
