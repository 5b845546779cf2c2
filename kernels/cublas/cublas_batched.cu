// cublas_strided_batched_bf16: cublasGemmStridedBatchedEx, bf16 in and out, fp32 compute (CUBLAS_COMPUTE_32F,
// fp32 alpha and beta): the batched GEMM of attention (torch.bmm in bf16). Its own form is 4 batches; it takes
// alpha and beta C0 too (reference/gemm_form.hpp).
//
// Numerics: the library chooses the algorithm per size (order and rounding of the accumulation unknown, as for
// every cuBLAS baseline); whether the batch index changes it is what `gemmlab explain` asks per batch.
// cuBLAS computes C = alpha A B + beta C in place, so with a C0 the launch first copies C0 into C on the stream
// (inside the timed region: a caller of cuBLAS pays the same copy, as torch.baddbmm does into its output); beta C0
// and the rounding to bf16 happen in the library's epilogue, placement unknown.
// Row-major batch t, C_t = A_t B_t, is the column-major C_t^T (N, M) = B_t^T A_t^T, strides M K, K N, M N.
#include <cublas_v2.h>

#include "kernels/common/cuda_check.cuh"
#include "kernels/cublas/library_kernel.hpp"
#include "kernels/kernel.hpp"

namespace gemmlab::kernels {
namespace {

void launch(const GemmArgs& a) {
  auto h = static_cast<cublasHandle_t>(a.cublas);
  if (!h) throw std::runtime_error("cublas_strided_batched: the harness passed no cuBLAS handle");
  if (a.groups != 0 || a.bias) throw std::runtime_error("cublas_strided_batched_bf16 takes no groups and no bias");
  GEMMLAB_CUBLAS_CHECK(cublasSetStream(h, as_stream(a.stream)));
  const long long mn = static_cast<long long>(a.M) * a.N;
  if (a.C0)
    GEMMLAB_CUDA_CHECK(cudaMemcpyAsync(a.C, a.C0, static_cast<std::size_t>(mn) * a.batch * 2, cudaMemcpyDeviceToDevice,
                                       as_stream(a.stream)));
  const float alpha = a.alpha, beta = a.C0 ? a.beta : 0.0f;
  GEMMLAB_CUBLAS_CHECK(cublasGemmStridedBatchedEx(
      h, CUBLAS_OP_N, CUBLAS_OP_N, a.N, a.M, a.K, &alpha, a.B, CUDA_R_16BF, a.N, static_cast<long long>(a.K) * a.N, a.A,
      CUDA_R_16BF, a.K, static_cast<long long>(a.M) * a.K, &beta, a.C, CUDA_R_16BF, a.N, mn, a.batch, CUBLAS_COMPUTE_32F,
      CUBLAS_GEMM_DEFAULT));
}

}  // namespace

const Kernel& cublas_strided_batched_bf16() {
  static const Kernel k = [] {
    Kernel k = library_kernel("cublas_strided_batched_bf16",
                              "cuBLAS cublasGemmStridedBatchedEx, bf16 in and out, fp32 compute; batches, alpha, beta C0",
                              Format::bf16, Format::bf16, Format::fp32, Format::bf16, launch, 80);
    k.forms = FormSupport{.alpha = true, .c0 = true, .batch = true};
    k.epilogue = epilogue_of_output(Format::bf16);
    k.form = "batch=4";
    return k;
  }();
  return k;
}

}  // namespace gemmlab::kernels
