// The driver of `gemmlab explain`: the stages in order, each stopping the report at its stage with
// the reason, and the report's summary (reference/explain.hpp).
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <limits>
#include <sstream>

#include "reference/explain/internal.hpp"

namespace gemmlab::explain {

std::string Report::summary() const {
  std::ostringstream s;
  s << (identified ? "identified" : "UNIDENTIFIED (" + failed_stage + ": " + reason + ")") << "\n";
  if (first_call_seconds > 0)
    s << "  first call (before explain's clock; a kernel compiled on first use compiles here): " << first_call_seconds
      << " s\n";
  if (!gemm_check.empty()) s << "  gemm: " << gemm_check << "\n";
  if (tree.ok || !tree.text.empty()) s << "  tree: " << tree.text << " (" << tree.entries_used << " entries answered, "
                                       << tree.entries_verified << " verified)\n";
  if (schedule.ran) s << "  scheduling: " << schedule.text << (schedule.bound_note.empty() ? "" : "; " + schedule.bound_note) << "\n";
  if (conversion.ok)
    s << "  operands: "
      << (conversion.split ? std::string("split (each single product hi + mid of two bf16 pieces)")
                           : std::string("A ") + in_words(conversion.a) + ", B " + in_words(conversion.b))
      << "\n";
  if (nodes.split)
    s << "  split: " << nodes.split->describe() << " (the one of " << nodes.split_candidates << " schemes explaining all "
      << nodes.split_probes << " probes)\n";
  for (const NodeKind& k : nodes.kinds) {
    s << "  fused nodes of " << k.leaves << (k.carry ? " products and the running sum" : " products") << ": "
      << k.params.describe() << " (" << k.probes << " probes of " << k.instruction << ", " << k.mismatching
      << " unexplained" << (k.same_as.empty() ? "" : "; as " + k.same_as)
      << (k.checked_through.empty() ? "" : "; checked through the " + k.checked_through + " output, not inferred") << ")\n";
    if (!k.candidates.empty()) {
      int consistent = 0;
      for (const NodeKind::Candidate& c : k.candidates) consistent += c.mismatching == 0;
      const std::string out = k.ruled_out();
      s << "    candidates: " << k.candidates.size() << " instructions of " << k.leaves << " products, " << consistent
        << " explaining every probe; ruled out: " << (out.empty() ? "none" : out) << "\n";
    }
  }
  for (const Comparison& c : comparisons)
    s << "  " << c.distribution << ": " << c.mismatches << " of " << c.outputs << " outputs differ from the prediction"
      << (c.by_variant ? " (" + std::to_string(c.by_variant) + " predicted by another order seen)" : std::string())
      << (c.first_mismatch.empty() ? "" : " (first " + c.first_mismatch + ")") << "\n";
  if (!dequantization.operands.empty()) {
    s << "  dequantized " << dequantization.operands << " rounded by the kernel: " << dequantization.chosen
      << " (mismatches of each way in " << dequantization.trial_outputs << " outputs:";
    long long fewest = -1;
    for (const auto& [name, miss] : dequantization.tried) {
      s << " " << name << " " << miss;
      fewest = fewest < 0 ? miss : std::min(fewest, miss);
    }
    s << (fewest > 0 ? "; none of them predicts every output: the kernel rounds them another way" : "") << ")\n";
  }
  if (!numerics_text.empty()) s << "  numerics: " << numerics_text << "\n";
  if (numerics) {
    s << "  bound: |C^ - C| <= " << bound << " |A||B| + " << underflow_bound << ", from the tree: product "
      << worst_product << " meets the most rounding error on its path (" << path_roundings
      << " roundings, their unit roundoffs adding up to " << path_roundoff << ")";
    if (std::isinf(bound)) s << "; that reaches 1: no bound (judged no_bound)";
    if (!std::isnan(named_bound)) s << "; gamma_K of the named order: " << named_bound;
    s << "\n";
  }
  if (!behaves_like.empty()) {
    // A quantized kernel: alike on its dequantized operands (the built-in kernels take plain ones).
    s << "  behaves exactly like" << (quantized ? " (on the dequantized operands)" : "") << ":";
    for (const std::string& b : behaves_like) s << " " << b;
    s << "\n";
  }
  return s.str();
}

namespace detail {

namespace {

// The stages in order; each failure returns the report through `fail` (explain_kernel's).
// `next(s)` closes the stage under way (its time and launches in r.stage_times) and begins stage s.
template <class Note, class Fail, class Next>
Report explain_stages(Oracle& o, const Options& opt, const std::vector<Entry>& E, Report& r, Note& note, Fail& fail,
                      Next& next, Clock::time_point t0, long long launches0) {
  if (std::string why = check_gemm(o, E, r.gemm_check, opt.fprev_carrier); !why.empty()) return fail("gemm", why);
  note("gemm checked");
  next("tree");
  r.tree = reveal(o, E, opt);
  note("tree");
  // The scheduling stage describes an order that changes, with or without a tree: an order that
  // changes from call to call (atomics racing) can keep the counts from forming one tree at all. Without
  // a tree, or with one that changed between the tree stage's own two passes, there is nothing to infer
  // nodes on: the report stops at the tree, with the scheduling stage's words.
  if (r.tree.text.empty() && r.tree.masks.empty()) return fail("tree", r.tree.why);  // no counts to ask
  if (r.tree.text.empty() || !r.tree.deterministic) {
    next("scheduling");
    r.schedule = check_schedule(o, E, r.tree, opt);
    note("scheduling");
    return fail("tree", r.tree.why + (r.schedule.verdict == "depends" ? "; " + r.schedule.text : std::string()));
  }
  next("conversion");
  r.conversion = infer_conversion(o, E, opt.values_a, opt.values_b);
  note("conversion");
  if (!r.conversion.ok) return fail("conversion", r.conversion.why);
  next("nodes");
  r.nodes = infer_nodes(o, E, r.tree.tree, r.conversion, opt);
  note("nodes");
  if (!r.nodes.ok) return fail("nodes", r.nodes.why);
  // Composition at full size on each distribution: the kernel run on each (the oracle), then its outputs
  // predicted on the CPU while the scheduling stage launches the kernel, then compared (the outputs the
  // tree misses, with the orders the scheduling stage revealed).
  next("composition");
  Composition composition;
  if (std::string gap = composition.begin(o, opt, r, opt.schedule); !gap.empty())
    return fail(composition.refused_at(), gap);
  next("scheduling");
  r.schedule = check_schedule(o, E, r.tree, opt);
  note("scheduling");
  next("composition");
  long long total_mismatches = 0;
  composition.finish(o, opt, r, total_mismatches);
  note("composition");
  bound_over_orders(o, r);
  if (!r.tree.ok) {
    fail("tree", r.tree.why + "; " + std::to_string(total_mismatches) + " compared outputs differ from the prediction");
    return r;
  }
  if (total_mismatches > 0) {
    std::ostringstream s;
    s << total_mismatches << " compared outputs differ from the prediction (" << r.comparisons[0].first_mismatch << ")";
    for (const Comparison& c : r.comparisons)
      if (c.mismatches && c.distribution != r.comparisons[0].distribution) s << "; " << c.distribution << " " << c.first_mismatch;
    if (r.schedule.verdict == "depends") s << " (" << r.schedule.text << ")";
    return fail("composition", s.str());
  }
  r.identified = true;
  next("");
  r.launches = o.launches - launches0;
  r.seconds = since(t0);
  return r;
}

}  // namespace

}  // namespace detail

Report explain_kernel(Oracle& o, const Options& opt) {
  using namespace detail;
  auto t0 = Clock::now();
  Report r;
  const bool trace = std::getenv("GEMMLAB_EXPLAIN_TRACE") != nullptr;
  auto note = [&](const char* what) {
    if (trace) std::fprintf(stderr, "[explain] %s at %.2f s, %lld launches\n", what, since(t0), o.launches);
  };
  long long launches0 = o.launches;
  // The stage under way, since when and from which launch: closed into r.stage_times by the next one,
  // by the end, or by a failure.
  std::string stage = "gemm";
  Clock::time_point stage_start = t0;
  long long stage_launches = launches0;
  // Each stage begun is told to opt.on_stage (a worker process tells its parent, which reports the stages
  // finished before a call that never comes back).
  auto next = [&](const std::string& s) {
    if (!stage.empty()) r.stage_times.push_back({stage, since(stage_start), o.launches - stage_launches});
    stage = s;
    stage_start = Clock::now();
    stage_launches = o.launches;
    if (!s.empty() && opt.on_stage) opt.on_stage(r, stage);
  };
  auto fail = [&](std::string failed, const std::string& why) {
    const std::string at = stage;
    next("");
    stage = at;  // an exception's stage (explain_kernel's catch) is the one under way
    r.identified = false;
    r.failed_stage = failed;
    r.reason = why;
    r.launches = o.launches - launches0;
    r.seconds = since(t0);
    return r;
  };
  const std::vector<Entry> E = choose_entries(o.M(), o.N(), std::min(o.M(), o.N()), opt.seed);
  note("start");
  if (opt.on_stage) opt.on_stage(r, stage);  // the first stage, "gemm"
  // A stage that cannot finish (the kernel raised, a count that is no count) leaves the kernel
  // unidentified at that stage, with the reason; nothing is guessed past it.
  try {
    if (opt.first_call) {
      // The first call, before the clock: a compilation on first use is the callable's, not explain's.
      SparseInputs none;
      o.run_sparse(none, {E.front()});
      r.first_call_seconds = since(t0);
      t0 = stage_start = Clock::now();
      launches0 = stage_launches = o.launches;
      note("first call");
    }
    return explain_stages(o, opt, E, r, note, fail, next, t0, launches0);
  } catch (const OracleLost& e) {
    // The stages finished before hold (each was answered in full); the one in progress is where it
    // stopped, and nothing is identified: no record, no bound, no kernel it behaves like.
    r.oracle_lost = true;
    r.numerics.reset();
    r.numerics_text.clear();
    r.behaves_like.clear();
    r.bound = std::numeric_limits<double>::quiet_NaN();
    r.named_bound = std::numeric_limits<double>::quiet_NaN();
    return fail(stage, e.what());
  } catch (const std::exception& e) {
    return fail(stage, e.what());
  }
}

}  // namespace gemmlab::explain
