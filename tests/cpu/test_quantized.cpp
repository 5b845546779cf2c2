// Quantized recipes (reference/quantized_recipe.hpp, quantized.hpp): names, each scheme's scales and
// elements on hand-made blocks (exact expected values), elements against a brute-force nearest value,
// every refusal, and the exact reference of the dequantized operands equal to MPFR's bit for bit.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <functional>
#include <iostream>
#include <limits>
#include <random>
#include <mpfr.h>
#include <stdexcept>
#include <string>
#include <vector>

#include "reference/exact_gemm.hpp"
#include "reference/formats.hpp"
#include "reference/formats_mpfr.hpp"
#include "reference/mpfr_gemm.hpp"
#include "reference/quantized.hpp"
#include "reference/quantized_layout.hpp"

using namespace gemmlab;

namespace {

std::string message_of(const std::function<void()>& f) {
  try {
    f();
  } catch (const std::invalid_argument& e) {
    return e.what();
  }
  return "(no exception)";
}

// Every finite value of a format, from its code points.
std::vector<double> values_of(Format f) {
  std::vector<double> v;
  for (std::uint64_t b = 0; b < (1ull << info(f).storage_bits); ++b) {
    const double x = from_bits(f, b);
    if (std::isfinite(x)) v.push_back(x);
  }
  return v;
}

// The nearest value of f to y within [-cap, cap], ties to the even code point (brute force).
double brute_nearest(double y, Format f, double cap) {
  double best = NAN;
  std::uint64_t best_bits = 0;
  for (double v : values_of(f)) {
    if (std::fabs(v) > cap) continue;
    const double d = std::fabs(y - v), db = std::fabs(y - best);
    const std::uint64_t bits = to_bits(f, v);
    if (std::isnan(best) || d < db || (d == db && (bits & 1) == 0 && (best_bits & 1) == 1)) best = v, best_bits = bits;
  }
  return best;
}

// A (1, K) operand A holding `row`.
Matrix row_matrix(const std::vector<double>& row) {
  Matrix m(1, static_cast<int>(row.size()));
  m.v = row;
  return m;
}

std::vector<double> filled(int n, double x) { return std::vector<double>(static_cast<std::size_t>(n), x); }

}  // namespace

TEST(QuantizedRecipe, NamesRoundTripAndAttachToDistributions) {
  for (const char* n : {"mxfp8_e4m3", "mxfp8_e5m2", "mxfp6_e2m3", "mxfp6_e3m2", "mxfp4", "nvfp4", "int8_rowwise", "int4_g32",
                        "int4_g128", "uint4_g64", "uint4_g256", "mxfp4_x_bf16", "mxfp8_e4m3_x_bf16", "bf16_x_uint4_g128",
                        "fp16_x_int4_g32", "mxfp4_x_mxfp8_e4m3"}) {
    EXPECT_EQ(parse_quant_recipe(n).name(), n);
    EXPECT_TRUE(is_quant_recipe_name(n)) << n;
    const Distribution d = parse_distribution(std::string("normal_0_1@") + n);
    ASSERT_TRUE(d.quant) << n;
    EXPECT_FALSE(d.recipe) << n;
    EXPECT_EQ(d.name(), std::string("normal_0_1@") + n);
    EXPECT_EQ(d.source().name(), "normal_0_1");
    EXPECT_NE(unusable_reason(d, Format::bf16), "") << n;  // no plain kernel takes it
  }
  const QuantRecipe w4 = parse_quant_recipe("bf16_x_uint4_g128");
  EXPECT_EQ(w4.a.scheme, QuantScheme::plain);
  EXPECT_EQ(w4.b.scheme, QuantScheme::group);
  EXPECT_EQ(w4.b.block, 128);
  EXPECT_TRUE(w4.b.has_zero());
  EXPECT_EQ(parse_quant_recipe("mxfp4_x_mxfp4").name(), "mxfp4");  // both alike: one spec
  EXPECT_EQ(parse_quant_spec("nvfp4").scale_format(), Format::ue4m3);
  EXPECT_EQ(parse_quant_spec("mxfp6_e3m2").scale_format(), Format::ue8m0);
  // Scaled fp8 recipes still parse as before.
  EXPECT_TRUE(parse_distribution("normal_0_1@e4m3_rowwise").recipe);
  EXPECT_FALSE(parse_distribution("normal_0_1@e4m3_rowwise").quant);
  // Bad names say what is valid.
  EXPECT_NE(message_of([] { parse_quant_recipe("mxfp5"); }).find("valid recipes"), std::string::npos);
  EXPECT_NE(message_of([] { parse_quant_recipe("int4_g48"); }).find("32, 64, 128 or 256"), std::string::npos);
  EXPECT_NE(message_of([] { parse_quant_recipe("bf16_x_fp16"); }).find("neither operand is quantized"), std::string::npos);
  EXPECT_NE(message_of([] { parse_distribution("normal_0_1@e4m3_blocky"); }).find("quantized recipe"), std::string::npos);
  EXPECT_NE(message_of([] { generate(parse_distribution("normal_0_1@mxfp4"), Operand::A, 4, 32, Format::fp32, 1); })
                .find("make_quantized_problem"),
            std::string::npos);
}

// OCP MX: e = floor(log2 amax) - emax_elem; elements RN(x / 2^e), saturated.
TEST(QuantizedMx, SharedExponentAndElements) {
  std::vector<double> row = filled(32, 0.0);
  row[0] = 5.0;    // amax: floor(log2 5) = 2 = e2m1's emax -> scale 2^0
  row[1] = 0.3;    // -> 0.5 (above the midpoint 0.25)
  row[2] = 0.25;   // tie 0 | 0.5 -> 0 (even code)
  row[3] = -2.5;   // tie 2 | 3 -> 2 (code 4, even)
  row[4] = 5.0;    // tie 4 | 6 -> 4
  row[5] = -1.75;  // tie 1.5 | 2 -> 2
  QuantizedOperand q = quantize(row_matrix(row), Operand::A, parse_quant_spec("mxfp4"));
  ASSERT_EQ(q.scales.size(), 1u);
  EXPECT_EQ(q.scales[0], 1.0);
  EXPECT_EQ(q.q(0, 0), 4.0);
  EXPECT_EQ(q.q(0, 1), 0.5);
  EXPECT_EQ(q.q(0, 2), 0.0);
  EXPECT_EQ(q.q(0, 3), -2.0);
  EXPECT_EQ(q.q(0, 5), -2.0);
  // amax 7.9: the same exponent (2), so 7.9 saturates to 6 (OCP's rule can clip the block's largest value).
  row[0] = 7.9;
  q = quantize(row_matrix(row), Operand::A, parse_quant_spec("mxfp4"));
  EXPECT_EQ(q.scales[0], 1.0);
  EXPECT_EQ(q.q(0, 0), 6.0);
  // e4m3 (emax 8): amax 1000 -> 2^(9 - 8) = 2; 1000 / 2 = 500 saturates to 448; 3 / 2 = 1.5.
  row = filled(32, 3.0);
  row[7] = -1000.0;
  q = quantize(row_matrix(row), Operand::A, parse_quant_spec("mxfp8_e4m3"));
  EXPECT_EQ(q.scales[0], 2.0);
  EXPECT_EQ(q.q(0, 7), -448.0);
  EXPECT_EQ(q.q(0, 0), 1.5);
  EXPECT_EQ(q.dequantized_at(0, 7), -896.0);
  // Two blocks along K of a column of B: each its own scale.
  Matrix b(64, 1);
  for (int k = 0; k < 64; ++k) b(k, 0) = k < 32 ? 0.375 : 24.0;  // amax 0.375 -> 2^(-2 - 2); 24 -> 2^(4 - 2)
  q = quantize(b, Operand::B, parse_quant_spec("mxfp4"));
  ASSERT_EQ(q.grid_rows, 2);
  EXPECT_EQ(q.scales[0], 0x1p-4);
  EXPECT_EQ(q.scales[1], 4.0);
  EXPECT_EQ(q.q(0, 0), 6.0);   // 0.375 / 2^-4 = 6
  EXPECT_EQ(q.q(40, 0), 6.0);  // 24 / 4 = 6
  // Against a brute-force nearest value, every element format, random blocks.
  std::uint64_t state = 20261129;
  std::cout << "[ seed ] 20261129\n";
  auto next = [&] {
    state = state * 6364136223846793005ull + 1442695040888963407ull;
    return std::ldexp(static_cast<double>(state >> 11), -53);  // [0, 1)
  };
  for (const char* spec : {"mxfp8_e4m3", "mxfp8_e5m2", "mxfp6_e2m3", "mxfp6_e3m2", "mxfp4"}) {
    const QuantSpec s = parse_quant_spec(spec);
    Matrix a(4, 64);
    for (double& x : a.v) x = static_cast<float>((next() - 0.5) * std::ldexp(1.0, static_cast<int>(next() * 12) - 6));
    const QuantizedOperand qo = quantize(a, Operand::A, s);
    for (int i = 0; i < a.rows; ++i)
      for (int j = 0; j < a.cols; ++j) {
        const double scale = qo.scale_of(i, j);
        EXPECT_EQ(std::log2(scale), std::floor(std::log2(scale))) << spec;
        EXPECT_EQ(qo.q(i, j), brute_nearest(a(i, j) / scale, s.element, info(s.element).max_finite))
            << spec << " (" << i << ", " << j << ") x = " << a(i, j) << " scale " << scale;
      }
  }
}

TEST(QuantizedNvfp4, TensorAndBlockScales) {
  // Tensor amax 2688 = 448 * 6: t = 1. Block 0: amax 6 -> b = 1. Block 1: amax 0.6 -> b = RN_ue4m3(0.1) =
  // 0.1015625 (1.101b 2^-4), and 0.6 / 0.1015625 = 5.9 -> 6.
  std::vector<double> row = filled(32, 0.0);
  row[0] = 2688.0;
  for (int k = 1; k < 16; ++k) row[k] = 1.0;
  row[16] = 0.6;
  row[17] = -0.3;  // 0.3 / 0.1015625 = 2.95 -> 3
  for (int k = 18; k < 32; ++k) row[k] = 0.05;
  QuantizedOperand q = quantize(row_matrix(row), Operand::A, parse_quant_spec("nvfp4"));
  EXPECT_EQ(q.tensor_scale, 1.0);
  ASSERT_EQ(q.scales.size(), 2u);
  EXPECT_EQ(q.scales[0], 448.0);  // amax 2688 / (6 t) = 448
  EXPECT_EQ(q.scales[1], 0.1015625);
  EXPECT_EQ(q.q(0, 0), 6.0);
  EXPECT_EQ(q.q(0, 1), 0.0);  // 1 / 448 rounds to 0
  EXPECT_EQ(q.q(0, 16), 6.0);
  EXPECT_EQ(q.q(0, 17), -3.0);
  EXPECT_EQ(q.dequantized_at(0, 16), 0.609375);
  // A tensor scale that is not a power of two: amax 1 -> t = RN_fp32(1 / 2688); the dequantized value q b t is
  // exact in binary64 (2 + 4 + 24 bits).
  row = filled(16, 0.25);
  row[0] = 1.0;
  q = quantize(row_matrix(row), Operand::A, parse_quant_spec("nvfp4"));
  EXPECT_EQ(q.tensor_scale, static_cast<double>(static_cast<float>(1.0 / 2688.0)));
  EXPECT_EQ(q.dequantized_at(0, 0), q.q(0, 0) * q.scales[0] * q.tensor_scale);
}

TEST(QuantizedInt, RowwiseGroupsAndZeroPoints) {
  // int8 rowwise: amax 127 -> s = 1; RN to even integers; a second row amax 254 -> s = 2.
  Matrix a(2, 4);
  a.v = {127, 2.5, -3.5, 0.49, 254, 5, -7, 1};
  QuantizedOperand q = quantize(a, Operand::A, parse_quant_spec("int8_rowwise"));
  ASSERT_EQ(q.scales.size(), 2u);
  EXPECT_EQ(q.scales[0], 1.0);
  EXPECT_EQ(q.scales[1], 2.0);
  EXPECT_EQ(q.q(0, 1), 2.0);
  EXPECT_EQ(q.q(0, 2), -4.0);
  EXPECT_EQ(q.q(0, 3), 0.0);
  EXPECT_EQ(q.q(1, 1), 2.0);   // 2.5 -> 2
  EXPECT_EQ(q.q(1, 2), -4.0);  // -3.5 -> -4
  // B: one scale per column.
  Matrix b(3, 2);
  b.v = {1, 100, -2, 50, 0.5, -25};
  q = quantize(b, Operand::B, parse_quant_spec("int8_rowwise"));
  EXPECT_EQ(q.scales[0], static_cast<double>(static_cast<float>(2.0 / 127)));
  EXPECT_EQ(q.scales[1], static_cast<double>(static_cast<float>(100.0 / 127)));
  EXPECT_EQ(q.q(1, 0), -127.0);
  // int4 symmetric, groups of 32 along K: amax 7 -> s = 1 (bf16); -3.5 -> -4 (even); a second group amax 14 -> s = 2.
  std::vector<double> row = filled(64, 1.0);
  row[0] = 7.0;
  row[1] = -3.5;
  row[32] = 14.0;
  row[33] = 5.0;  // 5 / 2 = 2.5 -> 2
  q = quantize(row_matrix(row), Operand::A, parse_quant_spec("int4_g32"));
  EXPECT_EQ(q.scales, (std::vector<double>{1.0, 2.0}));
  EXPECT_EQ(q.q(0, 1), -4.0);
  EXPECT_EQ(q.q(0, 33), 2.0);
  EXPECT_EQ(q.q(0, 34), 0.0);  // 1 / 2 = 0.5 -> 0
  // uint4 with a zero, along a column of B: min 0, max 15 -> s = 1, z = RN_bf16(0 + 8) = 8; x -> RN(x - 8) + 8.
  Matrix w(32, 1);
  for (int k = 0; k < 32; ++k) w(k, 0) = k % 16;
  w(2, 0) = 3.5;  // RN(-4.5) = -4 -> q = 4
  w(3, 0) = 4.5;  // RN(-3.5) = -4 -> q = 4
  q = quantize(w, Operand::B, parse_quant_spec("uint4_g32"));
  EXPECT_EQ(q.scales[0], 1.0);
  EXPECT_EQ(q.zeros[0], 8.0);
  EXPECT_EQ(q.q(2, 0), 4.0);
  EXPECT_EQ(q.q(3, 0), 4.0);
  EXPECT_EQ(q.q(15, 0), 15.0);
  EXPECT_EQ(q.dequantized_at(15, 0), 15.0);
  // A zero that is not a multiple of the scale: min -1, max 2 -> s = RN_bf16(3 / 15) = 0.2001953125,
  // z = RN_bf16(-1 + 8 s) = RN_bf16(0.6015625) = 0.6015625; dequantized (q - 8) s + z exactly.
  for (int k = 0; k < 32; ++k) w(k, 0) = k == 0 ? -1.0 : k == 1 ? 2.0 : 0.5;
  q = quantize(w, Operand::B, parse_quant_spec("uint4_g32"));
  EXPECT_EQ(q.scales[0], 0.2001953125);
  EXPECT_EQ(q.zeros[0], 0.6015625);
  EXPECT_EQ(q.q(0, 0), 0.0);
  EXPECT_EQ(q.q(1, 0), 15.0);
  EXPECT_EQ(q.dequantized_at(0, 0), -8 * 0.2001953125 + 0.6015625);
  EXPECT_EQ(q.dequantized_at(2, 0), (q.q(2, 0) - 8) * 0.2001953125 + 0.6015625);
  // Plain: the source rounded to bf16.
  q = quantize(row_matrix({1.0 + 0x1p-9, 3.0}), Operand::A, parse_quant_spec("bf16"));
  EXPECT_EQ(q.q(0, 0), 1.0);
}

TEST(QuantizedRecipe, RefusesWhatHasNoScale) {
  const QuantSpec mx4 = parse_quant_spec("mxfp4");
  EXPECT_NE(message_of([&] { quantize(row_matrix(filled(32, 0.0)), Operand::A, mx4); }).find("all zero"), std::string::npos);
  EXPECT_NE(message_of([&] { quantize(row_matrix(filled(48, 1.0)), Operand::A, mx4); })
                .find("K = 48 is not a multiple of its block of 32"),
            std::string::npos);
  // fp32 subnormal magnitudes: floor(log2 2^-140) - 2 = -142 is below E8M0's -127.
  EXPECT_NE(message_of([&] { quantize(row_matrix(filled(32, 0x1p-140)), Operand::A, mx4); }).find("ue8m0"),
            std::string::npos);
  EXPECT_NE(message_of([&] { quantize(row_matrix(filled(32, 3.0)), Operand::A, parse_quant_spec("uint4_g32")); })
                .find("max = min"),
            std::string::npos);
  std::vector<double> inf_row = filled(16, 1.0);
  inf_row[3] = INFINITY;
  EXPECT_NE(message_of([&] { quantize(row_matrix(inf_row), Operand::A, parse_quant_spec("nvfp4")); }).find("non-finite"),
            std::string::npos);
  // NVFP4: a block far below the tensor's amax has a ue4m3 scale of 0.
  std::vector<double> far = filled(32, 1e-9);
  far[0] = 1.0;
  far[1] = 1.0;
  const std::string m = message_of([&] { quantize(row_matrix(far), Operand::A, parse_quant_spec("nvfp4")); });
  EXPECT_NE(m.find("block (0, 1)"), std::string::npos) << m;
  EXPECT_NE(m.find("ue4m3"), std::string::npos) << m;
}

// The exact reference of the dequantized operands equals MPFR's bit for bit, for every kind of recipe, and
// the same seed gives the same problem.
TEST(QuantizedRecipe, ExactReferenceOfDequantizedOperandsEqualsMpfr) {
  const int M = 6, N = 5, K = 256;
  for (const char* r : {"mxfp8_e4m3", "mxfp8_e5m2", "mxfp6_e2m3", "mxfp6_e3m2", "mxfp4", "nvfp4", "int8_rowwise",
                        "mxfp4_x_bf16", "bf16_x_uint4_g128", "fp16_x_int4_g32", "bf16_x_uint4_g32"}) {
    for (const char* src : {"normal_0_1", "uniform_0_1", "logunif_-8_8"}) {
      const Distribution d = parse_distribution(std::string(src) + "@" + r);
      const QuantizedProblem p = make_quantized_problem(d, M, N, K, 7);
      const Matrix A = p.A.dequantized(), B = p.B.dequantized();
      const GemmReference fast = exact_gemm(A, B, Format::fp32, 1), mp = mpfr_gemm(A, B, Format::fp32, 1);
      EXPECT_EQ(fast.c, mp.c) << d.name();
      EXPECT_EQ(fast.c_out, mp.c_out) << d.name();
      EXPECT_EQ(fast.abs_ab, mp.abs_ab) << d.name();
      // Every dequantized value is a product the quantized data holds exactly (no rounding in dequantization).
      for (int i = 0; i < M; ++i)
        for (int k = 0; k < K; ++k) {
          const double back = p.A.spec.scheme == QuantScheme::plain ? p.A.q(i, k) : p.A.q(i, k) * p.A.scale_of(i, k) * p.A.tensor_scale;
          if (!p.A.spec.has_zero()) EXPECT_EQ(A(i, k), back) << d.name();
        }
      const QuantizedProblem again = make_quantized_problem(d, M, N, K, 7);
      EXPECT_EQ(again.A.q.v, p.A.q.v) << d.name();
      EXPECT_EQ(again.B.scales, p.B.scales) << d.name();
    }
  }
}

// The kernel layouts (reference/quantized_layout.hpp): every element and scale decoded back from the bytes
// by the formats' from_bits equals the quantized value, at the index the layout's documentation gives.
TEST(QuantizedLayout, BytesDecodeToTheQuantizedValues) {
  const int M = 4, N = 6, K = 128;
  for (const char* r : {"mxfp8_e4m3", "mxfp8_e5m2", "mxfp6_e2m3", "mxfp6_e3m2", "mxfp4", "nvfp4", "int8_rowwise",
                        "int4_g32", "uint4_g64", "fp16_x_mxfp4", "bf16_x_uint4_g128"}) {
    const QuantizedProblem p = make_quantized_problem(parse_distribution(std::string("normal_0_1@") + r), M, N, K, 5);
    for (const QuantizedOperand* op : {&p.A, &p.B}) {
      SCOPED_TRACE(std::string(r) + (op->which == Operand::A ? " A" : " B"));
      const bool a = op->which == Operand::A;
      const KernelOperandLayout l = kernel_layout(op->spec, op->which, op->q.rows, op->q.cols);
      const std::vector<std::uint8_t> e = kernel_elements(*op);
      ASSERT_EQ(e.size(), l.elements.bytes());
      const Format f = op->spec.element;
      const bool packed = f == Format::e2m1 || f == Format::int4 || f == Format::uint4;
      for (int i = 0; i < op->q.rows; ++i)
        for (int j = 0; j < op->q.cols; ++j) {
          std::uint64_t bits;
          if (packed) {
            const int k = a ? j : i;  // along K: A's columns, B's rows
            const std::size_t byte = a ? static_cast<std::size_t>(i) * (op->q.cols / 2) + j / 2
                                       : static_cast<std::size_t>(i / 2) * op->q.cols + j;
            bits = (e[byte] >> (4 * (k % 2))) & 0xF;
          } else {
            const std::size_t w = bytes_of(l.elements.type), t = static_cast<std::size_t>(i) * op->q.cols + j;
            bits = 0;
            for (std::size_t b = 0; b < w; ++b) bits |= static_cast<std::uint64_t>(e[t * w + b]) << (8 * b);
          }
          ASSERT_EQ(from_bits(f, bits), op->q(i, j)) << "(" << i << ", " << j << ")";
        }
      if (op->spec.scheme == QuantScheme::plain) {
        EXPECT_FALSE(l.scales.present());
        continue;
      }
      const std::vector<std::uint8_t> s = kernel_block_scales(*op);
      ASSERT_EQ(s.size(), l.scales.bytes());
      const Format sf = op->spec.scale_format();
      const std::size_t w = bytes_of(l.scales.type);
      const int block = op->spec.block > 0 ? op->spec.block : K;
      for (int i = 0; i < op->q.rows; ++i)
        for (int j = 0; j < op->q.cols; ++j) {
          // MX / NVFP4: A (M, K/block), B (N, K/block); channel: A (M), B (N); group: A (M, K/G), B (K/G, N).
          std::size_t t;
          if (op->spec.scheme == QuantScheme::channel) t = a ? i : j;
          else if (a) t = static_cast<std::size_t>(i) * (K / block) + j / block;
          else if (op->spec.scheme == QuantScheme::group) t = static_cast<std::size_t>(i / block) * N + j;
          else t = static_cast<std::size_t>(j) * (K / block) + i / block;
          std::uint64_t bits = 0;
          for (std::size_t b = 0; b < w; ++b) bits |= static_cast<std::uint64_t>(s[t * w + b]) << (8 * b);
          ASSERT_EQ(from_bits(sf, bits), op->scale_of(i, j)) << "scale of (" << i << ", " << j << ")";
          if (op->spec.has_zero()) {
            const std::vector<std::uint8_t> z = kernel_zeros(*op);
            std::uint64_t zb = z[t * 2] | static_cast<std::uint64_t>(z[t * 2 + 1]) << 8;
            ASSERT_EQ(from_bits(Format::bf16, zb), op->zero_of(i, j));
          }
        }
      EXPECT_EQ(l.tensor_scale, op->spec.scheme == QuantScheme::nvfp4);
    }
  }
  // K not a multiple of the block is refused.
  EXPECT_NE(message_of([] { kernel_layout(parse_quant_spec("mxfp4"), Operand::B, 48, 4); }).find("multiple of 32"),
            std::string::npos);
}

// Tensors a user made, decoded back (decode_kernel_tensors): every recipe's tensors round-trip to the operand,
// and every kind of bad input is refused with a message naming the tensor.
TEST(QuantizedLayout, UserTensorsDecodeAndBadOnesAreRefused) {
  const int M = 4, N = 6, K = 128;
  for (const char* r : {"mxfp8_e4m3", "mxfp6_e3m2", "mxfp4", "nvfp4", "int8_rowwise", "int4_g32", "uint4_g64",
                        "bf16_x_uint4_g128"}) {
    const QuantizedProblem p = make_quantized_problem(parse_distribution(std::string("normal_0_1@") + r), M, N, K, 5);
    for (const QuantizedOperand* op : {&p.A, &p.B}) {
      const QuantizedOperand d = decode_kernel_tensors(op->spec, op->which, op->q.rows, op->q.cols, kernel_elements(*op),
                                                       kernel_block_scales(*op), kernel_zeros(*op), op->tensor_scale);
      EXPECT_EQ(d.dequantized().v, op->dequantized().v) << r;
    }
  }
  const QuantizedProblem p = make_quantized_problem(parse_distribution("normal_0_1@mxfp8_e4m3"), M, N, K, 5);
  auto refused = [&](const QuantizedOperand& op, std::vector<std::uint8_t> e, std::vector<std::uint8_t> s,
                     std::vector<std::uint8_t> z, double t = 1.0) {
    return message_of([&] { decode_kernel_tensors(op.spec, op.which, op.q.rows, op.q.cols, e, s, z, t); });
  };
  std::vector<std::uint8_t> e = kernel_elements(p.A), s = kernel_block_scales(p.A);
  EXPECT_NE(refused(p.A, std::vector<std::uint8_t>(e.begin(), e.end() - 1), s, {}).find("A under mxfp8_e4m3 for A (4, 128) "
                                                                                        "is a float8_e4m3fn tensor of shape (4, 128)"),
            std::string::npos);
  std::vector<std::uint8_t> bad = s;
  bad[3] = 0xFF;  // E8M0 NaN
  EXPECT_NE(refused(p.A, e, bad, {}).find("a_scale[0, 3] is NaN"), std::string::npos);
  bad = e;
  bad[5] = 0x7F;  // e4m3 NaN
  EXPECT_NE(refused(p.A, bad, s, {}).find("A(0, 5) is NaN"), std::string::npos);
  // NVFP4: a zero ue4m3 scale, a sign bit, a bad tensor scale.
  const QuantizedProblem nv = make_quantized_problem(parse_distribution("normal_0_1@nvfp4"), M, N, K, 5);
  std::vector<std::uint8_t> ns = kernel_block_scales(nv.B);
  ns[2] = 0;
  EXPECT_NE(refused(nv.B, kernel_elements(nv.B), ns, {}, nv.B.tensor_scale).find("b_scale[0, 2] is zero"), std::string::npos);
  ns[2] = 0xB8;
  EXPECT_NE(refused(nv.B, kernel_elements(nv.B), ns, {}, nv.B.tensor_scale).find("sign bit"), std::string::npos);
  EXPECT_NE(refused(nv.B, kernel_elements(nv.B), kernel_block_scales(nv.B), {}, 0.0).find("b_tensor_scale"),
            std::string::npos);
  // int8 rowwise: a negative fp32 scale; uint4: a NaN zero; fp6: a code with high bits.
  const QuantizedProblem i8 = make_quantized_problem(parse_distribution("normal_0_1@int8_rowwise"), M, N, K, 5);
  std::vector<std::uint8_t> is = kernel_block_scales(i8.A);
  is[3] |= 0x80;  // the sign of a[0]
  EXPECT_NE(refused(i8.A, kernel_elements(i8.A), is, {}).find("a_scale[0] is negative"), std::string::npos);
  const QuantizedProblem w4 = make_quantized_problem(parse_distribution("normal_0_1@uint4_g32"), M, N, K, 5);
  std::vector<std::uint8_t> wz = kernel_zeros(w4.B);
  wz[0] = 0xC0, wz[1] = 0x7F;  // bf16 NaN
  EXPECT_NE(refused(w4.B, kernel_elements(w4.B), kernel_block_scales(w4.B), wz).find("b_zero[0, 0] is NaN"),
            std::string::npos);
  const QuantizedProblem f6 = make_quantized_problem(parse_distribution("normal_0_1@mxfp6_e2m3"), M, N, K, 5);
  std::vector<std::uint8_t> fe = kernel_elements(f6.A);
  fe[0] |= 0x40;
  EXPECT_NE(refused(f6.A, fe, kernel_block_scales(f6.A), {}).find("unused high bits must be 0"), std::string::npos);
  // A group size that does not divide K.
  EXPECT_NE(message_of([&] { decode_kernel_tensors(parse_quant_spec("uint4_g128"), Operand::B, 96, 4, {}, {}, {}); })
                .find("K = 96 is not a multiple of its block of 128"),
            std::string::npos);
}

// The candidate epilogues of an int8 kernel (quantized_entry.hpp epilogue_candidates): the three fp32 orders
// equal float arithmetic, `once` equals MPFR's exact S sa sb rounded once to fp32 (midpoints of the binary64
// product included), on random sums and scales; and the explanation names the candidate with no mismatch.
TEST(QuantizedEpilogue, CandidatesAreFp32ArithmeticAndOneRounding) {
  std::mt19937_64 rng(20261129);
  std::cout << "[ seed ] 20261129\n";
  mpfr_t e;
  mpfr_init2(e, 200);
  int checked = 0, once_differs = 0;
  for (int t = 0; t < 200000; ++t) {
    const double S = static_cast<double>(static_cast<std::int64_t>(rng() % (1ull << 31)) - (1ll << 30)) /
                     static_cast<double>(1ll << static_cast<int>(rng() % 20));  // integers, most below 2^24 in size
    const double Si = std::nearbyint(S);
    const float sa = std::ldexp(1.0f + static_cast<float>(rng() % (1u << 23)) * 0x1p-23f, static_cast<int>(rng() % 40) - 30);
    const float sb = std::ldexp(1.0f + static_cast<float>(rng() % (1u << 23)) * 0x1p-23f, static_cast<int>(rng() % 40) - 30);
    double c[quant_detail::kEpilogueCandidates];
    quant_detail::epilogue_candidates(Si, sa, sb, c);
    const volatile float s = static_cast<float>(Si);
    const volatile float p0 = s * sa, p1 = s * sb, ab = sa * sb;
    const volatile float r0 = p0 * sb, r1 = p1 * sa, r2 = s * ab;
    ASSERT_EQ(c[0], static_cast<double>(r0)) << Si << " " << sa << " " << sb;
    ASSERT_EQ(c[1], static_cast<double>(r1));
    ASSERT_EQ(c[2], static_cast<double>(r2));
    mpfr_set_d(e, Si, MPFR_RNDN);
    mpfr_mul_d(e, e, sa, MPFR_RNDN);
    mpfr_mul_d(e, e, sb, MPFR_RNDN);  // exact at 200 bits
    ASSERT_EQ(c[3], round_to(Format::fp32, e)) << Si << " " << sa << " " << sb;
    once_differs += c[3] != c[0];
    ++checked;
  }
  // A midpoint of the binary64 product decided by its low part: S = 2^24 + 1, sa = 1 + 2^-23, sb = 1 - 2^-24.
  {
    const double S = 16777217.0, sa = 1.0 + 0x1p-23, sb = 1.0 - 0x1p-24;
    double c[quant_detail::kEpilogueCandidates];
    quant_detail::epilogue_candidates(S, sa, sb, c);
    mpfr_set_d(e, S, MPFR_RNDN);
    mpfr_mul_d(e, e, sa, MPFR_RNDN);
    mpfr_mul_d(e, e, sb, MPFR_RNDN);
    EXPECT_EQ(c[3], round_to(Format::fp32, e));
  }
  mpfr_clear(e);
  EXPECT_GT(once_differs, 0) << "rounding once differs from the fp32 orders on some of " << checked << " cases";
  const long long none[4] = {0, 12, 30, 25}, some[4] = {5, 12, 3, 25};
  EXPECT_NE(epilogue_explanation(none, 100).find("explained: the scales enter after the exact sum as epilogue_mul_mul: "
                                                  "RN(RN(RN(S) a_scale) b_scale) from the exact int32 sum S: 0 of 100"),
            std::string::npos);
  EXPECT_NE(epilogue_explanation(some, 100).find("no candidate epilogue predicts every output; the closest is epilogue:"),
            std::string::npos);
}

// gemmlab explain's probes in a quantized kernel's tensors: every value an operand holds at unit scale, written
// as its element, dequantizes to itself (the recipe's own dequantization, exact); the sets are the elements'
// values (counted here from their definitions), and no other value has an element.
TEST(QuantizedUnitScale, EveryProbeValueIsItsOwnElementAndNoOtherIs) {
  struct Case {
    const char* spec;
    std::vector<double> expected;  // empty: count only
    std::size_t count;
  };
  std::vector<double> int8, int4, uint4;
  for (int v = -127; v <= 127; ++v) int8.push_back(v);
  for (int v = -7; v <= 7; ++v) int4.push_back(v);
  for (int v = -8; v <= 7; ++v) uint4.push_back(v);
  const std::vector<Case> cases{
      {"mxfp4", {-6, -4, -3, -2, -1.5, -1, -0.5, 0, 0.5, 1, 1.5, 2, 3, 4, 6}, 15},
      {"nvfp4", {-6, -4, -3, -2, -1.5, -1, -0.5, 0, 0.5, 1, 1.5, 2, 3, 4, 6}, 15},
      {"mxfp8_e4m3", {}, 253},  // 256 codes: two zeros as one, two NaNs out
      {"mxfp8_e5m2", {}, 247},  // 256 codes: two zeros as one, 2 infinities and 6 NaNs out
      {"int8_rowwise", int8, 255},
      {"int4_g32", int4, 15},
      {"uint4_g128", uint4, 16}};
  for (const Case& c : cases) {
    SCOPED_TRACE(c.spec);
    const QuantSpec spec = parse_quant_spec(c.spec);
    const std::vector<double> v = unit_scale_values(spec);
    EXPECT_EQ(v.size(), c.count);
    if (!c.expected.empty()) EXPECT_EQ(v, c.expected);
    EXPECT_TRUE(std::is_sorted(v.begin(), v.end()));
    const quant_detail::QuantPlan p = quant_plan(Operand::B, spec, 256, 8);
    for (double x : v) {
      double q = 0;
      ASSERT_TRUE(quant_detail::unit_scale_element(x, p, &q)) << x;
      bool inexact = false;
      EXPECT_EQ(quant_detail::dequantize(q, 1.0, 0.0, 1.0, p, &inexact), x);
      EXPECT_FALSE(inexact);
      if (spec.has_zero()) EXPECT_EQ(q, x + 8) << "uint4 holds q - 8";
    }
    // Between and beyond the values: no element holds them.
    for (std::size_t t = 0; t + 1 < v.size(); ++t) {
      double q = 0;
      EXPECT_FALSE(quant_detail::unit_scale_element((v[t] + v[t + 1]) / 2, p, &q)) << v[t];
    }
    double q = 0;
    EXPECT_FALSE(quant_detail::unit_scale_element(2 * v.back(), p, &q));
    EXPECT_FALSE(quant_detail::unit_scale_element(std::nan(""), p, &q));
  }
  EXPECT_TRUE(unit_scale_values(parse_quant_spec("bf16")).empty()) << "a plain operand holds any value";
  // ... NaN and the infinities among them (explain's probes put them on the plain operand), coded as IEEE's.
  const QuantSpec bf16 = parse_quant_spec("bf16");
  const quant_detail::QuantPlan pb = quant_plan(Operand::A, bf16, 4, 256);
  const double inf = std::numeric_limits<double>::infinity();
  for (double x : {std::nan(""), inf, -inf, 1.0 + 0x1p-7}) {
    double q = 0;
    EXPECT_TRUE(quant_detail::unit_scale_element(x, pb, &q)) << x;
    EXPECT_EQ(std::isnan(q), std::isnan(x));
  }
  double q = 0;
  EXPECT_FALSE(quant_detail::unit_scale_element(1.0 + 0x1p-9, pb, &q)) << "not a bf16 value";
  const quant_detail::Code c = element_code(bf16);
  EXPECT_EQ(quant_detail::encode(std::nan(""), c), 0x7FC0u);
  EXPECT_EQ(quant_detail::encode(inf, c), 0x7F80u);
  EXPECT_EQ(quant_detail::encode(-inf, c), 0xFF80u);
  EXPECT_EQ(quant_detail::encode(-1.5, c), 0xBFC0u);
}

TEST(QuantizedUnitScale, TheFormatARecipeIsExplainedIn) {
  std::string why;
  EXPECT_EQ(explain_input_format(parse_quant_recipe("mxfp4_x_bf16"), &why), Format::bf16);
  EXPECT_EQ(explain_input_format(parse_quant_recipe("bf16_x_mxfp8_e4m3"), &why), Format::bf16);
  EXPECT_EQ(explain_input_format(parse_quant_recipe("bf16_x_uint4_g128"), &why), Format::bf16);
  EXPECT_EQ(explain_input_format(parse_quant_recipe("fp16_x_uint4_g32"), &why), Format::fp16);
  EXPECT_EQ(explain_input_format(parse_quant_recipe("fp16_x_int8_rowwise"), &why), Format::fp16);
  EXPECT_FALSE(explain_input_format(parse_quant_recipe("mxfp4"), &why));
  EXPECT_NE(why.find("both operands of mxfp4 are quantized"), std::string::npos) << why;
  EXPECT_NE(why.find("gemmlab.judge"), std::string::npos) << why;
  EXPECT_FALSE(explain_input_format(parse_quant_recipe("int8_rowwise"), &why));
  // fp16 holds e5m2's largest element (57344) and its smallest (2^-16).
  EXPECT_EQ(explain_input_format(parse_quant_recipe("fp16_x_mxfp8_e5m2"), &why), Format::fp16);
}
