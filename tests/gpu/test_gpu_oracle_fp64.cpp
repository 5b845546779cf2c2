// The GPU exact reference on fp64 inputs (53-bit significands, the whole binary64 range): bit for bit
// the CPU engines and MPFR (c, c_odd, |A||B|, c_out), and the fallback rule of reference/
// int8_split.hpp at its boundary: 336 bits of spread per row or column run on the GPU, 337 are
// refused and computed by the CPU (device::exact_reference says why). The split itself is proven on
// the CPU (tests/cpu/test_int8_split.cpp).
#include <array>
#include <cmath>
#include <limits>
#include <string>
#include <vector>

#include "experiments/device/exact_reference_gpu.hpp"
#include "reference/mpfr_gemm.hpp"
#include "tests/gpu/gpu_test_util.hpp"
#include "tests/same_bits.hpp"

namespace gemmlab {
namespace {

using testing::same_bits;

const auto expect_same = testing::expect_same_reference;

// The fp64 distributions of the fp64_emulation suite, at odd and square sizes, fp64 and fp32 output:
// GPU == CPU engine; at the small size also == MPFR.
TEST(GpuOracleFp64, MatchesCpuAndMpfrOnFp64Distributions) {
  GEMMLAB_REQUIRE_GPU();
  int checked = 0;
  for (const char* name : {"expspread_0.5", "expspread_1", "expspread_2", "expspread_4", "normal_0_1", "uniform_0_1",
                           "cancel_-40", "logunif_-200_60"})
    for (const auto& z : {std::array<int, 3>{37, 29, 101}, std::array<int, 3>{256, 256, 256}}) {
      const Distribution d = parse_distribution(name);
      const Matrix A = generate(d, Operand::A, z[0], z[2], Format::fp64, 11);
      const Matrix B = generate(d, Operand::B, z[2], z[1], Format::fp64, 11);
      const device::GpuReference g = device::exact_gemm_gpu(A, B);
      RecordProperty(std::string(name) + "_" + std::to_string(z[0]) + "_digits", g.digits_a);
      for (Format out : {Format::fp64, Format::fp32}) {
        const std::string what = std::string(name) + " " + std::to_string(z[0]) + " out " + info(out).name;
        expect_same(g.to_host(out), exact_gemm(A, B, out), what);
        if (z[0] < 100) expect_same(g.to_host(out), mpfr_gemm(A, B, out), what + " (MPFR)");
      }
      ++checked;
    }
  EXPECT_EQ(checked, 16);
}

// Hand-made cases: (1 + 2^-52)^2 - (1 + 2^-51) = 2^-104 exactly; a row of subnormals only; products
// of subnormals with 2^1000; a zero row.
TEST(GpuOracleFp64, HandMadeRangeCases) {
  GEMMLAB_REQUIRE_GPU();
  const int M = 4, N = 3, K = 5;
  Matrix A(M, K), B(K, N);
  A(0, 0) = 1 + 0x1p-52, A(0, 1) = -1;
  B(0, 0) = 1 + 0x1p-52, B(1, 0) = 1 + 0x1p-51;
  for (int k = 0; k < K; ++k) A(1, k) = std::ldexp(2.0 * k + 1, -1074), B(k, 1) = -std::ldexp(1 + 0x1p-52 * k, -60);
  for (int k = 0; k < K; ++k) A(2, k) = 0x1p-1074 * (k + 1), B(k, 2) = std::ldexp(1 + 0x1p-52 * (k + 3), 1000);
  const GemmReference g = device::exact_gemm_gpu_host(A, B, Format::fp64);
  EXPECT_EQ(g.engine, "gpu_int8_ozaki");
  EXPECT_EQ(g.c[0], 0x1p-104);
  expect_same(g, mpfr_gemm(A, B, Format::fp64), "hand-made");
  expect_same(g, exact_gemm(A, B, Format::fp64), "hand-made");
}

// The fallback boundary: 1.0 beside 2^-335 in one row (336 bits: 48 digits) runs on the GPU and equals
// the CPU; beside 2^-336 (337 bits) the GPU refuses, and exact_reference computes it on the CPU,
// saying why.
TEST(GpuOracleFp64, FallbackBoundaryIs336BitsOfSpread) {
  GEMMLAB_REQUIRE_GPU();
  const Distribution d = parse_distribution("normal_0_1");
  Matrix A = generate(d, Operand::A, 6, 40, Format::fp64, 2), B = generate(d, Operand::B, 40, 5, Format::fp64, 2);
  for (int k = 0; k < 40; ++k) A(1, k) = 0;
  A(1, 0) = 1.0, A(1, 1) = 0x1p-335;
  const device::GpuReference g = device::exact_gemm_gpu(A, B);
  EXPECT_EQ(g.digits_a, 48);
  expect_same(g.to_host(Format::fp64), mpfr_gemm(A, B, Format::fp64), "336 bits");

  A(1, 1) = 0x1p-336;
  EXPECT_THROW(device::exact_gemm_gpu(A, B), device::GpuReferenceUnavailable);
  std::string why;
  const GemmReference r = device::exact_reference(A, B, Format::fp64, 0, &why);
  EXPECT_NE(r.engine, "gpu_int8_ozaki");
  EXPECT_NE(why.find("49"), std::string::npos) << why;
  expect_same(r, mpfr_gemm(A, B, Format::fp64), "337 bits, on the CPU");

  // The ends of binary64 in one row (DBL_MAX beside 2^-1074: 2098 bits) go to the CPU as well.
  A(1, 0) = std::numeric_limits<double>::max(), A(1, 1) = 0x1p-1074;
  EXPECT_THROW(device::exact_gemm_gpu(A, B), device::GpuReferenceUnavailable);
}

}  // namespace
}  // namespace gemmlab
