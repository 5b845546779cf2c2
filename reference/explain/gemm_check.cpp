// Stage 1 of `gemmlab explain`: is it a GEMM at all? Zero inputs give zeros, single power-of-two
// products come back exact, no NaN from finite inputs (reference/explain.hpp).
#include <algorithm>
#include <cmath>
#include <utility>

#include "reference/explain/internal.hpp"

namespace gemmlab::explain::detail {

std::string check_gemm(Oracle& o, const std::vector<Entry>& E, std::string& seen, FprevCarrier carrier) {
  const Format in = o.input(), out = o.output();
  const int K = o.K();
  std::vector<Item> zeros(E.size());
  std::vector<std::uint64_t> bits = run_items(o, E, zeros);
  for (std::size_t t = 0; t < E.size(); ++t) {
    const double c = from_bits(out, bits[t]);
    if (std::isnan(c)) return "returns NaN at " + entry_text(E[t]) + " for A = B = 0";
    if (c != 0)
      return "with A = B = 0 it returns " + entry_text(E[t]) + " = " + value_text(c) +
             ": it is not C = A B (it adds or writes something else)";
  }
  // Single and double power-of-two products, exact in every format and every accumulation.
  const int emax_in = std::min(info(in).emax, 3);
  std::vector<Item> items;
  std::vector<double> expect;
  for (std::size_t t = 0; t < E.size(); ++t) {
    const int k = static_cast<int>(t % K);
    int k2 = static_cast<int>((t + 1 + t / K) % K);
    if (k2 == k) k2 = (k + 1) % K;
    const double a = std::ldexp(1.0, static_cast<int>(t % 4) - 1), b = std::ldexp(1.0, -static_cast<int>(t % 3));
    // Each product's factors; with one operand carrying (Options::fprev_carrier) the other's is 1.
    const auto factors = [carrier](double x, double y) {
      return carrier == FprevCarrier::b ? std::pair{1.0, x * y}
             : carrier == FprevCarrier::a ? std::pair{x * y, 1.0}
                                          : std::pair{x, y};
    };
    Item it;
    const auto [a1, b1] = factors(a, b);
    it.a.at = {{k, a1}};
    it.b.at = {{k, b1}};
    double e = a * b;
    if (K > 1 && t % 2 == 1) {  // a second product 2^-3 of the first
      const double a2 = std::ldexp(1.0, std::min(emax_in, 0));
      const auto [x2, y2] = factors(a2, a * b / 8 / a2);
      it.a.at.push_back({k2, x2});
      it.b.at.push_back({k2, y2});
      e += a * b / 8;
    }
    items.push_back(it);
    expect.push_back(e);
  }
  bits = run_items(o, E, items);
  for (std::size_t t = 0; t < E.size(); ++t) {
    const double c = from_bits(out, bits[t]);
    if (std::isnan(c)) return "returns NaN at " + entry_text(E[t]) + " for finite inputs (" + value_text(expect[t]) + " expected)";
    if (c != expect[t])
      return "returns " + entry_text(E[t]) + " = " + value_text(c) + " where A B is exactly " + value_text(expect[t]) +
             " (one or two power-of-two products): it is not C = A B";
  }
  seen = "zero inputs give +-0 and one or two power-of-two products come back exact at " + std::to_string(E.size()) +
         " entries";
  return "";
}

}  // namespace gemmlab::explain::detail
