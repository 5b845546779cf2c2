// Tile sizes of sgemm_09_autotuned, written by `gemmlab tune` (experiments/tune_sgemm.cu).
// Tuned on NVIDIA H200 (cc 9.0, 132 SMs) on 2026-11-21 05:43 UTC
// by tune_sgemm(M=4096, N=4096, K=4096, reps=10) [gemmlab tune], inputs uniform_-1_1 seed 1:
// fastest of 30 shapes that match sgemm_01_naive bit for bit, median 3.49774 ms = 39.2936 TFLOP/s.
#pragma once

namespace gemmlab::kernels::sgemm09::tuned {
constexpr int BM = 128, BN = 128, BK = 16, TM = 8, TN = 8;
}  // namespace gemmlab::kernels::sgemm09::tuned
