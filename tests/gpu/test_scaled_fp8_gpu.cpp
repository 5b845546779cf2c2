// Scaled fp8 quantization on the GPU (experiments/device/quantize_gpu.hpp) against the CPU's
// quantize() bit for bit: every recipe of both fp8 formats on sources generated on the GPU
// (generate_gpu, itself bit for bit generate()), with partial blocks along K, M and N, and the
// refusal of an all-zero block with the CPU's message. Then every scaled kernel (gemmlab's
// hgemm_wgmma_11_fp8scaled and the cuBLASLt scale modes) on its recipe's operands, within its bound
// against the exact product of the dequantized operands, with (K/128) mod 4 != 0 and a partial last
// K block; gemmlab's own predicted bit for bit (kernel_emulation's emulate_scaled); and every
// cuBLASLt mode against the candidate orders of `gemmlab predict`, printed (the library's order is
// what is being found out, so no candidate is required to match). The schedules of the block-scaled
// kernel registered beside it for a round of issue 22's speed target are predicted too, and give its
// bits on two sizes with more tiles than SMs.
#include <cuda_runtime.h>
#include <gtest/gtest.h>

#include <cstring>
#include <iostream>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

#include "experiments/device/inputs_gpu.hpp"
#include "experiments/device/predict.hpp"
#include "kernels/registry.hpp"
#include "experiments/device/quantize_gpu.hpp"
#include "reference/exact_gemm.hpp"
#include "reference/kernel_emulation.hpp"
#include "reference/scaled_fp8.hpp"
#include "tests/gpu/device_array.hpp"
#include "tests/gpu/gpu_test_util.hpp"

namespace gemmlab {
namespace {

using DeviceFloats = testing::DeviceArray<float>;
const auto check = testing::cuda_ok;

std::uint32_t bits_of(float f) {
  std::uint32_t b;
  std::memcpy(&b, &f, 4);
  return b;
}

// Operand `which` of the source, quantized on the GPU, compared with quantize() entry by entry.
void expect_same_bits(const Distribution& d, const ScaleRecipe& r, Operand which, int rows, int cols,
                      std::uint64_t seed) {
  const ScaleGranularity g = which == Operand::A ? r.a : r.b;
  const Matrix src = generate(d, which, rows, cols, Format::fp32, seed);
  const ScaledOperand cpu = quantize(src, which, g, r.fp8, r.ue8m0);
  DeviceFloats x(src.size()), q(src.size()), s(cpu.scales.size());
  device::generate_gpu(d, which, rows, cols, Format::fp32, seed, x.p);
  device::quantize_gpu(x.p, which, g, r.fp8, r.ue8m0, rows, cols, q.p, s.p);
  const std::vector<float> hq = q.download(), hs = s.download();
  for (std::size_t b = 0; b < hs.size(); ++b)
    ASSERT_EQ(bits_of(hs[b]), bits_of(cpu.scales[b])) << r.name() << " scale " << b;
  long long differ = 0;
  for (std::size_t i = 0; i < hq.size(); ++i) differ += bits_of(hq[i]) != bits_of(static_cast<float>(cpu.q.v[i]));
  EXPECT_EQ(differ, 0) << r.name() << (which == Operand::A ? " A" : " B") << " " << rows << "x" << cols;
}

TEST(ScaledFp8Gpu, QuantizationIsTheCpusBitForBit) {
  GEMMLAB_REQUIRE_GPU();
  for (const char* dist : {"uniform_0_1", "normal_0_1", "logunif_-8_8"})
    for (Format f : {Format::e4m3, Format::e5m2})
      for (const ScaleRecipe& r : all_recipes(f)) {
        const Distribution d = parse_distribution(dist);
        expect_same_bits(d, r, Operand::A, 130, 300, 5);  // 3 K-blocks, the last of 44; M-blocks 128 + 2
        expect_same_bits(d, r, Operand::B, 300, 257, 5);
      }
  // One operand of a served size (a whole-tensor amax over 2^22 entries through the warp path).
  expect_same_bits(parse_distribution("normal_0_1"), parse_recipe("e4m3_tensor"), Operand::A, 2048, 2048, 9);
  expect_same_bits(parse_distribution("normal_0_1"), parse_recipe("e4m3_1x128_128x128"), Operand::B, 2048, 2048, 9);
}

TEST(ScaledFp8Gpu, AllZeroBlockIsRefusedAsOnTheCpu) {
  GEMMLAB_REQUIRE_GPU();
  std::vector<float> h(2 * 256);
  for (int k = 0; k < 256; ++k) h[k] = 1.0f + k, h[256 + k] = k < 128 ? 0.0f : 1.0f;
  Matrix m(2, 256);
  for (std::size_t i = 0; i < h.size(); ++i) m.v[i] = h[i];
  std::string cpu_msg;
  try {
    quantize(m, Operand::A, ScaleGranularity::k128, Format::e4m3, false);
  } catch (const std::invalid_argument& e) {
    cpu_msg = e.what();
  }
  ASSERT_FALSE(cpu_msg.empty());
  DeviceFloats x(h.size()), q(h.size()), s(4);
  check(cudaMemcpy(x.p, h.data(), h.size() * 4, cudaMemcpyHostToDevice), "cudaMemcpy");
  try {
    device::quantize_gpu(x.p, Operand::A, ScaleGranularity::k128, Format::e4m3, false, 2, 256, q.p, s.p);
    FAIL() << "quantize_gpu accepted an all-zero block";
  } catch (const std::invalid_argument& e) {
    EXPECT_EQ(std::string(e.what()), cpu_msg);
  }
}

std::vector<const Kernel*> scaled_kernels() {
  std::vector<const Kernel*> v;
  for (const Kernel* k : all_kernels())
    if (k->scale_a != ScaleGranularity::none) v.push_back(k);
  return v;
}

// The recipe of a scaled kernel's granularities on source `source`.
Distribution recipe_for(const Kernel& k, const char* source) {
  Distribution d = parse_distribution(source);
  d.recipe = ScaleRecipe{k.numerics.input, k.scale_a, k.scale_b, false};
  return d;
}

// One untimed launch of scaled kernel k on problem p, with the scale grids in k's layouts.
KernelRun run_scaled_once(const Kernel& k, const ScaledProblem& p) {
  const OperandScales scales{kernel_scales(p.A, Operand::A, k.scale_a), kernel_scales(p.B, Operand::B, k.scale_b)};
  TimingOptions opt;
  opt.warmup = 0;
  opt.reps = 1;
  opt.flush_l2 = false;
  return run_kernel(k, p.A.q, p.B.q, opt, 0, &scales);
}

TEST(ScaledFp8Gpu, EveryScaledKernelIsWithinItsBoundOnItsRecipe) {
  GEMMLAB_REQUIRE_GPU();
  const std::vector<const Kernel*> ks = scaled_kernels();
  ASSERT_FALSE(ks.empty()) << "no scaled fp8 kernel is registered (the cublas family registers four)";
  for (const Kernel* k : ks) {
    const std::string why = hardware_support(*k, query_device());
    if (!why.empty()) {
      std::cout << "[scaled] " << k->name << ": " << why << "\n";
      continue;
    }
    // K = 640: 5 blocks of 128 ((K/128) mod 4 = 1, PyTorch #166752's case); K = 400: a partial last block.
    for (int K : {640, 400})
      for (const char* src : {"normal_0_1", "uniform_0_1", "logunif_-12_12"}) {
        const int M = 256, N = 256;
        if (!check_size(*k, M, N, K).empty()) continue;
        const Distribution d = recipe_for(*k, src);
        SCOPED_TRACE(std::string(k->name) + " on " + d.name() + " K=" + std::to_string(K));
        const ScaledProblem p = make_scaled_problem(d, M, N, K, 5);
        KernelRun run;
        try {
          run = run_scaled_once(*k, p);
        } catch (const std::runtime_error& e) {
          // cuBLASLt may offer no algorithm for a mode at this K: the message must say so.
          ASSERT_EQ(std::string(k->family), "cublas") << e.what();
          ASSERT_NE(std::string(e.what()).find("offers no"), std::string::npos) << e.what();
          std::cout << "[scaled] " << e.what() << "\n";
          continue;
        }
        const GemmReference ref = exact_gemm(p.A.dequantized(), p.B.dequantized(), Format::fp32);
        const ErrorStats s = compute_error_stats(run.c, ref, bound_model(k->numerics, K));
        EXPECT_EQ(run.unwritten, 0);
        EXPECT_TRUE(s.within_bound) << "componentwise " << s.componentwise << " > bound " << s.gamma_bound;
        // A scale read from the wrong block is off by tens of percent; the worst honest kernel here
        // (fast accumulation, all of K in the tensor core's 13 bits) is about 1% at K = 640.
        EXPECT_LT(s.normwise, 0.05);
      }
  }
}

// gemmlab's own scaled kernels: the hopper family's (hgemm_wgmma_11's block-scaled and rowwise
// kernels, and any schedule of the block-scaled kernel registered beside it to be measured).
std::vector<const Kernel*> gemmlab_scaled_kernels() {
  std::vector<const Kernel*> v;
  for (const Kernel* k : scaled_kernels())
    if (std::string(k->family) == "hopper") v.push_back(k);
  return v;
}

TEST(ScaledFp8Gpu, GemmlabsScaledKernelsArePredictedBitForBit) {
  GEMMLAB_REQUIRE_FAMILY("hopper");
  const std::vector<const Kernel*> ks = gemmlab_scaled_kernels();
  ASSERT_GE(ks.size(), 2u) << "hgemm_wgmma_11's block-scaled and rowwise kernels are registered with the hopper family";
  GEMMLAB_REQUIRE_KERNEL(*ks.front());
  for (const Kernel* k : ks) {
    const auto params = prediction_params(*k);
    ASSERT_TRUE(params.has_value()) << k->name;
    // M = 384: three 128-row tiles, so a 256-row block tile ends in one with only its first wave.
    for (int K : {640, 400})
      for (const char* src : {"normal_0_1", "logunif_-12_12"}) {
        const PredictionRow r = predict_and_compare(*k, recipe_for(*k, src), 384, 256, K, 7, *params);
        std::cout << "[scaled prediction] " << r.summary() << "\n";
        EXPECT_EQ(r.unwritten, 0);
        EXPECT_EQ(r.mismatches, 0) << r.summary() << "\n  order: " << r.order;
      }
  }
}

// The block-scaled kernel's schedule (256 x 128 tiles, TMA-store epilogue, wave 0 stored early) is
// predicted bit for bit with more tiles than SMs, so the persistent blocks walk unequal numbers of
// tiles and reuse the staging buffers across tiles: M = 17 x 128 (the last 256-row tile half full,
// so the early store of wave 0 meets a tile without wave 1), N = 16 x 128 (144 tiles), K = 272
// (a partial last block).
TEST(ScaledFp8Gpu, BlockScaledKernelPredictedWithMoreTilesThanSms) {
  GEMMLAB_REQUIRE_FAMILY("hopper");
  const Kernel* k = find_kernel("hgemm_wgmma_11_fp8scaled_sm8_e4m3_1x128_128x128");
  ASSERT_NE(k, nullptr);
  GEMMLAB_REQUIRE_KERNEL(*k);
  const int M = 17 * 128, N = 16 * 128, K = 272;
  ASSERT_GT((M + 255) / 256 * (N / 128), query_device().sm_count) << "not more tiles than SMs";
  const auto params = prediction_params(*k);
  ASSERT_TRUE(params.has_value());
  const PredictionRow r = predict_and_compare(*k, recipe_for(*k, "normal_0_1"), M, N, K, 11, *params);
  std::cout << "[scaled tiles] " << r.summary() << "\n";
  EXPECT_EQ(r.unwritten, 0);
  EXPECT_EQ(r.mismatches, 0) << r.summary() << "\n  order: " << r.order;
}

// Every schedule of the block-scaled kernel registered beside it (under a temporary hgemm_wgmma_11x_*
// name, for scripts/lab/gpu_fp8speed.sh; none is registered between rounds, and the test says so) gives the
// kernel's bits (itself predicted bit for bit above) with more tiles than SMs, so the persistent blocks
// walk unequal numbers of tiles. Two sizes, K = 400 (a partial last block): M = 31 x 128, N = 9 x 128
// (16 tile rows of 256, the last half full; an odd number of tile columns) and M = 33 x 128,
// N = 10 x 128 (17 tile rows; an even number of tile columns): round 3's clusters of two paired tiles
// along M on the first and along N on the second, and fell back to single blocks on the other.
TEST(ScaledFp8Gpu, BlockScaledSchedulesGiveTheKernelsBits) {
  GEMMLAB_REQUIRE_FAMILY("hopper");
  const Kernel* base = find_kernel("hgemm_wgmma_11_fp8scaled_sm8_e4m3_1x128_128x128");
  ASSERT_NE(base, nullptr);
  GEMMLAB_REQUIRE_KERNEL(*base);
  int compared = 0;
  for (const auto [M, N] : {std::pair{31 * 128, 9 * 128}, std::pair{33 * 128, 10 * 128}}) {
    const int K = 400;
    ASSERT_GT((M + 255) / 256 * (N / 128), query_device().sm_count) << "not more tiles than SMs";
    const ScaledProblem p = make_scaled_problem(recipe_for(*base, "normal_0_1"), M, N, K, 11);
    const KernelRun want = run_scaled_once(*base, p);
    ASSERT_EQ(want.unwritten, 0);
    long long nonzero = 0;
    for (double x : want.c) nonzero += x != 0;
    ASSERT_GT(nonzero, M * (long long)N / 2) << "the base kernel's output is mostly zero: not a comparison";
    for (const Kernel* k : gemmlab_scaled_kernels()) {
      if (k == base || k->scale_a != base->scale_a || k->scale_b != base->scale_b) continue;
      const KernelRun got = run_scaled_once(*k, p);
      long long differ = 0;
      for (std::size_t e = 0; e < got.c.size(); ++e)
        differ += bits_of(static_cast<float>(got.c[e])) != bits_of(static_cast<float>(want.c[e]));
      std::cout << "[scaled schedules] " << k->name << " " << M << "x" << N << "x" << K << ": " << differ << " of "
                << got.c.size() << " outputs differ\n";
      EXPECT_EQ(got.unwritten, 0) << k->name;
      EXPECT_EQ(differ, 0) << k->name;
      ++compared;
    }
  }
  if (compared == 0) GTEST_SKIP() << "no schedule of the block-scaled kernel other than " << base->name << " is registered";
}

TEST(ScaledFp8Gpu, CuBlasLtModesAgainstTheCandidateOrders) {
  GEMMLAB_REQUIRE_FAMILY("cublas");
  int compared = 0;
  for (const Kernel* k : scaled_kernels()) {
    if (std::string(k->family) != "cublas") continue;
    GEMMLAB_REQUIRE_KERNEL(*k);
    const Distribution d = recipe_for(*k, "normal_0_1");
    const ScaledProblem p = make_scaled_problem(d, 256, 256, 640, 9);
    const auto params = tc::measured_hopper_params(*scaled_candidate_orders(*k).front().instruction);
    for (const Numerics& o : scaled_candidate_orders(*k)) {
      const std::vector<double> pred = emulation::emulate_scaled(o, p.A, p.B, *params);
      const KernelRun run = run_scaled_once(*k, p);
      long long mismatches = 0;
      for (std::size_t e = 0; e < pred.size(); ++e) mismatches += static_cast<float>(pred[e]) != static_cast<float>(run.c[e]);
      std::cout << "[scaled order] " << k->name << " vs " << o.describe() << ": " << mismatches << " of " << pred.size()
                << " outputs differ\n";
      ++compared;
    }
  }
  EXPECT_GT(compared, 0);
}

}  // namespace
}  // namespace gemmlab
