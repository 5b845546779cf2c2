// gemmlab.evaluate for a product whose operands and output are already on the GPU (torch, CuPy or
// JAX tensors handed over through DLPack, python/bindings_gpu.cpp): the exact reference and the
// statistics on the GPU (bit for bit the CPU engines'), the judgement of evaluated_row, and no host
// copy of any matrix. The CPU path (experiments/engine/evaluate.hpp) gives the same row.
//
// Plain C++ header (no CUDA types).
#pragma once
#include <cstdint>
#include <string>

#include "experiments/engine/evaluate.hpp"
#include "reference/formats.hpp"

namespace gemmlab::device {

// A (rows, cols) matrix on the current GPU: element (i, j) at data + (i s0 + j s1) elements, each the
// storage bits of `format` (fp32, tf32 as fp32 bits, fp16, bf16, e4m3, e5m2).
struct DeviceMatrix {
  const void* data = nullptr;
  Format format = Format::fp32;
  int rows = 0, cols = 0;
  long long s0 = 0, s1 = 0;
};

// Converts a DeviceMatrix to row-major fp32 values at dst (rows * cols floats), on `stream`.
// tf32: the fp32 bits as they are (check_tf32 says whether they are tf32 values).
void to_float(const DeviceMatrix& m, float* dst, void* stream);

// Entries of a row-major fp32 matrix that are not values of `format` (a tf32 input with low
// mantissa bits set; NaN or infinity), counted on the GPU.
long long count_unrepresentable(const float* data, std::size_t n, Format format, void* stream);

struct GpuEvaluation {
  ResultRow row;
  double seconds = 0;            // the whole call
  double reference_seconds = 0;  // of which the exact reference and its MPFR spot checks
};

// The row of C ~ A B as the declared kernel computed it. Throws UsageError for shapes or values that
// do not fit (naming them), GpuReferenceUnavailable where the GPU cannot compute the reference
// exactly (the caller falls back to the CPU), std::runtime_error on a CUDA error.
// NaN or infinity in C is refused (UsageError) unless allow_nonfinite (then counted in the row).
GpuEvaluation evaluate_gpu(const DeviceMatrix& A, const DeviceMatrix& B, const DeviceMatrix& C, const Declared& d,
                           int spot_checks, std::uint64_t seed, bool allow_nonfinite, void* stream);

}  // namespace gemmlab::device
