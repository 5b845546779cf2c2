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
// e5m2 x e5m2 is not offered by cuBLASLt, so there is no e5m2 baseline.
#include <cublasLt.h>

#include <cstdint>

#include "kernels/common/cuda_check.cuh"
#include "kernels/kernel.hpp"

namespace gemmlab::kernels {
namespace {

constexpr std::size_t WORKSPACE = 32u << 20;  // 32 MiB, as cuBLAS recommends for Hopper

void lt_check(cublasStatus_t s, const char* what, int line) {
  if (s != CUBLAS_STATUS_SUCCESS) ::gemmlab::cublas_fail(s, what, __FILE__, line);
}
#define LT_CHECK(call) lt_check((call), #call, __LINE__)

// Descriptors and the chosen algorithm for one (M, N, K, fast) problem, kept while the size repeats
// so that timed repetitions measure the GEMM, not the heuristic query.
struct Plan {
  int M = 0, N = 0, K = 0;
  cublasLtMatmulDesc_t op = nullptr;
  cublasLtMatrixLayout_t a = nullptr, b = nullptr, c = nullptr;
  cublasLtMatmulAlgo_t algo{};
  ~Plan() { reset(); }
  void reset() {
    if (op) cublasLtMatmulDescDestroy(op);
    if (a) cublasLtMatrixLayoutDestroy(a);
    if (b) cublasLtMatrixLayoutDestroy(b);
    if (c) cublasLtMatrixLayoutDestroy(c);
    op = nullptr; a = b = c = nullptr;
  }
};

template <bool FAST>
void launch(const GemmArgs& g) {
  auto h = static_cast<cublasLtHandle_t>(g.cublaslt);
  if (!h) throw std::runtime_error("cublaslt_fp8: the harness passed no cuBLASLt handle");
  if (!g.workspace || g.workspace_bytes < WORKSPACE)
    throw std::runtime_error("cublaslt_fp8: the harness passed less workspace than Kernel::workspace_bytes");
  static thread_local Plan plan;
  if (plan.M != g.M || plan.N != g.N || plan.K != g.K || !plan.op) {
    plan.reset();
    LT_CHECK(cublasLtMatmulDescCreate(&plan.op, CUBLAS_COMPUTE_32F, CUDA_R_32F));
    const cublasOperation_t t = CUBLAS_OP_T, n = CUBLAS_OP_N;
    LT_CHECK(cublasLtMatmulDescSetAttribute(plan.op, CUBLASLT_MATMUL_DESC_TRANSA, &t, sizeof(t)));
    LT_CHECK(cublasLtMatmulDescSetAttribute(plan.op, CUBLASLT_MATMUL_DESC_TRANSB, &n, sizeof(n)));
    const std::int8_t fast = FAST ? 1 : 0;
    LT_CHECK(cublasLtMatmulDescSetAttribute(plan.op, CUBLASLT_MATMUL_DESC_FAST_ACCUM, &fast, sizeof(fast)));
    // Column-major operands: first = B as (K, N) with ld K, transposed; second = A^T as (K, M), ld K.
    LT_CHECK(cublasLtMatrixLayoutCreate(&plan.a, CUDA_R_8F_E4M3, g.K, g.N, g.K));
    LT_CHECK(cublasLtMatrixLayoutCreate(&plan.b, CUDA_R_8F_E4M3, g.K, g.M, g.K));
    LT_CHECK(cublasLtMatrixLayoutCreate(&plan.c, CUDA_R_32F, g.N, g.M, g.N));
    cublasLtMatmulPreference_t pref = nullptr;
    LT_CHECK(cublasLtMatmulPreferenceCreate(&pref));
    const std::size_t ws = WORKSPACE;
    LT_CHECK(cublasLtMatmulPreferenceSetAttribute(pref, CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES, &ws, sizeof(ws)));
    cublasLtMatmulHeuristicResult_t res{};
    int found = 0;
    cublasStatus_t st = cublasLtMatmulAlgoGetHeuristic(h, plan.op, plan.a, plan.b, plan.c, plan.c, pref, 1, &res, &found);
    cublasLtMatmulPreferenceDestroy(pref);
    if (st != CUBLAS_STATUS_SUCCESS || found == 0) {
      plan.reset();
      throw std::runtime_error("cublaslt_fp8: cuBLASLt offers no e4m3 x e4m3 -> fp32 algorithm for M=" +
                               std::to_string(g.M) + " N=" + std::to_string(g.N) + " K=" + std::to_string(g.K) +
                               " on this GPU (fp8 needs compute capability 8.9 or newer, K a multiple of 16)");
    }
    plan.algo = res.algo;
    plan.M = g.M; plan.N = g.N; plan.K = g.K;
  }
  const float one = 1.0f, zero = 0.0f;
  LT_CHECK(cublasLtMatmul(h, plan.op, &one, g.B, plan.a, g.A, plan.b, &zero, g.C, plan.c, g.C, plan.c, &plan.algo,
                          g.workspace, WORKSPACE, as_stream(g.stream)));
}

template <bool FAST>
constexpr Kernel make(const char* name, const char* desc) {
  return Kernel{
      .name = name, .family = "cublas", .description = desc,
      .numerics = {.input = Format::e4m3, .compute = Format::e4m3, .accumulator = Format::fp32,
                   .output = Format::fp32, .accumulation = Accumulation::library, .k_step = 0,
                   .accumulation_rounding = Rounding::unknown, .acc_unit_roundoff = 0x1p-13},
      .layout_a = Layout::row_major, .layout_b = Layout::col_major,
      .m_multiple = 16, .n_multiple = 16, .k_multiple = 16,
      .min_cc = 89, .requires_sm90a = false, .workspace_bytes = WORKSPACE,
      .launch = launch<FAST>,
  };
}

}  // namespace

const Kernel& cublaslt_fp8_e4m3_f32() {
  static const Kernel k = make<false>("cublaslt_fp8_e4m3_f32", "cuBLASLt fp8 e4m3 in, fp32 compute and out");
  return k;
}
const Kernel& cublaslt_fp8_e4m3_f32_fast_accum() {
  static const Kernel k = make<true>("cublaslt_fp8_e4m3_f32_fast_accum",
                                     "cuBLASLt fp8 e4m3 in, fp32 out, CUBLASLT_MATMUL_DESC_FAST_ACCUM");
  return k;
}

}  // namespace gemmlab::kernels
