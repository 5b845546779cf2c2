// `gemmlab explain`'s inference (reference/explain.hpp) on synthetic CPU kernels of known numerics:
// every stage must recover what the kernel does (tree, operand conversion, node arithmetic), the
// composition must predict its outputs bit for bit, and a kernel that is not a GEMM, whose order
// differs between entries or calls, or whose arithmetic no model has, must come back unidentified
// with the stage and the reason, never forced onto the nearest model.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <functional>
#include <map>
#include <set>
#include <string>

#include "reference/distributions.hpp"
#include "reference/error_stats.hpp"
#include "reference/exact_gemm.hpp"
#include "reference/explain.hpp"
#include "reference/fprev.hpp"
#include "reference/kernel_emulation.hpp"
#include "reference/quantized.hpp"
#include "reference/summation_tree.hpp"
#include "reference/tc_model.hpp"
#include "reference/tree_bound.hpp"
#include "reference/tree_form.hpp"

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

Options quick(std::vector<std::string> dists = {"uniform_0_1", "normal_0_1"}) {
  Options o;
  o.distributions = std::move(dists);
  o.verify_pairs = 16;
  o.max_probes = 4000;
  return o;
}

// The blocked in-MMA kernel of an instruction: every stage identified, predicted exactly, named.
void expect_identified(SyntheticKernel& k, const Options& opt, const std::string& expect_numerics) {
  const Report r = explain_kernel(k, opt);
  ASSERT_TRUE(r.identified) << r.summary();
  EXPECT_TRUE(r.tree.ok);
  for (const Comparison& c : r.comparisons) EXPECT_EQ(c.mismatches, 0) << c.distribution;
  ASSERT_TRUE(r.numerics.has_value()) << r.summary();
  EXPECT_TRUE(contains(r.numerics->describe(), expect_numerics)) << r.numerics->describe();
}

}  // namespace

TEST(ExplainConversion, RoundsFp32ToTf32BfloatAndHalfAsNamed) {
  // 1 + 2^-11 is the tie between tf32 neighbours 1 and 1 + 2^-10: even -> 1, away -> 1 + 2^-10.
  EXPECT_EQ(convert(Conversion::tf32_rne, 1 + 0x1p-11), 1.0);
  EXPECT_EQ(convert(Conversion::tf32_rna, 1 + 0x1p-11), 1 + 0x1p-10);
  EXPECT_EQ(convert(Conversion::tf32_rz, 1 + 0x1p-11 + 0x1p-22), 1.0);
  EXPECT_EQ(convert(Conversion::tf32_rne, 1 + 0x1p-11 + 0x1p-22), 1 + 0x1p-10);
  EXPECT_EQ(convert(Conversion::tf32_rna, -(1 + 0x1p-11)), -(1 + 0x1p-10));
  EXPECT_EQ(convert(Conversion::tf32_rne, 1 + 0x1p-10 + 0x1p-11), 1 + 0x1p-9);  // tie, odd: up
  EXPECT_EQ(convert(Conversion::bf16_rne, 1 + 0x1p-8), 1.0);
  EXPECT_EQ(convert(Conversion::fp16_rne, 0x1p20), INFINITY);
  EXPECT_EQ(convert(Conversion::tf32_rne, 0x1.fffffep0), 2.0);
  EXPECT_EQ(convert(Conversion::as_is, 1 + 0x1p-23), 1 + 0x1p-23);
}

TEST(ExplainEntries, DistinctRowsAndColumnsWithTheEdges) {
  const std::vector<Entry> E = choose_entries(300, 200, 200, 1);
  ASSERT_EQ(E.size(), 200u);
  std::set<int> rows, cols;
  for (auto [i, j] : E) {
    rows.insert(i);
    cols.insert(j);
  }
  EXPECT_EQ(rows.size(), 200u);
  EXPECT_EQ(cols.size(), 200u);
  EXPECT_EQ(E[0], Entry(0, 0));
  EXPECT_EQ(E[1], Entry(299, 199));
}

TEST(ExplainTree, BatchedReconstructionAsksFewBatchesAndAgrees) {
  for (const SummationTree& t : {blocked_tree(256, 16, true), blocked_tree(256, 16, false), sequential_tree(64),
                                 pairwise_tree(64), split_blocked_tree(128, 8, 2, true), promoted_tree(256, 32, 128)}) {
    const std::vector<int> sizes = t.lca_sizes();
    const int K = t.leaves();
    int batches = 0;
    SummationTree r = reconstruct_batched(K, [&](const std::vector<std::pair<int, int>>& pairs) {
      ++batches;
      std::vector<int> out;
      for (auto [p, q] : pairs) out.push_back(sizes[static_cast<std::size_t>(p) * K + q]);
      return out;
    });
    EXPECT_EQ(r.canonical(), t.canonical());
    EXPECT_LE(batches, 2 * K) << describe(t);
    EXPECT_EQ(lca_size(t, 0, K - 1), K);
  }
  // A chain of fused blocks takes two batches: the first leaf's row, then every pair in each block.
  const SummationTree chain = blocked_tree(256, 16, true);
  const std::vector<int> sizes = chain.lca_sizes();
  int batches = 0;
  reconstruct_batched(256, [&](const std::vector<std::pair<int, int>>& pairs) {
    ++batches;
    std::vector<int> out;
    for (auto [p, q] : pairs) out.push_back(sizes[static_cast<std::size_t>(p) * 256 + q]);
    return out;
  });
  EXPECT_LE(batches, 3);
}

TEST(ExplainSynthetic, Fp32FmaChain) {
  SyntheticKernel k(64, 64, 64, Format::fp32, sequential_tree(64), [](int) { return std::nullopt; });
  expect_identified(k, quick(), "fma");
  EXPECT_EQ(explain_kernel(k, quick()).conversion.a, Conversion::as_is);
}

TEST(ExplainSynthetic, InMmaFp16) {
  SyntheticKernel k(64, 64, 128, Format::fp16, blocked_tree(128, 16, true), model_of(tc::Instruction::mma_m16n8k16_f16_f32));
  Options o = quick();
  o.known.push_back({"builtin_in_mma", Numerics{.input = Format::fp16, .compute = Format::fp16,
                                                 .accumulation = Accumulation::in_mma,
                                                 .instruction = tc::Instruction::mma_m16n8k16_f16_f32, .k_step = 16,
                                                 .accumulation_rounding = Rounding::toward_zero},
                     *tc::measured_hopper_params(tc::Instruction::mma_m16n8k16_f16_f32)});
  const Report r = explain_kernel(k, o);
  ASSERT_TRUE(r.identified) << r.summary();
  ASSERT_EQ(r.nodes.kinds.size(), 2u);  // the first block (no C) and the chained ones
  for (const NodeKind& nk : r.nodes.kinds) {
    EXPECT_EQ(nk.mismatching, 0);
    if (nk.carry) EXPECT_EQ(nk.params, *tc::measured_hopper_params(tc::Instruction::mma_m16n8k16_f16_f32));
  }
  ASSERT_TRUE(r.numerics);
  EXPECT_EQ(r.numerics->accumulation, Accumulation::in_mma);
  EXPECT_EQ(r.numerics->k_step, 16);
  ASSERT_EQ(r.behaves_like.size(), 1u);
  EXPECT_EQ(r.behaves_like[0], "builtin_in_mma");
}

// ---------------------------------------------------------------------------------------------
// Every instruction of `gemmlab tc-eval --list` is a candidate node, fp16 accumulators included.

namespace {

// The instructions explain must try for nodes of `leaves` products of `in`: every one of that input
// and block, whatever its accumulator.
std::vector<std::string> listed(Format in, int leaves) {
  std::vector<std::string> out;
  for (tc::Instruction i : tc::all_instructions())
    if (tc::info(i).input == in && tc::info(i).format_b() == in && tc::info(i).k == leaves) out.push_back(tc::info(i).name);
  return out;
}

const NodeKind& carry_kind(const Report& r) {
  for (const NodeKind& k : r.nodes.kinds)
    if (k.carry) return k;
  return r.nodes.kinds.at(0);
}

int mismatching_of(const NodeKind& k, const std::string& instruction) {
  for (const NodeKind::Candidate& c : k.candidates)
    if (c.instruction == instruction) return c.mismatching;
  ADD_FAILURE() << instruction << " was not a candidate";
  return -2;
}

}  // namespace

TEST(ExplainCandidates, Fp16AccumulatorIdentifiedAndTheFp32OnesRuledOut) {
  // Triton's tl.dot(..., out_dtype=tl.float16): wgmma f16 -> f16, each node's C the previous node's
  // fp16 output, written as fp16. Before fp16 accumulators were candidates, 13 of 2790 probes through the
  // fp16 output stayed unexplained on the H100.
  const int K = 256;
  SyntheticKernel k(64, 64, K, Format::fp16, blocked_tree(K, 16, true), model_of(tc::Instruction::wgmma_m64n8k16_f16_f16));
  k.output_format = Format::fp16;
  const Report r = explain_kernel(k, quick({"uniform_0_1", "normal_0_1", "logunif_-8_8"}));
  ASSERT_TRUE(r.identified) << r.summary();
  for (const Comparison& c : r.comparisons) EXPECT_EQ(c.mismatches, 0) << c.distribution;
  const NodeKind& nk = carry_kind(r);
  EXPECT_EQ(nk.params, *tc::measured_hopper_params(tc::Instruction::wgmma_m64n8k16_f16_f16));
  EXPECT_TRUE(contains(nk.same_as, "wgmma_m64n8k16_f16_f16")) << nk.same_as;
  EXPECT_TRUE(contains(nk.same_as, "mma_m16n8k16_f16_f16")) << nk.same_as;
  EXPECT_TRUE(nk.checked_through.empty());  // inferred: the kernel writes what the instruction writes
  // Every fp16 instruction of 16 products was a candidate; the fp32 accumulators are ruled out, each with
  // the probes it leaves unexplained, and the fp16 ones explain every probe.
  std::vector<std::string> tried;
  for (const NodeKind::Candidate& c : nk.candidates) tried.push_back(c.instruction);
  EXPECT_EQ(tried, listed(Format::fp16, 16));
  ASSERT_GE(tried.size(), 6u);
  for (const NodeKind::Candidate& c : nk.candidates) {
    const bool f16 = contains(c.instruction, "f16_f16");
    EXPECT_GT(c.probes, 0) << c.instruction;
    if (f16) EXPECT_EQ(c.mismatching, 0) << c.instruction;
    else EXPECT_GT(c.mismatching, 0) << c.instruction;
  }
  EXPECT_TRUE(contains(nk.ruled_out(), "mma_m16n8k16_f16_f32 (")) << nk.ruled_out();
  EXPECT_FALSE(contains(nk.ruled_out(), "f16_f16")) << nk.ruled_out();
  EXPECT_TRUE(contains(r.summary(), "ruled out: mma_m16n8k16_f16_f32")) << r.summary();
  // The record: an in-mma chain whose running sum is fp16.
  ASSERT_TRUE(r.numerics) << r.summary();
  EXPECT_EQ(r.numerics->accumulator, Format::fp16);
  EXPECT_EQ(r.numerics->output, Format::fp16);
  ASSERT_TRUE(r.numerics->instruction);
  EXPECT_EQ(tc::info(*r.numerics->instruction).output, Format::fp16);
  EXPECT_EQ(r.numerics->accumulation, Accumulation::in_mma);
}

TEST(ExplainCandidates, Fp32AccumulatorWritingFp16RulesOutTheFp16Ones) {
  // torch.matmul fp16 -> fp16 through cuBLAS: fp32 running sums rounded to fp16 at the end. The fp16
  // accumulators are candidates too, and ruled out with a count.
  const int K = 256;
  SyntheticKernel k(64, 64, K, Format::fp16, blocked_tree(K, 16, true), model_of(tc::Instruction::mma_m16n8k16_f16_f32));
  k.output_format = Format::fp16;
  const Report r = explain_kernel(k, quick());
  ASSERT_TRUE(r.identified) << r.summary();
  for (const Comparison& c : r.comparisons) EXPECT_EQ(c.mismatches, 0) << c.distribution;
  const NodeKind& nk = carry_kind(r);
  EXPECT_EQ(nk.params, *tc::measured_hopper_params(tc::Instruction::mma_m16n8k16_f16_f32));
  EXPECT_EQ(nk.checked_through, "fp16");
  EXPECT_GT(mismatching_of(nk, "mma_m16n8k16_f16_f16"), 0);
  EXPECT_GT(mismatching_of(nk, "wgmma_m64n8k16_f16_f16"), 0);
  EXPECT_EQ(mismatching_of(nk, "mma_m16n8k16_f16_f32"), 0);
  ASSERT_TRUE(r.numerics);
  EXPECT_EQ(r.numerics->accumulator, Format::fp32);
}

TEST(ExplainCandidates, Fp8WithAnFp16AccumulatorIdentified) {
  // wgmma e4m3 -> f16: 32 products aligned with 13 fraction bits, rounded to nearest fp16, chained.
  const int K = 256;
  SyntheticKernel k(64, 64, K, Format::e4m3, blocked_tree(K, 32, true), model_of(tc::Instruction::wgmma_m64n8k32_e4m3_f16));
  k.output_format = Format::fp16;
  const Report r = explain_kernel(k, quick());
  ASSERT_TRUE(r.identified) << r.summary();
  for (const Comparison& c : r.comparisons) EXPECT_EQ(c.mismatches, 0) << c.distribution;
  const NodeKind& nk = carry_kind(r);
  EXPECT_EQ(nk.params, *tc::measured_hopper_params(tc::Instruction::wgmma_m64n8k32_e4m3_f16));
  EXPECT_GT(mismatching_of(nk, "wgmma_m64n8k32_e4m3_f32"), 0);
  ASSERT_TRUE(r.numerics);
  EXPECT_EQ(r.numerics->accumulator, Format::fp16);
}

TEST(ExplainCandidates, Fp32KernelsStillPickTheirInstructionAndRuleOutTheFp16Ones) {
  SyntheticKernel k(64, 64, 128, Format::fp16, blocked_tree(128, 16, true), model_of(tc::Instruction::mma_m16n8k16_f16_f32));
  const Report r = explain_kernel(k, quick({"uniform_0_1"}));
  ASSERT_TRUE(r.identified) << r.summary();
  const NodeKind& nk = carry_kind(r);
  EXPECT_TRUE(nk.checked_through.empty());
  EXPECT_TRUE(contains(nk.same_as, "mma_m16n8k16_f16_f32")) << nk.same_as;
  EXPECT_GT(mismatching_of(nk, "mma_m16n8k16_f16_f16"), 0);
}

TEST(ExplainSynthetic, ExternalBf16) {
  SyntheticKernel k(64, 64, 128, Format::bf16, blocked_tree(128, 16, false),
                    model_of(tc::Instruction::mma_m16n8k16_bf16_f32));
  expect_identified(k, quick(), "external");
}

TEST(ExplainSynthetic, SplitKFp16) {
  SyntheticKernel k(64, 64, 128, Format::fp16, split_blocked_tree(128, 16, 2, true),
                    model_of(tc::Instruction::mma_m16n8k16_f16_f32));
  const Report r = explain_kernel(k, quick());
  ASSERT_TRUE(r.identified) << r.summary();
  ASSERT_TRUE(r.numerics);
  EXPECT_EQ(r.numerics->split_k, 2);
}

TEST(ExplainSynthetic, PromotedE4m3) {
  SyntheticKernel k(64, 64, 256, Format::e4m3, promoted_tree(256, 32, 128),
                    model_of(tc::Instruction::wgmma_m64n8k32_e4m3_f32));
  const Report r = explain_kernel(k, quick());
  ASSERT_TRUE(r.identified) << r.summary();
  ASSERT_TRUE(r.numerics);
  EXPECT_EQ(r.numerics->accumulation, Accumulation::promoted);
  EXPECT_EQ(r.numerics->promotion_interval_k, 128);
}

TEST(ExplainSynthetic, Tf32TruncatingOperands) {
  SyntheticKernel k(64, 64, 64, Format::fp32, blocked_tree(64, 8, true), model_of(tc::Instruction::mma_m16n8k8_tf32_f32),
                    Conversion::tf32_rz, Conversion::tf32_rz);
  Options o = quick({"uniform_0_1"});
  o.max_probes = 1 << 20;  // every probe: the zero-C ones come late in the set
  const Report r = explain_kernel(k, o);
  ASSERT_TRUE(r.identified) << r.summary();
  EXPECT_EQ(r.conversion.a, Conversion::tf32_rz);
  EXPECT_EQ(r.conversion.b, Conversion::tf32_rz);
  ASSERT_TRUE(r.numerics) << r.summary();
  EXPECT_EQ(r.numerics->compute, Format::tf32);
}

TEST(ExplainSynthetic, Tf32RoundedAwayOperands) {
  SyntheticKernel k(64, 64, 64, Format::fp32, blocked_tree(64, 8, true), model_of(tc::Instruction::mma_m16n8k8_tf32_f32),
                    Conversion::tf32_rna, Conversion::tf32_rna);
  const Report r = explain_kernel(k, quick());
  ASSERT_TRUE(r.identified) << r.summary();
  EXPECT_EQ(r.conversion.a, Conversion::tf32_rna);
}

TEST(ExplainUnidentified, ChunkedOrderDiffersBetweenEntries) {
  // Rows from 32 on take another order (a K split in two chunks, as stream-K does in some tiles).
  SyntheticKernel k(64, 64, 128, Format::fp16, blocked_tree(128, 16, true), model_of(tc::Instruction::mma_m16n8k16_f16_f32));
  SummationTree chunked(128);
  {
    // two in-MMA chains over [0, 64) and [64, 128), added by one fp32 add
    const SummationTree half = blocked_tree(64, 16, true);
    std::vector<int> map(half.node_count());
    int last[2] = {-1, -1};
    for (int part = 0; part < 2; ++part) {
      for (int n = 0; n < half.leaves(); ++n) map[n] = n + 64 * part;
      for (int n = half.leaves(); n < half.node_count(); ++n) {
        std::vector<int> ch;
        for (int c : half.children(n)) ch.push_back(map[c]);
        map[n] = chunked.add_node(ch);
      }
      last[part] = map[half.root()];
    }
    chunked.add_node({last[0], last[1]});
  }
  k.other_tree = chunked;
  k.other_from_row = 32;
  const Report r = explain_kernel(k, quick());
  EXPECT_FALSE(r.identified);
  EXPECT_EQ(r.failed_stage, "tree") << r.summary();
  EXPECT_TRUE(contains(r.reason, "differ") || contains(r.reason, "do not form one tree")) << r.reason;
}

TEST(ExplainUnidentified, OrderChangesBetweenCalls) {
  SyntheticKernel k(64, 64, 64, Format::fp16, blocked_tree(64, 16, true), model_of(tc::Instruction::mma_m16n8k16_f16_f32));
  k.other_tree = sequential_tree(64);
  k.alternate_calls = true;
  const Report r = explain_kernel(k, quick());
  EXPECT_FALSE(r.identified);
  EXPECT_EQ(r.failed_stage, "tree") << r.summary();
}

TEST(ExplainUnidentified, AddsAConstant) {
  SyntheticKernel k(64, 64, 64, Format::fp16, blocked_tree(64, 16, true), model_of(tc::Instruction::mma_m16n8k16_f16_f32));
  k.add_constant = 0.5;
  const Report r = explain_kernel(k, quick());
  EXPECT_FALSE(r.identified);
  EXPECT_EQ(r.failed_stage, "gemm");
  EXPECT_TRUE(contains(r.reason, "not C = A B")) << r.reason;
}

TEST(ExplainUnidentified, NanOnProbeInputs) {
  SyntheticKernel k(64, 64, 64, Format::fp16, blocked_tree(64, 16, true), model_of(tc::Instruction::mma_m16n8k16_f16_f32));
  k.nan_on_zero_row = true;
  const Report r = explain_kernel(k, quick());
  EXPECT_FALSE(r.identified);
  EXPECT_EQ(r.failed_stage, "gemm");
  EXPECT_TRUE(contains(r.reason, "NaN")) << r.reason;
}

TEST(ExplainUnidentified, ArithmeticNoModelHas) {
  // Fused nodes of 16 whose arithmetic is that of bf16 (8-bit) products fed to an fp16 kernel's tree:
  // an fp16 kernel whose nodes round every product to bf16 first. No tc model of fp16 has it.
  const tc::TcParams f16 = *tc::measured_hopper_params(tc::Instruction::mma_m16n8k16_f16_f32);
  tc::TcParams odd = f16;
  odd.neab = -10;  // 13 fraction bits in the alignment, as fp8 wgmma keeps, on fp16 products
  SyntheticKernel k(64, 64, 64, Format::fp16, blocked_tree(64, 16, true), [odd](int leaves) -> std::optional<tc::TcParams> {
    if (leaves != 16) return std::nullopt;
    return odd;
  });
  const Report r = explain_kernel(k, quick());
  // Either the inference finds the odd model (then the prediction is exact, and no gemmlab
  // instruction has it, so no Numerics record), or it says no model explains the nodes.
  if (r.identified) {
    EXPECT_FALSE(r.numerics.has_value()) << r.summary();
    for (const NodeKind& nk : r.nodes.kinds) EXPECT_TRUE(nk.same_as.empty());
  } else {
    EXPECT_EQ(r.failed_stage, "nodes") << r.summary();
  }
}

// ---------------------------------------------------------------------------------------------
// FPRev unit groups (reference/fprev.hpp): the counts of an e4m3 kernel at K = 1536 or of a kernel
// writing bf16 at K > 256 are exact only when a query's units are counted a group at a time.

namespace {

FprevMasks grouped_masks(Format input, Format compute, Format output, int K) {
  return choose_fprev_masks(input, compute, Format::fp32, output, K, FprevUnits::grouped);
}

// The output of entry (0, 0) as a count of units: FPRev's one-group query (p, q), every other
// product a unit.
double one_group_count(Oracle& o, const FprevMasks& m, int p, int q) {
  SparseInputs in;
  SparseVector a{0, m.a_unit(), {{p, m.a_big()}, {q, m.a_big()}}}, b{0, m.b_unit(), {{p, m.b_big()}, {q, -m.b_big()}}};
  in.a_rows.push_back(a);
  in.b_cols.push_back(b);
  return from_bits(o.output(), o.run_sparse(in, {{0, 0}})[0]) / m.unit();
}

}  // namespace

TEST(FprevGroups, OneGroupWhereTheMasksHoldAtK4096) {
  // fp16, bf16, tf32 (fp32 operands), fp32 and e5m2 products with an fp32 output: the grouped masks
  // are today's, one group, so explain asks exactly the launches it asked before groups.
  const int K = 4096;
  for (auto [input, compute] : {std::pair{Format::fp16, Format::fp16}, {Format::bf16, Format::bf16},
                                {Format::fp32, Format::tf32}, {Format::fp32, Format::fp32}, {Format::e5m2, Format::e5m2}}) {
    const FprevMasks one = choose_fprev_masks(input, compute, Format::fp32, Format::fp32, K);
    const FprevMasks g = grouped_masks(input, compute, Format::fp32, K);
    SCOPED_TRACE(info(compute).name);
    EXPECT_EQ(g.group, K);
    EXPECT_EQ(g.groups(K - 2), 1);
    EXPECT_EQ(g.groups(K), 1);
    EXPECT_EQ(g.describe(), one.describe());
    EXPECT_EQ(g.unit(), one.unit());
    EXPECT_EQ(g.a_big() * g.b_big(), one.a_big() * one.b_big());
    EXPECT_GE(g.margin_bits, 26);
  }
}

TEST(FprevGroups, E4m3AndBf16OutputGroupSizesFromTheFormats) {
  // e4m3: M = 2^8 * 2^8 (448 < 2^9), u = 2^-9 * 2^-9 (the smallest subnormal): M / u = 2^34, so
  // 2^26 below M leaves groups of 2^8 units, where one group of 4096 would lie only 2^22 below.
  const FprevMasks one = choose_fprev_masks(Format::e4m3, Format::e4m3, Format::fp32, Format::fp32, 4096);
  EXPECT_EQ(one.margin_bits, 22);  // `gemmlab order` keeps one group (and warns)
  EXPECT_EQ(one.group, 4096);
  const FprevMasks g = grouped_masks(Format::e4m3, Format::e4m3, Format::fp32, 4096);
  EXPECT_EQ(g.a_big() * g.b_big(), 0x1p16);
  EXPECT_EQ(g.unit(), 0x1p-18);
  EXPECT_EQ(g.group, 256);
  EXPECT_EQ(g.margin_bits, 26);
  EXPECT_EQ(g.groups(4094), 16);
  EXPECT_TRUE(contains(g.describe(), "groups of G = 256 (16 items per pair")) << g.describe();
  // At K = 256 one group still holds (2^34 / 2^8 = 2^26): nothing changes there.
  EXPECT_EQ(grouped_masks(Format::e4m3, Format::e4m3, Format::fp32, 256).group, 256);
  // A bf16 output holds i u exactly for i <= 2^8: one group up to K = 256, then groups of 256.
  EXPECT_THROW(choose_fprev_masks(Format::bf16, Format::bf16, Format::fp32, Format::bf16, 512), std::invalid_argument);
  for (Format in : {Format::bf16, Format::e4m3}) {
    const FprevMasks b = grouped_masks(in, in, Format::bf16, 4096);
    EXPECT_EQ(b.group, 256) << info(in).name;
    EXPECT_EQ(b.groups(4096), 16);
  }
  EXPECT_EQ(grouped_masks(Format::fp16, Format::fp16, Format::fp16, 4096).group, 2048);  // fp16: 11 bits
}

TEST(FprevGroups, PromotedE4m3NeedsGroups) {
  // Triton's max_num_imprecise_acc=128: chunks of 128 products summed in wgmma blocks of 32, each
  // chunk added into an fp32 accumulator. With one group, the units summed before the chunk holding
  // +M meet M = 2^16 in an fp32 add, and more than 2^10 of them (2^-8, half M's ulp) are not
  // absorbed: +M in chunk 9 or later (1152 units before it) and -M in a later chunk, so K = 11 * 128
  // at least; 12 chunks here (K = 1024 would never fail).
  const int K = 1536;
  const SummationTree tree = promoted_tree(K, 32, 128);
  SyntheticKernel k(32, 32, K, Format::e4m3, tree, model_of(tc::Instruction::wgmma_m64n8k32_e4m3_f32));
  const FprevMasks m = grouped_masks(Format::e4m3, Format::e4m3, Format::fp32, K);
  ASSERT_EQ(m.group, 256);
  ASSERT_EQ(m.groups(K - 2), 6);
  // +M at k = 1200 (chunk 9), -M at 1400 (chunk 10): the 128 units of chunk 11 come after them, but
  // one group rounds 1152 u + M to M + 2^-7 and counts 2^11 units too many.
  const int p = 1200, q = 1400;
  EXPECT_EQ(K - lca_size(tree, p, q), 128);
  EXPECT_EQ(one_group_count(k, m, p, q), 128.0 + 2048.0);
  const Report r = explain_kernel(k, quick());
  ASSERT_TRUE(r.identified) << r.summary();
  EXPECT_TRUE(contains(r.tree.masks, "groups of G = 256")) << r.tree.masks;
  EXPECT_EQ(r.tree.tree.canonical(), tree.canonical());
  ASSERT_TRUE(r.numerics);
  EXPECT_EQ(r.numerics->accumulation, Accumulation::promoted);
  EXPECT_EQ(r.numerics->promotion_interval_k, 128);
}

TEST(ExplainOutput, NegativeSumRoundingToZeroIsMinusZeroInANarrowOutput) {
  // The kernel's conversion of its fp32 result to an fp16 C is IEEE's: -2^-25, half the smallest
  // subnormal, rounds (to even) to -0, 0x8000, as the H100 writes it through torch.matmul's fp16 C;
  // +2^-25 to +0; -3 * 2^-26 (above the half) to the smallest subnormal, -2^-24 = 0x8001.
  const int K = 16;
  SyntheticKernel k(1, 3, K, Format::fp16, blocked_tree(K, 16, true), model_of(tc::Instruction::mma_m16n8k16_f16_f32));
  k.output_format = Format::fp16;
  SparseInputs in;
  in.a_rows.push_back({0, 0, {{0, 0x1p-12}}});
  in.b_cols.push_back({0, 0, {{0, -0x1p-13}}});
  in.b_cols.push_back({1, 0, {{0, 0x1p-13}}});
  in.b_cols.push_back({2, 0, {{0, -0x1p-13}, {1, -0x1p-14}}});
  in.a_rows[0].at.push_back({1, 0x1p-12});
  const std::vector<std::uint64_t> bits = k.run_sparse(in, {{0, 0}, {0, 1}, {0, 2}});
  EXPECT_EQ(bits[0], 0x8000u);
  EXPECT_EQ(bits[1], 0x0000u);
  EXPECT_EQ(bits[2], 0x8001u);
}

TEST(FprevGroups, Bf16OutputBeyondK256) {
  // A bf16 GEMM writing bf16 (torch.matmul bf16 -> bf16): in-MMA chains of 16 in fp32, the result
  // rounded to bf16. K = 512 is past the 256 units bf16 can count; the node models are checked
  // through the bf16 output, and the prediction matches the bf16 outputs bit for bit.
  const int K = 512;
  SyntheticKernel k(32, 32, K, Format::bf16, blocked_tree(K, 16, true), model_of(tc::Instruction::mma_m16n8k16_bf16_f32));
  k.output_format = Format::bf16;
  const Report r = explain_kernel(k, quick());
  ASSERT_TRUE(r.identified) << r.summary();
  EXPECT_TRUE(contains(r.tree.masks, "groups of G = 256")) << r.tree.masks;
  for (const NodeKind& nk : r.nodes.kinds) {
    EXPECT_EQ(nk.checked_through, "bf16");
    EXPECT_EQ(nk.mismatching, 0);
  }
  for (const Comparison& c : r.comparisons) {
    EXPECT_EQ(c.mismatches, 0) << c.distribution;
    EXPECT_EQ(c.outputs, 32 * 32);
  }
  ASSERT_TRUE(r.numerics) << r.summary();
  EXPECT_EQ(r.numerics->output, Format::bf16);
  EXPECT_EQ(r.numerics->accumulation, Accumulation::in_mma);
  // The kernel writes its fp32 sums rounded to bf16: the fp32 sums themselves would not be its bits.
  Matrix A = generate(parse_distribution("uniform_0_1"), Operand::A, 32, K, Format::bf16, 1, 1);
  Matrix B = generate(parse_distribution("uniform_0_1"), Operand::B, K, 32, Format::bf16, 1, 1);
  std::vector<Entry> row;
  for (int j = 0; j < 32; ++j) row.emplace_back(0, j);
  const std::vector<std::uint64_t> got = k.run_full(A, B, row);
  const std::vector<double> fp32 = emulation::emulate_tree_at(
      blocked_tree(K, 16, true), model_of(tc::Instruction::mma_m16n8k16_bf16_f32), A, B, row, 1);
  int narrower = 0;
  for (int j = 0; j < 32; ++j) {
    EXPECT_EQ(got[j], to_bits(Format::bf16, tc::round_to_format(Format::bf16, fp32[j], Rounding::nearest_even)));
    narrower += from_bits(Format::bf16, got[j]) != fp32[j];
  }
  EXPECT_GT(narrower, 0);
}

namespace {

// A kernel whose result is half a unit off whenever FPRev's +M is among its products: counts that
// no group size makes whole.
class HalfUnitOff : public SyntheticKernel {
 public:
  using SyntheticKernel::SyntheticKernel;
  std::vector<std::uint64_t> run_sparse(const SparseInputs& in, const std::vector<Entry>& entries) override {
    std::vector<std::uint64_t> bits = SyntheticKernel::run_sparse(in, entries);
    for (std::size_t e = 0; e < entries.size(); ++e) {
      bool masked = false;
      for (const SparseVector& a : in.a_rows)
        if (a.index == entries[e].first)
          for (auto [kk, v] : a.at) masked = masked || v >= 0x1p8;
      if (masked) bits[e] = to_bits(Format::fp32, from_bits(Format::fp32, bits[e]) + 0x1p-19);
    }
    return bits;
  }
};

}  // namespace

TEST(FprevGroups, CountsThatNoGroupMakesWholeStayUnidentified) {
  const int K = 1536;
  HalfUnitOff k(32, 32, K, Format::e4m3, promoted_tree(K, 32, 128), model_of(tc::Instruction::wgmma_m64n8k32_e4m3_f32));
  const Report r = explain_kernel(k, quick());
  EXPECT_FALSE(r.identified);
  EXPECT_EQ(r.failed_stage, "tree") << r.summary();
  EXPECT_TRUE(contains(r.reason, "not a whole number of units")) << r.reason;
  EXPECT_TRUE(contains(r.reason, "groups of G = 256")) << r.reason;
}

// ---------------------------------------------------------------------------------------------
// Split operands (3xTF32): fp32 operands whose single products come back exact but whose fused nodes
// no fp32 instruction has. The split scheme is checked against the tf32 instruction's measured model.

namespace {

using emulation::SplitScheme;

SplitScheme scheme(emulation::LowBits big, std::vector<std::pair<SplitScheme::Piece, SplitScheme::Piece>> passes,
                   int nodes_per_pass, bool mask) {
  return {big, std::move(passes), nodes_per_pass, mask};
}

constexpr auto SM = SplitScheme::small, BG = SplitScheme::big;

// Triton 3.6's tf32x3 (lib/Dialect/TritonGPU/Transforms/F32DotTC.cpp).
SplitScheme triton_tf32x3() { return scheme(emulation::LowBits::nearest_away, {{SM, BG}, {BG, SM}, {BG, BG}}, 0, true); }

// A kernel of (64, 64, K) fp32 operands split by `s`, its big x big products in Triton's tree: k-tiles of
// 32 (four k8 tf32 nodes chained from +0), the tiles' sums added in fp32.
SyntheticKernel split_kernel(const SplitScheme& s, int K = 128,
                             tc::TcParams p = *tc::measured_hopper_params(tc::Instruction::wgmma_m64n8k8_tf32_f32)) {
  SyntheticKernel k(64, 64, K, Format::fp32, promoted_tree(K, 8, 32), [p](int leaves) -> std::optional<tc::TcParams> {
    if (leaves != 8) return std::nullopt;
    return p;
  });
  k.split = s;
  return k;
}

// r identifies the kernel of split scheme s with 0 mismatches, its nodes `leaves` products of `instruction`'s
// model; its record has the pieces' format as compute format and the products s forms (Numerics::split),
// and no built-in kernel is named (none splits).
void expect_split_identified(const SplitScheme& s, const Report& r, int leaves, const std::string& instruction) {
  ASSERT_TRUE(r.identified) << r.summary();
  ASSERT_TRUE(r.nodes.split.has_value());
  EXPECT_EQ(*r.nodes.split, s) << "kernel: " << s.describe() << "\nfound: " << r.nodes.split->describe();
  EXPECT_GT(r.comparisons.size(), 0u);
  for (const Comparison& c : r.comparisons) EXPECT_EQ(c.mismatches, 0) << c.distribution;
  for (const NodeKind& nk : r.nodes.kinds) {
    EXPECT_EQ(nk.leaves, leaves);
    EXPECT_TRUE(contains(nk.same_as, instruction)) << nk.same_as;
    EXPECT_EQ(nk.mismatching, 0);
  }
  ASSERT_TRUE(r.numerics.has_value()) << r.summary();
  const Numerics& n = *r.numerics;
  EXPECT_EQ(n.input, Format::fp32);
  EXPECT_EQ(n.compute, s.format == SplitScheme::PieceFormat::tf32 ? Format::tf32 : Format::bf16);
  EXPECT_EQ(n.split.pieces, s.pieces);
  EXPECT_EQ(n.split.passes(), static_cast<int>(s.passes.size()));
  for (const auto& [i, j] : s.passes) EXPECT_TRUE(n.split.products & OperandSplit::bit(i, j)) << i << j;
  EXPECT_EQ(n.accumulation, Accumulation::promoted);  // the tiles' sums added in fp32
  EXPECT_FALSE(n.predictable());  // the pass order is the report's, not the record's
  EXPECT_TRUE(contains(r.numerics_text, "operands split into " + std::to_string(s.pieces))) << r.numerics_text;
  EXPECT_TRUE(r.behaves_like.empty());
}

}  // namespace

TEST(ExplainSplit, CandidatesAreDistinctAndHoldTriton) {
  const std::vector<SplitScheme> c = split_candidates(4);
  // 3 roundings x 18 orders x groups {chain, 1, 2} x mask or not
  EXPECT_EQ(c.size(), 3u * 18 * 3 * 2);
  for (std::size_t i = 0; i < c.size(); ++i)
    for (std::size_t j = i + 1; j < c.size(); ++j) ASSERT_FALSE(c[i] == c[j]) << c[i].describe();
  EXPECT_NE(std::find(c.begin(), c.end(), triton_tf32x3()), c.end());
}

TEST(ExplainSplit, TritonTf32x3Identified) {
  SyntheticKernel k = split_kernel(triton_tf32x3());
  const Report r = explain_kernel(k, quick({"uniform_0_1", "normal_0_1", "logunif_-8_8"}));
  expect_split_identified(triton_tf32x3(), r, 8, "wgmma_m64n8k8_tf32_f32");
  EXPECT_EQ(r.conversion.a, Conversion::as_is);  // 3xTF32 single products are exact
  EXPECT_TRUE(contains(r.numerics_text, "split into two tf32 pieces")) << r.numerics_text;
  EXPECT_TRUE(contains(r.summary(), "A small x B big, then A big x B small, then A big x B big")) << r.summary();
}

TEST(ExplainSplit, OtherSchemesRecoveredAsThemselves) {
  // Each of these is a candidate: it must come back as itself (never as Triton's), or unidentified.
  int identified = 0;
  for (const SplitScheme& s : {scheme(emulation::LowBits::nearest_even, {{BG, BG}, {SM, BG}, {BG, SM}}, 1, false),
                               scheme(emulation::LowBits::toward_zero, {{SM, SM}, {SM, BG}, {BG, SM}, {BG, BG}}, 0, true),
                               scheme(emulation::LowBits::nearest_away, {{BG, SM}, {SM, BG}, {BG, BG}}, 0, true),
                               scheme(emulation::LowBits::nearest_away, {{SM, BG}, {BG, SM}, {BG, BG}}, 2, true),
                               scheme(emulation::LowBits::nearest_even, {{SM, BG}, {BG, SM}, {BG, BG}}, 0, true)}) {
    SyntheticKernel k = split_kernel(s);
    const Report r = explain_kernel(k, quick({"uniform_0_1"}));
    if (!r.identified) {
      // A big piece cut toward zero leaves a small piece of up to 13 bits, which the instruction cuts
      // to 11: single products lose bits, and no conversion explains them.
      if (s.big_rounding == emulation::LowBits::toward_zero) EXPECT_EQ(r.failed_stage, "conversion") << r.summary();
      else EXPECT_EQ(r.failed_stage, "nodes") << s.describe() << "\n" << r.summary();
      continue;
    }
    ASSERT_TRUE(r.nodes.split.has_value()) << r.summary();
    EXPECT_EQ(*r.nodes.split, s) << "kernel: " << s.describe() << "\nfound: " << r.nodes.split->describe();
    for (const Comparison& c : r.comparisons) EXPECT_EQ(c.mismatches, 0);
    ++identified;
  }
  // The probes tell these apart (the toward-zero one stops at the conversion).
  EXPECT_EQ(identified, 4);
}

TEST(ExplainSplit, SplitWithAnArithmeticNoCandidateHasIsUnidentified) {
  // Triton's split through a tf32 node keeping one more alignment bit than the H100's: no candidate
  // composed with the measured model explains the probes.
  tc::TcParams odd = *tc::measured_hopper_params(tc::Instruction::wgmma_m64n8k8_tf32_f32);
  odd.neab += 3;
  SyntheticKernel k = split_kernel(triton_tf32x3(), 128, odd);
  const Report r = explain_kernel(k, quick({"uniform_0_1"}));
  EXPECT_FALSE(r.identified) << r.summary();
  EXPECT_EQ(r.failed_stage, "nodes") << r.summary();
  EXPECT_TRUE(contains(r.reason, "split")) << r.reason;
}

TEST(ExplainSplit, PlainTf32KernelIsNotSplit) {
  // Converted operands keep the old path: no split tried.
  SyntheticKernel k(64, 64, 128, Format::fp32, promoted_tree(128, 8, 32), model_of(tc::Instruction::wgmma_m64n8k8_tf32_f32),
                    Conversion::tf32_rna, Conversion::tf32_rna);
  const Report r = explain_kernel(k, quick({"uniform_0_1"}));
  ASSERT_TRUE(r.identified) << r.summary();
  EXPECT_FALSE(r.nodes.split.has_value());
  EXPECT_EQ(r.conversion.a, Conversion::tf32_rna);
}

// ---------------------------------------------------------------------------------------------
// Split operands into bf16 pieces (Triton's bf16x3 and bf16x6): checked with the bf16 instruction's
// measured model. bf16x3's single products lose the bits below hi + mid, so the conversion stage hands
// them to stage 4 as a split; bf16x6's are exact.

namespace {

constexpr auto HI = SplitScheme::hi, MI = SplitScheme::mid, LO = SplitScheme::lo;

SplitScheme bf16_scheme(std::vector<std::pair<SplitScheme::Piece, SplitScheme::Piece>> passes, int pieces,
                        int nodes_per_pass = 0, bool mask = true) {
  return {emulation::LowBits::nearest_even, std::move(passes), nodes_per_pass, mask, SplitScheme::PieceFormat::bf16,
          pieces};
}

// Triton 3.6 (F32DotTC.cpp, BF16xN): bf16x6 runs mid*mid, lo*hi, hi*lo, then bf16x3's passes.
SplitScheme triton_bf16x3() { return bf16_scheme({{MI, HI}, {HI, MI}, {HI, HI}}, 2); }
SplitScheme triton_bf16x6() { return bf16_scheme({{MI, MI}, {LO, HI}, {HI, LO}, {MI, HI}, {HI, MI}, {HI, HI}}, 3); }

// As split_kernel, with the bf16 pieces through k16 bf16 nodes: k-tiles of 32 (two nodes chained).
SyntheticKernel bf16_split_kernel(const SplitScheme& s, int K = 128) {
  SyntheticKernel k(64, 64, K, Format::fp32, promoted_tree(K, 16, 32), model_of(tc::Instruction::wgmma_m64n8k16_bf16_f32));
  k.split = s;
  return k;
}

}  // namespace

TEST(ExplainSplit, Bf16CandidatesAreDistinctAndHoldTriton) {
  const std::vector<SplitScheme> c = split_candidates(4, SplitScheme::PieceFormat::bf16);
  // (18 orders of two pieces + 6 of three) x groups {chain, 1, 2} x mask or not
  EXPECT_EQ(c.size(), (18u + 6) * 3 * 2);
  for (std::size_t i = 0; i < c.size(); ++i)
    for (std::size_t j = i + 1; j < c.size(); ++j) ASSERT_FALSE(c[i] == c[j]) << c[i].describe();
  EXPECT_NE(std::find(c.begin(), c.end(), triton_bf16x3()), c.end());
  EXPECT_NE(std::find(c.begin(), c.end(), triton_bf16x6()), c.end());
}

TEST(ExplainSplit, TritonBf16x3Identified) {
  SyntheticKernel k = bf16_split_kernel(triton_bf16x3());
  const Report r = explain_kernel(k, quick({"uniform_0_1", "normal_0_1", "logunif_-8_8"}));
  expect_split_identified(triton_bf16x3(), r, 16, "wgmma_m64n8k16_bf16_f32");
  EXPECT_TRUE(r.conversion.split);  // the single products are hi + mid
  EXPECT_TRUE(contains(r.summary(), "operands: split")) << r.summary();
  EXPECT_TRUE(contains(r.numerics_text, "fp32 operands split into 2 bf16 pieces")) << r.numerics_text;
  EXPECT_TRUE(contains(r.numerics_text, "A mid x B hi, then A hi x B mid, then A hi x B hi")) << r.numerics_text;
}

TEST(ExplainSplit, TritonBf16x6Identified) {
  SyntheticKernel k = bf16_split_kernel(triton_bf16x6());
  const Report r = explain_kernel(k, quick({"uniform_0_1", "normal_0_1", "logunif_-8_8"}));
  expect_split_identified(triton_bf16x6(), r, 16, "wgmma_m64n8k16_bf16_f32");
  EXPECT_FALSE(r.conversion.split);  // three pieces hold every fp32 value: single products exact
  EXPECT_EQ(r.conversion.a, Conversion::as_is);
  EXPECT_TRUE(contains(r.numerics_text, "fp32 operands split into 3 bf16 pieces")) << r.numerics_text;
  EXPECT_TRUE(contains(r.summary(), "A mid x B mid, then A lo x B hi, then A hi x B lo, then A mid x B hi")) << r.summary();
}

TEST(ExplainSplit, OtherBf16OrdersRecoveredAsThemselves) {
  // Candidates near Triton's: each must come back as itself (never as Triton's), or unidentified.
  int identified = 0;
  for (const SplitScheme& s : {bf16_scheme({{HI, MI}, {MI, HI}, {HI, HI}}, 2),
                               bf16_scheme({{MI, HI}, {HI, MI}, {HI, HI}}, 2, 1, true),
                               bf16_scheme({{MI, HI}, {HI, MI}, {HI, HI}}, 2, 0, false),
                               bf16_scheme({{MI, MI}, {LO, HI}, {HI, LO}, {HI, MI}, {MI, HI}, {HI, HI}}, 3),
                               bf16_scheme({{MI, HI}, {HI, MI}, {MI, MI}, {LO, HI}, {HI, LO}, {HI, HI}}, 3),
                               bf16_scheme({{LO, HI}, {HI, LO}, {MI, HI}, {HI, MI}, {HI, HI}}, 3)}) {
    SyntheticKernel k = bf16_split_kernel(s);
    const Report r = explain_kernel(k, quick({"uniform_0_1"}));
    if (!r.identified) {
      EXPECT_EQ(r.failed_stage, "nodes") << s.describe() << "\n" << r.summary();
      EXPECT_TRUE(contains(r.reason, "split")) << r.reason;
      continue;
    }
    expect_split_identified(s, r, 16, "wgmma_m64n8k16_bf16_f32");
    ++identified;
  }
  // The probes tell all six apart from Triton's and from each other.
  EXPECT_EQ(identified, 6);
}

TEST(ExplainSplit, Bf16SplitThroughAnotherArithmeticIsUnidentified) {
  // A split scheme no candidate has (bf16 pieces cut toward zero): unidentified with the reason.
  SplitScheme s = triton_bf16x6();
  s.big_rounding = emulation::LowBits::toward_zero;
  SyntheticKernel k = bf16_split_kernel(s);
  const Report r = explain_kernel(k, quick({"uniform_0_1"}));
  EXPECT_FALSE(r.identified) << r.summary();
  EXPECT_TRUE(contains(r.reason, "split") || contains(r.reason, "bf16")) << r.reason;
}

// ---------------------------------------------------------------------------------------------
// The bound of split operands (error_stats.hpp, OperandSplit): the record explain finds for each of
// Triton's split flavours bounds its outputs, on distributions up to cancellation-heavy ones, and a
// kernel that forms fewer of the products than the record says breaks it.

namespace {

// The outputs of (M, N, K) = (32, 32, K) fp32 operands drawn from `dist`, summed in `tree` (K leaves) with
// node model `model` and operands split by `s`, judged by the bound of `n` at K.
ErrorStats judged_split(const SummationTree& tree, const emulation::NodeModel& model, const SplitScheme& s,
                        const Numerics& n, const std::string& dist) {
  const int M = 32, N = 32, K = tree.leaves();
  const Distribution d = parse_distribution(dist);
  const Matrix A = generate(d, Operand::A, M, K, Format::fp32, 20), B = generate(d, Operand::B, K, N, Format::fp32, 20);
  std::vector<std::pair<int, int>> all;
  for (int i = 0; i < M; ++i)
    for (int j = 0; j < N; ++j) all.emplace_back(i, j);
  const std::vector<double> x = emulation::emulate_tree_at(tree, model, A, B, all, 0, &s);
  return compute_error_stats(x, exact_gemm(A, B, Format::fp32), bound_model(n, K));
}

// split_kernel's and bf16_split_kernel's trees and node models.
SummationTree tf32_split_tree(int K) { return promoted_tree(K, 8, 32); }
SummationTree bf16_split_tree(int K) { return promoted_tree(K, 16, 32); }

}  // namespace

TEST(ExplainSplit, TritonSplitFlavoursWithinTheBoundOfTheirRecord) {
  const int K = 256;
  struct Flavour {
    SplitScheme s;
    SyntheticKernel k;
    SummationTree tree;
    emulation::NodeModel model;
  };
  const emulation::NodeModel tf32 = model_of(tc::Instruction::wgmma_m64n8k8_tf32_f32),
                             bf16 = model_of(tc::Instruction::wgmma_m64n8k16_bf16_f32);
  std::vector<Flavour> flavours;
  flavours.push_back({triton_tf32x3(), split_kernel(triton_tf32x3(), K), tf32_split_tree(K), tf32});
  flavours.push_back({triton_bf16x3(), bf16_split_kernel(triton_bf16x3(), K), bf16_split_tree(K), bf16});
  flavours.push_back({triton_bf16x6(), bf16_split_kernel(triton_bf16x6(), K), bf16_split_tree(K), bf16});
  for (Flavour& f : flavours) {
    const Report r = explain_kernel(f.k, quick({"uniform_0_1"}));
    ASSERT_TRUE(r.identified && r.numerics) << f.s.describe() << "\n" << r.summary();
    for (const std::string dist : {"uniform_0_1", "normal_0_1", "logunif_-8_8", "cancel_-10", "expspread_1"}) {
      const ErrorStats st = judged_split(f.tree, f.model, f.s, *r.numerics, dist);
      EXPECT_EQ(st.bound_violations, 0) << f.s.describe() << " on " << dist << ": componentwise " << st.componentwise
                                        << ", f " << st.gamma_bound;
      EXPECT_TRUE(st.within_bound) << dist;
    }
  }
}

TEST(ExplainSplit, AKernelFormingFewerProductsBreaksTheSplitBound) {
  // tf32x3's record judges a kernel that runs only the big x big pass (the small pieces dropped: plain
  // TF32 with big rounded to nearest away) at K = 32: its error, about 2^-12 per product, 2^-14.5 of a sum
  // of 32 positive ones, is far above the 3xTF32 bound there (gamma_96(2^-23) ~ 2^-16.4), so entries break it.
  const int K = 32;
  SyntheticKernel k3 = split_kernel(triton_tf32x3(), 2 * K);  // the record, found at K = 64
  const Report r = explain_kernel(k3, quick({"uniform_0_1"}));
  ASSERT_TRUE(r.identified && r.numerics) << r.summary();
  // The record holds the tree it was found with (K = 64): judged at K = 32, it holds the same order's
  // tree of 32 products (a tree of 64 is refused there), and the named order's bound without a tree.
  Numerics at32 = *r.numerics;
  EXPECT_THROW(bound_model(at32, K), std::invalid_argument);
  at32.tree = compact_form(tf32_split_tree(K));
  Numerics named = at32;
  named.tree.clear();
  const emulation::NodeModel tf32 = model_of(tc::Instruction::wgmma_m64n8k8_tf32_f32);
  const SplitScheme big_only = scheme(emulation::LowBits::nearest_away, {{BG, BG}}, 0, false);
  for (const Numerics& n : {at32, named}) {
    const ErrorStats st = judged_split(tf32_split_tree(K), tf32, big_only, n, "uniform_0_1");
    EXPECT_GT(st.bound_violations, 0) << "componentwise " << st.componentwise << ", f " << st.gamma_bound;
    // The kernel itself stays within it on the same inputs.
    EXPECT_EQ(judged_split(tf32_split_tree(K), tf32, triton_tf32x3(), n, "uniform_0_1").bound_violations, 0);
  }
  EXPECT_LT(gamma_bound_factor(bound_model(at32, K)), gamma_bound_factor(bound_model(named, K)));
}

// ---------------------------------------------------------------------------------------------
// A bound for any revealed tree: the record holds the tree (Numerics::tree), named where gemmlab's
// vocabulary has the order and accumulation tree where it does not, and its bound is the tree's.

namespace {

// Triton's fp32 (ieee) kernel whose K loop runs backwards: one FMA chain, blocks of B in decreasing order.
SummationTree decreasing_blocks_fma(int K, int B) {
  SummationTree t(K);
  int cur = -1;
  for (int b = K / B - 1; b >= 0; --b)
    for (int k = b * B; k < (b + 1) * B; ++k) cur = cur < 0 ? k : t.add_node({cur, k});
  return t;
}

// The kernel's outputs at every entry on `dist`, judged by the bound of record n (as `gemmlab run`
// judges a kernel under its record).
ErrorStats judged_by_record(SyntheticKernel& k, const Numerics& n, const std::string& dist) {
  const Distribution d = parse_distribution(dist);
  const Matrix A = generate(d, Operand::A, k.M(), k.K(), k.input(), 7), B = generate(d, Operand::B, k.K(), k.N(), k.input(), 7);
  std::vector<Entry> all;
  for (int i = 0; i < k.M(); ++i)
    for (int j = 0; j < k.N(); ++j) all.emplace_back(i, j);
  const std::vector<std::uint64_t> bits = k.run_full(A, B, all);
  std::vector<double> c;
  for (std::uint64_t b : bits) c.push_back(from_bits(k.output(), b));
  return compute_error_stats(c, exact_gemm(A, B, k.output()), bound_model(n, k.K()));
}

}  // namespace

TEST(ExplainRecord, DecreasingKBlocksHaveATreeRecordAndAreJudgedByItsBound) {
  // Identified with 0 mismatches before, but judged no_bound: no named order has this tree.
  const int K = 256;
  const SummationTree tree = decreasing_blocks_fma(K, 32);
  SyntheticKernel k(32, 32, K, Format::fp32, tree, [](int) { return std::nullopt; });
  const Report r = explain_kernel(k, quick({"uniform_0_1", "normal_0_1", "logunif_-8_8"}));
  ASSERT_TRUE(r.identified) << r.summary();
  for (const Comparison& c : r.comparisons) EXPECT_EQ(c.mismatches, 0) << c.distribution;
  EXPECT_FALSE(numerics_for(tree, Format::fp32, Format::fp32, Conversion::as_is, {}).has_value());
  ASSERT_TRUE(r.numerics) << r.summary();
  const Numerics& n = *r.numerics;
  EXPECT_EQ(n.accumulation, Accumulation::tree);
  EXPECT_EQ(n.tree, compact_form(tree));
  EXPECT_EQ(r.tree.form, n.tree);
  EXPECT_EQ(parse_compact_form(n.tree, K).canonical(), tree.canonical());
  EXPECT_EQ(emulation::expected_tree(n, K).canonical(), tree.canonical());
  EXPECT_FALSE(n.instruction.has_value());
  // Its bound: an FMA chain of K roundings of 2^-24 whatever the order, so gamma_K(2^-24).
  EXPECT_EQ(r.path_roundoff, K * 0x1p-24);
  EXPECT_EQ(r.path_roundings, K);
  EXPECT_EQ(r.bound, gamma_bound_factor(bound_model(n, K)));
  EXPECT_TRUE(std::isfinite(r.bound));
  EXPECT_TRUE(std::isnan(r.named_bound));
  EXPECT_TRUE(contains(r.summary(), "bound: |C^ - C| <= ")) << r.summary();
  // Judged by it on the three distributions: passed (within the bound, every entry written).
  for (const std::string dist : {"uniform_0_1", "normal_0_1", "logunif_-8_8"}) {
    const ErrorStats st = judged_by_record(k, n, dist);
    EXPECT_TRUE(st.within_bound) << dist;
    EXPECT_EQ(st.bound_violations, 0) << dist;
    EXPECT_TRUE(std::isfinite(st.gamma_bound)) << dist;
  }
}

TEST(ExplainRecord, NamedOrdersHoldTheirTreeAndItsBoundIsNoWeaker) {
  SyntheticKernel k(64, 64, 256, Format::fp16, blocked_tree(256, 16, true), model_of(tc::Instruction::mma_m16n8k16_f16_f32));
  const Report r = explain_kernel(k, quick({"uniform_0_1"}));
  ASSERT_TRUE(r.identified && r.numerics) << r.summary();
  EXPECT_EQ(r.numerics->accumulation, Accumulation::in_mma);
  EXPECT_EQ(r.numerics->tree, compact_form(blocked_tree(256, 16, true)));
  EXPECT_TRUE(r.numerics->predictable());  // the named order still predicts it from the record alone
  EXPECT_LE(r.bound, r.named_bound);
  EXPECT_LT(r.bound, r.named_bound / 2);  // 16 products per rounding of the running sum, not 16 roundings
  for (const std::string dist : {"uniform_0_1", "normal_0_1"}) EXPECT_TRUE(judged_by_record(k, *r.numerics, dist).within_bound);
}

TEST(ExplainRecord, Fp16AccumulatorAt4096HasABoundWhereGammaKReachesOne) {
  // The Triton fp16-accumulator kernel's record at K = 4096: gamma_K(2^-10) is past 1, the tree's is not.
  NodeKind first, chained;
  first.leaves = chained.leaves = 16;
  chained.carry = true;
  first.same_as = chained.same_as = "wgmma_m64n8k16_f16_f16 mma_m16n8k16_f16_f16";
  const SummationTree tree = blocked_tree(4096, 16, true);
  const std::optional<Numerics> n = record_for(tree, Format::fp16, Format::fp16, Conversion::as_is, {first, chained});
  ASSERT_TRUE(n.has_value());
  EXPECT_EQ(n->accumulation, Accumulation::in_wgmma);
  EXPECT_EQ(n->accumulator, Format::fp16);
  EXPECT_EQ(n->tree, compact_form(tree));
  const double f = gamma_bound_factor(bound_model(*n, 4096));
  EXPECT_TRUE(std::isfinite(f)) << f;
  EXPECT_LT(f, 0.2);
  Numerics named = *n;
  named.tree.clear();
  EXPECT_TRUE(std::isinf(gamma_bound_factor(bound_model(named, 4096))));
  // The same nodes in decreasing block order: accumulation tree, the same bound (a chain of 256 nodes).
  SummationTree reversed(4096);
  int cur = -1;
  for (int b = 255; b >= 0; --b) {
    std::vector<int> ch;
    if (cur >= 0) ch.push_back(cur);
    for (int x = 16 * b; x < 16 * (b + 1); ++x) ch.push_back(x);
    cur = reversed.add_node(ch);
  }
  const std::optional<Numerics> t = record_for(reversed, Format::fp16, Format::fp16, Conversion::as_is, {first, chained});
  ASSERT_TRUE(t.has_value());
  EXPECT_EQ(t->accumulation, Accumulation::tree);
  ASSERT_TRUE(t->instruction.has_value());
  EXPECT_EQ(tc::info(*t->instruction).name, std::string("wgmma_m64n8k16_f16_f16"));
  EXPECT_EQ(gamma_bound_factor(bound_model(*t, 4096)), f);
  // A node model no instruction has: no record (and so no bound), never a guessed one.
  NodeKind odd = chained;
  odd.same_as.clear();
  EXPECT_FALSE(record_for(reversed, Format::fp16, Format::fp16, Conversion::as_is, {first, odd}).has_value());
}

// ---------------------------------------------------------------------------------------------
// Trees in words: the summary, the CSV's `tree` and the metadata say the tree in a line or a few.

TEST(ExplainWords, TheRevealedTreeInALine) {
  // The decreasing-K-block Triton tree, which printed as ~130 nested levels at K = 4096 before.
  const int K = 256;
  SyntheticKernel dec(32, 32, K, Format::fp32, decreasing_blocks_fma(K, 32), [](int) { return std::nullopt; });
  const Report r = explain_kernel(dec, quick({"uniform_0_1"}));
  ASSERT_TRUE(r.identified) << r.summary();
  EXPECT_EQ(r.tree.text, "an FMA chain over 256 products: 8 blocks of 32 in decreasing block order, increasing k within a block");
  EXPECT_TRUE(contains(r.summary(), "  tree: " + r.tree.text)) << r.summary();
  EXPECT_TRUE(contains(r.numerics_text, r.tree.text)) << r.numerics_text;
  // A named order, split parts and pairwise.
  SyntheticKernel mma(64, 64, 128, Format::fp16, blocked_tree(128, 16, true), model_of(tc::Instruction::mma_m16n8k16_f16_f32));
  EXPECT_EQ(explain_kernel(mma, quick({"uniform_0_1"})).tree.text,
            "a chain of 8 fused nodes of 16 products (each also adds the running sum), the blocks in increasing k");
  SyntheticKernel split(64, 64, 128, Format::fp16, split_blocked_tree(128, 16, 2, true),
                        model_of(tc::Instruction::mma_m16n8k16_f16_f32));
  const std::string w = explain_kernel(split, quick({"uniform_0_1"})).tree.text;
  EXPECT_TRUE(contains(w, "2 parts of 64 products added one by one in increasing k")) << w;
  EXPECT_TRUE(contains(w, "each part a chain of 4 fused nodes of 16 products")) << w;
  SyntheticKernel pair(32, 32, 64, Format::fp32, pairwise_tree(64), [](int) { return std::nullopt; });
  const Report p = explain_kernel(pair, quick({"uniform_0_1"}));
  EXPECT_EQ(p.tree.text, "a pairwise sum (recursive halving) of 64 products") << p.summary();
}

// Options::predictions_file: per distribution and compared entry, the accumulator's value before the
// output rounding, exactly (%a). Here an fp32 FMA chain of fp16 operands writing fp16: each value must
// be the chain's fp32 sum computed here (not its fp16 output).
TEST(ExplainPredictions, FileHoldsTheAccumulatorBeforeTheOutputRounding) {
  SyntheticKernel k(32, 48, 64, Format::fp16, sequential_tree(64), [](int) { return std::nullopt; });
  k.output_format = Format::fp16;
  Options o = quick({"uniform_0_1", "normal_0_1"});
  o.compare_outputs = 0;  // every output
  o.predictions_file = ::testing::TempDir() + "explain_predictions.txt";
  const Report r = explain_kernel(k, o);
  ASSERT_TRUE(r.identified) << r.summary();
  std::FILE* f = std::fopen(o.predictions_file.c_str(), "r");
  ASSERT_NE(f, nullptr);
  std::map<std::string, Matrix> a, b;
  for (const std::string& d : o.distributions) {
    a[d] = generate(parse_distribution(d), Operand::A, 32, 64, Format::fp16, o.seed, 1);
    b[d] = generate(parse_distribution(d), Operand::B, 64, 48, Format::fp16, o.seed, 1);
  }
  char dist[64];
  int i = 0, j = 0, lines = 0;
  double v = 0;
  while (std::fscanf(f, "%63s %d %d %la", dist, &i, &j, &v) == 4) {
    ++lines;
    const Matrix& A = a.at(dist);
    const Matrix& B = b.at(dist);
    float s = 0;
    for (int t = 0; t < 64; ++t)
      s = std::fma(static_cast<float>(A.v[i * 64 + t]), static_cast<float>(B.v[t * 48 + j]), s);
    EXPECT_EQ(v, static_cast<double>(s)) << dist << " C(" << i << "," << j << ")";
  }
  std::fclose(f);
  EXPECT_EQ(lines, 2 * 32 * 48);
}

// ---------------------------------------------------------------------------------------------
// FPRev with one operand carrying M and u (FprevCarrier, Options::fprev_carrier): the other operand holds
// only 1 and 0 (-1 at one product when A carries), which a quantized operand of unit scale can hold, and
// the tree revealed is the one both operands reveal.

namespace {

// The values each operand takes in the launches of the stages named (the gemm, tree and scheduling stages').
class OperandValues : public ForwardingOracle {
 public:
  using ForwardingOracle::ForwardingOracle;
  std::string stage;
  std::set<std::string> stages{"gemm", "tree", "scheduling"};
  std::set<double> a, b;
  std::vector<std::uint64_t> run_sparse(const SparseInputs& in, const std::vector<Entry>& entries) override {
    if (stages.count(stage)) {
      const auto note = [](const SparseVector& v, std::set<double>& to) {
        if (v.fill_from < v.fill_to) to.insert(v.fill);
        for (const auto& [k, x] : v.at) to.insert(x);
      };
      for (const SparseVector& v : in.a_rows) note(v, a);
      for (const SparseVector& v : in.b_cols) note(v, b);
    }
    return ForwardingOracle::run_sparse(in, entries);
  }

 protected:
  void before_launch() override {}
};

}  // namespace

TEST(FprevCarrier, OneOperandCarriesMAndUWithinItsOwnRange) {
  for (Format in : {Format::bf16, Format::fp16, Format::fp32}) {
    SCOPED_TRACE(info(in).name);
    const FprevMasks both = grouped_masks(in, in, Format::fp32, 4096);
    const FprevMasks b = choose_fprev_masks(in, in, Format::fp32, Format::fp32, 4096, FprevUnits::grouped,
                                            FprevCarrier::b);
    const FprevMasks a = choose_fprev_masks(in, in, Format::fp32, Format::fp32, 4096, FprevUnits::grouped,
                                            FprevCarrier::a);
    EXPECT_EQ(b.a_big(), 1.0);
    EXPECT_EQ(b.a_unit(), 1.0);
    EXPECT_EQ(a.b_big(), 1.0);
    EXPECT_EQ(a.b_unit(), 1.0);
    EXPECT_EQ(a.a_big(), b.b_big());
    EXPECT_EQ(a.a_unit(), b.b_unit());
    // M and u in the carrier's own range: at most its largest power of two, at least its smallest subnormal.
    EXPECT_LE(b.b_big(), info(in).max_finite);
    EXPECT_GE(b.b_unit(), std::ldexp(1.0, info(in).emin - info(in).precision + 1));
    EXPECT_GE(b.margin_bits, 26);
    EXPECT_LE(b.b_big(), both.a_big() * both.b_big());
  }
  // e4m3 alone: M = 2^8, u down to 2^-9: M / u = 2^17 leaves groups of 2^-9 units too few to absorb (< 2^26).
  EXPECT_THROW(choose_fprev_masks(Format::e4m3, Format::e4m3, Format::fp32, Format::fp32, 4096, FprevUnits::grouped,
                                  FprevCarrier::b),
               std::invalid_argument);
}

TEST(FprevCarrier, OneOperandOfOnesRevealsTheSameTree) {
  const int K = 256;
  struct Case {
    const char* name;
    Format input;
    SummationTree tree;
    emulation::NodeModel model;
  };
  const emulation::NodeModel none = [](int) -> std::optional<tc::TcParams> { return std::nullopt; };
  const std::vector<Case> cases{
      {"bf16 in-mma chain", Format::bf16, blocked_tree(K, 16, true), model_of(tc::Instruction::mma_m16n8k16_bf16_f32)},
      {"fp16 split-K 2", Format::fp16, split_blocked_tree(K, 16, 2, true), model_of(tc::Instruction::mma_m16n8k16_f16_f32)},
      {"fp32 FMA chain", Format::fp32, sequential_tree(K), none},
      {"fp32 pairwise", Format::fp32, pairwise_tree(K), none}};
  for (const Case& c : cases) {
    std::string canonical;
    for (FprevCarrier carrier : {FprevCarrier::both, FprevCarrier::a, FprevCarrier::b}) {
      SCOPED_TRACE(std::string(c.name) + ", carrier " + std::to_string(static_cast<int>(carrier)));
      SyntheticKernel k(32, 32, K, c.input, c.tree, c.model);
      OperandValues o(k);
      Options opt;
      opt.distributions = {"uniform_0_1"};
      opt.verify_pairs = 16;
      opt.max_probes = 2000;
      opt.fprev_carrier = carrier;
      opt.on_stage = [&o](const Report&, const std::string& stage) { o.stage = stage; };
      const Report r = explain_kernel(o, opt);
      ASSERT_TRUE(r.tree.ok) << r.summary();
      EXPECT_TRUE(r.identified) << r.summary();
      for (const Comparison& cmp : r.comparisons) EXPECT_EQ(cmp.mismatches, 0);
      if (carrier == FprevCarrier::both) canonical = r.tree.tree.canonical();
      EXPECT_EQ(r.tree.tree.canonical(), canonical);
      ASSERT_FALSE(o.a.empty());
      if (carrier == FprevCarrier::b) {
        for (double x : o.a) EXPECT_TRUE(x == 0 || x == 1) << x;
        EXPECT_GT(*o.b.rbegin(), 1.0) << "B holds M";
        EXPECT_EQ(o.b.count(-*o.b.rbegin()), 1u) << "and -M";
      }
      if (carrier == FprevCarrier::a) {
        for (double x : o.b) EXPECT_TRUE(x == 0 || x == 1 || x == -1) << x;
        EXPECT_GT(*o.a.rbegin(), 1.0) << "A holds M";
      }
    }
  }
}

// ---------------------------------------------------------------------------------------------
// The nodes stage within the values an operand holds (Options::values_a, values_b): a quantized operand of
// unit scale (MXFP4's e2m1 elements, int4 weights -8..7) against a bf16 or fp16 one. Its probes' products are
// written within those values, so the instruction and its arithmetic found are those found with every value,
// every launch of the gemm, tree, nodes and scheduling stages keeps the operand to them, and the outputs are
// predicted bit for bit.

namespace {

// Every finite value of a format of at most 8 bits, sorted (both zeros as one).
std::vector<double> values_of(Format f) {
  std::set<double> v;
  for (std::uint64_t bits = 0; bits < (1u << info(f).storage_bits); ++bits) {
    const double x = from_bits(f, bits);
    if (std::isfinite(x)) v.insert(x == 0 ? 0.0 : x);
  }
  return {v.begin(), v.end()};
}

// A uint4 weight of unit scale and zero 0 dequantized: (q - 8) 1 + 0 for q in 0 .. 15.
std::vector<double> uint4_unit_values() { return unit_scale_values(parse_quant_spec("uint4_g32")); }

// A kernel of `input` with `ins`'s fused nodes whose quantized operand holds values_a or values_b (at unit
// scale), FPRev's M and u on `carrier`; explained on `distributions` (quantized problems), where the kernel
// converts B by conv_b, and whether it is then identified.
struct WithinCase {
  const char* name;
  Format input;
  tc::Instruction ins;
  FprevCarrier carrier;
  std::vector<double> values_a, values_b;
  std::vector<std::string> distributions{};
  Conversion conv_b = Conversion::as_is;
  bool identified = true;
};

}  // namespace

TEST(ExplainWithinValues, AQuantizedOperandOfUnitScaleGivesTheSameNodes) {
  const int K = 256;
  const std::vector<double> int4 = uint4_unit_values();
  const std::vector<WithinCase> cases{
      {"e2m1 A x bf16 B", Format::bf16, tc::Instruction::mma_m16n8k16_bf16_f32, FprevCarrier::b, values_of(Format::e2m1), {}},
      {"e4m3 A x bf16 B", Format::bf16, tc::Instruction::mma_m16n8k16_bf16_f32, FprevCarrier::b, values_of(Format::e4m3), {}},
      {"fp16 A x int4 B", Format::fp16, tc::Instruction::mma_m16n8k16_f16_f32, FprevCarrier::a, {}, int4}};
  for (const WithinCase& c : cases) {
    SCOPED_TRACE(c.name);
    std::string instruction, arithmetic;
    std::set<std::string> ruled_out;  // the candidates whose measured models some probe contradicts
    for (const bool within : {false, true}) {
      SyntheticKernel k(32, 32, K, c.input, blocked_tree(K, 16, true), model_of(c.ins));
      OperandValues o(k);
      o.stages.insert({"conversion", "nodes"});
      Options opt;
      opt.distributions = {"uniform_0_1"};
      opt.verify_pairs = 16;
      opt.max_probes = 2000;
      opt.fprev_carrier = c.carrier;
      if (within) opt.values_a = c.values_a, opt.values_b = c.values_b;
      opt.on_stage = [&o](const Report&, const std::string& stage) { o.stage = stage; };
      const Report r = explain_kernel(o, opt);
      ASSERT_TRUE(r.nodes.ok) << r.summary();
      EXPECT_TRUE(r.identified) << r.summary();
      for (const Comparison& cmp : r.comparisons) EXPECT_EQ(cmp.mismatches, 0);
      ASSERT_FALSE(r.nodes.kinds.empty());
      const NodeKind& nk = r.nodes.kinds.back();
      std::cout << "[ info ] " << c.name << (within ? " within its values" : " every value") << ": " << nk.instruction
                << ", " << nk.probes << " probes\n";
      std::set<std::string> out;
      for (const auto& cand : nk.candidates)
        if (cand.mismatching > 0) out.insert(cand.instruction);
      std::cout << "[ info ]   ruled out: " << out.size() << " of " << nk.candidates.size() << " candidates\n";
      const std::set<double>& held = c.values_a.empty() ? o.b : o.a;
      const std::vector<double>& allowed = c.values_a.empty() ? c.values_b : c.values_a;
      ASSERT_FALSE(held.empty());
      const auto outside = std::count_if(held.begin(), held.end(), [&](double x) {
        return !std::binary_search(allowed.begin(), allowed.end(), x);
      });
      if (!within) {
        instruction = nk.instruction;
        arithmetic = nk.params.describe();
        ruled_out = out;
        EXPECT_GT(outside, 0) << "with every value the probes go beyond the quantized operand's";
        continue;
      }
      EXPECT_EQ(nk.instruction, instruction);
      EXPECT_EQ(nk.params.describe(), arithmetic);
      EXPECT_EQ(out, ruled_out) << "the same candidates ruled out";
      EXPECT_EQ(outside, 0);
      for (double x : held) EXPECT_TRUE(std::binary_search(allowed.begin(), allowed.end(), x)) << x;
      EXPECT_GT((c.values_a.empty() ? o.a : o.b).size(), held.size()) << "the other operand carries the rest";
    }
  }
}

// An arithmetic no instruction has (bf16 products aligned to fewer bits than the measured models keep), found by
// the inference from the probes' outcomes: the probes within e2m1's values on A find the same model.
TEST(ExplainWithinValues, AnArithmeticNoInstructionHasIsInferredTheSame) {
  const int K = 256;
  tc::TcParams odd = *tc::measured_hopper_params(tc::Instruction::mma_m16n8k16_bf16_f32);
  odd.neab = -3;
  std::string inferred;
  for (const bool within : {false, true}) {
    SCOPED_TRACE(within ? "A within e2m1's values" : "every value");
    SyntheticKernel k(32, 32, K, Format::bf16, blocked_tree(K, 16, true), [odd](int leaves) -> std::optional<tc::TcParams> {
      if (leaves != 16) return std::nullopt;
      return odd;
    });
    OperandValues o(k);
    o.stages.insert({"conversion", "nodes"});
    Options opt;
    opt.distributions = {"normal_0_1"};
    opt.verify_pairs = 16;
    opt.max_probes = 4000;  // the inference needs them (2,000 leave it undecided)
    opt.fprev_carrier = FprevCarrier::b;
    if (within) opt.values_a = values_of(Format::e2m1);
    opt.on_stage = [&o](const Report&, const std::string& stage) { o.stage = stage; };
    const Report r = explain_kernel(o, opt);
    ASSERT_TRUE(r.identified) << r.summary();
    for (const Comparison& cmp : r.comparisons) EXPECT_EQ(cmp.mismatches, 0);
    const NodeKind& nk = r.nodes.kinds.back();
    EXPECT_FALSE(nk.inferred_from.empty()) << "no measured model has this arithmetic: it is inferred";
    EXPECT_EQ(nk.params.neab, -3) << nk.params.describe();
    std::cout << "[ info ] " << (within ? "within e2m1: " : "every value: ") << nk.params.describe() << " ("
              << nk.probes << " probes, " << nk.skipped << " left out)\n";
    if (!within) inferred = nk.params.describe();
    else EXPECT_EQ(nk.params.describe(), inferred);
  }
}

// A kernel that rounds its dequantized B by `how` before it multiplies (a weight-only kernel: (q - 8) s + z
// computed in some arithmetic, then in the format of its products): the quantized problem as Oracle's default
// makes it, B rounded for the kernel, the caller given the exact dequantized operands.
class RoundsDequantizedB : public ForwardingOracle {
 public:
  RoundsDequantizedB(Oracle& inner, std::function<double(double)> how) : ForwardingOracle(inner), how_(std::move(how)) {}
  std::vector<std::uint64_t> run_generated(const Distribution& d, std::uint64_t seed, int threads,
                                           const std::vector<Entry>& entries, Matrix& A, Matrix& B) override {
    const QuantizedProblem p = make_quantized_problem(d, M(), N(), K(), seed, threads);
    A = p.A.dequantized();
    B = p.B.dequantized();
    Matrix rounded = B;
    for (double& v : rounded.v) v = how_(v);
    return inner_.run_full(A, rounded, entries);
  }

 protected:
  void before_launch() override {}

 private:
  std::function<double(double)> how_;
};

// The X x bf16 forms end to end on the CPU: a kernel that multiplies the dequantized operands exactly (as
// tl.dot_scaled's MXFP4 x bf16 does on Hopper: every e2m1 or e4m3 element times its E8M0 scale is a bf16
// value) is explained with its quantized operand held to its elements' values at unit scale (the gemm, tree,
// nodes and scheduling stages) and predicted on the real quantized problems (SOURCE@RECIPE: every element times
// its scales): 0 outputs mispredicted. A weight-only kernel cannot multiply its dequantized weights ((q - 8) s + z)
// exactly in fp16 or bf16: it rounds them first, and the composition finds how (Report::Dequantization) among
// dequantization_candidates(), or, for a way that is none of them, says how many outputs each mispredicts.
TEST(ExplainWithinValues, QuantizedProblemsArePredictedFromTheDequantizedOperands) {
  const int K = 256;
  const std::vector<double> int4 = uint4_unit_values();
  const std::vector<WithinCase> cases{
      {"MXFP4 x bf16", Format::bf16, tc::Instruction::mma_m16n8k16_bf16_f32, FprevCarrier::b, values_of(Format::e2m1), {},
       {"normal_0_1@mxfp4_x_bf16", "uniform_-1_1@mxfp4_x_bf16"}, Conversion::as_is, true},
      {"MXFP8 e4m3 x bf16", Format::bf16, tc::Instruction::mma_m16n8k16_bf16_f32, FprevCarrier::b,
       values_of(Format::e4m3), {}, {"normal_0_1@mxfp8_e4m3_x_bf16"}, Conversion::as_is, true},
      {"fp16 x uint4 g32, the weights rounded to fp16", Format::fp16, tc::Instruction::mma_m16n8k16_f16_f32,
       FprevCarrier::a, {}, int4, {"uniform_-1_1@fp16_x_uint4_g32", "normal_0_1@fp16_x_uint4_g32"}, Conversion::fp16_rne,
       true}};
  for (const WithinCase& c : cases) {
    SCOPED_TRACE(c.name);
    SyntheticKernel k(32, 32, K, c.input, blocked_tree(K, 16, true), model_of(c.ins), Conversion::as_is, c.conv_b);
    OperandValues o(k);
    o.stages.insert({"conversion", "nodes"});
    Options opt;
    opt.distributions = c.distributions;
    opt.verify_pairs = 16;
    opt.max_probes = 2000;
    opt.fprev_carrier = c.carrier;
    opt.values_a = c.values_a;
    opt.values_b = c.values_b;
    opt.on_stage = [&o](const Report&, const std::string& stage) { o.stage = stage; };
    const Report r = explain_kernel(o, opt);
    ASSERT_TRUE(r.nodes.ok) << r.summary();
    const std::set<double>& held = c.values_a.empty() ? o.b : o.a;
    const std::vector<double>& allowed = c.values_a.empty() ? c.values_b : c.values_a;
    ASSERT_FALSE(held.empty());
    for (double x : held) EXPECT_TRUE(std::binary_search(allowed.begin(), allowed.end(), x)) << x;
    if (c.identified) {
      EXPECT_TRUE(r.identified) << r.summary();
      ASSERT_TRUE(r.numerics.has_value()) << r.summary();
      // A known kernel of the same numerics (a plain one, as the built-in kernels are): alike on the dequantized
      // operands, which the summary says.
      Options again = opt;
      again.known = {KnownKernel{"twin", *r.numerics, *tc::measured_hopper_params(c.ins)}};
      OperandValues o2(k);
      const Report r2 = explain_kernel(o2, again);
      EXPECT_EQ(r2.behaves_like, std::vector<std::string>{"twin"}) << r2.summary();
      EXPECT_NE(r2.summary().find("behaves exactly like (on the dequantized operands): twin"), std::string::npos)
          << r2.summary();
      ASSERT_EQ(r.comparisons.size(), c.distributions.size()) << r.summary();
      for (const Comparison& cmp : r.comparisons) {
        EXPECT_GT(cmp.outputs, 0);
        EXPECT_EQ(cmp.mismatches, 0) << cmp.distribution;
      }
    }
    EXPECT_TRUE(r.quantized);
    if (c.conv_b == Conversion::fp16_rne) {  // the weights rounded once to fp16: found
      EXPECT_EQ(r.dequantization.operands, "B");
      EXPECT_EQ(r.dequantization.chosen, "rn");
      ASSERT_EQ(r.dequantization.tried.size(), dequantization_candidates().size());
      EXPECT_EQ(r.dequantization.tried[0].second, 0);
      EXPECT_EQ(r.dequantization.trial_outputs, 2LL * 32 * 32);
      EXPECT_NE(r.summary().find("dequantized B rounded by the kernel: rn"), std::string::npos) << r.summary();
      EXPECT_NE(r.numerics_text.find("the dequantized B rounded once to nearest even into fp16"), std::string::npos)
          << r.numerics_text;
    } else {
      EXPECT_TRUE(r.dequantization.operands.empty()) << "every dequantized value is a bf16 value: nothing rounded";
    }
  }
}

// The ways a weight-only kernel rounds its dequantized weights: bf16 x uint4 kernels rounding (q - 8) s + z once
// into bf16 (a bf16 fma, as torch's tinygemm dequantizes) or through fp32 first (a W4A16 kernel's fp32 arithmetic):
// each predicted with 0 mismatches. Rounded toward zero (no candidate's way), no candidate predicts every output:
// the kernel is not identified, and each candidate's mismatches are reported.
TEST(ExplainWithinValues, AWeightOnlyKernelsRoundingOfItsWeightsIsFound) {
  const int K = 256;
  struct Case {
    const char* name;
    std::function<double(double)> how;
    bool identified;
  };
  auto bf16 = [](double v, Rounding m) { return tc::round_to_format(Format::bf16, v, m); };
  const std::vector<Case> cases{
      {"once to nearest even", [&](double v) { return bf16(v, Rounding::nearest_even); }, true},
      {"fp32, then to nearest even",
       [&](double v) { return bf16(tc::round_to_format(Format::fp32, v, Rounding::nearest_even), Rounding::nearest_even); },
       true},
      {"toward zero", [&](double v) { return bf16(v, Rounding::toward_zero); }, false}};
  for (const Case& c : cases) {
    SCOPED_TRACE(c.name);
    SyntheticKernel k(32, 32, K, Format::bf16, blocked_tree(K, 16, true), model_of(tc::Instruction::mma_m16n8k16_bf16_f32));
    RoundsDequantizedB rk(k, c.how);
    Options opt;
    opt.distributions = {"uniform_-1_1@bf16_x_uint4_g32", "normal_0_1@bf16_x_uint4_g128"};
    opt.verify_pairs = 16;
    opt.max_probes = 2000;
    opt.fprev_carrier = FprevCarrier::a;
    opt.values_b = uint4_unit_values();
    const Report r = explain_kernel(rk, opt);
    ASSERT_TRUE(r.nodes.ok) << r.summary();
    ASSERT_EQ(r.dequantization.operands, "B") << r.summary();
    ASSERT_EQ(r.dequantization.tried.size(), dequantization_candidates().size());
    EXPECT_EQ(r.dequantization.trial_outputs, 2LL * 32 * 32);
    long long fewest = -1;
    for (const auto& [name, miss] : r.dequantization.tried) fewest = fewest < 0 ? miss : std::min(fewest, miss);
    for (const auto& [name, miss] : r.dequantization.tried)
      if (name == r.dequantization.chosen) EXPECT_EQ(miss, fewest) << "the candidate predicting the most is taken";
    std::cout << "[ info ] " << c.name << ": " << r.summary().substr(r.summary().find("dequantized B"));
    EXPECT_EQ(r.identified, c.identified) << r.summary();
    if (c.identified) {
      EXPECT_EQ(fewest, 0);
      for (const Comparison& cmp : r.comparisons) EXPECT_EQ(cmp.mismatches, 0) << cmp.distribution;
    } else {
      EXPECT_GT(fewest, 0) << "toward zero is no candidate's way";
      EXPECT_EQ(r.failed_stage, "composition") << r.summary();
    }
  }
}
