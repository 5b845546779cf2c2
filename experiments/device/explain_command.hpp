// The `gemmlab explain` subcommand: reference/explain.hpp's stages on a registered kernel (built-in,
// cuBLAS or a plugin's) at one size on this GPU; CSV + metadata, and optionally the kernel judged by
// the bound of the numerics it was found to have. With --diff A B: where two kernels' numerics differ
// (reference/explain/diff.hpp), each difference shown on inputs where their bits differ.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

namespace gemmlab {

struct ExplainRequest {
  std::string kernel;
  int M = 0, N = 0, K = 0;
  std::vector<std::string> distributions{"uniform_0_1", "normal_0_1", "logunif_-8_8"};
  std::uint64_t seed = 20261124;
  long long compare_outputs = 1 << 16;
  std::string out_csv;
  std::string judge_csv;  // non-empty: also `gemmlab run` the kernel under its identified numerics
  std::string command_line;
  // --diff A B: the two kernels compared (`kernel` unused), and the outputs the full-size confirmation
  // compares per distribution (0: every output).
  std::vector<std::string> diff;
  long long confirm_outputs = 0;
  // --gpu: the tensor-core model's generation (reference/tc_gpus.hpp); empty: this GPU's own, and a
  // GPU gemmlab has no model for is refused.
  std::string gpu;
};

// Returns 0 when the kernel was identified, 5 when it was not (the CSV says which stage and why);
// 2 for a request that cannot be served (unknown kernel, size, no usable GPU), with nothing written.
// With --diff: 0 when both kernels were identified (the diff compared every aspect), 5 when either
// was not, 3 when either lost the GPU (the diff written as far as it got); 2 as above, and for two
// kernels that cannot take the same inputs (sizes, input formats).
int explain_command(const ExplainRequest& r);

}  // namespace gemmlab
