// What a cublaslt_* kernel asks cuBLASLt for (its Kernel::context): the shared launch
// (kernels/cublas/cublaslt_matmul.cu) builds the descriptors from it.
#pragma once
#include <cublasLt.h>
#include <cuda_fp16.h>

#include "kernels/kernel.hpp"

namespace gemmlab {

struct LtProblem {
  const char* label;             // the kernel's name, for messages
  cudaDataType_t in, out;        // A and B; C
  cublasComputeType_t compute;
  cudaDataType_t scale;          // alpha and beta (1 and 0): CUDA_R_16F, CUDA_R_32I or CUDA_R_32F
  bool tn;                       // the "TN" form: A row-major (M, K), B column-major (K, N), both K-major (fp8, int8)
  bool fast_accum;               // CUBLASLT_MATMUL_DESC_FAST_ACCUM
  const char* needs;             // what the heuristic needs, for the message when it offers nothing
};

// The launch of every cublaslt_* kernel: C = A B through cublasLtMatmul with args.context's
// problem, args.workspace_bytes of workspace (the heuristic's choice depends on it).
void cublaslt_launch(const GemmArgs& g);

}  // namespace gemmlab
