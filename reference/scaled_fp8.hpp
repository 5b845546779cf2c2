// Scaled fp8 inputs as they are trained and served: a high-precision source A0 (M, K), B0 (K, N)
// drawn from any gemmlab distribution in fp32, quantized to e4m3 or e5m2 under a recipe that gives
// each block of an operand its own fp32 dequantization scale s (source x ~ s q, q the fp8 value).
//
// Recipes (the part of a distribution's name after '@', and the CSV's `recipe` column):
//   SOURCE@FMT_GRAN[_ue8m0]     e.g. normal_0_1@e4m3_1x128_128x128, uniform_0_1@e5m2_tensor_ue8m0
//   FMT   e4m3 | e5m2           the fp8 format of both operands
//   GRAN  tensor                one scale per operand (Transformer Engine's per-tensor current scaling)
//         rowwise               one scale per row of A and per column of B (torch._scaled_mm rowwise;
//                               cuBLASLt OUTER_VEC_32F)
//         1x128_128x128         A: one per row and 128 elements of K; B: one per 128 x 128 block
//                               (DeepSeek-V3; cuBLASLt VEC128_32F x BLK128x128_32F)
//         1x128_1x128           one per row (of A) or column (of B) and 128 elements of K, both
//                               (cuBLASLt VEC128_32F x VEC128_32F)
//   _ue8m0                      scales are powers of two (UE8M0, 2^-127 .. 2^127)
// Block extents along K are 128; the last block of K (and of M or N for 128 x 128) may be partial.
//
// Quantization (reference/scaled_fp8_entry.hpp, shared with the GPU): amax = max |x| over the block,
// s = RN_fp32(amax / fmax) (fmax 448 for e4m3, 57344 for e5m2) or, UE8M0, the smallest power of two
// with amax <= s fmax; q = RN_fp8(x / s) saturated to +-fmax. The dequantized operand s q is exact
// in binary64 (a 4-bit times a 24-bit significand), so both exact references of a problem
// (against s_a q_a s_b q_b, the GEMM's own error, and against A0 B0, the total error) come from the
// exact engines as they are.
//
// Rules (what is refused, std::invalid_argument with what was wrong and what to do):
//  * an all-zero block (amax 0): refused. Its scale would be 0 (0 / fmax) and every dequantized
//    value 0 * q; choosing 1 instead (Transformer Engine's rule) would be a scale no quantizer of the
//    data computed. Choose a distribution without all-zero blocks (cancel_E with odd K has a zero
//    last column of A).
//  * a non-finite amax, or a scale that is 0 in fp32 (amax below fmax 2^-150) or outside UE8M0's
//    range: refused.
#pragma once
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "reference/distributions.hpp"
#include "reference/formats.hpp"
#include "reference/matrix.hpp"
#include "reference/scaled_fp8_entry.hpp"

namespace gemmlab {

// Every recipe of one fp8 format (fp32 scales, then UE8M0), in the order the header lists them.
// (ScaleGranularity, ScaleRecipe and parse_recipe are in distributions.hpp: a Distribution carries
// its recipe.)
std::vector<ScaleRecipe> all_recipes(Format fp8);

// The scale grid of operand `which` (rows, cols) under g: (grid_rows, grid_cols) scales, row-major,
// each covering a (block_rows, block_cols) block (the last ones partial).
scaled_detail::QuantPlan quant_plan(Operand which, ScaleGranularity g, Format fp8, bool ue8m0, int rows, int cols);
inline int grid_rows(const scaled_detail::QuantPlan& p, int rows) { return (rows + p.block_rows - 1) / p.block_rows; }

// One quantized operand.
struct ScaledOperand {
  Matrix q;                   // (rows, cols): the fp8 values, as doubles
  scaled_detail::QuantPlan plan;
  int grid_rows = 0, grid_cols = 0;
  std::vector<float> scales;  // (grid_rows, grid_cols) row-major dequantization scales
  double scale_of(int i, int j) const { return scales[static_cast<std::size_t>(scaled_detail::scale_index(plan, i, j))]; }
  Matrix dequantized() const;  // s q per entry, exact in binary64
};

// The message for a block without a usable scale (a scaled_detail::ScaleProblem), naming the operand
// and the block (grid indices gi, gj) and saying what to do.
std::string scale_problem_message(int problem, Operand which, ScaleGranularity g, int gi, int gj, double amax);

// Quantizes the source operand (every value finite; fp32 values as the source is generated).
// Throws std::invalid_argument with scale_problem_message's text for the first block (in row-major
// grid order) that has no usable scale.
ScaledOperand quantize(const Matrix& source, Operand which, ScaleGranularity g, Format fp8, bool ue8m0);

// The scales of an operand as a kernel reads them (GemmArgs::scale_a / scale_b): the layouts of
// cuBLASLt's scale modes, which DeepGEMM's kernels read too (an M-contiguous 1 x 128 grid of A feeds
// a warp's rows from one K block with one load):
//  tensor     one value
//  outer      A: M values; B: N values
//  k128       A (rows M, KB = ceil(K/128) blocks): (i, kb) at kb M + i;  B (K, N): (kb, n) at kb N + n
//  blk128     B (KB, NB = ceil(N/128)): (kb, nb) at nb L4 + kb with L4 = KB rounded up to a multiple of
//             4 (cuBLASLt's padding, PyTorch #166752; the padding holds 0); A likewise with MB blocks
// (PyTorch's description of cuBLASLt's layouts, pytorch/pytorch#166752, in gemmlab's A (M, K), B (K, N).)
std::vector<float> kernel_scales(const ScaledOperand& op, Operand which, ScaleGranularity g);
// The number of floats kernel_scales gives for operand `which` (rows, cols) under g (padding included).
std::size_t kernel_scales_count(Operand which, ScaleGranularity g, int rows, int cols);

// A whole problem of a distribution with a recipe: the sources A0 (M, K), B0 (K, N) of
// d.source() generated in fp32 from `seed`, and both quantized under d.recipe. Throws
// std::invalid_argument for a distribution without a recipe, or quantize()'s refusal.
struct ScaledProblem {
  Matrix A0, B0;
  ScaledOperand A, B;
};
ScaledProblem make_scaled_problem(const Distribution& d, int M, int N, int K, std::uint64_t seed, int threads = 0);

}  // namespace gemmlab
