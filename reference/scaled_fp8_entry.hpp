// The arithmetic of scaled fp8 quantization (reference/scaled_fp8.hpp), written once for the CPU
// (reference/scaled_fp8.cpp) and the GPU (experiments/device/quantize_gpu.cu), which therefore give
// the same bits: every floating-point operation is a pfp:: call (unfused binary64 on the host,
// __ddiv_rn & co. on the device), the roundings are pfp::round_format, the rest is integer logic.
//
// A block's amax is a maximum of magnitudes: exact and independent of the order it is taken in, so
// a parallel reduction on the GPU gives the CPU's value.
//
// Plain C++: no CUDA header. Under nvcc the functions are __host__ __device__.
#pragma once
#include <cstdint>

#include "reference/portable_fp.hpp"

namespace gemmlab::scaled_detail {

// What the scale and quantization of one operand need, as plain data (a GPU kernel takes it by value).
struct QuantPlan {
  pfp::FormatParams fp8;    // e4m3 or e5m2
  pfp::FormatParams fp32;   // the scales' format
  double fmax = 448;        // largest finite value of the fp8 format
  bool pow2 = false;        // UE8M0: scales are powers of two 2^-127 .. 2^127
  int block_rows = 1, block_cols = 1;  // extent of one scale's block in the operand
  int grid_cols = 1;        // scales per row of the scale grid: ceil(cols / block_cols)
};

// Why a block has no usable scale (0: it has one). The host turns these into messages.
enum ScaleProblem : int { scale_ok = 0, scale_amax_zero = 1, scale_amax_nonfinite = 2, scale_underflow = 3,
                          scale_ue8m0_range = 4 };

// The dequantization scale of a block of largest magnitude amax (a finite fp32 value > 0), as
// Transformer Engine's and DeepSeek's quantizers make it:
//  fp32:  s = RN_fp32(amax / fmax)  (one binary64 division, one rounding to fp32)
//  UE8M0: s = the smallest power of two with amax <= s fmax, so that |x / s| <= fmax for every x of
//         the block (DeepSeek-V3's ue8m0 scales round the scale up).
// *problem gets a ScaleProblem; the scale returned is then 0.
GEMMLAB_HD double block_scale(double amax, const QuantPlan& p, int* problem) {
  *problem = scale_ok;
  if (!pfp::is_finite(amax)) return *problem = scale_amax_nonfinite, 0.0;
  if (amax == 0.0) return *problem = scale_amax_zero, 0.0;
  if (!p.pow2) {
    const double s = pfp::round_format(pfp::div(amax, p.fmax), p.fp32);
    if (s == 0.0) *problem = scale_underflow;
    return s;
  }
  // amax / fmax >= 2^-149 / 2^16 is a normal binary64 number: start from its binade, then step.
  const double q = pfp::div(amax, p.fmax);
  int e = static_cast<int>((pfp::bits(q) >> 52) & 0x7FF) - 1023;
  while (pfp::mul(p.fmax, pfp::pow2(e)) < amax) ++e;
  while (pfp::mul(p.fmax, pfp::pow2(e - 1)) >= amax) --e;
  if (e < -127 || e > 127) return *problem = scale_ue8m0_range, 0.0;
  return pfp::pow2(e);
}

// The fp8 value stored for source value x under scale s: RN_fp8(x / s) with the quotient computed in
// binary64, saturated to +-fmax (satfinite, as the quantizers do; e4m3 has no infinity anyway).
// The binary64 quotient never lands on an fp8 rounding midpoint unless the exact one does (x / s of
// two fp32 values is either exact there or more than 2^-30 relative away), so this is the correctly
// rounded x / s.
GEMMLAB_HD double quantize_entry(double x, double s, const QuantPlan& p) {
  double q = pfp::round_format(pfp::div(x, s), p.fp8);
  if (q > p.fmax) q = p.fmax;
  if (q < -p.fmax) q = -p.fmax;
  return q;
}

// Index of entry (i, j)'s scale in the row-major scale grid.
GEMMLAB_HD long long scale_index(const QuantPlan& p, int i, int j) {
  return static_cast<long long>(i / p.block_rows) * p.grid_cols + j / p.block_cols;
}

}  // namespace gemmlab::scaled_detail
