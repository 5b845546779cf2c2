// Inputs on the GPU (experiments/device/inputs_gpu.hpp) against the CPU definitions, bit for bit:
// generate_gpu against generate() for every distribution and input format (the cases the CPU
// digests pin, tests/cpu/test_distribution_digests.cpp, plus large operands), fp64 included as
// binary64 values, pack_gpu against to_bits per entry in both layouts (fp64 from binary64 values),
// widen_gpu against from_bits (NaN stays NaN, ld > cols; fp64 a copy), and the speed of generation
// at 4096 x 4096. The refusals are host checks and run without a GPU.
#include <cuda_runtime.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <bit>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <iostream>
#include <limits>
#include <random>
#include <stdexcept>
#include <string>
#include <vector>

#include "experiments/device/inputs_gpu.hpp"
#include "tests/distribution_cases.hpp"
#include "tests/gpu/device_array.hpp"
#include "tests/gpu/gpu_test_util.hpp"
#include "tests/same_bits.hpp"

namespace gemmlab {
namespace {

using testing::case_distributions;
using testing::hex;
using testing::kCaseK;
using testing::kCaseM;
using testing::kCaseN;
using testing::same_bits;

constexpr std::uint64_t kSeed = testing::kCaseSeed;

using testing::DeviceArray;
const auto check = testing::cuda_ok;

// generate_gpu's binary64 form against generate(), bit for bit.
::testing::AssertionResult gpu_doubles_equal_cpu(const Distribution& d, Operand op, int rows, int cols, Format f) {
  DeviceArray<double> out(static_cast<std::size_t>(rows) * cols);
  device::generate_gpu(d, op, rows, cols, f, kSeed, out.p);
  return same_bits(out.download(), generate(d, op, rows, cols, f, kSeed).v, cols)
         << " (" << d.name() << " " << info(f).name << " as binary64, " << (op == Operand::A ? "A" : "B") << " "
         << rows << "x" << cols << ")";
}

const std::vector<Format>& float_formats() {
  static const std::vector<Format> f = {Format::fp32, Format::tf32, Format::fp16, Format::bf16, Format::e4m3, Format::e5m2};
  return f;
}

std::size_t storage_bytes(Format f) { return static_cast<std::size_t>((info(f).storage_bits + 7) / 8); }

// generate_gpu's floats widened to double, against generate()'s doubles.
::testing::AssertionResult gpu_equals_cpu(const Distribution& d, Operand op, int rows, int cols, Format f) {
  DeviceArray<float> out(static_cast<std::size_t>(rows) * cols);
  device::generate_gpu(d, op, rows, cols, f, kSeed, out.p);
  const std::vector<float> g = out.download();
  const std::vector<double> got(g.begin(), g.end());
  return same_bits(got, generate(d, op, rows, cols, f, kSeed).v, cols)
         << " (" << d.name() << " " << info(f).name << " " << (op == Operand::A ? "A" : "B") << " " << rows << "x"
         << cols << ")";
}

// The CPU packing: to_bits per entry, entry (i, j) at i * cols + j or j * rows + i, little-endian.
std::vector<unsigned char> host_pack(const std::vector<float>& v, int rows, int cols, Format f, Layout layout) {
  const std::size_t eb = storage_bytes(f);
  std::vector<unsigned char> out(v.size() * eb);
  for (int i = 0; i < rows; ++i)
    for (int j = 0; j < cols; ++j) {
      const std::size_t src = static_cast<std::size_t>(i) * cols + j;
      const std::size_t dst = layout == Layout::row_major ? src : static_cast<std::size_t>(j) * rows + i;
      const std::uint64_t bits = to_bits(f, round_to(f, v[src]));
      std::memcpy(out.data() + dst * eb, &bits, eb);
    }
  return out;
}

// Packed bytes equal, else how many entries differ and the first, as (row, col) of the input.
::testing::AssertionResult same_packing(const std::vector<unsigned char>& got, const std::vector<unsigned char>& want,
                                        const std::vector<float>& in, int rows, int cols, Format f, Layout layout) {
  const std::size_t eb = storage_bytes(f);
  std::size_t bad = 0, first = 0;
  for (std::size_t e = 0; e < got.size() / eb; ++e)
    if (std::memcmp(got.data() + e * eb, want.data() + e * eb, eb) != 0)
      if (bad++ == 0) first = e;
  if (bad == 0) return ::testing::AssertionSuccess();
  const std::size_t i = layout == Layout::row_major ? first / cols : first % rows;
  const std::size_t j = layout == Layout::row_major ? first % cols : first / rows;
  std::uint64_t g = 0, w = 0;
  std::memcpy(&g, got.data() + first * eb, eb);
  std::memcpy(&w, want.data() + first * eb, eb);
  char buf[96];
  std::snprintf(buf, sizeof buf, "0x%llx vs to_bits 0x%llx", static_cast<unsigned long long>(g), static_cast<unsigned long long>(w));
  return ::testing::AssertionFailure() << info(f).name << " " << (layout == Layout::row_major ? "row" : "col")
                                       << "-major: " << bad << " of " << got.size() / eb << " entries differ; first ("
                                       << i << ", " << j << ") = " << hex(in[i * cols + j]) << ": " << buf;
}

std::vector<unsigned char> gpu_pack(const std::vector<float>& v, int rows, int cols, Format f, Layout layout) {
  const DeviceArray<float> in(v);
  DeviceArray<unsigned char> out(v.size() * storage_bytes(f));
  device::pack_gpu(in.p, rows, cols, f, layout, out.p);
  return out.download();
}

// ---- generate ----------------------------------------------------------------------------------

TEST(InputsGpu, GenerateMatchesTheCpuGeneratorInEveryFormat) {
  GEMMLAB_REQUIRE_GPU();
  int cases = 0;
  for (const Distribution& d : case_distributions())
    for (Format f : float_formats()) {
      if (!unusable_reason(d, f).empty()) continue;
      EXPECT_TRUE(gpu_equals_cpu(d, Operand::A, kCaseM, kCaseK, f));
      EXPECT_TRUE(gpu_equals_cpu(d, Operand::B, kCaseK, kCaseN, f));
      cases += 2;
    }
  // The CPU digests' 138 cases less fp64's 22.
  EXPECT_EQ(cases, 116);
}

TEST(InputsGpu, GenerateMatchesTheCpuGeneratorOnLargeOperands) {
  GEMMLAB_REQUIRE_GPU();
  EXPECT_TRUE(gpu_equals_cpu(parse_distribution("normal_0_1"), Operand::A, 4096, 512, Format::fp16));
  // cancel's B with K = 4096: the second half of the rows pairs with the first.
  EXPECT_TRUE(gpu_equals_cpu(parse_distribution("cancel_-10"), Operand::B, 4096, 256, Format::fp32));
  EXPECT_TRUE(gpu_equals_cpu(parse_distribution("expspread_4"), Operand::A, 1024, 1024, Format::bf16));
}

// fp64 operands, generated as binary64 values (GpuDevice::inputs for fp64 kernels): every case the
// CPU digests pin for fp64, and operands of the main job's kind (K = 4096: cancel's pairing).
TEST(InputsGpu, Fp64GenerateMatchesTheCpuGenerator) {
  GEMMLAB_REQUIRE_GPU();
  int cases = 0;
  for (const Distribution& d : case_distributions()) {
    if (!unusable_reason(d, Format::fp64).empty()) continue;
    EXPECT_TRUE(gpu_doubles_equal_cpu(d, Operand::A, kCaseM, kCaseK, Format::fp64));
    EXPECT_TRUE(gpu_doubles_equal_cpu(d, Operand::B, kCaseK, kCaseN, Format::fp64));
    cases += 2;
  }
  EXPECT_EQ(cases, 22);  // the CPU digests' fp64 cases
  for (const Distribution& d : default_distributions()) {
    EXPECT_TRUE(gpu_doubles_equal_cpu(d, Operand::A, 1024, 4096, Format::fp64));
    EXPECT_TRUE(gpu_doubles_equal_cpu(d, Operand::B, 4096, 768, Format::fp64));
  }
  EXPECT_TRUE(gpu_doubles_equal_cpu(parse_distribution("expspread_4"), Operand::A, 1000, 777, Format::fp64));
  // The binary64 form of a format within fp32 holds the float form's values.
  EXPECT_TRUE(gpu_doubles_equal_cpu(parse_distribution("normal_0_1"), Operand::A, kCaseM, kCaseK, Format::fp16));
}

TEST(InputsGpu, GenerateRunsFastAt4096Squared) {
  GEMMLAB_REQUIRE_GPU();
  const int n = 4096;
  DeviceArray<float> out(static_cast<std::size_t>(n) * n);
  cudaEvent_t start, stop;
  check(cudaEventCreate(&start), "cudaEventCreate");
  check(cudaEventCreate(&stop), "cudaEventCreate");
  std::vector<Distribution> ds = default_distributions();
  ds.push_back(parse_distribution("expspread_0.5"));
  for (const Distribution& d : ds) {
    device::generate_gpu(d, Operand::B, n, n, Format::fp32, kSeed, out.p);  // warm-up
    std::vector<float> ms(5);
    for (float& t : ms) {
      check(cudaEventRecord(start), "cudaEventRecord");
      device::generate_gpu(d, Operand::B, n, n, Format::fp32, kSeed, out.p);
      check(cudaEventRecord(stop), "cudaEventRecord");
      check(cudaEventSynchronize(stop), "cudaEventSynchronize");
      check(cudaEventElapsedTime(&t, start, stop), "cudaEventElapsedTime");
    }
    std::sort(ms.begin(), ms.end());
    std::cout << "[ time ] generate_gpu " << d.name() << " fp32 4096x4096: median " << ms[2] << " ms\n";
    EXPECT_LT(ms[2], 5.0f) << d.name();
  }
  DeviceArray<double> wide(static_cast<std::size_t>(n) * n);
  for (const Distribution& d : ds) {
    device::generate_gpu(d, Operand::B, n, n, Format::fp64, kSeed, wide.p);  // warm-up
    std::vector<float> ms(5);
    for (float& t : ms) {
      check(cudaEventRecord(start), "cudaEventRecord");
      device::generate_gpu(d, Operand::B, n, n, Format::fp64, kSeed, wide.p);
      check(cudaEventRecord(stop), "cudaEventRecord");
      check(cudaEventSynchronize(stop), "cudaEventSynchronize");
      check(cudaEventElapsedTime(&t, start, stop), "cudaEventElapsedTime");
    }
    std::sort(ms.begin(), ms.end());
    std::cout << "[ time ] generate_gpu " << d.name() << " fp64 4096x4096: median " << ms[2] << " ms\n";
    EXPECT_LT(ms[2], 5.0f) << d.name() << " in fp64";
  }
  cudaEventDestroy(start);
  cudaEventDestroy(stop);
}

// ---- pack --------------------------------------------------------------------------------------

// Values exact in f: generated operands, the format's extremes, signed zeros, NaN (every NaN becomes
// the canonical one) and infinity where f has one.
std::vector<float> exact_values(Format f, int rows, int cols) {
  std::vector<float> v;
  const FormatInfo& fi = info(f);
  const double tiny = std::ldexp(1.0, fi.emin - fi.precision + 1);
  for (double x : {0.0, -0.0, 1.0, -1.0, fi.max_finite, -fi.max_finite, tiny, -tiny, std::ldexp(1.0, fi.emin),
                   std::ldexp(1.0, fi.emin) - tiny, -(std::ldexp(1.0, fi.emin) - tiny)})
    v.push_back(static_cast<float>(x));
  v.push_back(std::numeric_limits<float>::quiet_NaN());
  v.push_back(-std::numeric_limits<float>::quiet_NaN());
  v.push_back(std::bit_cast<float>(0x7F800001u));  // signalling NaN
  if (fi.has_infinity) {
    v.push_back(std::numeric_limits<float>::infinity());
    v.push_back(-std::numeric_limits<float>::infinity());
  }
  const Matrix g = generate(parse_distribution(f == Format::fp16 || f == Format::e4m3 || f == Format::e5m2 ? "logunif_-8_8" : "logunif_-140_100"),
                            Operand::A, rows, cols, f, kSeed);
  for (std::size_t i = v.size(); i < g.size(); ++i) v.push_back(static_cast<float>(g.v[i]));
  return v;
}

TEST(InputsGpu, PackMatchesToBitsInEveryFormatAndLayout) {
  GEMMLAB_REQUIRE_GPU();
  const int rows = 67, cols = 45;  // not multiples of the 32 x 32 tiles
  for (Format f : float_formats()) {
    const std::vector<float> v = exact_values(f, rows, cols);
    ASSERT_EQ(v.size(), static_cast<std::size_t>(rows) * cols);
    for (Layout layout : {Layout::row_major, Layout::col_major})
      EXPECT_TRUE(same_packing(gpu_pack(v, rows, cols, f, layout), host_pack(v, rows, cols, f, layout), v, rows, cols, f, layout));
  }
  // A tall operand: more (32, 32) row tiles than the 65535 of the col-major kernel's grid, so its
  // blocks loop over row tiles.
  const int tall = 32 * 65535 + 77;
  std::vector<float> v(static_cast<std::size_t>(tall) * 3);
  for (std::size_t i = 0; i < v.size(); ++i) v[i] = static_cast<float>(static_cast<int>(i % 2001) - 1000);
  EXPECT_TRUE(same_packing(gpu_pack(v, tall, 3, Format::fp16, Layout::col_major),
                           host_pack(v, tall, 3, Format::fp16, Layout::col_major), v, tall, 3, Format::fp16, Layout::col_major));
}

// Values that are not exact in f are rounded first, as round_to does: random fp32 bit patterns
// over every exponent (subnormals, overflow to infinity or e4m3's saturation, ties).
TEST(InputsGpu, PackRoundsInexactValuesLikeRoundTo) {
  GEMMLAB_REQUIRE_GPU();
  std::cout << "[ seed ] " << kSeed << "\n";
  std::mt19937_64 gen(kSeed);
  const int rows = 300, cols = 257;
  std::vector<float> v(static_cast<std::size_t>(rows) * cols);
  for (std::size_t i = 0; i < v.size(); ++i) {
    const auto b = static_cast<std::uint32_t>(gen());
    // A third near 1 (rounding ties of every format), the rest anywhere.
    v[i] = std::bit_cast<float>(i % 3 == 0 ? (b & 0x807FFFFFu) | 0x3F800000u : b);
  }
  for (Format f : float_formats())
    for (Layout layout : {Layout::row_major, Layout::col_major})
      EXPECT_TRUE(same_packing(gpu_pack(v, rows, cols, f, layout), host_pack(v, rows, cols, f, layout), v, rows, cols, f, layout));
}

// fp64 from binary64 values: to_bits(fp64, x) per entry, the canonical NaN for every NaN, in both
// layouts, on an odd shape and on a tall operand (the col-major kernel's row-tile loop).
TEST(InputsGpu, Fp64PackMatchesToBits) {
  GEMMLAB_REQUIRE_GPU();
  auto pack_both = [](const std::vector<double>& v, int rows, int cols) {
    const DeviceArray<double> in(v);
    for (Layout layout : {Layout::row_major, Layout::col_major}) {
      DeviceArray<std::uint64_t> out(v.size());
      device::pack_gpu(in.p, rows, cols, Format::fp64, layout, out.p);
      const std::vector<std::uint64_t> got = out.download();
      std::size_t bad = 0, first = 0;
      for (int i = 0; i < rows; ++i)
        for (int j = 0; j < cols; ++j) {
          const std::size_t src = static_cast<std::size_t>(i) * cols + j;
          const std::size_t dst = layout == Layout::row_major ? src : static_cast<std::size_t>(j) * rows + i;
          if (got[dst] != to_bits(Format::fp64, v[src]) && bad++ == 0) first = src;
        }
      EXPECT_EQ(bad, 0u) << (layout == Layout::row_major ? "row" : "col") << "-major " << rows << "x" << cols
                         << ": first differing entry " << first << " = " << hex(v[first]);
    }
  };
  std::mt19937_64 gen(kSeed + 2);
  const int rows = 67, cols = 45;
  std::vector<double> v = {0.0, -0.0, 1.0, -1.0, std::numeric_limits<double>::max(), -std::numeric_limits<double>::max(),
                           std::numeric_limits<double>::denorm_min(), -std::numeric_limits<double>::denorm_min(),
                           std::numeric_limits<double>::min(), std::numeric_limits<double>::infinity(),
                           -std::numeric_limits<double>::infinity(), std::bit_cast<double>(0xFFF8000000000123ull),
                           std::bit_cast<double>(0x7FF0000000000001ull)};
  while (v.size() < static_cast<std::size_t>(rows) * cols) v.push_back(std::bit_cast<double>(gen()));
  pack_both(v, rows, cols);
  const int tall = 32 * 65535 + 77;
  std::vector<double> t(static_cast<std::size_t>(tall) * 3);
  for (std::size_t i = 0; i < t.size(); ++i) t[i] = std::ldexp(static_cast<double>(i % 2001) - 1000.5, -60);
  pack_both(t, tall, 3);
}

// ---- widen -------------------------------------------------------------------------------------

// fp64 output (an fp64 kernel's C): a copy, every bit of every NaN kept, padding columns skipped.
TEST(InputsGpu, WidenOfFp64IsACopy) {
  GEMMLAB_REQUIRE_GPU();
  std::mt19937_64 gen(kSeed + 3);
  const int rows = 129, cols = 70;
  const long long ld = cols + 3;
  std::vector<std::uint64_t> buf(static_cast<std::size_t>(rows) * ld);
  std::vector<double> want(static_cast<std::size_t>(rows) * cols);
  for (int i = 0; i < rows; ++i)
    for (long long j = 0; j < ld; ++j) {
      std::uint64_t bits = j >= cols ? 0x4330DEADBEEF0000ull : j == 0 ? 0xFFFFFFFFFFFFFFFFull : gen();  // the NaN poison
      buf[static_cast<std::size_t>(i) * ld + j] = bits;
      if (j < cols) want[static_cast<std::size_t>(i) * cols + j] = std::bit_cast<double>(bits);
    }
  const DeviceArray<std::uint64_t> in(buf);
  DeviceArray<double> out(want.size());
  device::widen_gpu(in.p, Format::fp64, rows, cols, ld, out.p);
  EXPECT_TRUE(same_bits(out.download(), want, cols));
}

// Every pattern of the 16-bit and 8-bit formats (fp8: kernel outputs such as an fp8 GEMM's), and fp32 specials (NaNs with payloads, infinities, -0,
// subnormals) plus random fp32 patterns, in a (rows, ld) buffer whose padding columns hold a marker
// value that widen_gpu must skip.
TEST(InputsGpu, WidenMatchesFromBitsWithLeadingDimension) {
  GEMMLAB_REQUIRE_GPU();
  std::mt19937_64 gen(kSeed + 1);
  const std::uint32_t fp32_specials[] = {0x7FC00000u, 0xFFC00001u, 0x7F800001u, 0x7F800000u,
                                         0xFF800000u, 0x80000000u, 0x00000001u, 0x807FFFFFu};
  for (Format f : {Format::fp16, Format::bf16, Format::e4m3, Format::e5m2, Format::fp32}) {
    const int rows = 256, cols = 256;
    const long long ld = cols + 5;
    const std::size_t eb = storage_bytes(f);
    std::vector<unsigned char> buf(static_cast<std::size_t>(rows) * ld * eb);
    std::vector<double> want(static_cast<std::size_t>(rows) * cols);
    for (int i = 0; i < rows; ++i)
      for (long long j = 0; j < ld; ++j) {
        std::uint64_t bits;
        if (j >= cols) bits = f == Format::fp32 ? 0x4B00DEADu : 0x5DEAu;  // padding
        else if (f != Format::fp32)  // every pattern once (fp8: each 256 times)
          bits = (static_cast<std::uint64_t>(i) * cols + j) & (eb == 1 ? 0xFFu : 0xFFFFu);
        else if (j < 8) bits = fp32_specials[j];
        else bits = static_cast<std::uint32_t>(gen());
        std::memcpy(buf.data() + (static_cast<std::size_t>(i) * ld + j) * eb, &bits, eb);
        if (j < cols) want[static_cast<std::size_t>(i) * cols + j] = from_bits(f, bits);
      }
    const DeviceArray<unsigned char> in(buf);
    DeviceArray<double> out(want.size());
    device::widen_gpu(in.p, f, rows, cols, ld, out.p);
    std::vector<double> got = out.download();
    // NaN stays NaN (its payload is not specified): compare NaN-ness, then the bits of the rest.
    std::size_t nans = 0, lost = 0;
    for (std::size_t k = 0; k < want.size(); ++k)
      if (std::isnan(want[k])) {
        ++nans;
        lost += !std::isnan(got[k]);
        got[k] = want[k];
      }
    EXPECT_EQ(lost, 0u) << info(f).name << ": NaN entries widened to a number";
    EXPECT_GT(nans, 0u) << info(f).name << ": the case has no NaN";
    EXPECT_TRUE(same_bits(got, want, cols)) << info(f).name;
  }
}

// ---- refusals (host checks: no GPU needed) -------------------------------------------------------

TEST(InputsGpu, BadRequestsAreRefusedAsGenerateRefusesThem) {
  float* none = nullptr;
  const Distribution cancel = parse_distribution("cancel_-10");
  std::string cpu_msg;
  try {
    generate(cancel, Operand::B, 8, 8, Format::bf16, 1);
  } catch (const std::invalid_argument& e) {
    cpu_msg = e.what();
  }
  ASSERT_FALSE(cpu_msg.empty());
  try {
    device::generate_gpu(cancel, Operand::B, 8, 8, Format::bf16, 1, none);
    ADD_FAILURE() << "cancel_-10 in bf16 was accepted";
  } catch (const std::invalid_argument& e) {
    EXPECT_EQ(std::string(e.what()), cpu_msg);
  }
  EXPECT_THROW(device::generate_gpu(cancel, Operand::A, -1, 8, Format::fp32, 1, none), std::invalid_argument);
  try {
    device::generate_gpu(parse_distribution("normal_0_1"), Operand::A, 8, 8, Format::fp64, 1, none);
    ADD_FAILURE() << "fp64 into floats was accepted";
  } catch (const std::invalid_argument& e) {
    EXPECT_NE(std::string(e.what()).find("as binary64 values"), std::string::npos) << e.what();
  }
  EXPECT_THROW(device::pack_gpu(none, 4, 4, Format::fp64, Layout::row_major, none), std::invalid_argument);
  double* no_doubles = nullptr;
  try {
    device::pack_gpu(no_doubles, 4, 4, Format::fp32, Layout::row_major, none);
    ADD_FAILURE() << "binary64 values packed into fp32 were accepted";
  } catch (const std::invalid_argument& e) {
    EXPECT_NE(std::string(e.what()).find("into fp64 only, not fp32"), std::string::npos) << e.what();
  }
  EXPECT_THROW(device::generate_gpu(cancel, Operand::B, 8, 8, Format::bf16, 1, no_doubles), std::invalid_argument);
  EXPECT_THROW(device::pack_gpu(none, 4, -4, Format::fp16, Layout::row_major, none), std::invalid_argument);
  EXPECT_THROW(device::widen_gpu(none, Format::tf32, 4, 4, 4, nullptr), std::invalid_argument);
  try {
    device::widen_gpu(none, Format::fp32, 4, 8, 7, nullptr);
    ADD_FAILURE() << "ld < cols was accepted";
  } catch (const std::invalid_argument& e) {
    EXPECT_NE(std::string(e.what()).find("ld must be >= cols"), std::string::npos) << e.what();
  }
  // Empty operands are no work (and no launch).
  EXPECT_NO_THROW(device::generate_gpu(parse_distribution("normal_0_1"), Operand::A, 0, 8, Format::fp32, 1, none));
  EXPECT_NO_THROW(device::pack_gpu(none, 0, 4, Format::fp16, Layout::col_major, none));
  EXPECT_NO_THROW(device::widen_gpu(none, Format::fp16, 4, 0, 0, nullptr));
}

}  // namespace
}  // namespace gemmlab
