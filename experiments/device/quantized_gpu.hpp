// Quantized recipes on the GPU (reference/quantized_recipe.hpp), bit for bit the CPU's quantize() and
// make_quantized_problem(): the sources generated there (generate_gpu), the scales and elements by
// reference/quantized_entry.hpp's functions compiled for the device, a block's amax, min and max exact
// in any order; the dequantized operands (binary64) beside them, from which exact_gemm_gpu_device makes
// the exact reference of what a kernel was given.
//
// Plain C++ header: device memory is owned by the objects below (freed with them); a stream travels as
// void* (nullptr: the legacy default stream).
#pragma once
#include <array>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "reference/distributions.hpp"
#include "reference/quantized.hpp"
#include "reference/quantized_layout.hpp"

namespace gemmlab::device {

// One operand quantized on the current GPU.
class QuantizedDeviceOperand {
 public:
  QuantizedDeviceOperand();
  ~QuantizedDeviceOperand();
  QuantizedDeviceOperand(QuantizedDeviceOperand&&) noexcept;
  QuantizedDeviceOperand& operator=(QuantizedDeviceOperand&&) noexcept;

  QuantSpec spec;
  Operand which = Operand::A;
  int rows = 0, cols = 0;
  quant_detail::QuantPlan plan;
  int grid_rows = 0, grid_cols = 0;
  double tensor_scale = 1.0;  // nvfp4's t; 1 otherwise

  // Device arrays, valid while this object lives: (rows, cols) row-major element values (float: every
  // element format's values are floats) and dequantized values (binary64, exact); the (grid_rows,
  // grid_cols) row-major scales and (uint4) zeros as floats (every scale format's values are floats).
  const float* q() const;
  const double* dequantized() const;
  const float* scales() const;
  const float* zeros() const;  // nullptr without zeros

  // Host copies (for tests and for a kernel's scale layouts).
  QuantizedOperand to_host() const;

  struct Buffers;
  std::unique_ptr<Buffers> buffers;
};

// Quantizes the (rows, cols) row-major fp32 source at device_source under spec. Synchronises the stream to
// check the scales: throws std::invalid_argument with quant_problem_message's text for the first block (in
// grid order; NVFP4's tensor scale first) without a usable scale, as quantize() does (and quant_plan's
// refusal of a K that is not a multiple of the block). CUDA errors throw std::runtime_error.
QuantizedDeviceOperand quantize_gpu(const float* device_source, Operand which, const QuantSpec& spec, int rows, int cols,
                                    void* stream = nullptr);

// The operand's tensors in the kernel layouts (reference/quantized_layout.hpp), bit for bit kernel_elements,
// kernel_block_scales and kernel_zeros, written to device memory of the layouts' sizes (scales and zeros
// nullptr where the layout has none). Asynchronous on the stream.
void pack_kernel_tensors_gpu(const QuantizedDeviceOperand& op, void* elements, void* scales, void* zeros,
                             void* stream = nullptr);

// Whether every dequantized value of the operand is a value of f (synchronises).
bool all_representable_gpu(const QuantizedDeviceOperand& op, Format f);

// gemmlab explain's probes in a quantized kernel's tensors: an operand of unit scales (every scale 1, NVFP4's
// tensor scale 1, uint4's zeros 0) whose elements set_unit_scale_values_gpu writes, so that its dequantized
// operand is the probes' values exactly (quantized_entry.hpp unit_scale_element). No dequantized array is kept
// (dequantized() is null); pack_kernel_tensors_gpu packs it as any operand.
QuantizedDeviceOperand unit_scale_operand_gpu(Operand which, const QuantSpec& spec, int rows, int cols);
// Its elements from `values`, (rows, cols) row-major binary64 on the GPU. A value no element holds at unit scale
// sets *bad (a device int) to 1 and leaves the nearest element. Asynchronous on the stream.
void set_unit_scale_values_gpu(QuantizedDeviceOperand& op, const double* values, int* bad, void* stream = nullptr);

// An int8 rowwise kernel whose scales are on the output: how many of its outputs each candidate epilogue of
// quantized_entry.hpp (epilogue_candidates) predicts wrong, from its fp32 output widened to binary64 (x, (M, N)),
// the exact reference of the dequantized operands (c = RN64(sa sb S), from which S = rint(c / (sa sb)) is exact for
// |S| < 2^51) and the fp32 row and column scales. Synchronises.
std::array<long long, quant_detail::kEpilogueCandidates> epilogue_mismatches_gpu(const double* x, const double* c,
                                                                                 const float* scale_a,
                                                                                 const float* scale_b, int M, int N);

// A whole problem, bit for bit make_quantized_problem: the fp32 sources A0, B0 (kept on the GPU, the
// total error's reference operands) and both operands quantized, A before B.
struct QuantizedDeviceProblem {
  int M = 0, N = 0, K = 0;
  QuantRecipe recipe;
  std::shared_ptr<float> A0, B0;  // device memory
  QuantizedDeviceOperand A, B;
};
QuantizedDeviceProblem make_quantized_problem_gpu(const Distribution& d, int M, int N, int K, std::uint64_t seed);

}  // namespace gemmlab::device
