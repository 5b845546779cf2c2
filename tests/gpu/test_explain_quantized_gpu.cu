// gemmlab explain of quantized kernels on the GPU (issue 43): two kernels written here, each reading its
// recipe's tensors in the layouts of reference/quantized_layout.hpp, explained through KernelOracle, whose
// probes reach the quantized operand as its elements at unit scale (experiments/device/runner.cu,
// quantized_gpu.hpp unit_scale_operand_gpu) and whose compared problems are SOURCE@RECIPE made on the GPU:
//  * MXFP8 (E4M3) x bf16: every element times its E8M0 scale (a bf16 value), then an fp32 FMA chain along K;
//  * bf16 x uint4 (groups of 32, with zeros): the weight dequantized as RN_bf16(fma_fp32(q - 8, s, z)) (a W4A16
//    kernel's fp32 arithmetic), then the same chain.
// Each is identified (the chain of FMAs), its operands' values held to the elements' at unit scale in every probe
// (the unit-scale packing refuses any other), and predicted bit for bit on three quantized problems; for the
// weight-only kernel the composition finds how it rounds the dequantized weights (Report::Dequantization).
// A recipe with both operands quantized is refused before any launch, saying why.
#include <cuda_bf16.h>
#include <cuda_fp8.h>
#include <cuda_runtime.h>
#include <gtest/gtest.h>

#include <cstdint>
#include <string>

#include "experiments/device/explain_gpu.hpp"
#include "experiments/engine/evaluate.hpp"
#include "kernels/registry.hpp"
#include "reference/explain.hpp"
#include "reference/quantized.hpp"
#include "tests/gpu/gpu_test_util.hpp"

namespace gemmlab {
namespace {

// A (M, K) e4m3 bytes, a_scale (M, K/32) E8M0 bytes; B (K, N) bf16. C fp32, row-major.
__global__ void mxfp8_x_bf16_kernel(const std::uint8_t* A, const std::uint8_t* sa, const __nv_bfloat16* B, float* C,
                                    int M, int N, int K) {
  const int i = blockIdx.y * blockDim.y + threadIdx.y, j = blockIdx.x * blockDim.x + threadIdx.x;
  if (i >= M || j >= N) return;
  float acc = 0.0f;
  for (int k = 0; k < K; ++k) {
    __nv_fp8_e4m3 e;
    e.__x = A[static_cast<std::size_t>(i) * K + k];
    const float a = ldexpf(static_cast<float>(e), static_cast<int>(sa[static_cast<std::size_t>(i) * (K / 32) + k / 32]) - 127);
    acc = __fmaf_rn(a, __bfloat162float(B[static_cast<std::size_t>(k) * N + j]), acc);
  }
  C[static_cast<std::size_t>(i) * N + j] = acc;
}

// A (M, K) bf16; B (K/2, N) bytes of two uint4 codes along K (the even k low), b_scale and b_zero (K/G, N) bf16.
__global__ void bf16_x_uint4_kernel(const __nv_bfloat16* A, const std::uint8_t* B, const __nv_bfloat16* sb,
                                    const __nv_bfloat16* zb, float* C, int M, int N, int K, int G) {
  const int i = blockIdx.y * blockDim.y + threadIdx.y, j = blockIdx.x * blockDim.x + threadIdx.x;
  if (i >= M || j >= N) return;
  float acc = 0.0f;
  for (int k = 0; k < K; ++k) {
    const std::uint8_t byte = B[static_cast<std::size_t>(k / 2) * N + j];
    const int q = (k % 2 == 0) ? (byte & 0xF) : (byte >> 4);
    const std::size_t g = static_cast<std::size_t>(k / G) * N + j;
    const float w = __bfloat162float(__float2bfloat16_rn(
        __fmaf_rn(static_cast<float>(q - 8), __bfloat162float(sb[g]), __bfloat162float(zb[g]))));
    acc = __fmaf_rn(__bfloat162float(A[static_cast<std::size_t>(i) * K + k]), w, acc);
  }
  C[static_cast<std::size_t>(i) * N + j] = acc;
}

void launch_mxfp8(const GemmArgs& a) {
  if (!a.quantized) throw std::runtime_error("no quantized tensors");
  const dim3 block(16, 16), grid((a.N + 15) / 16, (a.M + 15) / 16);
  mxfp8_x_bf16_kernel<<<grid, block, 0, static_cast<cudaStream_t>(a.stream)>>>(
      static_cast<const std::uint8_t*>(a.A), static_cast<const std::uint8_t*>(a.quantized->scale_a),
      static_cast<const __nv_bfloat16*>(a.B), static_cast<float*>(a.C), a.M, a.N, a.K);
}

void launch_uint4(const GemmArgs& a) {
  if (!a.quantized) throw std::runtime_error("no quantized tensors");
  const dim3 block(16, 16), grid((a.N + 15) / 16, (a.M + 15) / 16);
  bf16_x_uint4_kernel<<<grid, block, 0, static_cast<cudaStream_t>(a.stream)>>>(
      static_cast<const __nv_bfloat16*>(a.A), static_cast<const std::uint8_t*>(a.B),
      static_cast<const __nv_bfloat16*>(a.quantized->scale_b), static_cast<const __nv_bfloat16*>(a.quantized->zero_b),
      static_cast<float*>(a.C), a.M, a.N, a.K, 32);
}

void launch_never(const GemmArgs&) { throw std::runtime_error("this kernel must not be launched"); }

Kernel quantized_kernel(const char* name, const char* recipe, void (*launch)(const GemmArgs&)) {
  Kernel k{};
  k.name = name;
  k.family = "user";
  k.description = "test: a quantized kernel explained";
  k.numerics = declared_numerics(Format::fp64, Format::fp32, Accumulation::unknown);
  k.layout_a = k.layout_b = Layout::row_major;
  k.m_multiple = k.n_multiple = k.k_multiple = 1;
  k.launch = launch;
  k.quantized = recipe;
  k.quantized_scales = QuantScales::operands;
  return k;
}

explain::Report explain_quantized(const Kernel& k, const char* recipe, int M, int N, int K) {
  explain::Options opt;
  const QuantRecipe r = parse_quant_recipe(recipe);
  opt.distributions.clear();
  for (const char* d : {"normal_0_1", "uniform_-1_1", "expspread_1"}) opt.distributions.push_back(std::string(d) + "@" + recipe);
  opt.compare_outputs = 0;  // every output
  opt.values_a = unit_scale_values(r.a);
  opt.values_b = unit_scale_values(r.b);
  opt.fprev_carrier = r.a.scheme == QuantScheme::plain ? FprevCarrier::a : FprevCarrier::b;
  KernelOracle o(k, M, N, K);
  EXPECT_EQ(o.input(), Format::bf16);
  return explain::explain_kernel(o, opt);
}

TEST(ExplainQuantizedGpu, MxTimesBf16IsPredictedFromItsDequantizedOperands) {
  GEMMLAB_REQUIRE_GPU();
  const Kernel k = quantized_kernel("test_explain_mxfp8_x_bf16", "mxfp8_e4m3_x_bf16", launch_mxfp8);
  const explain::Report r = explain_quantized(k, "mxfp8_e4m3_x_bf16", 64, 48, 256);
  ASSERT_TRUE(r.identified) << r.summary();
  EXPECT_TRUE(r.quantized);
  EXPECT_TRUE(r.dequantization.operands.empty()) << "every element times its E8M0 scale is a bf16 value";
  ASSERT_EQ(r.comparisons.size(), 3u);
  for (const explain::Comparison& c : r.comparisons) {
    EXPECT_EQ(c.outputs, 64 * 48) << c.distribution;
    EXPECT_EQ(c.mismatches, 0) << c.distribution;
  }
  EXPECT_NE(r.numerics_text.find("scales applied to their elements before the multiply"), std::string::npos)
      << r.numerics_text;
  std::cout << "[ info ] " << r.summary();
}

TEST(ExplainQuantizedGpu, AWeightOnlyKernelsRoundingOfItsWeightsIsFound) {
  GEMMLAB_REQUIRE_GPU();
  const Kernel k = quantized_kernel("test_explain_bf16_x_uint4", "bf16_x_uint4_g32", launch_uint4);
  const explain::Report r = explain_quantized(k, "bf16_x_uint4_g32", 48, 64, 256);
  ASSERT_TRUE(r.identified) << r.summary();
  EXPECT_EQ(r.dequantization.operands, "B");
  ASSERT_FALSE(r.dequantization.tried.empty());
  for (const auto& [name, miss] : r.dequantization.tried)
    if (name == r.dequantization.chosen) EXPECT_EQ(miss, 0) << name;
  EXPECT_EQ(r.dequantization.trial_outputs, 3LL * 48 * 64);
  for (const explain::Comparison& c : r.comparisons) EXPECT_EQ(c.mismatches, 0) << c.distribution;
  std::cout << "[ info ] " << r.summary();
}

TEST(ExplainQuantizedGpu, BothOperandsQuantizedIsRefusedBeforeAnyLaunch) {
  GEMMLAB_REQUIRE_GPU();
  const Kernel k = quantized_kernel("test_explain_mxfp4", "mxfp4", launch_never);
  try {
    KernelOracle o(k, 32, 32, 64);
    FAIL() << "explained a kernel whose operands are both quantized";
  } catch (const std::invalid_argument& e) {
    EXPECT_NE(std::string(e.what()).find("both operands of mxfp4 are quantized"), std::string::npos) << e.what();
  }
}

}  // namespace
}  // namespace gemmlab
