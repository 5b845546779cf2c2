// `gemmlab predict`: a kernel's whole output predicted bit for bit on the CPU (its numerics record
// composed with the tensor-core model, reference/kernel_emulation.hpp) and compared with what the
// GPU computes, entry by entry. One row per (kernel, distribution): mismatching outputs and the
// first mismatch's position and bits.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "kernels/kernel.hpp"
#include "reference/distributions.hpp"
#include "reference/tc_model.hpp"

namespace gemmlab {

struct PredictionRow {
  std::string kernel, order, distribution;
  std::uint64_t seed = 0;
  int M = 0, N = 0, K = 0;
  long long outputs = 0, mismatches = 0, unwritten = 0;
  int first_i = -1, first_j = -1;         // first mismatch (-1: none)
  std::string predicted_bits, observed_bits;
  double emulation_seconds = 0;
  std::string summary() const;             // one line for logs and test messages
};
const std::vector<std::string>& prediction_columns();
std::vector<std::string> to_fields(const PredictionRow& r);

// The tensor-core parameters the prediction uses for this kernel: measured_hopper_params of its
// instruction (empty TcParams for fma); nullopt when its numerics are not predictable or its
// instruction's model is still open.
std::optional<tc::TcParams> prediction_params(const Kernel& k);

// Runs k once on (size, size, size) inputs of distribution d and seed, predicts the output with
// `params`, and compares bit for bit. Throws std::runtime_error on a CUDA error.
PredictionRow predict_and_compare(const Kernel& k, const Distribution& d, int M, int N, int K, std::uint64_t seed,
                                  const tc::TcParams& params);

// The subcommand: every named kernel x distribution; CSV + metadata. Returns the exit code (0 when
// every output matched, 5 when some did not; 2 for bad input or no GPU).
int predict_command(const std::vector<std::string>& kernels, const std::vector<std::string>& distributions, int M,
                    int N, int K, std::uint64_t seed, const std::string& out_csv, const std::string& command_line);

}  // namespace gemmlab
