// The reference product C = A*B, computed exactly and then rounded once.
//
// Every product of two inputs (each at most 24 significant bits) is exact in binary64, so each
// C(i,j) is an exact sum of doubles. Two engines compute that sum exactly:
//  * exact_gemm: a fast fixed-point path (an int128 fixed-point accumulator when the inputs'
//    exponent range allows it, otherwise a Kulisch-style multi-limb accumulator covering the whole
//    product exponent range), multi-threaded over output entries;
//  * mpfr_gemm (mpfr_gemm.hpp): MPFR at a precision chosen from the inputs so no rounding happens.
// Both return the same GemmReference; tests prove them equal bit for bit.
#pragma once
#include <cstdint>
#include <string>
#include <vector>
#include "reference/formats.hpp"
#include "reference/matrix.hpp"

namespace gemmlab {

struct GemmReference {
  int M = 0, N = 0, K = 0;
  std::vector<double> c;       // (M, N) row-major: exact C rounded to nearest-even binary64
  std::vector<double> c_out;   // (M, N): exact C rounded to nearest-even in the output format `out`
                               // (one rounding from the exact value, never via binary64)
  std::vector<double> abs_ab;  // (M, N): (|A||B|)(i,j), for componentwise errors and bounds.
                               // All terms are >= 0, so binary64 summation is within gamma_K(2^-53).
  Format out = Format::fp32;
  std::string engine;          // "fixed_int128", "kulisch", "mpfr" (what actually ran)
  double seconds = 0;          // wall time of the computation
};

// threads = 0: std::thread::hardware_concurrency().
GemmReference exact_gemm(const Matrix& A, const Matrix& B, Format out, int threads = 0);

// Which exact engine exact_gemm uses. automatic: fixed_int128 when the inputs fit it (see
// fits_fixed_int128), otherwise kulisch. Forcing fixed_int128 on inputs that do not fit throws
// std::invalid_argument. Both engines give identical results; forcing one is for tests and timing.
enum class ExactEngine { automatic, fixed_int128, kulisch };
GemmReference exact_gemm(const Matrix& A, const Matrix& B, Format out, int threads, ExactEngine engine);

// True when every A entry is an int64 times 2^ea, every B entry an int64 times 2^eb, and
// bits(max|ia|) + bits(max|ib|) + ceil(log2 K) + 1 <= 126, so sums of K products fit an int128.
bool fits_fixed_int128(const Matrix& A, const Matrix& B);

// Exact value of one entry, for spot checks: sum_k A(i,k) B(k,j), rounded to binary64 RNE.
double exact_dot(const Matrix& A, const Matrix& B, int i, int j);

}  // namespace gemmlab
