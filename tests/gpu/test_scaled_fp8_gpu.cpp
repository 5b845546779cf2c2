// Scaled fp8 quantization on the GPU (experiments/device/quantize_gpu.hpp) against the CPU's
// quantize() bit for bit: every recipe of both fp8 formats on sources generated on the GPU
// (generate_gpu, itself bit for bit generate()), with partial blocks along K, M and N, and the
// refusal of an all-zero block with the CPU's message.
#include <cuda_runtime.h>
#include <gtest/gtest.h>

#include <cstring>
#include <stdexcept>
#include <string>
#include <vector>

#include "experiments/device/inputs_gpu.hpp"
#include "experiments/device/quantize_gpu.hpp"
#include "reference/scaled_fp8.hpp"
#include "tests/gpu/gpu_test_util.hpp"

namespace gemmlab {
namespace {

void check(cudaError_t e, const char* what) {
  if (e != cudaSuccess) throw std::runtime_error(std::string("test: ") + what + ": " + cudaGetErrorString(e));
}

struct DeviceFloats {
  float* p = nullptr;
  std::size_t n;
  explicit DeviceFloats(std::size_t count) : n(count) { check(cudaMalloc(&p, std::max<std::size_t>(n, 1) * 4), "cudaMalloc"); }
  ~DeviceFloats() { cudaFree(p); }
  std::vector<float> download() const {
    std::vector<float> v(n);
    check(cudaDeviceSynchronize(), "kernels");
    check(cudaMemcpy(v.data(), p, n * 4, cudaMemcpyDeviceToHost), "cudaMemcpy");
    return v;
  }
};

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

}  // namespace
}  // namespace gemmlab
