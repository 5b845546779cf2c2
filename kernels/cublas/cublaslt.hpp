// The cuBLASLt kernels' shared path (kernels/cublas/cublaslt_matmul.cu): every cublaslt_* kernel
// launches through one function that reads its problem (types, compute type, transposes, fast
// accumulation) from Kernel::context, asks the heuristic for an algorithm per size and workspace,
// and keeps that choice while the size repeats. This header lets the harness ask which algorithm
// the heuristic picks (gemmlab invariance reports it per size). No CUDA types.
#pragma once
#include <cstddef>
#include <string>

#include "kernels/kernel.hpp"

namespace gemmlab {

// Whether k launches through the shared cuBLASLt path (then its context is its problem).
bool is_cublaslt(const Kernel& k);

// The algorithm cuBLASLt's heuristic picks for kernel k at (M, N, K) with up to `workspace_bytes`
// of workspace, on the current GPU, through `lt_handle` (a cublasLtHandle_t; nullptr: a handle of
// this thread's own), read back with cublasLtMatmulAlgoConfigGetAttribute, e.g. "algo 66 tile
// 128x128 stages 4 split-K 1 reduction none swizzle 0 custom 0". Throws std::runtime_error when
// the heuristic offers none (the text says for which size).
std::string cublaslt_algorithm(const Kernel& k, int M, int N, int K, std::size_t workspace_bytes,
                               void* lt_handle = nullptr);

}  // namespace gemmlab
