// `gemmlab predict`: a kernel's whole output predicted bit for bit on the CPU and compared with what
// the GPU computes, entry by entry. One row per (kernel, distribution): mismatching outputs and the
// first mismatch's position and bits. Two sources of the order:
//  * numerics: the kernel's numerics record composed with the tensor-core model
//    (reference/kernel_emulation.hpp), for every kernel gemmlab built;
//  * measured: for a library kernel (cuBLAS, cuBLASLt), whose order gemmlab cannot know, the tree
//    `gemmlab order` reveals for a few entries on this GPU at this size (experiments/device/order.hpp),
//    composed node by node with the tensor-core model (emulation::emulate_tree). The prediction
//    assumes that tree for every entry; the row says at which entries it was revealed and whether
//    the trees there agree, and every entry is compared, so a different order elsewhere shows as
//    mismatches.
#pragma once
#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "kernels/kernel.hpp"
#include "reference/distributions.hpp"
#include "reference/summation_tree.hpp"
#include "reference/tc_model.hpp"

namespace gemmlab {

struct PredictionRow {
  std::string kernel, order_source, order, distribution;  // order_source: numerics | measured
  std::uint64_t seed = 0;
  int M = 0, N = 0, K = 0;
  long long outputs = 0, mismatches = 0, unwritten = 0;
  int first_i = -1, first_j = -1;         // first mismatch (-1: none)
  std::string predicted_bits, observed_bits;
  std::string tree_entries;               // measured: "i:j i:j ..." where the tree was revealed
  bool trees_agree = true;                // measured: the same tree at every one of them
  long long chunked_tiles = 0;            // k_chunked kernels: output tiles whose K was cut
  double emulation_seconds = 0;
  std::string summary() const;             // one line for logs and test messages
};
const std::vector<std::string>& prediction_columns();
std::vector<std::string> to_fields(const PredictionRow& r);

// The tensor-core parameters the prediction uses for this kernel: the active generation's model
// (tc::model_params: this GPU's, or --gpu's) of its
// instruction (empty TcParams for fma); nullopt when its numerics are not predictable or its
// instruction's model is still open.
std::optional<tc::TcParams> prediction_params(const Kernel& k);

// A library kernel's order at (M, N, K) on this GPU: the tree revealed at each of `entries`; the
// first is used. Throws std::runtime_error when it cannot be revealed or composed.
struct MeasuredOrder {
  SummationTree tree{1};
  std::string entries;      // "i:j i:j ..."
  bool agree = true;
  long long runs = 0;
  double seconds = 0;
};
MeasuredOrder measure_order(const Kernel& k, int M, int N, int K, const std::vector<std::pair<int, int>>& entries);
// The default entries: (0, 0), one near the middle, (M - 1, N - 1).
std::vector<std::pair<int, int>> default_tree_entries(int M, int N);
// Whether gemmlab can predict k through a measured order: a library kernel whose operands reach the
// multiplier unchanged (input == compute) and whose running sums are fp32. Empty if so, else why not.
std::string measured_order_gap(const Kernel& k);
PredictionRow predict_measured(const Kernel& k, const Distribution& d, int M, int N, int K, std::uint64_t seed,
                               const MeasuredOrder& order);

// The orders a scaled fp8 library kernel (cuBLASLt's scale modes) is tried against, since its own
// is not disclosed: the wgmma e4m3 model summed in_wgmma over all of K or promoted every 128, with
// the scales applied per 128-block of K (block_fma, block_mul_mul; for 1 x 128 / 128 x 128 scales)
// or once at the end (epilogue, epilogue_mul_mul; for tensor and rowwise scales). Inputs that tell
// these apart: scales that differ from block to block and are not powers of two (fp32 recipes),
// sums whose low bits a different rounding moves. A candidate with 0 mismatches is the library's
// order on these inputs; none: its order is none of them (the row says so).
std::vector<Numerics> scaled_candidate_orders(const Kernel& k);

// Runs k once on (size, size, size) inputs of distribution d and seed, predicts the output with
// `params`, and compares bit for bit. Throws std::runtime_error on a CUDA error.
PredictionRow predict_and_compare(const Kernel& k, const Distribution& d, int M, int N, int K, std::uint64_t seed,
                                  const tc::TcParams& params);

// The subcommand: every named kernel x distribution; CSV + metadata. Library kernels go through a
// measured order (revealed at tree_entries; empty: default_tree_entries). Returns the exit code (0
// when every output matched, 5 when some did not; 2 for bad input or no GPU; 4 when a library's
// order could not be revealed as a tree or composed with the model, or the library offers no algorithm
// for the problem, with nothing written).
int predict_command(const std::vector<std::string>& kernels, const std::vector<std::string>& distributions, int M,
                    int N, int K, std::uint64_t seed, const std::string& out_csv, const std::string& command_line,
                    const std::vector<std::pair<int, int>>& tree_entries = {}, const std::string& gpu = "");

}  // namespace gemmlab
