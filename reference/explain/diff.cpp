// `gemmlab explain --diff`: where two kernels' numerics differ, each difference with an input where
// their bits differ (reference/explain/diff.hpp).
#include "reference/explain/diff.hpp"

#include <algorithm>
#include <cmath>
#include <map>
#include <sstream>
#include <stdexcept>

#include "reference/distributions.hpp"
#include "reference/explain/internal.hpp"
#include "reference/fprev.hpp"
#include "reference/rng.hpp"
#include "reference/tc_infer.hpp"

namespace gemmlab::explain {

namespace {

using detail::Item;

// The parent of every node of t (-1 for the root).
std::vector<int> parent_of(const SummationTree& t) {
  std::vector<int> parent(t.node_count(), -1);
  for (int n = t.leaves(); n < t.node_count(); ++n)
    for (int c : t.children(n)) parent[c] = n;
  return parent;
}

// lca sizes of pairs, with the parents and depths computed once (explain::lca_size does it per pair).
struct Lca {
  const SummationTree& t;
  std::vector<int> parent, depth;
  explicit Lca(const SummationTree& tree) : t(tree), parent(parent_of(tree)), depth(tree.node_count(), 0) {
    for (int n = t.node_count() - 1; n >= 0; --n)
      if (parent[n] >= 0) depth[n] = depth[parent[n]] + 1;  // parents are added after their children
  }
  int size(int p, int q) const {
    while (p != q) {
      if (depth[p] >= depth[q]) p = parent[p];
      else q = parent[q];
    }
    return t.size(p);
  }
};

bool same_value_or_bits(Format fa, std::uint64_t a, Format fb, std::uint64_t b) {
  if (fa == fb) return a == b;
  const double x = from_bits(fa, a), y = from_bits(fb, b);
  return x == y ? std::signbit(x) == std::signbit(y) : std::isnan(x) && std::isnan(y);
}

std::string bits_text(Format f, std::uint64_t bits) {
  return tc::hex_bits(bits, f) + " (" + detail::value_text(from_bits(f, bits)) + ")";
}

// "identified: <numerics>" or "unidentified at <stage>: <reason>".
std::string identification(const Report& r) {
  if (r.identified) return "identified: " + r.numerics_text;
  return "unidentified at " + r.failed_stage + ": " + r.reason.substr(0, 300);
}

// Whether the kernel's order depends on scheduling, in words.
std::string scheduling_words(const Report& r) {
  if (!r.tree.text.empty() && !r.tree.deterministic) return "its order changes between calls: " + r.tree.why;
  if (r.schedule.verdict == "depends" || r.schedule.verdict == "unchanged") return r.schedule.text;
  return "the same order on every call of the tree stage" +
         (r.schedule.why.empty() ? std::string() : " (the scheduling stage did not run: " + r.schedule.why + ")");
}

// Whether a report reached a stage (its result is there to compare).
bool has_tree(const Report& r) { return !r.tree.text.empty(); }
bool has_conversion(const Report& r) { return has_tree(r) && r.tree.deterministic && r.conversion.ok; }
bool has_nodes(const Report& r) { return has_conversion(r) && r.nodes.ok; }

std::string conversion_words(const ConversionStage& c) {
  if (c.split) return "operands split into two bf16 pieces, each single product hi + mid";
  if (c.a == c.b) return std::string("operands ") + in_words(c.a);
  return std::string("A ") + in_words(c.a) + ", B " + in_words(c.b);
}

std::string node_words(const NodeStage& n) {
  if (n.kinds.empty() && !n.split) return "no fused nodes (every addition a binary fp32 add or FMA)";
  std::ostringstream s;
  if (n.split) s << n.split->describe() << "; ";
  for (std::size_t i = 0; i < n.kinds.size(); ++i) {
    const NodeKind& k = n.kinds[i];
    s << (i ? "; " : "") << "nodes of " << k.leaves << (k.carry ? " products + C: " : " products: ")
      << (k.same_as.empty() ? k.params.describe() : k.same_as.substr(0, k.same_as.find(' ')) + "'s measured model");
  }
  return s.str();
}

// The kinds of fused node as (leaves, carry) -> model.
std::map<std::pair<int, bool>, tc::TcParams> kinds_of(const NodeStage& n) {
  std::map<std::pair<int, bool>, tc::TcParams> out;
  for (const NodeKind& k : n.kinds) out[{k.leaves, k.carry}] = k.params;
  return out;
}

// Dense rows: item t as row t of A (n, K) and column t of B (K, n).
std::pair<Matrix, Matrix> dense(const std::vector<Item>& items, int K) {
  const int n = static_cast<int>(items.size());
  Matrix A(n, K), B(K, n);
  for (int t = 0; t < n; ++t) {
    auto fill = [&](const SparseVector& v, auto&& set) {
      for (int k = std::max(0, v.fill_from); k < std::min(K, v.fill_to); ++k) set(k, v.fill);
      for (const auto& [k, x] : v.at) set(k, x);
    };
    fill(items[t].a, [&](int k, double x) { A(t, k) = x; });
    fill(items[t].b, [&](int k, double x) { B(k, t) = x; });
  }
  return {std::move(A), std::move(B)};
}

// The two kernels, their reports, and the entries the witnesses are asked at.
struct Pair {
  Oracle& a;
  Oracle& b;
  const DiffReport& d;
  const DiffOptions& opt;
  std::vector<Entry> E;
  // The narrower of the two outputs. A witness of the tree, the conversion or the nodes must show its
  // difference through it: both kernels' values rounded there differ, so that the difference is not the
  // outputs' own.
  Format common;

  bool same_through_common(std::uint64_t x, std::uint64_t y) const {
    if (a.output() == b.output()) return x == y;
    auto at_common = [&](Format f, std::uint64_t bits) {
      const double v = from_bits(f, bits);
      return to_bits(common, std::isnan(v) ? v : tc::round_to_format(common, v, Rounding::nearest_even));
    };
    return same_value_or_bits(common, at_common(a.output(), x), common, at_common(b.output(), y));
  }

  // Each report's predicted bits for the items (nullopt where it cannot predict).
  std::pair<std::optional<std::vector<std::uint64_t>>, std::optional<std::vector<std::uint64_t>>> predict(
      const std::vector<Item>& items) const {
    auto [A, B] = dense(items, a.K());
    std::vector<Entry> at;
    for (int t = 0; t < static_cast<int>(items.size()); ++t) at.emplace_back(t, t);
    return {predict_bits(d.a, a.output(), A, B, at, opt.explain.threads),
            predict_bits(d.b, b.output(), A, B, at, opt.explain.threads)};
  }

  // Runs the items on both kernels, item t at entry E[t % |E|], and fills `diff` with the first whose
  // bits differ (words[t] says what item t is). Returns whether one did.
  // `through_common`: the bits must differ through the common output (else: the values differ).
  bool witness(const std::vector<Item>& items, const std::vector<std::string>& words, Difference& diff,
               const std::string& bits_note = "", bool through_common = true) const {
    const std::vector<std::uint64_t> x = detail::run_items(a, E, items), y = detail::run_items(b, E, items);
    for (std::size_t t = 0; t < items.size(); ++t) {
      if (through_common ? same_through_common(x[t], y[t]) : same_value_or_bits(a.output(), x[t], b.output(), y[t]))
        continue;
      diff.confirmed = true;
      diff.entry = E[t % E.size()];
      diff.inputs = words[t];
      diff.a_row = items[t].a;
      diff.b_col = items[t].b;
      diff.a_row.index = diff.entry.first;
      diff.b_col.index = diff.entry.second;
      diff.a_bits = x[t];
      diff.b_bits = y[t];
      const auto [pa, pb] = predict({items[t]});
      if (pa) diff.a_predicted = (*pa)[0];
      if (pb) diff.b_predicted = (*pb)[0];
      std::ostringstream s;
      s << d.a_name << " " << bits_text(a.output(), x[t]) << ", " << d.b_name << " " << bits_text(b.output(), y[t]);
      if (!bits_note.empty()) s << "; " << bits_note;
      if (pa && pb)
        s << ((*pa)[0] == x[t] && (*pb)[0] == y[t] ? " (as their reports predict)"
                                                     : " (their reports predict " + tc::hex_bits((*pa)[0], a.output()) +
                                                           " and " + tc::hex_bits((*pb)[0], b.output()) + ")");
      diff.note = s.str();
      return true;
    }
    return false;
  }
};

// ---------------------------------------------------------------------------------------------
// The witnesses, one per aspect.

// FPRev's query (p, q) as the tree stage asks it (detail::Fprev::item): one item per group of units,
// with the masks of the narrower output (its counts must be exact; the wider one holds them too), and
// each item in words. Throws std::invalid_argument where no masks count units here.
struct PairQuery {
  FprevMasks m;
  std::vector<Item> items;
  std::vector<std::string> words;
};

PairQuery pair_query(const Pair& P, int p, int q) {
  PairQuery Q;
  Q.m = choose_fprev_masks(P.a.input(), P.a.input(), Format::fp32, P.common, P.a.K(), FprevUnits::grouped);
  const detail::Fprev f{P.a, Q.m};
  const int units = P.a.K() - 2, G = Q.m.groups(units);
  for (int g = 0; g < G; ++g) {
    Q.items.push_back(f.item(p, q, g));
    std::ostringstream w;
    w << "products " << p << " = +M and " << q << " = -M, "
      << (G > 1 ? "the " + std::to_string(std::min(Q.m.group, units - g * Q.m.group)) + " units of group " +
                      std::to_string(g) + " of " + std::to_string(G) + " (the other products 0)"
                : std::string("every other product a unit u"))
      << " (" << Q.m.describe() << ")";
    Q.words.push_back(w.str());
  }
  return Q;
}

std::string meet_words(int p, int q, int la, const std::string& a, int lb, const std::string& b) {
  return "products " + std::to_string(p) + " and " + std::to_string(q) + " meet in a node of " + std::to_string(la) +
         " products in " + a + "'s tree, of " + std::to_string(lb) + " in " + b + "'s";
}

void tree_witness(const Pair& P, Difference& diff) {
  const SummationTree &ta = P.d.a.tree.tree, &tb = P.d.b.tree.tree;
  const auto pq = first_differing_pair(ta, tb);
  if (!pq) {
    diff.note = "the canonical forms differ, but no pair of products tried meets in nodes of different sizes";
    return;
  }
  const auto [p, q] = *pq;
  const std::string meet = meet_words(p, q, Lca(ta).size(p, q), P.d.a_name, Lca(tb).size(p, q), P.d.b_name);
  PairQuery Q;
  try {
    Q = pair_query(P, p, q);
  } catch (const std::invalid_argument& e) {
    diff.note = meet + ", but no FPRev masks count units here: " + e.what();
    return;
  }
  // Each group's item at the first entries, one launch per group: the first whose bits differ.
  const int n = std::min<int>(P.opt.witness_entries, static_cast<int>(P.E.size()));
  for (std::size_t g = 0; g < Q.items.size(); ++g) {
    if (P.witness(std::vector<Item>(n, Q.items[g]), std::vector<std::string>(n, Q.words[g]), diff,
                  meet + ", so the units added after they cancel differ")) {
      const double ca = from_bits(P.a.output(), diff.a_bits) / Q.m.unit(), cb = from_bits(P.b.output(), diff.b_bits) / Q.m.unit();
      diff.note += " (counts " + detail::value_text(ca) + " u and " + detail::value_text(cb) + " u)";
      return;
    }
  }
  diff.note = meet + ", but FPRev's masks for that pair gave the same bits at the first " + std::to_string(n) + " entries";
}

// The kernel whose order depends on scheduling (`moving`, its report r) against the steady one: under
// the trial that exposed it (its perturbation, or none for "repeat" and "shuffled_launches"), FPRev's
// masks at the first pair where a revealed variant of its order and the steady tree differ, launched up
// to `tries` times, else the full inputs of the first distribution; the steady kernel undisturbed. The
// first launch whose bits differ from the steady kernel's is the witness.
void scheduling_witness(const Pair& P, Difference& diff, bool a_moves) {
  Oracle& moving = a_moves ? P.a : P.b;
  Oracle& steady = a_moves ? P.b : P.a;
  const Report& r = a_moves ? P.d.a : P.d.b;
  const Report& s = a_moves ? P.d.b : P.d.a;
  const std::string& mover = a_moves ? P.d.a_name : P.d.b_name;
  const std::string& other = a_moves ? P.d.b_name : P.d.a_name;
  int index = -1;
  std::string under = "undisturbed";
  const std::vector<Perturbation> offered = moving.perturbations();
  for (std::size_t i = 0; i < offered.size(); ++i)
    if (offered[i].name == r.schedule.exposed_by) {
      index = static_cast<int>(i);
      under = offered[i].words;
    }
  if (index >= 0)
    if (std::string why = moving.perturb(index); !why.empty()) {
      diff.note = "the perturbation that exposed it (" + r.schedule.exposed_by + ") cannot be applied again: " + why;
      return;
    }
  struct Undo {
    Oracle& o;
    ~Undo() { o.perturb(-1); }
  } undo{moving};
  const int tries = 8;
  auto record = [&](const Entry& e, std::uint64_t moved, std::uint64_t kept, const std::string& inputs,
                    const std::string& how) {
    diff.confirmed = true;
    diff.entry = e;
    diff.inputs = inputs;
    diff.a_bits = a_moves ? moved : kept;
    diff.b_bits = a_moves ? kept : moved;
    diff.note = mover + " " + under + " gave " + bits_text(moving.output(), moved) + how + ", " + other + " " +
                bits_text(steady.output(), kept);
  };
  // FPRev's masks where a revealed variant and the steady tree differ.
  const int n = std::min<int>(P.opt.witness_entries, static_cast<int>(P.E.size()));
  for (const ScheduleVariant& v : r.schedule.variants) {
    if (!v.revealed || !has_tree(s)) continue;
    const auto pq = first_differing_pair(v.tree, s.tree.tree);
    if (!pq) continue;
    PairQuery Q;
    try {
      Q = pair_query(P, pq->first, pq->second);
    } catch (const std::invalid_argument&) {
      break;
    }
    const std::string meet = meet_words(pq->first, pq->second, Lca(v.tree).size(pq->first, pq->second),
                                        mover + " (variant " + v.text.substr(0, 80) + ")",
                                        Lca(s.tree.tree).size(pq->first, pq->second), other);
    for (std::size_t g = 0; g < Q.items.size(); ++g) {
      const std::vector<Item> items(n, Q.items[g]);
      const std::vector<std::uint64_t> kept = detail::run_items(steady, P.E, items);
      for (int t = 0; t < tries; ++t) {
        const std::vector<std::uint64_t> moved = detail::run_items(moving, P.E, items);
        for (int e = 0; e < n; ++e)
          if (!P.same_through_common(moved[e], kept[e])) {
            record(P.E[e], moved[e], kept[e], Q.words[g], " on launch " + std::to_string(t + 1));
            diff.a_row = items[e].a;
            diff.b_col = items[e].b;
            diff.a_row.index = P.E[e].first;
            diff.b_col.index = P.E[e].second;
            diff.note += "; " + meet;
            return;
          }
      }
    }
  }
  // The full inputs of the first distribution.
  const Distribution dist = parse_distribution(P.opt.explain.distributions.at(0));
  const Matrix A = generate(dist, Operand::A, P.a.M(), P.a.K(), P.a.input(), P.opt.explain.seed, P.opt.explain.threads);
  const Matrix B = generate(dist, Operand::B, P.a.K(), P.a.N(), P.a.input(), P.opt.explain.seed, P.opt.explain.threads);
  const std::vector<Entry> rows = [&] {
    std::vector<Entry> out;
    for (int i : {0, P.a.M() / 2, P.a.M() - 1})
      for (int j = 0; j < P.a.N(); ++j) out.emplace_back(i, j);
    return out;
  }();
  const std::vector<std::uint64_t> kept = steady.run_full(A, B, rows);
  for (int t = 0; t < tries; ++t) {
    const std::vector<std::uint64_t> moved = moving.run_full(A, B, rows);
    for (std::size_t e = 0; e < rows.size(); ++e)
      if (!P.same_through_common(moved[e], kept[e])) {
        record(rows[e], moved[e], kept[e], "the full inputs of " + dist.name(), " on launch " + std::to_string(t + 1));
        return;
      }
  }
  diff.note = mover + " " + under + " gave the same bits as " + other + " in " + std::to_string(tries) +
              " launches of FPRev's masks at its variants and of the full inputs of " + dist.name() +
              " (rows 0, M/2, M-1): the order it was seen to take is not caught again";
}

// x on A's side (or B's) against 1 at product 0: the two kernels' single products.
void conversion_witness(const Pair& P, Difference& diff) {
  const ConversionStage &ca = P.d.a.conversion, &cb = P.d.b.conversion;
  // A single product as each kernel's conversion stage models it: converted operands, or hi + mid of
  // two bf16 pieces (the split the conversion stage recognises).
  auto single = [](const ConversionStage& c, int side, double x) {
    if (c.split) {
      const emulation::SplitScheme two{emulation::LowBits::nearest_even, {}, 0, false,
                                       emulation::SplitScheme::PieceFormat::bf16, 2};
      const auto pieces = emulation::split_pieces(two, tc::TcParams{}, x);
      return pieces[0] + pieces[1];
    }
    return convert(side == 0 ? c.a : c.b, x);
  };
  std::vector<Item> items;
  std::vector<std::string> words;
  for (int side = 0; side < 2; ++side)
    for (double x : conversion_witness_values()) {
      const double va = single(ca, side, x), vb = single(cb, side, x);
      if (P.same_through_common(detail::output_bits(P.a.output(), va, 0), detail::output_bits(P.b.output(), vb, 0)))
        continue;
      Item it;
      (side == 0 ? it.a : it.b).at = {{0, x}};
      (side == 0 ? it.b : it.a).at = {{0, 1.0}};
      items.push_back(it);
      words.push_back(std::string(side == 0 ? "A" : "B") + "(., 0) = " + detail::value_text(x) + ", " +
                      (side == 0 ? "B" : "A") + "(., 0) = 1, the rest 0: " + P.d.a_name + " makes the product " +
                      detail::value_text(va) + ", " + P.d.b_name + " " + detail::value_text(vb));
    }
  if (items.empty()) {
    diff.note = "no single product of the values tried survives both outputs with different values";
    return;
  }
  if (!P.witness(items, words, diff))
    diff.note = std::to_string(items.size()) + " single products that the conversions make different came back with "
                "the same bits from both kernels";
}

// The fields of two node models that differ: "zero_c=absent / emin-7".
std::string params_difference(const tc::TcParams& x, const tc::TcParams& y) {
  std::istringstream sx(x.describe()), sy(y.describe());
  std::vector<std::string> tx, ty;
  for (std::string w; sx >> w;) tx.push_back(w);
  for (std::string w; sy >> w;) ty.push_back(w);
  std::string out;
  for (std::size_t i = 0; i < tx.size() && i < ty.size(); ++i)
    if (tx[i] != ty[i]) out += (out.empty() ? "" : ", ") + tx[i] + " / " + ty[i].substr(ty[i].find('=') + 1);
  return out;
}

// Probes of the nodes' instructions at the leaves of one fused node of `kind` ((0, false): none), then
// seeded rows of the explain distributions: those the two reports predict differently through the
// common output are run on both kernels. Returns whether any input was predicted differently.
bool node_witness(const Pair& P, Difference& diff, const std::pair<int, bool>& kind) {
  const SummationTree& t = P.d.a.tree.tree;
  const int K = P.a.K();
  std::vector<Item> cands;
  std::vector<std::string> words;
  if (kind.first > 0) {
    // The first fused node of that kind, its leaves in increasing k.
    std::vector<int> L;
    for (int n = t.leaves(); n < t.node_count() && L.empty(); ++n) {
      const std::vector<int>& ch = t.children(n);
      if (ch.size() <= 2) continue;
      std::vector<int> leaves;
      for (int c : ch)
        if (t.is_leaf(c)) leaves.push_back(c);
      const bool carry = leaves.size() < ch.size();
      if (static_cast<int>(leaves.size()) == kind.first && carry == kind.second) L = leaves;
    }
    std::sort(L.begin(), L.end());
    std::vector<std::string> names;
    for (const Report* r : {&P.d.a, &P.d.b})
      for (const NodeKind& k : r->nodes.kinds)
        if (k.leaves == kind.first && !k.instruction.empty() &&
            std::find(names.begin(), names.end(), k.instruction) == names.end())
          names.push_back(k.instruction);
    for (const std::string& name : names) {
      const auto ins = tc::parse_instruction(name);
      if (!ins || L.empty()) continue;
      for (const tc::Probe& pr : tc::make_probes(tc::info(*ins))) {
        if (pr.raw || pr.c != 0 || static_cast<int>(pr.a.size()) != kind.first) continue;
        Item it;
        for (int k = 0; k < kind.first; ++k) {
          it.a.at.push_back({L[k], pr.a[k]});
          it.b.at.push_back({L[k], pr.b[k]});
        }
        cands.push_back(std::move(it));
        words.push_back(name + "'s probe " + pr.id + " (" + tc::describe_inputs(pr) + ") at the leaves " +
                        std::to_string(L.front()) + ".." + std::to_string(L.back()) +
                        " of a fused node, the other products 0");
      }
    }
  }
  // Seeded full rows of each explain distribution.
  const int rows = 64;
  for (const std::string& dn : P.opt.explain.distributions) {
    const Distribution d = parse_distribution(dn);
    const Matrix A = generate(d, Operand::A, rows, K, P.a.input(), P.opt.explain.seed ^ 0xd1ffull, P.opt.explain.threads);
    const Matrix B = generate(d, Operand::B, K, rows, P.a.input(), P.opt.explain.seed ^ 0xd1ffull, P.opt.explain.threads);
    for (int r = 0; r < rows; ++r) {
      Item it;
      for (int k = 0; k < K; ++k) {
        it.a.at.push_back({k, A(r, k)});
        it.b.at.push_back({k, B(k, r)});
      }
      cands.push_back(std::move(it));
      words.push_back("row " + std::to_string(r) + " of A and column " + std::to_string(r) + " of B of " + d.name() +
                      " (seed " + std::to_string(P.opt.explain.seed ^ 0xd1ffull) + ")");
    }
  }
  // The candidates the two reports predict differently, in order, in batches.
  std::vector<Item> chosen;
  std::vector<std::string> chosen_words;
  const std::size_t want = std::max<std::size_t>(1, P.E.size());
  for (std::size_t first = 0; first < cands.size() && chosen.size() < want; first += 256) {
    const std::vector<Item> batch(cands.begin() + first, cands.begin() + std::min(cands.size(), first + 256));
    const auto [pa, pb] = P.predict(batch);
    if (!pa || !pb) break;
    for (std::size_t t = 0; t < batch.size() && chosen.size() < want; ++t)
      if (!P.same_through_common((*pa)[t], (*pb)[t])) {
        chosen.push_back(batch[t]);
        chosen_words.push_back(words[first + t]);
      }
  }
  if (chosen.empty()) {
    diff.note = std::to_string(cands.size()) + " probes and rows tried";
    return false;
  }
  if (!P.witness(chosen, chosen_words, diff))
    diff.note = std::to_string(chosen.size()) + " inputs that the two reports predict differently came back with the "
                "same bits from both kernels: their node models do not tell the kernels apart";
  return true;
}

// 1 * 1 + 2^-e * 1 (2^-e as the product of two powers of two the input format holds): the first e
// whose exact sum the two outputs round to different values.
void output_witness(const Pair& P, Difference& diff) {
  std::vector<Item> items;
  std::vector<std::string> words;
  for (int e = 1; e <= 60 && P.a.K() >= 2 && items.size() < 4; ++e) {
    const double x = std::ldexp(1.0, -(e / 2)), y = std::ldexp(1.0, -(e - e / 2)), s = x * y;
    if (!tc::representable(P.a.input(), x) || !tc::representable(P.a.input(), y)) break;
    const double ra = tc::round_to_format(P.a.output(), 1 + s, Rounding::nearest_even);
    const double rb = tc::round_to_format(P.b.output(), 1 + s, Rounding::nearest_even);
    if (ra == rb) continue;
    Item it;
    it.a.at = {{0, 1.0}, {1, x}};
    it.b.at = {{0, 1.0}, {1, y}};
    items.push_back(it);
    words.push_back("products 1 * 1 and " + detail::value_text(x) + " * " + detail::value_text(y) +
                    " at k = 0, 1, the rest 0 (exactly 1 + 2^-" + std::to_string(e) + ": " + P.d.a_name + "'s " +
                    info(P.a.output()).name + " holds " + detail::value_text(ra) + ", " + P.d.b_name + "'s " +
                    info(P.b.output()).name + " " + detail::value_text(rb) + ")");
  }
  if (items.empty()) {
    diff.note = "no sum 1 + 2^-e of products the input format holds rounds differently to the two outputs";
    return;
  }
  if (!P.witness(items, words, diff, "", false))
    diff.note = "the sums 1 + 2^-e came back with the same values from both kernels";
}

// The entries compared at full size: every one when affordable, else whole rows (first, middle, last,
// then seeded ones) up to `budget` outputs.
std::vector<Entry> full_entries(int M, int N, long long budget, std::uint64_t seed) {
  std::vector<Entry> out;
  std::vector<int> rows;
  if (budget <= 0 || static_cast<long long>(M) * N <= budget) {
    for (int i = 0; i < M; ++i) rows.push_back(i);
  } else {
    for (int i : {0, M / 2, M - 1})
      if (std::find(rows.begin(), rows.end(), i) == rows.end()) rows.push_back(i);
    SplitMix rng{seed ^ 0xd1ffc0ull};
    while (static_cast<long long>(rows.size()) < std::min<long long>(std::max<long long>(1, budget / N), M)) {
      const int i = static_cast<int>(rng.next() % M);
      if (std::find(rows.begin(), rows.end(), i) == rows.end()) rows.push_back(i);
    }
  }
  out.reserve(rows.size() * static_cast<std::size_t>(N));
  for (int i : rows)
    for (int j = 0; j < N; ++j) out.emplace_back(i, j);
  return out;
}

// Both kernels on full random inputs of each distribution, twice each.
void confirm(Oracle& a, Oracle& b, const DiffOptions& opt, DiffReport& d) {
  const std::vector<Entry> cmp = full_entries(a.M(), a.N(), opt.compare_outputs, opt.explain.seed);
  for (const std::string& dn : opt.explain.distributions) {
    const Distribution dist = parse_distribution(dn);
    const Matrix A = generate(dist, Operand::A, a.M(), a.K(), a.input(), opt.explain.seed, opt.explain.threads);
    const Matrix B = generate(dist, Operand::B, a.K(), a.N(), a.input(), opt.explain.seed, opt.explain.threads);
    const std::vector<std::uint64_t> x = a.run_full(A, B, cmp), x2 = a.run_full(A, B, cmp);
    const std::vector<std::uint64_t> y = b.run_full(A, B, cmp), y2 = b.run_full(A, B, cmp);
    DiffComparison c;
    c.distribution = dist.name();
    c.outputs = static_cast<long long>(cmp.size());
    for (std::size_t e = 0; e < cmp.size(); ++e) {
      if (!same_value_or_bits(a.output(), x[e], b.output(), y[e]) && c.differing++ == 0)
        c.first_differing = {cmp[e], x[e], y[e], 0};
      if (x[e] != x2[e] && c.a_unstable++ == 0) c.a_first_unstable = {cmp[e], x[e], y[e], x2[e]};
      if (y[e] != y2[e] && c.b_unstable++ == 0) c.b_first_unstable = {cmp[e], x[e], y[e], y2[e]};
    }
    d.comparisons.push_back(c);
  }
}

std::string unreached(const DiffReport& d, const std::string& what) {
  std::string why;
  for (const Report* r : {&d.a, &d.b}) {
    const bool reached = what == "tree"                 ? has_tree(*r) && r->tree.deterministic
                         : what == "operand_conversion" ? has_conversion(*r)
                                                        : has_nodes(*r);
    if (!reached)
      why += (why.empty() ? "" : "; ") + (r == &d.a ? d.a_name : d.b_name) + " unidentified at " +
             (r->failed_stage.empty() ? std::string("?") : r->failed_stage) + " (" + r->reason.substr(0, 200) + ")";
  }
  return what + ": not compared: " + why;
}

}  // namespace

const std::vector<double>& conversion_witness_values() {
  // tf32 keeps 10 fraction bits (13 dropped), bf16 7 (16 dropped): u11 = 2^-11 and u8 = 2^-8 are half
  // an ulp of each at 1. 1 + half: a tie (even: down, away: up); 1 + 3 half: a tie rounding up under
  // both (odd neighbour); + 2^-22: just above the tie (nearest: up, toward zero: down); negatives for
  // the sign of ties away; 2^20 + 2^9: beyond fp16's range; 3 2^-20 + 2^-40: an fp16 subnormal.
  static const std::vector<double> v = {1 + 0x1p-11,          1 + 3 * 0x1p-11,      1 + 0x1p-11 + 0x1p-22,
                                        1 + 0x1p-22,          1 + 0x1p-8,           1 + 3 * 0x1p-8,
                                        1 + 0x1p-8 + 0x1p-22, -(1 + 0x1p-11),       -(1 + 3 * 0x1p-11),
                                        -(1 + 0x1p-11 + 0x1p-22), 1.5,              0x1p20 + 0x1p9,
                                        3 * 0x1p-20 + 0x1p-40, 0x1.fffffep0};
  return v;
}

std::optional<std::pair<int, int>> first_differing_pair(const SummationTree& t, const SummationTree& u) {
  const int K = t.leaves();
  if (u.leaves() != K || K < 2) return std::nullopt;
  const Lca lt(t), lu(u);
  auto differs = [&](int p, int q) { return lt.size(p, q) != lu.size(p, q); };
  for (int q = 1; q < K; ++q)
    if (differs(0, q)) return std::pair{0, q};
  for (int p = 1; p + 1 < K; ++p)
    if (differs(p, p + 1)) return std::pair{p, p + 1};
  for (int p = 1; p + 1 < K; ++p)
    if (differs(p, K - 1)) return std::pair{p, K - 1};
  SplitMix rng{0xd1ff5eedull};
  for (int x = 0; x < 1 << 16; ++x) {
    int p = static_cast<int>(rng.next() % K), q = static_cast<int>(rng.next() % K);
    if (p == q) continue;
    if (p > q) std::swap(p, q);
    if (differs(p, q)) return std::pair{p, q};
  }
  if (K <= 1024)
    for (int p = 1; p < K; ++p)
      for (int q = p + 1; q < K; ++q)
        if (differs(p, q)) return std::pair{p, q};
  return std::nullopt;
}

std::optional<std::vector<std::uint64_t>> predict_bits(const Report& r, Format output, const Matrix& A, const Matrix& B,
                                                       const std::vector<Entry>& entries, int threads) {
  if (!has_nodes(r)) return std::nullopt;
  // As the composition predicts (composition.cpp): converted operands, the tree with the nodes' models
  // (and the split scheme), rounded to the output; NaN as the nodes' model writes it.
  const emulation::NodeModel model = detail::node_model(r.nodes.kinds);
  const emulation::SplitScheme* split = r.nodes.split ? &*r.nodes.split : nullptr;
  if (!emulation::tree_gap(r.tree.tree, model, "input", split).empty()) return std::nullopt;
  const std::uint64_t nan_bits =
      r.nodes.kinds.empty() || r.nodes.kinds.back().params.nan_encoding == tc::NanEncoding::all_ones
          ? detail::all_ones_nan(output)
          : to_bits(output, std::nan(""));
  Matrix a = A, b = B;
  for (double& v : a.v) v = convert(r.conversion.a, v);
  for (double& v : b.v) v = convert(r.conversion.b, v);
  const std::vector<double> want = emulation::emulate_tree_at(r.tree.tree, model, a, b, entries, threads, split);
  std::vector<std::uint64_t> out(want.size());
  for (std::size_t e = 0; e < want.size(); ++e) out[e] = detail::output_bits(output, want[e], nan_bits);
  return out;
}

DiffReport explain_diff(Oracle& a, Oracle& b, const std::string& a_name, const std::string& b_name,
                        const DiffOptions& opt) {
  if (a.M() != b.M() || a.N() != b.N() || a.K() != b.K())
    throw std::invalid_argument("explain --diff: the two kernels must run at the same size (" + std::to_string(a.M()) +
                                "x" + std::to_string(a.N()) + "x" + std::to_string(a.K()) + " vs " +
                                std::to_string(b.M()) + "x" + std::to_string(b.N()) + "x" + std::to_string(b.K()) + ")");
  if (a.input() != b.input())
    throw std::invalid_argument(std::string("explain --diff: the two kernels must take the same input format, so that "
                                            "they can be given the same inputs (") +
                                info(a.input()).name + " vs " + info(b.input()).name + ")");
  if (a_name == b_name) throw std::invalid_argument("explain --diff: the two kernels need different names ('" + a_name + "' twice)");
  const auto t0 = detail::Clock::now();
  const long long launches0 = a.launches + b.launches;
  DiffReport d;
  d.a_name = a_name;
  d.b_name = b_name;
  d.M = a.M();
  d.N = a.N();
  d.K = a.K();
  d.input = a.input();
  d.a_output = a.output();
  d.b_output = b.output();
  d.a = explain_kernel(a, opt.explain);
  d.b = explain_kernel(b, opt.explain);
  Pair P{a, b, d, opt, choose_entries(a.M(), a.N(), std::min(a.M(), a.N()), opt.explain.seed),
         info(a.output()).precision <= info(b.output()).precision ? a.output() : b.output()};
  auto add = [&](const std::string& aspect, const std::string& a_does, const std::string& b_does) -> Difference& {
    Difference x;
    x.aspect = aspect;
    x.a_does = a_does;
    x.b_does = b_does;
    d.differences.push_back(x);
    return d.differences.back();
  };
  // A witness that cannot be found is said in the difference's note; the kernel that could not run it
  // (it raised) leaves the difference unconfirmed with the reason.
  auto guarded = [&](Difference& x, auto&& find) {
    try {
      find(x);
    } catch (const std::exception& e) {
      x.confirmed = false;
      x.note = std::string("the witness could not be run: ") + e.what();
    }
  };

  // Scheduling: an order that changed between the tree stage's own calls (explain stops there), or
  // that the scheduling stage saw change (repeated, reordered or perturbed launches).
  const bool a_moves = has_tree(d.a) && !d.a.tree.deterministic, b_moves = has_tree(d.b) && !d.b.tree.deterministic;
  const bool a_depends = a_moves || d.a.schedule.verdict == "depends";
  const bool b_depends = b_moves || d.b.schedule.verdict == "depends";
  // A report that stopped before its scheduling stage (at conversion or nodes, which come first when the tree
  // is one deterministic order) says nothing about it.
  const bool a_unscheduled = !a_depends && !d.a.schedule.ran, b_unscheduled = !b_depends && !d.b.schedule.ran;
  if (a_unscheduled || b_unscheduled)
    d.not_compared.push_back("scheduling: " + (a_unscheduled ? d.a_name : d.b_name) + " stopped at " +
                             ((a_unscheduled ? d.a : d.b).failed_stage.empty() ? std::string("?")
                                                                               : (a_unscheduled ? d.a : d.b).failed_stage) +
                             ", before its scheduling stage");
  else if (a_depends != b_depends)
    guarded(add("scheduling", scheduling_words(d.a), scheduling_words(d.b)),
            [&](Difference& x) { scheduling_witness(P, x, a_depends); });
  else if (a_depends)
    d.not_compared.push_back("scheduling: both kernels' orders depend on scheduling (" + d.a_name + ": " +
                             scheduling_words(d.a) + "; " + d.b_name + ": " + scheduling_words(d.b) + ")");
  else
    d.same.push_back("scheduling: " + scheduling_words(d.a));
  if (a_moves && b_moves) d.not_compared.push_back("tree: both kernels' orders change between calls");

  // Tree (at rest: the tree each revealed, where it held between the tree stage's calls).
  if (has_tree(d.a) && has_tree(d.b) && !a_moves && !b_moves) {
    if (d.a.tree.tree.canonical() != d.b.tree.tree.canonical())
      guarded(add("tree", d.a.tree.text, d.b.tree.text), [&](Difference& x) { tree_witness(P, x); });
    else
      d.same.push_back("tree: " + d.a.tree.text);
  } else if (!(a_moves && b_moves)) {
    d.not_compared.push_back(unreached(d, "tree"));
  }

  // Operand conversion.
  if (has_conversion(d.a) && has_conversion(d.b)) {
    const ConversionStage &ca = d.a.conversion, &cb = d.b.conversion;
    if (ca.split != cb.split || ca.a != cb.a || ca.b != cb.b)
      guarded(add("operand_conversion", conversion_words(ca), conversion_words(cb)),
              [&](Difference& x) { conversion_witness(P, x); });
    else
      d.same.push_back("operand conversion: " + conversion_words(ca));
  } else {
    d.not_compared.push_back(unreached(d, "operand_conversion"));
  }

  // Node arithmetic: the split scheme, the kinds of fused node, and each kind's model. Kinds only one
  // kernel has come with trees that differ: no input shows the nodes alone then. Models of one kind that
  // differ are a difference where some probe or row is predicted differently by the two; models that
  // differ only in what no input tried exercises (a rule the probes leave open) are said, as the same.
  if (has_nodes(d.a) && has_nodes(d.b)) {
    const auto ka = kinds_of(d.a.nodes), kb = kinds_of(d.b.nodes);
    const bool same_trees = d.a.tree.tree.canonical() == d.b.tree.tree.canonical();
    bool structural = d.a.nodes.split != d.b.nodes.split || ka.size() != kb.size();
    std::optional<std::pair<int, bool>> differing;
    std::string fields;
    for (const auto& [kind, params] : ka) {
      auto it = kb.find(kind);
      if (it == kb.end()) {
        structural = true;
      } else if (!(it->second == params)) {
        if (!differing) differing = kind;
        fields += (fields.empty() ? "" : "; ") + std::string("nodes of ") + std::to_string(kind.first) +
                  (kind.second ? " + C: " : ": ") + params_difference(params, it->second);
      }
    }
    const std::string a_words = node_words(d.a.nodes), b_words = node_words(d.b.nodes);
    if (structural) {
      Difference& x = add("node_arithmetic", a_words, b_words);
      if (same_trees)
        guarded(x, [&](Difference& y) {
          if (!node_witness(P, y, differing.value_or(std::pair{0, false})))
            y.note = "none of the " + y.note + " is predicted differently by the two node models";
        });
      else
        x.note = "the trees differ as well, so no input shows the node arithmetic alone: the tree's witness stands for both";
    } else if (differing) {
      Difference x;
      x.aspect = "node_arithmetic";
      x.a_does = a_words;
      x.b_does = b_words;
      bool predicted = true;
      try {
        predicted = node_witness(P, x, *differing);
      } catch (const std::exception& e) {
        x.note = std::string("the witness could not be run: ") + e.what();
      }
      x.note = "the models differ in " + fields + "; " + x.note;
      if (predicted) d.differences.push_back(x);
      else
        d.same.push_back("node arithmetic: " + a_words + " (" + x.note + ", but none is predicted differently)");
    } else {
      d.same.push_back("node arithmetic: " + a_words);
    }
  } else {
    d.not_compared.push_back(unreached(d, "node_arithmetic"));
  }

  // Output conversion: the format each writes (both round to nearest even there).
  if (a.output() != b.output())
    guarded(add("output_conversion", std::string("writes ") + info(a.output()).name + ", rounded to nearest even",
                std::string("writes ") + info(b.output()).name + ", rounded to nearest even"),
            [&](Difference& x) { output_witness(P, x); });
  else
    d.same.push_back(std::string("output: ") + info(a.output()).name + ", rounded to nearest even");

  // The full-size confirmation; bits that change between launches, or differ where nothing was found.
  try {
    confirm(a, b, opt, d);
  } catch (const std::exception& e) {
    d.not_compared.push_back(std::string("full-size confirmation: ") + e.what());
  }
  long long a_unstable = 0, b_unstable = 0, differing = 0;
  const DiffComparison* first_diff = nullptr;
  const DiffComparison* first_unstable = nullptr;
  for (const DiffComparison& c : d.comparisons) {
    a_unstable += c.a_unstable;
    b_unstable += c.b_unstable;
    differing += c.differing;
    if (c.differing && !first_diff) first_diff = &c;
    if ((c.a_unstable || c.b_unstable) && !first_unstable) first_unstable = &c;
  }
  const bool has_scheduling = std::any_of(d.differences.begin(), d.differences.end(),
                                          [](const Difference& x) { return x.aspect == "scheduling"; });
  if ((a_unstable > 0) != (b_unstable > 0) && first_unstable) {
    // One kernel's bits changed between its two launches on the same inputs: the entry, its two bit
    // patterns, and the other kernel's (the same on both launches).
    const bool moves_a = a_unstable > 0;
    const DiffComparison& c = *first_unstable;
    Difference* x = nullptr;
    for (Difference& y : d.differences)
      if (y.aspect == "scheduling") x = &y;
    if (!x) {
      x = &add("scheduling", moves_a ? "its bits change between launches" : "the same bits on every launch",
               moves_a ? "the same bits on every launch" : "its bits change between launches");
      std::erase_if(d.same, [](const std::string& y) { return y.rfind("scheduling:", 0) == 0; });
    }
    const std::string& mover = moves_a ? d.a_name : d.b_name;
    const DiffComparison::Seen& seen = moves_a ? c.a_first_unstable : c.b_first_unstable;
    const Format f = moves_a ? a.output() : b.output();
    const std::string words =
        mover + " gave " + tc::hex_bits(moves_a ? seen.a : seen.b, f) + " then " + tc::hex_bits(seen.again, f) + " at " +
        detail::entry_text(seen.at) + " (" + std::to_string(moves_a ? a_unstable : b_unstable) +
        " outputs changed between its two undisturbed launches of the full inputs, over " +
        std::to_string(d.comparisons.size()) + " distributions); " + (moves_a ? d.b_name : d.a_name) + " gave " +
        tc::hex_bits(moves_a ? seen.b : seen.a, moves_a ? b.output() : a.output()) + " both times";
    if (x->confirmed) {
      x->note += "; also " + words;  // the scheduling witness stands; this confirms it undisturbed
    } else {
      x->note = words + (x->note.empty() ? "" : "; " + x->note);
      x->confirmed = true;
      x->entry = seen.at;
      x->inputs = "the full inputs of " + c.distribution + ", each kernel launched twice";
      x->a_bits = seen.a;
      x->b_bits = seen.b;
    }
  } else if (has_scheduling && a_unstable == 0 && b_unstable == 0) {
    for (Difference& y : d.differences)
      if (y.aspect == "scheduling")
        y.note += "; undisturbed, both kernels gave the same bits on their two launches of every distribution";
  } else if (a_unstable > 0 && b_unstable > 0 && !(a_depends && b_depends)) {
    d.not_compared.push_back("scheduling: both kernels' bits change between launches");
  }
  // Outputs that differ where no aspect differs (an order that changes between launches explains any).
  if (differing > 0 && d.differences.empty() && first_diff) {
    Difference& x = add("unexplained", identification(d.a), identification(d.b));
    x.confirmed = true;
    x.entry = first_diff->first_differing.at;
    x.a_bits = first_diff->first_differing.a;
    x.b_bits = first_diff->first_differing.b;
    x.inputs = "the full inputs of " + first_diff->distribution;
    x.note = d.a_name + " " + bits_text(a.output(), x.a_bits) + ", " + d.b_name + " " + bits_text(b.output(), x.b_bits) +
             "; " + std::to_string(differing) + " outputs differ over " + std::to_string(d.comparisons.size()) +
             " distributions, where " +
             (d.not_compared.empty() ? "the reports found the same numerics: explain's models miss something"
                                     : "the stages that would say why were not compared");
  }
  d.verdict = !d.differences.empty() ? "different" : !d.not_compared.empty() ? "incomplete" : "identical_by_construction";
  d.launches = a.launches + b.launches - launches0;
  d.seconds = detail::since(t0);
  return d;
}

std::string DiffReport::summary() const {
  std::ostringstream s;
  s << a_name << " vs " << b_name << " at " << M << "x" << N << "x" << K << ": ";
  if (verdict == "identical_by_construction")
    s << "bit-identical by construction (same tree, operand conversion, node models and output)\n";
  else if (verdict == "different")
    s << "they differ in " << differences.size() << (differences.size() == 1 ? " way" : " ways") << "\n";
  else
    s << "no difference found in the aspects compared, but the comparison is incomplete\n";
  for (const Difference& x : differences) {
    s << "  " << x.aspect << ": ";
    if (!x.a_does.empty() || !x.b_does.empty()) s << a_name << ": " << x.a_does << "; " << b_name << ": " << x.b_does;
    s << "\n";
    if (x.confirmed)
      s << "    at " << detail::entry_text(x.entry) << ", " << x.inputs << ": " << x.note << "\n";
    else if (!x.note.empty())
      s << "    " << (x.aspect == "scheduling" ? "" : "no witness: ") << x.note << "\n";
  }
  for (const std::string& x : same) s << "  same " << x << "\n";
  for (const std::string& x : not_compared) s << "  " << x << "\n";
  for (const DiffComparison& c : comparisons) {
    s << "  " << c.distribution << ": " << c.differing << " of " << c.outputs << " outputs differ";
    if (c.differing)
      s << " (first " << detail::entry_text(c.first_differing.at) << ": " << a_name << " "
        << tc::hex_bits(c.first_differing.a, a_output) << ", " << b_name << " " << tc::hex_bits(c.first_differing.b, b_output)
        << ")";
    if (c.a_unstable) s << "; " << a_name << " changed " << c.a_unstable << " between its two launches";
    if (c.b_unstable) s << "; " << b_name << " changed " << c.b_unstable << " between its two launches";
    s << "\n";
  }
  return s.str();
}

}  // namespace gemmlab::explain
