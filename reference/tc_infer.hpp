// Inferring a tensor-core instruction's TcParams from probe outcomes (no parameter typed in by hand).
//
// A probe is a pure function of dyadic inputs: one dot product c + sum a_i b_i of the instruction's
// length k, placed in row 0 of A, column 0 of B and C(0,0) of an otherwise zero tile; its outcome is
// the bit pattern the hardware wrote to D(0,0). make_probes() builds the set, aimed feature by
// feature (alignment bits, block boundaries, rounding of shifted-out bits and of the output, the
// alignment exponent, whether C joins the alignment, subnormals, NaN/inf) plus seeded random
// tiles. infer() searches every parameter combination of the model (block sizes dividing k,
// neab in [-16, 40], every rounding and flag) for those that reproduce every outcome; a feature is
// identified when all surviving candidates agree on it, and its evidence is the probe whose output
// rules out the nearest alternative value.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "reference/tc_model.hpp"

namespace gemmlab::tc {

struct Probe {
  std::string id;       // unique, e.g. "alignment/j=25/f=0.75/neg/X=2^0"
  std::string feature;  // the feature it is aimed at
  std::vector<double> a, b;  // k values each, in the input format
  double c = 0;              // in the output format
};

struct ProbeOutcome {
  Probe probe;
  std::uint64_t output_bits = 0;  // D(0,0) in the output format's encoding
};

// Seed of the random probes (recorded in their ids).
inline constexpr std::uint64_t kRandomProbeSeed = 20260514;

std::vector<Probe> make_probes(const InstructionInfo& ins);

// Does the model with p reproduce this outcome bit for bit (any NaN matches any NaN)?
bool reproduces(const TcParams& p, const ProbeOutcome& o);

struct Finding {
  std::string feature;
  std::string observed;
  std::string evidence_inputs;       // the probe's non-zero terms and C
  std::string evidence_output_bits;  // hex of the observed output
};

struct Inference {
  TcParams params;                 // the first best candidate (canonical order)
  int mismatching_probes = 0;      // of the best candidate; 0 = the model explains every probe
  int best_candidates = 0;         // how many candidates tie at that count
  long long candidates_tried = 0;
  std::vector<std::string> ambiguous;  // features on which the best candidates disagree
  std::vector<Finding> findings;
};

Inference infer(const InstructionInfo& ins, const std::vector<ProbeOutcome>& outcomes);

// Human-readable inputs of a probe: "a0*b0=1*1; a1*b1=-1*1; a2*b2=2^-25*1; c=0".
std::string describe_inputs(const Probe& p);
std::string hex_bits(std::uint64_t bits, Format f);

}  // namespace gemmlab::tc
