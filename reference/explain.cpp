#include "reference/explain.hpp"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <map>
#include <numeric>
#include <sstream>
#include <stdexcept>

#include "reference/distributions.hpp"
#include "reference/fprev.hpp"
#include "reference/rng.hpp"
#include "reference/tc_infer.hpp"

namespace gemmlab::explain {

// ---------------------------------------------------------------------------------------------
// Operand conversions

const char* to_string(Conversion c) {
  switch (c) {
    case Conversion::as_is: return "as_is";
    case Conversion::tf32_rne: return "tf32_rne";
    case Conversion::tf32_rna: return "tf32_rna";
    case Conversion::tf32_rz: return "tf32_rz";
    case Conversion::bf16_rne: return "bf16_rne";
    case Conversion::fp16_rne: return "fp16_rne";
  }
  return "?";
}

const char* in_words(Conversion c) {
  switch (c) {
    case Conversion::as_is: return "reach the multiplier unchanged";
    case Conversion::tf32_rne: return "rounded to tf32, to nearest even";
    case Conversion::tf32_rna: return "rounded to tf32, to nearest with ties away from zero (cvt.rna.tf32.f32)";
    case Conversion::tf32_rz: return "cut to tf32 (the low 13 bits dropped, toward zero)";
    case Conversion::bf16_rne: return "rounded to bf16, to nearest even";
    case Conversion::fp16_rne: return "rounded to fp16, to nearest even";
  }
  return "?";
}

std::optional<Conversion> parse_conversion(const std::string& name) {
  for (Conversion c : {Conversion::as_is, Conversion::tf32_rne, Conversion::tf32_rna, Conversion::tf32_rz,
                       Conversion::bf16_rne, Conversion::fp16_rne})
    if (name == to_string(c)) return c;
  return std::nullopt;
}

Format compute_format(Conversion c, Format input) {
  switch (c) {
    case Conversion::as_is: return input;
    case Conversion::tf32_rne:
    case Conversion::tf32_rna:
    case Conversion::tf32_rz: return Format::tf32;
    case Conversion::bf16_rne: return Format::bf16;
    case Conversion::fp16_rne: return Format::fp16;
  }
  return input;
}

double convert(Conversion c, double v) {
  if (c == Conversion::as_is || std::isnan(v) || std::isinf(v)) return v;
  switch (c) {
    case Conversion::fp16_rne: return tc::round_to_format(Format::fp16, v, Rounding::nearest_even);
    case Conversion::tf32_rne: return emulation::round_low_bits(v, 13, emulation::LowBits::nearest_even);
    case Conversion::tf32_rna: return emulation::round_low_bits(v, 13, emulation::LowBits::nearest_away);
    case Conversion::tf32_rz: return emulation::round_low_bits(v, 13, emulation::LowBits::toward_zero);
    case Conversion::bf16_rne: return emulation::round_low_bits(v, 16, emulation::LowBits::nearest_even);
    case Conversion::as_is: break;
  }
  return v;
}

std::vector<Conversion> candidate_conversions(Format input) {
  if (input != Format::fp32) return {Conversion::as_is};
  return {Conversion::as_is, Conversion::tf32_rne, Conversion::tf32_rna, Conversion::tf32_rz, Conversion::bf16_rne,
          Conversion::fp16_rne};
}

double SparseVector::value(int k) const {
  for (const auto& [kk, v] : at)
    if (kk == k) return v;
  return k >= fill_from && k < fill_to ? fill : 0.0;
}

// ---------------------------------------------------------------------------------------------
// Helpers

namespace {

using Clock = std::chrono::steady_clock;
double since(Clock::time_point t0) { return std::chrono::duration<double>(Clock::now() - t0).count(); }

std::string entry_text(const Entry& e) { return "C(" + std::to_string(e.first) + "," + std::to_string(e.second) + ")"; }

std::string value_text(double x) { return tc::exact_text(x); }

// One item: the row of A and the column of B that one output entry sees.
struct Item {
  SparseVector a, b;
};

// Runs the items |entries| at a time, item t of a launch at entries[t]; the output bits per item.
std::vector<std::uint64_t> run_items(Oracle& o, const std::vector<Entry>& entries, const std::vector<Item>& items) {
  std::vector<std::uint64_t> out;
  out.reserve(items.size());
  for (std::size_t first = 0; first < items.size(); first += entries.size()) {
    const std::size_t n = std::min(entries.size(), items.size() - first);
    SparseInputs in;
    std::vector<Entry> at(entries.begin(), entries.begin() + n);
    for (std::size_t t = 0; t < n; ++t) {
      SparseVector a = items[first + t].a, b = items[first + t].b;
      a.index = entries[t].first;
      b.index = entries[t].second;
      in.a_rows.push_back(std::move(a));
      in.b_cols.push_back(std::move(b));
    }
    std::vector<std::uint64_t> bits = o.run_sparse(in, at);
    if (bits.size() != n) throw std::logic_error("explain: the oracle answered the wrong number of entries");
    out.insert(out.end(), bits.begin(), bits.end());
  }
  return out;
}

// A NaN whose payload bits are all ones (0x7fffffff for fp32): what Hopper writes for NaN results.
std::uint64_t all_ones_nan(Format f) {
  const int bits = info(f).storage_bits;
  return bits >= 64 ? ~0ull >> 1 : (1ull << (bits - 1)) - 1;
}

// The kernel's conversion of its fp32 result to the output format (cvt.rn): IEEE round to nearest
// even, so a negative value that rounds to zero gives -0 (the H100 through torch.matmul's fp16 C:
// -2^-25 -> 0x8000). tc::round_to_format gives +0 there, the rule of the tensor core's own sums.
std::uint64_t output_bits(Format f, double v, std::uint64_t nan_bits) {
  if (std::isnan(v)) return nan_bits;
  const double r = tc::round_to_format(f, v, Rounding::nearest_even);
  return to_bits(f, r == 0 ? std::copysign(0.0, v) : r);
}

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

// ---------------------------------------------------------------------------------------------
// Stage 1: is it a GEMM?

namespace {

std::string check_gemm(Oracle& o, const std::vector<Entry>& E, std::string& seen) {
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
    Item it;
    it.a.at = {{k, a}};
    it.b.at = {{k, b}};
    double e = a * b;
    if (K > 1 && t % 2 == 1) {  // a second product 2^-3 of the first
      it.a.at.push_back({k2, std::ldexp(1.0, std::min(emax_in, 0))});
      it.b.at.push_back({k2, a * b / 8 / std::ldexp(1.0, std::min(emax_in, 0))});
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

// ---------------------------------------------------------------------------------------------
// Stage 2: the tree

// FPRev's queries (reference/fprev.hpp), each pair's units split into the masks' groups: a pair of
// groups(K - 2) items, whose counts add up to the pair's count.
struct Fprev {
  Oracle& o;
  FprevMasks m;
  // Pair (p, q) (p < 0: no masks, every product a unit) with only the units of group g non-zero:
  // the units in increasing k, p and q skipped, m.group of them to a group. One group: every unit.
  // A group is the k range from its first unit to its last, p and q inside it overwritten by M.
  Item item(int p, int q, int g) const {
    const int K = o.K(), units = p >= 0 ? K - 2 : K;
    Item it;
    it.b.fill = m.b_unit();
    it.a.fill = m.a_unit();
    if (m.groups(units) > 1) {
      const int lo = std::min(p, q), hi = std::max(p, q);
      auto k_of_rank = [&](int r) {  // the k of the r-th unit: lo and hi skipped
        if (lo >= 0 && r >= lo) ++r;
        if (hi >= 0 && r >= hi) ++r;
        return r;
      };
      it.a.fill_from = k_of_rank(g * m.group);
      it.a.fill_to = k_of_rank(std::min((g + 1) * m.group, units) - 1) + 1;
    }
    if (p >= 0) {
      it.a.at.push_back({p, m.a_big()});
      it.a.at.push_back({q, m.a_big()});
      it.b.at = {{p, m.b_big()}, {q, -m.b_big()}};
    }
    return it;
  }
  // Units counted for each pair, pair t answered at entry E[t % |E|] (all its groups there, so that
  // a count is one entry's): |E| pairs take one launch per group. Throws when a group's count is not
  // a whole number of its units.
  std::vector<int> counts(const std::vector<Entry>& E, const std::vector<std::pair<int, int>>& pairs) {
    const int K = o.K();
    std::vector<int> out(pairs.size(), 0);
    for (std::size_t first = 0; first < pairs.size(); first += E.size()) {
      const std::size_t n = std::min(E.size(), pairs.size() - first);
      const int units = pairs[first].first >= 0 ? K - 2 : K, G = m.groups(units);
      for (int g = 0; g < G; ++g) {
        std::vector<Item> items;
        for (std::size_t t = 0; t < n; ++t) items.push_back(item(pairs[first + t].first, pairs[first + t].second, g));
        const std::vector<std::uint64_t> bits = run_items(o, E, items);
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
  // lca sizes of `pairs`, pair t answered at entry E[t % |E|].
  std::vector<int> sizes(const std::vector<Entry>& E, const std::vector<std::pair<int, int>>& pairs) {
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
};

std::string where_differs(const SummationTree& t, const Entry& e, int p, int q, int seen) {
  std::ostringstream s;
  s << entry_text(e) << ": products " << p << " and " << q << " meet in a node of " << seen << " products, not "
    << lca_size(t, p, q);
  return s.str();
}

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
    f.m = choose_fprev_masks(o.input(), o.input(), Format::fp32, o.output(), K, FprevUnits::grouped);
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
  st.text = describe(st.tree);
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

// ---------------------------------------------------------------------------------------------
// Stage 3: operand conversion

ConversionStage infer_conversion(Oracle& o, const std::vector<Entry>& E) {
  ConversionStage st;
  const Format in = o.input();
  std::vector<double> values;
  if (in == Format::fp32) {
    const double u11 = 0x1p-11, u8 = 0x1p-8;
    values = {1 + u11,         1 + 2 * u11 + u11, 1 + u11 + 0x1p-22,      1 + 0x1p-22,  1 + u8,
              1 + 2 * u8 + u8, 1 + u8 + 0x1p-22,  -(1 + u11),             -(1 + 3 * u11), -(1 + u11 + 0x1p-22),
              1.5,             0x1p20 + 0x1p9,    3 * 0x1p-20 + 0x1p-40, 0x1.fffffep0};
  } else {
    const int p = info(in).precision;
    values = {1 + std::ldexp(1.0, 1 - p), -(1 + std::ldexp(1.0, 1 - p)), 1.5, 1 + std::ldexp(3.0, 1 - p)};
  }
  const std::vector<Conversion> cands = candidate_conversions(in);
  for (int side = 0; side < 2; ++side) {
    std::vector<Item> items;
    for (std::size_t t = 0; t < values.size(); ++t) {
      const int k = static_cast<int>(t % o.K());
      Item it;
      (side == 0 ? it.a : it.b).at = {{k, values[t]}};
      (side == 0 ? it.b : it.a).at = {{k, 1.0}};
      items.push_back(it);
    }
    std::vector<std::uint64_t> bits = run_items(o, E, items);
    std::vector<Conversion> left;
    std::string against;
    for (Conversion c : cands) {
      bool all = true;
      for (std::size_t t = 0; t < values.size() && all; ++t) {
        const double want = convert(c, values[t]);
        all = to_bits(o.output(), tc::round_to_format(o.output(), want, Rounding::nearest_even)) == bits[t];
      }
      if (all) left.push_back(c);
    }
    st.tests += static_cast<int>(values.size());
    const char* which = side == 0 ? "A" : "B";
    // No conversion, but each single product is the sum of x's first two bf16 pieces (hi + mid, which
    // the fused node adds exactly): a split, for stage 4 to check.
    bool split = left.empty() && in == Format::fp32;
    for (std::size_t t = 0; t < values.size() && split; ++t) {
      const emulation::SplitScheme two{emulation::LowBits::nearest_even, {}, 0, false,
                                       emulation::SplitScheme::PieceFormat::bf16, 2};
      const auto pieces = emulation::split_pieces(two, tc::TcParams{}, values[t]);
      split = to_bits(o.output(), tc::round_to_format(o.output(), pieces[0] + pieces[1], Rounding::nearest_even)) == bits[t];
    }
    if (split) {
      if (side == 1 && !st.split) {
        st.why = "the single products of A are those of its fp32 value, B's those of fp32 operands split into "
                 "two bf16 pieces (hi + mid): A and B are not treated alike";
        return st;
      }
      st.split = true;
      continue;
    }
    if (side == 1 && st.split) {
      st.why = "the single products of A are those of fp32 operands split into two bf16 pieces (hi + mid), "
               "B's are not";
      return st;
    }
    if (left.size() != 1) {
      std::ostringstream s;
      if (left.empty()) {
        s << "no candidate conversion of " << which << " (";
        for (std::size_t c = 0; c < cands.size(); ++c) s << (c ? ", " : "") << to_string(cands[c]);
        s << ") explains its single products: e.g. " << value_text(values[0]) << " * 1 = "
          << value_text(from_bits(o.output(), bits[0]));
      } else {
        s << "the single products of " << which << " do not tell apart";
        for (Conversion c : left) s << " " << to_string(c);
      }
      if (left.empty() && in == Format::fp32)
        s << " (nor fp32 operands split into two bf16 pieces, whose single products are hi + mid)";
      st.why = s.str();
      return st;
    }
    (side == 0 ? st.a : st.b) = left[0];
  }
  st.ok = true;
  return st;
}

// ---------------------------------------------------------------------------------------------
// Stage 4: the fused nodes

// c as a sum of at most `slots` products a b, each a and b exact in `fmt`, whose sum is exact in any
// aligned window of 24 bits (the pieces do not overlap and span at most 24 bits). Empty if it cannot.
std::vector<std::pair<double, double>> carry_pieces(double c, Format fmt, int slots) {
  std::vector<std::pair<double, double>> out;
  if (c == 0 || !std::isfinite(c)) return out;
  const FormatInfo& f = info(fmt);
  const int p = f.precision;
  int e;
  std::frexp(std::fabs(c), &e);  // |c| in [2^(e-1), 2^e)
  // The significand as an integer of 24 bits: c = m 2^(e - 24).
  const double m = std::ldexp(std::fabs(c), 24 - e);
  if (m != std::floor(m)) return {};
  long long mm = static_cast<long long>(m);
  int shift = 0;  // pieces of p bits from the bottom
  while (mm != 0) {
    const long long chunk = mm & ((1LL << p) - 1);
    if (chunk != 0) {
      // piece = chunk 2^(e - 24 + shift) = (chunk 2^-(p-1)) * 2^(e - 24 + shift + p - 1)
      const double a = std::ldexp(static_cast<double>(chunk), -(p - 1));
      const int eb = e - 24 + shift + p - 1;
      if (eb > f.emax || eb < f.emin - (p - 1)) return {};
      double b = std::ldexp(1.0, eb);
      if (tc::round_to_format(fmt, a, Rounding::nearest_even) != a) return {};
      out.emplace_back(c < 0 ? -a : a, b);
      if (static_cast<int>(out.size()) > slots) return {};
    }
    mm >>= p;
    shift += p;
  }
  return out;
}

bool same_arithmetic(tc::TcParams a, const tc::TcParams& b) {
  a.overflow = b.overflow;
  a.zero_sign = b.zero_sign;
  a.zero_operand_exponent = b.zero_operand_exponent;
  a.tf32_low_bits = b.tf32_low_bits;
  return a == b;
}

std::vector<tc::Instruction> instructions_for(Format compute, int leaves) {
  std::vector<tc::Instruction> out;
  for (tc::Instruction i : tc::all_instructions()) {
    const tc::InstructionInfo& I = tc::info(i);
    if (I.input == compute && I.format_b() == compute && I.k == leaves && I.output == Format::fp32) out.push_back(i);
  }
  return out;
}

// ---------------------------------------------------------------------------------------------
// Stage 4 for split operands: fp32 operands whose single products come back exact ("as is"), or as
// hi + mid of two bf16 pieces (the conversion stage's `split`), but whose fused nodes no fp32
// instruction has. 3xTF32 (Triton's input_precision="tf32x3") and Triton's "bf16x3" and "bf16x6" look
// like that: each operand is split into tf32 or bf16 pieces, each node run once per pair of pieces.
// Each candidate split scheme (split_candidates, of each piece format whose instruction has the
// nodes' block) is composed with that instruction's measured model over the whole tree and checked
// on probes at the leaves of the last chain of fused nodes; exactly one may explain every probe.

// An fp32 value (-1)^s 2^e (1 + f 2^-23) with a random sign and high fraction bits and its low
// `low_bits` bits `low` (random when low < 0): the low bits decide the split (tf32, 13 low bits:
// 0x1000 a tie between two tf32 values, 0x0fff a small piece of 12 bits the instruction cuts, 0x1fff
// a carry into the big piece; bf16, 16 low bits: the same at 0x8000, 0x7fff, 0xffff).
double fp32_of(bool negative, int e, std::uint64_t high, std::uint64_t low, int low_bits) {
  const double v = std::ldexp(1.0 + std::ldexp(static_cast<double>((high << low_bits) | low), -23), e);
  return negative ? -v : v;
}

double split_probe_value(SplitMix& rng, int e_lo, int e_hi, long low, int low_bits) {
  const int e = e_lo + static_cast<int>(rng.next() % static_cast<std::uint64_t>(e_hi - e_lo + 1));
  const std::uint64_t high = rng.next() % (1u << (23 - low_bits));
  const std::uint64_t l = low >= 0 ? static_cast<std::uint64_t>(low) : rng.next() % (1u << low_bits);
  return fp32_of(rng.next() % 2, e, high, l, low_bits);
}

// The pieces' format for split operands, with the instruction of each kind of fused node in it.
struct SplitFamily {
  emulation::SplitScheme::PieceFormat format;
  Format instruction_input;
  int low_bits;  // the fp32 bits a piece drops: tf32 13, bf16 16
  std::map<int, tc::TcParams> model_of;
  std::map<int, std::string> names;
};

NodeStage infer_split(Oracle& o, const std::vector<Entry>& E, const SummationTree& t, const Options& opt,
                      Clock::time_point t0) {
  NodeStage st;
  const int K = t.leaves();
  // Each kind of fused node (leaves, running sum or not); each piece format whose instructions have
  // a measured model for every kind's block.
  std::vector<SplitFamily> families{{emulation::SplitScheme::PieceFormat::tf32, Format::tf32, 13, {}, {}},
                                    {emulation::SplitScheme::PieceFormat::bf16, Format::bf16, 16, {}, {}}};
  std::vector<std::pair<int, bool>> kinds;  // (leaves, carry)
  for (int n = K; n < t.node_count(); ++n) {
    const std::vector<int>& ch = t.children(n);
    if (ch.size() <= 2) continue;
    int leaves = 0;
    for (int c : ch) leaves += t.is_leaf(c);
    const bool carry = leaves < static_cast<int>(ch.size());
    if (std::find(kinds.begin(), kinds.end(), std::make_pair(leaves, carry)) == kinds.end())
      kinds.emplace_back(leaves, carry);
  }
  for (SplitFamily& f : families)
    for (const auto& [leaves, carry] : kinds) {
      if (f.model_of.count(leaves)) continue;
      for (tc::Instruction i : instructions_for(f.instruction_input, leaves)) {
        const std::optional<tc::TcParams> mp = tc::measured_hopper_params(i);
        if (!mp) continue;
        if (!f.model_of.count(leaves)) f.model_of[leaves] = *mp;
        if (same_arithmetic(*mp, f.model_of[leaves]))
          f.names[leaves] += std::string(f.names[leaves].empty() ? "" : " ") + tc::info(i).name;
      }
    }
  std::erase_if(families, [&](const SplitFamily& f) {
    return std::any_of(kinds.begin(), kinds.end(), [&](const auto& k) { return !f.model_of.count(k.first); });
  });
  if (families.empty()) {
    st.why = "fused nodes of " + std::to_string(kinds[0].first) +
             " fp32 products: no tensor-core instruction of that block has probes in gemmlab (neither fp32, "
             "nor tf32 or bf16 for split operands)";
    return st;
  }
  auto node_kinds = [&](const SplitFamily& f) {
    std::vector<NodeKind> out;
    for (const auto& [leaves, carry] : kinds) {
      NodeKind nk;
      nk.leaves = leaves;
      nk.carry = carry;
      nk.instruction = f.names.at(leaves).substr(0, f.names.at(leaves).find(' '));
      nk.params = f.model_of.at(leaves);
      nk.same_as = f.names.at(leaves);
      out.push_back(nk);
    }
    return out;
  };
  auto model = [&](const SplitFamily& f) -> emulation::NodeModel {
    return [model_of = f.model_of](int leaves) -> std::optional<tc::TcParams> {
      auto it = model_of.find(leaves);
      if (it == model_of.end()) return std::nullopt;
      return it->second;
    };
  };
  const std::vector<std::vector<int>> chains = emulation::fused_chains(t);
  int longest = 0;
  for (const auto& c : chains) longest = std::max(longest, static_cast<int>(c.size()));
  // Every candidate of every family, with its family.
  std::vector<emulation::SplitScheme> cands;
  std::vector<std::size_t> family_of;
  for (std::size_t f = 0; f < families.size(); ++f)
    for (const emulation::SplitScheme& c : split_candidates(longest, families[f].format)) {
      cands.push_back(c);
      family_of.push_back(f);
    }
  std::vector<emulation::NodeModel> models;
  for (const SplitFamily& f : families) models.push_back(model(f));
  st.split_candidates = static_cast<int>(cands.size());
  if (std::string gap = emulation::tree_gap(t, models[0], "fp32", &cands[0]); !gap.empty()) {
    st.why = "fp32 operands reach fused nodes unconverted but " + gap;
    return st;
  }
  // The probed leaves: those of the last (up to 16) nodes of the chain holding leaf K - 1.
  std::vector<std::vector<int>> nodes;  // the probed nodes' leaves, in chain order
  for (const auto& c : chains) {
    bool holds = false;
    for (int n : c)
      for (int x : t.children(n)) holds = holds || x == K - 1;
    if (!holds) continue;
    for (std::size_t i = c.size() > 16 ? c.size() - 16 : 0; i < c.size(); ++i) {
      std::vector<int> l;
      for (int x : t.children(c[i]))
        if (t.is_leaf(x)) l.push_back(x);
      nodes.push_back(l);
    }
  }
  if (nodes.empty()) {
    st.why = "the product K - 1 is in no fused node: split operands are modelled only in fused nodes";
    return st;
  }
  std::vector<int> L;
  for (const auto& l : nodes) L.insert(L.end(), l.begin(), l.end());
  // The probes, most telling first: whole chains of random values, then ties, single products and
  // pairs in different nodes (carries between nodes and passes), cancelling big pieces (the order of
  // the small passes), then infinite operands (the mask).
  SplitMix rng{opt.seed ^ 0x3f32ull};
  std::vector<Item> items;
  for (const SplitFamily& f : families) {
    const int lb = f.low_bits;
    const long tie = 1L << (lb - 1), below = tie - 1;
    const long lows[] = {-1, tie, below, tie + 1, 2 * tie - 1, 1, tie / 2};
    auto value = [&](int e_lo, int e_hi) { return split_probe_value(rng, e_lo, e_hi, lows[rng.next() % 7], lb); };
    for (int x = 0; x < 96; ++x) {
      Item it;
      for (int k : L) {
        it.a.at.push_back({k, value(-3, 3)});
        it.b.at.push_back({k, value(-3, 3)});
      }
      items.push_back(it);
    }
    for (int x = 0; x < 32; ++x) {
      Item it;
      for (int k : L) {
        it.a.at.push_back({k, split_probe_value(rng, -2, 2, tie, lb)});
        it.b.at.push_back({k, split_probe_value(rng, -2, 2, x % 2 ? tie : -1, lb)});
      }
      items.push_back(it);
    }
    for (int x = 0; x < 48; ++x) {
      Item it;
      const int k = L[rng.next() % L.size()];
      it.a.at = {{k, value(-2, 2)}};
      it.b.at = {{k, value(-2, 2)}};
      items.push_back(it);
    }
    for (int x = 0; x < 48; ++x) {
      Item it;
      const std::vector<int>& n1 = nodes[rng.next() % nodes.size()];
      const std::vector<int>& n2 = nodes[rng.next() % nodes.size()];
      const int k1 = n1[rng.next() % n1.size()];
      int k2 = n2[rng.next() % n2.size()];
      if (k2 == k1) k2 = L[(std::find(L.begin(), L.end(), k1) - L.begin() + 1) % L.size()];
      const int shift = static_cast<int>(rng.next() % lb);
      it.a.at = {{k1, value(0, 1)}, {k2, value(-shift, -shift)}};
      it.b.at = {{k1, value(0, 1)}, {k2, value(-1, 0)}};
      items.push_back(it);
    }
    // Pairs of leaves whose big x big products cancel exactly (the same big pieces, B's negated; the
    // low bits below the tie, so that every rounding of the big piece agrees): only the passes of the
    // small pieces are left. Whether small*big or big*small ran first shows only where their sum
    // lands on the grid the big x big node aligns it to (about 1 probe in 500 of these on the H100's
    // tf32 model), hence so many of them.
    for (int x = 0; x < 4096; ++x) {
      Item it;
      std::vector<int> perm = L;
      for (std::size_t i = perm.size(); i > 1; --i) std::swap(perm[i - 1], perm[rng.next() % i]);
      for (std::size_t i = 0; i + 1 < perm.size(); i += 2) {
        const bool sa = rng.next() % 2, sb = rng.next() % 2;
        // exponents far apart from pair to pair, so that the nodes' alignment cuts some small products
        const int ea = static_cast<int>(rng.next() % 13) - 6, eb = static_cast<int>(rng.next() % 13) - 6;
        const std::uint64_t ha = rng.next() % (1u << (23 - lb)), hb = rng.next() % (1u << (23 - lb));
        for (int side = 0; side < 2; ++side) {
          it.a.at.push_back({perm[i + side], fp32_of(sa, ea, ha, rng.next() % tie, lb)});
          it.b.at.push_back({perm[i + side], fp32_of(side ? !sb : sb, eb, hb, rng.next() % tie, lb)});
        }
      }
      items.push_back(it);
    }
    for (int x = 0; x < 8; ++x) {
      Item it;
      for (int k : L) {
        it.a.at.push_back({k, value(-3, 3)});
        it.b.at.push_back({k, value(-3, 3)});
      }
      const std::size_t at = rng.next() % L.size();
      // infinity in A (even x) or B against a value whose small piece is non-zero (x < 4) or zero
      auto& inf_side = x % 2 ? it.b.at : it.a.at;
      auto& other = x % 2 ? it.a.at : it.b.at;
      inf_side[at].second = x % 4 < 2 ? INFINITY : -INFINITY;
      other[at].second = x < 4 ? split_probe_value(rng, 0, 0, 0x0700, lb) : 1.5;
      items.push_back(it);
    }
  }
  const int P = static_cast<int>(items.size());
  st.split_probes = P;
  const std::vector<std::uint64_t> bits = run_items(o, E, items);
  // Their rows of A and columns of B, dense, for the candidates' predictions.
  Matrix A(P, K), B(K, P);
  for (int x = 0; x < P; ++x) {
    for (const auto& [k, v] : items[x].a.at) A(x, k) = v;
    for (const auto& [k, v] : items[x].b.at) B(k, x) = v;
  }
  const Format out = o.output();
  auto explains = [&](double predicted, std::uint64_t got) {
    if (std::isnan(predicted)) return std::isnan(from_bits(out, got));
    return output_bits(out, predicted, 0) == got;
  };
  // Each candidate is dropped at its first batch with a probe it does not explain.
  std::vector<std::size_t> alive(cands.size());
  std::iota(alive.begin(), alive.end(), 0);
  std::string last_failure;
  for (int first = 0, size = 8; first < P && !alive.empty(); first += size, size = first < 512 ? 8 : 512) {
    std::vector<Entry> batch;
    for (int x = first; x < std::min(P, first + size); ++x) batch.emplace_back(x, x);
    std::vector<std::size_t> next;
    for (std::size_t c : alive) {
      const std::vector<double> want =
          emulation::emulate_tree_at(t, models[family_of[c]], A, B, batch, opt.threads, &cands[c]);
      std::size_t miss = want.size();
      for (std::size_t x = 0; x < want.size() && miss == want.size(); ++x)
        if (!explains(want[x], bits[first + x])) miss = x;
      if (miss == want.size()) {
        next.push_back(c);
        continue;
      }
      const int x = first + static_cast<int>(miss);
      last_failure = cands[c].describe() + ", at probe " + std::to_string(x) + " of " + std::to_string(P) +
                     ": predicted " + tc::hex_bits(output_bits(out, want[miss], all_ones_nan(out)), out) +
                     ", the kernel " + tc::hex_bits(bits[x], out);
    }
    alive = std::move(next);
  }
  st.seconds = since(t0);
  // The nodes' instructions: the one found's family, else the first's.
  st.kinds = node_kinds(families[alive.size() == 1 ? family_of[alive[0]] : 0]);
  for (NodeKind& nk : st.kinds) nk.probes = P;
  if (alive.size() == 1) {
    st.split = cands[alive[0]];
    st.ok = true;
    return st;
  }
  std::ostringstream why;
  if (alive.empty()) {
    why << "fp32 operands reach fused nodes of " << st.kinds[0].leaves << " products unconverted, but no split into ";
    for (std::size_t f = 0; f < families.size(); ++f)
      why << (f ? " or " : "") << info(families[f].instruction_input).name << " pieces with "
          << node_kinds(families[f])[0].instruction << "'s measured model";
    why << " explains every one of " << P << " probes (" << cands.size()
        << " schemes tried; the last to fail: " << last_failure << ")";
    for (NodeKind& nk : st.kinds) nk.mismatching = P;  // no scheme explains them all
  } else {
    why << alive.size() << " split schemes explain all " << P << " probes, which do not tell them apart:";
    for (std::size_t i = 0; i < alive.size() && i < 3; ++i) why << (i ? "; " : " ") << cands[alive[i]].describe();
  }
  st.why = why.str();
  return st;
}

NodeStage infer_nodes(Oracle& o, const std::vector<Entry>& E, const SummationTree& t, const ConversionStage& conv,
                      const Options& opt) {
  const auto t0 = Clock::now();
  NodeStage st;
  // The kinds of fused node, each with its last node (the one holding the largest leaf).
  struct Kind {
    int leaves;
    bool carry;
    int node = -1, max_leaf = -1;
  };
  std::vector<Kind> kinds;
  for (int n = t.leaves(); n < t.node_count(); ++n) {
    const std::vector<int>& ch = t.children(n);
    if (ch.size() <= 2) continue;
    int leaves = 0, max_leaf = -1;
    for (int c : ch)
      if (t.is_leaf(c)) {
        ++leaves;
        max_leaf = std::max(max_leaf, c);
      }
    const bool carry = leaves < static_cast<int>(ch.size());
    auto it = std::find_if(kinds.begin(), kinds.end(), [&](const Kind& k) { return k.leaves == leaves && k.carry == carry; });
    if (it == kinds.end()) kinds.push_back({leaves, carry, n, max_leaf});
    else if (max_leaf > it->max_leaf) *it = {leaves, carry, n, max_leaf};
  }
  const Format compute = compute_format(conv.a, o.input());
  if (compute_format(conv.b, o.input()) != compute) {
    st.why = "A and B reach the multiplier in different formats";
    return st;
  }
  // fp32 products exact in single products but fused: operands split into tf32 pieces, or nothing.
  if (compute == Format::fp32 && !kinds.empty() && (conv.split || instructions_for(Format::fp32, kinds[0].leaves).empty()))
    return infer_split(o, E, t, opt, t0);
  for (const Kind& kind : kinds) {
    NodeKind nk;
    nk.leaves = kind.leaves;
    nk.carry = kind.carry;
    const std::vector<tc::Instruction> cands = instructions_for(compute, kind.leaves);
    if (cands.empty()) {
      st.why = "fused nodes of " + std::to_string(kind.leaves) + " " + info(compute).name +
               " products: no tensor-core instruction of that block has probes in gemmlab";
      st.kinds.push_back(nk);
      return st;
    }
    // The node's own leaves, and the leaves that build its C (the carry child's leaves).
    std::vector<int> L, builder;
    int carry_child = -1;
    for (int c : t.children(kind.node)) {
      if (t.is_leaf(c)) L.push_back(c);
      else carry_child = c;
    }
    std::sort(L.begin(), L.end());
    if (carry_child >= 0)
      for (int c : t.children(carry_child))
        if (t.is_leaf(c)) builder.push_back(c);
    bool found = false;
    std::string tried;
    for (tc::Instruction ins : cands) {
      const tc::InstructionInfo& I = tc::info(ins);
      std::vector<tc::Probe> probes = tc::make_probes(I);
      std::vector<Item> items;
      std::vector<const tc::Probe*> used;
      int skipped = 0;
      for (const tc::Probe& pr : probes) {
        if (static_cast<long long>(used.size()) >= opt.max_probes) break;
        if (pr.raw || (pr.c != 0 && !kind.carry) || (pr.c == 0 && std::signbit(pr.c))) {
          ++skipped;
          continue;
        }
        Item it;
        for (int k = 0; k < I.k; ++k) {
          it.a.at.push_back({L[k], pr.a[k]});
          it.b.at.push_back({L[k], pr.b[k]});
        }
        if (pr.c != 0) {
          const auto pieces = carry_pieces(pr.c, compute, static_cast<int>(builder.size()));
          if (pieces.empty() || std::fabs(pr.c) < 0x1p-100 || std::fabs(pr.c) > 0x1p100) {
            ++skipped;
            continue;
          }
          for (std::size_t s = 0; s < pieces.size(); ++s) {
            it.a.at.push_back({builder[s], pieces[s].first});
            it.b.at.push_back({builder[s], pieces[s].second});
          }
        }
        items.push_back(std::move(it));
        used.push_back(&pr);
      }
      std::vector<std::uint64_t> bits = run_items(o, E, items);
      nk.instruction = I.name;
      nk.probes = static_cast<int>(used.size());
      nk.skipped = skipped;
      if (o.output() != I.output) {
        // The kernel writes a narrower format than the instruction (bf16 from the fp32 result): the
        // rounding hides the low bits the inference reads, so the instruction's measured model is
        // checked instead, each probe's prediction rounded to nearest even as the kernel's output
        // is. Agreement on every probe (and then the composition) identifies it; an arithmetic that
        // no probed instruction has cannot be inferred through such an output.
        const std::optional<tc::TcParams> mp = tc::measured_hopper_params(ins);
        if (!mp) {
          tried += std::string(tried.empty() ? "" : "; ") + I.name + ": no measured model to check through the " +
                   info(o.output()).name + " output";
          continue;
        }
        int miss = 0;
        // GEMMLAB_EXPLAIN_TRACE: each unexplained probe on stderr (its id, the model's D before and
        // after the rounding to the output, the kernel's bits), to find what the output does.
        const bool trace_misses = std::getenv("GEMMLAB_EXPLAIN_TRACE") != nullptr;
        for (std::size_t x = 0; x < used.size(); ++x) {
          const double d = tc::predict(*mp, *used[x]);
          const bool same = std::isnan(d) ? std::isnan(from_bits(o.output(), bits[x]))
                                          : output_bits(o.output(), d, 0) == bits[x];
          miss += !same;
          if (!same && trace_misses)
            std::fprintf(stderr, "[explain] %s probe %s (c = %s): model D = %s -> %s 0x%llx, kernel 0x%llx = %s\n", I.name,
                         used[x]->id.c_str(), value_text(used[x]->c).c_str(), value_text(d).c_str(),
                         info(o.output()).name, static_cast<unsigned long long>(output_bits(o.output(), d, 0)),
                         static_cast<unsigned long long>(bits[x]), value_text(from_bits(o.output(), bits[x])).c_str());
        }
        nk.checked_through = info(o.output()).name;
        nk.mismatching = miss;
        nk.params = *mp;
        tried += std::string(tried.empty() ? "" : "; ") + I.name + "'s measured model: " + std::to_string(miss) +
                 " of " + std::to_string(used.size()) + " probes seen through the " + info(o.output()).name +
                 " output unexplained";
        if (miss == 0) {
          found = true;
          break;
        }
        continue;
      }
      std::vector<tc::ProbeOutcome> outcomes;
      for (std::size_t x = 0; x < used.size(); ++x) outcomes.push_back({*used[x], bits[x]});
      const tc::Inference inf = tc::infer(I, outcomes);
      nk.mismatching = inf.mismatching_probes;
      nk.params = inf.params;
      nk.ambiguous = inf.ambiguous;
      tried += std::string(tried.empty() ? "" : "; ") + I.name + ": " + std::to_string(inf.mismatching_probes) + " of " +
               std::to_string(used.size()) + " probes unexplained";
      if (inf.mismatching_probes == 0) {
        found = true;
        break;
      }
    }
    // The probed instructions with the same arithmetic. The special rules that only the adversarial
    // corpus settles (overflow, the sign of an exact zero, zero operands, tf32's low bits) are not
    // probed here: a node that matches an instruction's arithmetic takes its measured model whole.
    std::optional<tc::TcParams> measured;
    for (tc::Instruction i : tc::all_instructions()) {
      auto mp = tc::measured_hopper_params(i);
      const tc::InstructionInfo& I = tc::info(i);
      if (found && mp && same_arithmetic(nk.params, *mp) && I.input == compute && I.output == Format::fp32) {
        nk.same_as += std::string(nk.same_as.empty() ? "" : " ") + I.name;
        if (!measured) measured = mp;
      }
    }
    if (measured) nk.params = *measured;
    st.kinds.push_back(nk);
    if (!found) {
      st.why = "no tensor-core model explains the fused nodes of " + std::to_string(kind.leaves) + " products (" + tried + ")";
      st.seconds = since(t0);
      return st;
    }
  }
  st.ok = true;
  st.seconds = since(t0);
  return st;
}

emulation::NodeModel node_model(const std::vector<NodeKind>& kinds) {
  std::map<int, tc::TcParams> by_leaves;
  for (const NodeKind& k : kinds)
    if (k.carry || !by_leaves.count(k.leaves)) by_leaves[k.leaves] = k.params;  // the carry kind saw C's rules too
  return [by_leaves](int leaves) -> std::optional<tc::TcParams> {
    auto it = by_leaves.find(leaves);
    if (it == by_leaves.end()) return std::nullopt;
    return it->second;
  };
}

// The entries compared at full size: every entry when that is affordable, else whole rows (first,
// last, middle and the tile edges, then seeded ones) up to `budget` outputs.
std::vector<Entry> compared_entries(int M, int N, long long budget, std::uint64_t seed) {
  std::vector<Entry> out;
  if (budget <= 0 || static_cast<long long>(M) * N <= budget) {
    for (int i = 0; i < M; ++i)
      for (int j = 0; j < N; ++j) out.emplace_back(i, j);
    return out;
  }
  std::vector<int> rows;
  for (int i : {0, 1, M / 2, M - 2, M - 1, 63, 64, 127, 128, 255, 256})
    if (i >= 0 && i < M && std::find(rows.begin(), rows.end(), i) == rows.end()) rows.push_back(i);
  SplitMix rng{seed ^ 0xc0ull};
  const long long want_rows = std::max<long long>(1, budget / N);
  while (static_cast<long long>(rows.size()) < std::min<long long>(want_rows, M)) {
    int i = static_cast<int>(rng.next() % M);
    if (std::find(rows.begin(), rows.end(), i) == rows.end()) rows.push_back(i);
  }
  for (int i : rows)
    for (int j = 0; j < N; ++j) out.emplace_back(i, j);
  return out;
}

}  // namespace

// ---------------------------------------------------------------------------------------------
// Identification as a Numerics record

std::optional<Numerics> numerics_for(const SummationTree& tree, Format input, Format output, Conversion conv,
                                     const std::vector<NodeKind>& kinds, const emulation::SplitScheme* split) {
  const int K = tree.leaves();
  const bool tf32_pieces = split && split->format == emulation::SplitScheme::PieceFormat::tf32;
  const Format compute = !split ? compute_format(conv, input) : tf32_pieces ? Format::tf32 : Format::bf16;
  if (split && kinds.empty()) return std::nullopt;  // pieces reach a multiplier: fused nodes
  const std::string want = tree.canonical();
  std::vector<Numerics> cands;
  if (kinds.empty()) {
    if (compute == Format::fp32 && input == Format::fp32) {
      Numerics n = cuda_core_fp32_fma();
      n.output = output;
      cands.push_back(n);
    }
  } else {
    const int g = kinds[0].leaves;
    for (const NodeKind& k : kinds)
      if (k.leaves != g) return std::nullopt;
    std::optional<tc::Instruction> ins;
    const bool have_carry = std::any_of(kinds.begin(), kinds.end(), [](const NodeKind& k) { return k.carry; });
    for (const NodeKind& k : kinds) {
      if (have_carry && !k.carry) continue;  // a first block's C = 0 probes leave C's rules open
      std::istringstream s(k.same_as);
      std::string first;
      if (s >> first) {
        if (auto i = tc::parse_instruction(first)) ins = i;
      } else {
        return std::nullopt;  // a node model no instruction of gemmlab's has
      }
    }
    if (!ins) return std::nullopt;
    const bool fp8 = compute == Format::e4m3 || compute == Format::e5m2;
    Numerics base{.input = input, .compute = compute, .accumulator = Format::fp32, .output = output,
                  .accumulation = Accumulation::in_mma, .instruction = ins, .k_step = g,
                  .accumulation_rounding = Rounding::toward_zero, .acc_unit_roundoff = fp8 ? 0x1p-13 : 0.0,
                  .subnormals_flushed = fp8 && tc::info(*ins).name[0] == 'w', .split = {}};
    const bool wgmma = std::string(tc::info(*ins).name).rfind("wgmma", 0) == 0;
    for (int split : {1, 2}) {
      for (Accumulation a : {wgmma ? Accumulation::in_wgmma : Accumulation::in_mma, Accumulation::external}) {
        Numerics n = base;
        n.accumulation = a;
        n.split_k = split;
        cands.push_back(n);
      }
      for (int P = 2 * g; P < K; P += g) {
        if (K % P) continue;
        Numerics n = base;
        n.accumulation = Accumulation::promoted;
        n.promotion_interval_k = P;
        n.split_k = split;
        cands.push_back(n);
      }
    }
  }
  for (Numerics& n : cands) {
    try {
      if (!expected_tree_matches(n, K, want)) continue;
    } catch (const std::invalid_argument&) {
      continue;
    }
    if (split) {
      n.split.pieces = split->pieces;
      for (const auto& [i, j] : split->passes) n.split.products |= OperandSplit::bit(i, j);
      // tf32: the instruction reads the last piece's fp32 container as any tf32 operand (at worst cut
      // toward zero); bf16 pieces are rounded as the scheme says and read exactly.
      n.split.rounding = tf32_pieces || split->big_rounding == emulation::LowBits::toward_zero ? Rounding::toward_zero
                                                                                                : Rounding::nearest_even;
    }
    return n;
  }
  return std::nullopt;
}

std::vector<emulation::SplitScheme> split_candidates(int longest_chain, emulation::SplitScheme::PieceFormat format) {
  using emulation::SplitScheme;
  using P = std::pair<SplitScheme::Piece, SplitScheme::Piece>;
  const P sb{SplitScheme::small, SplitScheme::big}, bs{SplitScheme::big, SplitScheme::small},
      bb{SplitScheme::big, SplitScheme::big}, ss{SplitScheme::small, SplitScheme::small};
  // Two pieces: the passes small*big, big*small, big*big in each order, alone or with small*small
  // first or last.
  std::vector<std::vector<P>> orders;
  std::vector<P> three{sb, bs, bb};
  std::sort(three.begin(), three.end());
  do {
    orders.push_back(three);
    std::vector<P> first{ss}, last = three;
    first.insert(first.end(), three.begin(), three.end());
    last.push_back(ss);
    orders.push_back(first);
    orders.push_back(last);
  } while (std::next_permutation(three.begin(), three.end()));
  std::vector<int> groups{0};
  for (int g = 1; g <= 8 && g < longest_chain; g *= 2) groups.push_back(g);
  std::vector<SplitScheme> out;
  auto add = [&](emulation::LowBits r, const std::vector<std::vector<P>>& passes_list, SplitScheme::PieceFormat f,
                 int pieces) {
    for (const std::vector<P>& passes : passes_list)
      for (int g : groups)
        for (bool mask : {true, false}) out.push_back({r, passes, g, mask, f, pieces});
  };
  if (format == SplitScheme::PieceFormat::tf32) {
    for (emulation::LowBits r : {emulation::LowBits::nearest_away, emulation::LowBits::nearest_even,
                                 emulation::LowBits::toward_zero})
      add(r, orders, format, 2);
    return out;
  }
  // bf16 pieces rounded to nearest even (arith.truncf): two pieces in the orders above; three pieces
  // in Triton's order (the terms of 2^-16 relative, mid*mid, lo*hi, hi*lo, then bf16x3's mid*hi,
  // hi*mid, hi*hi) and orders near it: mid*hi and hi*mid swapped, the two groups swapped, mid*mid
  // dropped or moved after the larger terms, hi*hi first. The order of the first three among
  // themselves is no candidate: their sums are 2^-16 of the result and cut 2^-25 below their own
  // largest product, so that the probes do not tell their orders apart (on the H100's bf16 model
  // none of 8424 did, 4096 of them pairs whose hi x hi and mid x mid products cancel).
  add(emulation::LowBits::nearest_even, orders, format, 2);
  const P mm = ss, lh{SplitScheme::lo, SplitScheme::hi}, hl{SplitScheme::hi, SplitScheme::lo};
  const std::vector<std::vector<P>> six{{mm, lh, hl, sb, bs, bb}, {mm, lh, hl, bs, sb, bb}, {sb, bs, mm, lh, hl, bb},
                                        {lh, hl, sb, bs, bb},     {lh, hl, sb, bs, mm, bb}, {bb, mm, lh, hl, sb, bs}};
  add(emulation::LowBits::nearest_even, six, format, 3);
  return out;
}

bool expected_tree_matches(const Numerics& n, int K, const std::string& canonical) {
  return emulation::expected_tree(n, K).canonical() == canonical;
}

// ---------------------------------------------------------------------------------------------

std::string Report::summary() const {
  std::ostringstream s;
  s << (identified ? "identified" : "UNIDENTIFIED (" + failed_stage + ": " + reason + ")") << "\n";
  if (!gemm_check.empty()) s << "  gemm: " << gemm_check << "\n";
  if (tree.ok || !tree.text.empty()) s << "  tree: " << tree.text << " (" << tree.entries_used << " entries answered, "
                                       << tree.entries_verified << " verified)\n";
  if (conversion.ok)
    s << "  operands: "
      << (conversion.split ? std::string("split (each single product hi + mid of two bf16 pieces)")
                           : std::string("A ") + in_words(conversion.a) + ", B " + in_words(conversion.b))
      << "\n";
  if (nodes.split)
    s << "  split: " << nodes.split->describe() << " (the one of " << nodes.split_candidates << " schemes explaining all "
      << nodes.split_probes << " probes)\n";
  for (const NodeKind& k : nodes.kinds)
    s << "  fused nodes of " << k.leaves << (k.carry ? " products and the running sum" : " products") << ": "
      << k.params.describe() << " (" << k.probes << " probes of " << k.instruction << ", " << k.mismatching
      << " unexplained" << (k.same_as.empty() ? "" : "; as " + k.same_as)
      << (k.checked_through.empty() ? "" : "; checked through the " + k.checked_through + " output, not inferred") << ")\n";
  for (const Comparison& c : comparisons)
    s << "  " << c.distribution << ": " << c.mismatches << " of " << c.outputs << " outputs differ from the prediction"
      << (c.first_mismatch.empty() ? "" : " (first " + c.first_mismatch + ")") << "\n";
  if (!numerics_text.empty()) s << "  numerics: " << numerics_text << "\n";
  if (!behaves_like.empty()) {
    s << "  behaves exactly like:";
    for (const std::string& b : behaves_like) s << " " << b;
    s << "\n";
  }
  return s.str();
}

namespace {

template <class Note, class Fail>
Report explain_stages(Oracle& o, const Options& opt, const std::vector<Entry>& E, Report& r, std::string& stage,
                      Note& note, Fail& fail, Clock::time_point t0, long long launches0) {
  if (std::string why = check_gemm(o, E, r.gemm_check); !why.empty()) return fail("gemm", why);
  note("gemm checked");
  stage = "tree";
  r.tree = reveal(o, E, opt);
  note("tree");
  if (r.tree.text.empty()) return fail("tree", r.tree.why);
  if (!r.tree.deterministic) return fail("tree", r.tree.why);
  stage = "conversion";
  r.conversion = infer_conversion(o, E);
  note("conversion");
  if (!r.conversion.ok) return fail("conversion", r.conversion.why);
  stage = "nodes";
  r.nodes = infer_nodes(o, E, r.tree.tree, r.conversion, opt);
  note("nodes");
  stage = "composition";
  if (!r.nodes.ok) return fail("nodes", r.nodes.why);
  // Composition at full size on each distribution.
  const emulation::NodeModel model = node_model(r.nodes.kinds);
  const emulation::SplitScheme* split = r.nodes.split ? &*r.nodes.split : nullptr;
  if (std::string gap = emulation::tree_gap(r.tree.tree, model, info(o.input()).name, split); !gap.empty())
    return fail("nodes", gap);
  // A NaN result is written as the nodes' model encodes it (binary nodes pass NaN on as the tensor
  // cores and CUDA cores of Hopper write it: all ones).
  const std::uint64_t nan_bits =
      r.nodes.kinds.empty() || r.nodes.kinds.back().params.nan_encoding == tc::NanEncoding::all_ones
          ? all_ones_nan(o.output())
          : to_bits(o.output(), std::nan(""));
  const std::vector<Entry> cmp = compared_entries(o.M(), o.N(), opt.compare_outputs, opt.seed);
  long long total_mismatches = 0;
  for (const std::string& dn : opt.distributions) {
    const Distribution d = parse_distribution(dn);
    Matrix A = generate(d, Operand::A, o.M(), o.K(), o.input(), opt.seed, opt.threads);
    Matrix B = generate(d, Operand::B, o.K(), o.N(), o.input(), opt.seed, opt.threads);
    const std::vector<std::uint64_t> got = o.run_full(A, B, cmp);
    for (double& v : A.v) v = convert(r.conversion.a, v);
    for (double& v : B.v) v = convert(r.conversion.b, v);
    const std::vector<double> want = emulation::emulate_tree_at(r.tree.tree, model, A, B, cmp, opt.threads, split);
    Comparison c{d.name(), static_cast<long long>(cmp.size()), 0, ""};
    for (std::size_t e = 0; e < cmp.size(); ++e) {
      const std::uint64_t w = output_bits(o.output(), want[e], nan_bits);
      if (w == got[e]) continue;
      if (c.mismatches++ == 0)
        c.first_mismatch = entry_text(cmp[e]) + ": predicted " + tc::hex_bits(w, o.output()) + " kernel " +
                           tc::hex_bits(got[e], o.output());
    }
    total_mismatches += c.mismatches;
    r.comparisons.push_back(c);
  }
  // The identified numerics in gemmlab's vocabulary, and the known kernels that have them (no built-in
  // kernel splits its operands).
  r.numerics = numerics_for(r.tree.tree, o.input(), o.output(), r.conversion.a, r.nodes.kinds, split);
  {
    std::ostringstream s;
    if (split)
      s << split->describe() << ", each pass of a node one " << r.nodes.kinds[0].instruction << "; the tree of the "
        << (split->format == emulation::SplitScheme::PieceFormat::tf32 ? "big x big" : "hi x hi") << " products: ";
    else
      s << "operands " << in_words(r.conversion.a) << "; ";
    s << r.tree.text;
    if (r.numerics) s << " = " << r.numerics->describe();
    r.numerics_text = s.str();
  }
  const std::string canon = r.tree.tree.canonical();
  const std::vector<KnownKernel> none;
  for (const KnownKernel& k : split ? none : opt.known) {
    if (k.numerics.input != o.input() || k.numerics.output != o.output()) continue;
    if (k.numerics.compute != compute_format(r.conversion.a, o.input())) continue;
    try {
      if (emulation::expected_tree(k.numerics, o.K()).canonical() != canon) continue;
    } catch (const std::invalid_argument&) {
      continue;
    }
    bool same_nodes = true;
    for (const NodeKind& nk : r.nodes.kinds) same_nodes = same_nodes && *model(nk.leaves) == k.params;
    if (same_nodes) r.behaves_like.push_back(k.name);
  }
  if (!r.tree.ok) {
    fail("tree", r.tree.why + "; " + std::to_string(total_mismatches) + " compared outputs differ from the prediction");
    return r;
  }
  if (total_mismatches > 0) {
    std::ostringstream s;
    s << total_mismatches << " compared outputs differ from the prediction (" << r.comparisons[0].first_mismatch << ")";
    for (const Comparison& c : r.comparisons)
      if (c.mismatches && c.distribution != r.comparisons[0].distribution) s << "; " << c.distribution << " " << c.first_mismatch;
    return fail("composition", s.str());
  }
  r.identified = true;
  r.launches = o.launches - launches0;
  r.seconds = since(t0);
  return r;
}

}  // namespace

Report explain_kernel(Oracle& o, const Options& opt) {
  const auto t0 = Clock::now();
  Report r;
  const bool trace = std::getenv("GEMMLAB_EXPLAIN_TRACE") != nullptr;
  auto note = [&](const char* what) {
    if (trace) std::fprintf(stderr, "[explain] %s at %.2f s, %lld launches\n", what, since(t0), o.launches);
  };
  const long long launches0 = o.launches;
  auto fail = [&](const std::string& stage, const std::string& why) {
    r.identified = false;
    r.failed_stage = stage;
    r.reason = why;
    r.launches = o.launches - launches0;
    r.seconds = since(t0);
    return r;
  };
  const std::vector<Entry> E = choose_entries(o.M(), o.N(), std::min(o.M(), o.N()), opt.seed);
  note("start");
  // A stage that cannot finish (the kernel raised, a count that is no count) leaves the kernel
  // unidentified at that stage, with the reason; nothing is guessed past it.
  std::string stage = "gemm";
  try {
    return explain_stages(o, opt, E, r, stage, note, fail, t0, launches0);
  } catch (const std::exception& e) {
    return fail(stage, e.what());
  }
}


// ---------------------------------------------------------------------------------------------
// Synthetic kernels for tests

SyntheticKernel::SyntheticKernel(int M, int N, int K, Format input, SummationTree tree, emulation::NodeModel model,
                                 Conversion conv_a, Conversion conv_b)
    : M_(M), N_(N), K_(K), input_(input), tree_(std::move(tree)), model_(std::move(model)), conv_a_(conv_a),
      conv_b_(conv_b) {}

std::vector<std::uint64_t> SyntheticKernel::compute(const std::function<void(int, double*)>& row_a,
                                                    const std::function<void(int, double*)>& col_b,
                                                    const std::vector<Entry>& entries) {
  ++launches;
  const bool other_call = alternate_calls && (calls_++ % 2 == 1);
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
  for (const auto* which : {&own, &other}) {
    if (which->empty()) continue;
    const std::vector<double> sums = emulation::emulate_tree_at(which == &own ? tree_ : *other_tree, model_, A, B,
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
