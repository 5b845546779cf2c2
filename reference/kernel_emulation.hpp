// Predicting a whole kernel's output bit for bit on the CPU: the tensor-core model (tc_model.hpp)
// composed in the kernel's order of accumulation, or fp32 FMA in the CUDA-core kernels' order.
//
// The kernel's numerics record (reference/numerics.hpp) says its order of accumulation:
//  * fma       acc = fmaf(a_k, b_k, acc) from +0, one k at a time in increasing k (CUDA cores);
//  * in_mma, in_wgmma
//              D = mma(A, B, D): k-steps of `k_step` products in increasing k, the running sum
//              is the C of every instruction (it joins each block's alignment);
//  * external  T = mma(A, B, +0) per k-step, acc = fp32 RN(acc + T) (__fadd_rn);
//  * promoted  part = +0; in the instruction for `promotion_interval_k` elements of K into part,
//              then acc = fp32 RN(acc + part) and part = +0 again; one more acc + part at the end.
// Split-K inside a block (`split_k` > 1): k-step s goes to partial sum s % split_k (the WMMA v4
// kernel's two warps take alternate k16 halves of each k-tile); every partial runs the mode above
// on its own k-steps and the partials are added at the end left to right with fp32 RN adds.
//
// Plain C++ (no CUDA header): built and tested on CPU-only machines.
#pragma once
#include <optional>
#include <string>
#include <vector>

#include "reference/formats.hpp"
#include "reference/matrix.hpp"
#include "reference/numerics.hpp"
#include "reference/summation_tree.hpp"
#include "reference/tc_model.hpp"

namespace gemmlab::emulation {

// Predicts C = A B (A (M, K), B (K, N), values exact in the instruction's input format, or fp32
// for fma) as the kernel computes it; returns (M, N) row-major. `params` is the tensor-core model
// of order.instruction (unused for fma). threads <= 0: hardware concurrency. Throws
// std::invalid_argument when the order is not predictable (Numerics::predictable), or K is not a
// multiple of the k-step (times split_k) or of promotion_interval_k.
std::vector<double> emulate(const Numerics& order, const Matrix& A, const Matrix& B,
                            const tc::TcParams& params, int threads = 0);

// One output entry: a (K) and b (K) the row of A and the column of B.
double emulate_dot(const Numerics& order, const double* a, const double* b, int K,
                   const tc::TcParams& params);

// The summation tree this order implies for K products (leaves 0 .. K-1), to compare with the
// tree `gemmlab order` measures on the hardware.
SummationTree expected_tree(const Numerics& order, int K);

}  // namespace gemmlab::emulation
