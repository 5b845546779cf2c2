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
// The special rules (issue 21) are parameters too, inferred from the adversarial corpus
// (reference/tc_corpus.hpp) like every other one, never assumed from IEEE 754:
// - nan_encoding: the one bit pattern a NaN result is written as, whatever the inputs' payloads;
// - overflow: what a finite sum beyond the output's largest finite value becomes;
// - zero_sign: the sign of an exactly zero result;
// - zero_operand_exponent: whether a product with a zero operand takes part in the alignment, and
//   with which exponent for the zero (0 * 2^127 in bf16 can set the block's alignment);
// - tf32_low_bits: how the low 13 bits of a tf32 operand's fp32 container are treated.
// NaN and infinity operands decide D before any arithmetic: any NaN, inf * 0 or inf - inf gives NaN,
// otherwise the infinity (observed on the H100 and H200 for every instruction: probes nan_inf/*).
//
// The fp64 instructions (issue 23) need other candidates than the block-fused datapath, so the
// arithmetic is a parameter too (`arithmetic`, inferred from the probes like the rest):
// - block_fused: the datapath above (exact for binary64 as well: a 106-bit product and the F <= 96
//   fraction bits of its alignment fit the __int128 sums);
// - fma_chain: C, then one IEEE binary64 FMA per product, in increasing or decreasing k
//   (`chain_order`): acc = RN(a_i b_i + acc), MMA-Sim's model of DMMA;
// - fused_sum: C and the products summed exactly and rounded once to nearest even.
// Both take the products in contiguous steps of `block_size` (k: one step), the steps in increasing
// k, each step's result the C of the next: a fused_sum of block 4 over k = 16 is a chain of four
// fused k4 steps, an fma_chain of block 4 in decreasing order runs k = 3, 2, 1, 0, 7, 6, ... (the
// increasing chain is the same for every block size and is written with block k).
// fma_chain and fused_sum are binary64-only (std::fma is binary64's correctly rounded FMA on
// x86-64; the fused sum is a Kulisch accumulator, reference/long_accumulator.hpp); the other block
// parameters (neab ... operand_conversion) take no part in them, and the special rules that do
// apply are subnormal_inputs, subnormal_output, nan_encoding, overflow (infinity by rounding or
// saturate) and zero_sign (ieee: the sign IEEE 754's operations give).
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

// The bit pattern of a NaN result: all_ones is 0x7fffffff / 0x7fff (what the H100 and H200 write for
// every NaN the probes produced), ieee_quiet 0x7fc00000 / 0x7e00. propagate (binary64 output; the
// fp64 tensor core, issue 23): a NaN operand's bits pass through, quieted (bit 51 set), sign and
// payload kept; an invalid operation (inf * 0, inf - inf) writes kGeneratedNan. Which NaN: the first
// one met in the order C, a_0, b_0, a_1, b_1, ... (an fma_chain applies this FMA by FMA in its own
// order, the accumulator's NaN first, so an invalid operation early in the chain wins over a NaN
// operand later). The H100/H200 data never has two NaN operands in one dot product, so that order
// is a choice the data does not contradict, not a measurement. Any other output format writes its
// canonical NaN (formats.hpp to_bits).
enum class NanEncoding { all_ones, ieee_quiet, propagate };
// The NaN an invalid binary64 operation writes under NanEncoding::propagate: 0xfff8000000000000, the
// negative quiet NaN without payload (H100 and H200: probes nan_inf/inf_times_0, inf_minus_inf,
// c_inf_minus_product_inf and every such corpus case).
inline constexpr std::uint64_t kGeneratedNan = 0xfff8000000000000ull;
// A finite result beyond the output's largest finite value: by_rounding as the output rounding
// would take it (toward_zero: +-max finite; nearest_even: +-infinity), or always infinity, or always
// saturated to +-max finite.
enum class Overflow { by_rounding, infinity, saturate };
// The sign of an exactly zero result: ieee (-0 only when C and every product are -0; terms that
// cancel give +0), plus (always +0), c_sign (the sign of C).
enum class ZeroSign { ieee, plus, c_sign };
// A product with a zero operand: none (takes no part in the alignment), input_emin (aligned at its
// exponent sum, the zero counting as its format's emin, like a subnormal), fp32_emin (the zero
// counting as 2^-126 whatever the format, as MMA-Sim's extract_significand_exponent does).
enum class ZeroOperandExponent { none, input_emin, fp32_emin };
// How the products and C are combined (see above); the order of an FMA chain over k.
enum class Arithmetic { block_fused, fma_chain, fused_sum };
enum class ChainOrder { increasing, decreasing };

const char* to_string(AlignReference r);
const char* to_string(CEntry c);
const char* to_string(NanEncoding n);
const char* to_string(Overflow o);
const char* to_string(ZeroSign z);
const char* to_string(ZeroOperandExponent z);
const char* to_string(Arithmetic a);
const char* to_string(ChainOrder o);

struct TcParams {
  Arithmetic arithmetic = Arithmetic::block_fused;
  ChainOrder chain_order = ChainOrder::increasing;  // fma_chain only
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
  std::optional<Format> input_b;  // B's format when it differs from A's (e4m3 x e5m2); A is `input`
  // Special rules (see above); the defaults are the values the H100/H200 probes showed (NaN) or
  // the model's behaviour before they were made parameters; the values the corpus measured on
  // Hopper (zero_sign plus, overflow infinity for fp32 output) are measured_hopper_params'.
  NanEncoding nan_encoding = NanEncoding::all_ones;
  Overflow overflow = Overflow::by_rounding;
  ZeroSign zero_sign = ZeroSign::ieee;
  ZeroOperandExponent zero_operand_exponent = ZeroOperandExponent::none;
  Rounding tf32_low_bits = Rounding::toward_zero;  // toward_zero: the low 13 bits are ignored

  Format format_b() const { return input_b.value_or(input); }
  int fraction_bits() const;      // F
  std::string describe() const;   // one line, for tables and test messages
  bool operator==(const TcParams&) const = default;
};

// Format facts (precision, exponent range, bit patterns) come from reference/formats.hpp.

// Rounding of a double into a format (exact value in, rounded value out); subnormals kept unless
// `subnormals` is false (then flushed to signed zero). For input preparation and tests.
double round_to_format(Format f, double x, Rounding mode, bool subnormals = true);
bool representable(Format f, double x);

// What the model did to reach one D, filled by dot() when asked (tc-eval --explain): the rule that
// decided it and, per block, the terms as aligned, their exact (truncated) sum, its normalisation and
// the rounding. Values are exact doubles (every aligned term and sum of the measured models has at
// most F + 8 <= 53 significant bits).
struct TcTrace {
  struct Term {
    int k = -1;                 // product index, -1 for C
    double value = 0;           // the exact product (or C)
    int align_exponent = 0;     // the exponent it is aligned by
    double aligned = 0;         // what the alignment kept of it
  };
  struct Block {
    std::vector<int> ks;          // the product indices of this block
    double c = 0;                 // the block's C (the previous block's result)
    std::vector<Term> terms;      // the non-zero terms (zero-operand products when they align)
    int max_exponent = 0;         // the alignment exponent (largest of the terms')
    std::string max_from;         // what set it: "a3*b3", "c", "zero C", "zero operand a1*b1"
    int quantum_exponent = 0;     // max_exponent - F: the last place kept
    double aligned_sum = 0;       // the exact sum of the aligned terms
    int leading_exponent = 0;     // exponent of its leading bit (normalisation)
    double result = 0;            // after the cut / output rounding
    std::string note;             // what else happened ("overflow -> +inf", "exact zero: sign ieee")
  };
  std::string rule;             // the rule that decided D: "nan_inf", "exact_zero", "overflow", "arithmetic", ...
  std::vector<Block> blocks;
  bool final_add = false;       // C added last (c_entry final_add)
  double final_sum = 0;         // that addition's operand (the blocks' result)
};

// One instruction: a (k) and b (k) in the input format(s), c in the output format. `trace`, when
// given, is filled with how D was reached (the same arithmetic, not a second implementation).
double dot(const TcParams& p, const double* a, const double* b, int k, double c, TcTrace* trace = nullptr);

// D's bits in the output format: NaN as p.nan_encoding says, every other value as formats.hpp encodes it.
std::uint64_t encode_output(const TcParams& p, double d);

// An operand given as bits of its format (tf32: the 32-bit container) as the instruction reads it:
// for tf32, the low 13 bits are dropped before the bits are read (tf32_low_bits toward_zero: a NaN
// whose payload lies only there reads as an infinity) or rounded to nearest even.
double decode_operand(const TcParams& p, Format f, std::uint64_t bits);

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
  // Added for issue 21, probed on the H100 and the H200 on 2026-11-24 (model_evidence() says what
  // was measured):
  wgmma_m64n8k16_f16_f16,         // fp16 accumulator
  wgmma_m64n8k32_e4m3_f16,        // fp8 with an fp16 accumulator
  wgmma_m64n8k32_e5m2_f16,
  wgmma_m64n8k32_e4m3_e5m2_f32,   // mixed fp8: A e4m3, B e5m2
  mma_m16n8k32_e4m3_f16,          // fp8 mma.sync with fp16 output, as nvcc lowers it on sm_90
  mma_m16n8k32_e5m2_f16,
  mma_m16n8k32_e4m3_e5m2_f32,
  mma_m16n8k8_f16_f32,            // the smaller mma.sync shapes
  mma_m16n8k8_bf16_f32,
  mma_m16n8k4_tf32_f32,
  wgmma_m64n16k16_f16_f32,        // N = 16: does a wider wgmma change anything?
  // Added for issue 23: the fp64 tensor core (DMMA), mma.sync.aligned.m8n8k4.row.col.f64 (sm_80+),
  // and the longer shapes sm_90 adds (PTX 7.8): are they chains of k4 steps? Hypotheses until they
  // are probed on a GPU (model_evidence()).
  mma_m8n8k4_f64,
  mma_m16n8k4_f64,
  mma_m16n8k8_f64,
  mma_m16n8k16_f64,
  // Added for issue 41: nvcuda::wmma 16x16x16 with an fp16 accumulator, the fp16-output instruction
  // every generation from Volta has (the published V100 vectors' d_fp16 ran through it).
  wmma_m16n16k16_f16_f16,
  // Blackwell's tcgen05.mma (sm_100a), kinds f16 (fp16, bf16 -> fp32 or fp16), tf32 and f8f6f4 (fp8):
  // models from the literature (reference/tc_gpus.hpp), which no gemmlab probe has run. One output
  // row of an m128nNk tile is the same k-term dot product as mma.sync's.
  tcgen05_m128n8k16_f16_f32,
  tcgen05_m128n8k16_bf16_f32,
  tcgen05_m128n8k8_tf32_f32,
  tcgen05_m128n8k32_e4m3_f32,
  tcgen05_m128n8k32_e5m2_f32,
  tcgen05_m128n8k16_f16_f16,
  // Volta's own mma.sync.aligned.m8n8k4 (f16 inputs, f32 or f16 accumulator): the HMMA.884 that
  // Volta's wmma m16n16k16 is issued as (Jia et al., "Dissecting the NVIDIA Volta GPU Architecture via
  // Microbenchmarking", arXiv 1804.06826), so the datapath fitted to the V100 wmma vectors. Modelled
  // on Volta only: later GPUs still take it in PTX, at reduced speed, by means no one has published.
  mma_m8n8k4_f16_f32,
  mma_m8n8k4_f16_f16,
};
struct InstructionInfo {
  Instruction id;
  const char* name;   // CSV `instruction`
  Format input, output;
  int m, n, k;
  int min_cc;       // compute capability needed (90: the sm_90a wgmma instructions)
  std::optional<Format> input_b = std::nullopt;  // B's format when it differs from A's
  Format format_b() const { return input_b.value_or(input); }
};
const InstructionInfo& info(Instruction i);
// The instructions gemmlab probes (a probe kernel each; Hopper has them all).
const std::vector<Instruction>& all_instructions();
// Instructions gemmlab has no probe kernel for, modelled on other generations only (tc_gpus.hpp):
// Blackwell's tcgen05 (from the literature) and Volta's mma.m8n8k4 (Volta's fitted HMMA.884 datapath).
const std::vector<Instruction>& literature_instructions();
// Both, in that order: what parse_instruction knows and tc-eval evaluates.
const std::vector<Instruction>& every_instruction();
std::optional<Instruction> parse_instruction(const std::string& name);

// The parameters `gemmlab probe` inferred on Hopper (H100 and H200 alike; results/probes/README.md,
// "What the probes found"): every fp16/bf16 -> fp32 instruction: block 16, neab 2 (25 fraction
// bits), alignment and output truncated toward zero (magnitude), alignment by exponent sum, C
// joins the alignment (a zero C at emin_out - 7 where that can be seen), subnormals kept; fp16 -> fp16: the same 25
// fraction bits (neab 15), output rounded to nearest even; tf32: block 8; fp8 wgmma: one block of
// 32 at 13 fraction bits, result cut to 13 fraction bits; fp8 mma.sync (sm_90): two fp16 mma steps
// over interleaved pairs of k, then C added by one fp32 round-to-nearest addition. wgmma and wmma
// fp16/bf16 share mma.sync's model. The special rules (from the adversarial corpus): an exact zero
// is +0, a sum beyond fp32's range is infinite, zero operands take no part in the alignment.
std::optional<TcParams> measured_hopper_params(Instruction i);

// Where an instruction's model comes from: "probed" (inferred from H100/H200 probes and validated on
// random tiles) or "hypothesis: ..." (not yet run on a GPU; the sentence says what it is derived
// from). The f64 instructions were probed on the H100 and H200 on 2026-11-24 (issue 23).
std::string model_evidence(Instruction i);

// D = A B + C on one tile: A (m, k) row-major, B (k, n) row-major, C and D (m, n) row-major.
std::vector<double> mma_tile(const TcParams& p, const InstructionInfo& ins, const std::vector<double>& A,
                             const std::vector<double>& B, const std::vector<double>& C);

}  // namespace gemmlab::tc
