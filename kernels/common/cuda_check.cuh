// Error checking for CUDA and cuBLAS calls: every call is checked, and every launch is followed by
// a check of the last error. Failures throw std::runtime_error naming the call and the location.
#pragma once
#include <cublas_v2.h>
#include <cuda_runtime.h>

#include <cstddef>
#include <stdexcept>
#include <string>

namespace gemmlab {

[[noreturn]] inline void cuda_fail(cudaError_t e, const char* what, const char* file, int line) {
  throw std::runtime_error(std::string("CUDA error ") + cudaGetErrorName(e) + " (" + cudaGetErrorString(e) +
                           ") in " + what + " at " + file + ":" + std::to_string(line));
}

[[noreturn]] inline void cublas_fail(cublasStatus_t s, const char* what, const char* file, int line) {
  throw std::runtime_error(std::string("cuBLAS error ") + cublasGetStatusName(s) + " (" +
                           cublasGetStatusString(s) + ") in " + what + " at " + file + ":" + std::to_string(line));
}

}  // namespace gemmlab

#define GEMMLAB_CUDA_CHECK(call)                                                   \
  do {                                                                             \
    cudaError_t gemmlab_err_ = (call);                                             \
    if (gemmlab_err_ != cudaSuccess) ::gemmlab::cuda_fail(gemmlab_err_, #call, __FILE__, __LINE__); \
  } while (0)

// After a <<<...>>> launch: catches bad configurations and missing kernel images at once.
#define GEMMLAB_LAUNCH_CHECK(name)                                                 \
  do {                                                                             \
    cudaError_t gemmlab_err_ = cudaGetLastError();                                 \
    if (gemmlab_err_ != cudaSuccess) ::gemmlab::cuda_fail(gemmlab_err_, name, __FILE__, __LINE__); \
  } while (0)

#define GEMMLAB_CUBLAS_CHECK(call)                                                 \
  do {                                                                             \
    cublasStatus_t gemmlab_st_ = (call);                                           \
    if (gemmlab_st_ != CUBLAS_STATUS_SUCCESS) ::gemmlab::cublas_fail(gemmlab_st_, #call, __FILE__, __LINE__); \
  } while (0)

namespace gemmlab {
inline cudaStream_t as_stream(void* s) { return static_cast<cudaStream_t>(s); }

// One device allocation of at least one byte for the length of a scope (a kernel's flags, counters or
// temporary arrays), freed when the scope ends, however it ends.
struct DeviceScratch {
  void* p = nullptr;
  explicit DeviceScratch(std::size_t bytes) { GEMMLAB_CUDA_CHECK(cudaMalloc(&p, bytes > 0 ? bytes : 1)); }
  ~DeviceScratch() { cudaFree(p); }
  DeviceScratch(const DeviceScratch&) = delete;
  DeviceScratch& operator=(const DeviceScratch&) = delete;
};
}  // namespace gemmlab
