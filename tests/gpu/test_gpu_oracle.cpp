// The GPU oracle (experiments/device/): the exact reference on the GPU is bit-identical to the CPU
// engines (fixed_int128 / kulisch) and to MPFR, for every input format and distribution, at sizes
// from 1x1x1 to 1024^3 including odd and non-square ones, on wide exponent ranges, subnormals, exact
// zeros and massive cancellation; the GPU statistics are bit-identical to compute_error_stats.
// The CPU-vs-GPU timing table is `gemmlab bench-reference` (experiments/device/bench_reference.hpp).
#include <cuda_runtime.h>

#include <array>
#include <bit>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <limits>
#include <random>
#include <string>
#include <tuple>
#include <vector>

#include "experiments/device/error_stats_gpu.hpp"
#include "experiments/device/exact_reference_gpu.hpp"
#include "reference/fixed_point.hpp"
#include "reference/mpfr_gemm.hpp"
#include "reference/numerics.hpp"
#include "reference/rng.hpp"
#include "tests/gpu/device_array.hpp"
#include "tests/gpu/gpu_test_util.hpp"
#include "tests/same_bits.hpp"

namespace gemmlab {
namespace {

using device::exact_gemm_gpu;
using device::exact_gemm_gpu_host;

const std::vector<Format> kInputs = {Format::fp32, Format::tf32, Format::fp16, Format::bf16, Format::e4m3, Format::e5m2};

using testing::hex;
using testing::same_bits;

const auto expect_same = testing::expect_same_reference;

struct Problem {
  Matrix A, B;
};
Problem make(const std::string& dist, Format in, int M, int N, int K, std::uint64_t seed) {
  const Distribution d = parse_distribution(dist);
  return {generate(d, Operand::A, M, K, in, seed), generate(d, Operand::B, K, N, in, seed)};
}

// ---- the exact reference ----------------------------------------------------------------------

TEST(GpuOracle, MatchesCpuOnEveryDefaultDistributionFormatAndSize) {
  GEMMLAB_REQUIRE_GPU();
  const int sizes[][3] = {{1, 1, 1}, {7, 5, 3}, {100, 37, 129}, {256, 512, 64}, {33, 65, 1000}};
  int checked = 0;
  for (const Distribution& d : default_distributions())
    for (Format in : kInputs) {
      if (!unusable_reason(d, in).empty()) continue;
      for (const auto& z : sizes) {
        const std::string what = d.name() + " " + info(in).name + " " + std::to_string(z[0]) + "x" +
                                 std::to_string(z[1]) + "x" + std::to_string(z[2]);
        const Problem p = make(d.name(), in, z[0], z[1], z[2], 17);
        const Format out = in == Format::fp32 || in == Format::tf32 ? Format::fp32 : Format::fp16;
        expect_same(exact_gemm_gpu_host(p.A, p.B, out), exact_gemm(p.A, p.B, out), what);
        ++checked;
      }
    }
  EXPECT_GE(checked, 30 * 5) << "too few distribution x format combinations were usable";
}

TEST(GpuOracle, MatchesCpuAt1024Cubed) {
  GEMMLAB_REQUIRE_GPU();
  for (const Distribution& d : default_distributions())
    for (Format in : {Format::fp32, Format::fp16, Format::bf16}) {
      if (!unusable_reason(d, in).empty()) continue;
      const Problem p = make(d.name(), in, 1024, 1024, 1024, 5);
      expect_same(exact_gemm_gpu_host(p.A, p.B, Format::bf16), exact_gemm(p.A, p.B, Format::bf16),
                  d.name() + " " + info(in).name + " 1024^3");
    }
}

// The two splits of the GPU reference (digits, and residues modulo a CRT basis: exact_reference_gpu.hpp)
// give the same bits as each other and as the CPU engine, at sizes with and without padding; where the
// residues cannot apply (a spread beyond 120 bits) the digits run instead; the automatic choice takes the
// split of fewer GEMMs.
TEST(GpuOracle, ResidueAndDigitSplitsAgreeBitForBit) {
  GEMMLAB_REQUIRE_GPU();
  struct Restore {
    ~Restore() { device::set_reference_split(device::ReferenceSplit::automatic); }
  } restore;
  auto both = [](const Problem& p, device::GpuReference& gd, device::GpuReference& gr) {
    device::set_reference_split(device::ReferenceSplit::digits);
    gd = exact_gemm_gpu(p.A, p.B);
    device::set_reference_split(device::ReferenceSplit::residues);
    gr = exact_gemm_gpu(p.A, p.B);
    device::set_reference_split(device::ReferenceSplit::automatic);
  };
  int residues = 0, checked = 0;
  const int sizes[][3] = {{100, 37, 129}, {256, 512, 64}, {33, 65, 1000}, {1024, 1024, 1024}};
  for (const Distribution& d : default_distributions())
    for (Format in : {Format::fp32, Format::tf32, Format::fp16, Format::bf16, Format::e4m3}) {
      if (!unusable_reason(d, in).empty()) continue;
      for (const auto& z : sizes) {
        const std::string what = d.name() + " " + info(in).name + " " + std::to_string(z[0]) + "x" +
                                 std::to_string(z[1]) + "x" + std::to_string(z[2]);
        const Problem p = make(d.name(), in, z[0], z[1], z[2], 23);
        device::GpuReference gd, gr;
        both(p, gd, gr);
        EXPECT_EQ(gd.split, "digits") << what;
        residues += gr.split == "residues";
        const GemmReference hd = gd.to_host(Format::fp32), hr = gr.to_host(Format::fp32);
        expect_same(hr, hd, what + ": residues against digits");
        if (z[2] < 1024) expect_same(hd, exact_gemm(p.A, p.B, Format::fp32), what + ": digits against the CPU");
        ++checked;
      }
    }
  EXPECT_GE(checked, 4 * 15);
  EXPECT_EQ(residues, checked) << "every default distribution's spread fits the residues";
  // Beyond 120 bits of spread (logunif_-60_60 in fp32): the residues give way to the digits.
  {
    const Problem p = make("logunif_-60_60", Format::fp32, 129, 67, 301, 3);
    device::GpuReference gd, gr;
    both(p, gd, gr);
    EXPECT_EQ(gr.split, "digits");
    expect_same(gr.to_host(Format::fp32), exact_gemm(p.A, p.B, Format::fp32), "logunif_-60_60 fp32");
  }
  // K = 2^17 - 16, the int32 limit of one GEMM (127^2 K < 2^31), in one pass of residues.
  {
    Problem p = make("uniform_-1_1", Format::fp32, 24, 20, (1 << 17) - 16, 4);
    device::GpuReference gd, gr;
    both(p, gd, gr);
    EXPECT_EQ(gr.split, "residues");
    expect_same(gr.to_host(Format::fp32), gd.to_host(Format::fp32), "K = 2^17 - 16");
  }
  // The automatic choice: fp32 N(0,1) (7 digits a side, 49 GEMMs a pass) takes residues (15).
  {
    const Problem p = make("normal_0_1", Format::fp32, 512, 512, 512, 5);
    const device::GpuReference g = exact_gemm_gpu(p.A, p.B);
    EXPECT_EQ(g.split, "residues");
    EXPECT_LT(g.gemms, 2 * g.digits_a * g.digits_b);
    RecordProperty("normal_fp32_residue_gemms", g.gemms);
  }
}

// The exponent-spread distribution in every input format, at every PHI the format can hold.
TEST(GpuOracle, MatchesCpuOnExpSpreadInEveryFormat) {
  GEMMLAB_REQUIRE_GPU();
  int checked = 0;
  for (Format in : kInputs)
    for (const char* name : {"expspread_0.5", "expspread_1", "expspread_2", "expspread_4", "expspread_10"}) {
      const Distribution d = parse_distribution(name);
      if (!unusable_reason(d, in).empty()) continue;
      for (const auto& z : {std::array<int, 3>{100, 37, 129}, std::array<int, 3>{256, 256, 256}}) {
        const Problem p = make(name, in, z[0], z[1], z[2], 8);
        expect_same(exact_gemm_gpu_host(p.A, p.B, Format::fp32), exact_gemm(p.A, p.B, Format::fp32),
                    std::string(name) + " " + info(in).name);
        ++checked;
      }
    }
  EXPECT_GE(checked, 2 * 12);
}

TEST(GpuOracle, WideExponentRangeSubnormalsAndZeros) {
  GEMMLAB_REQUIRE_GPU();
  struct Case {
    const char* dist;
    Format in;
    int M, N, K;
  };
  // logunif_-60_60 in fp32 needs the Kulisch engine on the CPU; -160..-110 makes fp32 subnormals
  // (and zeros where values fall below 2^-149); -30..-10 makes fp16 subnormals.
  for (const Case& cs : {Case{"logunif_-60_60", Format::fp32, 129, 67, 301}, Case{"logunif_-160_-110", Format::fp32, 40, 50, 70},
                         Case{"logunif_-30_-10", Format::fp16, 64, 64, 200}, Case{"logunif_-126_127", Format::bf16, 30, 20, 90},
                         Case{"logunif_-20_8", Format::e4m3, 50, 40, 300}, Case{"logunif_-24_15", Format::e5m2, 50, 40, 300}}) {
    const Problem p = make(cs.dist, cs.in, cs.M, cs.N, cs.K, 3);
    const GemmReference cpu = exact_gemm(p.A, p.B, Format::fp32);
    const device::GpuReference g = exact_gemm_gpu(p.A, p.B);
    expect_same(g.to_host(Format::fp32), cpu, std::string(cs.dist) + " " + info(cs.in).name);
    RecordProperty(std::string(cs.dist) + "_digits", g.digits_a);
  }
  // Exact zeros: whole zero rows and columns, scattered zeros, an all-zero product.
  Problem p = make("normal_0_1", Format::fp32, 20, 30, 40, 9);
  for (int k = 0; k < 40; ++k) p.A(3, k) = 0, p.B(k, 7) = 0;
  for (int i = 0; i < 20; ++i) p.A(i, (i * 7) % 40) = 0;
  expect_same(exact_gemm_gpu_host(p.A, p.B, Format::fp16), exact_gemm(p.A, p.B, Format::fp16), "zeros");
  Matrix Z(5, 6), W(6, 4);
  const GemmReference z = exact_gemm_gpu_host(Z, W, Format::fp32);
  for (double x : z.c) EXPECT_EQ(std::bit_cast<std::uint64_t>(x), 0u) << "an exact zero is +0";
  expect_same(z, exact_gemm(Z, W, Format::fp32), "all zero");
}

// Adversarial inputs against MPFR itself: massive cancellation (x + 2^-k - x), ties in the output
// format, random fp32 bit patterns over the whole range, subnormal and overflowing results.
TEST(GpuOracle, MatchesMpfrOnAdversarialInputs) {
  GEMMLAB_REQUIRE_GPU();
  std::mt19937_64 gen(20261123);
  // Random finite fp32 bit patterns (every exponent, subnormals included).
  for (int rep = 0; rep < 3; ++rep) {
    const int M = 9 + rep, N = 7, K = 33 + 10 * rep;
    Matrix A(M, K), B(K, N);
    auto any_fp32 = [&] {
      for (;;) {
        const auto b = static_cast<std::uint32_t>(gen());
        const float f = std::bit_cast<float>(b);
        if (std::isfinite(f)) return static_cast<double>(f);
      }
    };
    for (double& x : A.v) x = any_fp32();
    for (double& x : B.v) x = any_fp32();
    for (Format out : {Format::fp32, Format::bf16, Format::fp16}) {
      const GemmReference m = mpfr_gemm(A, B, out);
      expect_same(exact_gemm_gpu_host(A, B, out), m, "random fp32 bits rep " + std::to_string(rep));
    }
  }
  // Massive cancellation: row i of A = (big, tiny_i, -big), B column = (1, 1, 1) and permutations;
  // the exact result is the tiny term, 2^-200 below the partial sums.
  {
    const int M = 6, N = 4, K = 5;
    Matrix A(M, K), B(K, N);
    for (int i = 0; i < M; ++i) {
      A(i, 0) = std::ldexp(1.0 + i / 8.0, 100);
      A(i, 1) = std::ldexp(1.0, -100 - i) * (i % 2 ? -1 : 1);
      A(i, 2) = -A(i, 0);
      A(i, 3) = std::ldexp(3.0, 60);
      A(i, 4) = std::ldexp(-3.0, 60);
    }
    for (int j = 0; j < N; ++j)
      for (int k = 0; k < K; ++k) B(k, j) = std::ldexp(1.0, -j) * (k == 1 ? (j + 1) : 1);
    expect_same(exact_gemm_gpu_host(A, B, Format::fp32), mpfr_gemm(A, B, Format::fp32), "cancellation");
  }
  // A tie in fp16 broken only by a term 2^-60 below it: 1 + 2^-11 (tie between 1 and 1 + 2^-10)
  // plus or minus 2^-60.
  {
    Matrix A(2, 3), B(3, 1);
    A(0, 0) = 1, A(0, 1) = 0x1p-11, A(0, 2) = 0x1p-60;
    A(1, 0) = 1, A(1, 1) = 0x1p-11, A(1, 2) = -0x1p-60;
    B(0, 0) = B(1, 0) = B(2, 0) = 1;
    const GemmReference g = exact_gemm_gpu_host(A, B, Format::fp16);
    EXPECT_EQ(g.c_out[0], 1 + 0x1p-10);
    EXPECT_EQ(g.c_out[1], 1.0);
    expect_same(g, mpfr_gemm(A, B, Format::fp16), "fp16 tie");
  }
  // Results that overflow binary64 in c (to inf) and c_odd (to the largest double), and results
  // below binary64's subnormal range (c = -0, c_odd = -2^-1074). The engines take any finite
  // double, not only the input formats' values.
  {
    Matrix A(2, 2), B(2, 2);
    A(0, 0) = 0x1.8p+600, A(0, 1) = 0x1p+600;
    A(1, 0) = 0x1p-149, A(1, 1) = -0x1p-148;
    B(0, 0) = B(1, 0) = 0x1p+500;
    B(0, 1) = 0x1p-1000, B(1, 1) = 0x1p-1000;
    const GemmReference g = exact_gemm_gpu_host(A, B, Format::fp32);
    EXPECT_TRUE(std::isinf(g.c[0]));
    EXPECT_EQ(g.c_odd[0], std::numeric_limits<double>::max());
    EXPECT_EQ(std::bit_cast<std::uint64_t>(g.c[3]), std::bit_cast<std::uint64_t>(-0.0));
    EXPECT_EQ(g.c_odd[3], -0x1p-1074);
    expect_same(g, mpfr_gemm(A, B, Format::fp32), "overflow/underflow");
  }
}

// Device-resident fp32 operands (what a runner holds) give the same reference as the host path.
struct DeviceFloats : testing::DeviceArray<float> {
  explicit DeviceFloats(const Matrix& X) : DeviceArray(std::vector<float>(X.v.begin(), X.v.end())) {}
};

TEST(GpuOracle, DeviceResidentOperandsGiveTheSameReference) {
  GEMMLAB_REQUIRE_GPU();
  for (const char* dist : {"normal_0_1", "logunif_-60_60", "cancel_-10"}) {
    const Problem p = make(dist, Format::fp32, 100, 37, 129, 4);
    const DeviceFloats a(p.A), b(p.B);
    const GemmReference d = device::exact_gemm_gpu_device(a.p, b.p, 100, 37, 129).to_host(Format::fp16);
    expect_same(d, exact_gemm(p.A, p.B, Format::fp16), std::string("device-resident ") + dist);
  }
}

// Long K: the int32 products are flushed to int64 every 2^17 terms, within a level (K = 20000 with
// 7-8 digits) and within one GEMM (K = 140000 is cut into chunks).
TEST(GpuOracle, LongKFlushesTheInt32Accumulator) {
  GEMMLAB_REQUIRE_GPU();
  for (const auto& [dist, in, M, N, K] :
       {std::tuple{"normal_0_1", Format::fp32, 16, 16, 20000}, std::tuple{"uniform_-1_1", Format::fp16, 3, 2, 140000},
        std::tuple{"cancel_-10", Format::fp32, 5, 7, 140001}}) {
    const Problem p = make(dist, in, M, N, K, 6);
    expect_same(exact_gemm_gpu_host(p.A, p.B, Format::fp32), exact_gemm(p.A, p.B, Format::fp32),
                std::string(dist) + " K=" + std::to_string(K));
  }
}

TEST(GpuOracle, ExactReferenceFallsBackToTheCpu) {
  GEMMLAB_REQUIRE_GPU();
  Problem p = make("normal_0_1", Format::fp32, 9, 8, 7, 2);
  std::string why;
  GemmReference g = device::exact_reference(p.A, p.B, Format::fp16, 0, &why);
  EXPECT_EQ(g.engine, "gpu_int8_ozaki");
  EXPECT_EQ(why, "");
  p.A(2, 3) = std::numeric_limits<double>::infinity();
  g = device::exact_reference(p.A, p.B, Format::fp16, 0, &why);
  EXPECT_NE(g.engine, "gpu_int8_ozaki");
  EXPECT_NE(why.find("infinity or NaN"), std::string::npos) << why;
  expect_same(g, exact_gemm(p.A, p.B, Format::fp16), "fallback");
}

TEST(GpuOracle, RefusesWhatItCannotDoExactly) {
  GEMMLAB_REQUIRE_GPU();
  Matrix A(2, 2), B(2, 2);
  A(0, 0) = std::numeric_limits<double>::infinity();
  EXPECT_THROW(exact_gemm_gpu(A, B), device::GpuReferenceUnavailable);
  A(0, 0) = std::numeric_limits<double>::quiet_NaN();
  EXPECT_THROW(exact_gemm_gpu(A, B), device::GpuReferenceUnavailable);
  // 2^-1000 and 2^1000 in one row: about 2000 bits, beyond kMaxDigits 7-bit digits.
  A(0, 0) = 0x1p-1000, A(0, 1) = 0x1p+1000;
  EXPECT_THROW(exact_gemm_gpu(A, B), device::GpuReferenceUnavailable);
}

// The memory estimate (host arithmetic only: runs without a GPU too).
TEST(GpuOracle, MemoryEstimateSaysWhatFits) {
  EXPECT_LT(device::gpu_oracle_bytes(8192, 8192, 8192, Format::fp16), std::size_t{40} << 30);
  EXPECT_GT(device::gpu_oracle_bytes(65536, 65536, 65536, Format::fp32), std::size_t{200} << 30);
  EXPECT_LT(device::gpu_oracle_bytes(4096, 4096, 4096, 4, 4), device::gpu_oracle_bytes(4096, 4096, 4096, Format::fp16));
  const long n = device::gpu_oracle_max_square(Format::fp16, std::size_t{80} << 30);
  EXPECT_GT(n, 8192);
  EXPECT_LE(device::gpu_oracle_bytes(n, n, n, Format::fp16), std::size_t{80} << 30);
  EXPECT_GT(device::gpu_oracle_bytes(n + 1, n + 1, n + 1, Format::fp16), std::size_t{80} << 30);
  EXPECT_EQ(device::worst_case_digits(Format::fp16), 6);
  EXPECT_EQ(device::worst_case_digits(Format::e4m3), 3);
  EXPECT_EQ(device::worst_case_digits(Format::e5m2), 5);
  EXPECT_EQ(device::worst_case_digits(Format::fp32), 40);
  EXPECT_GT(device::worst_case_digits(Format::fp64), device::kMaxDigits);
}

// ---- statistics ------------------------------------------------------------------------------

::testing::AssertionResult same_stats(const ErrorStats& g, const ErrorStats& c) {
  std::string bad;
#define GEMMLAB_FIELD(f)                                                                          \
  if (std::bit_cast<std::uint64_t>(static_cast<double>(g.f)) != std::bit_cast<std::uint64_t>(static_cast<double>(c.f))) \
    bad += std::string(" " #f ": gpu ") + hex(static_cast<double>(g.f)) + " cpu " + hex(static_cast<double>(c.f)) + ";";
  // Every field of the one list (reference/error_stats.hpp), so a new column is compared too.
#define GEMMLAB_STATS_FIELD(type, name, doc) GEMMLAB_FIELD(name)
  GEMMLAB_ERROR_STATS_FIELDS(GEMMLAB_STATS_FIELD)
#undef GEMMLAB_STATS_FIELD
  GEMMLAB_FIELD(within_bound)
#undef GEMMLAB_FIELD
  if (bad.empty()) return ::testing::AssertionSuccess();
  return ::testing::AssertionFailure() << bad;
}

// A kernel-like output: the reference rounded to `out`, moved by a seeded number of ulps (mostly 0
// or +-1, a few far), with NaN, infinity and zeros sprinkled in when `specials`.
std::vector<double> perturbed(const GemmReference& ref, Format out, std::uint64_t seed, bool specials) {
  const std::vector<double> co = output_reference(ref, out);
  std::vector<double> x(co.size());
  for (std::size_t i = 0; i < co.size(); ++i) {
    const rng::Block b = rng::bits(seed, 99, static_cast<std::uint32_t>(i), static_cast<std::uint32_t>(i >> 32));
    const std::uint32_t u = b.w[0] % 1000;
    double v = co[i];
    const double ulp = v == 0 ? 0x1p-149 : std::ldexp(1.0, std::ilogb(v) - info(out).precision + 1);
    if (u < 300) v += ulp;
    else if (u < 550) v -= ulp;
    else if (u < 560) v += ulp * static_cast<double>(b.w[1] % 4096);
    else if (u < 565) v *= 1 + std::ldexp(static_cast<double>(b.w[2] % 100), -12);
    if (specials) {
      if (u == 990) v = std::numeric_limits<double>::quiet_NaN();
      if (u == 991) v = -std::numeric_limits<double>::infinity();
      if (u == 992) v = 0.0;
    }
    x[i] = round_to(out, v);
  }
  return x;
}

TEST(GpuOracle, StatisticsMatchTheCpuBitForBit) {
  GEMMLAB_REQUIRE_GPU();
  struct Case {
    const char* dist;
    Format in, out;
    int M, N, K;
    bool specials;
  };
  for (const Case& cs : {Case{"uniform_0_1", Format::fp32, Format::fp32, 517, 999, 200, false},
                         Case{"uniform_-1_1", Format::fp16, Format::fp16, 300, 301, 500, true},
                         Case{"normal_0_1", Format::bf16, Format::fp32, 1, 1, 7, false},
                         Case{"cancel_-10", Format::fp32, Format::fp32, 64, 1000, 256, true},
                         Case{"exactint_8", Format::fp16, Format::fp32, 40, 33, 100, false},
                         Case{"logunif_-8_8", Format::fp32, Format::fp64, 200, 128, 64, true},
                         Case{"normal_0_1", Format::fp32, Format::bf16, 1024, 1024, 64, true}}) {
    const std::string what = std::string(cs.dist) + " " + info(cs.in).name + "->" + info(cs.out).name;
    const Problem p = make(cs.dist, cs.in, cs.M, cs.N, cs.K, 21);
    const GemmReference ref = exact_gemm(p.A, p.B, cs.out);
    const device::GpuReference g = exact_gemm_gpu(p.A, p.B);
    for (std::uint64_t seed : {1ull, 2ull}) {
      const std::vector<double> x = perturbed(ref, cs.out, seed, cs.specials);
      BoundModel m;
      m.K = cs.K;
      m.input = m.compute = cs.in;
      m.output = cs.out;
      m.rounding = Rounding::toward_zero;
      const ErrorStats cpu = compute_error_stats(x, ref, cs.out, m);
      EXPECT_TRUE(same_stats(device::compute_error_stats_gpu(x, g, cs.out, m), cpu)) << what << " seed " << seed;
      EXPECT_TRUE(same_stats(device::compute_error_stats_gpu(x, ref, cs.out, m), cpu)) << what << " (host ref)";
      EXPECT_TRUE(same_stats(compute_error_stats(x, ref, cs.out, m, 3), cpu)) << what << " 3 CPU threads";
      if (cs.specials) EXPECT_GT(cpu.nonfinite, 0) << what;
      EXPECT_GT(cpu.rel_count, 0) << what;
      // Every NaN or infinite output (c is finite here) fails torch's assert_close.
      if (cs.specials) EXPECT_GE(cpu.assert_close_mismatches, cpu.nonfinite) << what;
      if (cs.specials) EXPECT_EQ(cpu.assert_close, 0) << what;
    }
  }
}

// The measures of other tools (calc_diff, snr_db, max_abs_err, assert_close) on outputs that pass
// too: every entry correctly rounded passes torch's assert_close at its format's defaults (one
// rounding is at most 2^-11 relative for fp16 against rtol 1e-3, 2^-8 for bf16 against 1.6e-2, 2^-24
// for fp32 against 1.3e-6), and the exact fp64 output has no error at all (snr_db = +inf).
TEST(GpuOracle, OtherToolsMeasuresMatchTheCpuBitForBitOnPassingOutputs) {
  GEMMLAB_REQUIRE_GPU();
  for (Format out : {Format::fp32, Format::fp16, Format::bf16, Format::fp64}) {
    const std::string what = std::string("correctly rounded ") + info(out).name;
    const Problem p = make("normal_0_1", Format::fp16, 300, 257, 96, 7);
    const GemmReference ref = exact_gemm(p.A, p.B, out);
    const device::GpuReference g = exact_gemm_gpu(p.A, p.B);
    const std::vector<double> x = output_reference(ref, out);
    BoundModel m;
    m.K = 96;
    m.input = m.compute = Format::fp16;
    m.output = out;
    const ErrorStats cpu = compute_error_stats(x, ref, out, m);
    EXPECT_TRUE(same_stats(device::compute_error_stats_gpu(x, g, out, m), cpu)) << what;
    EXPECT_EQ(cpu.assert_close, 1) << what;
    EXPECT_EQ(cpu.assert_close_mismatches, 0) << what;
    if (out == Format::fp64) {
      EXPECT_EQ(cpu.snr_db, std::numeric_limits<double>::infinity()) << what;
      EXPECT_EQ(cpu.calc_diff, 0.0) << what;
      EXPECT_EQ(cpu.max_abs_err, 0.0) << what;
    } else {
      EXPECT_GT(cpu.calc_diff, 0.0) << what;
      EXPECT_GT(cpu.max_abs_err, 0.0) << what;
      // One rounding: |d| <= u |c| with u = 2^-p (the few subnormal results add far less), so the
      // SNR is at least 20 log10(2^p), about 6.02 dB per bit, and a few dB above it on average.
      const double floor_db = 20 * std::log10(std::ldexp(1.0, info(out).precision));
      EXPECT_GT(cpu.snr_db, floor_db - 0.1) << what;
      EXPECT_LT(cpu.snr_db, floor_db + 15) << what;
    }
  }
}

// Fixed-point operands (cuBLAS's fp64 emulation): the term h alpha_i beta_j with the GPU reference's
// row and column maxima, bit for bit the CPU's, on the CPU model's outputs at the 23 bits the record
// declares (within the bound) and at 15 (one slice fewer: beyond it on U[0,1)), plus perturbed
// outputs with NaN and infinities; from the GPU reference and from the host one.
TEST(GpuOracle, FixedPointBoundMatchesTheCpuBitForBit) {
  GEMMLAB_REQUIRE_GPU();
  for (const char* dist : {"expspread_1", "uniform_0_1", "cancel_-40", "normal_0_1"}) {
    const Problem p = make(dist, Format::fp64, 97, 83, 300, 4);
    const GemmReference ref = exact_gemm(p.A, p.B, Format::fp64);
    const device::GpuReference g = exact_gemm_gpu(p.A, p.B);
    expect_same(g.to_host(Format::fp64), ref, dist);
    const BoundModel m = bound_model(fixed_point_fp64_numerics(23), 300);
    for (int kept : {23, 15}) {
      const std::string what = std::string(dist) + " kept " + std::to_string(kept);
      const std::vector<double> x = fixed_point::gemm(p.A, p.B, fixed_point::Scheme{.bits = kept});
      const ErrorStats cpu = compute_error_stats(x, ref, Format::fp64, m);
      EXPECT_TRUE(same_stats(device::compute_error_stats_gpu(x, g, Format::fp64, m), cpu)) << what;
      EXPECT_TRUE(same_stats(device::compute_error_stats_gpu(x, ref, Format::fp64, m), cpu)) << what << " (host ref)";
      EXPECT_GT(cpu.fixed_point_bound, 0.0) << what;
      if (kept == 23) EXPECT_EQ(cpu.bound_violations, 0) << what << ": ratio " << cpu.bound_ratio;
      if (kept == 15 && std::string(dist) == "uniform_0_1") EXPECT_GT(cpu.bound_violations, 0) << what;
      RecordProperty(std::string(dist) + "_kept" + std::to_string(kept) + "_bound_ratio", std::to_string(cpu.bound_ratio));
    }
    const std::vector<double> odd = perturbed(ref, Format::fp64, 3, true);
    const ErrorStats cpu = compute_error_stats(odd, ref, Format::fp64, m);
    EXPECT_TRUE(same_stats(device::compute_error_stats_gpu(odd, g, Format::fp64, m), cpu)) << dist << " perturbed";
    EXPECT_GT(cpu.nonfinite, 0) << dist;
  }
}

}  // namespace
}  // namespace gemmlab
