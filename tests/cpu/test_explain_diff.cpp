// `gemmlab explain --diff` (reference/explain/diff.hpp) on pairs of synthetic CPU kernels whose
// numerics differ in one known aspect, or not at all: the diff must name exactly that aspect, and its
// witness must be an input on which the two kernels' bits really differ (run again here from the
// witness's own row and column); two kernels of the same numerics must be bit-identical by
// construction, confirmed on every output of full random inputs.
#include <gtest/gtest.h>

#include <string>

#include "reference/explain.hpp"
#include "reference/explain/diff.hpp"
#include "reference/kernel_emulation.hpp"
#include "reference/summation_tree.hpp"
#include "reference/tc_model.hpp"

using namespace gemmlab;
using namespace gemmlab::explain;

namespace {

emulation::NodeModel model_of(tc::TcParams p, int k) {
  return [p, k](int leaves) -> std::optional<tc::TcParams> {
    if (leaves != k) return std::nullopt;
    return p;
  };
}

emulation::NodeModel model_of(tc::Instruction ins) {
  return model_of(*tc::measured_hopper_params(ins), tc::info(ins).k);
}

emulation::NodeModel no_fused_nodes() {
  return [](int) -> std::optional<tc::TcParams> { return std::nullopt; };
}

DiffOptions quick() {
  DiffOptions o;
  o.explain.distributions = {"uniform_0_1", "normal_0_1"};
  o.explain.verify_pairs = 16;
  o.explain.max_probes = 4000;
  return o;
}

// The kernel's bits at the witness's entry, run from the witness's row of A and column of B alone.
std::uint64_t rerun(Oracle& k, const Difference& d) {
  SparseInputs in;
  in.a_rows.push_back(d.a_row);
  in.b_cols.push_back(d.b_col);
  return k.run_sparse(in, {d.entry})[0];
}

// Exactly one difference, of `aspect`, whose witness gives different bits on a and b, as recorded.
void expect_only(const DiffReport& r, const std::string& aspect, Oracle& a, Oracle& b) {
  ASSERT_EQ(r.verdict, "different") << r.summary();
  ASSERT_EQ(r.differences.size(), 1u) << r.summary();
  const Difference& d = r.differences[0];
  EXPECT_EQ(d.aspect, aspect) << r.summary();
  ASSERT_TRUE(d.confirmed) << r.summary();
  EXPECT_NE(d.a_bits, d.b_bits) << r.summary();
  EXPECT_EQ(rerun(a, d), d.a_bits) << r.summary();
  EXPECT_EQ(rerun(b, d), d.b_bits) << r.summary();
  // Both identified: each report predicts its own kernel's bits there.
  ASSERT_TRUE(d.a_predicted && d.b_predicted) << r.summary();
  EXPECT_EQ(*d.a_predicted, d.a_bits) << r.summary();
  EXPECT_EQ(*d.b_predicted, d.b_bits) << r.summary();
  EXPECT_TRUE(r.not_compared.empty()) << r.summary();
  EXPECT_EQ(r.same.size(), 4u) << r.summary();  // the other four of scheduling, tree, conversion, nodes, output
}

// In-MMA blocks of 16 from the last block to the first (Triton walking K downwards).
SummationTree reversed_blocks(int K, int block) {
  SummationTree t(K);
  int cur = -1;
  for (int b0 = K - block; b0 >= 0; b0 -= block) {
    std::vector<int> ch;
    if (cur >= 0) ch.push_back(cur);
    for (int k = b0; k < b0 + block; ++k) ch.push_back(k);
    cur = t.add_node(ch);
  }
  return t;
}

}  // namespace

TEST(ExplainDiff, SameNumericsAreBitIdenticalByConstruction) {
  SyntheticKernel a(64, 64, 64, Format::fp16, blocked_tree(64, 16, true), model_of(tc::Instruction::mma_m16n8k16_f16_f32));
  SyntheticKernel b(64, 64, 64, Format::fp16, blocked_tree(64, 16, true), model_of(tc::Instruction::mma_m16n8k16_f16_f32));
  const DiffReport r = explain_diff(a, b, "a", "b", quick());
  ASSERT_TRUE(r.a.identified && r.b.identified) << r.summary();
  EXPECT_EQ(r.verdict, "identical_by_construction") << r.summary();
  EXPECT_TRUE(r.differences.empty()) << r.summary();
  EXPECT_EQ(r.same.size(), 5u) << r.summary();
  ASSERT_EQ(r.comparisons.size(), 2u);
  for (const DiffComparison& c : r.comparisons) {
    EXPECT_EQ(c.outputs, 64 * 64) << c.distribution;  // every output
    EXPECT_EQ(c.differing, 0) << c.distribution;
    EXPECT_EQ(c.a_unstable + c.b_unstable, 0) << c.distribution;
  }
  EXPECT_NE(r.summary().find("bit-identical by construction"), std::string::npos) << r.summary();
}

TEST(ExplainDiff, ChainVersusPairwiseIsTheTree) {
  SyntheticKernel a(32, 32, 64, Format::fp32, sequential_tree(64), no_fused_nodes());
  SyntheticKernel b(32, 32, 64, Format::fp32, pairwise_tree(64), no_fused_nodes());
  const DiffReport r = explain_diff(a, b, "chain", "pairwise", quick());
  expect_only(r, "tree", a, b);
  EXPECT_NE(r.differences[0].note.find("meet in a node of"), std::string::npos) << r.summary();
  for (const DiffComparison& c : r.comparisons) EXPECT_GT(c.differing, 0) << c.distribution;
}

TEST(ExplainDiff, BlocksInReversedOrderIsTheTree) {
  SyntheticKernel a(32, 32, 64, Format::fp16, blocked_tree(64, 16, true), model_of(tc::Instruction::mma_m16n8k16_f16_f32));
  SyntheticKernel b(32, 32, 64, Format::fp16, reversed_blocks(64, 16), model_of(tc::Instruction::mma_m16n8k16_f16_f32));
  const DiffReport r = explain_diff(a, b, "increasing", "decreasing", quick());
  expect_only(r, "tree", a, b);
  // The first pair whose products meet in nodes of different sizes: products 0 and 1 meet in the
  // first node (16 products) going up, in the last (all 64) going down.
  const auto pq = first_differing_pair(blocked_tree(64, 16, true), reversed_blocks(64, 16));
  ASSERT_TRUE(pq);
  EXPECT_EQ(*pq, std::make_pair(0, 1));
  EXPECT_EQ(lca_size(reversed_blocks(64, 16), 0, 1), 64);
}

TEST(ExplainDiff, Tf32NearestEvenVersusAwayIsTheOperandConversion) {
  const auto tf32 = model_of(tc::Instruction::mma_m16n8k8_tf32_f32);
  SyntheticKernel a(32, 32, 64, Format::fp32, blocked_tree(64, 8, true), tf32, Conversion::tf32_rne, Conversion::tf32_rne);
  SyntheticKernel b(32, 32, 64, Format::fp32, blocked_tree(64, 8, true), tf32, Conversion::tf32_rna, Conversion::tf32_rna);
  const DiffReport r = explain_diff(a, b, "rne", "rna", quick());
  expect_only(r, "operand_conversion", a, b);
  // The witness is a single product at a tie of tf32: 1 + 2^-11 goes to 1 (even) and 1 + 2^-10 (away).
  const Difference& d = r.differences[0];
  EXPECT_EQ(from_bits(Format::fp32, d.a_bits), 1.0) << r.summary();
  EXPECT_EQ(from_bits(Format::fp32, d.b_bits), 1 + 0x1p-10) << r.summary();
}

TEST(ExplainDiff, TruncatingVersusNearestAccumulationIsTheNodeArithmetic) {
  const tc::TcParams cut = *tc::measured_hopper_params(tc::Instruction::mma_m16n8k16_f16_f32);
  tc::TcParams nearest = cut;
  nearest.align_rounding = Rounding::nearest_even;
  nearest.output_rounding = Rounding::nearest_even;
  SyntheticKernel a(32, 32, 64, Format::fp16, blocked_tree(64, 16, true), model_of(cut, 16));
  SyntheticKernel b(32, 32, 64, Format::fp16, blocked_tree(64, 16, true), model_of(nearest, 16));
  const DiffReport r = explain_diff(a, b, "truncating", "nearest", quick());
  expect_only(r, "node_arithmetic", a, b);
}

TEST(ExplainDiff, Fp32VersusBf16OutputIsTheOutputConversion) {
  SyntheticKernel a(32, 32, 64, Format::bf16, blocked_tree(64, 16, true), model_of(tc::Instruction::mma_m16n8k16_bf16_f32));
  SyntheticKernel b(32, 32, 64, Format::bf16, blocked_tree(64, 16, true), model_of(tc::Instruction::mma_m16n8k16_bf16_f32));
  b.output_format = Format::bf16;
  const DiffReport r = explain_diff(a, b, "fp32_out", "bf16_out", quick());
  ASSERT_EQ(r.verdict, "different") << r.summary();
  ASSERT_EQ(r.differences.size(), 1u) << r.summary();
  const Difference& d = r.differences[0];
  EXPECT_EQ(d.aspect, "output_conversion");
  ASSERT_TRUE(d.confirmed) << r.summary();
  // The values differ (1 + 2^-8 exactly in fp32, rounded to 1 in bf16), each as the report predicts.
  EXPECT_NE(from_bits(Format::fp32, d.a_bits), from_bits(Format::bf16, d.b_bits)) << r.summary();
  EXPECT_EQ(rerun(a, d), d.a_bits);
  EXPECT_EQ(rerun(b, d), d.b_bits);
  ASSERT_TRUE(d.a_predicted && d.b_predicted) << r.summary();
  EXPECT_EQ(*d.a_predicted, d.a_bits);
  EXPECT_EQ(*d.b_predicted, d.b_bits);
}

TEST(ExplainDiff, AnOrderThatChangesBetweenCallsIsScheduling) {
  SyntheticKernel a(32, 32, 64, Format::fp16, blocked_tree(64, 16, true), model_of(tc::Instruction::mma_m16n8k16_f16_f32));
  a.other_tree = sequential_tree(64);
  a.alternate_calls = true;
  SyntheticKernel b(32, 32, 64, Format::fp16, blocked_tree(64, 16, true), model_of(tc::Instruction::mma_m16n8k16_f16_f32));
  const DiffReport r = explain_diff(a, b, "racing", "steady", quick());
  ASSERT_EQ(r.verdict, "different") << r.summary();
  ASSERT_EQ(r.differences.size(), 1u) << r.summary();
  EXPECT_EQ(r.differences[0].aspect, "scheduling");
  EXPECT_TRUE(r.differences[0].confirmed) << r.summary();  // a's two launches of the full inputs differ
  long long unstable = 0;
  for (const DiffComparison& c : r.comparisons) {
    unstable += c.a_unstable;
    EXPECT_EQ(c.b_unstable, 0);
  }
  EXPECT_GT(unstable, 0);
  for (const std::string& x : r.same) EXPECT_NE(x.rfind("scheduling", 0), 0u) << r.summary();
  // The later stages were not reached for the racing kernel: said, not guessed.
  EXPECT_FALSE(r.not_compared.empty()) << r.summary();
}

TEST(ExplainDiff, AnOrderThatChangesUnderAPerturbationIsScheduling) {
  // Undisturbed both are one FMA chain; under fewer_sms_8 the first splits K in two halves added at the
  // end (a split-K sized by the SMs it sees): only the scheduling differs, and the witness, launched
  // under that perturbation, gives bits the steady kernel does not.
  const int K = 64;
  SyntheticKernel a(32, 32, K, Format::fp32, sequential_tree(K), no_fused_nodes());
  a.offered = {{"fewer_sms_8", "in a green context of 8 SMs"}};
  SummationTree halves(K);
  {
    int part[2];
    for (int h = 0; h < 2; ++h) {
      int node = halves.add_node({h * K / 2, h * K / 2 + 1});
      for (int k = h * K / 2 + 2; k < (h + 1) * K / 2; ++k) node = halves.add_node({node, k});
      part[h] = node;
    }
    halves.add_node({part[0], part[1]});
  }
  a.under_perturbation.emplace("fewer_sms_8", halves);
  SyntheticKernel b(32, 32, K, Format::fp32, sequential_tree(K), no_fused_nodes());
  const DiffReport r = explain_diff(a, b, "sized_by_sms", "one_chain", quick());
  ASSERT_TRUE(r.a.identified && r.b.identified) << r.summary();
  EXPECT_EQ(r.a.schedule.verdict, "depends");
  ASSERT_EQ(r.verdict, "different") << r.summary();
  ASSERT_EQ(r.differences.size(), 1u) << r.summary();
  const Difference& d = r.differences[0];
  EXPECT_EQ(d.aspect, "scheduling");
  ASSERT_TRUE(d.confirmed) << r.summary();
  EXPECT_NE(d.a_bits, d.b_bits);
  EXPECT_EQ(r.same.size(), 4u) << r.summary();  // the tree at rest, conversion, nodes, output
  // Again from the witness's row and column: under the perturbation a's bits, undisturbed b's (and a's
  // own undisturbed bits are b's: at rest the two are the same).
  ASSERT_EQ(a.perturb(0), "");
  EXPECT_EQ(rerun(a, d), d.a_bits) << r.summary();
  ASSERT_EQ(a.perturb(-1), "");
  EXPECT_EQ(rerun(b, d), d.b_bits) << r.summary();
  EXPECT_EQ(rerun(a, d), d.b_bits) << r.summary();
}

TEST(ExplainDiff, AnUnidentifiedKernelLeavesTheRestUncompared) {
  SyntheticKernel a(32, 32, 64, Format::fp16, blocked_tree(64, 16, true), model_of(tc::Instruction::mma_m16n8k16_f16_f32));
  a.add_constant = 0.5;  // not a GEMM: explain stops at its first stage
  SyntheticKernel b(32, 32, 64, Format::fp16, blocked_tree(64, 16, true), model_of(tc::Instruction::mma_m16n8k16_f16_f32));
  const DiffReport r = explain_diff(a, b, "plus_half", "gemm", quick());
  EXPECT_FALSE(r.a.identified);
  // scheduling, tree, conversion, nodes: the stages after gemm (scheduling too: it never ran for plus_half)
  EXPECT_EQ(r.not_compared.size(), 4u) << r.summary();
  EXPECT_NE(r.summary().find("scheduling: plus_half stopped at gemm, before its scheduling stage"), std::string::npos)
      << r.summary();
  // Their bits differ on full inputs: an unexplained difference, with its entry.
  ASSERT_EQ(r.differences.size(), 1u) << r.summary();
  EXPECT_EQ(r.differences[0].aspect, "unexplained");
  EXPECT_TRUE(r.differences[0].confirmed);
  EXPECT_NE(r.differences[0].note.find("not compared"), std::string::npos) << r.summary();
}

TEST(ExplainDiff, RefusesKernelsThatCannotTakeTheSameInputs) {
  SyntheticKernel a(32, 32, 64, Format::fp16, blocked_tree(64, 16, true), model_of(tc::Instruction::mma_m16n8k16_f16_f32));
  SyntheticKernel b(32, 32, 128, Format::fp16, blocked_tree(128, 16, true), model_of(tc::Instruction::mma_m16n8k16_f16_f32));
  SyntheticKernel c(32, 32, 64, Format::bf16, blocked_tree(64, 16, true), model_of(tc::Instruction::mma_m16n8k16_bf16_f32));
  EXPECT_THROW(explain_diff(a, b, "a", "b", quick()), std::invalid_argument);
  EXPECT_THROW(explain_diff(a, c, "a", "c", quick()), std::invalid_argument);
  EXPECT_THROW(explain_diff(a, a, "a", "a", quick()), std::invalid_argument);
}

TEST(ExplainDiff, ConversionValuesTellEveryTwoConversionsApart) {
  const std::vector<Conversion> all = candidate_conversions(Format::fp32);
  for (Conversion x : all)
    for (Conversion y : all) {
      if (x == y) continue;
      bool apart = false;
      for (double v : conversion_witness_values()) apart = apart || convert(x, v) != convert(y, v);
      EXPECT_TRUE(apart) << to_string(x) << " vs " << to_string(y);
    }
}

TEST(ExplainDiff, FirstDifferingPairOfTrees) {
  EXPECT_FALSE(first_differing_pair(blocked_tree(64, 16, true), blocked_tree(64, 16, true)));
  // Chain and pairwise: products 0 and 1 meet first in both; 0 and 2 meet in a node of 3 in the chain,
  // of 4 in the pairwise tree.
  const auto pq = first_differing_pair(sequential_tree(64), pairwise_tree(64));
  ASSERT_TRUE(pq);
  EXPECT_EQ(*pq, std::make_pair(0, 2));
  EXPECT_EQ(lca_size(sequential_tree(64), 0, 2), 3);
  EXPECT_EQ(lca_size(pairwise_tree(64), 0, 2), 4);
}
