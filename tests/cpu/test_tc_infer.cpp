// Inference round trip: probe outcomes synthesised by the model with known parameters must give
// those parameters back (reference/tc_infer.hpp).
#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>

#include "reference/tc_infer.hpp"

using namespace gemmlab;
using namespace gemmlab::tc;

namespace {

std::vector<ProbeOutcome> synthesise(const TcParams& p, const InstructionInfo& ins) {
  std::vector<ProbeOutcome> out;
  for (const Probe& pr : make_probes(ins)) {
    double d = dot(p, pr.a.data(), pr.b.data(), ins.k, pr.c);
    out.push_back({pr, encode(ins.output, d)});
  }
  return out;
}

TcParams with(const InstructionInfo& ins, int block, int neab, AlignRounding ar, OutputRounding orr,
              AlignReference ref = AlignReference::exponent_sum, bool cin = true, bool si = true, bool so = true) {
  TcParams p;
  p.input = ins.input;
  p.output = ins.output;
  p.block_size = block;
  p.neab = neab;
  p.align_rounding = ar;
  p.output_rounding = orr;
  p.align_reference = ref;
  p.c_in_alignment = cin;
  p.subnormal_inputs = si;
  p.subnormal_output = so;
  return p;
}

void expect_round_trip(const TcParams& truth, const InstructionInfo& ins,
                       const std::vector<std::string>& allowed_ambiguous = {}) {
  auto t0 = std::chrono::steady_clock::now();
  Inference inf = infer(ins, synthesise(truth, ins));
  double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  EXPECT_EQ(inf.mismatching_probes, 0) << truth.describe();
  for (const std::string& f : inf.ambiguous)
    EXPECT_NE(std::find(allowed_ambiguous.begin(), allowed_ambiguous.end(), f), allowed_ambiguous.end())
        << ins.name << ": feature " << f << " not identified for " << truth.describe();
  if (allowed_ambiguous.empty()) EXPECT_EQ(inf.params, truth) << "inferred " << inf.params.describe() << "\ntruth    " << truth.describe();
  EXPECT_LT(s, 60.0) << "inference took " << s << " s";
}

}  // namespace

TEST(TcInferProbes, AreRepresentableAndUnique) {
  for (Instruction i : all_instructions()) {
    const InstructionInfo& ins = info(i);
    auto probes = make_probes(ins);
    EXPECT_GT(probes.size(), 200u) << ins.name;
    std::set<std::string> ids;
    for (const Probe& p : probes) {
      EXPECT_TRUE(ids.insert(p.id).second) << p.id;
      ASSERT_EQ((int)p.a.size(), ins.k);
      for (int t = 0; t < ins.k; ++t) EXPECT_TRUE(representable(ins.input, p.a[t]) && representable(ins.input, p.b[t])) << p.id;
      EXPECT_TRUE(representable(ins.output, p.c)) << p.id;
    }
  }
}

TEST(TcInferRoundTrip, Fp16LiteratureLike) {
  const auto& ins = info(Instruction::mma_m16n8k16_f16_f32);
  expect_round_trip(with(ins, 16, 2, AlignRounding::toward_zero, OutputRounding::toward_zero), ins);
}

TEST(TcInferRoundTrip, Fp16TwosComplementBlock8) {
  const auto& ins = info(Instruction::mma_m16n8k16_f16_f32);
  expect_round_trip(with(ins, 8, 3, AlignRounding::floor, OutputRounding::toward_zero,
                         AlignReference::value_exponent), ins);
}

TEST(TcInferRoundTrip, Bf16NearestNoCJoinFlushes) {
  const auto& ins = info(Instruction::mma_m16n8k16_bf16_f32);
  expect_round_trip(with(ins, 4, 1, AlignRounding::nearest_even, OutputRounding::nearest_even,
                         AlignReference::exponent_sum, false, false, false), ins);
}

TEST(TcInferRoundTrip, Tf32Block4) {
  const auto& ins = info(Instruction::mma_m16n8k8_tf32_f32);
  expect_round_trip(with(ins, 4, 2, AlignRounding::toward_zero, OutputRounding::toward_zero), ins);
}

TEST(TcInferRoundTrip, Fp16OutNearest) {
  const auto& ins = info(Instruction::mma_m16n8k16_f16_f16);
  expect_round_trip(with(ins, 16, 15, AlignRounding::toward_zero, OutputRounding::nearest_even), ins);
}

TEST(TcInferRoundTrip, Fp8NarrowAccumulator) {
  // 13 fraction bits kept (neab -10): the fp32 output rounding never sees more than 24 bits, so it
  // cannot be identified, and inference must say so rather than guess.
  const auto& ins = info(Instruction::mma_m16n8k32_e4m3_f32);
  expect_round_trip(with(ins, 32, -10, AlignRounding::toward_zero, OutputRounding::toward_zero), ins,
                    {"output_rounding"});
  const auto& ins2 = info(Instruction::mma_m16n8k32_e5m2_f32);
  expect_round_trip(with(ins2, 16, -9, AlignRounding::floor, OutputRounding::toward_zero), ins2, {"output_rounding"});
}
