// FPRev's masking experiment over an entry oracle; see reveal.hpp.
#include "experiments/engine/reveal.hpp"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <sstream>
#include <stdexcept>

#include "reference/formats.hpp"

namespace gemmlab {
namespace {

int ceil_log2(int n) {
  int e = 0;
  while ((1 << e) < n) ++e;
  return e;
}

int min_subnormal_exponent(Format f) {
  const FormatInfo& ff = gemmlab::info(f);
  return ff.emin - (ff.precision - 1);
}

}  // namespace

double Masks::a_big() const { return std::ldexp(1.0, e_a_big); }
double Masks::b_big() const { return std::ldexp(1.0, e_b_big); }
double Masks::a_unit() const { return std::ldexp(1.0, e_a_unit); }
double Masks::b_unit() const { return std::ldexp(1.0, e_b_unit); }
double Masks::unit() const { return std::ldexp(1.0, e_a_unit + e_b_unit); }

std::string Masks::describe() const {
  std::ostringstream s;
  s << "M = 2^" << e_a_big + e_b_big << " (2^" << e_a_big << " * 2^" << e_b_big << "), u = 2^" << e_a_unit + e_b_unit
    << " (2^" << e_a_unit << " * 2^" << e_b_unit << "), margin 2^" << margin_bits << " = M / (K u)";
  return s.str();
}

// Units made of normal numbers are preferred while the margin stays >= 2^30 (a tensor core keeps 25
// fraction bits, fp32 24), and u is never below what the output can hold exactly as n u, n <= K.
Masks choose_masks(const Kernel& k, int K) {
  const Format in[2] = {k.numerics.input, k.numerics.compute};
  int e_in_max = 1 << 20, e_in_min_norm = -(1 << 20), e_in_min_sub = -(1 << 20);
  for (Format f : in) {
    const FormatInfo& ff = gemmlab::info(f);
    e_in_max = std::min(e_in_max, static_cast<int>(std::floor(std::log2(ff.max_finite))));
    e_in_min_norm = std::max(e_in_min_norm, ff.emin);
    e_in_min_sub = std::max(e_in_min_sub, min_subnormal_exponent(f));
  }
  int e_sum_max = 1 << 20, e_sum_min = -(1 << 20), p_sum = 1 << 20;
  for (Format f : {k.numerics.accumulator, k.numerics.output}) {
    const FormatInfo& ff = gemmlab::info(f);
    e_sum_max = std::min(e_sum_max, static_cast<int>(std::floor(std::log2(ff.max_finite))) - 2);
    e_sum_min = std::max(e_sum_min, min_subnormal_exponent(f));
    p_sum = std::min(p_sum, ff.precision);
  }
  if (K > (1 << p_sum))
    throw std::invalid_argument("K = " + std::to_string(K) + " is too large: counts up to K must be exact in " +
                                info(k.numerics.output).name + " (K <= " + std::to_string(1 << p_sum) + ")");
  Masks m;
  const int e_M = std::min({2 * e_in_max, e_sum_max, 40});
  m.e_a_big = (e_M + 1) / 2;
  m.e_b_big = e_M - m.e_a_big;
  const int lk = ceil_log2(K), target = e_M - lk - 48;
  int e_u = std::max({target, e_in_min_norm, e_sum_min});
  if (e_M - e_u - lk < 30) e_u = std::max({target, 2 * e_in_min_sub, e_sum_min});
  if (e_u >= e_in_min_sub) {
    m.e_a_unit = 0;
    m.e_b_unit = e_u;
  } else {
    m.e_b_unit = e_in_min_sub;
    m.e_a_unit = e_u - e_in_min_sub;
  }
  m.margin_bits = e_M - e_u - lk;
  return m;
}

RevealedTree reveal_tree_with(const Kernel& k, int K, const EntryOracle& entry) {
  const Masks masks = choose_masks(k, K);
  const auto t0 = std::chrono::steady_clock::now();
  long long runs = 0;
  // C(i, j) with products p, q masked (p = q = -1: no mask, every product a unit).
  auto run = [&](int p, int q) {
    std::vector<double> a(K), b(K);
    for (int x = 0; x < K; ++x) {
      a[x] = (x == p || x == q) ? masks.a_big() : masks.a_unit();
      b[x] = x == p ? masks.b_big() : x == q ? -masks.b_big() : masks.b_unit();
    }
    ++runs;
    return entry(a, b);
  };
  // Every product a unit: the kernel must return exactly K u, or the units are not summed exactly.
  const double all = run(-1, -1);
  if (all != K * masks.unit()) {
    std::ostringstream s;
    s << "with every product u = 2^" << std::log2(masks.unit()) << ", the entry is " << all
      << " instead of K u = " << K * masks.unit() << ": cannot count units";
    throw std::runtime_error(s.str());
  }
  // Units added after p and q met, as read from the entry.
  auto count_after = [&](int p, int q) {
    const double c = run(p, q);
    const double n = c / masks.unit();
    if (!std::isfinite(c) || n != std::floor(n) || n < 0 || n > K - 2) {
      std::ostringstream s;
      s << "FPRev: the entry = " << c << " with products " << p << " = +M and " << q
        << " = -M is not a whole number of units u in [0, K-2] (" << n << " u; " << masks.describe()
        << "): the masks did not cancel exactly";
      throw std::runtime_error(s.str());
    }
    return static_cast<int>(n);
  };
  RevealedTree r;
  r.tree = reconstruct(K, [&](int p, int q) { return K - count_after(p, q); });
  r.runs = runs;
  r.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  r.masks = masks.describe();
  return r;
}

}  // namespace gemmlab
