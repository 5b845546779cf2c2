// `gemmlab tune`: the parameter search behind sgemm_09_autotuned (Boehm's kernel 9).
#pragma once
#include <string>

namespace gemmlab {

// Times a grid of (BM, BN, BK, TM, TN) instantiations of the sgemm_09 template (and, for reference,
// a few warptiling shapes of the sgemm_10 / sgemm_11 templates) at M x N x K with run_kernel
// (warm-up, L2 flush, NaN-poisoned C, median of `reps`), checks every candidate's output bit for bit
// against sgemm_01_naive on the same uniform_-1_1 inputs, and prints a table, fastest first. When
// write_header_path is non-empty, the fastest bit-identical sgemm_09 shape is written there as a
// kernels/simt/sgemm_09_autotuned_config.hpp (with GPU, date and command), to be committed.
// Returns 0 on success, 2 when no GPU is present or the sizes fit no candidate, 3 when the header
// cannot be written.
int tune_sgemm(int M, int N, int K, int reps, const std::string& write_header_path);

}  // namespace gemmlab
