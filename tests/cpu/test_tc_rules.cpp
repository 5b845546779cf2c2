// Hand-computed cases for the model's special rules, one test per rule class of the adversarial
// corpus (reference/tc_corpus.hpp), each with a comment on the hardware evidence behind the rule
// gemmlab uses (results/probes/README.md, "Special values"). Every input is dyadic and every
// expected output exact. Where the hardware has not been observed yet, each candidate value of the
// rule is computed, so the rule the corpus outcomes select is checked whichever it is.
#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <tuple>
#include <vector>

#include "reference/tc_model.hpp"

using namespace gemmlab;
using namespace gemmlab::tc;

namespace {

double p2(int e) { return std::ldexp(1.0, e); }
constexpr double kInf = std::numeric_limits<double>::infinity();
const double kNaN = std::numeric_limits<double>::quiet_NaN();

TcParams hopper(Instruction i) { return *measured_hopper_params(i); }

// A k-term dot product with the given (index, a, b) terms, zeros (+0 * +0) elsewhere.
double run(const TcParams& p, int k, std::vector<std::tuple<int, double, double>> terms, double c,
           TcTrace* trace = nullptr) {
  std::vector<double> a(k, 0.0), b(k, 0.0);
  for (auto [i, x, y] : terms) a[i] = x, b[i] = y;
  return dot(p, a.data(), b.data(), k, c, trace);
}

std::uint64_t bits(const TcParams& p, double d) { return encode_output(p, d); }

}  // namespace

// NaN and infinity in A, B and C (classes nan_inf_a/b/c). Evidence: probes nan_inf/* on the H100
// and H200 (h100_probes_20261123_outcomes.csv.xz): inf * 1 -> inf, inf * 0, inf - inf, NaN * 1, a
// NaN C and C = inf against a -inf product all -> NaN written 0x7fffffff (fp16 out: 0x7fff), for
// every instruction. The corpus adds NaN payloads and signs, which the all_ones encoding ignores.
TEST(TcRules, NanAndInfinityDecideBeforeTheArithmetic) {
  const TcParams p = hopper(Instruction::mma_m16n8k16_f16_f32);
  EXPECT_EQ(bits(p, run(p, 16, {{3, kInf, 1.0}}, 0.0)), 0x7f800000u);
  EXPECT_EQ(bits(p, run(p, 16, {{3, 2.0, -kInf}}, 1.0)), 0xff800000u);
  EXPECT_EQ(bits(p, run(p, 16, {{3, kInf, 0.0}}, 0.0)), 0x7fffffffu);    // inf * 0
  EXPECT_EQ(bits(p, run(p, 16, {{0, kInf, 1.0}, {9, -kInf, 1.0}}, 0.0)), 0x7fffffffu);  // inf - inf
  EXPECT_EQ(bits(p, run(p, 16, {{0, kNaN, 0.0}}, 0.0)), 0x7fffffffu);   // NaN * 0
  EXPECT_EQ(bits(p, run(p, 16, {{0, 1.0, 1.0}}, -kInf)), 0xff800000u);  // C = -inf, finite products
  EXPECT_EQ(bits(p, run(p, 16, {{0, kInf, 1.0}}, -kInf)), 0x7fffffffu); // C = -inf against +inf
  EXPECT_EQ(bits(p, run(p, 16, {}, kNaN)), 0x7fffffffu);
  TcParams q = p;
  q.nan_encoding = NanEncoding::ieee_quiet;
  EXPECT_EQ(bits(q, run(q, 16, {{3, kInf, 0.0}}, 0.0)), 0x7fc00000u);
  const TcParams h = hopper(Instruction::mma_m16n8k16_f16_f16);
  EXPECT_EQ(bits(h, run(h, 16, {{3, kInf, 0.0}}, 0.0)), 0x7fffu);
  // mixed e4m3 x e5m2: only B has infinities
  const TcParams m = hopper(Instruction::wgmma_m64n8k32_e4m3_e5m2_f32);
  EXPECT_EQ(bits(m, run(m, 32, {{5, 2.0, -kInf}}, 0.0)), 0xff800000u);
  EXPECT_EQ(bits(m, run(m, 32, {{5, 0.0, kInf}}, 0.0)), 0x7fffffffu);
}

// Where C is added last (fp8 mma.sync: two fp16 HMMA steps from the +0 register, then an FADD /
// HADD2 with C), an infinite C meets the steps' result only in that addition, by IEEE 754. Evidence:
// mma_m16n8k32_e4m3_f16 probe random/seed=20260514/296 (H100 and H200, 2026-11-24): C = -inf, the
// fp16 steps overflow to +inf, D = NaN 0x7fff; with C deciding first (as in one HMMA) it would be -inf.
// e4m3 448 * 448 = 200704 at k = 0 (the first step: k mod 4 in {0, 1}) is beyond fp16's 65504, and
// to nearest that is +inf.
TEST(TcRules, CAddedLastMeetsTheStepsOverflow) {
  const TcParams f = hopper(Instruction::mma_m16n8k32_e4m3_f16);
  ASSERT_EQ(f.c_entry, CEntry::final_add);
  EXPECT_EQ(bits(f, run(f, 32, {{0, 448.0, 448.0}}, -kInf)), 0x7fffu);  // +inf - inf
  EXPECT_EQ(bits(f, run(f, 32, {{0, 448.0, 448.0}}, kInf)), 0x7c00u);
  EXPECT_EQ(bits(f, run(f, 32, {{0, 448.0, 448.0}}, 1.0)), 0x7c00u);
  EXPECT_EQ(bits(f, run(f, 32, {{0, 448.0, -448.0}}, -kInf)), 0xfc00u);  // -inf - inf
  EXPECT_EQ(bits(f, run(f, 32, {{0, 2.0, 3.0}}, -kInf)), 0xfc00u);       // finite steps: C's infinity
  EXPECT_EQ(bits(f, run(f, 32, {{0, 2.0, 3.0}}, kNaN)), 0x7fffu);
  TcTrace t;
  EXPECT_TRUE(std::isnan(run(f, 32, {{0, 448.0, 448.0}}, -kInf, &t)));
  EXPECT_TRUE(t.final_add);
  EXPECT_EQ(t.final_sum, kInf);
  EXPECT_NE(t.rule.find("final_add"), std::string::npos) << t.rule;
  // an infinite product: the steps give it, then C by IEEE 754 (e5m2 has infinities)
  const TcParams g = hopper(Instruction::mma_m16n8k32_e5m2_f16);
  EXPECT_EQ(bits(g, run(g, 32, {{6, kInf, 1.0}}, -kInf)), 0x7fffu);
  EXPECT_EQ(bits(g, run(g, 32, {{6, kInf, 1.0}}, 2.0)), 0x7c00u);
  // with C in the first block (one HMMA), an infinite C decides before the arithmetic
  const TcParams h = hopper(Instruction::mma_m16n8k16_f16_f16);
  EXPECT_EQ(bits(h, run(h, 16, {{0, 256.0, 256.0}}, -kInf)), 0xfc00u);
}

// Sums beyond the output's range after alignment (overflow_after_alignment). Observed (corpus, H100
// and H200, 2026-11-24): bf16 and tf32 -> fp32 write infinity although fp32 outputs are truncated
// (rule overflow infinity, evidence corpus/overflow_before_alignment/20261124/0; 0 mismatches in
// the three overflow classes); each candidate is computed too. bf16 -> fp32, F = 25: 1.5 * 2^127
// twice is 3 * 2^127 > max = 2^128 - 2^104.
TEST(TcRules, OverflowOfTheAlignedSum) {
  TcParams p = hopper(Instruction::mma_m16n8k16_bf16_f32);
  const std::vector<std::tuple<int, double, double>> big = {{0, p2(127), 1.5}, {1, p2(127), 1.5}};
  const double max = 0x1.fffffep127;
  EXPECT_EQ(p.overflow, Overflow::infinity);
  EXPECT_EQ(run(p, 16, big, 0.0), kInf);
  EXPECT_EQ(bits(p, run(p, 16, {{0, -p2(127), 1.5}, {1, -p2(127), 1.5}}, 0.0)), 0xff800000u);
  p.overflow = Overflow::by_rounding;  // toward zero output: the largest finite value, as IEEE's RZ
  EXPECT_EQ(run(p, 16, big, 0.0), max);
  p.overflow = Overflow::infinity;
  EXPECT_EQ(run(p, 16, big, 0.0), kInf);
  p.overflow = Overflow::saturate;
  EXPECT_EQ(run(p, 16, {{0, -p2(127), 1.5}, {1, -p2(127), 1.5}}, 0.0), -max);
  // C = max and one last place 2^104 more: exactly 2^128, beyond the range (the rule decides); half
  // a last place 2^103 is truncated (RZ output) back to max under every rule: the aligned sum's
  // truncation keeps it in range.
  for (Overflow o : {Overflow::by_rounding, Overflow::infinity, Overflow::saturate}) {
    p.overflow = o;
    EXPECT_EQ(run(p, 16, {{0, p2(103), 1.0}}, max), max) << to_string(o);
    EXPECT_EQ(run(p, 16, {{0, p2(104), 1.0}}, max), o == Overflow::infinity ? kInf : max) << to_string(o);
  }
  // fp16 -> fp16 rounds to nearest: 2^8 * 2^8 = 65536 > 65504 is infinity by rounding, 65504 saturated.
  TcParams h = hopper(Instruction::mma_m16n8k16_f16_f16);
  EXPECT_EQ(bits(h, run(h, 16, {{0, 256.0, 256.0}}, 0.0)), 0x7c00u);
  h.overflow = Overflow::saturate;
  EXPECT_EQ(bits(h, run(h, 16, {{0, 256.0, 256.0}}, 0.0)), 0x7bffu);
  TcTrace t;
  h.overflow = Overflow::infinity;
  run(h, 16, {{0, 256.0, 256.0}}, 0.0, &t);
  ASSERT_EQ(t.blocks.size(), 1u);
  EXPECT_NE(t.blocks[0].note.find("rule overflow infinity"), std::string::npos) << t.blocks[0].note;
}

// Terms beyond the output's range before alignment (overflow_before_alignment): the products are
// exact with a wide exponent, so 2^127 * 2^127 - 2^127 * 2^127 cancels to 0 instead of inf - inf;
// the 1 beside them is aligned 254 places below and lost. MMA-Sim computes the same (exact products,
// overflow judged on the result). Observed: the corpus class overflow_before_alignment (products
// beyond fp32 with and without cancelling partners) gives 0 mismatches with this model on the H100
// and the H200 (bf16, tf32), and its case 0 shows the rule: one such sum is infinite.
TEST(TcRules, TermsBeyondTheRangeCancelExactly) {
  TcParams p = hopper(Instruction::mma_m16n8k16_bf16_f32);
  const double r = run(p, 16, {{0, p2(127), p2(127)}, {1, -p2(127), p2(127)}, {2, 1.0, 1.0}}, 0.0);
  EXPECT_EQ(bits(p, r), 0x00000000u);
  // one such product alone is beyond fp32: the overflow rule (measured: infinity; RZ by_rounding
  // would give the largest finite value)
  EXPECT_EQ(run(p, 16, {{0, p2(127), p2(127)}}, 0.0), kInf);
  p.overflow = Overflow::by_rounding;
  EXPECT_EQ(run(p, 16, {{0, p2(127), p2(127)}}, 0.0), 0x1.fffffep127);
}

// Exact cancellation and the sign of zero (exact_cancellation). Observed: a negative sum that
// underflows is written +0 (mma.sync, H200 2026-11-21, class 1 of the first run), and an exact zero
// is +0 even when C and every product are -0 (corpus exact_cancellation, H100 and H200 2026-11-24:
// rule zero_sign plus on every instruction where it shows, e.g. corpus/exact_cancellation/20261124/0
// for mma f16: 0x00000000 where IEEE 754 gives 0x80000000). Each candidate is computed too.
TEST(TcRules, SignOfAnExactZero) {
  TcParams p = hopper(Instruction::mma_m16n8k16_f16_f32);
  std::vector<double> a(16, -0.0), b(16, 1.0);  // sixteen -0 products
  const auto all_minus = [&](double c) { return dot(p, a.data(), b.data(), 16, c); };
  const std::vector<std::tuple<int, double, double>> cancel = {{0, 1.5, 1.0}, {7, -1.5, 1.0}};
  EXPECT_EQ(p.zero_sign, ZeroSign::plus);
  EXPECT_EQ(bits(p, all_minus(-0.0)), 0x00000000u);
  p.zero_sign = ZeroSign::ieee;  // -0 only when C and every product are -0
  EXPECT_TRUE(std::signbit(all_minus(-0.0)));
  EXPECT_FALSE(std::signbit(all_minus(0.0)));
  EXPECT_FALSE(std::signbit(run(p, 16, cancel, -0.0)));
  EXPECT_FALSE(std::signbit(run(p, 16, {{0, 1.0, 1.0}}, -1.0)));
  p.zero_sign = ZeroSign::plus;
  EXPECT_FALSE(std::signbit(all_minus(-0.0)));
  EXPECT_FALSE(std::signbit(run(p, 16, cancel, -0.0)));
  p.zero_sign = ZeroSign::c_sign;
  EXPECT_TRUE(std::signbit(all_minus(-0.0)));
  EXPECT_TRUE(std::signbit(run(p, 16, cancel, -0.0)));
  EXPECT_TRUE(std::signbit(run(p, 16, {{0, 1.0, 1.0}}, -1.0)));
  EXPECT_FALSE(std::signbit(run(p, 16, {{0, -1.0, 1.0}}, 1.0)));
  // A negative sum below the smallest subnormal is +0 whatever the rule (observed, see above).
  EXPECT_EQ(bits(p, run(hopper(Instruction::mma_m16n8k16_bf16_f32), 16, {{0, -p2(-126), p2(-30)}}, 0.0)), 0u);
  // fp8 mma.sync adds C last with an FADD (IEEE 754 in the CUDA cores): its HMMA steps start from
  // the +0 register (RZ in the SASS), so -0 products sum to +0 there, and -0 + +0 = +0.
  TcParams f = hopper(Instruction::mma_m16n8k32_e4m3_f32);
  f.zero_sign = ZeroSign::ieee;
  std::vector<double> fa(32, -0.0), fb(32, 1.0);
  EXPECT_FALSE(std::signbit(dot(f, fa.data(), fb.data(), 32, -0.0)));
}

// Zero operands opposite extreme exponents (zero_operands). MMA-Sim gives a zero the exponent -126
// (fp32_emin); the corpus (H100 and H200, 2026-11-24) says none: a product with a zero operand takes
// no part in the alignment (bf16 and tf32: corpus/zero_operands/20261124/1 and /0 rule out
// fp32_emin and input_emin; fp16 inputs cannot tell none from fp32_emin). Each candidate is computed.
// bf16: 0 * 2^127 aligns at -126 + 127 = 1 under input_emin and fp32_emin (bf16's emin is -126):
// with F = 25 the last place is 2^-24, and (1 + 2^-7) * 2^-20 loses its 2^-27.
TEST(TcRules, ZeroOperandsMayJoinTheAlignment) {
  TcParams p = hopper(Instruction::mma_m16n8k16_bf16_f32);
  const std::vector<std::tuple<int, double, double>> t = {{0, 0.0, p2(127)}, {1, 1 + p2(-7), p2(-20)}};
  p.zero_operand_exponent = ZeroOperandExponent::none;
  EXPECT_EQ(run(p, 16, t, 0.0), p2(-20) + p2(-27));
  p.zero_operand_exponent = ZeroOperandExponent::input_emin;
  TcTrace tr;
  EXPECT_EQ(run(p, 16, t, 0.0, &tr), p2(-20));
  EXPECT_EQ(tr.blocks[0].max_exponent, 1);
  EXPECT_NE(tr.blocks[0].max_from.find("zero operand a0*b0"), std::string::npos) << tr.blocks[0].max_from;
  p.zero_operand_exponent = ZeroOperandExponent::fp32_emin;
  EXPECT_EQ(run(p, 16, t, 0.0), p2(-20));
  // fp16: 0 * 2^15 aligns at -14 + 15 = 1 (input_emin) or -126 + 15 = -111 (fp32_emin):
  // (1 + 2^-10) * 2^-15 = 2^-15 + 2^-25 keeps its 2^-25 only in the second case.
  TcParams h = hopper(Instruction::mma_m16n8k16_f16_f32);
  const std::vector<std::tuple<int, double, double>> u = {{4, p2(15), -0.0}, {5, 1 + p2(-10), p2(-15)}};
  h.zero_operand_exponent = ZeroOperandExponent::input_emin;
  EXPECT_EQ(run(h, 16, u, 0.0), p2(-15));
  h.zero_operand_exponent = ZeroOperandExponent::fp32_emin;
  EXPECT_EQ(run(h, 16, u, 0.0), p2(-15) + p2(-25));
  h.zero_operand_exponent = ZeroOperandExponent::none;
  EXPECT_EQ(run(h, 16, u, 0.0), p2(-15) + p2(-25));
}

// C alone (c_alone): every product zero. Observed: fp16/bf16/tf32 pass C through unchanged
// (subnormal/c_min: C = 2^-149 comes back), fp8 wgmma cuts it to 13 fraction bits
// (result_cut/c_alone, tests/cpu/test_tc_fp8_model.cpp). With zero operands aligning, 0 * 2^127 in
// bf16 sets the last place at 2^-24, so C = 2^-10 (1 + 2^-23) loses its low bit.
TEST(TcRules, CAlone) {
  TcParams p = hopper(Instruction::mma_m16n8k16_bf16_f32);
  EXPECT_EQ(run(p, 16, {}, 1 + p2(-23)), 1 + p2(-23));
  EXPECT_EQ(run(p, 16, {}, p2(-149)), p2(-149));
  const double c = p2(-10) * (1 + p2(-23));
  EXPECT_EQ(run(p, 16, {{2, -0.0, p2(127)}}, c), c);
  p.zero_operand_exponent = ZeroOperandExponent::input_emin;
  EXPECT_EQ(run(p, 16, {{2, -0.0, p2(127)}}, c), p2(-10));
}

// Carries at the top of the aligned sum (top_carry). Observed for fp16 (output_rounding/carry
// probes, H100): the carry moves the sum's leading bit above the alignment exponent and the output
// keeps 24 bits from there. Sixteen (2 - 2^-10)^2 = 4190209 * 2^-20 and C = 1 + 2^-23, all at
// exponent sum 0: aligned exactly (last place 2^-25), sum 4190209 * 2^-16 + 1 + 2^-23 with its
// leading bit at 2^6: truncated to 24 bits (last place 2^-17), the 2^-23 goes.
TEST(TcRules, CarryAtTheTopOfTheAlignedSum) {
  const TcParams p = hopper(Instruction::mma_m16n8k16_f16_f32);
  std::vector<double> a(16, 2 - p2(-10)), b(16, 2 - p2(-10));
  TcTrace t;
  const double r = dot(p, a.data(), b.data(), 16, 1 + p2(-23), &t);
  EXPECT_EQ(r, 4190209 * p2(-16) + 1);
  EXPECT_EQ(t.blocks[0].max_exponent, 0);
  EXPECT_EQ(t.blocks[0].leading_exponent, 6);
  EXPECT_EQ(t.blocks[0].aligned_sum, 4190209 * p2(-16) + 1 + p2(-23));
}

// The largest and smallest exponent gaps between C and the products (exponent_gap). Observed
// (c_alignment and c_small probes): C aligns with the products, so a product 100 binades below C
// vanishes, and C far below the products vanishes too.
TEST(TcRules, ExtremeExponentGapsBetweenCAndTheProducts) {
  const TcParams p = hopper(Instruction::mma_m16n8k16_f16_f32);
  EXPECT_EQ(run(p, 16, {{0, p2(-24), p2(-24)}}, p2(127)), p2(127));
  EXPECT_EQ(run(p, 16, {{0, p2(15), p2(15)}}, p2(-149)), p2(30));
  EXPECT_EQ(run(p, 16, {{0, 1.0, 1.0}}, -p2(-25)), 1 - p2(-24));  // exactly F = 25 below: kept, then RZ
  EXPECT_EQ(run(p, 16, {{0, 1.0, 1.0}}, -p2(-26)), 1.0);          // F + 1 below: truncated away
}

// Subnormal operands, products and results (subnormal). Observed (subnormal/* probes): kept
// throughout; a bf16 product below fp32's normal range is an exact fp32 subnormal.
TEST(TcRules, SubnormalsAreKept) {
  const TcParams p = hopper(Instruction::mma_m16n8k16_bf16_f32);
  EXPECT_EQ(run(p, 16, {{0, p2(-133), 3.0}}, 0.0), 3 * p2(-133));
  EXPECT_EQ(run(p, 16, {{0, p2(-126), p2(-20)}}, p2(-149)), p2(-146) + p2(-149));
  const TcParams h = hopper(Instruction::mma_m16n8k16_f16_f32);
  EXPECT_EQ(run(h, 16, {{0, p2(-24), p2(-24)}}, 0.0), p2(-48));
}

// tf32 operands given as fp32 bits (tf32_low_bits): toward_zero ignores the low 13 bits (MMA-Sim's
// truncate_to_tf32); nearest_even rounds the container. Observed (corpus tf32_low_bits, H100 and
// H200, 2026-11-24): toward_zero, and the bits are dropped before the value is read, so a NaN whose
// payload lies only in the low 13 bits is an infinity (cases i % 50 == 7: 38 of them, where reading
// the NaN first gave NaN, came back 0x7f800000 / 0xff800000 on the three tf32 instructions).
TEST(TcRules, Tf32LowBits) {
  TcParams p = hopper(Instruction::mma_m16n8k8_tf32_f32);
  EXPECT_EQ(decode_operand(p, Format::tf32, 0x3f801001u), 1.0);        // 1 + 2^-11 + 2^-23
  EXPECT_EQ(decode_operand(p, Format::tf32, 0xbf803fffu), -(1 + p2(-10)));
  EXPECT_EQ(decode_operand(p, Format::tf32, 0x7f800001u), kInf);       // payload in the low bits only
  EXPECT_EQ(decode_operand(p, Format::tf32, 0xff801fffu), -kInf);
  EXPECT_TRUE(std::isnan(decode_operand(p, Format::tf32, 0x7f802000u)));  // payload in tf32's bits
  // the hardware's answer for such an operand times 1: +inf, not NaN
  std::vector<std::uint64_t> a(8, 0), b(8, 0);
  a[3] = 0x7f800001u, b[3] = 0x3f800000u;
  std::vector<double> av(8), bv(8);
  for (int k = 0; k < 8; ++k) av[k] = decode_operand(p, Format::tf32, a[k]), bv[k] = decode_operand(p, Format::tf32, b[k]);
  EXPECT_EQ(bits(p, dot(p, av.data(), bv.data(), 8, 1.0)), 0x7f800000u);
  p.tf32_low_bits = Rounding::nearest_even;
  EXPECT_EQ(decode_operand(p, Format::tf32, 0x3f801001u), 1 + p2(-10));
  EXPECT_EQ(decode_operand(p, Format::tf32, 0x3f801000u), 1.0);           // a tie: to even
  EXPECT_EQ(decode_operand(p, Format::tf32, 0x3f803000u), 1 + p2(-9));    // a tie: to even
  EXPECT_EQ(decode_operand(p, Format::fp16, 0x3c00u), 1.0);               // other formats: their bits
}
