// Scaled fp8 quantization on the GPU (see quantize_gpu.hpp). Three passes:
//  amax:     every entry's |x| joins its block's maximum by atomicMax on the fp32 bit pattern (for
//            non-negative floats the bit order is the value order; a NaN's pattern is above +inf's,
//            so a NaN makes the block non-finite as on the CPU). A warp whose 32 entries share one
//            block (tensor and rowwise A, 1x128 A) reduces in registers first and issues one atomic.
//  scale:    one thread per block: scaled_detail::block_scale, and the first block with a problem.
//  quantize: one thread per entry: scaled_detail::quantize_entry.
// dequantize_gpu is one more elementwise pass: q s in binary64 (exact).
#include "experiments/device/quantize_gpu.hpp"

#include <cuda_runtime.h>

#include <algorithm>
#include <climits>
#include <cstring>
#include <cstdint>
#include <stdexcept>
#include <string>

#include "kernels/common/cuda_check.cuh"
#include "reference/scaled_fp8_entry.hpp"

namespace gemmlab::device {
namespace {

constexpr int kThreads = 256;

unsigned blocks_for(std::size_t n) {
  return static_cast<unsigned>(std::max<std::size_t>(1, std::min<std::size_t>((n + kThreads - 1) / kThreads, 1u << 20)));
}

__global__ void amax_kernel(const float* __restrict__ x, scaled_detail::QuantPlan p, int cols, std::size_t n,
                            unsigned* __restrict__ amax_bits) {
  const std::size_t stride = static_cast<std::size_t>(gridDim.x) * blockDim.x;
  // Every lane of a warp runs the same number of iterations (n rounded up), so the warp votes below
  // always see all 32 lanes; lanes past n contribute 0 to their warp leader's block.
  const std::size_t rounded = (n + 31) / 32 * 32;
  for (std::size_t idx = blockIdx.x * static_cast<std::size_t>(blockDim.x) + threadIdx.x; idx < rounded;
       idx += stride) {
    const bool valid = idx < n;
    long long blk = -1;
    unsigned v = 0;
    if (valid) {
      const int i = static_cast<int>(idx / static_cast<std::size_t>(cols));
      const int j = static_cast<int>(idx - static_cast<std::size_t>(i) * cols);
      blk = scaled_detail::scale_index(p, i, j);
      v = __float_as_uint(fabsf(x[idx]));
    }
    const long long lead = __shfl_sync(0xffffffffu, blk, 0);
    if (__all_sync(0xffffffffu, !valid || blk == lead)) {
      for (int o = 16; o > 0; o >>= 1) v = max(v, __shfl_down_sync(0xffffffffu, v, o));
      if ((threadIdx.x & 31) == 0 && lead >= 0) atomicMax(amax_bits + lead, v);
    } else if (valid) {
      atomicMax(amax_bits + blk, v);
    }
  }
}

__global__ void scale_kernel(const unsigned* __restrict__ amax_bits, scaled_detail::QuantPlan p, int count,
                             float* __restrict__ scales, int* __restrict__ first_bad) {
  const int b = blockIdx.x * blockDim.x + threadIdx.x;
  if (b >= count) return;
  int problem = 0;
  const double s = scaled_detail::block_scale(static_cast<double>(__uint_as_float(amax_bits[b])), p, &problem);
  scales[b] = static_cast<float>(s);  // exact: s is an fp32 value (0 where there is a problem)
  if (problem) atomicMin(first_bad, b);
}

__global__ void quantize_kernel(const float* __restrict__ x, const float* __restrict__ scales,
                                scaled_detail::QuantPlan p, int cols, std::size_t n, float* __restrict__ q) {
  for (std::size_t idx = blockIdx.x * static_cast<std::size_t>(blockDim.x) + threadIdx.x; idx < n;
       idx += static_cast<std::size_t>(gridDim.x) * blockDim.x) {
    const int i = static_cast<int>(idx / static_cast<std::size_t>(cols));
    const int j = static_cast<int>(idx - static_cast<std::size_t>(i) * cols);
    const double s = scales[scaled_detail::scale_index(p, i, j)];
    q[idx] = static_cast<float>(scaled_detail::quantize_entry(x[idx], s, p));  // exact: an fp8 value
  }
}

__global__ void dequantize_kernel(const float* __restrict__ q, const float* __restrict__ scales,
                                  scaled_detail::QuantPlan p, int cols, std::size_t n, double* __restrict__ out) {
  for (std::size_t idx = blockIdx.x * static_cast<std::size_t>(blockDim.x) + threadIdx.x; idx < n;
       idx += static_cast<std::size_t>(gridDim.x) * blockDim.x) {
    const int i = static_cast<int>(idx / static_cast<std::size_t>(cols));
    const int j = static_cast<int>(idx - static_cast<std::size_t>(i) * cols);
    out[idx] = __dmul_rn(static_cast<double>(q[idx]), static_cast<double>(scales[scaled_detail::scale_index(p, i, j)]));
  }
}

using Scratch = DeviceScratch;  // kernels/common/cuda_check.cuh

}  // namespace

void quantize_gpu(const float* device_source, Operand which, ScaleGranularity g, Format fp8, bool ue8m0, int rows,
                  int cols, float* device_q, float* device_scales, void* stream) {
  const scaled_detail::QuantPlan p = quant_plan(which, g, fp8, ue8m0, rows, cols);
  const int count = grid_rows(p, rows) * p.grid_cols;
  const std::size_t n = static_cast<std::size_t>(rows) * cols;
  auto s = static_cast<cudaStream_t>(stream);
  Scratch amax(count * sizeof(unsigned)), bad(sizeof(int));
  auto* amax_bits = static_cast<unsigned*>(amax.p);
  auto* first_bad = static_cast<int*>(bad.p);
  const int none = INT_MAX;
  GEMMLAB_CUDA_CHECK(cudaMemsetAsync(amax_bits, 0, count * sizeof(unsigned), s));
  GEMMLAB_CUDA_CHECK(cudaMemcpyAsync(first_bad, &none, sizeof none, cudaMemcpyHostToDevice, s));
  amax_kernel<<<blocks_for(n), kThreads, 0, s>>>(device_source, p, cols, n, amax_bits);
  GEMMLAB_LAUNCH_CHECK("amax_kernel");
  scale_kernel<<<(count + kThreads - 1) / kThreads, kThreads, 0, s>>>(amax_bits, p, count, device_scales, first_bad);
  GEMMLAB_LAUNCH_CHECK("scale_kernel");
  int bad_block = none;
  GEMMLAB_CUDA_CHECK(cudaMemcpyAsync(&bad_block, first_bad, sizeof bad_block, cudaMemcpyDeviceToHost, s));
  GEMMLAB_CUDA_CHECK(cudaStreamSynchronize(s));
  if (bad_block != none) {
    unsigned bits = 0;
    GEMMLAB_CUDA_CHECK(cudaMemcpy(&bits, amax_bits + bad_block, sizeof bits, cudaMemcpyDeviceToHost));
    float a = 0;
    std::memcpy(&a, &bits, sizeof a);
    int problem = 0;
    scaled_detail::block_scale(a, p, &problem);
    throw std::invalid_argument(
        scale_problem_message(problem, which, g, bad_block / p.grid_cols, bad_block % p.grid_cols, a));
  }
  quantize_kernel<<<blocks_for(n), kThreads, 0, s>>>(device_source, device_scales, p, cols, n, device_q);
  GEMMLAB_LAUNCH_CHECK("quantize_kernel");
}

void dequantize_gpu(const float* device_q, const float* device_scales, Operand which, ScaleGranularity g, Format fp8,
                    bool ue8m0, int rows, int cols, double* device_out, void* stream) {
  const scaled_detail::QuantPlan p = quant_plan(which, g, fp8, ue8m0, rows, cols);
  const std::size_t n = static_cast<std::size_t>(rows) * cols;
  if (n == 0) return;
  dequantize_kernel<<<blocks_for(n), kThreads, 0, static_cast<cudaStream_t>(stream)>>>(device_q, device_scales, p, cols,
                                                                                       n, device_out);
  GEMMLAB_LAUNCH_CHECK("dequantize_kernel");
}

}  // namespace gemmlab::device
