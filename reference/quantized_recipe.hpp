// Quantized recipes: how a distribution's fp32 source operands A0 (M, K), B0 (K, N) become the
// quantized operands the matmuls of quantized models read (reference/quantized.hpp quantizes them;
// reference/distributions.hpp carries a recipe after '@', as it carries scaled fp8's).
//
// A recipe gives each operand a spec; the distribution's name is SOURCE@RECIPE with
//   RECIPE  SPEC            both operands quantized alike, e.g. normal_0_1@mxfp4
//           SPEC_x_SPEC     A's spec, then B's, e.g. normal_0_1@mxfp4_x_bf16, uniform_-1_1@bf16_x_uint4_g128
// and the specs (every block runs along K: along a row of A, along a column of B):
//   mxfp8_e4m3, mxfp8_e5m2, mxfp6_e2m3, mxfp6_e3m2, mxfp4
//           OCP Microscaling (MX) v1.0: blocks of 32 elements (e4m3, e5m2, e2m3, e3m2, e2m1) sharing
//           one E8M0 scale 2^e, e = floor(log2 amax) - emax_elem (the spec's rule; emax_elem: 8, 15, 2,
//           4, 2), elements RN(x / 2^e) saturated to the element's largest value
//   nvfp4   NVIDIA's NVFP4: blocks of 16 e2m1 elements, a ue4m3 scale per block and one fp32 scale per
//           operand: t = RN_fp32(amax / (448 6)), b = RN_ue4m3(amax_block / (6 t)), q = RN_e2m1(x / (b t))
//   int8_rowwise
//           int8 with one fp32 scale per row of A, per column of B (torch._int_mm with a dequantizing
//           epilogue): s = RN_fp32(amax / 127), q = RN_int(x / s) in [-127, 127]
//   int4_gG symmetric int4 with one bf16 scale per group of G along K: s = RN_bf16(amax / 7),
//           q = RN_int(x / s) in [-7, 7]
//   uint4_gG
//           unsigned int4 with a bf16 scale and a bf16 zero per group of G along K, dequantized as
//           (q - 8) s + z (the float-zero form of torchao's int4 weight-only path and
//           torch.ops.aten._weight_int4pack_mm): s = RN_bf16((max - min) / 15), z = RN_bf16(min + 8 s),
//           q = RN_int((x - z) / s) + 8 in [0, 15]
//           G is 32, 64, 128 or 256.
//   bf16, fp16
//           plain: the source rounded to the format, no scale (a weight-only recipe's activations)
// Each quotient above is one binary64 division of the operands named, rounded once (RN: to nearest,
// ties to even) into the target; NVFP4's 6 t and 448 6 are exact. K must be a multiple of every
// block extent (32, 16, G).
//
// Plain C++ (no CUDA header).
#pragma once
#include <string>
#include <string_view>

#include "reference/formats.hpp"

namespace gemmlab {

// How one operand is quantized.
enum class QuantScheme {
  plain,    // rounded to `element` (bf16, fp16), no scale
  mx,       // OCP MX: E8M0 scale per block of 32
  nvfp4,    // ue4m3 scale per block of 16, fp32 scale per operand
  channel,  // int8, fp32 scale per row of A / column of B
  group,    // int4 (symmetric) or uint4 (with a zero), bf16 scale per group of `block` along K
};
const char* to_string(QuantScheme s);

struct QuantSpec {
  QuantScheme scheme = QuantScheme::plain;
  Format element = Format::bf16;  // the elements' format (plain: the operand's)
  int block = 0;                  // the extent along K of one scale (mx 32, nvfp4 16, group G); 0: all of K
  std::string name() const;       // "mxfp4", "nvfp4", "int8_rowwise", "uint4_g128", "bf16", ...
  Format scale_format() const;    // ue8m0, ue4m3, fp32 or bf16 (plain: its element format; it has none)
  bool has_zero() const { return scheme == QuantScheme::group && element == Format::uint4; }
  bool operator==(const QuantSpec&) const = default;
};

struct QuantRecipe {
  QuantSpec a, b;
  std::string name() const;  // "mxfp4" when both specs are alike, else "A_x_B"
  bool operator==(const QuantRecipe&) const = default;
};

// Throws std::invalid_argument naming the bad recipe and listing the valid specs.
QuantRecipe parse_quant_recipe(std::string_view name);
QuantSpec parse_quant_spec(std::string_view name);
// Whether `name` (the part after '@') is meant as a quantized recipe rather than a scaled fp8 one:
// it starts with mx, nv, int, uint, or holds "_x_" (parse_distribution routes it by this).
bool is_quant_recipe_name(std::string_view name);

}  // namespace gemmlab
