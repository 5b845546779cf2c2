// FPRev's masking experiment over an entry oracle; see reveal.hpp.
#include "experiments/engine/reveal.hpp"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <sstream>
#include <stdexcept>

#include "reference/formats.hpp"

namespace gemmlab {

Masks choose_masks(const Kernel& k, int K) {
  return choose_fprev_masks(k.numerics.input, k.numerics.compute, k.numerics.accumulator, k.numerics.output, K);
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
