// Hand-computed cases for each parameter of the tensor-core model (reference/tc_model.hpp).
#include <gtest/gtest.h>

#include <bit>
#include <cmath>
#include <cstdint>
#include <optional>
#include <limits>
#include <vector>

#include "reference/formats.hpp"
#include "reference/tc_gpus.hpp"
#include "reference/tc_model.hpp"

using namespace gemmlab;
using namespace gemmlab::tc;

namespace {

double p2(int e) { return std::ldexp(1.0, e); }

TcParams fp16_fp32(int block = 16, int neab = 2) {
  TcParams p;
  p.input = Format::fp16;
  p.output = Format::fp32;
  p.block_size = block;
  p.neab = neab;
  return p;
}

// k = 16 dot product with the given (index, a, b) terms.
double run16(const TcParams& p, std::vector<std::tuple<int, double, double>> terms, double c) {
  std::vector<double> a(16, 0.0), b(16, 0.0);
  for (auto [i, x, y] : terms) {
    a[i] = x;
    b[i] = y;
  }
  return dot(p, a.data(), b.data(), 16, c);
}

}  // namespace

TEST(TcModelProducts, SquareIsExact) {
  // (1 - 2^-11)^2 = 1 - 2^-10 + 2^-22: 23 bits, exact in fp32.
  double x = 1 - p2(-11);
  EXPECT_EQ(run16(fp16_fp32(), {{0, x, x}}, 0.0), 1 - p2(-10) + p2(-22));
  // with C = -1 the low bit is only kept if the alignment keeps 22 bits below 2^0
  EXPECT_EQ(run16(fp16_fp32(), {{0, x, x}}, -1.0), -p2(-10) + p2(-22));
}

TEST(TcModelAlignment, NeabDecidesWhichSmallTermSurvives) {
  // 1 - 1 + 2^-j: kept iff j <= F = 23 + neab
  for (int neab : {0, 2, 3}) {
    const int F = 23 + neab;
    for (int j = 20; j <= 30; ++j) {
      double r = run16(fp16_fp32(16, neab), {{0, 1.0, 1.0}, {1, -1.0, 1.0}, {2, p2(-j / 2), p2(-(j - j / 2))}}, 0.0);
      EXPECT_EQ(r, j <= F ? p2(-j) : 0.0) << "neab " << neab << " j " << j;
    }
  }
}

TEST(TcModelAlignment, RoundingOfShiftedOutBits) {
  // 1 - 1 + 0.75 * 2^-F (F = 25): 0.75 of the quantum 2^-25
  auto p = fp16_fp32(16, 2);
  auto t = std::make_tuple(2, 0.75 * p2(-12), p2(-13));
  auto tn = std::make_tuple(2, -0.75 * p2(-12), p2(-13));
  std::vector<std::tuple<int, double, double>> pos = {{0, 1.0, 1.0}, {1, -1.0, 1.0}, t};
  std::vector<std::tuple<int, double, double>> neg = {{0, 1.0, 1.0}, {1, -1.0, 1.0}, tn};
  p.align_rounding = Rounding::toward_zero;
  EXPECT_EQ(run16(p, pos, 0.0), 0.0);
  EXPECT_EQ(run16(p, neg, 0.0), 0.0);  // magnitude truncation: -0.75 quantum -> 0
  p.align_rounding = Rounding::floor;
  EXPECT_EQ(run16(p, pos, 0.0), 0.0);
  EXPECT_EQ(run16(p, neg, 0.0), -p2(-25));  // two's complement: -0.75 quantum -> -1 quantum
  p.align_rounding = Rounding::nearest_even;
  EXPECT_EQ(run16(p, pos, 0.0), p2(-25));
  EXPECT_EQ(run16(p, neg, 0.0), -p2(-25));
}

TEST(TcModelOutput, TruncationAndNearestEvenDiffer) {
  // 1 + 3 * 2^-25 = 1 + 1.5 ulp(fp32)/2... : exact sum 1 + 2^-24 + 2^-25, fp32 ulp at 1 is 2^-23.
  auto p = fp16_fp32(16, 2);
  std::vector<std::tuple<int, double, double>> t = {{0, 1.0, 1.0}, {1, 0.75, p2(-23)}};
  p.output_rounding = Rounding::toward_zero;
  EXPECT_EQ(run16(p, t, 0.0), 1.0);
  p.output_rounding = Rounding::nearest_even;
  EXPECT_EQ(run16(p, t, 0.0), 1 + p2(-23));
  // a carry: 1.5 + 1.5 + 3 * 2^-23 = 3 + 2^-22 + 2^-23, ulp 2^-22 above 2: RZ 3 + 2^-22, RNE tie -> 3 + 2^-21
  std::vector<std::tuple<int, double, double>> c = {{0, 1.5, 1.0}, {1, 1.5, 1.0}, {2, 0.75, p2(-21)}};
  p.output_rounding = Rounding::toward_zero;
  EXPECT_EQ(run16(p, c, 0.0), 3 + p2(-22));
  p.output_rounding = Rounding::nearest_even;
  EXPECT_EQ(run16(p, c, 0.0), 3 + p2(-21));
}

TEST(TcModelBlocks, TinyTermSurvivesOnlyOutsideTheCancellingBlock) {
  // X - X at 0, 1 and 2^-40 at t: the tiny term is lost iff it shares a block with the pair.
  for (int block : {1, 2, 4, 8, 16}) {
    for (int t = 2; t < 16; ++t) {
      double r = run16(fp16_fp32(block, 2), {{0, 1.0, 1.0}, {1, -1.0, 1.0}, {t, p2(-20), p2(-20)}}, 0.0);
      bool same = t / block == 0;
      EXPECT_EQ(r, same ? 0.0 : p2(-40)) << "block " << block << " t " << t;
    }
  }
}

TEST(TcModelAlignment, ExponentSumVersusValueExponent) {
  // 1.5 * 1.5 = 2.25: exponent sum 0, value exponent 1. 2.25 - 2.25 + 2^-24 with F = 23 + 1:
  // kept with exponent_sum (quantum 2^-24), lost with value_exponent (quantum 2^-23).
  auto p = fp16_fp32(16, 1);
  std::vector<std::tuple<int, double, double>> t = {{0, 1.5, 1.5}, {1, -1.5, 1.5}, {2, p2(-12), p2(-12)}};
  p.align_reference = AlignReference::exponent_sum;
  EXPECT_EQ(run16(p, t, 0.0), p2(-24));
  p.align_reference = AlignReference::value_exponent;
  EXPECT_EQ(run16(p, t, 0.0), 0.0);
}

TEST(TcModelC, JoinsAlignmentOrNot) {
  // c = 2^-30, products 1 and -1: with C in the alignment 2^-30 is below F = 25 and lost; added
  // exactly after the products' aligned sum (which is 0) it survives.
  auto p = fp16_fp32(16, 2);
  std::vector<std::tuple<int, double, double>> t = {{0, -1.0, 1.0}, {1, 1.0, 1.0}};
  p.c_in_alignment = true;
  EXPECT_EQ(run16(p, t, p2(-30)), 0.0);
  p.c_in_alignment = false;
  EXPECT_EQ(run16(p, t, p2(-30)), p2(-30));
  // C's low bits: c = 1 + 2^-23, product 2: aligned to 2^1, F = 23 keeps 2^-22: the 2^-23 is lost.
  auto q = fp16_fp32(16, 0);
  EXPECT_EQ(run16(q, {{0, 2.0, 1.0}}, 1 + p2(-23)), 3.0);
  q.c_in_alignment = false;
  EXPECT_EQ(run16(q, {{0, 2.0, 1.0}}, 1 + p2(-23)), 3.0);  // then RZ of 3 + 2^-23 to fp32
}

TEST(TcModelSubnormals, PassThroughAndFlush) {
  auto p = fp16_fp32();
  // C = 2^-149 passes through when nothing is added
  EXPECT_EQ(run16(p, {}, p2(-149)), p2(-149));
  // and with 1 - 1 added it is aligned to 2^0 and lost (F = 25)
  EXPECT_EQ(run16(p, {{0, 1.0, 1.0}, {1, -1.0, 1.0}}, p2(-149)), 0.0);
  p.subnormal_output = false;
  EXPECT_EQ(run16(p, {}, p2(-149)), 0.0);
  // fp16 subnormal input 2^-24 times 1
  auto s = fp16_fp32();
  EXPECT_EQ(run16(s, {{0, p2(-24), 1.0}}, 0.0), p2(-24));
  s.subnormal_inputs = false;
  EXPECT_EQ(run16(s, {{0, p2(-24), 1.0}}, 0.0), 0.0);
  // bf16 product below fp32's normal range: 2^-126 * 2^-10 = 2^-136, a subnormal fp32
  TcParams b = fp16_fp32();
  b.input = Format::bf16;
  EXPECT_EQ(run16(b, {{0, p2(-126), p2(-10)}}, 0.0), p2(-136));
  b.subnormal_output = false;
  EXPECT_EQ(run16(b, {{0, p2(-126), p2(-10)}}, 0.0), 0.0);
}

TEST(TcModelSubnormals, NegativeUnderflowGivesPlusZero) {
  // bf16: -2^-126 * 2^-30 = -2^-156 is below fp32's smallest subnormal: RZ gives zero, and the
  // hardware writes +0 (0x00000000), not -0.
  TcParams b = fp16_fp32();
  b.input = Format::bf16;
  double r = run16(b, {{0, -p2(-126), p2(-30)}}, 0.0);
  EXPECT_EQ(r, 0.0);
  EXPECT_FALSE(std::signbit(r));
}

TEST(TcModelSpecials, NanAndInfinity) {
  auto p = fp16_fp32();
  const double inf = std::numeric_limits<double>::infinity();
  EXPECT_EQ(run16(p, {{0, inf, 1.0}}, 0.0), inf);
  EXPECT_TRUE(std::isnan(run16(p, {{0, inf, 0.0}}, 0.0)));
  EXPECT_TRUE(std::isnan(run16(p, {{0, inf, 1.0}, {1, -inf, 1.0}}, 0.0)));
  EXPECT_TRUE(std::isnan(run16(p, {{0, std::nan(""), 1.0}}, 0.0)));
  EXPECT_EQ(run16(p, {{0, 1.0, 1.0}}, -inf), -inf);
}

TEST(TcModelFp16Output, RoundsToHalf) {
  TcParams p = fp16_fp32(16, 14);
  p.output = Format::fp16;
  p.output_rounding = Rounding::nearest_even;
  // 1 + 2^-11 + 2^-12 -> RNE 1 + 2^-10 in fp16
  EXPECT_EQ(run16(p, {{0, 1.0, 1.0}, {1, p2(-11), 1.0}, {2, p2(-12), 1.0}}, 0.0), 1 + p2(-10));
  p.output_rounding = Rounding::toward_zero;
  EXPECT_EQ(run16(p, {{0, 1.0, 1.0}, {1, p2(-11), 1.0}, {2, p2(-12), 1.0}}, 0.0), 1.0);
  // fp16 subnormal C 2^-24 passes through
  EXPECT_EQ(run16(p, {}, p2(-24)), p2(-24));
}

TEST(TcModelFormats, EncodeDecodeRoundTrip) {
  for (Format f : {Format::fp32, Format::fp16, Format::bf16, Format::e4m3, Format::e5m2}) {
    for (double x : {1.0, -1.5, 0.0, p2(gemmlab::info(f).emin), p2(gemmlab::info(f).emin - gemmlab::info(f).precision + 1), gemmlab::info(f).max_finite}) {
      ASSERT_TRUE(representable(f, x));
      EXPECT_EQ(from_bits(f, to_bits(f, x)), x);
    }
  }
  EXPECT_EQ(to_bits(Format::fp16, 1.0), 0x3c00u);
  EXPECT_EQ(to_bits(Format::bf16, 1.0), 0x3f80u);
  EXPECT_EQ(to_bits(Format::e4m3, 448.0), 0x7eu);
  EXPECT_EQ(to_bits(Format::e5m2, 57344.0), 0x7bu);
  EXPECT_EQ(round_to_format(Format::fp32, 1 + p2(-24) + p2(-40), Rounding::toward_zero), 1.0);
  EXPECT_EQ(round_to_format(Format::fp32, 1 + p2(-24) + p2(-40), Rounding::nearest_even), 1 + p2(-23));
}

TEST(TcModelTile, AppliesTheDotToEveryEntry) {
  const InstructionInfo& ins = info(Instruction::mma_m16n8k8_tf32_f32);
  TcParams p;
  p.input = ins.input;
  p.output = ins.output;
  p.block_size = 8;
  std::vector<double> A(16 * 8), B(8 * 8), C(16 * 8, 0.5);
  for (int i = 0; i < 16 * 8; ++i) A[i] = (i % 5) - 2;
  for (int i = 0; i < 8 * 8; ++i) B[i] = (i % 3) * 0.25;
  auto D = mma_tile(p, ins, A, B, C);
  for (int i = 0; i < 16; ++i)
    for (int j = 0; j < 8; ++j) {
      double s = 0.5;
      for (int t = 0; t < 8; ++t) s += A[i * 8 + t] * B[t * 8 + j];
      EXPECT_EQ(D[i * 8 + j], s);  // small integers and quarters: exact
    }
}

// block()'s 64-bit path (taken without a trace where the products fit 62 bits: every operand format but
// binary64) against its 128-bit path (taken with a trace): every generation's every fused-block instruction,
// random operand bits over the formats' whole range (zeros, subnormals, wide exponent spreads), C random in
// the output format, and blocks whose products cancel pairwise. Bit for bit, NaN and the sign of zero included.
TEST(TcModelBlocks, NarrowPathEqualsTheWidePathBitForBit) {
  std::uint64_t state = 20261129;
  auto next = [&] {  // splitmix64
    std::uint64_t z = (state += 0x9e3779b97f4a7c15ull);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
  };
  auto finite = [&](const TcParams& p, Format f) {
    const int bits = gemmlab::info(f).storage_bits;
    for (;;) {
      const std::uint64_t u = bits >= 64 ? next() : next() & ((1ull << bits) - 1);
      const double x = decode_operand(p, f, u);
      if (std::isfinite(x)) return x;
    }
  };
  long long blocks = 0, narrow_eligible = 0;
  for (const tc::Generation g : all_generations())
    for (const Instruction ins : instructions_of(g)) {
      const std::optional<TcParams> p = generation_params(g, ins);
      if (!p || p->arithmetic != Arithmetic::block_fused) continue;
      const int k = tc::info(ins).k;
      const bool narrow = gemmlab::info(p->input).precision + gemmlab::info(p->format_b()).precision <= 62;
      std::vector<double> a(k), b(k);
      for (int t = 0; t < 1500; ++t) {
        for (int i = 0; i < k; ++i) {
          a[i] = t % 7 == 0 ? 0.0 : finite(*p, p->input);
          b[i] = finite(*p, p->format_b());
        }
        if (t % 3 == 1)  // products that cancel pairwise (their exact sum is C's alone)
          for (int i = 0; i + 1 < k; i += 2) a[i + 1] = -a[i], b[i + 1] = b[i];
        const std::uint64_t cb = next();
        double c = t % 5 == 0 ? 0.0 : gemmlab::from_bits(p->output, cb);
        if (!std::isfinite(c)) c = -0.0;
        TcTrace trace;
        const double wide = dot(*p, a.data(), b.data(), k, c, &trace);
        const double fast = dot(*p, a.data(), b.data(), k, c);
        ASSERT_EQ(std::bit_cast<std::uint64_t>(fast), std::bit_cast<std::uint64_t>(wide))
            << to_string(g) << " " << tc::info(ins).name << " block " << t << ": " << fast << " vs " << wide;
        ++blocks;
        narrow_eligible += narrow;
      }
    }
  EXPECT_GT(blocks, 10000);
  EXPECT_GT(narrow_eligible, blocks / 2) << "most instructions take the 64-bit path";
}
