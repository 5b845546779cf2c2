// Error statistics of one computed product against its exact reference (see error_stats.hpp).
//
// Numerics of the statistics themselves:
//  * entries are cut into fixed chunks of 2^16; each chunk keeps Welford's (n, mean, M2) in long
//    double and Neumaier-compensated long double sums for the Frobenius norms; chunks are merged in
//    index order with Chan's pairwise update and Neumaier again. The chunking does not depend on
//    the thread count, so the result is the same for every `threads`.
//  * the signed relative error r = (C^ - C) / |C| is formed in long double (C is exact C rounded to
//    binary64; its relative error 2^-53 is far below any kernel's).
//  * percentiles interpolate linearly between order statistics (numpy's default "linear": position
//    (n-1) p), each found by std::nth_element on one copy of the r values: O(n), no sort.
//  * non-finite outputs are counted in `nonfinite` and left out of the relative, normwise and
//    componentwise statistics (which then describe the finite entries); they make within_bound
//    false. zero_reference counts every entry with C == 0, zero_ref_nonzero those where C^ != 0
//    (a NaN counts as nonzero).
#include "reference/error_stats.hpp"

#include <algorithm>
#include <atomic>
#include <cmath>
#include <limits>
#include <stdexcept>
#include <thread>

namespace gemmlab {
namespace {

double acc_u(const BoundModel& m) {
  return m.acc_unit_roundoff > 0 ? m.acc_unit_roundoff : info(m.accumulator).unit_roundoff;
}
double u_eff_of(const BoundModel& m) {
  return m.rounding == Rounding::nearest_even ? acc_u(m) : 2.0 * acc_u(m);
}

// Neumaier's compensated sum in long double.
struct NeumaierSum {
  long double s = 0, c = 0;
  void add(long double x) {
    const long double t = s + x;
    if (std::fabs(s) >= std::fabs(x))
      c += (s - t) + x;
    else
      c += (x - t) + s;
    s = t;
  }
  long double value() const { return s + c; }
};

struct Welford {
  std::int64_t n = 0;
  long double mean = 0, m2 = 0;
  void add(long double x) {
    ++n;
    const long double d = x - mean;
    mean += d / static_cast<long double>(n);
    m2 += d * (x - mean);
  }
  // Chan, Golub, LeVeque: merge two partial results.
  void merge(const Welford& o) {
    if (o.n == 0) return;
    if (n == 0) {
      *this = o;
      return;
    }
    const long double na = static_cast<long double>(n), nb = static_cast<long double>(o.n);
    const long double nn = na + nb;
    const long double d = o.mean - mean;
    mean += d * (nb / nn);
    m2 += o.m2 + d * d * (na * nb / nn);
    n += o.n;
  }
};

struct ChunkStats {
  std::int64_t zero_reference = 0, zero_ref_nonzero = 0, nonfinite = 0, unwritten = 0, correct = 0;
  Welford rel;
  double rel_max_abs = 0;
  NeumaierSum err2, ref2;  // sum (C^ - C)^2 and sum C^2
  double componentwise = 0;
  Welford cw;              // signed (C^ - C) / (|A||B|) over entries with |A||B| > 0
};

constexpr std::size_t kChunk = std::size_t{1} << 16;

// Runs body(chunk_index) for every chunk on `threads` threads (0: hardware_concurrency).
template <class F>
void for_chunks(std::size_t nchunks, int threads, F&& body) {
  int nt = threads > 0 ? threads : static_cast<int>(std::thread::hardware_concurrency());
  nt = std::max(1, std::min<int>(nt, static_cast<int>(std::min<std::size_t>(nchunks, 1 << 20))));
  if (nt == 1) {
    for (std::size_t c = 0; c < nchunks; ++c) body(c);
    return;
  }
  std::atomic<std::size_t> next{0};
  std::vector<std::thread> pool;
  pool.reserve(nt);
  for (int t = 0; t < nt; ++t)
    pool.emplace_back([&] {
      for (std::size_t c; (c = next.fetch_add(1)) < nchunks;) body(c);
    });
  for (auto& th : pool) th.join();
}

// Whether entry i enters the relative statistics, and its r.
inline bool relative_error(double computed, double c, double& r) {
  if (!std::isfinite(computed) || c == 0) return false;
  r = static_cast<double>((static_cast<long double>(computed) - static_cast<long double>(c)) /
                          std::fabs(static_cast<long double>(c)));
  return true;
}

// Quantile p of v (modified: partially reordered), linear interpolation at position (n-1) p.
double quantile(std::vector<double>& v, double p) {
  const std::size_t n = v.size();
  if (n == 0) return 0;
  const double pos = static_cast<double>(n - 1) * p;
  const std::size_t k = std::min(static_cast<std::size_t>(pos), n - 1);
  const double frac = pos - static_cast<double>(k);
  std::nth_element(v.begin(), v.begin() + static_cast<std::ptrdiff_t>(k), v.end());
  const double lo = v[k];
  if (frac == 0 || k + 1 >= n) return lo;
  const double hi = *std::min_element(v.begin() + static_cast<std::ptrdiff_t>(k) + 1, v.end());
  return lo + frac * (hi - lo);
}

// a / b for a, b >= 0 without NaN: an infinite bound gives 0 (unless the error is infinite too), a
// zero bound gives infinity unless the error is zero.
double ratio(double a, double b) {
  constexpr double inf = std::numeric_limits<double>::infinity();
  if (std::isinf(b)) return std::isinf(a) ? inf : 0.0;
  if (b == 0) return a == 0 ? 0.0 : inf;
  return a / b;
}

}  // namespace

double gamma_bound_factor(const BoundModel& m) {
  const double u_eff = u_eff_of(m);
  const double K = static_cast<double>(std::max(m.K, 0));
  if (K * u_eff >= 1) return std::numeric_limits<double>::infinity();
  const double gamma = K * u_eff / (1 - K * u_eff);
  const FormatInfo& in = info(m.input);
  const FormatInfo& comp = info(m.compute);
  const double uc = comp.unit_roundoff;
  const double d_prod = comp.precision >= in.precision ? 0.0 : uc * (2.0 + uc);  // (1+uc)^2 - 1
  const double uo = info(m.output).unit_roundoff;
  const double u_out = uo > acc_u(m) ? uo : 0.0;  // output narrower than the accumulator
  // (1 + d)(1 + g)(1 + o) - 1 expanded, so no small term is lost against the 1.
  return d_prod + gamma + u_out + d_prod * gamma + d_prod * u_out + gamma * u_out +
         d_prod * gamma * u_out;
}

double sqrtk_u(const BoundModel& m) { return std::sqrt(static_cast<double>(std::max(m.K, 0))) * u_eff_of(m); }

ErrorStats compute_error_stats(const std::vector<double>& computed, const GemmReference& ref,
                               const BoundModel& model, int threads) {
  const std::size_t n = static_cast<std::size_t>(std::max(ref.M, 0)) * static_cast<std::size_t>(std::max(ref.N, 0));
  if (computed.size() != n || ref.c.size() != n || ref.c_out.size() != n || ref.abs_ab.size() != n)
    throw std::invalid_argument(
        "compute_error_stats: sizes disagree: M*N = " + std::to_string(n) + ", computed " +
        std::to_string(computed.size()) + ", reference c " + std::to_string(ref.c.size()) +
        ", c_out " + std::to_string(ref.c_out.size()) + ", abs_ab " + std::to_string(ref.abs_ab.size()));

  const std::size_t nchunks = (n + kChunk - 1) / kChunk;
  std::vector<ChunkStats> chunks(nchunks);
  for_chunks(nchunks, threads, [&](std::size_t ci) {
    ChunkStats& s = chunks[ci];
    const std::size_t end = std::min(n, (ci + 1) * kChunk);
    for (std::size_t i = ci * kChunk; i < end; ++i) {
      const double x = computed[i], c = ref.c[i];
      if (x == ref.c_out[i]) ++s.correct;
      if (c == 0) {
        ++s.zero_reference;
        if (x != 0) ++s.zero_ref_nonzero;
      }
      if (!std::isfinite(x)) {
        ++s.nonfinite;
        if (std::isnan(x)) ++s.unwritten;
        continue;
      }
      s.ref2.add(static_cast<long double>(c) * c);
      const long double diff = static_cast<long double>(x) - c;
      s.err2.add(diff * diff);
      const double ab = ref.abs_ab[i];
      if (ab > 0) {
        s.componentwise = std::max(s.componentwise, static_cast<double>(std::fabs(diff) / ab));
        s.cw.add(diff / ab);
      } else if (diff != 0) {
        s.componentwise = std::numeric_limits<double>::infinity();
      }
      double r;
      if (relative_error(x, c, r)) {
        s.rel.add(r);
        s.rel_max_abs = std::max(s.rel_max_abs, std::fabs(r));
      }
    }
  });

  ErrorStats st;
  st.entries = static_cast<std::int64_t>(n);
  Welford rel, cw;
  NeumaierSum err2, ref2;
  std::int64_t correct = 0;
  std::vector<std::int64_t> offset(nchunks + 1, 0);
  for (std::size_t ci = 0; ci < nchunks; ++ci) {
    const ChunkStats& s = chunks[ci];
    st.zero_reference += s.zero_reference;
    st.zero_ref_nonzero += s.zero_ref_nonzero;
    st.nonfinite += s.nonfinite;
    st.unwritten += s.unwritten;
    correct += s.correct;
    rel.merge(s.rel);
    cw.merge(s.cw);
    st.rel_max_abs = std::max(st.rel_max_abs, s.rel_max_abs);
    err2.add(s.err2.s);
    err2.add(s.err2.c);
    ref2.add(s.ref2.s);
    ref2.add(s.ref2.c);
    st.componentwise = std::max(st.componentwise, s.componentwise);
    offset[ci + 1] = offset[ci] + s.rel.n;
  }
  st.rel_count = rel.n;

  // Second pass: the r values, in index order, for the order statistics.
  std::vector<double> r(static_cast<std::size_t>(rel.n));
  for_chunks(nchunks, threads, [&](std::size_t ci) {
    std::size_t at = static_cast<std::size_t>(offset[ci]);
    const std::size_t end = std::min(n, (ci + 1) * kChunk);
    for (std::size_t i = ci * kChunk; i < end; ++i) {
      double ri;
      if (relative_error(computed[i], ref.c[i], ri)) r[at++] = ri;
    }
  });

  if (rel.n > 0) {
    st.rel_mean = static_cast<double>(rel.mean);
    if (rel.n > 1) {
      const long double var = rel.m2 / static_cast<long double>(rel.n - 1);
      st.rel_std = static_cast<double>(std::sqrt(var));
      st.rel_mean_ci95 = 1.96 * st.rel_std / std::sqrt(static_cast<double>(rel.n));
    }
    st.rel_median = quantile(r, 0.5);
    st.rel_p01 = quantile(r, 0.01);
    st.rel_p99 = quantile(r, 0.99);
  }

  if (cw.n > 0) {
    st.cw_mean = static_cast<double>(cw.mean);
    if (cw.n > 1) {
      st.cw_std = static_cast<double>(std::sqrt(cw.m2 / static_cast<long double>(cw.n - 1)));
      st.cw_mean_ci95 = 1.96 * st.cw_std / std::sqrt(static_cast<double>(cw.n));
    }
  }

  st.u_out = info(ref.out).unit_roundoff;
  st.rel_mean_u = st.rel_mean / st.u_out;
  st.rel_std_u = st.rel_std / st.u_out;
  st.rel_median_u = st.rel_median / st.u_out;
  st.rel_p01_u = st.rel_p01 / st.u_out;
  st.rel_p99_u = st.rel_p99 / st.u_out;
  st.rel_max_abs_u = st.rel_max_abs / st.u_out;

  const long double num = err2.value(), den = ref2.value();
  if (den > 0)
    st.normwise = static_cast<double>(std::sqrt(num) / std::sqrt(den));
  else
    st.normwise = num > 0 ? std::numeric_limits<double>::infinity() : 0.0;

  st.frac_correctly_rounded = n > 0 ? static_cast<double>(correct) / static_cast<double>(n) : 0.0;
  st.gamma_bound = gamma_bound_factor(model);
  st.cw_over_gamma = ratio(st.componentwise, st.gamma_bound);
  st.sqrtk_u = sqrtk_u(model);
  st.cw_over_sqrtk_u = ratio(st.componentwise, st.sqrtk_u);
  st.within_bound = st.componentwise <= st.gamma_bound && st.nonfinite == 0;
  return st;
}

}  // namespace gemmlab
