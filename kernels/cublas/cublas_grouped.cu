// cublas_grouped_bf16: cuBLAS's grouped GEMM, cublasGemmGroupedBatchedEx (cuBLAS >= 12.5), bf16 in and out, fp32
// compute: the GEMM of a mixture-of-experts layer, group g (an expert) taking its m_g rows of A with its own B_g
// (reference/gemm_form.hpp, groups=...). Its own form has groups of 128, 512 and 1000 rows and the rest of M; it
// takes alpha and beta C0 too.
//
// Numerics: the library's (order and rounding of the accumulation unknown); whether a group's size changes the
// tree is `gemmlab explain`'s question. With a C0 the launch copies it into C first (cuBLAS computes in place), as
// cublas_strided_batched does.
// Each group is one problem of its own group (group_size 1): the column-major C_g^T (N, m_g) = B_g^T A_g^T, with
// A_g the (m_g, K) row-major block at row o_g of A, B_g at B + g K N, C_g at row o_g of C. cuBLAS reads the
// operands' addresses from device arrays: the launch writes them into its workspace with a small kernel on the
// stream, inside the timed region, as every caller of the grouped API must (at most 256 groups).
#include <cublas_v2.h>

#include <vector>

#include "kernels/common/cuda_check.cuh"
#include "kernels/cublas/library_kernel.hpp"
#include "kernels/kernel.hpp"

namespace gemmlab::kernels {
namespace {

constexpr int kMaxGroups = 256;
constexpr std::size_t kWorkspace = 3 * kMaxGroups * sizeof(void*);

// The operands' addresses per group, written on the GPU (no host synchronisation inside the timed launch).
struct GroupPointers {
  const unsigned char* A;
  const unsigned char* B;
  unsigned char* C;
  int K, N, G;
  int row0[kMaxGroups];  // first row of each group
};
__global__ void write_pointers_kernel(GroupPointers p, void** out) {
  const int g = blockIdx.x * blockDim.x + threadIdx.x;
  if (g >= p.G) return;
  out[g] = const_cast<unsigned char*>(p.B) + static_cast<std::size_t>(g) * p.K * p.N * 2;          // cuBLAS's A: B_g^T
  out[p.G + g] = const_cast<unsigned char*>(p.A) + static_cast<std::size_t>(p.row0[g]) * p.K * 2;  // cuBLAS's B: A_g^T
  out[2 * p.G + g] = p.C + static_cast<std::size_t>(p.row0[g]) * p.N * 2;                          // C_g^T
}

void launch(const GemmArgs& a) {
  auto h = static_cast<cublasHandle_t>(a.cublas);
  if (!h) throw std::runtime_error("cublas_grouped: the harness passed no cuBLAS handle");
  if (a.batch != 1 || a.bias) throw std::runtime_error("cublas_grouped_bf16 takes no batches and no bias");
  const int G = a.groups > 0 ? a.groups : 1;
  if (G > kMaxGroups) throw std::runtime_error("cublas_grouped_bf16 takes at most " + std::to_string(kMaxGroups) + " groups");
  if (!a.workspace || a.workspace_bytes < kWorkspace) throw std::runtime_error("cublas_grouped_bf16: no workspace for its pointers");
  const auto stream = as_stream(a.stream);
  GEMMLAB_CUBLAS_CHECK(cublasSetStream(h, stream));
  std::vector<cublasOperation_t> op(G, CUBLAS_OP_N);
  std::vector<int> m(G, a.N), n(G), k(G, a.K), lda(G, a.N), ldb(G, a.K), ldc(G, a.N), size(G, 1);
  std::vector<float> alpha(G, a.alpha), beta(G, a.C0 ? a.beta : 0.0f);
  GroupPointers p{static_cast<const unsigned char*>(a.A), static_cast<const unsigned char*>(a.B),
                  static_cast<unsigned char*>(a.C), a.K, a.N, G, {}};
  int row = 0;
  for (int g = 0; g < G; ++g) {
    n[g] = a.groups > 0 ? a.group_rows[g] : a.M;
    p.row0[g] = row;
    row += n[g];
  }
  if (row != a.M) throw std::runtime_error("cublas_grouped_bf16: the groups' rows do not add up to M");
  if (a.C0)
    GEMMLAB_CUDA_CHECK(cudaMemcpyAsync(a.C, a.C0, static_cast<std::size_t>(a.M) * a.N * 2, cudaMemcpyDeviceToDevice, stream));
  void** dev = static_cast<void**>(a.workspace);
  write_pointers_kernel<<<(G + 127) / 128, 128, 0, stream>>>(p, dev);
  GEMMLAB_LAUNCH_CHECK("write_pointers_kernel");
  const cublasStatus_t st = cublasGemmGroupedBatchedEx(h, op.data(), op.data(), m.data(), n.data(), k.data(),
                                                       alpha.data(), dev, CUDA_R_16BF, lda.data(), dev + G, CUDA_R_16BF,
                                                       ldb.data(), beta.data(), dev + 2 * G, CUDA_R_16BF, ldc.data(), G,
                                                       size.data(), CUBLAS_COMPUTE_32F);
  if (st == CUBLAS_STATUS_NOT_SUPPORTED)  // the library's refusal, not a fault: a not_supported row
    throw KernelNotSupported("cublas_grouped_bf16: this cuBLAS (or GPU) has no grouped GEMM for bf16 with fp32 compute");
  if (st != CUBLAS_STATUS_SUCCESS) cublas_fail(st, "cublasGemmGroupedBatchedEx", __FILE__, __LINE__);
}

}  // namespace

const Kernel& cublas_grouped_bf16() {
  static const Kernel k = [] {
    Kernel k = library_kernel("cublas_grouped_bf16",
                              "cuBLAS cublasGemmGroupedBatchedEx, bf16 in and out, fp32 compute; groups, alpha, beta C0",
                              Format::bf16, Format::bf16, Format::fp32, Format::bf16, launch, 80, kWorkspace);
    k.forms = FormSupport{.alpha = true, .c0 = true, .groups = true};
    k.epilogue = epilogue_of_output(Format::bf16);
    k.form = "groups=128+512+1000+*";
    return k;
  }();
  return k;
}

}  // namespace gemmlab::kernels
