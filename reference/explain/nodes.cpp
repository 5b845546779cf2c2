// Stage 4 of `gemmlab explain`: the arithmetic of each kind of fused node. `gemmlab probe`'s probes of
// the instruction with that block, embedded in full GEMMs at the leaves of one fused node of the
// revealed tree (C built exactly by the node before it), inferred with tc::infer like `gemmlab probe`;
// through an output narrower than the instruction's, each candidate's measured model checked on the
// probes as rounded there. fp32 operands that reach fused nodes unconverted: the split schemes
// (reference/explain.hpp).
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <map>
#include <numeric>
#include <optional>
#include <sstream>
#include <tuple>

#include "reference/explain/internal.hpp"
#include "reference/rng.hpp"
#include "reference/tc_infer.hpp"
#include "reference/tc_gpus.hpp"

namespace gemmlab::explain {

namespace detail {

namespace {

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

// The values each operand can hold (Options::values_a, values_b), sorted; empty: any value of the format.
struct Values {
  std::vector<double> a, b;
  bool any() const { return !a.empty() || !b.empty(); }
};

// The product a b written as x y with x among v.a and y among v.b (either: any value exact in fmt), the
// same value and, for a zero, the same sign; a and b themselves where they fit (a NaN or an infinity on the
// operand that holds any value). nullopt where no pair does (a NaN or an infinity on the restricted operand, a
// product none of the values divides exactly).
std::optional<std::pair<double, double>> within(double a, double b, Format fmt, const Values& v) {
  auto fits = [&](double x, const std::vector<double>& in) {
    // A NaN or an infinity only where any value of the format is held (and the format has it).
    if (!std::isfinite(x)) return in.empty() && (std::isnan(x) ? info(fmt).has_nan : info(fmt).has_infinity);
    return tc::round_to_format(fmt, x, Rounding::nearest_even) == x &&
           (in.empty() || std::binary_search(in.begin(), in.end(), x));  // -0 finds 0: both signs are held
  };
  if (fits(a, v.a) && fits(b, v.b)) return std::pair{a, b};
  const double p = a * b;  // exact: both have at most 24 significand bits
  if (!std::isfinite(p) || !std::isfinite(a) || !std::isfinite(b)) return std::nullopt;
  if (p == 0) {
    for (double x : {0.0, -0.0, 1.0, -1.0})
      for (double y : {0.0, -0.0, 1.0, -1.0})
        if (x * y == 0 && std::signbit(x * y) == std::signbit(p) && fits(x, v.a) && fits(y, v.b)) return std::pair{x, y};
    return std::nullopt;
  }
  // One operand's values tried in turn (the restricted one: a short list), the other the quotient.
  const bool by_a = !v.a.empty();
  for (double x : by_a ? v.a : v.b) {
    if (x == 0) continue;
    const double y = p / x;
    if (y * x != p) continue;  // not exact
    if (by_a ? (fits(x, v.a) && fits(y, v.b)) : (fits(y, v.a) && fits(x, v.b)))
      return by_a ? std::pair{x, y} : std::pair{y, x};
  }
  return std::nullopt;
}

bool same_arithmetic(tc::TcParams a, const tc::TcParams& b) {
  a.overflow = b.overflow;
  a.zero_sign = b.zero_sign;
  a.zero_operand_exponent = b.zero_operand_exponent;
  a.tf32_low_bits = b.tf32_low_bits;
  return a == b;
}

// The instructions (`gemmlab tc-eval --list`) whose products are `leaves` of `compute` in A and B, with an
// fp32 accumulator, or with any (fp16 too) when `any_accumulator`.
std::vector<tc::Instruction> instructions_for(Format compute, int leaves, bool any_accumulator = false) {
  std::vector<tc::Instruction> out;
  for (tc::Instruction i : tc::instructions_of(tc::active_generation())) {  // the GPU's own instructions
    const tc::InstructionInfo& I = tc::info(i);
    if (I.input == compute && I.format_b() == compute && I.k == leaves && (any_accumulator || I.output == Format::fp32))
      out.push_back(i);
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
        const std::optional<tc::TcParams> mp = tc::model_params(i);
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

// ---------------------------------------------------------------------------------------------
// One kind of fused node: every instruction of its block and compute format is a candidate, whatever
// its accumulator (`gemmlab tc-eval --list`: fp32, and fp16 for wgmma and mma.sync f16 -> f16 and fp8
// -> f16). The probes of each probe set (make_probes of an input, output and block) are embedded at
// the leaves of `node`, its C built exactly by the carry child's leaves; then each candidate's measured
// model predicts every probe whose C it could have been handed (C exact in the candidate's
// accumulator: an fp16 node's C is an fp16 value), rounded as the kernel writes its output. A
// candidate with a probe it does not explain is ruled out, with the count; the first that explains
// them all is the node's model, one writing the kernel's output format before one checked through a
// narrower output (NodeKind::checked_through: bf16 written from fp32). Where none does, the model is
// inferred (tc::infer, like `gemmlab probe`) from the probes of an instruction that writes what the
// kernel writes, which finds an arithmetic that no instruction has too; it is taken whole from a
// measured instruction of the same arithmetic where there is one (the special rules that only the
// adversarial corpus settles are not probed here).
NodeKind infer_kind(Oracle& o, const std::vector<Entry>& E, const SummationTree& t, int node, bool carry, Format compute,
                    const Options& opt, const Values& values, std::string& why) {
  NodeKind nk;
  nk.carry = carry;
  // The node's own leaves, and the leaves that build its C (the carry child's leaves).
  std::vector<int> L, builder;
  int carry_child = -1;
  for (int c : t.children(node)) {
    if (t.is_leaf(c)) L.push_back(c);
    else carry_child = c;
  }
  std::sort(L.begin(), L.end());
  nk.leaves = static_cast<int>(L.size());
  if (carry_child >= 0)
    for (int c : t.children(carry_child))
      if (t.is_leaf(c)) builder.push_back(c);
  const std::vector<tc::Instruction> cands = instructions_for(compute, nk.leaves, true);
  if (cands.empty()) {
    why = "fused nodes of " + std::to_string(nk.leaves) + " " + info(compute).name +
          " products: no tensor-core instruction of that block has probes in gemmlab";
    return nk;
  }
  // The probe sets, one per accumulator format among the candidates, each run once.
  struct Set {
    tc::Instruction ins;  // the first candidate of this accumulator (whose probes these are)
    std::vector<tc::Probe> probes;
    std::vector<tc::Probe> fitted;  // with Options::values_a / values_b: the probes as the operands hold them
    std::vector<const tc::Probe*> used;
    std::vector<std::uint64_t> bits;
    int skipped = 0;
  };
  std::vector<Set> sets;
  for (tc::Instruction ins : cands)
    if (std::none_of(sets.begin(), sets.end(), [&](const Set& x) { return tc::info(x.ins).output == tc::info(ins).output; }))
      sets.push_back({ins, tc::make_probes(tc::info(ins)), {}, {}, {}, 0});
  for (Set& set : sets) {
    std::vector<Item> items;
    set.fitted.reserve(set.probes.size());  // `used` points into it
    for (const tc::Probe& original : set.probes) {
      if (static_cast<long long>(set.used.size()) >= opt.max_probes) break;
      if (original.raw || (original.c != 0 && !carry) || (original.c == 0 && std::signbit(original.c))) {
        ++set.skipped;
        continue;
      }
      const tc::Probe* probe = &original;
      if (values.any()) {  // the same products within the values the operands hold, or the probe left out
        tc::Probe q = original;
        bool ok = true;
        for (int k = 0; k < nk.leaves && ok; ++k) {
          const auto xy = within(q.a[k], q.b[k], compute, values);
          if (xy) std::tie(q.a[k], q.b[k]) = *xy;
          ok = xy.has_value();
        }
        if (!ok) {
          ++set.skipped;
          continue;
        }
        set.fitted.push_back(std::move(q));
        probe = &set.fitted.back();
      }
      const tc::Probe& pr = *probe;
      Item it;
      for (int k = 0; k < nk.leaves; ++k) {
        it.a.at.push_back({L[k], pr.a[k]});
        it.b.at.push_back({L[k], pr.b[k]});
      }
      if (pr.c != 0) {
        auto pieces = carry_pieces(pr.c, compute, static_cast<int>(builder.size()));
        bool held = true;
        for (auto& [a, b] : pieces)
          if (const auto xy = within(a, b, compute, values)) std::tie(a, b) = *xy;
          else held = false;
        if (!held || pieces.empty() || std::fabs(pr.c) < 0x1p-100 || std::fabs(pr.c) > 0x1p100) {
          ++set.skipped;
          if (values.any()) set.fitted.pop_back();
          continue;
        }
        for (std::size_t x = 0; x < pieces.size(); ++x) {
          it.a.at.push_back({builder[x], pieces[x].first});
          it.b.at.push_back({builder[x], pieces[x].second});
        }
      }
      items.push_back(std::move(it));
      set.used.push_back(probe);
    }
    set.bits = run_items(o, E, items);
  }
  // A model on every probe whose C it could have been handed (exact in its accumulator), the
  // prediction rounded as the kernel writes its output: the probes it applies to and those it does not
  // explain. GEMMLAB_EXPLAIN_TRACE: each unexplained probe on stderr (its id, the model's D before and
  // after the rounding to the output, the kernel's bits), to find what the output does.
  const bool trace_misses = std::getenv("GEMMLAB_EXPLAIN_TRACE") != nullptr;
  auto check = [&](const tc::TcParams& model, const char* name, int& probes) {
    int miss = 0;
    probes = 0;
    for (const Set& set : sets)
      for (std::size_t x = 0; x < set.used.size(); ++x) {
        const tc::Probe& pr = *set.used[x];
        if (tc::round_to_format(model.output, pr.c, Rounding::nearest_even) != pr.c) continue;
        ++probes;
        const double d = tc::predict(model, pr);
        const bool same = std::isnan(d) ? std::isnan(from_bits(o.output(), set.bits[x]))
                                        : output_bits(o.output(), d, 0) == set.bits[x];
        miss += !same;
        if (!same && trace_misses)
          std::fprintf(stderr, "[explain] %s probe %s (c = %s): model D = %s -> %s 0x%llx, kernel 0x%llx = %s\n", name,
                       pr.id.c_str(), value_text(pr.c).c_str(), value_text(d).c_str(), info(o.output()).name,
                       static_cast<unsigned long long>(output_bits(o.output(), d, 0)),
                       static_cast<unsigned long long>(set.bits[x]), value_text(from_bits(o.output(), set.bits[x])).c_str());
      }
    return miss;
  };
  std::vector<std::optional<tc::TcParams>> measured;
  for (tc::Instruction ins : cands) {
    measured.push_back(tc::model_params(ins));
    NodeKind::Candidate c{tc::info(ins).name, 0, -1};  // -1: no measured model to check
    if (measured.back()) c.mismatching = check(*measured.back(), c.instruction.c_str(), c.probes);
    nk.candidates.push_back(c);
  }
  // The first candidate whose measured model explains every probe it applies to, one that writes what
  // the kernel writes before one checked through a narrower output.
  for (const bool through : {false, true})
    for (std::size_t c = 0; c < cands.size(); ++c) {
      const NodeKind::Candidate& cand = nk.candidates[c];
      if (!measured[c] || cand.mismatching != 0 || cand.probes == 0) continue;
      if ((tc::info(cands[c]).output != o.output()) != through) continue;
      nk.instruction = cand.instruction;
      nk.probes = cand.probes;
      nk.mismatching = 0;
      nk.params = *measured[c];
      if (through) nk.checked_through = info(o.output()).name;
      for (std::size_t d = 0; d < cands.size(); ++d)
        if (measured[d] && nk.candidates[d].mismatching == 0 && same_arithmetic(*measured[c], *measured[d]))
          nk.same_as += std::string(nk.same_as.empty() ? "" : " ") + tc::info(cands[d]).name;
      return nk;
    }
  // None: the model inferred where the kernel writes what an instruction writes (an arithmetic no
  // instruction has), then checked on the other sets' probes too. The rounding of a narrower output
  // hides the bits the inference reads: there no model is inferred.
  for (const Set& set : sets) {
    const tc::InstructionInfo& I = tc::info(set.ins);
    if (I.output != o.output()) continue;
    std::vector<tc::ProbeOutcome> outcomes;
    for (std::size_t x = 0; x < set.used.size(); ++x) outcomes.push_back({*set.used[x], set.bits[x]});
    const tc::Inference inf = tc::infer(I, outcomes);
    nk.inferred_from = I.name;
    nk.inferred_mismatching = inf.mismatching_probes;
    if (inf.mismatching_probes != 0) continue;
    int probes = 0;
    nk.inferred_mismatching = check(inf.params, "the inferred model", probes);
    if (nk.inferred_mismatching != 0) continue;
    nk.instruction = I.name;
    nk.probes = probes;
    nk.skipped = set.skipped;
    nk.mismatching = 0;
    nk.params = inf.params;
    nk.ambiguous = inf.ambiguous;
    // A measured instruction of the same arithmetic (special rules aside): the node takes its model whole.
    for (std::size_t c = 0; c < cands.size(); ++c)
      if (measured[c] && same_arithmetic(inf.params, *measured[c])) {
        if (nk.same_as.empty()) nk.params = *measured[c];
        nk.same_as += std::string(nk.same_as.empty() ? "" : " ") + tc::info(cands[c]).name;
      }
    return nk;
  }
  std::ostringstream w;
  w << "no tensor-core model explains the fused nodes of " << nk.leaves << " products (";
  bool first = true;
  if (!nk.inferred_from.empty()) {
    w << "inferred from " << nk.inferred_from << "'s probes: " << nk.inferred_mismatching << " unexplained";
    first = false;
  }
  for (const NodeKind::Candidate& c : nk.candidates) {
    w << (first ? "" : "; ") << c.instruction << "'s measured model: ";
    first = false;
    if (c.mismatching < 0) w << "none";
    else w << c.mismatching << " of " << c.probes << " probes unexplained";
  }
  w << (o.output() == Format::fp32 ? "" : std::string(", seen through the ") + info(o.output()).name + " output") << ")";
  why = w.str();
  nk.mismatching = nk.inferred_from.empty() ? 0 : nk.inferred_mismatching;
  return nk;
}

}  // namespace

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
  Values values{opt.values_a, opt.values_b};
  std::sort(values.a.begin(), values.a.end());
  std::sort(values.b.begin(), values.b.end());
  // fp32 products exact in single products but fused: operands split into tf32 pieces, or nothing.
  if (compute == Format::fp32 && !kinds.empty() && (conv.split || instructions_for(Format::fp32, kinds[0].leaves).empty())) {
    if (values.any()) {
      st.why = "split operands: their probes need values that an operand held to a few (Options::values_a, values_b) "
               "cannot hold";
      st.seconds = since(t0);
      return st;
    }
    return infer_split(o, E, t, opt, t0);
  }
  for (const Kind& kind : kinds) {
    std::string why;
    st.kinds.push_back(infer_kind(o, E, t, kind.node, kind.carry, compute, opt, values, why));
    if (!why.empty()) {
      st.why = why;
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

}  // namespace detail

std::string NodeKind::ruled_out() const {
  std::ostringstream s;
  for (const Candidate& c : candidates)
    if (c.mismatching > 0)
      s << (s.tellp() > 0 ? ", " : "") << c.instruction << " (" << c.mismatching << " of " << c.probes
        << " probes unexplained)";
  return s.str();
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

}  // namespace gemmlab::explain
