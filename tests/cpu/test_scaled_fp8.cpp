// Scaled fp8 recipes (reference/scaled_fp8.hpp): names, the scale of a block (exact expected values),
// quantization checked against a brute-force nearest fp8 value, the scale grids with partial blocks,
// and every refusal (all-zero block, non-finite value, underflowing scale, UE8M0 range).
#include <gtest/gtest.h>

#include <cmath>
#include <functional>
#include <limits>
#include <stdexcept>
#include <string>
#include <vector>

#include "reference/formats.hpp"
#include "reference/kernel_emulation.hpp"
#include "reference/scaled_fp8.hpp"

using namespace gemmlab;

namespace {

// Every finite non-negative value of an fp8 format, from its bit patterns.
std::vector<double> fp8_values(Format f) {
  std::vector<double> v;
  for (std::uint64_t b = 0; b < 128; ++b) {
    const double x = from_bits(f, b);
    if (std::isfinite(x)) v.push_back(x);
  }
  return v;
}

// The nearest fp8 value to y (ties to the even significand, i.e. even bit pattern), saturating.
double brute_nearest(double y, Format f) {
  const std::vector<double> vals = fp8_values(f);
  const double a = std::fabs(y);
  double best = 0;
  std::uint64_t best_bits = 0;
  for (double v : vals) {
    const double d = std::fabs(a - v), db = std::fabs(a - best);
    const std::uint64_t bits = to_bits(f, v);
    if (d < db || (d == db && (bits & 1) == 0 && (best_bits & 1) == 1)) best = v, best_bits = bits;
  }
  return std::copysign(best, y);
}

std::string message_of(const std::function<void()>& f) {
  try {
    f();
  } catch (const std::invalid_argument& e) {
    return e.what();
  }
  return "(no exception)";
}

}  // namespace

TEST(ScaledFp8Recipe, NamesRoundTripAndAttachToDistributions) {
  for (Format f : {Format::e4m3, Format::e5m2})
    for (const ScaleRecipe& r : all_recipes(f)) EXPECT_EQ(parse_recipe(r.name()), r) << r.name();
  EXPECT_EQ(all_recipes(Format::e4m3).size(), 8u);
  const ScaleRecipe ds = parse_recipe("e4m3_1x128_128x128_ue8m0");
  EXPECT_EQ(ds.fp8, Format::e4m3);
  EXPECT_EQ(ds.a, ScaleGranularity::k128);
  EXPECT_EQ(ds.b, ScaleGranularity::blk128);
  EXPECT_TRUE(ds.ue8m0);
  const Distribution d = parse_distribution("normal@e5m2_rowwise");
  EXPECT_EQ(d.name(), "normal_0_1@e5m2_rowwise");
  EXPECT_EQ(d.recipe->a, ScaleGranularity::outer);
  EXPECT_EQ(d.source().name(), "normal_0_1");
  EXPECT_FALSE(parse_distribution("uniform_0_1").recipe.has_value());
  EXPECT_EQ(parse_distribution("uniform_0_1").name(), "uniform_0_1");
  // The kernel's input format must be the recipe's; generate() refuses a scaled distribution.
  EXPECT_EQ(unusable_reason(d, Format::e5m2), "");
  EXPECT_NE(unusable_reason(d, Format::e4m3).find("cannot take it"), std::string::npos);
  EXPECT_NE(message_of([&] { generate(d, Operand::A, 2, 2, Format::e5m2, 1); }).find("make_scaled_problem"),
            std::string::npos);
}

TEST(ScaledFp8Recipe, BadNamesSayWhatIsValid) {
  for (const char* bad : {"normal_0_1@", "normal_0_1@fp16_tensor", "normal_0_1@e4m3_blk", "normal_0_1@e4m3_ue8m0",
                          "normal_0_1@e4m3_tensor_ue8m0_ue8m0", "normal_0_1@e4m3_128x128_128x128"}) {
    const std::string m = message_of([&] { parse_distribution(bad); });
    EXPECT_NE(m.find("valid recipes"), std::string::npos) << bad << ": " << m;
  }
  EXPECT_NE(message_of([] { parse_distribution("nonsense@e4m3_tensor"); }).find("unknown distribution"),
            std::string::npos);
}

TEST(ScaledFp8Scale, ExactValues) {
  const auto p32 = quant_plan(Operand::A, ScaleGranularity::tensor, Format::e4m3, false, 1, 1);
  const auto p2 = quant_plan(Operand::A, ScaleGranularity::tensor, Format::e4m3, true, 1, 1);
  int problem = -1;
  EXPECT_EQ(scaled_detail::block_scale(448.0, p32, &problem), 1.0);
  EXPECT_EQ(problem, 0);
  EXPECT_EQ(scaled_detail::block_scale(896.0, p32, &problem), 2.0);
  EXPECT_EQ(scaled_detail::block_scale(1.0, p32, &problem), static_cast<double>(1.0f / 448.0f));
  EXPECT_EQ(scaled_detail::block_scale(448.0, p2, &problem), 1.0);
  EXPECT_EQ(scaled_detail::block_scale(449.0, p2, &problem), 2.0);
  EXPECT_EQ(scaled_detail::block_scale(224.0, p2, &problem), 0.5);
  EXPECT_EQ(scaled_detail::block_scale(224.5, p2, &problem), 1.0);
  EXPECT_EQ(scaled_detail::block_scale(1.0, p2, &problem), std::ldexp(1.0, -8));  // 448 2^-8 = 1.75 >= 1 > 0.875
  const auto p5 = quant_plan(Operand::B, ScaleGranularity::tensor, Format::e5m2, false, 1, 1);
  EXPECT_EQ(scaled_detail::block_scale(57344.0, p5, &problem), 1.0);
}

TEST(ScaledFp8Scale, ProblemsAreReported) {
  const auto p32 = quant_plan(Operand::A, ScaleGranularity::tensor, Format::e4m3, false, 1, 1);
  const auto p2 = quant_plan(Operand::A, ScaleGranularity::tensor, Format::e4m3, true, 1, 1);
  int problem = 0;
  EXPECT_EQ(scaled_detail::block_scale(0.0, p32, &problem), 0.0);
  EXPECT_EQ(problem, scaled_detail::scale_amax_zero);
  scaled_detail::block_scale(std::numeric_limits<double>::infinity(), p32, &problem);
  EXPECT_EQ(problem, scaled_detail::scale_amax_nonfinite);
  scaled_detail::block_scale(std::numeric_limits<double>::quiet_NaN(), p32, &problem);
  EXPECT_EQ(problem, scaled_detail::scale_amax_nonfinite);
  scaled_detail::block_scale(std::ldexp(1.0, -149), p32, &problem);  // 2^-149 / 448 < 2^-150: 0 in fp32
  EXPECT_EQ(problem, scaled_detail::scale_underflow);
  scaled_detail::block_scale(std::ldexp(1.0, -130), p2, &problem);  // needs 2^-138 < 2^-127
  EXPECT_EQ(problem, scaled_detail::scale_ue8m0_range);
  scaled_detail::block_scale(std::ldexp(1.0, -130), p32, &problem);  // fp32 holds it (subnormal)
  EXPECT_EQ(problem, scaled_detail::scale_ok);
}

TEST(ScaledFp8Quantize, NearestFp8OfQuotientAndExactDequantization) {
  const Distribution d = parse_distribution("normal_0_1");
  for (Format f : {Format::e4m3, Format::e5m2})
    for (const ScaleRecipe& r : all_recipes(f)) {
      Distribution dr = d;
      dr.recipe = r;
      const ScaledProblem p = make_scaled_problem(dr, 16, 8, 260, 7);
      for (const ScaledOperand* op : {&p.A, &p.B}) {
        const Matrix& src = op == &p.A ? p.A0 : p.B0;
        const Matrix deq = op->dequantized();
        for (int i = 0; i < src.rows; ++i)
          for (int j = 0; j < src.cols; ++j) {
            const double s = op->scale_of(i, j);
            ASSERT_EQ(op->q(i, j), brute_nearest(src(i, j) / s, f)) << r.name() << " " << i << "," << j;
            ASSERT_EQ(deq(i, j), op->q(i, j) * s);
            ASSERT_EQ(std::fma(op->q(i, j), s, -deq(i, j)), 0.0);  // s q is exact in binary64
          }
        for (float s : op->scales) {
          ASSERT_GT(s, 0.0f);
          int e = 0;
          if (r.ue8m0) ASSERT_EQ(std::frexp(s, &e), 0.5f) << s;
        }
      }
    }
}

TEST(ScaledFp8Quantize, BlockAmaxReachesFmaxAndNeverPassesIt) {
  for (bool pow2 : {false, true}) {
    Distribution d = parse_distribution("logunif_-8_8");
    d.recipe = ScaleRecipe{Format::e4m3, ScaleGranularity::k128, ScaleGranularity::blk128, pow2};
    const ScaledProblem p = make_scaled_problem(d, 5, 130, 260, 3);
    // A's blocks: (1, 128), three per row, the last holding 4 columns.
    ASSERT_EQ(p.A.grid_rows, 5);
    ASSERT_EQ(p.A.grid_cols, 3);
    ASSERT_EQ(p.B.grid_rows, 3);  // B (260, 130): 128 x 128 blocks, 3 x 2
    ASSERT_EQ(p.B.grid_cols, 2);
    for (int i = 0; i < 5; ++i)
      for (int b = 0; b < 3; ++b) {
        double qmax = 0;
        for (int k = 128 * b; k < std::min(260, 128 * b + 128); ++k) qmax = std::max(qmax, std::fabs(p.A.q(i, k)));
        EXPECT_LE(qmax, 448.0);
        // fp32 scales: amax maps to fmax (rounded); UE8M0: to (fmax / 2, fmax].
        if (pow2) EXPECT_GE(qmax, 224.0);  // amax / s in (224, 448] may round down to 224
        else EXPECT_GE(qmax, 416.0);  // 448 (1 - 2^-23) rounds to 448 or its lower neighbour 416
      }
  }
}

TEST(ScaledFp8Quantize, GridsOfEveryGranularity) {
  struct Case {
    Operand w;
    ScaleGranularity g;
    int rows, cols, grid_rows, grid_cols;
  };
  for (const Case& c : {Case{Operand::A, ScaleGranularity::tensor, 7, 300, 1, 1},
                        Case{Operand::A, ScaleGranularity::outer, 7, 300, 7, 1},
                        Case{Operand::B, ScaleGranularity::outer, 300, 7, 1, 7},
                        Case{Operand::A, ScaleGranularity::k128, 7, 300, 7, 3},
                        Case{Operand::B, ScaleGranularity::k128, 300, 7, 3, 7},
                        Case{Operand::B, ScaleGranularity::blk128, 300, 129, 3, 2}}) {
    const auto p = quant_plan(c.w, c.g, Format::e4m3, false, c.rows, c.cols);
    EXPECT_EQ(grid_rows(p, c.rows), c.grid_rows) << to_string(c.g);
    EXPECT_EQ(p.grid_cols, c.grid_cols) << to_string(c.g);
  }
}

TEST(ScaledFp8Quantize, RefusesAllZeroBlocksNonFiniteAndTinyValues) {
  Matrix a(2, 256);
  for (int k = 0; k < 256; ++k) a(0, k) = 1 + k, a(1, k) = k < 128 ? 0.0 : 1.0;
  const std::string zero = message_of([&] { quantize(a, Operand::A, ScaleGranularity::k128, Format::e4m3, false); });
  EXPECT_NE(zero.find("block (1, 0) of A's k128 scale grid is all zero"), std::string::npos) << zero;
  EXPECT_NO_THROW(quantize(a, Operand::A, ScaleGranularity::tensor, Format::e4m3, false));
  a(0, 3) = std::numeric_limits<double>::infinity();
  EXPECT_NE(message_of([&] { quantize(a, Operand::A, ScaleGranularity::tensor, Format::e4m3, false); }).find("non-finite"),
            std::string::npos);
  a(0, 3) = std::numeric_limits<double>::quiet_NaN();
  EXPECT_NE(message_of([&] { quantize(a, Operand::A, ScaleGranularity::tensor, Format::e4m3, false); }).find("non-finite"),
            std::string::npos);
  Matrix tiny(1, 1);
  tiny(0, 0) = std::ldexp(1.0, -149);
  EXPECT_NE(message_of([&] { quantize(tiny, Operand::B, ScaleGranularity::tensor, Format::e4m3, false); }).find("is 0"),
            std::string::npos);
  EXPECT_NE(message_of([&] { quantize(tiny, Operand::B, ScaleGranularity::tensor, Format::e4m3, true); }).find("UE8M0"),
            std::string::npos);
}

TEST(ScaledFp8Quantize, SameBitsForAnyThreadCount) {
  const Distribution d = parse_distribution("uniform_0_1@e4m3_1x128_128x128");
  const ScaledProblem p1 = make_scaled_problem(d, 64, 64, 384, 11, 1);
  const ScaledProblem p4 = make_scaled_problem(d, 64, 64, 384, 11, 4);
  EXPECT_EQ(p1.A.q.v, p4.A.q.v);
  EXPECT_EQ(p1.B.q.v, p4.B.q.v);
  EXPECT_EQ(p1.A.scales, p4.A.scales);
  EXPECT_EQ(p1.B.scales, p4.B.scales);
}

// One output entry of a 1 x 128 (A) by 128 x 128 (B) scaled problem for emulate_scaled: block 0 holds
// 1 * 1 + 2^-5 * 2^-5 (d = 1 + 2^-10, kept by the wgmma model's 13 fraction bits), a second, partial
// block (K = 200: columns 128 .. 199) holds 1 * 1; sa[b], sb[b] are block b's scales.
static std::pair<ScaledOperand, ScaledOperand> one_entry_operands(int K, std::vector<float> sa, std::vector<float> sb) {
  ScaledOperand a, b;
  a.plan = quant_plan(Operand::A, ScaleGranularity::k128, Format::e4m3, false, 1, K);
  b.plan = quant_plan(Operand::B, ScaleGranularity::blk128, Format::e4m3, false, K, 1);
  a.grid_rows = 1, a.grid_cols = a.plan.grid_cols;
  b.grid_rows = (K + 127) / 128, b.grid_cols = 1;
  a.q = Matrix(1, K), b.q = Matrix(K, 1);
  a.q(0, 0) = 1, a.q(0, 1) = 0x1p-5, b.q(0, 0) = 1, b.q(1, 0) = 0x1p-5;
  if (K > 128) a.q(0, 130) = 1, b.q(130, 0) = 1;
  a.scales = std::move(sa), b.scales = std::move(sb);
  return {a, b};
}

// emulate_scaled's orders on dyadic values with hand-computed results. One K block: d = 1 + 2^-10
// (1 * 1 + 2^-5 * 2^-5, kept by the wgmma model's 13 fraction bits), s_a = s_b = 1 + 2^-12, whose
// fp32 product 1 + 2^-11 + 2^-24 ties to 1 + 2^-11. block_fma / epilogue: RN(d (1 + 2^-11)) =
// 1 + 2^-10 + 2^-11 + 2^-21 (exact). block_mul_mul / epilogue_mul_mul: RN(d s_a) = 1 + 2^-10 +
// 2^-12 + 2^-22 (exact), times s_b = 1 + 2^-10 + 2^-11 + 2^-21 + 2^-24 + 2^-34, rounded up by one
// ulp (2^-23). A second, partial block (K = 200: columns 128 .. 199) holding 1 * 1 with s_a = 2
// adds 2: 3 + 2^-10 + 2^-11 + 2^-21 for both block orders (the mul_mul one's 2^-23 is half an ulp of
// [2, 4) and ties to even).
TEST(ScaledFp8Emulation, OrdersOfApplyingTheScalesOnDyadicValues) {
  const auto params = tc::measured_hopper_params(tc::Instruction::wgmma_m64n8k32_e4m3_f32);
  ASSERT_TRUE(params.has_value());
  auto operands = [](int K) {
    const float s = 1.0f + 0x1p-12f;
    return K > 128 ? one_entry_operands(K, {s, 2.0f}, {s, 1.0f}) : one_entry_operands(K, {s}, {s});
  };
  auto run = [&](ScaleApplication app, int interval, int K) {
    Numerics n = wgmma_f32_numerics(Format::e4m3, interval);
    n.scale_application = app;
    const auto [a, b] = operands(K);
    return emulation::emulate_scaled(n, a, b, *params, 1).at(0);
  };
  const double fma_one = 1 + 0x1p-10 + 0x1p-11 + 0x1p-21, mul_one = fma_one + 0x1p-23;
  EXPECT_EQ(run(ScaleApplication::block_fma, 128, 128), fma_one);
  EXPECT_EQ(run(ScaleApplication::block_mul_mul, 128, 128), mul_one);
  EXPECT_EQ(run(ScaleApplication::epilogue, 0, 128), fma_one);
  EXPECT_EQ(run(ScaleApplication::epilogue_mul_mul, 128, 128), mul_one);
  EXPECT_EQ(run(ScaleApplication::block_fma, 128, 200), 2 + fma_one);
  EXPECT_EQ(run(ScaleApplication::block_mul_mul, 128, 200), 2 + fma_one);
  Numerics none = wgmma_f32_numerics(Format::e4m3, 128);
  const auto [a, b] = operands(128);
  EXPECT_THROW(emulation::emulate_scaled(none, a, b, *params, 1), std::invalid_argument);
}

// The candidate orders that differ only in which scale comes first, or in multiplying before the
// FMA, on scales with 17 significant bits (s = 1 + m 2^-16), where every product rounds. Block 0:
// d = 1 + 2^-10 with s_a = 1 + 11388 2^-16, s_b = 1 + 51942 2^-16; block 1 (columns 128 .. 199): d = 1
// with s_a = 1 + 9596 2^-16, s_b = 1 + 16313 2^-16. The expected fp32 results were computed with exact
// rational arithmetic, rounding to nearest even after every operation as each order says (the
// script's steps: p = RN(...) per block from p = 0); they are not produced by the code under test.
// block_fma and block_mul_mul_ba land on 0x1.c4da08p+1, block_mul_fma_b one ulp (2^-22 in [2, 4)) above
// (0x1.c4da0ap+1), block_mul_mul and block_mul_fma_a two ulps above (0x1.c4da0cp+1). One block with
// s_a = 1 + 57795 2^-16, s_b = 1 + 59847 2^-16: epilogue and epilogue_mul_mul give 0x1.cd4d32p+1,
// epilogue_mul_mul_ba 0x1.cd4d34p+1.
TEST(ScaledFp8Emulation, WhichScaleFirstAndMultiplyBeforeTheFma) {
  const auto params = tc::measured_hopper_params(tc::Instruction::wgmma_m64n8k32_e4m3_f32);
  ASSERT_TRUE(params.has_value());
  auto operands = one_entry_operands;
  const float m = 0x1p-16f;
  const auto [a2, b2] = operands(200, {1 + 11388 * m, 1 + 9596 * m}, {1 + 51942 * m, 1 + 16313 * m});
  auto run = [&](ScaleApplication app, int interval, const ScaledOperand& a, const ScaledOperand& b) {
    Numerics n = wgmma_f32_numerics(Format::e4m3, interval);
    n.scale_application = app;
    return emulation::emulate_scaled(n, a, b, *params, 1).at(0);
  };
  EXPECT_EQ(run(ScaleApplication::block_fma, 128, a2, b2), 0x1.c4da08p+1);
  EXPECT_EQ(run(ScaleApplication::block_mul_mul, 128, a2, b2), 0x1.c4da0cp+1);
  EXPECT_EQ(run(ScaleApplication::block_mul_mul_ba, 128, a2, b2), 0x1.c4da08p+1);
  EXPECT_EQ(run(ScaleApplication::block_mul_fma_a, 128, a2, b2), 0x1.c4da0cp+1);
  EXPECT_EQ(run(ScaleApplication::block_mul_fma_b, 128, a2, b2), 0x1.c4da0ap+1);
  const auto [a1, b1] = operands(128, {1 + 57795 * m}, {1 + 59847 * m});
  EXPECT_EQ(run(ScaleApplication::epilogue, 0, a1, b1), 0x1.cd4d32p+1);
  EXPECT_EQ(run(ScaleApplication::epilogue_mul_mul, 0, a1, b1), 0x1.cd4d32p+1);
  EXPECT_EQ(run(ScaleApplication::epilogue_mul_mul_ba, 0, a1, b1), 0x1.cd4d34p+1);
}
