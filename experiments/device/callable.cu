// Run-time kernels from host callbacks (see callable.hpp).
#include "experiments/device/callable.hpp"
#include "experiments/device/device_free.hpp"

#include <cuda_runtime.h>

#include <algorithm>
#include <vector>

#include "experiments/device/inputs_gpu.hpp"
#include "kernels/common/cuda_check.cuh"

namespace gemmlab {
namespace {

const CallableKernel& state(const GemmArgs& a) { return *static_cast<const CallableKernel*>(a.context); }
void launch_trampoline(const GemmArgs& a) { state(a).launch(a); }
void collect_trampoline(const GemmArgs& a) {
  if (state(a).collect) state(a).collect(a);
}

template <class T>
__global__ void copy_strided_kernel(const T* __restrict__ src, int rows, int cols, long long s0, long long s1,
                                    T* __restrict__ dst) {
  const std::size_t n = static_cast<std::size_t>(rows) * cols;
  for (std::size_t idx = blockIdx.x * static_cast<std::size_t>(blockDim.x) + threadIdx.x; idx < n;
       idx += static_cast<std::size_t>(gridDim.x) * blockDim.x) {
    const long long i = static_cast<long long>(idx / cols), j = static_cast<long long>(idx % cols);
    dst[idx] = src[i * s0 + j * s1];
  }
}

}  // namespace

std::unique_ptr<CallableKernel> make_callable_kernel(std::string name, std::string family, std::string description,
                                                     const Numerics& numerics, Layout a, Layout b,
                                                     std::function<void(const GemmArgs&)> launch,
                                                     std::function<void(const GemmArgs&)> collect) {
  auto ck = std::make_unique<CallableKernel>();
  ck->name = std::move(name);
  ck->family = std::move(family);
  ck->description = std::move(description);
  ck->launch = std::move(launch);
  ck->collect = std::move(collect);
  Kernel& k = ck->kernel;
  k.name = ck->name.c_str();
  k.family = ck->family.c_str();
  k.description = ck->description.c_str();
  k.numerics = numerics;
  k.layout_a = a;
  k.layout_b = b;
  k.m_multiple = k.n_multiple = k.k_multiple = 1;
  k.min_cc = 0;
  k.requires_sm90a = false;
  k.workspace_bytes = 0;
  k.launch = launch_trampoline;
  k.context = ck.get();
  k.collect = ck->collect ? collect_trampoline : nullptr;
  return ck;
}

namespace device {

float* generate_owned(const Distribution& d, Operand which, int rows, int cols, Format fmt, std::uint64_t seed) {
  float* p = nullptr;
  GEMMLAB_CUDA_CHECK(cudaMalloc(&p, std::max<std::size_t>(1, static_cast<std::size_t>(rows) * cols) * sizeof(float)));
  try {
    generate_gpu(d, which, rows, cols, fmt, seed, p, nullptr);
    GEMMLAB_CUDA_CHECK(cudaDeviceSynchronize());
  } catch (...) {
    device_free(p);
    throw;
  }
  return p;
}

void free_owned(void* p) noexcept { device_free(p); }

int* upload_ints(const std::vector<int>& values) {
  int* p = nullptr;
  GEMMLAB_CUDA_CHECK(cudaMalloc(&p, std::max<std::size_t>(1, values.size()) * sizeof(int)));
  if (!values.empty()) {
    const cudaError_t e = cudaMemcpy(p, values.data(), values.size() * sizeof(int), cudaMemcpyHostToDevice);
    if (e != cudaSuccess) {
      device_free(p);
      GEMMLAB_CUDA_CHECK(e);
    }
  }
  return p;
}

void copy_strided(const void* src, std::size_t elem_bytes, int rows, int cols, long long s0, long long s1, void* dst,
                  void* stream) {
  const auto s = static_cast<cudaStream_t>(stream);
  const std::size_t n = static_cast<std::size_t>(rows) * cols;
  if (n == 0) return;
  if (s1 == 1 && s0 == cols) {  // already row-major contiguous
    GEMMLAB_CUDA_CHECK(cudaMemcpyAsync(dst, src, n * elem_bytes, cudaMemcpyDeviceToDevice, s));
    return;
  }
  const unsigned blocks = static_cast<unsigned>(std::min<std::size_t>((n + 255) / 256, 65535));
  if (elem_bytes == 4)
    copy_strided_kernel<<<blocks, 256, 0, s>>>(static_cast<const unsigned*>(src), rows, cols, s0, s1,
                                               static_cast<unsigned*>(dst));
  else if (elem_bytes == 2)
    copy_strided_kernel<<<blocks, 256, 0, s>>>(static_cast<const unsigned short*>(src), rows, cols, s0, s1,
                                               static_cast<unsigned short*>(dst));
  else
    copy_strided_kernel<<<blocks, 256, 0, s>>>(static_cast<const unsigned char*>(src), rows, cols, s0, s1,
                                               static_cast<unsigned char*>(dst));
  GEMMLAB_LAUNCH_CHECK("copy_strided");
}

void synchronize(void* stream) { GEMMLAB_CUDA_CHECK(cudaStreamSynchronize(static_cast<cudaStream_t>(stream))); }

}  // namespace device
}  // namespace gemmlab
