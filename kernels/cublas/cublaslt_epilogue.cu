// cublaslt_bias_*: cuBLASLt with the BIAS epilogue and alpha / beta, the matmul of a linear layer with a bias
// (C = alpha A B + beta C0 + bias, reference/gemm_form.hpp): fp16 or bf16 in, fp32 compute and epilogue
// (CUBLAS_COMPUTE_32F, fp32 alpha and beta), fp16 or bf16 out, C0 and the bias in the output type. Its own form
// (what `gemmlab run` runs it on by default) has an alpha and a beta that are not powers of two, a C0 and a
// column bias.
//
// Numerics: the library chooses the algorithm (as every cublaslt_* baseline: order and rounding of the
// accumulation unknown, Rounding::unknown). cuBLASLt documents the bias as "added before applying the final
// postprocessing"; whether the bias and beta C0 enter before the conversion to the output type or are rounded
// apart is not stated in terms gemmlab can rely on, so the record says `unknown` and the bound takes the weaker
// placement (error_stats.hpp) until `gemmlab explain` settles it.
// Row-major C = alpha A B + beta C0 + bias is the column-major D^T (N, M) = alpha B^T A^T + beta C0^T + bias, a
// bias of N entries: one per row of D^T, i.e. per column of gemmlab's C (BiasKind::column), as F.linear's.
// On a plain row (alpha 1, no C0, no bias) it is C = A B with epilogue DEFAULT.
#include <cublasLt.h>

#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <tuple>

#include "kernels/common/cuda_check.cuh"
#include "kernels/cublas/library_kernel.hpp"
#include "kernels/kernel.hpp"

namespace gemmlab::kernels {
namespace {

void lt_check(cublasStatus_t s, const char* what, int line) {
  if (s != CUBLAS_STATUS_SUCCESS) cublas_fail(s, what, __FILE__, line);
}
#define LT_CHECK(call) lt_check((call), #call, __LINE__)

struct EpilogueProblem {
  const char* label;
  cudaDataType_t io;  // A, B, C0, D and the bias
};

// Descriptors and the heuristic's algorithm of one (problem, M, N, K, workspace, with C0, with bias) on one
// handle, kept while they repeat so that timed launches measure the matmul, not the query.
struct Plan {
  cublasLtMatmulDesc_t op = nullptr;
  cublasLtMatrixLayout_t a = nullptr, b = nullptr, c = nullptr;
  cublasLtMatmulAlgo_t algo{};
  ~Plan() {
    if (op) cublasLtMatmulDescDestroy(op);
    if (a) cublasLtMatrixLayoutDestroy(a);
    if (b) cublasLtMatrixLayoutDestroy(b);
    if (c) cublasLtMatrixLayoutDestroy(c);
  }
};

Plan& plan_for(cublasLtHandle_t h, const EpilogueProblem& p, int M, int N, int K, std::size_t ws, bool bias) {
  using Key = std::tuple<const void*, const void*, int, int, int, std::size_t, bool>;
  static thread_local std::map<Key, std::unique_ptr<Plan>> plans;
  auto& slot = plans[Key{h, &p, M, N, K, ws, bias}];
  if (slot) return *slot;
  auto plan = std::make_unique<Plan>();
  LT_CHECK(cublasLtMatmulDescCreate(&plan->op, CUBLAS_COMPUTE_32F, CUDA_R_32F));
  const cublasOperation_t n = CUBLAS_OP_N;
  LT_CHECK(cublasLtMatmulDescSetAttribute(plan->op, CUBLASLT_MATMUL_DESC_TRANSA, &n, sizeof(n)));
  LT_CHECK(cublasLtMatmulDescSetAttribute(plan->op, CUBLASLT_MATMUL_DESC_TRANSB, &n, sizeof(n)));
  const cublasLtEpilogue_t epi = bias ? CUBLASLT_EPILOGUE_BIAS : CUBLASLT_EPILOGUE_DEFAULT;
  LT_CHECK(cublasLtMatmulDescSetAttribute(plan->op, CUBLASLT_MATMUL_DESC_EPILOGUE, &epi, sizeof(epi)));
  if (bias) {
    const cudaDataType_t bt = p.io;
    LT_CHECK(cublasLtMatmulDescSetAttribute(plan->op, CUBLASLT_MATMUL_DESC_BIAS_DATA_TYPE, &bt, sizeof(bt)));
  }
  // Column-major view: D^T (N, M) = B^T (N, K) A^T (K, M); the row-major buffers are exactly these.
  LT_CHECK(cublasLtMatrixLayoutCreate(&plan->a, p.io, N, K, N));
  LT_CHECK(cublasLtMatrixLayoutCreate(&plan->b, p.io, K, M, K));
  LT_CHECK(cublasLtMatrixLayoutCreate(&plan->c, p.io, N, M, N));
  cublasLtMatmulPreference_t pref = nullptr;
  LT_CHECK(cublasLtMatmulPreferenceCreate(&pref));
  LT_CHECK(cublasLtMatmulPreferenceSetAttribute(pref, CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES, &ws, sizeof(ws)));
  cublasLtMatmulHeuristicResult_t res{};
  int found = 0;
  const cublasStatus_t st =
      cublasLtMatmulAlgoGetHeuristic(h, plan->op, plan->a, plan->b, plan->c, plan->c, pref, 1, &res, &found);
  cublasLtMatmulPreferenceDestroy(pref);
  if (st != CUBLAS_STATUS_SUCCESS || found == 0)
    throw KernelNotSupported(std::string(p.label) + ": cuBLASLt offers no algorithm for M=" + std::to_string(M) +
                             " N=" + std::to_string(N) + " K=" + std::to_string(K) + (bias ? " with the BIAS epilogue" : "") +
                             " on this GPU");
  plan->algo = res.algo;
  slot = std::move(plan);
  return *slot;
}

void launch(const GemmArgs& g) {
  auto h = static_cast<cublasLtHandle_t>(g.cublaslt);
  const auto* p = static_cast<const EpilogueProblem*>(g.context);
  if (!h || !p) throw std::runtime_error("cublaslt_bias: the harness passed no cuBLASLt handle or no problem (context)");
  if (g.batch != 1 || g.groups != 0) throw std::runtime_error(std::string(p->label) + " takes no batches or groups");
  if (g.bias && g.bias_kind != BiasKind::column)
    throw std::runtime_error(std::string(p->label) + " takes a column bias only (one value per column of C)");
  const bool bias = g.bias != nullptr;
  Plan& plan = plan_for(h, *p, g.M, g.N, g.K, g.workspace_bytes, bias);
  if (bias)
    LT_CHECK(cublasLtMatmulDescSetAttribute(plan.op, CUBLASLT_MATMUL_DESC_BIAS_POINTER, &g.bias, sizeof(g.bias)));
  const float alpha = g.alpha, beta = g.C0 ? g.beta : 0.0f;
  const void* c = g.C0 ? g.C0 : g.C;  // beta 0: C is not read
  LT_CHECK(cublasLtMatmul(h, plan.op, &alpha, g.B, plan.a, g.A, plan.b, &beta, c, plan.c, g.C, plan.c, &plan.algo,
                          g.workspace, g.workspace_bytes, as_stream(g.stream)));
}

constexpr std::size_t kWorkspace = 32u << 20;  // as cublaslt_*

Kernel bias_kernel(const char* name, const char* desc, Format io, const EpilogueProblem* problem) {
  Kernel k = library_kernel(name, desc, io, io, Format::fp32, io, launch, 80, kWorkspace, problem);
  k.forms = FormSupport{.alpha = true, .c0 = true, .bias_column = true};
  k.epilogue = epilogue_of_output(io);  // C0 and the bias in the output type, fp32 arithmetic, placement unknown
  k.form = "alpha=0.3,beta=0.7,c0=uniform_-1_1,bias=column:uniform_-1_1";
  return k;
}

}  // namespace

const Kernel& cublaslt_bias_fp16() {
  static const EpilogueProblem problem{"cublaslt_bias_fp16", CUDA_R_16F};
  static const Kernel k = bias_kernel("cublaslt_bias_fp16",
                                      "cuBLASLt fp16 in and out, fp32 compute, alpha, beta C0 and the BIAS epilogue "
                                      "(bias and C0 fp16)",
                                      Format::fp16, &problem);
  return k;
}

const Kernel& cublaslt_bias_bf16() {
  static const EpilogueProblem problem{"cublaslt_bias_bf16", CUDA_R_16BF};
  static const Kernel k = bias_kernel("cublaslt_bias_bf16",
                                      "cuBLASLt bf16 in and out, fp32 compute, alpha, beta C0 and the BIAS epilogue "
                                      "(bias and C0 bf16)",
                                      Format::bf16, &problem);
  return k;
}

}  // namespace gemmlab::kernels
