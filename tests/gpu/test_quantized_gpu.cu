// Quantized recipes on the GPU (experiments/device/quantized_gpu.hpp) against the CPU bit for bit: every kind
// of recipe, on sources generated on the GPU, the elements, scales, zeros, tensor scales, the dequantized
// operands and every kernel tensor's bytes (reference/quantized_layout.hpp); the refusals with the CPU's
// messages; the exact GPU reference of the dequantized operands equal to the CPU engine's and to MPFR; then a
// quantized kernel written here (int8 rowwise: exact int32 sums, the scales on the output in fp32) through
// gemmlab run's engine on the GPU: rows judged against the dequantized product, with the total and
// quantization errors beside, and a kernel that writes into its scales caught.
#include <cuda_runtime.h>
#include <gtest/gtest.h>

#include <cstring>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "experiments/device/exact_reference_gpu.hpp"
#include "experiments/device/quantized_gpu.hpp"
#include "experiments/engine/evaluate.hpp"
#include "experiments/engine/run.hpp"
#include "kernels/registry.hpp"
#include "reference/exact_gemm.hpp"
#include "reference/mpfr_gemm.hpp"
#include "reference/quantized_layout.hpp"
#include "tests/gpu/gpu_run_request.hpp"
#include "tests/gpu/device_array.hpp"
#include "tests/gpu/gpu_test_util.hpp"

namespace gemmlab {
namespace {

std::vector<std::uint8_t> bytes_of_device(const void* p, std::size_t n) {
  std::vector<std::uint8_t> v(n);
  if (n && cudaMemcpy(v.data(), p, n, cudaMemcpyDeviceToHost) != cudaSuccess) throw std::runtime_error("cudaMemcpy");
  return v;
}

using DeviceBytes = testing::DeviceArray<std::uint8_t>;

const char* kRecipes[] = {"mxfp8_e4m3", "mxfp8_e5m2", "mxfp6_e2m3", "mxfp6_e3m2", "mxfp4",      "nvfp4",
                          "int8_rowwise", "int4_g32",  "uint4_g64",  "mxfp4_x_bf16", "bf16_x_uint4_g128",
                          "fp16_x_uint4_g32"};

TEST(QuantizedGpu, QuantizationAndKernelTensorsAreTheCpusBitForBit) {
  GEMMLAB_REQUIRE_GPU();
  const int M = 96, N = 80, K = 384;
  for (const char* r : kRecipes)
    for (const char* src : {"normal_0_1", "uniform_0_1", "logunif_-8_8", "expspread_1"}) {
      const Distribution d = parse_distribution(std::string(src) + "@" + r);
      SCOPED_TRACE(d.name());
      const QuantizedProblem cpu = make_quantized_problem(d, M, N, K, 11);
      const device::QuantizedDeviceProblem gpu = device::make_quantized_problem_gpu(d, M, N, K, 11);
      for (int which : {0, 1}) {
        const QuantizedOperand& c = which == 0 ? cpu.A : cpu.B;
        const device::QuantizedDeviceOperand& g = which == 0 ? gpu.A : gpu.B;
        const QuantizedOperand h = g.to_host();
        EXPECT_EQ(h.q.v, c.q.v) << "elements of " << (which ? "B" : "A");
        EXPECT_EQ(h.scales, c.scales);
        EXPECT_EQ(h.zeros, c.zeros);
        EXPECT_EQ(g.tensor_scale, c.tensor_scale);
        std::vector<double> dq(static_cast<std::size_t>(g.rows) * g.cols);
        ASSERT_EQ(cudaMemcpy(dq.data(), g.dequantized(), dq.size() * 8, cudaMemcpyDeviceToHost), cudaSuccess);
        EXPECT_EQ(dq, c.dequantized().v);
        const KernelOperandLayout l = kernel_layout(c.spec, c.which, g.rows, g.cols);
        DeviceBytes e(l.elements.bytes()), s(l.scales.bytes()), z(l.zeros.bytes());
        device::pack_kernel_tensors_gpu(g, e.p, s.p, z.p);
        ASSERT_EQ(cudaDeviceSynchronize(), cudaSuccess);
        EXPECT_EQ(bytes_of_device(e.p, l.elements.bytes()), kernel_elements(c));
        EXPECT_EQ(bytes_of_device(s.p, l.scales.bytes()), kernel_block_scales(c));
        EXPECT_EQ(bytes_of_device(z.p, l.zeros.bytes()), kernel_zeros(c));
      }
    }
}

TEST(QuantizedGpu, RefusalsAreTheCpus) {
  GEMMLAB_REQUIRE_GPU();
  auto message = [](auto&& f) {
    try {
      f();
    } catch (const std::invalid_argument& e) {
      return std::string(e.what());
    }
    return std::string("(no exception)");
  };
  // logunif_-200_-160 in fp32: every value 0, every block all zero: refused on both. exactint_1 with
  // groups of 32: the GPU does what the CPU does (on the H200, 2026-11-29, neither refused it: its groups
  // are not constant at this size).
  for (const char* name : {"logunif_-200_-160@mxfp4", "logunif_-200_-160@nvfp4", "exactint_1@uint4_g32"}) {
    const Distribution d = parse_distribution(name);
    const std::string cpu = message([&] { make_quantized_problem(d, 32, 16, 64, 3); });
    const std::string gpu = message([&] { device::make_quantized_problem_gpu(d, 32, 16, 64, 3); });
    if (std::string(name).rfind("logunif", 0) == 0) EXPECT_NE(cpu, "(no exception)") << name;
    EXPECT_EQ(gpu, cpu) << name;
  }
  const std::string k = message([] { device::make_quantized_problem_gpu(parse_distribution("normal_0_1@mxfp4"), 8, 8, 48, 1); });
  EXPECT_NE(k.find("not a multiple of its block of 32"), std::string::npos) << k;
}

// The exact reference of the dequantized operands on the GPU (exact_gemm_gpu_device on binary64 values) equals
// the CPU engine's and MPFR's (every entry of a small problem recomputed by mpfr_gemm).
TEST(QuantizedGpu, ExactReferenceOfDequantizedOperandsEqualsCpuAndMpfr) {
  GEMMLAB_REQUIRE_GPU();
  const int M = 40, N = 24, K = 256;
  for (const char* r : kRecipes) {
    const Distribution d = parse_distribution(std::string("normal_0_1@") + r);
    SCOPED_TRACE(d.name());
    const device::QuantizedDeviceProblem p = device::make_quantized_problem_gpu(d, M, N, K, 5);
    const GemmReference gpu = device::exact_gemm_gpu_device(p.A.dequantized(), p.B.dequantized(), M, N, K).to_host(Format::fp32);
    const QuantizedProblem c = make_quantized_problem(d, M, N, K, 5);
    const Matrix A = c.A.dequantized(), B = c.B.dequantized();
    testing::expect_same_reference(gpu, exact_gemm(A, B, Format::fp32, 2), "exact_gemm");
    const GemmReference mp = mpfr_gemm(A, B, Format::fp32, 2);
    EXPECT_EQ(gpu.c, mp.c);
    EXPECT_EQ(gpu.c_out, mp.c_out);
  }
}

// ---- a quantized kernel through the engine ----------------------------------------------------------------

// int8 rowwise: C(i, j) = RN(RN(float(sum_k qa qb) a_scale[i]) b_scale[j]) (exact int32 sum; 2 fp32 roundings
// before the output's: the conversion and the first product). `flaw` 1 writes into b_scale after reading it.
__global__ void int8_rowwise_kernel(const std::int8_t* A, const std::int8_t* B, const float* sa, const float* sb, float* C,
                                    int M, int N, int K, int flaw) {
  const int i = blockIdx.y * blockDim.y + threadIdx.y, j = blockIdx.x * blockDim.x + threadIdx.x;
  if (i >= M || j >= N) return;
  int acc = 0;
  for (int k = 0; k < K; ++k) acc += static_cast<int>(A[static_cast<std::size_t>(i) * K + k]) * B[static_cast<std::size_t>(k) * N + j];
  C[static_cast<std::size_t>(i) * N + j] = __fmul_rn(__fmul_rn(__int2float_rn(acc), sa[i]), sb[j]);
  if (flaw && i == 0 && j == 0) const_cast<float*>(sb)[0] = 0.0f;
}

void launch_int8(const GemmArgs& a, int flaw) {
  if (!a.quantized) throw std::runtime_error("no quantized tensors");
  const dim3 block(16, 16), grid((a.N + 15) / 16, (a.M + 15) / 16);
  int8_rowwise_kernel<<<grid, block, 0, static_cast<cudaStream_t>(a.stream)>>>(
      static_cast<const std::int8_t*>(a.A), static_cast<const std::int8_t*>(a.B),
      static_cast<const float*>(a.quantized->scale_a), static_cast<const float*>(a.quantized->scale_b),
      static_cast<float*>(a.C), a.M, a.N, a.K, flaw);
}
void launch_good(const GemmArgs& a) { launch_int8(a, 0); }
void launch_flawed(const GemmArgs& a) { launch_int8(a, 1); }

Kernel int8_kernel(const char* name, void (*launch)(const GemmArgs&), int roundings) {
  Kernel k{};
  k.name = name;
  k.family = "user";
  k.description = "test: int8 rowwise with its scales on the output";
  k.numerics = declared_numerics(Format::fp64, Format::fp32, Accumulation::fma, Format::fp64, Format::fp64, 0);
  k.layout_a = k.layout_b = Layout::row_major;
  k.m_multiple = k.n_multiple = k.k_multiple = 1;
  k.launch = launch;
  k.quantized = "int8_rowwise";
  k.quantized_scales = QuantScales::output;
  k.quantized_scale_roundings = roundings;
  return k;
}

TEST(QuantizedGpu, AQuantizedKernelThroughTheEngine) {
  GEMMLAB_REQUIRE_GPU();
  const Kernel good = int8_kernel("test_int8_rowwise_gpu", launch_good, 2);
  const Kernel tight = int8_kernel("test_int8_rowwise_gpu_claims_1", launch_good, 0);  // claims only the output rounding
  const Kernel flawed = int8_kernel("test_int8_rowwise_gpu_writes_scales", launch_flawed, 2);
  for (const Kernel* k : {&good, &tight, &flawed}) register_kernel(*k);
  RunRequest req = gpu_test::quiet_run_request("quantized_gpu", ::testing::TempDir() + "quantized_gpu_run",
                                               {good.name, tight.name, flawed.name},
                                               {"normal_0_1@int8_rowwise", "uniform_0_1@int8_rowwise"}, {{256, 192, 1024}}, 7);
  const int rc = run_experiment(req, gpu_device(0));
  std::fclose(req.log);
  for (const Kernel* k : {&good, &tight, &flawed}) unregister_kernel(k->name);
  EXPECT_EQ(rc, 3) << "the flawed kernel's rows are errors";
  std::ifstream f(req.out_csv);
  std::string header, line;
  std::getline(f, header);
  auto col = [&](const std::string& row, const std::string& name) {
    // Columns up to `note` hold no quoted commas in these rows except the note, which is the last we read.
    std::vector<std::string> h, v;
    std::stringstream hs(header), vs(row);
    std::string t;
    while (std::getline(hs, t, ',')) h.push_back(t);
    bool quoted = false;
    std::string cell;
    for (char ch : row) {
      if (ch == '"') quoted = !quoted;
      else if (ch == ',' && !quoted) v.push_back(cell), cell.clear();
      else cell += ch;
    }
    v.push_back(cell);
    for (std::size_t i = 0; i < h.size() && i < v.size(); ++i)
      if (h[i] == name) return v[i];
    return std::string("(missing)");
  };
  int rows = 0;
  while (std::getline(f, line)) {
    ++rows;
    const std::string k = col(line, "kernel"), st = col(line, "status"), note = col(line, "note");
    SCOPED_TRACE(k + " " + col(line, "distribution") + ": " + st + " " + note);
    if (k == good.name) {
      EXPECT_EQ(st, "passed");
      EXPECT_NE(col(line, "quant_rel_std"), "");
      EXPECT_NE(col(line, "total_rel_std"), "");
      EXPECT_EQ(col(line, "recipe"), "int8_rowwise");
      // Its epilogue explained: RN(RN(RN(S) a_scale) b_scale), every output predicted bit for bit.
      EXPECT_NE(note.find("explained: the scales enter after the exact sum as epilogue_mul_mul"), std::string::npos);
      EXPECT_NE(note.find(": 0 of 49152 outputs differ"), std::string::npos);
    } else if (k == tight.name) {
      // Two fp32 roundings left out of the bound: a bound a sum of worst cases, which 49,152 entries of
      // round-to-nearest errors need not reach (on the H200, 2026-11-29, they did not: passed). Its
      // status is the bound's verdict either way, which the good kernel's row checks; here only that
      // it was judged.
      EXPECT_TRUE(st == "passed" || st == "failed_bound") << st;
    } else if (k == flawed.name) {
      EXPECT_EQ(st, "error");
      EXPECT_NE(note.find("wrote into its input B"), std::string::npos);
    }
  }
  EXPECT_EQ(rows, 6);
}

}  // namespace
}  // namespace gemmlab
