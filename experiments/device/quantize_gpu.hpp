// Scaled fp8 quantization on the GPU (reference/scaled_fp8.hpp's recipes), bit for bit the CPU's
// quantize(): the block scale and the per-entry rounding are reference/scaled_fp8_entry.hpp's
// functions compiled for the device, and a block's amax (a maximum of magnitudes) is exact in any
// order of reduction.
//
// Plain C++ header: device data is passed as raw pointers to memory of the current GPU, a stream as
// void* (a cudaStream_t; nullptr is the legacy default stream).
#pragma once
#include "reference/distributions.hpp"
#include "reference/formats.hpp"
#include "reference/scaled_fp8.hpp"

namespace gemmlab::device {

// Quantizes the (rows, cols) row-major fp32 source at device_source under granularity g: writes
// the fp8 values as floats (row-major, exact) to device_q and the (grid_rows, grid_cols) row-major
// fp32 scales (quant_plan's grid) to device_scales. Synchronises the stream to check the scales:
// throws std::invalid_argument with scale_problem_message's text for the first block (in grid
// order) without a usable scale, as quantize() does; device_q is then not written. CUDA errors
// throw std::runtime_error.
void quantize_gpu(const float* device_source, Operand which, ScaleGranularity g, Format fp8, bool ue8m0, int rows,
                  int cols, float* device_q, float* device_scales, void* stream = nullptr);

// The dequantized operand s q as binary64 values, (rows, cols) row-major at device_out, from
// quantize_gpu's fp8 values (device_q) and scale grid (device_scales) under the same granularity:
// bit for bit ScaledOperand::dequantized() (one binary64 product of a 4-bit and a 24-bit
// significand: exact). CUDA errors throw std::runtime_error.
void dequantize_gpu(const float* device_q, const float* device_scales, Operand which, ScaleGranularity g, Format fp8,
                    bool ue8m0, int rows, int cols, double* device_out, void* stream = nullptr);

}  // namespace gemmlab::device
