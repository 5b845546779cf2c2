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
#include <optional>
#include <string>
#include <vector>

#include "reference/tc_model.hpp"

namespace gemmlab::tc {

// The bit patterns a case gives the hardware when they say more than the values (NaN payloads and
// signs, the low 13 bits of a tf32 operand's fp32 container): the adversarial corpus's cases carry them.
struct RawBits {
  std::vector<std::uint64_t> a, b;  // k patterns each, in A's and B's formats
  std::uint64_t c = 0;              // in the output format
};

struct Probe {
  std::string id;       // unique, e.g. "alignment/j=25/f=0.75/neg/X=2^0"
  std::string feature;  // the feature it is aimed at (a corpus case: its rule class)
  std::vector<double> a, b;  // k values each, in the input format
  double c = 0;              // in the output format
  std::optional<RawBits> raw;  // when given, what the hardware is fed (a, b, c are its default decoding)
};

// The bits one probe gives the hardware for A (k), B (k) and C: its raw bits, or its values encoded.
RawBits probe_bits(const InstructionInfo& ins, const Probe& p);

// The model's D for a probe (its raw bits decoded as p's tf32_low_bits says) and its bits.
double predict(const TcParams& p, const Probe& pr, TcTrace* trace = nullptr);
std::uint64_t predict_bits(const TcParams& p, const Probe& pr);

struct ProbeOutcome {
  Probe probe;
  std::uint64_t output_bits = 0;  // D(0,0) in the output format's encoding
};

// Seed of the random probes (recorded in their ids).
inline constexpr std::uint64_t kRandomProbeSeed = 20260514;

std::vector<Probe> make_probes(const InstructionInfo& ins);

// Does the model with p reproduce this outcome bit for bit (NaN included: its encoding is a rule)?
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
                                   // (the probe set first, then the special rules on every outcome)
  int best_candidates = 0;         // how many candidates tie at that count
  long long candidates_tried = 0;
  std::vector<std::string> ambiguous;  // features on which the best candidates disagree
  std::vector<Finding> findings;
};

Inference infer(const InstructionInfo& ins, const std::vector<ProbeOutcome>& outcomes);

// Human-readable inputs of a probe: "a0*b0=1*1; a1*b1=-1*1; a2*b2=2^-25*1; c=0".
std::string describe_inputs(const Probe& p);
std::string hex_bits(std::uint64_t bits, Format f);
// A value exactly and briefly: "0", "-0", "3*2^-25", "2^-149", "inf", "nan".
std::string exact_text(double x);

}  // namespace gemmlab::tc
