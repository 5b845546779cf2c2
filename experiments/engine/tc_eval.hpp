// `gemmlab tc-eval`: the tensor-core model gemmlab inferred (tc::measured_hopper_params), evaluated
// on a user's own inputs, so that anyone can hold it against their own measurements.
//
// One case is one output entry of one instruction: D = C + sum_k A(0, k) B(k, 0) over the
// instruction's k products, in k order (which k goes to which tensor-core step depends on k:
// fp8 mma.sync deals pairs of k round robin to two fp16 steps). The inputs are bit patterns
// (0x-prefixed hex, in the instruction's input format for A and B and its output format for C and
// D; tf32 in its fp32 container) or numbers written in decimal or hex-float that the format holds
// exactly. An observed D, when given, is compared bit for bit (any NaN matches any NaN).
//
// File form: a CSV with a header and the columns instruction, a, b, c and optionally d (observed);
// a and b hold the k values separated by spaces, an empty c is +0. The output CSV repeats them and
// adds d_model (hex), d_model_value (decimal) and match (1, 0, or empty when d was not given),
// with a metadata file naming the model each instruction used.
//
// Plain C++: tested on CPU-only machines.
#pragma once
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "reference/tc_model.hpp"

namespace gemmlab {

struct TcEvalCase {
  tc::Instruction instruction{};
  std::vector<double> a, b;      // k values each, in the input format
  double c = 0;                  // in the output format
  std::optional<std::uint64_t> d_observed;
};

struct TcEvalResult {
  std::uint64_t d_bits = 0;      // the model's D in the output format's encoding
  double d_value = 0;
  std::optional<bool> match;     // when an observed D was given
};

// Reads one value of format f: "0x..." is a bit pattern; anything else a number f must hold
// exactly. Throws UsageError naming `what` and saying what was wrong.
double parse_tc_value(Format f, const std::string& text, const std::string& what);

// A case from its text fields (a, b: k values separated by spaces or commas; c: empty is +0;
// d: empty is none). Throws UsageError naming the field.
TcEvalCase parse_tc_case(const std::string& instruction, const std::string& a, const std::string& b,
                         const std::string& c, const std::string& d);

// The model's D for the case (the parameters of measured_hopper_params).
TcEvalResult evaluate_tc_case(const TcEvalCase& c);

// Hex of bits in format f's width, e.g. 0x3c00 for fp16.
std::string tc_hex(Format f, std::uint64_t bits);

// The file form: reads in_csv, writes out_csv (atomically, with metadata). Returns the number of
// cases whose observed D differed from the model's. Throws UsageError on a malformed file, naming
// the line and the field.
struct TcEvalSummary {
  long long cases = 0, compared = 0, mismatches = 0;
};
TcEvalSummary tc_eval_file(const std::string& in_csv, const std::string& out_csv, const std::string& command_line);

}  // namespace gemmlab
