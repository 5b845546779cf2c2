// The scheduling stage of `gemmlab explain` (reference/explain/schedule.cpp) and its reports on bad
// kernels, on synthetic CPU kernels whose order under each perturbation is known: an order that never
// changes must be reported unchanged with every trial listed; an order that changes under one
// perturbation must be reported as depending on scheduling, exposed by that perturbation, with the
// other order revealed and counted, and the kernel still identified and bounded; an order that changes
// from call to call under a perturbation must be seen but not revealed, and then no bound is claimed;
// an order that changes between undisturbed calls stops at the tree with the scheduling stage's words.
// A kernel that fails (raises, loses the GPU) must leave the report unidentified at the stage where it
// failed, with its message, never identified.
#include <gtest/gtest.h>

#include <algorithm>
#include <set>

#include <string>

#include "reference/error_stats.hpp"
#include "reference/explain.hpp"
#include "reference/kernel_emulation.hpp"
#include "reference/summation_tree.hpp"
#include "reference/tc_model.hpp"

using namespace gemmlab;
using namespace gemmlab::explain;

namespace {

bool contains(const std::string& s, const std::string& part) { return s.find(part) != std::string::npos; }

emulation::NodeModel model_of(tc::Instruction ins) {
  const tc::TcParams p = *tc::measured_hopper_params(ins);
  const int k = tc::info(ins).k;
  return [p, k](int leaves) -> std::optional<tc::TcParams> {
    if (leaves != k) return std::nullopt;
    return p;
  };
}

Options quick() {
  Options o;
  o.distributions = {"uniform_0_1"};
  o.verify_pairs = 16;
  o.max_probes = 2000;
  o.schedule_seconds = 60;
  return o;
}

// Two FMA chains over the halves of K, added at the end (a split-K of two parts).
SummationTree halves_tree(int K) {
  SummationTree t(K);
  int part[2];
  for (int h = 0; h < 2; ++h) {
    int node = t.add_node({h * K / 2, h * K / 2 + 1});
    for (int k = h * K / 2 + 2; k < (h + 1) * K / 2; ++k) node = t.add_node({node, k});
    part[h] = node;
  }
  t.add_node({part[0], part[1]});
  return t;
}

// A CUDA-core fp32 kernel at K = 64 (one FMA chain in increasing k), offering two perturbations named
// as the GPU's are. (FMA chains keep the stages after the tree cheap: no fused node to infer.)
SyntheticKernel fma_kernel() {
  SyntheticKernel k(32, 32, 64, Format::fp32, sequential_tree(64), [](int) { return std::nullopt; });
  k.offered = {{"fewer_sms_8", "in a green context of 8 SMs"}, {"busy_sms_4", "beside a kernel holding 4 SMs"}};
  return k;
}

const ScheduleTrial* trial(const Report& r, const std::string& name) {
  for (const ScheduleTrial& t : r.schedule.trials)
    if (t.perturbation == name) return &t;
  return nullptr;
}

// A kernel that runs `inner` until its `fail_on`-th launch, which throws `what` as `How`: a callable
// that raises on its third call (KernelFailed), returns another shape (BadOutput), a GPU context lost
// mid-way (OracleLost).
enum class How { raised, bad_output, lost };
class Failing : public ForwardingOracle {
 public:
  Failing(Oracle& inner, long long fail_on, std::string what, How how)
      : ForwardingOracle(inner), fail_on_(fail_on), what_(std::move(what)), how_(how) {}
  std::vector<Perturbation> perturbations() override { return inner_.perturbations(); }
  std::string perturb(int i) override { return inner_.perturb(i); }

 private:
  void before_launch() override {
    if (++launches != fail_on_) return;
    const std::string m = "call " + std::to_string(launches) + ": " + what_;
    if (how_ == How::lost) throw OracleLost(m);
    if (how_ == How::bad_output) throw BadOutput(m);
    throw KernelFailed(m);
  }
  long long fail_on_;
  std::string what_;
  How how_;
};

}  // namespace

TEST(ExplainSchedule, UnchangedOrderSaysWhatWasTried) {
  SyntheticKernel k = fma_kernel();
  const Report r = explain_kernel(k, quick());
  ASSERT_TRUE(r.identified) << r.summary();
  EXPECT_TRUE(r.schedule.ran);
  EXPECT_EQ(r.schedule.verdict, "unchanged") << r.schedule.text;
  EXPECT_TRUE(r.schedule.exposed_by.empty());
  EXPECT_TRUE(r.schedule.variants.empty());
  // Every trial ran, at every entry, and every entry kept its order.
  ASSERT_EQ(r.schedule.trials.size(), 4u);
  for (const char* name : {"repeat", "shuffled_launches", "fewer_sms_8", "busy_sms_4"}) {
    const ScheduleTrial* t = trial(r, name);
    ASSERT_NE(t, nullptr) << name;
    EXPECT_TRUE(t->not_applied.empty()) << name << ": " << t->not_applied;
    EXPECT_EQ(t->entries, 32) << name;
    EXPECT_EQ(t->following, t->entries) << name;
    EXPECT_GT(t->launches, 0) << name;
    EXPECT_TRUE(contains(r.schedule.text, name)) << r.schedule.text;
  }
  EXPECT_TRUE(contains(r.summary(), "scheduling: the order did not change")) << r.summary();
  ASSERT_TRUE(r.numerics.has_value());
}

TEST(ExplainSchedule, OrderUnderOnePerturbationIsRevealedCountedAndBounded) {
  // An in-MMA fp16 kernel that, under fewer_sms_8, deals its blocks of 16 to two partial sums added at
  // the end (as a library that sizes its split-K by the SMs it sees would): deterministic there, so the
  // variant is revealed, and both orders have records (in_mma, split-K 1 and 2) whose bounds cover them.
  SyntheticKernel k(32, 32, 64, Format::fp16, blocked_tree(64, 16, true), model_of(tc::Instruction::mma_m16n8k16_f16_f32));
  k.offered = {{"fewer_sms_8", "in a green context of 8 SMs"}, {"busy_sms_4", "beside a kernel holding 4 SMs"}};
  const SummationTree split = split_blocked_tree(64, 16, 2, true);
  k.under_perturbation.emplace("fewer_sms_8", split);
  const Report r = explain_kernel(k, quick());
  ASSERT_TRUE(r.identified) << r.summary();  // undisturbed, the tree predicts every compared output
  EXPECT_EQ(r.schedule.verdict, "depends") << r.schedule.text;
  EXPECT_EQ(r.schedule.exposed_by, "fewer_sms_8");
  ASSERT_EQ(r.schedule.variants.size(), 1u) << r.schedule.text;
  const ScheduleVariant& v = r.schedule.variants[0];
  EXPECT_TRUE(v.revealed) << v.why;
  EXPECT_EQ(v.tree.canonical(), split.canonical());
  EXPECT_EQ(v.first_seen, "fewer_sms_8");
  EXPECT_EQ(v.entries, 32);
  const ScheduleTrial* under = trial(r, "fewer_sms_8");
  ASSERT_NE(under, nullptr);
  EXPECT_EQ(under->following, 0);
  ASSERT_EQ(under->variant_entries.size(), 1u);
  EXPECT_EQ(under->variant_entries[0], 32);
  EXPECT_EQ(under->unexplained, 0);
  for (const char* name : {"repeat", "shuffled_launches", "busy_sms_4"}) {
    const ScheduleTrial* t = trial(r, name);
    ASSERT_NE(t, nullptr);
    EXPECT_EQ(t->following, t->entries) << name;
  }
  // Both orders have a record; the one judged is the order with the larger bound.
  ASSERT_TRUE(r.numerics.has_value()) << r.schedule.bound_note;
  // Each order's record is record_for's (its tree in the record: bounded by the tree's worst path).
  const double base = gamma_bound_factor(bound_model(*record_for(r.tree.tree, Format::fp16, Format::fp32,
                                                                 Conversion::as_is, r.nodes.kinds), 64));
  const double other = gamma_bound_factor(bound_model(*record_for(split, Format::fp16, Format::fp32,
                                                                  Conversion::as_is, r.nodes.kinds), 64));
  EXPECT_EQ(gamma_bound_factor(bound_model(*r.numerics, 64)), std::max(base, other));
  EXPECT_TRUE(r.schedule.bound_note.empty()) << r.schedule.bound_note;
  EXPECT_TRUE(contains(r.schedule.text, "judged by the largest bound of the 2 orders seen")) << r.schedule.text;
  EXPECT_TRUE(contains(r.summary(), "the order depends on scheduling: first seen under fewer_sms_8")) << r.summary();
}

TEST(ExplainSchedule, OrderThatRacesUnderAPerturbationIsSeenNotRevealedAndNotBounded) {
  // Under busy_sms_4 every other call sums in another order (atomics finishing in another order):
  // the trial sees it, the variant cannot be revealed (asked again it does not hold still), and no
  // bound is claimed for an order that was never seen whole.
  SyntheticKernel k = fma_kernel();
  k.under_perturbation.emplace("busy_sms_4", halves_tree(64));
  k.alternate_under.insert("busy_sms_4");
  const Report r = explain_kernel(k, quick());
  ASSERT_TRUE(r.identified) << r.summary();
  EXPECT_EQ(r.schedule.verdict, "depends") << r.schedule.text;
  EXPECT_EQ(r.schedule.exposed_by, "busy_sms_4");
  ASSERT_FALSE(r.schedule.variants.empty());
  bool any_unrevealed = false;
  for (const ScheduleVariant& v : r.schedule.variants) any_unrevealed = any_unrevealed || !v.revealed;
  EXPECT_TRUE(any_unrevealed) << r.schedule.text;
  const ScheduleTrial* t = trial(r, "busy_sms_4");
  ASSERT_NE(t, nullptr);
  EXPECT_LT(t->following, t->entries);
  EXPECT_GT(t->unexplained, 0);
  EXPECT_FALSE(r.numerics.has_value()) << "a bound was claimed over an order never revealed";
  EXPECT_TRUE(contains(r.schedule.bound_note, "no bound covers every order seen")) << r.schedule.bound_note;
}

// Two FMA chains over [0, s) and [s, K), added at the end (split-K in two unequal parts).
SummationTree split_at_tree(int K, int s) {
  SummationTree t(K);
  int node = t.add_node({0, 1});
  for (int k = 2; k < s; ++k) node = t.add_node({node, k});
  int rest = t.add_node({s, s + 1});
  for (int k = s + 2; k < K; ++k) rest = t.add_node({rest, k});
  t.add_node({node, rest});
  return t;
}

TEST(ExplainSchedule, AnOrderThatCannotBeRevealedEndsTheTrialsLeft) {
  // Racing under fewer_sms_8, the first perturbation tried: the order depends on scheduling and no bound can
  // be claimed, whatever busy_sms_4 would show; it is not run, and says why.
  SyntheticKernel k = fma_kernel();
  k.under_perturbation.emplace("fewer_sms_8", halves_tree(64));
  k.alternate_under.insert("fewer_sms_8");
  const Report r = explain_kernel(k, quick());
  EXPECT_EQ(r.schedule.verdict, "depends") << r.schedule.text;
  EXPECT_EQ(r.schedule.exposed_by, "fewer_sms_8");
  const ScheduleTrial* busy = trial(r, "busy_sms_4");
  ASSERT_NE(busy, nullptr);
  EXPECT_TRUE(contains(busy->not_applied, "not tried: the order already depends on scheduling, and an order seen "
                                          "under fewer_sms_8 could not be revealed"))
      << busy->not_applied;
  EXPECT_EQ(busy->launches, 0);
  EXPECT_EQ(busy->entries, 0);
  EXPECT_FALSE(r.numerics.has_value());
}

TEST(ExplainSchedule, ManyOrdersAtOnceAreCountedNotRevealedOneByOne) {
  // Under fewer_sms_8 each row sums in a split-K of its own (12 split points): more orders than the stage
  // lists. The first trial's new orders are more than it reveals one by one, so every entry that left its
  // order is counted in one variant, not revealed, with the number of orders seen; the report stays short.
  SyntheticKernel k = fma_kernel();
  std::vector<SummationTree> trees;
  for (int s = 4; s < 64; s += 5) trees.push_back(split_at_tree(64, s));
  ASSERT_EQ(trees.size(), 12u);
  k.by_row_under.emplace("fewer_sms_8", trees);
  Options o = quick();
  o.schedule_pairs = 64;  // enough random pairs to tell the 12 split points apart
  const Report r = explain_kernel(k, o);
  EXPECT_EQ(r.schedule.verdict, "depends") << r.schedule.text;
  ASSERT_EQ(r.schedule.variants.size(), 1u) << r.schedule.text;
  const ScheduleVariant& v = r.schedule.variants[0];
  EXPECT_FALSE(v.revealed);
  EXPECT_EQ(v.first_seen, "fewer_sms_8");
  EXPECT_TRUE(contains(v.why, "more than 8 orders were seen (under fewer_sms_8, ")) << v.why;
  const ScheduleTrial* t = trial(r, "fewer_sms_8");
  ASSERT_NE(t, nullptr);
  EXPECT_EQ(t->entries - t->following, v.entries);
  EXPECT_EQ(t->unexplained, v.entries);
  EXPECT_GT(v.entries, 0);
  EXPECT_FALSE(r.numerics.has_value()) << "a bound was claimed over orders never revealed";
  EXPECT_LT(r.schedule.text.size(), 2000u) << r.schedule.text;
}

TEST(ExplainSchedule, RefusedPerturbationsAreListedWithTheirReason) {
  SyntheticKernel k = fma_kernel();
  k.refuse = "no green contexts in this driver";
  const Report r = explain_kernel(k, quick());
  ASSERT_TRUE(r.identified) << r.summary();
  EXPECT_EQ(r.schedule.verdict, "unchanged");  // repeat and shuffled_launches ran
  for (const char* name : {"fewer_sms_8", "busy_sms_4"}) {
    const ScheduleTrial* t = trial(r, name);
    ASSERT_NE(t, nullptr);
    EXPECT_EQ(t->not_applied, "no green contexts in this driver");
    EXPECT_EQ(t->entries, 0);
  }
  EXPECT_TRUE(contains(r.schedule.text, "busy_sms_4 (no green contexts in this driver)")) << r.schedule.text;
}

TEST(ExplainSchedule, OrderChangingBetweenUndisturbedCallsStopsAtTheTreeWithTheStagesWords) {
  SyntheticKernel k(64, 64, 64, Format::fp16, blocked_tree(64, 16, true), model_of(tc::Instruction::mma_m16n8k16_f16_f32));
  k.other_tree = sequential_tree(64);
  k.alternate_calls = true;
  const Report r = explain_kernel(k, quick());
  EXPECT_FALSE(r.identified);
  EXPECT_EQ(r.failed_stage, "tree") << r.summary();
  EXPECT_FALSE(r.tree.deterministic);
  EXPECT_EQ(r.schedule.verdict, "depends");
  EXPECT_TRUE(contains(r.reason, "the order depends on scheduling")) << r.reason;
  EXPECT_FALSE(r.numerics.has_value());
}

TEST(ExplainSchedule, OrderRacingSoThatNoTreeFormsIsStillReportedAsDependingOnScheduling) {
  // Every other call sums pairwise instead of in one chain: the tree stage's counts form no tree at
  // all, yet the scheduling stage, comparing each entry with itself call to call, says why.
  SyntheticKernel k = fma_kernel();
  k.other_tree = pairwise_tree(64);
  k.alternate_calls = true;
  const Report r = explain_kernel(k, quick());
  EXPECT_FALSE(r.identified);
  EXPECT_EQ(r.failed_stage, "tree") << r.summary();
  EXPECT_TRUE(r.tree.text.empty()) << "a tree formed: " << r.tree.text;
  EXPECT_EQ(r.schedule.verdict, "depends") << r.schedule.text;
  // (Strict alternation: the repeat's launches fall on the baseline's parities, the shuffled ones do not.)
  EXPECT_TRUE(contains(r.reason, "the order depends on scheduling: first seen under shuffled_launches")) << r.reason;
}

TEST(ExplainSchedule, AVariantIsBoundedByItsOwnRecord) {
  // Under fewer_sms_8 the FMA chain becomes two chains over the halves added at the end, revealed. The
  // numerics record holds any revealed tree (record_for: a named order, else the tree itself), so the
  // variant has its own record and bound, and the kernel is judged by the larger of the two bounds.
  SyntheticKernel k = fma_kernel();
  k.under_perturbation.emplace("fewer_sms_8", halves_tree(64));
  const Report r = explain_kernel(k, quick());
  ASSERT_TRUE(r.identified) << r.summary();
  ASSERT_EQ(r.schedule.variants.size(), 1u);
  EXPECT_TRUE(r.schedule.variants[0].revealed);
  const std::optional<Numerics> own = record_for(halves_tree(64), Format::fp32, Format::fp32, Conversion::as_is, {});
  ASSERT_TRUE(own.has_value());
  ASSERT_TRUE(r.numerics.has_value()) << r.schedule.bound_note;
  EXPECT_TRUE(r.schedule.bound_note.empty()) << r.schedule.bound_note;
  const double judged = gamma_bound_factor(bound_model(*r.numerics, 64));
  EXPECT_GE(judged, gamma_bound_factor(bound_model(*own, 64)));
  const std::optional<Numerics> chain = record_for(r.tree.tree, Format::fp32, Format::fp32, Conversion::as_is, {});
  ASSERT_TRUE(chain.has_value());
  EXPECT_GE(judged, gamma_bound_factor(bound_model(*chain, 64)));
}

TEST(ExplainSchedule, OrderThatDiffersByPositionIsNotTakenForScheduling) {
  // Rows from 16 on sum in another order (a stream-K tail): every entry keeps its own order in every
  // trial, so the verdict is unchanged, and the tree stage still says the entries differ.
  SyntheticKernel k = fma_kernel();
  k.other_tree = halves_tree(64);
  k.other_from_row = 16;
  const Report r = explain_kernel(k, quick());
  EXPECT_FALSE(r.identified);
  EXPECT_EQ(r.failed_stage, "tree") << r.summary();
  EXPECT_GT(r.tree.entries_differing, 0);
  EXPECT_EQ(r.schedule.verdict, "unchanged") << r.schedule.text;
  for (const ScheduleTrial& t : r.schedule.trials) EXPECT_EQ(t.following, t.entries) << t.perturbation;
}

TEST(ExplainSchedule, OffSkipsTheStage) {
  SyntheticKernel k = fma_kernel();
  k.under_perturbation.emplace("fewer_sms_8", halves_tree(64));
  Options o = quick();
  o.schedule = false;
  const Report r = explain_kernel(k, o);
  ASSERT_TRUE(r.identified) << r.summary();
  EXPECT_FALSE(r.schedule.ran);
  EXPECT_EQ(r.schedule.verdict, "");
  EXPECT_TRUE(r.schedule.trials.empty());
}

// Bad input at the Oracle level: the report stops where the kernel failed, names the call and keeps
// the message, and never identifies.
TEST(ExplainBadInput, KernelRaisingOnItsThirdCallStopsThere) {
  SyntheticKernel k = fma_kernel();
  Failing f(k, 3, "the callable raised ValueError: boom", How::raised);
  const Report r = explain_kernel(f, quick());
  EXPECT_FALSE(r.identified);
  EXPECT_FALSE(r.oracle_lost);
  // Stage 1 takes two launches (zeros, then single products): the third is the tree's first.
  EXPECT_EQ(r.failed_stage, "tree") << r.summary();
  EXPECT_EQ(r.reason, "call 3: the callable raised ValueError: boom");
  EXPECT_EQ(r.launches, 3);
  EXPECT_FALSE(r.numerics.has_value());
}

TEST(ExplainBadInput, KernelFailingLateStopsAtThatStageNeverIdentified) {
  SyntheticKernel k = fma_kernel();
  Options o = quick();
  Failing never(k, -1, "", How::raised);
  const Report clean = explain_kernel(never, o);
  ASSERT_TRUE(clean.identified) << clean.summary();
  const long long total = clean.launches;
  ASSERT_GT(total, 10);
  // At every stage: half way (the scheduling stage's trials, under a perturbation among them), the last
  // launches (the composition). An output that is not C stops explain wherever it comes.
  for (long long at : {total / 4, total / 2, 3 * total / 4, total - 1, total}) {
    SyntheticKernel again = fma_kernel();
    Failing f(again, at, "the callable returned a tensor of shape (32, 31)", How::bad_output);
    const Report r = explain_kernel(f, o);
    EXPECT_FALSE(r.identified) << "failing at launch " << at << " of " << total;
    EXPECT_FALSE(r.failed_stage.empty());
    EXPECT_TRUE(contains(r.reason, "shape (32, 31)")) << r.reason;
  }
}

TEST(ExplainBadInput, LostOracleKeepsTheFinishedStagesAndIdentifiesNothing) {
  SyntheticKernel never = fma_kernel();
  std::vector<std::string> began;  // Options::on_stage, as a worker process reports it to its parent
  Options o = quick();
  o.on_stage = [&](const Report&, const std::string& stage) { began.push_back(stage); };
  const Report clean = explain_kernel(never, o);
  ASSERT_TRUE(clean.identified) << clean.summary();
  // The composition's kernel runs come before the scheduling stage, its comparison after (its predictions
  // made on the CPU beside the scheduling stage's launches).
  const std::vector<std::string> order{"gemm", "tree", "conversion", "nodes", "composition", "scheduling", "composition"};
  EXPECT_EQ(began, order);
  ASSERT_EQ(clean.stage_times.size(), order.size());
  // A lost launch in every stage that launches: the first launch of each.
  std::vector<long long> first_launch;
  std::set<std::string> launching;  // the stages that launch (this FMA kernel's nodes stage has no node to probe)
  long long before = 0;
  for (const Report::StageTime& t : clean.stage_times) {
    if (t.launches > 0) first_launch.push_back(before + 1), launching.insert(t.stage);
    before += t.launches;
  }
  EXPECT_EQ(launching, (std::set<std::string>{"gemm", "tree", "conversion", "composition", "scheduling"}));
  std::set<std::string> stopped_at;
  for (long long at : first_launch) {
    SyntheticKernel k = fma_kernel();
    Failing f(k, at, "CUDA error cudaErrorIllegalAddress: the CUDA context of this process is lost", How::lost);
    Report at_stage;  // the report as the stage that failed began
    o.on_stage = [&](const Report& r, const std::string&) { at_stage = r; };
    const Report r = explain_kernel(f, o);
    EXPECT_FALSE(r.identified);
    EXPECT_TRUE(r.oracle_lost);
    EXPECT_TRUE(contains(r.reason, "call " + std::to_string(at) + ": CUDA error cudaErrorIllegalAddress")) << r.reason;
    EXPECT_FALSE(r.numerics.has_value()) << "nothing is identified";
    EXPECT_TRUE(r.behaves_like.empty());
    EXPECT_TRUE(r.comparisons.empty()) << "no comparison of a composition that did not finish";
    stopped_at.insert(r.failed_stage);
    // Every stage finished before the failed one is kept as the clean run found it.
    const auto done = std::find(order.begin(), order.end(), r.failed_stage) - order.begin();
    ASSERT_LT(done, static_cast<long>(order.size())) << r.failed_stage;
    if (done > 1) EXPECT_EQ(r.tree.text, clean.tree.text) << "failed at " << r.failed_stage;
    if (done > 2) EXPECT_EQ(r.conversion.ok, clean.conversion.ok) << "failed at " << r.failed_stage;
    if (done > 3) EXPECT_EQ(r.nodes.ok, clean.nodes.ok) << "failed at " << r.failed_stage;
    if (done <= 1) EXPECT_TRUE(r.tree.text.empty()) << "the tree stage did not finish";
    if (r.failed_stage != "scheduling") EXPECT_FALSE(r.schedule.ran) << "failed at " << r.failed_stage;
    EXPECT_EQ(at_stage.tree.text, r.tree.text) << "the report the stage began with holds what the lost one does";
  }
  EXPECT_EQ(stopped_at, launching) << "a lost launch in each stage that launches stops explain there";
}

TEST(ExplainBadInput, KernelFailingUnderAPerturbationIsThatTrialsNotTheKernels) {
  // A launch that fails only under a perturbation (a framework that cannot run in a green context)
  // leaves that trial not applied, with the message; the kernel is identified from the rest.
  class FailsUnder : public SyntheticKernel {
   public:
    using SyntheticKernel::SyntheticKernel;
    std::string perturb(int i) override {
      now = i;
      return SyntheticKernel::perturb(i);
    }
    std::vector<std::uint64_t> run_sparse(const SparseInputs& in, const std::vector<Entry>& entries) override {
      if (now == 0) throw KernelFailed("the callable raised RuntimeError: invalid resource handle");
      return SyntheticKernel::run_sparse(in, entries);
    }
    int now = -1;
  };
  FailsUnder k(32, 32, 64, Format::fp32, sequential_tree(64), [](int) { return std::nullopt; });
  k.offered = {{"fewer_sms_8", "in a green context of 8 SMs"}, {"busy_sms_4", "beside a kernel holding 4 SMs"}};
  const Report r = explain_kernel(k, quick());
  ASSERT_TRUE(r.identified) << r.summary();
  const ScheduleTrial* t = trial(r, "fewer_sms_8");
  ASSERT_NE(t, nullptr);
  EXPECT_TRUE(contains(t->not_applied, "the kernel failed under it: the callable raised RuntimeError")) << t->not_applied;
  EXPECT_EQ(r.schedule.verdict, "unchanged");
}
