// Where explain's time goes (reference/explain.hpp Report::stage_times, Comparison's seconds): every
// stage that ran, in order, with its time and launches adding up to the report's; a kernel that fails
// a stage ends the list at that stage. Synthetic CPU kernels, as tests/cpu/test_explain.cpp.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "reference/explain.hpp"
#include "reference/summation_tree.hpp"
#include "reference/tc_model.hpp"

using namespace gemmlab;
using namespace gemmlab::explain;

namespace {

emulation::NodeModel model_of(tc::Instruction ins) {
  const tc::TcParams p = *tc::measured_hopper_params(ins);
  const int k = tc::info(ins).k;
  return [p, k](int leaves) -> std::optional<tc::TcParams> { return leaves == k ? std::optional(p) : std::nullopt; };
}

Options quick() {
  Options o;
  o.distributions = {"uniform_0_1", "normal_0_1"};
  o.verify_pairs = 16;
  o.max_probes = 4000;
  return o;
}

std::vector<std::string> names(const Report& r) {
  std::vector<std::string> n;
  for (const Report::StageTime& t : r.stage_times) n.push_back(t.stage);
  return n;
}

TEST(ExplainStages, EveryStageHasItsTimeAndLaunchesAddingUpToTheReports) {
  SyntheticKernel k(64, 64, 128, Format::fp16, blocked_tree(128, 16, true), model_of(tc::Instruction::mma_m16n8k16_f16_f32));
  const Report r = explain_kernel(k, quick());
  ASSERT_TRUE(r.identified) << r.summary();
  // The composition runs the kernel before the scheduling stage and compares after it (its predictions made
  // on the CPU beside the scheduling stage's launches).
  EXPECT_EQ(names(r), (std::vector<std::string>{"gemm", "tree", "conversion", "nodes", "composition", "scheduling",
                                                "composition"}));
  double seconds = 0;
  long long launches = 0;
  for (std::size_t i = 0; i < r.stage_times.size(); ++i) {
    const Report::StageTime& t = r.stage_times[i];
    EXPECT_GE(t.seconds, 0) << t.stage;
    if (i + 1 < r.stage_times.size())
      EXPECT_GT(t.launches, 0) << t.stage << ": every stage launches the kernel, but the comparison";
    else
      EXPECT_EQ(t.launches, 0) << "the comparison launches nothing (one order here: no variant to emulate)";
    seconds += t.seconds;
    launches += t.launches;
  }
  EXPECT_EQ(launches, r.launches);
  EXPECT_LE(seconds, r.seconds + 1e-9);
  EXPECT_GE(seconds, 0.9 * r.seconds) << "the stages cover the report's time";
  EXPECT_NEAR(r.stage_times[1].seconds, r.tree.seconds, 0.05 * r.seconds + 1e-3);
  // The kernel's runs in the composition's first part; the predictions from then to the comparison's end.
  const double runs = r.stage_times[4].seconds,
               predicting = r.stage_times[4].seconds + r.stage_times[5].seconds + r.stage_times[6].seconds;
  ASSERT_EQ(r.comparisons.size(), 2u);
  double run = 0, predicted = 0;
  for (const Comparison& c : r.comparisons) {
    EXPECT_GT(c.run_seconds, 0) << c.distribution;
    EXPECT_GT(c.prediction_seconds, 0) << c.distribution;
    run += c.run_seconds;
    predicted += c.prediction_seconds;
  }
  EXPECT_LE(run, runs + 1e-9);
  EXPECT_LE(predicted, predicting + 1e-9);
}

TEST(ExplainStages, AFailedStageEndsTheList) {
  SyntheticKernel k(64, 64, 64, Format::fp32, sequential_tree(64), [](int) { return std::nullopt; });
  k.add_constant = 1.0;  // not a GEMM: C + 1
  const Report r = explain_kernel(k, quick());
  ASSERT_FALSE(r.identified);
  EXPECT_EQ(r.failed_stage, "gemm");
  EXPECT_EQ(names(r), std::vector<std::string>{"gemm"});
  EXPECT_EQ(r.stage_times[0].launches, r.launches);
}

}  // namespace

namespace {

// Fails its first call (the kernel raised, as a callable that cannot compile does), then answers as `inner`.
class FailsFirstCall : public ForwardingOracle {
 public:
  explicit FailsFirstCall(Oracle& inner) : ForwardingOracle(inner) {}

 private:
  void before_launch() override {
    if (++launches == 1) throw KernelFailed("call 1: the kernel could not be compiled");
  }
};

}  // namespace

TEST(ExplainStages, TheFirstCallIsMadeBeforeTheClockAndTheStagesAreExplainsOwn) {
  SyntheticKernel plain(64, 64, 128, Format::fp16, blocked_tree(128, 16, true), model_of(tc::Instruction::mma_m16n8k16_f16_f32));
  const Report without = explain_kernel(plain, quick());
  ASSERT_TRUE(without.identified) << without.summary();
  EXPECT_EQ(without.first_call_seconds, 0);
  SyntheticKernel k(64, 64, 128, Format::fp16, blocked_tree(128, 16, true), model_of(tc::Instruction::mma_m16n8k16_f16_f32));
  Options o = quick();
  o.first_call = true;
  const Report r = explain_kernel(k, o);
  ASSERT_TRUE(r.identified) << r.summary();
  EXPECT_GT(r.first_call_seconds, 0);
  EXPECT_EQ(k.launches, r.launches + 1) << "one call before the stages, not counted in them";
  long long launches = 0;
  for (const Report::StageTime& t : r.stage_times) launches += t.launches;
  EXPECT_EQ(launches, r.launches);
  EXPECT_EQ(names(r), (std::vector<std::string>{"gemm", "tree", "conversion", "nodes", "composition", "scheduling",
                                                "composition"}));
  EXPECT_NE(r.summary().find("first call (before explain's clock"), std::string::npos) << r.summary();
  // The same answer as without it.
  EXPECT_EQ(r.numerics_text, without.numerics_text);
  EXPECT_EQ(r.tree.form, without.tree.form);
}

TEST(ExplainStages, AFirstCallThatFailsIsTheGemmStagesFailure) {
  SyntheticKernel k(64, 64, 128, Format::fp16, blocked_tree(128, 16, true), model_of(tc::Instruction::mma_m16n8k16_f16_f32));
  FailsFirstCall f(k);
  Options o = quick();
  o.first_call = true;
  const Report r = explain_kernel(f, o);
  EXPECT_FALSE(r.identified);
  EXPECT_EQ(r.failed_stage, "gemm");
  EXPECT_NE(r.reason.find("call 1: the kernel could not be compiled"), std::string::npos) << r.reason;
  EXPECT_EQ(names(r), std::vector<std::string>{"gemm"});
}

// Options::emulate (a GPU's predictions in gemmlab explain): the distributions it takes are predicted by it, before
// the scheduling stage, the others by the host as without it; every output is compared either way, and
// Report::predicted_on_gpu counts the outputs it predicted. Here a stand-in that computes emulate_tree_at's
// outputs itself (the same bits), after the operands' conversion, for the first distribution only.
TEST(ExplainStages, AnEmulatorPredictsWhatItTakesAndTheHostTheRest) {
  SyntheticKernel k(64, 64, 128, Format::fp32, blocked_tree(128, 8, true), model_of(tc::Instruction::mma_m16n8k8_tf32_f32),
                    Conversion::tf32_rna, Conversion::tf32_rna);
  Options opt = quick();
  int calls = 0, taken = 0;
  bool converted = true;
  opt.emulate = [&](const SummationTree& t, const emulation::NodeModel& m, const Matrix& A, const Matrix& B,
                    const std::vector<std::pair<int, int>>& entries, int threads,
                    const emulation::SplitScheme* split) -> std::optional<std::vector<double>> {
    for (double v : A.v) converted = converted && convert(Conversion::tf32_rna, v) == v;
    if (calls++ > 0) return std::nullopt;
    ++taken;
    return emulation::emulate_tree_at(t, m, A, B, entries, threads, split);
  };
  const Report r = explain_kernel(k, opt);
  ASSERT_TRUE(r.identified) << r.summary();
  EXPECT_EQ(r.conversion.a, Conversion::tf32_rna);
  EXPECT_TRUE(converted) << "the emulator is handed the operands as the multiplier reads them";
  EXPECT_EQ(calls, 2);  // once per distribution
  EXPECT_EQ(taken, 1);
  ASSERT_EQ(r.comparisons.size(), 2u);
  for (const Comparison& c : r.comparisons) {
    EXPECT_EQ(c.mismatches, 0) << c.distribution;
    EXPECT_GT(c.outputs, 0) << c.distribution;
  }
  EXPECT_EQ(r.predicted_on_gpu, r.comparisons[0].outputs);
  EXPECT_EQ(names(r), (std::vector<std::string>{"gemm", "tree", "conversion", "nodes", "composition", "scheduling",
                                                "composition"}));
}
