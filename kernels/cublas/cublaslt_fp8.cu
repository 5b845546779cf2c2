// cublaslt_fp8_*: cuBLASLt's fp8 GEMM (e4m3 x e4m3 in, fp32 compute and out) as the library baseline
// for the fp8 promotion experiment, with and without CUBLASLT_MATMUL_DESC_FAST_ACCUM.
//
// Numerics: products of fp8 values are exact; the library chooses the kernel. Without fast
// accumulation cuBLASLt promotes the tensor core's partial sums into fp32 at an interval it does not
// document; with FAST_ACCUM it lets the wgmma accumulator (about 13 fraction bits kept when terms
// are aligned on Hopper) run over all of K. Both are judged as Rounding::unknown with
// acc_unit_roundoff = 2^-13, like our fp8 kernels: measured on an H200 (cuBLAS 13), the entry
// WITHOUT fast accumulation exceeded the fp32-accumulator bound (componentwise 8.2e-4 against 7.6e-5
// at K = 640, U[0,1)), so its partial sums are not kept in full fp32 either.
// Layouts: cuBLASLt's fp8 path needs the "TN" form, i.e. A row-major (M, K) and B column-major
// (K, N), both K-major (the same as the Hopper kernels). Row-major C = A B is computed as
// column-major C^T (N, M) = op(B)^T A^T with op = T on the (K, N) column-major B.
// e5m2 x e5m2 is not offered by cuBLASLt, so there is no e5m2 baseline. Both launch through the
// shared cuBLASLt path (kernels/cublas/cublaslt_matmul.cu), which reports the heuristic's choice.
#include "kernels/cublas/cublaslt_problem.cuh"
#include "kernels/cublas/library_kernel.hpp"
#include "kernels/kernel.hpp"

namespace gemmlab::kernels {
namespace {

constexpr std::size_t WORKSPACE = 32u << 20;  // 32 MiB, as cuBLAS recommends for Hopper
constexpr const char* kNeeds = "fp8 needs compute capability 8.9 or newer, K a multiple of 16";

constexpr Kernel make(const char* name, const char* desc, const LtProblem* problem) {
  return cublaslt_fp8_kernel(name, desc, cublaslt_launch, 89, WORKSPACE, problem);
}

}  // namespace

const Kernel& cublaslt_fp8_e4m3_f32() {
  static const LtProblem p{"cublaslt_fp8_e4m3_f32", CUDA_R_8F_E4M3, CUDA_R_32F, CUBLAS_COMPUTE_32F, CUDA_R_32F, true,
                           false, kNeeds};
  static const Kernel k = make("cublaslt_fp8_e4m3_f32", "cuBLASLt fp8 e4m3 in, fp32 compute and out", &p);
  return k;
}
const Kernel& cublaslt_fp8_e4m3_f32_fast_accum() {
  static const LtProblem p{"cublaslt_fp8_e4m3_f32_fast_accum", CUDA_R_8F_E4M3, CUDA_R_32F, CUBLAS_COMPUTE_32F,
                           CUDA_R_32F, true, true, kNeeds};
  static const Kernel k = make("cublaslt_fp8_e4m3_f32_fast_accum",
                               "cuBLASLt fp8 e4m3 in, fp32 out, CUBLASLT_MATMUL_DESC_FAST_ACCUM", &p);
  return k;
}

}  // namespace gemmlab::kernels
