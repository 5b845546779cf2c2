// The tensors a quantized kernel is given (reference/quantized.hpp's operands), in the layouts the
// frameworks use, so that a callable passes them on unchanged:
//
//   operand A (M, K)                           operand B (K, N)
//   mxfp8_e4m3/e5m2  A (M, K) float8           B (K, N) float8
//     a_scale (M, K/32) uint8 E8M0              b_scale (N, K/32) uint8 E8M0     (tl.dot_scaled's)
//   mxfp6_e2m3/e3m2  A (M, K) uint8, the 6-bit code in the low bits; scales as mxfp8
//   mxfp4            A (M, K/2) uint8           B (K/2, N) uint8: two e2m1 codes per byte along K, the
//                    even k in the low nibble (tl.dot_scaled's packing, torch.float4_e2m1fn_x2's order);
//                    scales as mxfp8
//   nvfp4            elements as mxfp4; a_scale (M, K/16), b_scale (N, K/16) float8_e4m3fn (ue4m3: sign
//                    bit 0); a_tensor_scale, b_tensor_scale: Python floats (the fp32 tensor scales)
//   int8_rowwise     A (M, K) int8, a_scale (M,) float32       B (K, N) int8, b_scale (N,) float32
//                    (torch._int_mm(A, B) gives the int32 sum; C = sum * a_scale[:, None] * b_scale)
//   int4_gG          A (M, K/2) uint8, B (K/2, N) uint8: two int4 codes (two's complement) per byte along
//                    K, the even k in the low nibble; a_scale (M, K/G) bfloat16, b_scale (K/G, N) bfloat16
//   uint4_gG         elements as int4_gG with uint4 codes 0..15; scales as int4_gG, and a_zero / b_zero of
//                    the same shapes (bfloat16): w = (q - 8) scale + zero. For B these are
//                    torch.ops.aten._weight_int4pack_mm's scales_and_zeros = stack([b_scale, b_zero], -1)
//   bf16, fp16       the plain operand (M, K) / (K, N), no scale
// Every tensor is contiguous (row-major in the shapes above). Values are exact (codes of the quantized
// values); the scale grids are QuantizedOperand's, B's block scales transposed to (N, K/block) for MX and
// NVFP4 (dot_scaled's rhs_scale) and kept (K/G, N) for int4 (the weight-only kernels').
//
// Plain C++ (no CUDA header); the GPU packs the same bytes (experiments/device/quantized_gpu.hpp).
#pragma once
#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "reference/quantized.hpp"

namespace gemmlab {

// The element type of a kernel-facing tensor (a float8 tensor crosses DLPack as its uint8 bytes).
enum class TensorType { u8, i8, f32, bf16, fp16, e4m3, e5m2 };
const char* to_string(TensorType t);  // "uint8", "int8", "float32", "bfloat16", "float16", "float8_e4m3fn", "float8_e5m2"
std::size_t bytes_of(TensorType t);

struct TensorLayout {
  TensorType type = TensorType::u8;
  int ndim = 0;  // 0: absent
  int rows = 0, cols = 0;  // ndim 1: rows only
  std::size_t count() const { return ndim == 0 ? 0 : static_cast<std::size_t>(rows) * (ndim == 2 ? cols : 1); }
  std::size_t bytes() const { return count() * bytes_of(type); }
  bool present() const { return ndim > 0; }
};

// The tensors of one operand: its elements, block scales and zeros (absent where the spec has none), and
// whether it has a tensor scale.
struct KernelOperandLayout {
  TensorLayout elements, scales, zeros;
  bool tensor_scale = false;
};

// The layouts of operand `which` (rows, cols) under spec. Throws std::invalid_argument as quant_plan does
// (K not a multiple of the block; an odd K for packed 4-bit elements).
KernelOperandLayout kernel_layout(const QuantSpec& spec, Operand which, int rows, int cols);

// The bytes of each tensor of a quantized operand (row-major, little-endian), as the GPU packs them.
std::vector<std::uint8_t> kernel_elements(const QuantizedOperand& op);
std::vector<std::uint8_t> kernel_block_scales(const QuantizedOperand& op);
std::vector<std::uint8_t> kernel_zeros(const QuantizedOperand& op);

// The operand a kernel was given, from its tensors' bytes in the layouts above (tensors a user made: a kernel's
// quantized weights, a framework's quantizer's output), checked before anything uses them. Throws
// std::invalid_argument naming the tensor, what is wrong and what to do: a tensor of the wrong size (a packed
// tensor of the wrong shape), an element that is NaN or infinite (e4m3's 0x7F, e5m2's), a code beyond a 6-bit
// element's range, a block scale that is NaN, infinite, zero or negative (E8M0's 0xFF, ue4m3's 0x7F, 0 or a set
// sign bit), a zero that is not finite, a tensor scale that is not finite and positive, a K the spec's blocks do
// not divide, or a uint4 value (q - 8) s + z that is not exact in binary64.
QuantizedOperand decode_kernel_tensors(const QuantSpec& spec, Operand which, int rows, int cols,
                                       const std::vector<std::uint8_t>& elements, const std::vector<std::uint8_t>& scales,
                                       const std::vector<std::uint8_t>& zeros, double tensor_scale = 1.0);

// How the values of a spec's elements, scales and zeros are encoded (quantized_entry.hpp's encode).
quant_detail::Code element_code(const QuantSpec& spec);
quant_detail::Code scale_code(const QuantSpec& spec);

}  // namespace gemmlab
