// Inference round trip: probe outcomes synthesised by the model with known parameters must give
// those parameters back (reference/tc_infer.hpp).
#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <cmath>

#include "reference/tc_infer.hpp"

using namespace gemmlab;
using namespace gemmlab::tc;

namespace {

std::vector<ProbeOutcome> synthesise(const TcParams& p, const InstructionInfo& ins) {
  std::vector<ProbeOutcome> out;
  for (const Probe& pr : make_probes(ins)) {
    double d = dot(p, pr.a.data(), pr.b.data(), ins.k, pr.c);
    out.push_back({pr, encode_output(p, d)});
  }
  return out;
}

TcParams with(const InstructionInfo& ins, int block, int neab, Rounding ar, Rounding orr,
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
  // The probe set alone cannot settle the special rules it has no case for (overflow, the sign of an
  // exact zero, zero operands' alignment, tf32's low bits): the corpus does (test_tc_corpus.cpp).
  // Inference then keeps their canonical first values, which these truths use.
  const std::vector<std::string> corpus_rules = {"overflow", "zero_sign", "zero_operand_alignment", "tf32_low_bits"};
  for (const std::string& f : inf.ambiguous)
    EXPECT_TRUE(std::find(allowed_ambiguous.begin(), allowed_ambiguous.end(), f) != allowed_ambiguous.end() ||
                std::find(corpus_rules.begin(), corpus_rules.end(), f) != corpus_rules.end())
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
      for (int t = 0; t < ins.k; ++t)
        EXPECT_TRUE(representable(ins.input, p.a[t]) && representable(ins.format_b(), p.b[t])) << ins.name << " " << p.id;
      EXPECT_TRUE(representable(ins.output, p.c)) << p.id;
    }
  }
}

// fp16 products (>= 2^-48) never fall below fp32's emin, so whether a zero C aligns there cannot
// be observed for fp16 -> fp32 (nor for fp8 -> fp32); inference says so instead of guessing.
TEST(TcInferRoundTrip, Fp16LiteratureLike) {
  const auto& ins = info(Instruction::mma_m16n8k16_f16_f32);
  expect_round_trip(with(ins, 16, 2, Rounding::toward_zero, Rounding::toward_zero), ins, {"zero_c_alignment"});
  Inference inf = infer(ins, synthesise(with(ins, 16, 2, Rounding::toward_zero, Rounding::toward_zero), ins));
  EXPECT_EQ(inf.params, with(ins, 16, 2, Rounding::toward_zero, Rounding::toward_zero)) << inf.params.describe();
}

TEST(TcInferRoundTrip, Fp16TwosComplementBlock8) {
  const auto& ins = info(Instruction::mma_m16n8k16_f16_f32);
  expect_round_trip(with(ins, 8, 3, Rounding::floor, Rounding::toward_zero,
                         AlignReference::value_exponent), ins, {"zero_c_alignment"});
}

TEST(TcInferRoundTrip, Bf16NearestNoCJoinFlushes) {
  const auto& ins = info(Instruction::mma_m16n8k16_bf16_f32);
  expect_round_trip(with(ins, 4, 1, Rounding::nearest_even, Rounding::nearest_even,
                         AlignReference::exponent_sum, false, false, false), ins);
}

TEST(TcInferRoundTrip, Tf32Block4) {
  const auto& ins = info(Instruction::mma_m16n8k8_tf32_f32);
  expect_round_trip(with(ins, 4, 2, Rounding::toward_zero, Rounding::toward_zero), ins);
}

TEST(TcInferRoundTrip, Fp16OutNearest) {
  const auto& ins = info(Instruction::mma_m16n8k16_f16_f16);
  expect_round_trip(with(ins, 16, 15, Rounding::toward_zero, Rounding::nearest_even), ins);
}

TEST(TcInferRoundTrip, Fp8NarrowAccumulator) {
  // 13 fraction bits kept (neab -10): the fp32 output rounding never sees more than 24 bits, so it
  // cannot be identified, and inference must say so rather than guess.
  const auto& ins = info(Instruction::mma_m16n8k32_e4m3_f32);
  expect_round_trip(with(ins, 32, -10, Rounding::toward_zero, Rounding::toward_zero), ins,
                    {"output_rounding", "zero_c_alignment"});
  const auto& ins2 = info(Instruction::mma_m16n8k32_e5m2_f32);
  // two chained blocks of 14 bits: the second re-aligns the first's result to 14 bits, so a cut
  // of that result to 16 bits leaves no trace either
  expect_round_trip(with(ins2, 16, -9, Rounding::floor, Rounding::toward_zero), ins2,
                    {"output_rounding", "zero_c_alignment", "result_cut"});
}

// The refinements that Hopper's fp8 and subnormal results need (tc_model.hpp) are inferred, not
// typed in: each generating model comes back from its own synthetic outcomes.
TEST(TcInferRoundTrip, Fp8MmaSyncTwoFp16StepsAndFinalAdd) {
  // sm_90 fp8 mma.sync as nvcc emits it: e4m3 -> fp16, HMMA on k = {0,1,4,5,..} from C = 0, HMMA
  // on k = {2,3,6,7,..} with the first result as C, then FADD with C.
  const auto& ins = info(Instruction::mma_m16n8k32_e4m3_f32);
  TcParams t = with(ins, 16, 2, Rounding::toward_zero, Rounding::toward_zero);
  t.step_interleave = 2;
  t.c_entry = CEntry::final_add;
  // fp8 products (>= 2^-18) never reach fp32's subnormal range, and with 25 bits no subnormal-
  // operand product decides an alignment: these three cannot be told apart by any input. The
  // special rules the probe set has no case for are the corpus's to settle (test_tc_corpus.cpp).
  Inference inf = infer(ins, synthesise(t, ins));
  EXPECT_EQ(inf.mismatching_probes, 0);
  for (const std::string& f : inf.ambiguous)
    EXPECT_TRUE(f == "subnormal_output" || f == "zero_c_alignment" || f == "operand_conversion" || f == "overflow" ||
                f == "zero_sign" || f == "zero_operand_alignment")
        << f;
  EXPECT_EQ(inf.params, t) << inf.params.describe();
  const auto& ins2 = info(Instruction::mma_m16n8k32_e5m2_f32);
  TcParams t2 = with(ins2, 16, 2, Rounding::toward_zero, Rounding::toward_zero);
  t2.step_interleave = 4;  // a different split must be told apart as well
  t2.c_entry = CEntry::final_add;
  Inference inf2 = infer(ins2, synthesise(t2, ins2));
  EXPECT_EQ(inf2.mismatching_probes, 0);
  EXPECT_EQ(inf2.params.step_interleave, 4);
  EXPECT_EQ(inf2.params.c_entry, CEntry::final_add);
  EXPECT_EQ(inf2.params.block_size, 16);
}

TEST(TcInferRoundTrip, Fp8WgmmaResultCutTo13Bits) {
  const auto& ins = info(Instruction::wgmma_m64n8k32_e4m3_f32);
  TcParams t = with(ins, 32, -10, Rounding::toward_zero, Rounding::toward_zero);
  t.result_fraction_bits = 13;
  t.operand_conversion = Format::fp16;  // identifiable here: 13 bits make a subnormal operand's exponent visible
  expect_round_trip(t, ins, {"zero_c_alignment"});
  Inference inf = infer(ins, synthesise(t, ins));
  EXPECT_EQ(inf.params, t) << inf.params.describe();
  const auto& ins2 = info(Instruction::wgmma_m64n8k32_e5m2_f32);
  TcParams t2 = with(ins2, 32, -10, Rounding::toward_zero, Rounding::nearest_even);
  t2.result_fraction_bits = 12;
  Inference inf2 = infer(ins2, synthesise(t2, ins2));
  EXPECT_EQ(inf2.mismatching_probes, 0);
  EXPECT_EQ(inf2.params.result_fraction_bits, 12) << inf2.params.describe();
  EXPECT_EQ(inf2.params.output_rounding, Rounding::nearest_even) << inf2.params.describe();
  EXPECT_FALSE(inf2.params.operand_conversion.has_value()) << inf2.params.describe();  // never offered for e5m2
}

TEST(TcInferRoundTrip, Tf32ZeroCAlignsAtEmin) {
  const auto& ins = info(Instruction::mma_m16n8k8_tf32_f32);
  TcParams t = with(ins, 8, 2, Rounding::toward_zero, Rounding::toward_zero);
  t.zero_c_offset = 7;
  expect_round_trip(t, ins);
  const auto& ins2 = info(Instruction::mma_m16n8k16_bf16_f32);
  TcParams t2 = with(ins2, 16, 2, Rounding::toward_zero, Rounding::toward_zero);
  t2.zero_c_offset = 7;
  expect_round_trip(t2, ins2);
  const auto& ins3 = info(Instruction::mma_m16n8k16_f16_f16);  // fp16 output: emin -14 is reachable
  TcParams t3 = with(ins3, 16, 15, Rounding::toward_zero, Rounding::nearest_even);
  t3.zero_c_offset = 7;
  expect_round_trip(t3, ins3);
}

// The wgmma and wmma entries: one output of wgmma m64n8k16 (wmma 16x16x16) is the same k-term dot
// product as one of mma.sync m16n8k16, so they share the probe set; the tile geometry differs.
TEST(TcInstructions, WgmmaAndWmmaShareTheMmaSyncProbes) {
  const std::pair<Instruction, Instruction> same[] = {
      {Instruction::wgmma_m64n8k16_f16_f32, Instruction::mma_m16n8k16_f16_f32},
      {Instruction::wgmma_m64n8k16_bf16_f32, Instruction::mma_m16n8k16_bf16_f32},
      {Instruction::wgmma_m64n8k8_tf32_f32, Instruction::mma_m16n8k8_tf32_f32},
      {Instruction::wgmma_m64n8k32_e4m3_f32, Instruction::mma_m16n8k32_e4m3_f32},
      {Instruction::wgmma_m64n8k32_e5m2_f32, Instruction::mma_m16n8k32_e5m2_f32},
      {Instruction::wmma_m16n16k16_f16_f32, Instruction::mma_m16n8k16_f16_f32}};
  for (auto [w, m] : same) {
    const InstructionInfo &iw = info(w), &im = info(m);
    EXPECT_EQ(iw.id, w);
    EXPECT_EQ(parse_instruction(iw.name), w);
    EXPECT_EQ(iw.input, im.input) << iw.name;
    EXPECT_EQ(iw.output, im.output) << iw.name;
    EXPECT_EQ(iw.k, im.k) << iw.name;
    auto pw = make_probes(iw), pm = make_probes(im);
    ASSERT_EQ(pw.size(), pm.size()) << iw.name;
    for (size_t i = 0; i < pw.size(); ++i) EXPECT_EQ(pw[i].id, pm[i].id) << iw.name;
  }
  EXPECT_EQ(info(Instruction::wgmma_m64n8k16_f16_f32).m, 64);
  EXPECT_EQ(info(Instruction::wgmma_m64n8k16_f16_f32).n, 8);
  EXPECT_EQ(info(Instruction::wgmma_m64n8k16_f16_f32).min_cc, 90);
  EXPECT_EQ(info(Instruction::wmma_m16n16k16_f16_f32).n, 16);
}

// mma_tile on a (64, 16) x (16, 8) wgmma tile: row i, column j is dot(row i of A, column j of B, C(i, j)).
TEST(TcInstructions, WgmmaTileIsRowByColumnDots) {
  const InstructionInfo& ins = info(Instruction::wgmma_m64n8k16_f16_f32);
  TcParams p = with(ins, 16, 2, Rounding::toward_zero, Rounding::toward_zero);
  std::vector<double> A(64 * 16), B(16 * 8), C(64 * 8);
  for (size_t i = 0; i < A.size(); ++i) A[i] = std::ldexp((double)((i * 37) % 23) - 11, -(int)(i % 9));
  for (size_t i = 0; i < B.size(); ++i) B[i] = std::ldexp((double)((i * 11) % 17) - 8, (int)(i % 5) - 2);
  for (size_t i = 0; i < C.size(); ++i) C[i] = std::ldexp((double)(i % 7) - 3, -20);
  std::vector<double> D = mma_tile(p, ins, A, B, C);
  ASSERT_EQ(D.size(), 512u);
  for (int i : {0, 17, 63})
    for (int j : {0, 5, 7}) {
      double a[16], b[16];
      for (int t = 0; t < 16; ++t) a[t] = A[i * 16 + t], b[t] = B[t * 8 + j];
      EXPECT_EQ(D[i * 8 + j], dot(p, a, b, 16, C[i * 8 + j])) << i << "," << j;
    }
  // (1 - 2^-11)^2 + 1*2^-24 ... truncated to 25 fraction bits: a hand case in row 63.
  std::fill(A.begin(), A.end(), 0.0), std::fill(B.begin(), B.end(), 0.0), std::fill(C.begin(), C.end(), 0.0);
  A[63 * 16 + 0] = 1 - std::ldexp(1, -11), B[0 * 8 + 7] = 1 - std::ldexp(1, -11);
  D = mma_tile(p, ins, A, B, C);
  EXPECT_EQ(D[63 * 8 + 7], 1 - std::ldexp(1, -10) + std::ldexp(1, -22));  // exact product, representable
  EXPECT_THROW(mma_tile(p, info(Instruction::mma_m16n8k16_f16_f32), A, B, C), std::invalid_argument);
}
