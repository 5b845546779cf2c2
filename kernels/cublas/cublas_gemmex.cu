// cublas_gemmex_*: cuBLAS baselines through cublasGemmEx, one registered entry per compute type.
//
// Numerics: the library chooses the algorithm, so the order of summation and the rounding of the
// accumulation are unknown (Rounding::unknown: bounds use the weaker truncating model). What
// the compute type fixes:
//  * fp32_pedantic: CUBLAS_COMPUTE_32F_PEDANTIC, CUDA-core fp32 arithmetic, no reduced precision.
//  * fp32_default:  CUBLAS_COMPUTE_32F with the default math mode (no TF32 unless allowed).
//  * fp32_fast_tf32 / _fast_16f / _fast_16bf: fp32 in and out, but the tensor cores see the inputs
//    rounded to tf32 / fp16 / bf16 (the `compute` format), products accumulated in fp32.
//  * fp16_f32, bf16_f32: 16-bit inputs, fp32 compute and output (products exact).
//  * fp16_f16: fp16 inputs, fp16 compute (accumulator) and output.
// Row-major C = A*B is computed as column-major C^T = B^T A^T, so A and B stay row-major.
#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include "kernels/common/cuda_check.cuh"
#include "kernels/cublas/library_kernel.hpp"
#include "kernels/kernel.hpp"

namespace gemmlab::kernels {
namespace {

template <cudaDataType_t InT, cudaDataType_t OutT, cublasComputeType_t Compute>
void launch(const GemmArgs& a) {
  auto h = static_cast<cublasHandle_t>(a.cublas);
  if (!h) throw std::runtime_error("cublas_gemmex: the harness passed no cuBLAS handle");
  GEMMLAB_CUBLAS_CHECK(cublasSetStream(h, as_stream(a.stream)));
  // alpha/beta in the compute type's scale type: fp16 for COMPUTE_16F, fp32 otherwise.
  const float one_f = 1.0f, zero_f = 0.0f;
  const __half one_h = __float2half(1.0f), zero_h = __float2half(0.0f);
  const bool half_scale = Compute == CUBLAS_COMPUTE_16F;
  const void* alpha = half_scale ? static_cast<const void*>(&one_h) : static_cast<const void*>(&one_f);
  const void* beta = half_scale ? static_cast<const void*>(&zero_h) : static_cast<const void*>(&zero_f);
  // Column-major view: C^T (N, M) = B^T (N, K) * A^T (K, M); the row-major buffers are exactly these.
  GEMMLAB_CUBLAS_CHECK(cublasGemmEx(h, CUBLAS_OP_N, CUBLAS_OP_N, a.N, a.M, a.K, alpha, a.B, InT, a.N, a.A, InT,
                                    a.K, beta, a.C, OutT, a.N, Compute, CUBLAS_GEMM_DEFAULT));
}

}  // namespace

#define GEMMLAB_CUBLAS_VARIANT(id, desc, in, compute, acc, out, InT, OutT, ComputeT, min_cc)               \
  const Kernel& id() {                                                                                   \
    static const Kernel k = library_kernel(#id, desc, Format::in, Format::compute, Format::acc, Format::out,       \
                                 launch<InT, OutT, ComputeT>, min_cc);                                  \
    return k;                                                                                            \
  }

GEMMLAB_CUBLAS_VARIANT(cublas_gemmex_fp32_pedantic, "cuBLAS fp32, CUBLAS_COMPUTE_32F_PEDANTIC (CUDA cores)",
                       fp32, fp32, fp32, fp32, CUDA_R_32F, CUDA_R_32F, CUBLAS_COMPUTE_32F_PEDANTIC, 50)
GEMMLAB_CUBLAS_VARIANT(cublas_gemmex_fp32_default, "cuBLAS fp32, CUBLAS_COMPUTE_32F, default math mode",
                       fp32, fp32, fp32, fp32, CUDA_R_32F, CUDA_R_32F, CUBLAS_COMPUTE_32F, 50)
GEMMLAB_CUBLAS_VARIANT(cublas_gemmex_fp32_fast_tf32, "cuBLAS fp32 in/out, CUBLAS_COMPUTE_32F_FAST_TF32",
                       fp32, tf32, fp32, fp32, CUDA_R_32F, CUDA_R_32F, CUBLAS_COMPUTE_32F_FAST_TF32, 80)
GEMMLAB_CUBLAS_VARIANT(cublas_gemmex_fp32_fast_16f, "cuBLAS fp32 in/out, CUBLAS_COMPUTE_32F_FAST_16F",
                       fp32, fp16, fp32, fp32, CUDA_R_32F, CUDA_R_32F, CUBLAS_COMPUTE_32F_FAST_16F, 70)
GEMMLAB_CUBLAS_VARIANT(cublas_gemmex_fp32_fast_16bf, "cuBLAS fp32 in/out, CUBLAS_COMPUTE_32F_FAST_16BF",
                       fp32, bf16, fp32, fp32, CUDA_R_32F, CUDA_R_32F, CUBLAS_COMPUTE_32F_FAST_16BF, 80)
GEMMLAB_CUBLAS_VARIANT(cublas_gemmex_fp16_f32, "cuBLAS fp16 in, fp32 compute and out",
                       fp16, fp16, fp32, fp32, CUDA_R_16F, CUDA_R_32F, CUBLAS_COMPUTE_32F, 70)
GEMMLAB_CUBLAS_VARIANT(cublas_gemmex_bf16_f32, "cuBLAS bf16 in, fp32 compute and out",
                       bf16, bf16, fp32, fp32, CUDA_R_16BF, CUDA_R_32F, CUBLAS_COMPUTE_32F, 80)
GEMMLAB_CUBLAS_VARIANT(cublas_gemmex_fp16_f16, "cuBLAS fp16 in, fp16 compute and out",
                       fp16, fp16, fp16, fp16, CUDA_R_16F, CUDA_R_16F, CUBLAS_COMPUTE_16F, 70)

}  // namespace gemmlab::kernels
