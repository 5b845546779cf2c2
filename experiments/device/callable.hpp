// Kernels defined at run time by host callbacks: a Python callable judged through gemmlab.judge
// (python/bindings_gpu.cpp) becomes a Kernel descriptor like any built-in one, so that the run loop,
// its journal, the GPU reference and statistics and the timing helper treat it the same way.
//
// Plain C++ header (no CUDA types).
#pragma once
#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <stdexcept>
#include <string>
#include <vector>

#include "kernels/kernel.hpp"
#include "reference/distributions.hpp"

namespace gemmlab {

// What a callable returned is not C (None, not a tensor, another shape, dtype or device): the
// callable's failure whatever the schedule (explain stops at it even under a perturbation).
struct CallableOutputError : std::runtime_error {
  using std::runtime_error::runtime_error;
};

struct CallableKernel {
  std::string name, family, description;
  // Enqueues (or runs) C = A B for the arguments, on args.stream. Throws std::runtime_error.
  std::function<void(const GemmArgs&)> launch;
  // Optional: moves an output the callable returned into args.C (outside the timed region).
  std::function<void(const GemmArgs&)> collect;
  std::string quantized;  // a quantized callable's recipe (Kernel::quantized points here)
  Kernel kernel{};  // its strings and context point into this object: keep it where it is
};

// A descriptor for `numerics` with operands in layouts a and b, any M, N, K, no workspace, no
// compute-capability floor (the callable checks its own GPU).
std::unique_ptr<CallableKernel> make_callable_kernel(std::string name, std::string family, std::string description,
                                                     const Numerics& numerics, Layout a, Layout b,
                                                     std::function<void(const GemmArgs&)> launch,
                                                     std::function<void(const GemmArgs&)> collect);

namespace device {
// An operand of distribution d as gemmlab run makes it (inputs_gpu.hpp generate_gpu), in fresh
// device memory of the current GPU that the caller frees with free_owned.
float* generate_owned(const Distribution& d, Operand which, int rows, int cols, Format fmt, std::uint64_t seed);
void free_owned(void* p) noexcept;
// The values as int32 in fresh device memory of the current GPU (a grouped form's row ends for a callable),
// freed with free_owned.
int* upload_ints(const std::vector<int>& values);

// Copies a (rows, cols) matrix of elem_bytes-byte elements (2 or 4) whose element (i, j) is at
// src + (i s0 + j s1) elements (a DLPack tensor's strides) into row-major contiguous dst, on stream.
// Throws std::runtime_error on a CUDA error.
void copy_strided(const void* src, std::size_t elem_bytes, int rows, int cols, long long s0, long long s1, void* dst,
                  void* stream);
// Waits on the host for everything enqueued on `stream` (a cudaStream_t). Throws std::runtime_error
// on a CUDA error.
void synchronize(void* stream);
}  // namespace device

}  // namespace gemmlab
