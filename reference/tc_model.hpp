// A bit-exact CPU model of one tensor-core instruction's dot-product-accumulate
//   d = c + sum_{i<k} a_i * b_i
// parametrised after Fasi et al. (2021) and Khattak & Mikaitis (2025): products are exact; the
// products of one block (and C, if it joins) are aligned to the largest exponent of the block,
// keeping F = (p_out - 1) + neab fraction bits below it; bits shifted out are rounded as
// `align_rounding` says; the aligned terms are summed exactly (carries kept); the sum is normalised
// once and rounded to the output format (`output_rounding`). Blocks of `block_size` products chain:
// each block's rounded result is the C of the next block.
//
// Four refinements cover what Hopper's fp8 and subnormal results showed (results/probes/README.md):
// - result_fraction_bits: the normalised block result is cut to this many fraction bits before it
//   is written (MMA-Sim's "e8m13" fp32 result of fp8 wgmma: 13), with the output's exponent range;
// - zero_c_offset: a zero C still takes part in the alignment, with the exponent
//   emin_out - zero_c_offset, so the aligned sum's quantum never falls below
//   2^(emin_out - zero_c_offset - F) (seen with tf32 sums far below fp32's normal range);
// - step_interleave and c_entry: how the k products are dealt to the blocks (contiguous, or in
//   groups of g indices round robin), and whether C enters the first block or is added at the end
//   by one round-to-nearest addition in the output format (the blocks then start from +0), as
//   nvcc's sm_90 code for fp8 mma.sync does (two fp16 HMMA.16816 steps, then FADD);
// - operand_conversion: operands converted (exactly) to another format before the multiply, which
//   sets the exponents a product is aligned by (fp8 mma.sync on sm_90 runs through fp16).
//
// Plain C++ (no CUDA header). Values travel as doubles: every value of every input and output
// format is exact in a double, and the model never rounds through a double (the aligned sums are
// exact __int128 fixed-point numbers).
#pragma once
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "reference/formats.hpp"

namespace gemmlab::tc {

// Alignment and output rounding use gemmlab's one rounding vocabulary, Rounding (formats.hpp):
// alignment rounds the bits shifted out toward_zero (truncate the magnitude: sign-magnitude
// datapath), floor (two's-complement truncation) or nearest_even; the normalised sum is written
// toward_zero or nearest_even. `unknown` is not a model parameter.
// The exponent a product is aligned by: the sum of its inputs' exponents (significand of the
// product in [1, 4), as a multiplier array produces it) or the exponent of its exact value.
enum class AlignReference { exponent_sum, value_exponent };

// Where C enters: as the C of the first block (aligned with its products when c_in_alignment), or
// after the chain of blocks (which then starts from +0) by one addition rounded to nearest even in
// the output format.
enum class CEntry { first_block, final_add };

const char* to_string(AlignReference r);
const char* to_string(CEntry c);

struct TcParams {
  Format input = Format::fp16;
  Format output = Format::fp32;
  int block_size = 16;            // products per fused addition before a rounding
  int neab = 2;                   // extra alignment bits: F = p_out - 1 + neab fraction bits kept
  Rounding align_rounding = Rounding::toward_zero;
  Rounding output_rounding = Rounding::toward_zero;
  AlignReference align_reference = AlignReference::exponent_sum;
  bool c_in_alignment = true;     // C is aligned (and truncated) with the block's products;
                                  // false: C is added exactly to the block's aligned sum
  bool subnormal_inputs = true;   // false: subnormal a_i, b_i are flushed to zero
  bool subnormal_output = true;   // false: subnormal C is read as zero and subnormal results flush
  int result_fraction_bits = -1;  // >= 0: the normalised block result is cut (output_rounding) to this
                                  // many fraction bits; -1: the output format's own (p_out - 1)
  int zero_c_offset = -1;         // >= 0: a zero C joins the alignment with exponent emin_out - offset;
                                  // -1: a zero C takes no part
  int step_interleave = 0;        // 0: block j takes products [j bs, (j+1) bs); g > 0: index i goes to
                                  // block (i / g) mod (k / bs)
  CEntry c_entry = CEntry::first_block;
  std::optional<Format> operand_conversion;  // operands converted to this format before the multiply

  int fraction_bits() const;      // F
  std::string describe() const;   // one line, for tables and test messages
  bool operator==(const TcParams&) const = default;
};

// Format facts (precision, exponent range, bit patterns) come from reference/formats.hpp.

// Rounding of a double into a format (exact value in, rounded value out); subnormals kept unless
// `subnormals` is false (then flushed to signed zero). For input preparation and tests.
double round_to_format(Format f, double x, Rounding mode, bool subnormals = true);
bool representable(Format f, double x);

// One instruction: a (k) and b (k) in the input format, c in the output format.
double dot(const TcParams& p, const double* a, const double* b, int k, double c);

// The instructions gemmlab probes.
enum class Instruction {
  mma_m16n8k16_f16_f32,
  mma_m16n8k16_f16_f16,
  mma_m16n8k16_bf16_f32,
  mma_m16n8k8_tf32_f32,
  mma_m16n8k32_e4m3_f32,
  mma_m16n8k32_e5m2_f32,
  // sm_90a warpgroup instructions, smallest N, fp32 accumulators; operands from shared memory.
  // One output row is the same k-term dot product as mma.sync's, so the same probes apply.
  wgmma_m64n8k16_f16_f32,
  wgmma_m64n8k16_bf16_f32,
  wgmma_m64n8k8_tf32_f32,
  wgmma_m64n8k32_e4m3_f32,
  wgmma_m64n8k32_e5m2_f32,
  // nvcuda::wmma 16x16x16 fp16 -> fp32 (the API of the published tensor-core tests).
  wmma_m16n16k16_f16_f32,
};
struct InstructionInfo {
  Instruction id;
  const char* name;   // CSV `instruction`
  Format input, output;
  int m, n, k;
  int min_cc;       // compute capability needed (90: the sm_90a wgmma instructions)
};
const InstructionInfo& info(Instruction i);
const std::vector<Instruction>& all_instructions();
std::optional<Instruction> parse_instruction(const std::string& name);

// The parameters `gemmlab probe` inferred on Hopper (H100 and H200 alike; results/probes/README.md,
// "What the probes found"): every fp16/bf16 -> fp32 instruction: block 16, neab 2 (25 fraction
// bits), alignment and output truncated toward zero (magnitude), alignment by exponent sum, C
// joins the alignment (a zero C at emin_out - 7 where that can be seen), subnormals kept; fp16 -> fp16: the same 25
// fraction bits (neab 15), output rounded to nearest even; tf32: block 8; fp8 wgmma: one block of
// 32 at 13 fraction bits, result cut to 13 fraction bits; fp8 mma.sync (sm_90): two fp16 mma steps
// over interleaved pairs of k, then C added by one fp32 round-to-nearest addition. wgmma and wmma
// fp16/bf16 share mma.sync's model.
std::optional<TcParams> measured_hopper_params(Instruction i);

// D = A B + C on one tile: A (m, k) row-major, B (k, n) row-major, C and D (m, n) row-major.
std::vector<double> mma_tile(const TcParams& p, const InstructionInfo& ins, const std::vector<double>& A,
                             const std::vector<double>& B, const std::vector<double>& C);

}  // namespace gemmlab::tc
