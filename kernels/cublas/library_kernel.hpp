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

}  // namespace gemmlab::kernels
