// SyntheticKernel: a CPU kernel of known numerics for the tests of `gemmlab explain`
// (reference/explain.hpp).
#include <algorithm>
#include <cmath>
#include <map>
#include <stdexcept>

#include "reference/explain/internal.hpp"

namespace gemmlab::explain {

using detail::all_ones_nan;
using detail::output_bits;


SyntheticKernel::SyntheticKernel(int M, int N, int K, Format input, SummationTree tree, emulation::NodeModel model,
                                 Conversion conv_a, Conversion conv_b)
    : M_(M), N_(N), K_(K), input_(input), tree_(std::move(tree)), model_(std::move(model)), conv_a_(conv_a),
      conv_b_(conv_b) {}

std::vector<std::uint64_t> SyntheticKernel::compute(const std::function<void(int, double*)>& row_a,
                                                    const std::function<void(int, double*)>& col_b,
                                                    const std::vector<Entry>& entries) {
  ++launches;
  const long long call = calls_++;
  const bool other_call = alternate_calls && call % 2 == 1;
  // Under a perturbation with a tree of its own: that tree (on every other call where it alternates).
  const SummationTree* own_tree = &tree_;
  const std::vector<SummationTree>* by_row = nullptr;
  if (perturbed_ >= 0) {
    const std::string& name = offered[perturbed_].name;
    auto it = under_perturbation.find(name);
    if (it != under_perturbation.end() && (!alternate_under.count(name) || call % 2 == 1)) own_tree = &it->second;
    if (auto r = by_row_under.find(name); r != by_row_under.end() && !r->second.empty()) by_row = &r->second;
  }
  const int n = static_cast<int>(entries.size());
  // Entry e's row of A and column of B, converted, as row e of A (n, K) and column e of B (K, n):
  // one emulate_tree_at call per tree sums them all (its plan built once, not once per entry).
  Matrix A(n, K_), B(K_, n);
  std::vector<char> zero_row(n, 1);
  std::vector<Entry> own, other;
  std::vector<double> y(K_);
  for (int e = 0; e < n; ++e) {
    const auto [i, j] = entries[e];
    double* x = &A.v[static_cast<std::size_t>(e) * K_];
    row_a(i, x);
    col_b(j, y.data());
    for (int k = 0; k < K_; ++k) {
      zero_row[e] = zero_row[e] && x[k] == 0;
      x[k] = convert(conv_a_, x[k]);
      B(k, e) = convert(conv_b_, y[k]);
    }
    (other_tree && (other_call || i >= other_from_row) ? other : own).emplace_back(e, e);
  }
  std::vector<double> c(n);
  if (by_row) {  // each entry in its row's tree: grouped by tree, one emulate_tree_at call per group
    std::vector<std::vector<Entry>> groups(by_row->size());
    for (int e = 0; e < n; ++e) groups[static_cast<std::size_t>(entries[e].first) % by_row->size()].emplace_back(e, e);
    for (std::size_t g = 0; g < groups.size(); ++g) {
      if (groups[g].empty()) continue;
      const std::vector<double> sums =
          emulation::emulate_tree_at((*by_row)[g], model_, A, B, groups[g], 0, split ? &*split : nullptr);
      for (std::size_t t = 0; t < groups[g].size(); ++t) c[groups[g][t].first] = sums[t];
    }
    own.clear();
    other.clear();
  }
  for (const auto* which : {&own, &other}) {
    if (which->empty()) continue;
    const std::vector<double> sums = emulation::emulate_tree_at(which == &own ? *own_tree : *other_tree, model_, A, B,
                                                                *which, 0, split ? &*split : nullptr);
    for (std::size_t t = 0; t < which->size(); ++t) c[(*which)[t].first] = sums[t];
  }
  std::vector<std::uint64_t> out(n);
  for (int e = 0; e < n; ++e) {
    const double v = nan_on_zero_row && zero_row[e] ? std::nan("") : c[e] + add_constant;
    out[e] = output_bits(output_format, static_cast<float>(v), all_ones_nan(output_format));
  }
  return out;
}

std::string SyntheticKernel::perturb(int i) {
  if (i >= static_cast<int>(offered.size())) throw std::out_of_range("SyntheticKernel::perturb: no perturbation " + std::to_string(i));
  if (i >= 0 && !refuse.empty()) return refuse;
  perturbed_ = i;
  return "";
}

std::vector<std::uint64_t> SyntheticKernel::run_sparse(const SparseInputs& in, const std::vector<Entry>& entries) {
  std::map<int, const SparseVector*> rows, cols;
  for (const SparseVector& v : in.a_rows) rows[v.index] = &v;
  for (const SparseVector& v : in.b_cols) cols[v.index] = &v;
  // A line asked for is its fill and listed values; the rest of A and B is zero.
  auto dense = [this](const std::map<int, const SparseVector*>& lines) {
    return [this, &lines](int index, double* out) {
      auto it = lines.find(index);
      std::fill(out, out + K_, 0.0);
      if (it == lines.end()) return;
      const SparseVector& v = *it->second;
      std::fill(out + std::clamp(v.fill_from, 0, K_), out + std::clamp(v.fill_to, 0, K_), v.fill);
      for (auto [k, x] : v.at) out[k] = x;
    };
  };
  return compute(dense(rows), dense(cols), entries);
}

std::vector<std::uint64_t> SyntheticKernel::run_full(const Matrix& A, const Matrix& B, const std::vector<Entry>& entries) {
  return compute([&](int i, double* out) { std::copy_n(&A.v[static_cast<std::size_t>(i) * K_], K_, out); },
                 [&](int j, double* out) {
                   for (int k = 0; k < K_; ++k) out[k] = B(k, j);
                 },
                 entries);
}

}  // namespace gemmlab::explain
