// MPFR oracle for C = A*B: exact (the precision is chosen from the inputs' exponent range and K so
// that no operation rounds), then rounded correctly to binary64 and to the output format.
#pragma once
#include "reference/exact_gemm.hpp"

namespace gemmlab {

// Same contract as exact_gemm; engine = "mpfr". Multi-threaded over output entries.
GemmReference mpfr_gemm(const Matrix& A, const Matrix& B, Format out, int threads = 0);

// The precision (bits) mpfr_gemm uses for these inputs: enough that every product and every
// partial sum is exact.
long mpfr_exact_precision(const Matrix& A, const Matrix& B);

// One entry through MPFR (used to spot-check the fast path at any size); rounded to binary64.
double mpfr_dot(const Matrix& A, const Matrix& B, int i, int j);

}  // namespace gemmlab
