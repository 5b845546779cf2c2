// The numerics record of the binary64 kernels (reference/numerics.hpp) and what its consumers make of
// it: the DFMA chain's emulation (one binary64 fma per k, the fused rounding visible on a hand-made
// dot product), its description, its bound (gamma_K with u = 2^-53), and the fp64 suites' plans.
#include <gtest/gtest.h>

#include <cmath>
#include <string>

#include "experiments/plan/plan.hpp"
#include "reference/distributions.hpp"
#include "reference/error_stats.hpp"
#include "reference/kernel_emulation.hpp"
#include "reference/numerics.hpp"

namespace gemmlab {
namespace {

// (1)(-1) + (1 + 2^-52)(1 - 2^-52): the exact sum is -2^-104. A binary64 FMA chain from +0 keeps it
// (fma(1 + 2^-52, 1 - 2^-52, -1) rounds once); a rounded product (1) would give +0, and an fp32
// chain too.
TEST(Fp64Numerics, DfmaChainKeepsTheFusedProduct) {
  const Numerics n = cuda_core_fp64_fma();
  ASSERT_TRUE(n.predictable());
  const double a[2] = {1, 1 + 0x1p-52}, b[2] = {-1, 1 - 0x1p-52};
  EXPECT_EQ(emulation::emulate_dot(n, a, b, 2, tc::TcParams{}), -0x1p-104);
  EXPECT_EQ(emulation::emulate_dot(cuda_core_fp32_fma(), a, b, 2, tc::TcParams{}), 0.0);
}

// Whole matrices: the emulation is the std::fma loop in increasing k, entry by entry.
TEST(Fp64Numerics, EmulationIsTheFmaLoopInKOrder) {
  const Distribution d = parse_distribution("expspread_2");
  const Matrix A = generate(d, Operand::A, 5, 77, Format::fp64, 3), B = generate(d, Operand::B, 77, 4, Format::fp64, 3);
  const std::vector<double> got = emulation::emulate(cuda_core_fp64_fma(), A, B, tc::TcParams{});
  for (int i = 0; i < 5; ++i)
    for (int j = 0; j < 4; ++j) {
      double acc = 0;
      for (int k = 0; k < 77; ++k) acc = std::fma(A(i, k), B(k, j), acc);
      EXPECT_EQ(got[static_cast<std::size_t>(i) * 4 + j], acc) << i << "," << j;
    }
}

TEST(Fp64Numerics, DescriptionAndBoundAreBinary64s) {
  const Numerics n = cuda_core_fp64_fma();
  EXPECT_NE(n.describe().find("fp64 FMA one k at a time"), std::string::npos) << n.describe();
  EXPECT_NE(cuda_core_fp32_fma().describe().find("fp32 FMA one k at a time"), std::string::npos);
  const double ku = 4096 * 0x1p-53;
  EXPECT_DOUBLE_EQ(gamma_bound_factor(bound_model(n, 4096)), ku / (1 - ku));
}

// The shipped fp64 suites load, and every distribution they name can be drawn in fp64.
TEST(Fp64Numerics, Fp64SuitesLoadWithUsableDistributions) {
  for (const char* name : {"fp64_emulation", "fp64_cpu_reference"}) {
    const RunPlan p = load_suite(find_suite(name));
    EXPECT_FALSE(p.kernels.empty()) << name;
    for (const std::string& dist : p.distributions)
      EXPECT_EQ(unusable_reason(parse_distribution(dist), Format::fp64), "") << name << ": " << dist;
  }
}

}  // namespace
}  // namespace gemmlab
