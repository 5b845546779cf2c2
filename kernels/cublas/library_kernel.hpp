// The descriptor every cuBLAS / cuBLASLt baseline shares: the library chooses the algorithm, so the
// order of summation and the rounding of the accumulation are unknown (Accumulation::library,
// Rounding::unknown: bounds use the weaker truncating model); row-major A and B, any M, N, K.
#pragma once
#include <cstddef>

#include "kernels/kernel.hpp"

namespace gemmlab::kernels {

constexpr Kernel library_kernel(const char* name, const char* desc, Format in, Format compute, Format acc, Format out,
                                void (*launch)(const GemmArgs&), int min_cc, std::size_t workspace_bytes = 0,
                                const void* context = nullptr) {
  return Kernel{
      .name = name, .family = "cublas", .description = desc,
      .numerics = {.input = in, .compute = compute, .accumulator = acc, .output = out,
                   .accumulation = Accumulation::library, .k_step = 0,
                   .accumulation_rounding = Rounding::unknown},
      .layout_a = Layout::row_major, .layout_b = Layout::row_major,
      .m_multiple = 1, .n_multiple = 1, .k_multiple = 1,
      .min_cc = min_cc, .requires_sm90a = false, .workspace_bytes = workspace_bytes,
      .launch = launch, .context = context,
  };
}

// cuBLASLt's fp8 e4m3 GEMM (cublaslt_fp8.cu and its scaled entries, cublaslt_fp8_scaled.cu): the
// "TN" layouts (B column-major), M, N and K multiples of 16, and the ~13 fraction bits fp8 wgmma
// keeps, in the bound (see cublaslt_fp8.cu).
constexpr Kernel cublaslt_fp8_kernel(const char* name, const char* desc, void (*launch)(const GemmArgs&), int min_cc,
                                     std::size_t workspace_bytes, const void* context = nullptr) {
  Kernel k = library_kernel(name, desc, Format::e4m3, Format::e4m3, Format::fp32, Format::fp32, launch, min_cc,
                            workspace_bytes, context);
  k.numerics.acc_unit_roundoff = 0x1p-13;
  k.layout_b = Layout::col_major;
  k.m_multiple = k.n_multiple = k.k_multiple = 16;
  return k;
}

}  // namespace gemmlab::kernels
