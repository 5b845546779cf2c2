// cublas_dgemm*: cuBLAS DGEMM, native and through its fixed-point (Ozaki) emulation, one registered
// entry per setting; cublas_sgemm_emu_bf16x9: the BF16x9 fp32 emulation. All through cublasGemmEx on
// a cuBLAS handle of their own (one per GPU), because the emulation settings are state of the handle:
// every launch sets all of them, so no setting leaks into another kernel, nor into the harness's
// handle that the other cuBLAS baselines use.
//
// Numerics: the library chooses the algorithm, so the order of summation and the rounding are not
// known (accumulation library, Rounding::unknown: bounds use the weaker truncating model, u_eff = 2u
// of binary64). Each entry's record says the precision its setting gives (reference/numerics.hpp):
//  * cublas_dgemm, cublas_dgemm_emu_auto: binary64 (library_numerics(fp64)), judged by binary64's
//    gamma_K bound. For auto that is the library's own promise: dynamic mantissa control computes
//    the bits "to ensure the same or better accuracy" than binary64 and dispatches to native DGEMM
//    where more than its maximum (79) would be needed (the cuBLAS documentation, "Dynamic Mantissa
//    Control"). Measured (results/fp64, H100): every auto row within that bound, cw_over_gamma at
//    most 0.021; at 4096^3 on expspread_4 its statistics are native DGEMM's (the fallback).
//  * cublas_dgemm_emu_b<bits>: fixed_point_fp64_numerics(cublas_fixed_point_bits(bits)): the bits
//    rounded up to fill the last int8 slice (16 -> 23, 24 -> 31, ..., 64 -> 71, 72 and 79 -> 79),
//    judged by the fixed-point bound of reference/error_stats.hpp (fixed_point_term), whose error is
//    relative to max |a_ik| max |b_kj|, not to |A||B|: binary64's gamma_K bound does not apply below
//    53 bits (14 rows of the main job failed it though the kernels work as designed). What the bound
//    assumes beyond the documentation was checked against the measured rows with a CPU model of the
//    scheme (reference/fixed_point.hpp) on the same inputs (expspread_0.5 and expspread_4,
//    1024^3): truncation toward zero of the scaled entries, balanced int8 digits, only the slice
//    pairs s + u <= S + 1 formed, the levels summed in binary64 from the largest. The model gives the
//    measured componentwise maximum and largest relative error to all printed digits at 23 and 31
//    bits, and the normwise error within 3% (the rest of the difference is not identified); at 79
//    bits its fraction of correctly rounded entries is 0.689 (first 128 rows) against the measured
//    0.691 (K = 1024). Under the bound, the model's largest error over its entry's bound is at most
//    0.016 on every K = 1024 row of results/fp64 (0.065 at 4096^3 on U[0,1), 16 bits).
//  * cublas_sgemm_emu_bf16x9: bf16x9_numerics(): three bf16 pieces per fp32 operand, nine products
//    of pieces summed in fp32 (9 K terms in the bound). On sm_90 its bits are cuBLAS fp32 pedantic's
//    (it does not emulate there, results/fp64/bits_compare), which that bound covers as well.
// What each entry fixes:
//  * cublas_dgemm: CUBLAS_COMPUTE_64F under CUBLAS_EMULATION_STRATEGY_PERFORMANT (named explicitly, so
//    the CUBLAS_EMULATION_STRATEGY environment variable cannot change it), which on the H100 returned
//    native DGEMM's bits (issue 23); on a GPU where emulation is faster the library may choose it.
//  * cublas_dgemm_emu_auto: CUBLAS_COMPUTE_64F_EMULATED_FIXEDPOINT under CUBLAS_EMULATION_STRATEGY_EAGER
//    (emulate whenever possible), CUDA_EMULATION_MANTISSA_CONTROL_DYNAMIC: the library picks the
//    retained mantissa bits at run time "to ensure the same or better accuracy" than binary64.
//  * cublas_dgemm_emu_b<bits>: the same with CUDA_EMULATION_MANTISSA_CONTROL_FIXED and
//    cublasSetFixedPointEmulationMaxMantissaBitCount(bits): fewer bits, faster, less accurate.
//  * cublas_sgemm_emu_bf16x9: fp32 in and out, CUBLAS_COMPUTE_32F_EMULATED_16BFX9 under EAGER (each
//    fp32 operand split into three bf16). Documented for compute capability 10.x; on sm_90 the call
//    returned success (issue 23), so whether it emulates anything there is read from its bits: the
//    GPU script compares them with the fp32 pedantic and default rows.
// A setting the library refuses (CUBLAS_STATUS_NOT_SUPPORTED or INVALID_VALUE from the GEMM) is a
// not_supported row saying so (KernelNotSupported), never a silent fallback reported as emulation.
// Whether the emulation engaged at all is visible in the bits: under EAGER they differ from native
// DGEMM's (tests/gpu/test_fp64_kernels.cpp). Row-major C = A*B is computed as column-major
// C^T = B^T A^T, so A and B stay row-major.
#include <map>
#include <memory>
#include <mutex>
#include <string>

#include "kernels/common/cuda_check.cuh"
#include "kernels/kernel.hpp"

namespace gemmlab::kernels {
namespace {

// Scratch the emulation needs for its int8 slices of A and B (about bits/8 bytes per entry each) and
// products: 2 GiB covers 4096 x 4096 x 16384 at 79 bits.
constexpr std::size_t kWorkspaceBytes = std::size_t{2} << 30;

cublasHandle_t own_handle() {
  static std::mutex mu;
  static std::map<int, cublasHandle_t> per_device;  // never destroyed before exit
  int dev = 0;
  GEMMLAB_CUDA_CHECK(cudaGetDevice(&dev));
  std::lock_guard<std::mutex> lock(mu);
  cublasHandle_t& h = per_device[dev];
  if (!h) GEMMLAB_CUBLAS_CHECK(cublasCreate(&h));
  return h;
}

enum class Mode { native, emulated_auto, emulated_fixed, bf16x9 };

struct Setting {
  const char* name;
  Mode mode;
  int bits;  // emulated_fixed: the mantissa bit count
};

// Calls cuBLAS; a refusal of this setting becomes KernelNotSupported, any other failure a runtime error.
void refused_or_throw(cublasStatus_t st, const Setting& s, const char* what) {
  if (st == CUBLAS_STATUS_SUCCESS) return;
  if (st == CUBLAS_STATUS_NOT_SUPPORTED || st == CUBLAS_STATUS_INVALID_VALUE || st == CUBLAS_STATUS_ARCH_MISMATCH)
    throw KernelNotSupported(std::string(s.name) + ": cuBLAS refused this setting (" + cublasGetStatusName(st) +
                             " from " + what + "); this library or GPU does not offer it");
  cublas_fail(st, what, __FILE__, __LINE__);
}

void launch_setting(const GemmArgs& a, const Setting& s) {
  cublasHandle_t h = own_handle();
  GEMMLAB_CUBLAS_CHECK(cublasSetStream(h, as_stream(a.stream)));
  GEMMLAB_CUBLAS_CHECK(cublasSetWorkspace(h, a.workspace, a.workspace_bytes));
  GEMMLAB_CUBLAS_CHECK(cublasSetMathMode(h, CUBLAS_DEFAULT_MATH));
  const bool emulated = s.mode != Mode::native;
  refused_or_throw(cublasSetEmulationStrategy(h, emulated ? CUBLAS_EMULATION_STRATEGY_EAGER
                                                          : CUBLAS_EMULATION_STRATEGY_PERFORMANT),
                   s, "cublasSetEmulationStrategy");
  refused_or_throw(cublasSetFixedPointEmulationMantissaBitOffset(h, 0), s, "cublasSetFixedPointEmulationMantissaBitOffset");
  const bool fixed = s.mode == Mode::emulated_fixed;
  refused_or_throw(cublasSetFixedPointEmulationMantissaControl(h, fixed ? CUDA_EMULATION_MANTISSA_CONTROL_FIXED
                                                                        : CUDA_EMULATION_MANTISSA_CONTROL_DYNAMIC),
                   s, "cublasSetFixedPointEmulationMantissaControl");
  // FIXED: the bit count of this entry; DYNAMIC: 0, the library's default maximum.
  refused_or_throw(cublasSetFixedPointEmulationMaxMantissaBitCount(h, fixed ? s.bits : 0), s,
                   "cublasSetFixedPointEmulationMaxMantissaBitCount");
  // Column-major view: C^T (N, M) = B^T (N, K) * A^T (K, M); the row-major buffers are exactly these.
  if (s.mode == Mode::bf16x9) {
    const float one = 1.0f, zero = 0.0f;
    refused_or_throw(cublasGemmEx(h, CUBLAS_OP_N, CUBLAS_OP_N, a.N, a.M, a.K, &one, a.B, CUDA_R_32F, a.N, a.A,
                                  CUDA_R_32F, a.K, &zero, a.C, CUDA_R_32F, a.N, CUBLAS_COMPUTE_32F_EMULATED_16BFX9,
                                  CUBLAS_GEMM_DEFAULT),
                     s, "cublasGemmEx");
    return;
  }
  const double one = 1.0, zero = 0.0;
  refused_or_throw(cublasGemmEx(h, CUBLAS_OP_N, CUBLAS_OP_N, a.N, a.M, a.K, &one, a.B, CUDA_R_64F, a.N, a.A,
                                CUDA_R_64F, a.K, &zero, a.C, CUDA_R_64F, a.N,
                                emulated ? CUBLAS_COMPUTE_64F_EMULATED_FIXEDPOINT : CUBLAS_COMPUTE_64F,
                                CUBLAS_GEMM_DEFAULT),
                   s, "cublasGemmEx");
}

constexpr Kernel base(const char* name, const char* desc, const Numerics& numerics, void (*fn)(const GemmArgs&),
                      int min_cc, std::size_t workspace) {
  return Kernel{
      .name = name, .family = "fp64", .description = desc,
      .numerics = numerics,
      .layout_a = Layout::row_major, .layout_b = Layout::row_major,
      .m_multiple = 1, .n_multiple = 1, .k_multiple = 1,
      .min_cc = min_cc, .requires_sm90a = false, .workspace_bytes = workspace,
      .launch = fn,
  };
}

}  // namespace

// One registered entry per setting: its launcher binds the setting at compile time.
#define GEMMLAB_CUBLAS_FP64_VARIANT(id, desc, numerics, mode, bits, min_cc, workspace)         \
  const Kernel& id() {                                                                        \
    static const Kernel k = base(#id, desc, numerics,                                         \
                                 [](const GemmArgs& a) { launch_setting(a, {#id, mode, bits}); }, \
                                 min_cc, workspace);                                          \
    return k;                                                                                 \
  }

GEMMLAB_CUBLAS_FP64_VARIANT(cublas_dgemm, "cuBLAS DGEMM, CUBLAS_COMPUTE_64F, emulation strategy PERFORMANT",
                            library_numerics(Format::fp64), Mode::native, 0, 50, std::size_t{64} << 20)
GEMMLAB_CUBLAS_FP64_VARIANT(cublas_dgemm_emu_auto,
                            "cuBLAS fixed-point DGEMM emulation, EAGER, dynamic mantissa bits (the library's choice)",
                            library_numerics(Format::fp64), Mode::emulated_auto, 0, 80, kWorkspaceBytes)
#define GEMMLAB_EMU_BITS(b)                                                                                   \
  GEMMLAB_CUBLAS_FP64_VARIANT(cublas_dgemm_emu_b##b, "cuBLAS fixed-point DGEMM emulation, EAGER, " #b " mantissa bits", \
                              fixed_point_fp64_numerics(cublas_fixed_point_bits(b)), Mode::emulated_fixed, b, 80,     \
                              kWorkspaceBytes)
GEMMLAB_EMU_BITS(16)
GEMMLAB_EMU_BITS(24)
GEMMLAB_EMU_BITS(32)
GEMMLAB_EMU_BITS(40)
GEMMLAB_EMU_BITS(48)
GEMMLAB_EMU_BITS(56)
GEMMLAB_EMU_BITS(64)
GEMMLAB_EMU_BITS(72)
GEMMLAB_EMU_BITS(79)
#undef GEMMLAB_EMU_BITS
GEMMLAB_CUBLAS_FP64_VARIANT(cublas_sgemm_emu_bf16x9,
                            "cuBLAS fp32 GEMM, CUBLAS_COMPUTE_32F_EMULATED_16BFX9, EAGER (BF16x9 emulation)",
                            bf16x9_numerics(), Mode::bf16x9, 0, 80, std::size_t{256} << 20)

}  // namespace gemmlab::kernels
