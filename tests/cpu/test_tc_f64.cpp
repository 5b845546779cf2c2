// The fp64 tensor-core instruction (mma_m8n8k4_f64, issue 23): the binary64 candidates of the model
// (reference/tc_model.hpp: arithmetic fma_chain in either order, fused_sum, block_fused) on
// hand-computed dyadic cases, inference picking each back from outcomes the model synthesises (and
// saying "none fits" for an arithmetic it does not have), tc-eval on the instruction, and the
// emulation of dgemm_mma_01_m8n8k4's order under the hypothesis and under a fused model.
#include <gtest/gtest.h>

#include <algorithm>
#include <bit>
#include <cmath>
#include <cstdint>
#include <limits>
#include <map>
#include <sstream>
#include <string>
#include <vector>

#include "experiments/engine/tc_eval.hpp"
#include "experiments/plan/plan.hpp"
#include "reference/kernel_emulation.hpp"
#include "reference/numerics.hpp"
#include "reference/rng.hpp"
#include "reference/tc_corpus.hpp"
#include "reference/tc_infer.hpp"

using namespace gemmlab;
using namespace gemmlab::tc;

namespace {

double p2(int e) { return std::ldexp(1.0, e); }
std::uint64_t bits(double x) { return std::bit_cast<std::uint64_t>(x); }

const InstructionInfo& dmma() { return info(Instruction::mma_m8n8k4_f64); }

// An FMA chain, or fused sums, in steps of `step` products (4: the whole of m8n8k4).
TcParams chain(ChainOrder order, int step = 4) {
  TcParams p;
  p.arithmetic = Arithmetic::fma_chain;
  p.chain_order = order;
  p.block_size = step;
  p.input = p.output = Format::fp64;
  p.output_rounding = Rounding::nearest_even;
  return p;
}

TcParams fused(int step = 4) {
  TcParams p = chain(ChainOrder::increasing, step);
  p.arithmetic = Arithmetic::fused_sum;
  return p;
}

// The block-fused datapath on binary64: one block of 4, F = 52 + neab fraction bits below the
// largest exponent, alignment truncated, output rounded to nearest.
TcParams block(int neab) {
  TcParams p;
  p.input = p.output = Format::fp64;
  p.block_size = 4;
  p.neab = neab;
  p.align_rounding = Rounding::toward_zero;
  p.output_rounding = Rounding::nearest_even;
  return p;
}

std::uint64_t d_bits(const TcParams& p, std::vector<double> a, std::vector<double> b, double c) {
  return encode_output(p, dot(p, a.data(), b.data(), 4, c));
}

std::vector<ProbeOutcome> synthesise(const TcParams& p, const std::vector<Probe>& probes) {
  std::vector<ProbeOutcome> out;
  for (const Probe& pr : probes) out.push_back({pr, predict_bits(p, pr)});
  return out;
}

std::vector<Probe> probes_and_corpus(const InstructionInfo& ins = dmma()) {
  std::vector<Probe> v = make_probes(ins);
  for (Probe& p : make_corpus(ins)) v.push_back(std::move(p));
  return v;
}

double dot16(const TcParams& p, const std::map<int, double>& products, double c) {
  std::vector<double> a(16, 0.0), b(16, 0.0);
  for (auto [k, x] : products) a[k] = x, b[k] = 1;
  return dot(p, a.data(), b.data(), 16, c);
}

}  // namespace

// u = 2^-53 is half an ulp of 1. C = 1, a*b = u at k = 0 and 1:
//   FMA chain (either order): RN(1 + u) is a tie, to even: 1; again 1. D = 1 = 0x3ff0000000000000.
//   fused sum: 1 + 2u = 1 + 2^-52 exactly, representable. D = 0x3ff0000000000001.
//   block F = 92 (neab 40): both u survive the alignment: 1 + 2^-52, as the fused sum.
//   block F = 52 (neab 0): the alignment to 2^0 keeps 52 fraction bits, u = 2^-53 is cut: 1.
TEST(TcF64Model, TwoTiesOfOneRoundPerStepButNotOnce) {
  const std::vector<double> a = {p2(-53), p2(-53), 0, 0}, b = {1, 1, 0, 0};
  EXPECT_EQ(d_bits(chain(ChainOrder::increasing), a, b, 1.0), 0x3ff0000000000000u);
  EXPECT_EQ(d_bits(chain(ChainOrder::decreasing), a, b, 1.0), 0x3ff0000000000000u);
  EXPECT_EQ(d_bits(fused(), a, b, 1.0), 0x3ff0000000000001u);
  EXPECT_EQ(d_bits(block(40), a, b, 1.0), 0x3ff0000000000001u);
  EXPECT_EQ(d_bits(block(0), a, b, 1.0), 0x3ff0000000000000u);
}

// C = 0; products 1, u, u, -1 at k = 0..3.
//   increasing: 1; RN(1 + u) = 1 (tie to even); 1; 1 - 1 = +0.       D = 0x0000000000000000.
//   decreasing: -1; -1 + u = -(1 - 2^-53), exact (53 bits); -(1 - 2^-52), exact; + 1 = 2^-52.
//               D = 2^-52: biased exponent 1023 - 52 = 971 = 0x3cb, D = 0x3cb0000000000000.
//   fused: 1 + 2u - 1 = 2^-52 exactly.                                D = 0x3cb0000000000000.
TEST(TcF64Model, TheChainsOrderDecidesWhereTheTiesLand) {
  const std::vector<double> a = {1, p2(-53), p2(-53), -1}, b = {1, 1, 1, 1};
  EXPECT_EQ(d_bits(chain(ChainOrder::increasing), a, b, 0.0), 0x0000000000000000u);
  EXPECT_EQ(d_bits(chain(ChainOrder::decreasing), a, b, 0.0), 0x3cb0000000000000u);
  EXPECT_EQ(d_bits(fused(), a, b, 0.0), 0x3cb0000000000000u);
}

// C = 1, products u and 2^-150: the sum 1 + 2^-53 + 2^-150 lies just above the tie.
//   fused: one rounding sees the sticky bit: up, 1 + 2^-52.          D = 0x3ff0000000000001.
//   chain: RN(1 + u) = 1 first (tie), then RN(1 + 2^-150) = 1.        D = 0x3ff0000000000000.
//   block F = 92: 2^-150 is cut by the alignment (below 2^-92), the tie goes to even: 1.
TEST(TcF64Model, AStickyBitFarBelowBreaksTheTieOnlyInOneRounding) {
  const std::vector<double> a = {p2(-53), p2(-150), 0, 0}, b = {1, 1, 0, 0};
  EXPECT_EQ(d_bits(fused(), a, b, 1.0), 0x3ff0000000000001u);
  EXPECT_EQ(d_bits(chain(ChainOrder::increasing), a, b, 1.0), 0x3ff0000000000000u);
  EXPECT_EQ(d_bits(block(40), a, b, 1.0), 0x3ff0000000000000u);
}

// A 106-bit product: (1 + 2^-52)^2 = 1 + 2^-51 + 2^-104, with C = -1: the chain's one FMA and the
// fused sum both round 2^-51 + 2^-104 once; its ulp is 2^-103, so 2^-104 is a tie, to even:
// 2^-51 = 0x3cc0000000000000. A block of F = 92 (or 52) fraction bits below 2^0 cuts 2^-104 in the
// alignment: 2^-51 as well.
TEST(TcF64Model, ProductsAreExactTo106Bits) {
  const double x = 1 + p2(-52);
  const std::vector<double> a = {x, 0, 0, 0}, b = {x, 0, 0, 0};
  for (const TcParams& p : {chain(ChainOrder::increasing), fused(), block(40), block(0)})
    EXPECT_EQ(d_bits(p, a, b, -1.0), 0x3cc0000000000000u) << p.describe();
  // Without C: 1 + 2^-51 + 2^-104 has ulp 2^-52, 2^-104 is far below half of it: 1 + 2^-51 =
  // 0x3ff0000000000002 (fused and chain alike).
  for (const TcParams& p : {chain(ChainOrder::increasing), fused()})
    EXPECT_EQ(d_bits(p, a, b, 0.0), 0x3ff0000000000002u) << p.describe();
}

// Subnormals: 2^-1074 * 2^0 + 2^-1074 * 2^0 = 2^-1073 kept; flushed inputs give +0; C = 2^-1074
// flushed as an output-side subnormal.
TEST(TcF64Model, SubnormalsAreKeptOrFlushedAsTheParametersSay) {
  const std::vector<double> a = {p2(-1074), p2(-1074), 0, 0}, b = {1, 1, 0, 0};
  for (TcParams p : {chain(ChainOrder::increasing), fused()}) {
    EXPECT_EQ(d_bits(p, a, b, 0.0), bits(p2(-1073))) << p.describe();
    p.subnormal_inputs = false;
    EXPECT_EQ(d_bits(p, a, b, 0.0), 0u) << p.describe();
    p.subnormal_inputs = true;
    p.subnormal_output = false;
    EXPECT_EQ(d_bits(p, {1, 0, 0, 0}, {1, 0, 0, 0}, p2(-1074)), bits(1.0)) << p.describe();
    EXPECT_EQ(d_bits(p, a, b, 0.0), 0u) << p.describe();  // 2^-1073 is a subnormal result: flushed
  }
}

// Special rules: the largest finite value doubled overflows (infinity to nearest, or saturated);
// 1 - 1 is +0 (IEEE) or takes C's sign; -0 products and C = -0 give -0 (IEEE) or +0 (plus); a NaN
// is written all ones or as the IEEE quiet NaN (propagate: PropagateKeepsTheFirstNanOperandsBits).
TEST(TcF64Model, SpecialRulesApplyToTheBinary64Arithmetics) {
  const double big = std::numeric_limits<double>::max();
  for (TcParams p : {chain(ChainOrder::increasing), chain(ChainOrder::decreasing), fused()}) {
    EXPECT_EQ(d_bits(p, {big, big, 0, 0}, {1, 1, 0, 0}, 0.0), 0x7ff0000000000000u) << p.describe();
    p.overflow = Overflow::saturate;
    EXPECT_EQ(d_bits(p, {big, big, 0, 0}, {1, 1, 0, 0}, 0.0), bits(big)) << p.describe();
    EXPECT_EQ(d_bits(p, {-1, 0, 0, 0}, {1, 0, 0, 0}, 1.0), 0u) << p.describe();  // ieee: 1 - 1 = +0
    const std::vector<double> minus_zeros = {-0.0, -0.0, -0.0, -0.0}, ones = {1, 1, 1, 1};
    EXPECT_EQ(d_bits(p, minus_zeros, ones, -0.0), 0x8000000000000000u) << p.describe();
    p.zero_sign = ZeroSign::plus;
    EXPECT_EQ(d_bits(p, minus_zeros, ones, -0.0), 0u) << p.describe();
    p.zero_sign = ZeroSign::c_sign;
    EXPECT_EQ(d_bits(p, {1, 0, 0, 0}, {1, 0, 0, 0}, -1.0), 0x8000000000000000u) << p.describe();
    const double nan = std::numeric_limits<double>::quiet_NaN(), inf = std::numeric_limits<double>::infinity();
    EXPECT_EQ(d_bits(p, {inf, 0, 0, 0}, {0, 0, 0, 0}, 0.0), 0x7fffffffffffffffu) << p.describe();
    p.nan_encoding = NanEncoding::ieee_quiet;
    EXPECT_EQ(d_bits(p, {nan, 0, 0, 0}, {1, 0, 0, 0}, 0.0), 0x7ff8000000000000u) << p.describe();
    EXPECT_EQ(d_bits(p, {inf, 0, 0, 0}, {1, 0, 0, 0}, 0.0), 0x7ff0000000000000u) << p.describe();
  }
}

// The fused sum is exact over the whole binary64 range: products near 2^2046 and 2^-2148 at once.
TEST(TcF64Model, TheFusedSumIsExactAcrossTheWholeRange) {
  const double big = p2(1023), tiny = p2(-1074);
  // 2^1023 - 2^1023 + 2^-1074: the large terms cancel, the smallest subnormal survives
  EXPECT_EQ(d_bits(fused(), {big, -big, tiny, 0}, {1, 1, 1, 0}, 0.0), bits(tiny));
  // 2^-1074 * 0.5 = 2^-1075 is half the smallest subnormal: alone a tie, to even: +0; with
  // 2^-1074 * 2^-1074 = 2^-2148 beside it, the tie is broken upwards: 2^-1074
  EXPECT_EQ(d_bits(fused(), {tiny, 0, 0, 0}, {0.5, 0, 0, 0}, 0.0), 0u);
  EXPECT_EQ(d_bits(fused(), {tiny, tiny, 0, 0}, {0.5, tiny, 0, 0}, 0.0), bits(tiny));
}

// Inference gives each candidate back from the outcomes it produces (probes and corpus), special
// rules included, every feature identified.
TEST(TcF64Infer, PicksEachCandidateBack) {
  const std::vector<Probe> probes = probes_and_corpus();
  TcParams saturating = chain(ChainOrder::decreasing);
  saturating.overflow = Overflow::saturate;
  saturating.zero_sign = ZeroSign::plus;
  saturating.nan_encoding = NanEncoding::ieee_quiet;
  TcParams flushing = fused();
  flushing.subnormal_inputs = false;
  const TcParams measured = *measured_hopper_params(Instruction::mma_m8n8k4_f64);  // NaN propagated
  TcParams propagating = fused();
  propagating.nan_encoding = NanEncoding::propagate;
  for (const TcParams& truth : {chain(ChainOrder::increasing), chain(ChainOrder::decreasing), fused(), saturating, flushing,
                                block(40), measured, propagating}) {
    const Inference inf = infer(dmma(), synthesise(truth, probes));
    EXPECT_EQ(inf.mismatching_probes, 0) << truth.describe();
    EXPECT_TRUE(inf.ambiguous.empty()) << truth.describe() << ": ambiguous " << inf.ambiguous.front();
    EXPECT_EQ(inf.params, truth) << "inferred " << inf.params.describe() << "\ntruth    " << truth.describe();
  }
}

// An arithmetic outside the candidates (C added after a chain of the products from +0) is not
// forced onto one: the best candidate leaves probes unexplained, and the findings say how many.
TEST(TcF64Infer, SaysNoneFitsForAnArithmeticItDoesNotHave) {
  std::vector<ProbeOutcome> outcomes;
  for (const Probe& pr : make_probes(dmma())) {
    if (pr.feature != "step_rounding") continue;  // the probes aimed at the arithmetic: seconds
    double d = 0.0;
    for (int k = 0; k < 4; ++k) d = std::fma(pr.a[k], pr.b[k], d);
    outcomes.push_back({pr, bits(d + pr.c)});
  }
  const Inference inf = infer(dmma(), outcomes);
  EXPECT_GT(inf.mismatching_probes, 0) << "inferred " << inf.params.describe();
  bool said = false;
  for (const Finding& f : inf.findings)
    if (f.feature == "model_fit")
      said = f.observed.find(std::to_string(outcomes.size() - inf.mismatching_probes) + "/" +
                             std::to_string(outcomes.size())) == 0;
  EXPECT_TRUE(said) << "model_fit does not report the unexplained probes";
}

// The probes that tell the candidates apart exist (step_rounding), and each pair of candidates
// disagrees on at least one of them.
TEST(TcF64Infer, ProbesSeparateEveryPairOfCandidates) {
  const std::vector<Probe> probes = make_probes(dmma());
  const std::vector<TcParams> c = {chain(ChainOrder::increasing), chain(ChainOrder::decreasing), fused(), block(40)};
  for (std::size_t i = 0; i < c.size(); ++i)
    for (std::size_t j = i + 1; j < c.size(); ++j) {
      int differ = 0;
      for (const Probe& p : probes)
        if (p.feature == "step_rounding") differ += predict_bits(c[i], p) != predict_bits(c[j], p);
      EXPECT_GT(differ, 0) << c[i].describe() << " vs " << c[j].describe();
    }
}

// The corpus class for binary64: most of its cases tell the chain from the fused sum.
TEST(TcF64Corpus, StepRoundingCasesSeparateChainAndFusedSum) {
  int n = 0, differ = 0, order = 0;
  for (const Probe& p : make_corpus(dmma())) {
    if (p.feature != "step_rounding") continue;
    ++n;
    differ += predict_bits(chain(ChainOrder::increasing), p) != predict_bits(fused(), p);
    order += predict_bits(chain(ChainOrder::increasing), p) != predict_bits(chain(ChainOrder::decreasing), p);
  }
  EXPECT_EQ(n, kCorpusCasesPerClass);
  EXPECT_GE(differ * 10, n * 3) << differ << " of " << n;
  EXPECT_GE(order * 10, n * 1) << order << " of " << n;
  const std::vector<std::string> cls = corpus_classes(dmma());
  EXPECT_NE(std::find(cls.begin(), cls.end(), "step_rounding"), cls.end());
  const std::vector<std::string> fp16 = corpus_classes(info(Instruction::mma_m16n8k16_f16_f32));
  EXPECT_EQ(std::find(fp16.begin(), fp16.end(), "step_rounding"), fp16.end());
}

// m16n8k16: is it one fused sum, or a chain of fused k4 steps? C = 1 and two ties u = 2^-53:
//   at k = 0 and 1 (one step of 4): a fused step keeps both, 1 + 2u = 1 + 2^-52; the chain loses them: 1;
//   at k = 0 and 4 (two steps): each k4 step rounds 1 + u to 1 (tie to even): 1; one fused sum of
//   16 keeps both: 1 + 2^-52.
// A decreasing chain in steps of 4 runs k = 3, 2, 1, 0, 7, ...: C = 0, products 1 at k = 3, u at
// k = 1 and 2, -1 at k = 0: 1, 1, 1, 0 (ties lost), where the decreasing chain over all 16 gives
// the same and the increasing one -1, -1 + u, -1 + 2u (exact), 2u = 2^-52.
TEST(TcF64Model, StepsOfFourTellAChainOfK4StepsFromOneSum) {
  const double u = p2(-53);
  EXPECT_EQ(dot16(fused(4), {{0, u}, {1, u}}, 1.0), 1 + p2(-52));
  EXPECT_EQ(dot16(fused(16), {{0, u}, {1, u}}, 1.0), 1 + p2(-52));
  EXPECT_EQ(dot16(chain(ChainOrder::increasing, 16), {{0, u}, {1, u}}, 1.0), 1.0);
  EXPECT_EQ(dot16(fused(4), {{0, u}, {4, u}}, 1.0), 1.0);
  EXPECT_EQ(dot16(fused(16), {{0, u}, {4, u}}, 1.0), 1 + p2(-52));
  const std::map<int, double> order = {{0, -1.0}, {1, u}, {2, u}, {3, 1.0}};
  EXPECT_EQ(bits(dot16(chain(ChainOrder::decreasing, 4), order, 0.0)), 0u);
  EXPECT_EQ(bits(dot16(chain(ChainOrder::increasing, 16), order, 0.0)), bits(p2(-52)));
  EXPECT_THROW(dot16(fused(3), {}, 0.0), std::invalid_argument);  // a step must divide k
}

// The longer shapes: inference tells one sum over k = 16 from a chain of fused k4 steps, and an
// FMA chain over all k from one decreasing within steps of 4.
TEST(TcF64Infer, PicksTheStepOfTheLongerShapeBack) {
  const InstructionInfo& ins = info(Instruction::mma_m16n8k16_f64);
  const std::vector<Probe> probes = probes_and_corpus(ins);
  for (const TcParams& truth : {fused(4), fused(16), chain(ChainOrder::decreasing, 4), chain(ChainOrder::increasing, 16)}) {
    const Inference inf = infer(ins, synthesise(truth, probes));
    EXPECT_EQ(inf.mismatching_probes, 0) << truth.describe();
    EXPECT_TRUE(inf.ambiguous.empty()) << truth.describe() << ": ambiguous " << inf.ambiguous.front();
    EXPECT_EQ(inf.params, truth) << "inferred " << inf.params.describe() << "\ntruth    " << truth.describe();
  }
}

// The measured model (H100 and H200, 2026-11-24): the increasing FMA chain with NaN propagated,
// every instruction "probed".
TEST(TcF64Model, MeasuredModelIsTheIncreasingChainWithPropagatedNan) {
  for (Instruction i : {Instruction::mma_m8n8k4_f64, Instruction::mma_m16n8k4_f64, Instruction::mma_m16n8k8_f64,
                        Instruction::mma_m16n8k16_f64}) {
    TcParams expected = chain(ChainOrder::increasing, info(i).k);
    expected.nan_encoding = NanEncoding::propagate;
    EXPECT_EQ(*measured_hopper_params(i), expected) << info(i).name;
    EXPECT_EQ(model_evidence(i).rfind("probed on the H100 and H200 (2026-11-24)", 0), 0u) << model_evidence(i);
    EXPECT_EQ(info(i).m, i == Instruction::mma_m8n8k4_f64 ? 8 : 16);
    EXPECT_EQ(info(i).min_cc, i == Instruction::mma_m8n8k4_f64 ? 80 : 90);
  }
  EXPECT_EQ(dmma().n, 8);
  EXPECT_EQ(dmma().k, 4);
  EXPECT_EQ(parse_instruction("mma_m8n8k4_f64"), Instruction::mma_m8n8k4_f64);
}

// nan_encoding propagate, bits written out: a NaN operand passes quieted (bit 51 set, sign and
// payload kept; the first two are the H100's corpus cases nan_inf_a/0 and nan_inf_a/4), inf * 0 and
// inf - inf give 0xfff8000000000000, and with several NaNs the first the chain meets (C, a_0, b_0,
// a_1, ...) wins, FMA by FMA: a generated NaN early in the chain beats a NaN operand later.
TEST(TcF64Model, PropagateKeepsTheFirstNanOperandsBits) {
  const auto nan = [](std::uint64_t b) { return std::bit_cast<double>(b); };
  const double inf = std::numeric_limits<double>::infinity();
  for (TcParams p : {chain(ChainOrder::increasing), fused()}) {
    p.nan_encoding = NanEncoding::propagate;
    const std::string m = p.describe();
    EXPECT_EQ(d_bits(p, {0, nan(0xfffe5676225943fc), -0.75, 0}, {0, 0.125, -0.25, 0}, 0.0),
              0xfffe5676225943fcu) << m;
    EXPECT_EQ(d_bits(p, {1, 1, nan(0x7ffc317e46275ba3), 1}, {1, 1, 0, 1}, 0.0), 0x7ffc317e46275ba3u) << m;  // NaN * 0
    EXPECT_EQ(d_bits(p, {1, 0, 0, 0}, {nan(0x7ff0000000000001), 0, 0, 0}, 0.0), 0x7ff8000000000001u) << m;  // quieted
    EXPECT_EQ(d_bits(p, {1, 2, 0, 0}, {1, 1, 0, 0}, nan(0xfff0000000000abc)), 0xfff8000000000abcu) << m;  // C's
    EXPECT_EQ(d_bits(p, {inf, 1, 0, 0}, {0, 1, 0, 0}, 0.0), kGeneratedNan) << m;               // inf * 0
    EXPECT_EQ(d_bits(p, {inf, -inf, 0, 0}, {1, 1, 0, 0}, 0.0), kGeneratedNan) << m;            // inf - inf
    EXPECT_EQ(d_bits(p, {-inf, 0, 0, 0}, {1, 0, 0, 0}, inf), kGeneratedNan) << m;              // C = inf, -inf product
    EXPECT_EQ(d_bits(p, {inf, 0, 0, 0}, {1, 0, 0, 0}, 1.0), 0x7ff0000000000000u) << m;         // no NaN: the infinity
    // several NaNs: a_0's before b_0's, C's before both, a_1's after a_0's
    EXPECT_EQ(d_bits(p, {nan(0x7ff8000000000011), 0, 0, 0}, {nan(0x7ff8000000000022), 0, 0, 0}, 0.0),
              0x7ff8000000000011u) << m;
    EXPECT_EQ(d_bits(p, {nan(0x7ff8000000000011), 0, 0, 0}, {1, 0, 0, 0}, nan(0x7ff8000000000033)),
              0x7ff8000000000033u) << m;
    EXPECT_EQ(d_bits(p, {nan(0x7ff8000000000011), nan(0x7ff8000000000044), 0, 0}, {1, 1, 0, 0}, 0.0),
              0x7ff8000000000011u) << m;
  }
  // FMA by FMA: inf * 0 at k = 0 makes the accumulator 0xfff8000000000000 before a_1's NaN is met
  TcParams p = chain(ChainOrder::increasing);
  p.nan_encoding = NanEncoding::propagate;
  EXPECT_EQ(d_bits(p, {inf, nan(0x7ff8000000000044), 0, 0}, {0, 1, 0, 0}, 0.0), kGeneratedNan);
  // decreasing order: a_1's NaN is met first (the chain runs k = 3, 2, 1, 0)
  p.chain_order = ChainOrder::decreasing;
  EXPECT_EQ(d_bits(p, {inf, nan(0x7ff8000000000044), 0, 0}, {0, 1, 0, 0}, 0.0), 0x7ff8000000000044u);
  EXPECT_EQ(std::string(to_string(NanEncoding::propagate)), "propagate");
}

// tc-eval on the instruction: the two ties of the first case, as numbers and as bits, and the
// explanation names one FMA per product.
TEST(TcF64Eval, EvaluatesAndExplainsTheInstruction) {
  std::ostringstream u;
  u.precision(17);
  u << p2(-53);
  const std::string a = u.str() + " " + u.str() + " 0 0";
  const TcEvalCase c = parse_tc_case("mma_m8n8k4_f64", a, "1 1 0 0", "1", "0x3ff0000000000000");
  const TcEvalResult r = evaluate_tc_case(c, true);
  EXPECT_EQ(r.d_bits, 0x3ff0000000000000u);
  EXPECT_EQ(r.match, true);
  const TcEvalCase cb = parse_tc_case("mma_m8n8k4_f64", "0x3ca0000000000000 0x3ca0000000000000 0 0",
                                      "0x3ff0000000000000 0x3ff0000000000000 0 0", "0x3ff0000000000000", "");
  EXPECT_EQ(evaluate_tc_case(cb).d_bits, 0x3ff0000000000000u);
  const std::vector<std::string> lines = explain_tc_case(c, r);
  int fmas = 0;
  for (const std::string& l : lines) fmas += l.find("fma: RN(") != std::string::npos;
  EXPECT_EQ(fmas, 4);
  EXPECT_THROW(parse_tc_case("mma_m8n8k4_f64", "1 1 1", "1 1 0 0", "1", ""), UsageError);
}

// dgemm_mma_01_m8n8k4's order (kernels/fp64/dgemm_mma_01_m8n8k4.cu: in_mma, k-steps of 4 in
// increasing k from +0; tests/gpu/test_fp64_tensor_core.cpp checks the kernel declares exactly
// this): under the increasing FMA chain it is the DFMA chain bit for bit; under the fused sum it
// differs where two ties meet an accumulated 1.
TEST(TcF64Emulation, KernelOrderUnderTheChainIsTheDfmaChain) {
  const Numerics order{.input = Format::fp64, .compute = Format::fp64, .accumulator = Format::fp64,
                       .output = Format::fp64, .accumulation = Accumulation::in_mma,
                       .instruction = Instruction::mma_m8n8k4_f64, .k_step = 4,
                       .accumulation_rounding = Rounding::nearest_even};
  ASSERT_TRUE(order.predictable());
  const int M = 8, N = 8, K = 64;
  Matrix A(M, K), B(K, N);
  SplitMix r{20261124};
  for (double& x : A.v) x = std::ldexp(2 * r.uniform() - 1, (int)(r.next() % 40) - 20);
  for (double& x : B.v) x = std::ldexp(2 * r.uniform() - 1, (int)(r.next() % 40) - 20);
  const std::vector<double> dfma = emulation::emulate(cuda_core_fp64_fma(), A, B, TcParams{}, 1);
  const std::vector<double> dmma_chain = emulation::emulate(order, A, B, chain(ChainOrder::increasing), 1);
  ASSERT_EQ(dfma.size(), dmma_chain.size());
  for (std::size_t e = 0; e < dfma.size(); ++e) ASSERT_EQ(bits(dfma[e]), bits(dmma_chain[e])) << "entry " << e;
  // K = 8: the first k-step accumulates 1, the second adds two ties u = 2^-53.
  Matrix A2(1, 8), B2(8, 1);
  A2.v = {1, 0, 0, 0, p2(-53), p2(-53), 0, 0};
  B2.v = {1, 0, 0, 0, 1, 1, 0, 0};
  EXPECT_EQ(bits(emulation::emulate(order, A2, B2, chain(ChainOrder::increasing), 1)[0]), bits(1.0));
  EXPECT_EQ(bits(emulation::emulate(cuda_core_fp64_fma(), A2, B2, TcParams{}, 1)[0]), bits(1.0));
  EXPECT_EQ(bits(emulation::emulate(order, A2, B2, fused(), 1)[0]), bits(1 + p2(-52)));
}
