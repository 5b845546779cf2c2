// The helpers the stages of `gemmlab explain` share; see internal.hpp.
#include <algorithm>
#include <cmath>
#include <stdexcept>
#include <type_traits>

#include "reference/distributions.hpp"
#include "reference/explain/internal.hpp"
#include "reference/quantized.hpp"
#include "reference/tc_infer.hpp"

namespace gemmlab::explain {

double SparseVector::value(int k) const {
  for (const auto& [kk, v] : at)
    if (kk == k) return v;
  return k >= fill_from && k < fill_to ? fill : 0.0;
}

std::vector<std::uint64_t> Oracle::run_generated(const Distribution& d, std::uint64_t seed, int threads,
                                                 const std::vector<Entry>& entries, Matrix& A, Matrix& B) {
  if (d.quant) {  // SOURCE@RECIPE: the kernel computes from the dequantized operands, exact in binary64
    const QuantizedProblem p = make_quantized_problem(d, M(), N(), K(), seed, threads);
    A = p.A.dequantized();
    B = p.B.dequantized();
    return run_full(A, B, entries);
  }
  A = generate(d, Operand::A, M(), K(), input(), seed, threads);
  B = generate(d, Operand::B, K(), N(), input(), seed, threads);
  return run_full(A, B, entries);
}

namespace detail {

double since(Clock::time_point t0) { return std::chrono::duration<double>(Clock::now() - t0).count(); }

std::string entry_text(const Entry& e) { return "C(" + std::to_string(e.first) + "," + std::to_string(e.second) + ")"; }

std::string value_text(double x) { return tc::exact_text(x); }

std::vector<std::uint64_t> run_inputs(Oracle& o, const SparseInputs& in, const std::vector<Entry>& at) {
  std::vector<std::uint64_t> bits = o.run_sparse(in, at);
  if (bits.size() != at.size()) throw std::logic_error("explain: the oracle answered the wrong number of entries");
  return bits;
}

namespace {
// run_items' body: Items is const std::vector<Item>& (each item copied into the launch's inputs) or
// std::vector<Item>& of items the caller gives up (each moved: FPRev's thousands a launch).
template <class Items>
std::vector<std::uint64_t> run_items_of(Oracle& o, const std::vector<Entry>& entries, Items& items) {
  std::vector<std::uint64_t> out;
  out.reserve(items.size());
  for (std::size_t first = 0; first < items.size(); first += entries.size()) {
    const std::size_t n = std::min(entries.size(), items.size() - first);
    SparseInputs in;
    in.a_rows.reserve(n);
    in.b_cols.reserve(n);
    std::vector<Entry> at(entries.begin(), entries.begin() + n);
    for (std::size_t t = 0; t < n; ++t) {
      auto& item = items[first + t];
      if constexpr (std::is_const_v<std::remove_reference_t<decltype(item)>>) {
        in.a_rows.push_back(item.a);
        in.b_cols.push_back(item.b);
      } else {
        in.a_rows.push_back(std::move(item.a));
        in.b_cols.push_back(std::move(item.b));
      }
      in.a_rows.back().index = entries[t].first;
      in.b_cols.back().index = entries[t].second;
    }
    const std::vector<std::uint64_t> bits = run_inputs(o, in, at);
    out.insert(out.end(), bits.begin(), bits.end());
  }
  return out;
}
}  // namespace

std::vector<std::uint64_t> run_items(Oracle& o, const std::vector<Entry>& entries, const std::vector<Item>& items) {
  return run_items_of(o, entries, items);
}

std::vector<std::uint64_t> run_items(Oracle& o, const std::vector<Entry>& entries, std::vector<Item>&& items) {
  return run_items_of(o, entries, items);
}

std::uint64_t all_ones_nan(Format f) {
  const int bits = info(f).storage_bits;
  return bits >= 64 ? ~0ull >> 1 : (1ull << (bits - 1)) - 1;
}

std::uint64_t output_bits(Format f, double v, std::uint64_t nan_bits) {
  if (std::isnan(v)) return nan_bits;
  const double r = tc::round_to_format(f, v, Rounding::nearest_even);
  return to_bits(f, r == 0 ? std::copysign(0.0, v) : r);
}

}  // namespace detail

}  // namespace gemmlab::explain
