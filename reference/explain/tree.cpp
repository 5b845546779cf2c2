// Stage 2 of `gemmlab explain`: the summation tree (FPRev masking, reference/fprev.hpp), revealed
// with many output entries answering one pair each per launch (summation_tree.hpp
// reconstruct_batched), then checked entry by entry and call by call (reference/explain.hpp).
#include <algorithm>
#include <cmath>
#include <sstream>
#include <stdexcept>
#include <tuple>
#include <utility>

#include "reference/explain/internal.hpp"
#include "reference/fprev.hpp"
#include "reference/rng.hpp"
#include "reference/tree_form.hpp"

namespace gemmlab::explain {

namespace {

// The parent of every node of t (-1 for the root).
std::vector<int> parents(const SummationTree& t) {
  std::vector<int> parent(t.node_count(), -1);
  for (int n = t.leaves(); n < t.node_count(); ++n)
    for (int c : t.children(n)) parent[c] = n;
  return parent;
}

}  // namespace

std::vector<Entry> choose_entries(int M, int N, int count, std::uint64_t seed) {
  count = std::min({count, M, N});
  std::vector<Entry> out;
  std::vector<char> row_used(M, 0), col_used(N, 0);
  auto take = [&](int i, int j) {
    if (static_cast<int>(out.size()) >= count || i < 0 || j < 0 || i >= M || j >= N || row_used[i] || col_used[j])
      return;
    row_used[i] = col_used[j] = 1;
    out.emplace_back(i, j);
  };
  // First, middle, last, and both sides of the tile edges kernels commonly use.
  take(0, 0);
  take(M - 1, N - 1);
  take(M / 2, N / 2);
  for (int e : {64, 128, 256}) {
    take(e - 1, e - 1);
    take(e, e);
    take(e - 1, e);
    take(e, e - 1);
  }
  std::vector<int> rows, cols;
  for (int i = 0; i < M; ++i)
    if (!row_used[i]) rows.push_back(i);
  for (int j = 0; j < N; ++j)
    if (!col_used[j]) cols.push_back(j);
  SplitMix rng{seed};
  auto shuffle = [&](std::vector<int>& v) {
    for (std::size_t t = v.size(); t > 1; --t) std::swap(v[t - 1], v[rng.next() % t]);
  };
  shuffle(rows);
  shuffle(cols);
  for (std::size_t t = 0; t < rows.size() && t < cols.size(); ++t) take(rows[t], cols[t]);
  return out;
}

int lca_size(const SummationTree& t, int p, int q) {
  std::vector<int> parent = parents(t);
  std::vector<char> above_p(t.node_count(), 0);
  for (int x = p; x >= 0; x = parent[x]) above_p[x] = 1;
  int x = q;
  while (x >= 0 && !above_p[x]) x = parent[x];
  return x < 0 ? 0 : t.size(x);
}

namespace detail {

FprevMasks tree_masks(const Oracle& o, FprevCarrier carrier) {
  return choose_fprev_masks(o.input(), o.input(), Format::fp32, o.output(), o.K(), FprevUnits::grouped, carrier);
}

// The k range [from, to) of group g's units for pair (p, q) (p < 0: no pair), when there is more than one group.
std::pair<int, int> Fprev::unit_range(int p, int q, int g) const {
  const int units = p >= 0 ? o.K() - 2 : o.K();
  const int lo = std::min(p, q), hi = std::max(p, q);
  auto k_of_rank = [&](int r) {  // the k of the r-th unit: lo and hi skipped
    if (lo >= 0 && r >= lo) ++r;
    if (hi >= 0 && r >= hi) ++r;
    return r;
  };
  return {k_of_rank(g * m.group), k_of_rank(std::min((g + 1) * m.group, units) - 1) + 1};
}

Item Fprev::item(int p, int q, int g) const {
  const int K = o.K(), units = p >= 0 ? K - 2 : K;
  Item it;
  it.b.fill = m.b_unit();
  it.a.fill = m.a_unit();
  if (m.groups(units) > 1) std::tie(it.a.fill_from, it.a.fill_to) = unit_range(p, q, g);
  if (p >= 0) {
    it.a.at = {{p, m.a_big()}, {q, m.a_big()}};
    it.b.at = {{p, m.b_big()}, {q, -m.b_big()}};
  }
  return it;
}

std::vector<int> Fprev::counts(const std::vector<Entry>& E, const std::vector<std::pair<int, int>>& pairs) {
  const int K = o.K();
  std::vector<int> out(pairs.size(), 0);
  for (std::size_t first = 0; first < pairs.size(); first += E.size()) {
    const std::size_t n = std::min(E.size(), pairs.size() - first);
    const int units = pairs[first].first >= 0 ? K - 2 : K, G = m.groups(units);
    // One launch per group: the inputs are built once, the groups differ only in their units' k range.
    SparseInputs in;
    in.a_rows.reserve(n);
    in.b_cols.reserve(n);
    for (std::size_t t = 0; t < n; ++t) {
      Item it = item(pairs[first + t].first, pairs[first + t].second, 0);
      it.a.index = E[t].first;
      it.b.index = E[t].second;
      in.a_rows.push_back(std::move(it.a));
      in.b_cols.push_back(std::move(it.b));
    }
    const std::vector<Entry> at(E.begin(), E.begin() + static_cast<std::ptrdiff_t>(n));
    for (int g = 0; g < G; ++g) {
      if (g > 0)
        for (std::size_t t = 0; t < n; ++t)
          std::tie(in.a_rows[t].fill_from, in.a_rows[t].fill_to) =
              unit_range(pairs[first + t].first, pairs[first + t].second, g);
      const std::vector<std::uint64_t> bits = run_inputs(o, in, at);
      const int in_group = std::min(m.group, units - g * m.group);
      for (std::size_t t = 0; t < n; ++t) {
        const auto [p, q] = pairs[first + t];
        const double c = from_bits(o.output(), bits[t]), x = c / m.unit();
        if (!std::isfinite(c) || x != std::floor(x) || x < 0 || x > in_group) {
          std::ostringstream s;
          s << "FPRev at " << entry_text(E[t]) << ": with ";
          if (p >= 0) s << "products " << p << " = +M and " << q << " = -M and ";
          s << (G > 1 ? "the " + std::to_string(in_group) + " units of group " + std::to_string(g) + " of " +
                            std::to_string(G)
                      : std::string(p >= 0 ? "every other product" : "every product") + " a unit")
            << " the kernel returned " << value_text(c) << ", not a whole number of units u in [0, " << in_group
            << "] (" << m.describe() << "): " << (p >= 0 ? "the masks did not cancel exactly" : "the units are not summed exactly");
          throw std::runtime_error(s.str());
        }
        out[first + t] += static_cast<int>(x);
      }
    }
  }
  return out;
}

std::vector<int> Fprev::sizes(const std::vector<Entry>& E, const std::vector<std::pair<int, int>>& pairs) {
  std::vector<int> out = counts(E, pairs);
  const int K = o.K();
  for (std::size_t t = 0; t < pairs.size(); ++t) {
    if (out[t] > K - 2)
      throw std::runtime_error("FPRev at " + entry_text(E[t % E.size()]) + ": with products " +
                               std::to_string(pairs[t].first) + " = +M and " + std::to_string(pairs[t].second) +
                               " = -M the groups counted " + std::to_string(out[t]) + " units, more than the K - 2 = " +
                               std::to_string(K - 2) + " there are (" + m.describe() + ")");
    out[t] = K - out[t];
  }
  return out;
}

namespace {

std::string where_differs(const SummationTree& t, const Entry& e, int p, int q, int seen) {
  std::ostringstream s;
  s << entry_text(e) << ": products " << p << " and " << q << " meet in a node of " << seen << " products, not "
    << lca_size(t, p, q);
  return s.str();
}

}  // namespace

TreeStage reveal(Oracle& o, const std::vector<Entry>& E, const Options& opt) {
  const auto t0 = Clock::now();
  TreeStage st;
  const int K = o.K();
  if (K < 2) {
    st.why = "K = 1: there is nothing to sum";
    return st;
  }
  Fprev f{o, {}};
  try {
    f.m = tree_masks(o, opt.fprev_carrier);
  } catch (const std::invalid_argument& e) {
    st.why = e.what();
    return st;
  }
  st.masks = f.m.describe();
  // Every product a unit: K u exactly at every entry (each group's units exactly), or units cannot be counted.
  try {
    const std::vector<int> all = f.counts(E, std::vector<std::pair<int, int>>(E.size(), {-1, -1}));
    for (std::size_t t = 0; t < E.size(); ++t)
      if (all[t] != K) {
        st.why = "with every product u = 2^" + std::to_string(f.m.e_a_unit + f.m.e_b_unit) + ", " + entry_text(E[t]) +
                 " counted " + std::to_string(all[t]) + " units instead of K (" + f.m.describe() +
                 "): the kernel does not sum K exact products exactly";
        return st;
      }
  } catch (const std::runtime_error& e) {
    st.why = std::string(e.what()) + ": the kernel does not sum K exact products exactly";
    return st;
  }
  // Reconstruction with every entry answering pairs (they must share one tree; checked below).
  try {
    st.tree = reconstruct_batched(K, [&](const std::vector<std::pair<int, int>>& pairs) { return f.sizes(E, pairs); });
    st.entries_used = static_cast<int>(E.size());
  } catch (const std::runtime_error& many) {
    // The entries disagree (or a count was bad): try the first entry alone, within a budget.
    const long long budget = o.launches + 4LL * K;
    try {
      const std::vector<Entry> one{E[0]};
      st.tree = reconstruct_batched(K, [&](const std::vector<std::pair<int, int>>& pairs) {
        if (o.launches + static_cast<long long>(pairs.size()) > budget)
          throw std::runtime_error("revealing " + entry_text(E[0]) + " alone needs more than " + std::to_string(4 * K) +
                                   " launches");
        return f.sizes(one, pairs);
      });
      st.entries_used = 1;
    } catch (const std::runtime_error& alone) {
      st.why = std::string("the counts of ") + std::to_string(E.size()) + " entries do not form one tree (" + many.what() +
               "); " + alone.what();
      return st;
    }
  }
  st.text = tree_in_words(st.tree);
  st.form = compact_form(st.tree);
  // Verification: the same pairs at up to verify_entries entries, twice.
  std::vector<std::pair<int, int>> pairs{{0, K - 1}, {0, K / 2}, {K - 2, K - 1}, {0, 1}};
  SplitMix rng{opt.seed ^ 0x7e57ull};
  while (static_cast<int>(pairs.size()) < opt.verify_pairs) {
    int p = static_cast<int>(rng.next() % K), q = static_cast<int>(rng.next() % K);
    if (p == q) continue;
    pairs.emplace_back(std::min(p, q), std::max(p, q));
  }
  const std::vector<Entry> V(E.begin(), E.begin() + std::min<std::size_t>(E.size(), opt.verify_entries));
  st.entries_verified = static_cast<int>(V.size());
  std::vector<std::vector<int>> seen[2];
  for (int pass = 0; pass < 2; ++pass) {
    for (std::size_t x = 0; x < pairs.size(); ++x) {
      const auto pq = pairs[pass == 0 ? x : pairs.size() - 1 - x];
      std::vector<std::pair<int, int>> same(V.size(), pq);
      seen[pass].push_back(f.sizes(V, same));
    }
    if (pass == 1) std::reverse(seen[1].begin(), seen[1].end());
  }
  std::vector<std::string> differ;
  for (std::size_t e = 0; e < V.size(); ++e) {
    for (std::size_t x = 0; x < pairs.size(); ++x) {
      if (seen[0][x][e] != seen[1][x][e]) {
        st.deterministic = false;
        st.why = "the order changes between calls: at " + entry_text(V[e]) + " products " +
                 std::to_string(pairs[x].first) + " and " + std::to_string(pairs[x].second) + " met in a node of " +
                 std::to_string(seen[0][x][e]) + " products, then of " + std::to_string(seen[1][x][e]);
        st.seconds = since(t0);
        return st;
      }
    }
    for (std::size_t x = 0; x < pairs.size(); ++x) {
      if (seen[0][x][e] != lca_size(st.tree, pairs[x].first, pairs[x].second)) {
        differ.push_back(where_differs(st.tree, V[e], pairs[x].first, pairs[x].second, seen[0][x][e]));
        break;
      }
    }
  }
  st.entries_differing = static_cast<int>(differ.size());
  if (!differ.empty()) {
    std::ostringstream s;
    s << "the order differs between entries: " << differ.size() << " of " << V.size()
      << " checked entries do not follow the tree revealed at " << entry_text(E[0]);
    for (std::size_t t = 0; t < differ.size() && t < 3; ++t) s << "; " << differ[t];
    s << " (a split of K, a tail tile or stream-K work that differs by position)";
    st.differing = s.str();
    st.why = st.differing;
  }
  st.ok = differ.empty();
  st.seconds = since(t0);
  return st;
}

}  // namespace detail

}  // namespace gemmlab::explain
