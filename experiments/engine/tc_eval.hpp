// `gemmlab tc-eval`: gemmlab's tensor-core model of one GPU generation (reference/tc_gpus.hpp:
// Hopper's inferred by gemmlab's probes, the others' fitted to published hardware outputs or taken
// from the literature), evaluated on a user's own inputs, so that anyone can hold it against their
// own measurements. Without a generation named (--gpu), Hopper's.
//
// One case is one output entry of one instruction: D = C + sum_k A(0, k) B(k, 0) over the
// instruction's k products, in k order (which k goes to which tensor-core step depends on k:
// fp8 mma.sync deals pairs of k round robin to two fp16 steps). The inputs are bit patterns
// (0x-prefixed hex, in the instruction's input format for A and B and its output format for C and
// D) or numbers written in decimal or hex-float that the format holds exactly. tf32 operands may be
// given as any fp32 bits: the instruction reads them as the model's tf32_low_bits rule says (the low
// 13 bits ignored, i.e. truncated toward zero, unless the hardware outcomes say otherwise).
//
// Values are separated by spaces, on the command line and in the CSV alike; commas between values
// are still read, with a deprecation warning (TcEvalCase::used_commas), and will be refused later.
// An observed D, when given, is compared bit for bit: NaN included, so a NaN matches only the same
// NaN pattern (sign and payload), the one the model writes (nan_encoding).
//
// File form: a CSV with a header and the columns instruction, a, b, c and optionally d (observed);
// an empty c is +0; for the block-scaled kinds also scale_a, scale_b and optionally a_format,
// b_format, block, scale_format. Any other column (an id, a label) is passed through. The output CSV repeats every
// input column in its order and adds d_model (hex), d_model_value (decimal) and match (1, 0, or
// empty when d was not given), and with explain the rule and the explanation; a metadata file names
// the model each instruction used.
//
// Blackwell's block-scaled kinds (tcgen05_mxf8f6f4, tcgen05_mxf4, tcgen05_mxf4nvf4;
// reference/tc_block_scaled.hpp) are A MODEL FROM THE LITERATURE (MMA-Sim, arXiv 2511.10909) that no
// gemmlab probe has run, on blackwell (b200) only: besides A's row and B's column they take the
// scales of each (one per `block` of k: --scale-a, --scale-b; CSV columns scale_a, scale_b), the
// element formats (a_format, b_format) and the scales' (block, scale_format); C and D are fp32.
// The CSV of cases may mix them with the other instructions (those leave the extra columns empty).
//
// Plain C++: tested on CPU-only machines.
#pragma once
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "reference/tc_gpus.hpp"
#include "reference/tc_infer.hpp"
#include "reference/tc_model.hpp"

namespace gemmlab {

struct TcEvalCase {
  tc::Instruction instruction{};
  tc::RawBits bits;              // what was given: A and B in their formats, C in the output's
  std::optional<std::uint64_t> d_observed;
  bool used_commas = false;      // values were separated by commas (deprecated)
};

struct TcEvalResult {
  std::uint64_t d_bits = 0;      // the model's D in the output format's encoding
  double d_value = 0;
  std::optional<bool> match;     // when an observed D was given: the same bits
  tc::TcTrace trace;             // how the model reached D (filled when asked)
};

// Reads one value of format f: "0x..." is a bit pattern (tf32: any fp32 container); anything else
// a number f must hold exactly ("nan", "inf" are read too). Returns its bits. Throws UsageError
// naming `what` and saying what was wrong.
std::uint64_t parse_tc_bits(Format f, const std::string& text, const std::string& what);
// The same, as the value the bits encode (formats.hpp's decoding).
double parse_tc_value(Format f, const std::string& text, const std::string& what);

// A case from its text fields (a, b: k values separated by spaces; c: empty is +0; d: empty is
// none). Throws UsageError naming the field.
TcEvalCase parse_tc_case(const std::string& instruction, const std::string& a, const std::string& b,
                         const std::string& c, const std::string& d);

// The model's D for the case under generation g's model (tc::generation_params); with explain, the
// trace. Throws UsageError when g does not have the instruction, naming the closest one it has.
TcEvalResult evaluate_tc_case(const TcEvalCase& c, bool explain = false,
                              tc::Generation g = tc::Generation::hopper);

// The explanation of a result, one line per step: the rule, then per block the aligned terms, the
// alignment exponent and what set it, the truncated sum, its normalisation and the rounding.
std::vector<std::string> explain_tc_case(const TcEvalCase& c, const TcEvalResult& r,
                                         tc::Generation g = tc::Generation::hopper);
// g's model of instruction i; throws UsageError (naming the closest instruction g has) when g lacks i.
tc::TcParams tc_eval_params(tc::Instruction i, tc::Generation g);

// One case of a block-scaled kind, as text (the CLI's options, or a CSV row's fields): a, b, scale_a,
// scale_b hold values separated by spaces (0x bit patterns of their format, or numbers it holds
// exactly); an empty a_format, b_format, block or scale_format is the kind's default (kind::mxf8f6f4:
// e4m3 elements; mxf4, mxf4nvf4: e2m1; block 32, mxf4nvf4 16; scales ue8m0, mxf4nvf4 at 16 ue4m3);
// an empty c is +0, an empty d none.
struct TcBlockScaledFields {
  std::string instruction, a, b, scale_a, scale_b, a_format, b_format, block, scale_format, c, d;
};
struct TcBlockScaledCase {
  tc::BlockScaledKind kind{};
  Format a_format = Format::e4m3, b_format = Format::e4m3, scale_format = Format::ue8m0;
  int block = 32;
  std::vector<double> a, b, scales_a, scales_b;  // k values; k / block scales each
  double c = 0;                                  // fp32
  std::optional<std::uint64_t> d_observed;       // fp32 bits
  bool used_commas = false;
};
struct TcBlockScaledResult {
  std::uint64_t d_bits = 0;  // fp32
  double d_value = 0;
  std::optional<bool> match;
  tc::BlockScaledTrace trace;  // filled when asked
};
// Reads a case; throws UsageError naming the field, what was wrong and what it takes.
TcBlockScaledCase parse_tc_block_scaled_case(const TcBlockScaledFields& f);
// Throws UsageError unless g has kind k, naming the GPUs that have it.
void require_block_scaled(tc::BlockScaledKind k, tc::Generation g);
// The model's D under generation g (blackwell's; any other refused by require_block_scaled).
TcBlockScaledResult evaluate_tc_block_scaled_case(const TcBlockScaledCase& c, bool explain, tc::Generation g);
// The model of a case in one line: formats, scales, and the kind's arithmetic (tc::describe).
std::string describe_tc_block_scaled_case(const TcBlockScaledCase& c);
// The explanation, one line per step: the model and its source, the rule, every non-zero term with its
// exponent and what the alignment left of it, the alignment, the truncated sum, D.
std::vector<std::string> explain_tc_block_scaled_case(const TcBlockScaledCase& c, const TcBlockScaledResult& r,
                                                      tc::Generation g);

// Hex of bits in format f's width, e.g. 0x3c00 for fp16.
std::string tc_hex(Format f, std::uint64_t bits);

// The file form: reads in_csv, writes out_csv (atomically, with metadata). Throws UsageError on a
// malformed file, naming the line and the field.
struct TcEvalSummary {
  long long cases = 0, compared = 0, mismatches = 0;
  bool used_commas = false;
};
TcEvalSummary tc_eval_file(const std::string& in_csv, const std::string& out_csv, const std::string& command_line,
                           bool explain = false, tc::Generation g = tc::Generation::hopper);

// The models of generations `gens`, one row per (generation, instruction it has): its parameters
// column by column, the source (probed, fitted, literature) and the evidence; CSV + metadata,
// atomically. The table of the generations' arithmetic side by side (docs/gpus.md) is this file.
void write_tc_models(const std::vector<tc::Generation>& gens, const std::string& out_csv,
                     const std::string& command_line);

// Writes the probe set (tc::make_probes) or the adversarial corpus (tc::make_corpus) of an
// instruction as a tc-eval input CSV (instruction, a, b, c as bit patterns; case; class), atomically
// with metadata: the cases to run on your own GPU, or through another model. Returns the count.
long long write_tc_cases(tc::Instruction instruction, const std::string& which, const std::string& out_csv,
                         const std::string& command_line);

}  // namespace gemmlab
