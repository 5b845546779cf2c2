// The mma.sync ceiling on this GPU: a register-only loop of mma.sync.m16n8k16 (f16 in, f32
// accumulate), no shared or global memory in the loop, in the two accumulation modes of the mma
// family: in_mma (D = A*B + D) and external (T = A*B + 0, acc = acc + T with four fp32 adds per mma
// and thread). Each warp holds a (WM, WN) tile of accumulators as the kernels do; blocks of WARPS
// warps, one block per SM. Its TFLOP/s over cuBLAS fp16->fp32 at 4096^3 (same process) is the
// upper bound any mma.sync GEMM can reach here, and its external/in_mma time ratio the lowest
// cost of external accumulation that loading operands from shared memory cannot improve on.
//
// MmaCeiling.Modes checks the loop's arithmetic (small exact integers: every mode gives the same
// exact sum); MmaBench.DISABLED_RegisterCeiling times it (run with --gtest_also_run_disabled_tests;
// GEMMLAB_BENCH_CSV=<file> writes the rows).
#include <cuda_runtime.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include "kernels/common/cuda_check.cuh"
#include "kernels/common/mma_ptx.cuh"
#include "tests/gpu/gpu_test_util.hpp"

namespace gemmlab {
namespace {

// Fragments of small integers (exact in fp16; products and sums exact in fp32 for the sizes used):
// a = 1 + (lane + e) % 2, b = 1, so every mma adds 16 * a-row-values per entry.
// `flip` is 0 at run time, but ptxas cannot know it: it keeps the fragments distinct per tile (no
// common-subexpression merging of equal mma operands) and loop-variant (no hoisting of T = A*B + 0
// out of the loop in external mode: a += flip is not periodic); one IADD per m16 tile and iteration.
template <bool EXTERNAL, int MT, int NT, int THREADS>
__global__ void __launch_bounds__(THREADS, 1) mma_register_loop(int iters, std::uint32_t flip, float* out) {
  std::uint32_t a[MT][4], b[NT][2];
  const unsigned lane = threadIdx.x % 32;
#pragma unroll
  for (int i = 0; i < MT; ++i)
#pragma unroll
    for (int e = 0; e < 4; ++e) {
      const std::uint32_t h = ((lane + e + i) % 2) ? 0x4000u : 0x3C00u;  // 2.0 or 1.0
      a[i][e] = (h | (h << 16)) ^ (flip * std::uint32_t(4 * i + e + 1));
    }
#pragma unroll
  for (int j = 0; j < NT; ++j) {
    b[j][0] = 0x3C003C00u ^ (flip * std::uint32_t(2 * j + 101));  // 1.0
    b[j][1] = 0x3C003C00u ^ (flip * std::uint32_t(2 * j + 102));
  }
  float acc[MT][NT][4];
#pragma unroll
  for (int i = 0; i < MT; ++i)
#pragma unroll
    for (int j = 0; j < NT; ++j)
#pragma unroll
      for (int e = 0; e < 4; ++e) acc[i][j][e] = 0.0f;
  for (int it = 0; it < iters; ++it) {
#pragma unroll
    for (int i = 0; i < MT; ++i) a[i][0] += flip;
#pragma unroll
    for (int i = 0; i < MT; ++i)
#pragma unroll
      for (int j = 0; j < NT; ++j) ptx::mma_accumulate<EXTERNAL>(acc[i][j], a[i], b[j]);
  }
  float s = 0.0f;
#pragma unroll
  for (int i = 0; i < MT; ++i)
#pragma unroll
    for (int j = 0; j < NT; ++j)
#pragma unroll
      for (int e = 0; e < 4; ++e) s += acc[i][j][e];
  out[blockIdx.x * blockDim.x + threadIdx.x] = s;
}

struct Config {
  const char* name;
  bool external;
  int warps, wm, wn;
  void (*kernel)(int, std::uint32_t, float*);
};

const std::vector<Config>& configs() {
  static const std::vector<Config> c = {
      {"in_mma_8warps_64x64", false, 8, 64, 64, mma_register_loop<false, 4, 8, 256>},
      {"external_8warps_64x64", true, 8, 64, 64, mma_register_loop<true, 4, 8, 256>},
      {"in_mma_16warps_64x32", false, 16, 64, 32, mma_register_loop<false, 4, 4, 512>},
      {"external_16warps_64x32", true, 16, 64, 32, mma_register_loop<true, 4, 4, 512>},
      {"in_mma_16warps_32x32", false, 16, 32, 32, mma_register_loop<false, 2, 4, 512>},
      {"external_16warps_32x32", true, 16, 32, 32, mma_register_loop<true, 2, 4, 512>},
  };
  return c;
}

// Runs config c with `blocks` blocks; returns the median time of `reps` launches in ms.
double time_config(const Config& c, int blocks, int iters, int reps, std::vector<float>* sums) {
  float* out = nullptr;
  const int threads = 32 * c.warps;
  GEMMLAB_CUDA_CHECK(cudaMalloc(&out, sizeof(float) * blocks * threads));
  cudaEvent_t e0, e1;
  GEMMLAB_CUDA_CHECK(cudaEventCreate(&e0));
  GEMMLAB_CUDA_CHECK(cudaEventCreate(&e1));
  std::vector<double> ms;
  for (int r = -2; r < reps; ++r) {  // two warm-up launches
    GEMMLAB_CUDA_CHECK(cudaEventRecord(e0));
    c.kernel<<<blocks, threads>>>(iters, 0u, out);
    GEMMLAB_CUDA_CHECK(cudaEventRecord(e1));
    GEMMLAB_CUDA_CHECK(cudaEventSynchronize(e1));
    float t = 0;
    GEMMLAB_CUDA_CHECK(cudaEventElapsedTime(&t, e0, e1));
    if (r >= 0) ms.push_back(t);
  }
  GEMMLAB_CUDA_CHECK(cudaGetLastError());
  if (sums) {
    sums->resize(std::size_t(blocks) * threads);
    GEMMLAB_CUDA_CHECK(cudaMemcpy(sums->data(), out, sizeof(float) * sums->size(), cudaMemcpyDeviceToHost));
  }
  cudaEventDestroy(e0);
  cudaEventDestroy(e1);
  cudaFree(out);
  std::sort(ms.begin(), ms.end());
  return ms[ms.size() / 2];
}

// Exact arithmetic check: with a in {1, 2} and b = 1, every mma adds 16 * a(row, k) summed over k per
// entry; all entries of the warp tile of one thread sum to the same total in both modes, exactly.
TEST(MmaCeiling, ModesAgreeExactly) {
  GEMMLAB_REQUIRE_GPU();
  if (query_device().cc() < 80) GTEST_SKIP() << "mma.sync.m16n8k16 needs sm_80 or newer";
  const int iters = 64;
  for (const Config& c : configs()) {
    SCOPED_TRACE(c.name);
    std::vector<float> sums;
    time_config(c, 2, iters, 1, &sums);
    // Per entry: row g of A fragment registers: the k values of a row alternate 1 and 2 in pairs per
    // register -> per mma each entry gets sum_k a(row,k) * 1 = 16 * 1.5 = 24. Per thread: MT*NT*4
    // entries x iters mma.
    const double expect = 24.0 * iters * (c.wm / 16) * (c.wn / 8) * 4;
    for (std::size_t i = 0; i < sums.size(); ++i) ASSERT_EQ(double(sums[i]), expect) << "thread " << i;
  }
}

TEST(MmaBench, DISABLED_RegisterCeiling) {
  GEMMLAB_REQUIRE_GPU();
  const auto& dev = query_device();
  if (dev.cc() < 80) GTEST_SKIP() << "mma.sync.m16n8k16 needs sm_80 or newer";
  // cuBLAS fp16 -> fp32 at 4096^3 in the same process: the reference for the ratios.
  Distribution d = parse_distribution("uniform_-1_1");
  Matrix A = generate(d, Operand::A, 4096, 4096, Format::fp16, 1), B = generate(d, Operand::B, 4096, 4096, Format::fp16, 1);
  ASSERT_NE(find_kernel("cublas_gemmex_fp16_f32"), nullptr);
  TimingOptions opt;
  opt.warmup = 3;
  opt.reps = 20;
  const double cublas_ms = run_kernel(*find_kernel("cublas_gemmex_fp16_f32"), A, B, opt).time_ms_median;
  const double cublas_tflops = 2.0 * 4096.0 * 4096.0 * 4096.0 / (cublas_ms * 1e-3) / 1e12;
  std::FILE* csv = nullptr;
  if (const char* p = std::getenv("GEMMLAB_BENCH_CSV")) {
    csv = std::fopen(p, "w");
    if (csv) std::fprintf(csv, "config,mode,warps_per_sm,warp_tile,iters,time_ms_median,tflops,ratio_cublas,cublas_tflops,gpu\n");
  }
  const int iters = 4096;
  std::printf("cuBLAS fp16->fp32 4096^3: %.4f ms, %.1f TFLOP/s\n", cublas_ms, cublas_tflops);
  double in_ms[3] = {0, 0, 0};
  int idx = 0;
  for (const Config& c : configs()) {
    const double ms = time_config(c, dev.sm_count, iters, 10, nullptr);
    const double mmas = double(dev.sm_count) * c.warps * (c.wm / 16) * (c.wn / 8) * iters;
    const double tflops = mmas * 2.0 * 16 * 8 * 16 / (ms * 1e-3) / 1e12;
    const int pair = idx / 2;
    if (!c.external) in_ms[pair] = ms;
    std::printf("%-26s %8.4f ms %7.1f TFLOP/s %6.3fx cuBLAS%s\n", c.name, ms, tflops, tflops / cublas_tflops,
                c.external ? (" (external/in_mma time " + std::to_string(ms / in_ms[pair]) + ")").c_str() : "");
    if (csv)
      std::fprintf(csv, "%s,%s,%d,%dx%d,%d,%.5f,%.2f,%.4f,%.2f,%s\n", c.name, c.external ? "external" : "in_mma", c.warps,
                   c.wm, c.wn, iters, ms, tflops, tflops / cublas_tflops, cublas_tflops, dev.name.c_str());
    ++idx;
  }
  if (csv) std::fclose(csv);
}

}  // namespace
}  // namespace gemmlab
