// `gemmlab bench-reference`: the exact reference engines side by side, per distribution, input
// format and size, in one run: the CPU engine (reference/exact_gemm: fixed_int128 or Kulisch, all
// host threads) and the GPU engine (device/exact_reference_gpu: int8 Ozaki splits, digits or residues, the one
// that ran and its GEMM count in the columns split and gemms), the GPU from host
// matrices and with the operands already on the GPU (what `gemmlab run` has), each checked bit for
// bit against the CPU where the CPU runs; and, optionally, the statistics of one output on the CPU
// and on the GPU. One tidy CSV + metadata.
#pragma once
#include <string>
#include <vector>

#include "experiments/plan/plan.hpp"
#include "reference/formats.hpp"

namespace gemmlab {

struct BenchReferenceOptions {
  std::vector<Size> sizes = {{4096, 4096, 4096}};
  std::vector<std::string> distributions = {"all"};
  std::vector<Format> formats = {Format::fp32, Format::fp16};
  std::string cpu = "all";  // all | none | <N>: the CPU engine at every size, never, or at sizes up to N^3
  bool gpu = true;          // false: CPU only (works without a GPU)
  int stats_n = 0;          // > 0: also time the statistics of one (n, n) output, CPU vs GPU
  int threads = 0;          // CPU threads (0: all)
  std::string out_csv;
};

// Returns the exit code: 0, or 5 when a GPU reference or statistic differed from the CPU's (the row
// says so). Throws UsageError for bad options or when the GPU is asked for and none is usable.
int bench_reference(const BenchReferenceOptions& opt, const std::string& command_line);

}  // namespace gemmlab
