// The digit split of the GPU exact reference (experiments/device/exact_reference_gpu.cu), written
// once for the host and the device so that the CPU tests prove the same code the GPU runs.
//
// Numerics: a finite non-zero double is exactly sign * m * 2^lsb with m odd, m < 2^53
// (long_accumulator.hpp). On a row's grid 2^e (e = the smallest lsb of the row) the entry is the
// integer I = m * 2^(lsb - e), of at most w = top - e bits (top = lsb + bit width of m: the row's
// "spread"). I is cut into S = ceil(w / 7) digits of 7 bits, I = sum_s d_s 2^(7s), d_s in [0, 127],
// so that an int8 tensor-core product of two digits (< 2^14) and 2^17 of them summed in int32 stay
// exact. Nothing is rounded: the split is exact for every double, fp64 inputs included (53-bit m,
// subnormals, any exponent), as long as the row's spread fits kMaxSplitDigits digits.
//
// The fallback rule (what the GPU refuses, and the CPU engine then computes): a row of A or a
// column of B whose spread exceeds kMaxSplitDigits * 7 = 336 bits. fp32, tf32 and bf16 data never
// do (their whole range is 277 bits); fp64 data do when one row mixes magnitudes more than about
// 2^283 apart (e.g. 2^-1074 beside 1.0), which no expspread_PHI with PHI <= 16 reaches in practice.
//
// Plain C++ (no CUDA header): under nvcc the functions are __host__ __device__.
#pragma once
#include <cstdint>

#include "reference/portable_fp.hpp"

namespace gemmlab::split {

constexpr int kDigitBits = 7;
constexpr int kMaxSplitDigits = 48;  // 336 bits of spread per row or column

// Digits of 7 bits that an integer of `spread_bits` bits needs (at least one, for all-zero rows).
GEMMLAB_HD int digits_for(int spread_bits) {
  const int s = (spread_bits + kDigitBits - 1) / kDigitBits;
  return s < 1 ? 1 : s;
}

// Digit s (bits [7s, 7s + 7)) of the integer m * 2^shift, shift >= 0, m < 2^64.
GEMMLAB_HD int digit(std::uint64_t m, int shift, int s) {
  const int p = kDigitBits * s - shift;  // the bit of m that is the digit's lowest
  if (p >= 64 || p <= -kDigitBits) return 0;
  const std::uint64_t v = p >= 0 ? (m >> p) : (m << (-p));
  return static_cast<int>(v & 127u);
}

}  // namespace gemmlab::split
