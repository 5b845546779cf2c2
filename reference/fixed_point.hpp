// A CPU model of cuBLAS's fixed-point fp64 emulation (CUBLAS_COMPUTE_64F_EMULATED_FIXEDPOINT with
// fixed mantissa control: the Ozaki scheme on int8 slices), as the cuBLAS documentation describes
// it and the measured rows pin down what it leaves open (kernels/fp64/cublas_dgemm.cu; the bound
// these outputs are judged by: reference/error_stats.hpp, fixed_point_term):
//  * row i of A is scaled by sigma_i = 2^(floor(log2 max_k |a_ik|) + 1) (column j of B by tau_j
//    likewise), so every scaled entry lies in (-1, 1), and kept with `bits` = t mantissa bits: the
//    integer M = round(a / sigma 2^t), rounded toward zero (`rounding` nearest_even: to nearest);
//  * M is cut into S = ceildiv(t + 1, 8) balanced base-256 digits (int8, each in [-128, 127] but the
//    leading one, which may reach +-128), digit s of weight 2^(1 - 8 s) relative to sigma;
//  * the digit products are exact integer sums over K; only the pairs s + u <= S + 1 are formed
//    (`triangle`; all pairs otherwise), level d = s + u collecting those of equal weight;
//  * K is cut into chunks of `chunk_k`; each chunk's levels are added into a binary64 sum, from the
//    largest weight down, chunk after chunk, each term L_d 2^(2 - 8 d) sigma_i tau_j rounded into
//    binary64 once (exact unless it is below the normal range).
// A model, not a bit-exact prediction: it reproduces the measured componentwise maxima to every
// printed digit and the normwise errors within 3% (1024^3, expspread_0.5 and expspread_4); which
// part of the library's arithmetic the remaining difference comes from is not known.
// Plain C++.
#pragma once
#include <vector>

#include "reference/formats.hpp"
#include "reference/matrix.hpp"

namespace gemmlab::fixed_point {

struct Scheme {
  int bits = 79;  // t: mantissa bits kept per entry, 1 to 126
  Rounding rounding = Rounding::toward_zero;  // of the scaled entries (toward_zero or nearest_even)
  bool triangle = true;                      // only the slice pairs s + u <= S + 1
  int chunk_k = 8192;                        // K per exact integer sum, at least 1
};

// C = A B as the scheme computes it, (M, N) row-major. Every entry of A and B must be finite
// (std::invalid_argument otherwise, naming the entry).
std::vector<double> gemm(const Matrix& A, const Matrix& B, const Scheme& s, int threads = 0);

}  // namespace gemmlab::fixed_point
