// The model of Blackwell's block-scaled tcgen05 kinds (reference/tc_block_scaled.hpp, MMA-Sim's arithmetic:
// a MODEL FROM THE LITERATURE, never run by a gemmlab probe) on hand-computed dyadic cases: the scales in
// the products' exponents, the 25 and 35 fraction bits of the alignment (cases where the exact result
// differs), truncation toward zero of terms and result, exact groups of 16, ue4m3 significands, special
// values; and, where no term loses a bit, the result equal to the exact sum truncated to fp32.
#include <gtest/gtest.h>

#include <cmath>
#include <iostream>
#include <limits>
#include <random>
#include <stdexcept>
#include <vector>

#include "reference/formats.hpp"
#include "reference/tc_block_scaled.hpp"

using namespace gemmlab;
using tc::BlockScaledKind;

namespace {

constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();
constexpr double kInf = std::numeric_limits<double>::infinity();

std::vector<double> zeros(int n) { return std::vector<double>(static_cast<std::size_t>(n), 0.0); }

double k32(const std::vector<double>& a, const std::vector<double>& b, double sa, double sb, double c,
           Format f = Format::e4m3) {
  return tc::mxf8f6f4_dot(a, f, b, f, sa, sb, c);
}

// The exact value rounded toward zero to fp32 (the result the model writes when no term is truncated).
double rz_fp32(double x) {
  float f = static_cast<float>(x);
  if (std::fabs(static_cast<double>(f)) > std::fabs(x)) f = std::nextafterf(f, 0.0f);
  return f;
}

}  // namespace

TEST(TcBlockScaled, Mxf8f6f4ScalesEnterTheExponents) {
  std::vector<double> a(32, 1.0), b(32, 1.0);
  EXPECT_EQ(k32(a, b, 1.0, 1.0, 0.0), 32.0);
  // 1.5 * 1.5 * 2^3 * 2^-1 = 9 per product: 288.
  a.assign(32, 1.5), b.assign(32, 1.5);
  EXPECT_EQ(k32(a, b, 8.0, 0.5, 0.0), 288.0);
  // e2m1 elements: 6 * 6 * 32 = 1152; and mixed formats (e2m1 x e5m2).
  a.assign(32, 6.0), b.assign(32, 6.0);
  EXPECT_EQ(k32(a, b, 1.0, 1.0, 0.0, Format::e2m1), 1152.0);
  b.assign(32, 0.25);
  EXPECT_EQ(tc::mxf8f6f4_dot(a, Format::e2m1, b, Format::e5m2, 0x1p-3, 0x1p1, 3.0), 3.0 + 32 * 6 * 0.25 * 0.25);
}

// C = 1 and eight products of 1.5 2^-25 (a = 1.5, b = 2^-6, scale_a 2^-19): each aligned to C's exponent with
// 25 fraction bits keeps 2^-25 of its 1.5 2^-25, so D = 1 + 8 2^-25 = 1 + 2^-22, where the exact sum truncated
// to fp32 is 1 + 3 2^-23. One bit lower (scale_a 2^-20) every product is lost: D = 1 (exact: 1 + 2^-23).
TEST(TcBlockScaled, Mxf8f6f4AlignsTo25FractionBitsTowardZero) {
  std::vector<double> a = zeros(32), b = zeros(32);
  for (int i = 0; i < 8; ++i) a[i] = 1.5, b[i] = 0x1p-6;
  EXPECT_EQ(k32(a, b, 0x1p-19, 1.0, 1.0), 1.0 + 0x1p-22);
  EXPECT_EQ(rz_fp32(1.0 + 8 * 1.5 * 0x1p-25), 1.0 + 3 * 0x1p-23);  // what an exact sum would give
  EXPECT_EQ(k32(a, b, 0x1p-20, 1.0, 1.0), 1.0);
  // Negative terms truncate toward zero too: 1 - 8 2^-25 (exact: 1 - 1.5 2^-22 = 1 - 6 2^-24).
  for (int i = 0; i < 8; ++i) a[i] = -1.5;
  EXPECT_EQ(k32(a, b, 0x1p-19, 1.0, 1.0), 1.0 - 0x1p-22);
  // The result is truncated, not rounded: 1 + 3 2^-25 (one product 1.5 2^-24 keeps 3 2^-25) is written as 1,
  // where round-to-nearest would give 1 + 2^-23.
  a = zeros(32), b = zeros(32);
  a[0] = 1.5, b[0] = 0x1p-6;
  EXPECT_EQ(k32(a, b, 0x1p-18, 1.0, 1.0), 1.0);
  // -1 + 3 2^-25 = -(1 - 1.5 2^-24) lies between fp32 values: toward zero, -(1 - 2^-23).
  EXPECT_EQ(k32(a, b, 0x1p-18, 1.0, -1.0), -(1.0 - 0x1p-23));
  // fp32's subnormal grid: 2^-149 is kept, 2^-150 (a product 2^-6 2^-6 2^-138) is truncated away.
  a[0] = 0x1p-6, b[0] = 0x1p-6;
  EXPECT_EQ(k32(a, b, 0x1p-127, 0x1p-10, 0.0), 0x1p-149);
  EXPECT_EQ(k32(a, b, 0x1p-127, 0x1p-11, 0.0), 0.0);
}

TEST(TcBlockScaled, Mxf8f6f4SpecialValues) {
  std::vector<double> a(32, 1.0), b(32, 1.0);
  EXPECT_TRUE(std::isnan(k32(a, b, kNaN, 1.0, 0.0)));  // E8M0's 0xFF
  EXPECT_TRUE(std::isnan(k32(a, b, 1.0, 1.0, kNaN)));
  EXPECT_EQ(k32(a, b, 1.0, 1.0, -kInf), -kInf);
  a[3] = kInf;
  EXPECT_EQ(k32(a, b, 1.0, 1.0, 0.0, Format::e5m2), kInf);
  EXPECT_TRUE(std::isnan(k32(a, b, 1.0, 1.0, -kInf, Format::e5m2)));
  // Beyond fp32's range: infinity (MMA-Sim's conversion of the truncated sum).
  a.assign(32, 448.0), b.assign(32, 448.0);
  EXPECT_EQ(k32(a, b, 0x1p100, 0x1p10, 0.0), kInf);
  // Inputs that are not of their format are refused.
  a.assign(32, 0.1);
  EXPECT_THROW(k32(a, b, 1.0, 1.0, 0.0), std::invalid_argument);
  a.assign(32, 1.0);
  EXPECT_THROW(k32(a, b, 3.0, 1.0, 0.0), std::invalid_argument);
  EXPECT_THROW(tc::mxf8f6f4_dot(std::vector<double>(16, 1.0), Format::e4m3, b, Format::e4m3, 1, 1, 0), std::invalid_argument);
}

// Where every term keeps all its bits (exponents within 25 - 6 bits of the largest), the model is the exact
// sum truncated to fp32.
TEST(TcBlockScaled, Mxf8f6f4IsExactWhereNoTermIsCut) {
  std::mt19937_64 rng(20261129);
  std::cout << "[ seed ] 20261129\n";
  std::vector<double> vals;
  for (std::uint64_t bits = 0; bits < 256; ++bits) {
    const double v = from_bits(Format::e4m3, bits);
    if (std::isfinite(v) && v != 0 && std::fabs(v) >= 0.125 && std::fabs(v) <= 8) vals.push_back(v);
  }
  for (int t = 0; t < 2000; ++t) {
    std::vector<double> a(32), b(32);
    double exact = 0;
    for (int i = 0; i < 32; ++i) {
      a[i] = vals[rng() % vals.size()], b[i] = vals[rng() % vals.size()];
      exact += a[i] * b[i] * 4.0 * 0.125;  // exact in binary64
    }
    ASSERT_EQ(k32(a, b, 4.0, 0.125, 0.0), rz_fp32(exact)) << "trial " << t;
  }
}

TEST(TcBlockScaled, Mxf4GroupsOf16ExactlyThenScaled) {
  std::vector<double> a(64, 6.0), b(64, 6.0);
  EXPECT_EQ(tc::mxf4nvf4_dot(a, b, std::vector<double>{1, 1}, std::vector<double>{1, 1}, 32, Format::ue8m0, 0.0), 2304.0);
  // ue4m3 significands: group 0 under scales 1.5 and 0.75: 1 * 1 * 1.125; the other groups' scales 2^-6.
  a = zeros(64), b = zeros(64);
  a[0] = 1.0, b[0] = 1.0;
  a[20] = 6.0, b[20] = 4.0;  // group 1: 24 * 2^-6 * 2^-6
  EXPECT_EQ(tc::mxf4nvf4_dot(a, b, std::vector<double>{1.5, 0x1p-6, 0x1p-6, 0x1p-6},
                             std::vector<double>{0.75, 0x1p-6, 0x1p-6, 0x1p-6}, 16, Format::ue4m3, 0.0),
            1.125 + 24 * 0x1p-12);
  // A ue4m3 scale of 0 zeroes its group.
  EXPECT_EQ(tc::mxf4nvf4_dot(a, b, std::vector<double>{0.0, 1, 1, 1}, std::vector<double>{1, 1, 1, 1}, 16, Format::ue4m3, 0.0),
            24.0);
}

// C = 1 and a first group summing to -1: what survives of a second group depends on 35 fraction bits below
// C's exponent. Group 1 of 6 * 1.5 = 9 under scales 2^-25 2^-10 (9 2^-35) is kept whole: D = 9 2^-35; 0.5 * 1.5
// = 0.75 under the same scales (0.75 2^-35) is cut to 0: D = 0, where the exact sum is 0.75 2^-35.
TEST(TcBlockScaled, Mxf4nvf4AlignsTo35FractionBits) {
  std::vector<double> a = zeros(64), b = zeros(64);
  a[0] = -1.0, b[0] = 1.0;
  a[16] = 6.0, b[16] = 1.5;
  const std::vector<double> sa{1.0, 0x1p-25, 1.0, 1.0}, sb{1.0, 0x1p-10, 1.0, 1.0};
  EXPECT_EQ(tc::mxf4nvf4_dot(a, b, sa, sb, 16, Format::ue8m0, 1.0), 9 * 0x1p-35);
  a[16] = 0.5;
  EXPECT_EQ(tc::mxf4nvf4_dot(a, b, sa, sb, 16, Format::ue8m0, 1.0), 0.0);
  a[16] = -0.5;  // toward zero: -0.75 2^-35 is cut to 0 as well
  EXPECT_EQ(tc::mxf4nvf4_dot(a, b, sa, sb, 16, Format::ue8m0, 1.0), 0.0);
  // A group's exponent is its scales' (its sum is not normalised), so groups 0, 2 and 3 under scales 1 set the
  // alignment even when they sum to 0: the same group is still cut with C = 0 ...
  a[0] = 0.0, a[16] = 0.5;
  EXPECT_EQ(tc::mxf4nvf4_dot(a, b, sa, sb, 16, Format::ue8m0, 0.0), 0.0);
  // ... and kept whole when every group's scales are 2^-25 2^-10 (C = 0 is aligned at 2^-126).
  const std::vector<double> small_a(4, 0x1p-25), small_b(4, 0x1p-10);
  EXPECT_EQ(tc::mxf4nvf4_dot(a, b, small_a, small_b, 16, Format::ue8m0, 0.0), 0.75 * 0x1p-35);
}

TEST(TcBlockScaled, Mxf4nvf4SpecialValuesAndShapes) {
  std::vector<double> a(64, 1.0), b(64, 1.0);
  EXPECT_TRUE(std::isnan(tc::mxf4nvf4_dot(a, b, std::vector<double>{kNaN, 1}, std::vector<double>{1, 1}, 32, Format::ue8m0, 0)));
  EXPECT_TRUE(std::isnan(tc::mxf4nvf4_dot(a, b, std::vector<double>{1, 1}, std::vector<double>{1, 1}, 32, Format::ue8m0, kNaN)));
  EXPECT_THROW(tc::mxf4nvf4_dot(a, b, std::vector<double>{1, 1}, std::vector<double>{1, 1}, 32, Format::ue4m3, 0),
               std::invalid_argument);  // ue4m3 scales come one per 16
  EXPECT_THROW(tc::mxf4nvf4_dot(a, b, std::vector<double>{1, 1, 1}, std::vector<double>{1, 1, 1}, 16, Format::ue8m0, 0),
               std::invalid_argument);
  a[0] = 5.0;  // not an e2m1 value
  EXPECT_THROW(tc::mxf4nvf4_dot(a, b, std::vector<double>{1, 1}, std::vector<double>{1, 1}, 32, Format::ue8m0, 0),
               std::invalid_argument);
}

// A dot product of K = 128 as four kind::mxf8f6f4 instructions: each one's C is the previous result, so the
// tiny products of every instruction are lost against the running sum (D = 1), and two instructions of
// kind::mxf4 carry 2304 each.
TEST(TcBlockScaled, ChainsInstructionsAlongK) {
  std::vector<double> a = zeros(128), b = zeros(128);
  for (int t = 0; t < 4; ++t)
    for (int i = 0; i < 8; ++i) a[32 * t + i] = 1.5, b[32 * t + i] = 0x1p-6;
  const std::vector<double> sa(4, 0x1p-20), sb(4, 1.0);
  EXPECT_EQ(tc::block_scaled_dot(BlockScaledKind::mxf8f6f4, a, Format::e4m3, b, Format::e4m3, sa, sb, 32, Format::ue8m0, 1.0),
            1.0);
  const std::vector<double> sa2(4, 0x1p-19);
  EXPECT_EQ(tc::block_scaled_dot(BlockScaledKind::mxf8f6f4, a, Format::e4m3, b, Format::e4m3, sa2, sb, 32, Format::ue8m0, 1.0),
            1.0 + 4 * 0x1p-22);
  std::vector<double> f(128, 6.0);
  EXPECT_EQ(tc::block_scaled_dot(BlockScaledKind::mxf4, f, Format::e2m1, f, Format::e2m1, sb, sb, 32, Format::ue8m0, 0.0),
            4608.0);
  EXPECT_THROW(tc::block_scaled_dot(BlockScaledKind::mxf4, f, Format::e2m1, f, Format::e2m1, sb, sb, 16, Format::ue8m0, 0.0),
               std::invalid_argument);
  EXPECT_STREQ(tc::info(BlockScaledKind::mxf4nvf4).name, "tcgen05_mxf4nvf4");
  EXPECT_EQ(tc::info(BlockScaledKind::mxf8f6f4).fraction_bits, 25);
  EXPECT_EQ(tc::info(BlockScaledKind::mxf4).fraction_bits, 35);
}
