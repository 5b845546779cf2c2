// A `gemmlab inputs` folder: the A and B of one problem, bit for bit those `gemmlab run` feeds a
// kernel of that input format, for a kernel gemmlab does not build (your CUDA, Triton, PyTorch):
//
//   DIR/A.npy        (M, K) float64, every value exactly a value of `format`
//   DIR/B.npy        (K, N) float64
//   DIR/inputs.json  {inputs_format_version, gemmlab_version, git_commit, distribution, M, N, K,
//                     seed, format, files: {A: {file, shape, dtype, sha256}, B: ...}, ...}
//
// `gemmlab evaluate DIR --output C.npy` (and gemmlab.read_inputs) read it back and refuse a folder
// that is not one, whose files changed (sha256), or that another gemmlab version wrote.
#pragma once
#include <cstdint>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "reference/formats.hpp"
#include "reference/matrix.hpp"

namespace gemmlab {

// The layout of inputs.json; a reader refuses any other (the folder must be made again).
inline constexpr int kInputsFormatVersion = 1;

struct InputsSpec {
  std::string distribution;  // any name `gemmlab run -d` takes; stored canonical
  int M = 0, N = 0, K = 0;
  std::uint64_t seed = 1;
  Format format = Format::fp32;  // the kernel's input format
};

struct InputsFolder {
  InputsSpec spec;
  Matrix A, B;
  nlohmann::json json;                // inputs.json as read
  std::vector<std::string> warnings;  // e.g. written by another git commit of the same version
};

// Generates A and B as `gemmlab run` does and writes the folder (created if missing). Refuses
// (UsageError) an existing non-empty folder unless `force`, a distribution that cannot be expressed
// in the format, or a non-positive size. Files are written atomically, inputs.json last. Returns
// inputs.json.
nlohmann::json write_inputs(const InputsSpec& spec, const std::string& dir, bool force, int threads,
                            const std::string& command_line);

// Reads a folder written by write_inputs; UsageError saying what is wrong and what to do.
InputsFolder read_inputs(const std::string& dir);

// "<64 hex digits>" of a file's bytes.
std::string sha256_file(const std::string& path);

}  // namespace gemmlab
