// The scheduling stage of `gemmlab explain` (reference/explain.hpp): does the kernel's order of
// summation depend on how its work is scheduled? A kernel that adds partial sums with atomics (split-K
// with atomic adds, stream-K fix-ups) adds them in the order its blocks finish, which the hardware
// decides: the tree revealed on an idle GPU can be one of several. The tree's pairs are asked again at
// every entry under conditions that disturb the schedule:
//   repeat             the same launches again, undisturbed (an order that changes from call to call);
//   shuffled_launches  the same launches in a seeded random order, so that each follows another launch
//                      than before (an order that depends on what ran before: counters or caches left
//                      by earlier launches);
//   the oracle's perturbations (on a GPU: fewer SMs in a green context, SMs held by a concurrent kernel).
// Each entry is compared with its own undisturbed counts (a baseline pass first: an entry whose order
// differs from the tree's by its position, a stream-K tail, keeps its own). Entries that show other
// counts are grouped by them; each group is a variant, revealed (reveal() at those entries under the
// same condition) where its entries keep to one tree while they are asked again.
//
// The verdict: "depends" where any entry changed its order (or the tree stage's own two passes
// disagreed), "unchanged" where in every trial that ran every entry kept its order. The bound the kernel is judged by
// must cover every order seen: bound_over_orders() judges by the record of the order with the largest
// bound (order_bound, the place where the bound of any revealed tree comes in), and claims none where an
// order seen could not be revealed or has no record.
#include <algorithm>
#include <map>
#include <sstream>
#include <stdexcept>

#include "reference/error_stats.hpp"
#include "reference/explain/internal.hpp"
#include "reference/rng.hpp"

namespace gemmlab::explain::detail {

namespace {

using Pairs = std::vector<std::pair<int, int>>;

// The pairs every trial asks: the verification's first four (first and last product, first and
// middle, the last two, the first two) and seeded random ones.
Pairs schedule_pairs(int K, int count, std::uint64_t seed) {
  Pairs pairs{{0, K - 1}, {0, K / 2}, {K - 2, K - 1}, {0, 1}};
  SplitMix rng{seed ^ 0x5c4edull};
  while (static_cast<int>(pairs.size()) < std::max(count, 4)) {
    const int p = static_cast<int>(rng.next() % K), q = static_cast<int>(rng.next() % K);
    if (p != q) pairs.emplace_back(std::min(p, q), std::max(p, q));
  }
  pairs.erase(std::unique(pairs.begin(), pairs.end()), pairs.end());  // K = 2: the four coincide
  return pairs;
}

std::vector<int> lca_sizes(const SummationTree& t, const Pairs& pairs) {
  std::vector<int> out;
  for (const auto& [p, q] : pairs) out.push_back(lca_size(t, p, q));
  return out;
}

// The counts an order gave, in words (the first few pairs).
std::string counts_text(const Pairs& pairs, const std::vector<int>& sizes) {
  std::ostringstream s;
  s << "products ";
  for (std::size_t x = 0; x < pairs.size() && x < 4; ++x)
    s << (x ? ", " : "") << pairs[x].first << " and " << pairs[x].second << " met in a node of " << sizes[x];
  if (pairs.size() > 4) s << ", ...";
  return s.str();
}

// The oracle within a budget of launches: revealing a variant at the few entries that followed it can
// take far more launches than the stage has time for (each launch answers one pair per entry).
class Budgeted : public ForwardingOracle {
 public:
  Budgeted(Oracle& inner, long long budget) : ForwardingOracle(inner), budget_(budget) {}

 private:
  void before_launch() override {
    if (launches >= budget_)
      throw std::runtime_error("revealing it needs more than the " + std::to_string(budget_) +
                               " launches the stage's time allows");
    ++launches;
  }
  long long budget_;
};

// The counts each entry of E shows for `pairs`, the pairs asked in `order` (one launch per pair and
// unit group, every entry answering): out[e][x].
std::vector<std::vector<int>> observe(Fprev& f, const std::vector<Entry>& E, const Pairs& pairs,
                                      const std::vector<std::size_t>& order) {
  std::vector<std::vector<int>> out(E.size(), std::vector<int>(pairs.size()));
  for (std::size_t x : order) {
    const std::vector<int> sizes = f.sizes(E, Pairs(E.size(), pairs[x]));
    for (std::size_t e = 0; e < E.size(); ++e) out[e][x] = sizes[e];
  }
  return out;
}

// The orders listed one by one (and revealed where they can be): a kernel whose entries each sum in an
// order of their own under a trial (atomics racing at every entry) would otherwise list thousands, each
// revealed in turn until the stage's time ran out. Beyond it, further orders are counted in one more
// variant, never revealed.
constexpr std::size_t kListedOrders = 8;

struct Condition {
  std::string name, words;
  int perturbation = -1;  // index into the oracle's perturbations(), -1: none
  bool shuffled = false;
};

}  // namespace

ScheduleStage check_schedule(Oracle& o, const std::vector<Entry>& E, const TreeStage& tree, const Options& opt) {
  const auto t0 = Clock::now();
  ScheduleStage st;
  if (!opt.schedule) {
    st.why = "not asked for";
    return st;
  }
  const int K = o.K();
  Fprev f{o, tree_masks(o, opt.fprev_carrier)};  // the tree stage counted with these masks: they exist
  const Pairs pairs = schedule_pairs(K, opt.schedule_pairs, opt.seed);
  std::vector<std::size_t> in_order(pairs.size());
  for (std::size_t x = 0; x < in_order.size(); ++x) in_order[x] = x;
  // Each entry's counts undisturbed: what every trial is compared with, entry by entry (an entry whose
  // order differs from the tree's by its position, a stream-K tail, keeps its own).
  std::vector<std::vector<int>> baseline;
  try {
    baseline = observe(f, E, pairs, in_order);
  } catch (const std::runtime_error& e) {  // a count that is no count (a KernelFailed goes on up)
    st.why = std::string("the undisturbed counts could not be taken: ") + e.what();
    return st;
  }

  std::vector<Condition> conditions{
      {"repeat", "the same launches again, undisturbed", -1, false},
      {"shuffled_launches", "the same launches in a seeded random order, each after another launch than before", -1,
       true}};
  const std::vector<Perturbation> offered = o.perturbations();
  for (std::size_t i = 0; i < offered.size(); ++i)
    conditions.push_back({offered[i].name, offered[i].words, static_cast<int>(i), false});

  std::vector<std::vector<int>> variant_counts;  // the counts each listed variant gave (st.variants' indices)
  int further = -1;  // the variant counting the orders beyond the listed ones (st.variants' index), -1: none yet
  std::string settled;  // why the trials left need not run: the answer no trial can change
  st.ran = true;
  for (const Condition& c : conditions) {
    ScheduleTrial t;
    t.perturbation = c.name;
    t.words = c.words;
    const auto c0 = Clock::now();
    const long long l0 = o.launches;
    if (!settled.empty()) {
      t.not_applied = "not tried: " + settled;
      st.trials.push_back(t);
      continue;
    }
    if (since(t0) > opt.schedule_seconds) {
      std::ostringstream s;
      s << "not tried: the stage's " << opt.schedule_seconds << " s were spent";
      t.not_applied = s.str();
      st.trials.push_back(t);
      continue;
    }
    if (c.perturbation >= 0) {
      if (std::string why = o.perturb(c.perturbation); !why.empty()) {
        t.not_applied = why;
        st.trials.push_back(t);
        continue;
      }
    }
    try {
      std::vector<std::size_t> order = in_order;
      if (c.shuffled) {
        SplitMix rng{opt.seed ^ 0x5b0ffull};
        for (std::size_t x = order.size(); x > 1; --x) std::swap(order[x - 1], order[rng.next() % x]);
        if (order.size() > 1 && std::is_sorted(order.begin(), order.end())) std::reverse(order.begin(), order.end());
      }
      const std::vector<std::vector<int>> seen = observe(f, E, pairs, order);
      // Entries that kept their undisturbed counts; the others grouped by the counts they showed.
      std::map<std::vector<int>, std::vector<Entry>> groups;
      t.entries = static_cast<int>(E.size());
      for (std::size_t e = 0; e < E.size(); ++e) {
        if (seen[e] == baseline[e]) ++t.following;
        else groups[seen[e]].push_back(E[e]);
      }
      // Orders not seen before: more than the stage lists are not revealed one by one (the order is then one of
      // many, entry by entry).
      std::size_t fresh = 0;
      for (const auto& [counts, at] : groups)
        fresh += std::find(variant_counts.begin(), variant_counts.end(), counts) == variant_counts.end();
      const bool many = fresh > kListedOrders;
      for (const auto& [counts, at] : groups) {
        const int n = static_cast<int>(at.size());
        auto v = std::find(variant_counts.begin(), variant_counts.end(), counts);
        if (v == variant_counts.end() && (many || further >= 0 || variant_counts.size() >= kListedOrders)) {
          if (further < 0) {
            ScheduleVariant nv;
            nv.first_seen = c.name;
            nv.text = "further orders, each at its own entries";
            nv.why = "not revealed: more than " + std::to_string(kListedOrders) + " orders were seen (under " + c.name +
                     ", " + std::to_string(fresh) + " new ones at " + std::to_string(t.entries - t.following) +
                     " entries), too many to reveal one by one";
            st.variants.push_back(std::move(nv));
            further = static_cast<int>(st.variants.size()) - 1;
          }
          const std::size_t index = static_cast<std::size_t>(further);
          if (t.variant_entries.size() <= index) t.variant_entries.resize(index + 1, 0);
          t.variant_entries[index] += n;
          st.variants[index].entries += n;
          t.unexplained += n;
          continue;
        }
        if (v == variant_counts.end()) {
          // A new order: revealed at its entries under this same condition, where they keep to it.
          ScheduleVariant nv;
          nv.first_seen = c.name;
          nv.text = counts_text(pairs, counts);
          // Launches the rest of the stage's time allows, at this trial's pace so far.
          const double per_launch = since(c0) / std::max<long long>(1, o.launches - l0);
          const long long budget = static_cast<long long>((opt.schedule_seconds - since(t0)) / per_launch);
          if (budget < 64) {
            nv.why = "not revealed: the stage's time was spent";
          } else {
            Options one = opt;
            one.verify_entries = static_cast<int>(at.size());
            Budgeted within(o, budget);
            const TreeStage tv = reveal(within, at, one);
            if (tv.text.empty() || !tv.deterministic || !tv.ok) nv.why = "not revealed: " + tv.why;
            else if (lca_sizes(tv.tree, pairs) != counts)
              nv.why = "not revealed: asked again, its entries followed " + tv.text + ", not the counts first seen";
            else {
              nv.revealed = true;
              nv.tree = tv.tree;
              nv.text = tv.text;
            }
          }
          st.variants.push_back(std::move(nv));  // before any `further` (which comes last): its index is its counts'
          variant_counts.push_back(counts);
          v = variant_counts.end() - 1;
        }
        const std::size_t index = static_cast<std::size_t>(v - variant_counts.begin());
        if (t.variant_entries.size() <= index) t.variant_entries.resize(index + 1, 0);
        t.variant_entries[index] += n;
        st.variants[index].entries += n;
        if (!st.variants[index].revealed) t.unexplained += n;
      }
      if (t.following < t.entries && st.exposed_by.empty()) st.exposed_by = c.name;
      // An order seen that could not be revealed: the order depends on scheduling and no bound covers every
      // order seen (bound_over_orders), whatever the trials left show. They are not run.
      const auto hidden = std::find_if(st.variants.begin(), st.variants.end(), [](const ScheduleVariant& x) { return !x.revealed; });
      if (hidden != st.variants.end())
        settled = "the order already depends on scheduling, and an order seen under " + hidden->first_seen +
                  " could not be revealed, so no bound can be claimed whatever this trial shows";
    } catch (const OracleLost&) {
      throw;
    } catch (const BadOutput&) {
      throw;
    } catch (const KernelFailed& e) {
      // Undisturbed, a launch that fails is the kernel's failure; under a perturbation, that trial's (a
      // framework that cannot launch in a green context); an output that is not C, always the kernel's.
      if (c.perturbation < 0) throw;
      t.not_applied = std::string("the kernel failed under it: ") + e.what();
    } catch (const std::exception& e) {
      t.not_applied = std::string("did not finish: ") + e.what();
    }
    if (c.perturbation >= 0) o.perturb(-1);
    t.launches = o.launches - l0;
    t.seconds = since(c0);
    st.trials.push_back(t);
  }
  for (ScheduleTrial& t : st.trials) t.variant_entries.resize(st.variants.size(), 0);

  const bool changed = !st.exposed_by.empty() || !tree.deterministic;
  if (!tree.deterministic && st.exposed_by.empty()) st.exposed_by = "the tree stage's two passes";
  int ran = 0;
  for (const ScheduleTrial& t : st.trials) ran += t.not_applied.empty();
  std::ostringstream s;
  if (changed) {
    st.verdict = "depends";
    s << "the order depends on scheduling: first seen under " << st.exposed_by;
  } else if (ran > 0) {
    st.verdict = "unchanged";
    s << "the order did not change";
  } else {
    st.why = "no trial ran";
    s << "not checked: no trial ran";
  }
  for (std::size_t v = 0; v < st.variants.size(); ++v) {
    const ScheduleVariant& x = st.variants[v];
    s << "; variant " << v + 1 << " (" << x.entries << " entries, first under " << x.first_seen << "): " << x.text;
    if (!x.revealed) s << " (" << x.why << ")";
  }
  s << "; tried:";
  for (const ScheduleTrial& t : st.trials) {
    s << " " << t.perturbation;
    if (!t.not_applied.empty()) s << " (" << t.not_applied << ")";
    else s << " (" << t.following << "/" << t.entries << " entries kept their order)";
    s << (&t == &st.trials.back() ? "" : ",");
  }
  st.text = s.str();
  st.seconds = since(t0);
  return st;
}

namespace {

// The bound factor of one order of summation and the record it comes from, or nullopt with `why`: the
// order's own record (record_for: its tree with the nodes and conversion found; a named order of
// gemmlab's vocabulary, else the revealed tree itself in compact form, tree_form.hpp), bounded as the
// judge bounds it (gamma_bound_factor of bound_model: along the tree's worst root-to-leaf path,
// tree_bound.hpp).
std::optional<std::pair<double, Numerics>> order_bound(const SummationTree& t, Oracle& o, const Report& r,
                                                       std::string& why) {
  const emulation::SplitScheme* split = r.nodes.split ? &*r.nodes.split : nullptr;
  if (std::string gap = emulation::tree_gap(t, node_model(r.nodes.kinds), info(o.input()).name, split); !gap.empty()) {
    why = "its nodes are not all of the kinds the nodes stage modelled (" + gap + ")";
    return std::nullopt;
  }
  const std::optional<Numerics> n = record_for(t, o.input(), o.output(), r.conversion.a, r.nodes.kinds, split);
  if (!n) {
    why = "its fused nodes need a model no single instruction of gemmlab's has, so it has no record and no bound";
    return std::nullopt;
  }
  return std::make_pair(gamma_bound_factor(bound_model(*n, o.K())), *n);
}

}  // namespace

void bound_over_orders(Oracle& o, Report& r) {
  ScheduleStage& st = r.schedule;
  if (st.verdict != "depends" || !r.numerics) return;
  auto claim_none = [&](const std::string& why) {
    st.bound_note = why + ": no bound covers every order seen, so none is claimed";
    r.numerics.reset();
  };
  if (st.variants.empty())
    return claim_none("the tree stage saw the order change between its two passes, and no trial caught the other order");
  // The record judged is the order's with the largest bound: its bound covers every order seen.
  double worst = gamma_bound_factor(bound_model(*r.numerics, o.K()));
  Numerics judged = *r.numerics;
  for (std::size_t v = 0; v < st.variants.size(); ++v) {
    const ScheduleVariant& x = st.variants[v];
    const std::string which = "variant " + std::to_string(v + 1) + " (first under " + x.first_seen + ")";
    if (!x.revealed) return claim_none(which + " was " + x.why);
    std::string why;
    const auto b = order_bound(x.tree, o, r, why);
    if (!b) return claim_none(which + ": " + why);
    if (b->first > worst) {
      worst = b->first;
      judged = b->second;
    }
  }
  r.numerics = judged;
  std::ostringstream s;
  s << "judged by the largest bound of the " << st.variants.size() + 1 << " orders seen (f = " << worst << ")";
  st.text += "; " + s.str();
}

}  // namespace gemmlab::explain::detail
