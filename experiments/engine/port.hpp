// `gemmlab port` and gemmlab.port: what changes when an explained kernel moves to another GPU
// generation. The kernel's numerics (its order of accumulation or revealed tree, its operand
// conversion, its instruction) stay what `explain` found or its record states; only the tensor-core
// nodes change, to the target generation's model of the same instruction (reference/tc_gpus.hpp).
// Both the kernel on its own generation and on every target are predicted bit for bit on the CPU, on
// the same seeded inputs `gemmlab run` makes, at a sample of output entries: per distribution, the
// fraction of outputs whose bits change, and the bias and spread each GPU would give (in units of the
// output's roundoff), beside the measured ones where a run or judged CSV gives them.
//
// A target that lacks the kernel's instruction (wgmma on an A100) gets the closest one it has (the
// same formats and k: mma.sync), named as an assumption in the row; a target with no instruction of
// the kernel's formats (fp8 before Ada) gets a row saying so. The prediction is only as good as the
// target's model: each row carries that model's source (probed, fitted or literature) and whether the
// source generation's prediction was itself validated on a GPU.
//
// Plain C++ (no CUDA): runs without a GPU.
#pragma once
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "reference/explain.hpp"
#include "reference/numerics.hpp"
#include "reference/tc_gpus.hpp"

namespace gemmlab {

struct PortKernel {
  std::string name;
  Numerics numerics;                     // named order, or accumulation tree with its compact form
  explain::Conversion conversion_a = explain::Conversion::as_is;
  explain::Conversion conversion_b = explain::Conversion::as_is;
  tc::Generation from = tc::Generation::hopper;  // where it was explained (or whose record it is)
  std::string origin;                    // "built-in numerics record" or the explain file read
  // Measured bias and spread (rel_mean_u, rel_std_u) per distribution, from a run or judged CSV.
  std::map<std::string, std::pair<double, double>> measured;
};

struct PortOptions {
  std::vector<tc::Generation> targets;    // empty: every generation but the kernel's own
  std::vector<std::string> distributions{"uniform_0_1", "normal_0_1", "logunif_-8_8"};
  int M = 4096, N = 4096, K = 4096;
  std::uint64_t seed = 20261124;          // the inputs' seed (gemmlab run's and explain's default)
  int entries = 4096;                     // output entries predicted per distribution (sampled, seeded)
  int threads = 0;                        // 0: all cores
};

struct PortRow {
  std::string kernel, origin, from, gpu, gpu_names, distribution;
  int M = 0, N = 0, K = 0;
  std::uint64_t seed = 0;
  std::string status;       // ported | same_model | no_instruction | not_portable
  std::string instruction_from, instruction, assumption, model_source;
  long long entries = 0, changed = 0;
  double changed_fraction = 0;
  double bias_u = 0, spread_u = 0, bias_u_from = 0, spread_u_from = 0;
  std::optional<double> measured_bias_u, measured_spread_u;
  long long entries_zero = 0;  // entries whose exact value is 0 (no relative error)
  std::string note;
};

const std::vector<std::string>& port_columns();
std::vector<std::string> to_fields(const PortRow& r);

// Predicts every kernel on its own generation and on each target. Throws std::invalid_argument for
// a record that cannot be predicted (library, unknown, split operands: the message says which) or an
// unknown distribution; UsageError-free (the CLI checks its arguments first).
std::vector<PortRow> port(const std::vector<PortKernel>& kernels, const PortOptions& o);

// A kernel as `gemmlab explain` (or gemmlab.explain) wrote it: its .meta.json (or the CSV beside it):
// the report's numerics, operand conversion and the GPU it ran on; the judged CSV beside it
// (<stem>_judged.csv), if any, for the measured bias and spread. Throws std::invalid_argument naming
// the file and what is missing (an explanation that did not identify the kernel has no numerics).
PortKernel port_kernel_from_explain(const std::string& path);
// Measured bias and spread per distribution of `kernel` in a run or judged CSV (columns kernel,
// distribution, rel_mean_u, rel_std_u; the first row of each distribution).
std::map<std::string, std::pair<double, double>> measured_from_csv(const std::string& csv_path,
                                                                   const std::string& kernel);

// Writes the rows as CSV + metadata (atomically).
void write_port_csv(const std::vector<PortRow>& rows, const std::string& out_csv, const std::string& command_line,
                    const PortOptions& o);

}  // namespace gemmlab
