// Blackwell's block-scaled tensor-core instructions (tcgen05.mma kind::mxf8f6f4, kind::mxf4 and
// kind::mxf4nvf4): one output's dot product with its scales, d = c + sum_i a_i b_i sa sb, as MMA-Sim
// describes their arithmetic (Xie, Wang, Yang, Yang, "MMA-Sim: Bit-Accurate Reference Model of Tensor
// Cores and Matrix Cores", arXiv 2511.10909; microsoft/MMA-Sim, mmasim/simulator/nv_ptx.py
// tcgen05mma_block_scale and arithmetic.py fused_dot_add, nv_fused_dot_add_with_block_scale).
//
// A MODEL FROM THE LITERATURE: no gemmlab probe has run these instructions (gemmlab's GPUs are Hopper's,
// which have no block-scaled MMA); every function below says so in its comment, and a result from it is
// MMA-Sim's prediction, not a measurement.
//
// The arithmetic, as MMA-Sim writes it:
//  * every term is (significand, exponent): a finite value x of a format is s 2^e with s in [1, 2) for a
//    normal value, e = floor(log2 |x|), and s = x / 2^emin, e = emin below the format's normal range; a
//    zero is (0, -126) whatever its format (MMA-Sim's extract_significand_exponent);
//  * kind::mxf8f6f4 (k = 32, one E8M0 scale per row of A and per column of B): a product's term is
//    (s_a s_b, e_a + e_b + e_sa + e_sb): the scales enter the exponents only (an E8M0 scale's significand is
//    1). C (fp32) is a term of the same sum. Every term is aligned to the largest exponent E and truncated
//    toward zero to F = 25 fraction bits (s 2^(e - E) cut to a multiple of 2^-F); the aligned terms are
//    summed exactly; the sum (times 2^E) is written to fp32 truncated toward zero (23 fraction bits, fp32's
//    subnormal grid below 2^-126; beyond fp32's range: infinity).
//  * kind::mxf4 / kind::mxf4nvf4 (k = 64 e2m1 products; a scale per `block` (32 or 16) of k, E8M0 or
//    ue4m3): the products of each group of 16 are summed exactly (the group sum g, a multiple of 1/4); each
//    group's term is (g sig(sa) sig(sb), e(sa) + e(sb)) with the scales of its block (a ue4m3 scale's sign
//    bit is ignored); C and the group terms are aligned to the largest exponent and truncated to F = 35
//    fraction bits, summed exactly, and written to fp32 toward zero as above. The group term's
//    "significand" is not normalised (g up to 576): the alignment is to the largest exponent label, as
//    MMA-Sim's fused_sum does.
//  * special values: a NaN operand, scale or C gives NaN; in kind::mxf8f6f4 an infinite product or C
//    gives the infinity (inf - inf: NaN), as MMA-Sim's binary64 pre-check does. (MMA-Sim's kind::mxf4nvf4
//    does not define an infinite C; this model returns C there.)
// MMA-Sim lists e2m1 for kind::mxf8f6f4 and leaves e2m3 and e3m2 to do; this model takes all five element
// formats there with the rule above (each format's own emin for its subnormals), an extrapolation.
//
// Plain C++ (no CUDA header). Values travel as doubles (exact); the aligned sums are exact integers.
#pragma once
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "reference/formats.hpp"

namespace gemmlab::tc {

enum class BlockScaledKind { mxf8f6f4, mxf4, mxf4nvf4 };

// The shape of one instruction's dot product: k products, one scale per `block` of them.
struct BlockScaledInfo {
  BlockScaledKind kind;
  const char* name;      // "tcgen05_mxf8f6f4", "tcgen05_mxf4", "tcgen05_mxf4nvf4"
  int k;                 // 32 or 64
  int fraction_bits;     // F: 25 or 35
  int min_cc;            // 100 (sm_100a)
  int default_block;     // products per scale when none is named: 32 (MX), kind::mxf4nvf4 16 (NVFP4)
};
const BlockScaledInfo& info(BlockScaledKind kind);
const std::vector<BlockScaledKind>& every_block_scaled_kind();
// A kind by its name ("tcgen05_mxf8f6f4", ...); nullopt for any other name.
std::optional<BlockScaledKind> parse_block_scaled_kind(const std::string& name);
// The element formats of A and B a kind takes: kind::mxf8f6f4 e4m3, e5m2, e2m3, e3m2, e2m1 (A and B each
// one of them); kind::mxf4 and kind::mxf4nvf4 e2m1.
const std::vector<Format>& element_formats(BlockScaledKind kind);
// Whether a kind takes one scale of `scale_format` per `block` products: kind::mxf8f6f4 and kind::mxf4 ue8m0
// per 32; kind::mxf4nvf4 ue4m3 per 16, ue8m0 per 16 or 32. "ue8m0 per 32; ..." says it for a message.
bool takes_scales(BlockScaledKind kind, int block, Format scale_format);
std::string scales_help(BlockScaledKind kind);
// The scale format when none is named: ue4m3 for kind::mxf4nvf4 at 16 (NVFP4), else ue8m0 (MX).
Format default_scale_format(BlockScaledKind kind, int block);

// The model of a kind in one line, for tables and messages: "one fused sum of C and 32 products (scales in
// their exponents) at F = 25, fp32 toward zero".
std::string describe(BlockScaledKind kind);

// How the model reached one instruction's result (tc-eval --explain): the rule that decided it and, when
// the fused sum did, every term with its exponent label and what remained of it after the alignment to
// the largest label with F fraction bits (truncated toward zero), and their exact sum. Values are exact
// doubles (the aligned sum is an integer below 2^53 times 2^(E - F)).
struct BlockScaledTrace {
  struct Term {
    std::string name;    // "C", "a3*b3" (with its scales), "group 2 (k 16..31)"
    double value = 0;    // the term, exactly (scales included)
    int exponent = 0;    // its exponent label (a group's: its scales' exponents; its sum is not normalised)
    double aligned = 0;  // what is left of it after the alignment
  };
  std::string rule;
  std::vector<Term> terms;
  int max_exponent = 0;  // E
  std::string max_from;  // the term that set E
  int fraction_bits = 0; // F
  double aligned_sum = 0;
};

// kind::mxf8f6f4 (MODEL FROM THE LITERATURE, MMA-Sim; not probed by gemmlab): a and b hold 32 element values
// of formats fa and fb (e4m3, e5m2, e2m3, e3m2, e2m1), scale_a and scale_b the two E8M0 scales (powers of
// two), c an fp32 value. Returns the fp32 result (as a double). Throws std::invalid_argument for a value
// that is not of its format or a span that is not 32 long.
// With trace, how the result was reached.
double mxf8f6f4_dot(std::span<const double> a, Format fa, std::span<const double> b, Format fb, double scale_a,
                    double scale_b, double c, BlockScaledTrace* trace = nullptr);

// kind::mxf4 (block 32, E8M0 scales) and kind::mxf4nvf4 (block 16 with ue4m3 or E8M0 scales, or block 32
// with E8M0) (MODEL FROM THE LITERATURE, MMA-Sim; not probed by gemmlab): a and b hold 64 e2m1 values,
// scales_a and scales_b the 64 / block scales of the row of A and the column of B, in `scale_format`
// (ue8m0 or ue4m3). Returns the fp32 result (as a double). Throws std::invalid_argument for a value that is
// not of its format, a block other than 16 or 32, or spans of the wrong length. With trace, how the result
// was reached.
double mxf4nvf4_dot(std::span<const double> a, std::span<const double> b, std::span<const double> scales_a,
                    std::span<const double> scales_b, int block, Format scale_format, double c,
                    BlockScaledTrace* trace = nullptr);

// A whole dot product of length K (a multiple of the instruction's k) as a kernel issues it: instructions
// in increasing k, each one's result the C of the next, starting from c (MODEL FROM THE LITERATURE, as the
// functions above). scales_a / scales_b: one per `block` of K (kind::mxf8f6f4: block 32).
double block_scaled_dot(BlockScaledKind kind, std::span<const double> a, Format fa, std::span<const double> b,
                        Format fb, std::span<const double> scales_a, std::span<const double> scales_b, int block,
                        Format scale_format, double c);

}  // namespace gemmlab::tc
