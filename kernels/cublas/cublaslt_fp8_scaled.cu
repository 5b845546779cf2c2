// cublaslt_fp8_scaled_e4m3_<recipe>_f32*: cuBLASLt's fp8 GEMM (e4m3 x e4m3 in, fp32 compute and
// out; see cublaslt_fp8.cu for the unscaled baselines, their numerics and layouts) with per-operand
// dequantization scales (CUBLASLT_MATMUL_DESC_A/B_SCALE_MODE and _POINTER, cuBLAS 12.9+, Hopper),
// the baselines of the scaled fp8 recipes (reference/scaled_fp8.hpp): SCALAR_32F (tensor),
// OUTER_VEC_32F (rowwise), VEC128_32F x BLK128x128_32F (1x128_128x128, DeepSeek-V3) and VEC128_32F x
// VEC128_32F (1x128_1x128). The scales arrive in cuBLASLt's own layouts (kernel_scales). Where and
// in which order the library applies them is not documented: that is what `gemmlab predict` and
// the masking experiment of `gemmlab order` are run on these entries to find out
// (scripts/lab/gpu_scaled_fp8.sh). Fast accumulation is offered for the tensor and rowwise modes only:
// the block modes refuse it (PyTorch #158037 disables it for them), so there are no such entries.
// Operand roles: cuBLASLt's A is gemmlab's B (N side) and cuBLASLt's B is gemmlab's A (M side), as
// PyTorch's _scaled_mm passes them, so "VEC128 x BLK128x128" in PyTorch's (and gemmlab's) order is
// B_SCALE_MODE = VEC128, A_SCALE_MODE = BLK128x128 in cuBLASLt's.
#include <cublasLt.h>

#include <cstdint>

#include "kernels/common/cuda_check.cuh"
#include "kernels/cublas/library_kernel.hpp"
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

// The cuBLASLt scale mode of a gemmlab scale granularity (none: no scale attributes at all).
constexpr int lt_scale_mode(ScaleGranularity g) {
  switch (g) {
    case ScaleGranularity::tensor: return CUBLASLT_MATMUL_MATRIX_SCALE_SCALAR_32F;
    case ScaleGranularity::outer: return CUBLASLT_MATMUL_MATRIX_SCALE_OUTER_VEC_32F;
    case ScaleGranularity::k128: return CUBLASLT_MATMUL_MATRIX_SCALE_VEC128_32F;
    case ScaleGranularity::blk128: return CUBLASLT_MATMUL_MATRIX_SCALE_BLK128x128_32F;
    default: return -1;
  }
}

// Points the descriptor at this problem's scale grids. cuBLASLt's A is gemmlab's B, its B gemmlab's A.
void set_scale_pointers(cublasLtMatmulDesc_t op, const GemmArgs& g) {
  if (!g.scale_a || !g.scale_b) throw std::runtime_error("cublaslt_fp8_scaled: the harness passed no scale grids");
  const void* lt_a = g.scale_b;
  const void* lt_b = g.scale_a;
  LT_CHECK(cublasLtMatmulDescSetAttribute(op, CUBLASLT_MATMUL_DESC_A_SCALE_POINTER, &lt_a, sizeof(lt_a)));
  LT_CHECK(cublasLtMatmulDescSetAttribute(op, CUBLASLT_MATMUL_DESC_B_SCALE_POINTER, &lt_b, sizeof(lt_b)));
}

template <bool FAST, ScaleGranularity SA = ScaleGranularity::none, ScaleGranularity SB = ScaleGranularity::none>
void launch(const GemmArgs& g) {
  constexpr bool scaled = SA != ScaleGranularity::none;
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
    if constexpr (scaled) {
      // cuBLASLt's A is gemmlab's B, its B gemmlab's A (see the header).
      const std::int32_t mode_lt_a = lt_scale_mode(SB), mode_lt_b = lt_scale_mode(SA);
      LT_CHECK(cublasLtMatmulDescSetAttribute(plan.op, CUBLASLT_MATMUL_DESC_A_SCALE_MODE, &mode_lt_a, sizeof(mode_lt_a)));
      LT_CHECK(cublasLtMatmulDescSetAttribute(plan.op, CUBLASLT_MATMUL_DESC_B_SCALE_MODE, &mode_lt_b, sizeof(mode_lt_b)));
    }
    // Column-major operands: first = B as (K, N) with ld K, transposed; second = A^T as (K, M), ld K.
    LT_CHECK(cublasLtMatrixLayoutCreate(&plan.a, CUDA_R_8F_E4M3, g.K, g.N, g.K));
    LT_CHECK(cublasLtMatrixLayoutCreate(&plan.b, CUDA_R_8F_E4M3, g.K, g.M, g.K));
    LT_CHECK(cublasLtMatrixLayoutCreate(&plan.c, CUDA_R_32F, g.N, g.M, g.N));
    // cuBLASLt 13.1 answers the heuristic query of a vector or block scale mode with
    // CUBLAS_STATUS_INVALID_VALUE while the scale pointers are unset (seen on the H100, 2026-11-24):
    // they are set before the query too.
    if constexpr (scaled) set_scale_pointers(plan.op, g);
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
      // The library's refusal of this problem is not a fault: the engine writes a not_supported row.
      throw KernelNotSupported(std::string("cublaslt_fp8: cuBLASLt offers no e4m3 x e4m3 -> fp32 algorithm") +
                               (scaled ? std::string(" with scale modes ") + to_string(SA) + " (A) x " + to_string(SB) +
                                             " (B)" + (FAST ? " and fast accumulation" : "")
                                       : std::string()) +
                               " for M=" + std::to_string(g.M) + " N=" + std::to_string(g.N) + " K=" +
                               std::to_string(g.K) + " on this GPU (heuristic status " + std::to_string(int(st)) + "; "
                               "fp8 needs compute capability 8.9 or newer, K a " +
                               "multiple of 16; the scale modes need cuBLAS 12.9+ on Hopper)");
    }
    plan.algo = res.algo;
    plan.M = g.M; plan.N = g.N; plan.K = g.K;
  }
  // The pointers change from problem to problem; setting them is a host-side descriptor update.
  if constexpr (scaled) set_scale_pointers(plan.op, g);
  const float one = 1.0f, zero = 0.0f;
  LT_CHECK(cublasLtMatmul(h, plan.op, &one, g.B, plan.a, g.A, plan.b, &zero, g.C, plan.c, g.C, plan.c, &plan.algo,
                          g.workspace, WORKSPACE, as_stream(g.stream)));
}

template <bool FAST, ScaleGranularity SA = ScaleGranularity::none, ScaleGranularity SB = ScaleGranularity::none>
constexpr Kernel make(const char* name, const char* desc) {
  // The scale modes exist on Hopper only (NVIDIA/CUDALibrarySamples#270, #310).
  Kernel k = cublaslt_fp8_kernel(name, desc, launch<FAST, SA, SB>, SA == ScaleGranularity::none ? 89 : 90, WORKSPACE);
  k.scale_a = SA;
  k.scale_b = SB;
  return k;
}

}  // namespace


// One scaled baseline: registry id, fast accumulation, A's and B's granularity, description.
#define GEMMLAB_LT_SCALED(id, fast, sa, sb, desc)                                                  \
  const Kernel& id() {                                                                           \
    static const Kernel k = make<fast, ScaleGranularity::sa, ScaleGranularity::sb>(#id, desc);   \
    return k;                                                                                    \
  }
GEMMLAB_LT_SCALED(cublaslt_fp8_scaled_e4m3_tensor_f32, false, tensor, tensor,
                  "cuBLASLt fp8 e4m3 with per-tensor fp32 scales (SCALAR_32F), fp32 out")
GEMMLAB_LT_SCALED(cublaslt_fp8_scaled_e4m3_tensor_f32_fast_accum, true, tensor, tensor,
                  "cuBLASLt fp8 e4m3 with per-tensor fp32 scales, fp32 out, CUBLASLT_MATMUL_DESC_FAST_ACCUM")
GEMMLAB_LT_SCALED(cublaslt_fp8_scaled_e4m3_rowwise_f32, false, outer, outer,
                  "cuBLASLt fp8 e4m3 with rowwise / columnwise fp32 scales (OUTER_VEC_32F)")
GEMMLAB_LT_SCALED(cublaslt_fp8_scaled_e4m3_rowwise_f32_fast_accum, true, outer, outer,
                  "cuBLASLt fp8 e4m3 with rowwise / columnwise fp32 scales, CUBLASLT_MATMUL_DESC_FAST_ACCUM")
GEMMLAB_LT_SCALED(cublaslt_fp8_scaled_e4m3_1x128_128x128_f32, false, k128, blk128,
                  "cuBLASLt fp8 e4m3, A 1x128 (VEC128_32F) and B 128x128 (BLK128x128_32F) fp32 scales: DeepSeek-V3's recipe")
GEMMLAB_LT_SCALED(cublaslt_fp8_scaled_e4m3_1x128_1x128_f32, false, k128, k128,
                  "cuBLASLt fp8 e4m3, 1x128 (VEC128_32F) fp32 scales on both operands")

}  // namespace gemmlab::kernels
