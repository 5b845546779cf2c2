// The register-only mma.sync ceiling: see mma_ceiling.hpp.
#include "experiments/device/mma_ceiling.hpp"

#include <cuda_runtime.h>

#include <algorithm>
#include <cstdio>

#include "experiments/device/runner.hpp"
#include "experiments/plan/plan.hpp"
#include "experiments/report/files.hpp"
#include "experiments/report/metadata.hpp"
#include "kernels/common/cuda_check.cuh"
#include "kernels/common/mma_ptx.cuh"
#include "kernels/registry.hpp"
#include "reference/distributions.hpp"

namespace gemmlab {
namespace {

// Fragments of small integers (exact in fp16; products and sums exact in fp32 for the sizes used):
// a = 1 + (lane + e) % 2, b = 1, so every mma adds 16 * a-row-values per entry.
// `flip` is 0 at run time, but ptxas cannot know it: it keeps the fragments distinct per tile (no
// common-subexpression merging of equal mma operands) and loop-variant (no hoisting of T = A*B + 0
// out of the loop in external mode: a += flip is not periodic); one IADD per m16 tile and iteration.
template <Accumulation MODE, int MT, int NT, int THREADS>
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
      for (int j = 0; j < NT; ++j) ptx::mma_accumulate<MODE>(acc[i][j], a[i], b[j]);
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

}  // namespace

const std::vector<MmaCeilingConfig>& mma_ceiling_configs() {
  static const std::vector<MmaCeilingConfig> c = {
      {"in_mma_8warps_64x64", Accumulation::in_mma, 8, 64, 64, mma_register_loop<Accumulation::in_mma, 4, 8, 256>},
      {"external_8warps_64x64", Accumulation::external, 8, 64, 64, mma_register_loop<Accumulation::external, 4, 8, 256>},
      {"in_mma_16warps_64x32", Accumulation::in_mma, 16, 64, 32, mma_register_loop<Accumulation::in_mma, 4, 4, 512>},
      {"external_16warps_64x32", Accumulation::external, 16, 64, 32, mma_register_loop<Accumulation::external, 4, 4, 512>},
      {"in_mma_16warps_32x32", Accumulation::in_mma, 16, 32, 32, mma_register_loop<Accumulation::in_mma, 2, 4, 512>},
      {"external_16warps_32x32", Accumulation::external, 16, 32, 32, mma_register_loop<Accumulation::external, 2, 4, 512>},
  };
  return c;
}

// Runs config c with `blocks` blocks; returns the median time of `reps` launches in ms.
double time_mma_ceiling(const MmaCeilingConfig& c, int blocks, int iters, int reps, std::vector<float>* sums) {
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

int bench_mma_ceiling(const std::string& out_csv, const std::string& command_line) {
  const DeviceInfo& dev = query_device();
  if (!dev.present) throw UsageError("bench-mma-ceiling needs a CUDA GPU: " + dev.why_absent);
  if (dev.cc() < 80) throw UsageError("mma.sync.m16n8k16 needs sm_80 or newer; this GPU is " + dev.name);
  check_writable(out_csv);
  // cuBLAS fp16 -> fp32 at 4096^3 in the same process: the reference for the ratios.
  const Distribution d = parse_distribution("uniform_-1_1");
  const Matrix A = generate(d, Operand::A, 4096, 4096, Format::fp16, 1);
  const Matrix B = generate(d, Operand::B, 4096, 4096, Format::fp16, 1);
  TimingOptions opt;
  opt.warmup = 3;
  opt.reps = 20;
  const double cublas_ms = run_kernel(*find_kernel("cublas_gemmex_fp16_f32"), A, B, opt).time_ms_median;
  const double cublas_tflops = 2.0 * 4096.0 * 4096.0 * 4096.0 / (cublas_ms * 1e-3) / 1e12;
  std::printf("cuBLAS fp16->fp32 4096^3: %.4f ms, %.1f TFLOP/s\n", cublas_ms, cublas_tflops);
  const int iters = 4096;
  std::vector<std::vector<std::string>> rows;
  double in_ms = 0;
  for (const MmaCeilingConfig& c : mma_ceiling_configs()) {
    const double ms = time_mma_ceiling(c, dev.sm_count, iters, 10, nullptr);
    const double mmas = double(dev.sm_count) * c.warps * (c.wm / 16) * (c.wn / 8) * iters;
    const double tflops = mmas * 2.0 * 16 * 8 * 16 / (ms * 1e-3) / 1e12;
    if (c.mode == Accumulation::in_mma) in_ms = ms;
    std::printf("%-26s %8.4f ms %7.1f TFLOP/s %6.3fx cuBLAS%s\n", c.name, ms, tflops, tflops / cublas_tflops,
                c.mode == Accumulation::external ? (" (external/in_mma time " + std::to_string(ms / in_ms) + ")").c_str()
                                                 : "");
    rows.push_back({c.name, to_string(c.mode), std::to_string(c.warps), std::to_string(c.wm) + "x" + std::to_string(c.wn),
                    std::to_string(iters), fmt_double(ms), fmt_double(tflops), fmt_double(tflops / cublas_tflops),
                    fmt_double(cublas_tflops), dev.name});
  }
  nlohmann::json meta = base_metadata("bench-mma-ceiling", command_line, out_csv);
  add_device_metadata(meta, dev, software_versions(), current_sm_clock_mhz());
  write_table(out_csv,
              {"config", "mode", "warps_per_sm", "warp_tile", "iters", "time_ms_median", "tflops", "ratio_cublas",
               "cublas_tflops", "gpu"},
              rows, meta);
  std::printf("wrote %s\n", out_csv.c_str());
  return 0;
}

}  // namespace gemmlab
