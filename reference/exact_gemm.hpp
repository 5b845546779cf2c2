// The reference product C = A*B, computed exactly and then rounded once.
//
// Every input is a double sign * m * 2^lsb (m < 2^53), so every product is an integer of at most 106
// bits times a power of two (exact in binary64 itself when the inputs have at most 24 significant
// bits; for fp64 inputs anywhere in [2^-2148, 2^2048)), and each C(i,j) is an exact sum of such
// terms. Two engines compute that sum exactly, for any finite doubles (fp64 inputs included, from
// subnormals to DBL_MAX: tests/cpu/test_exact_gemm.cpp, Fp64*):
//  * exact_gemm: a fast fixed-point path (an int128 fixed-point accumulator when the inputs'
//    exponent range allows it, otherwise a Kulisch-style multi-limb accumulator covering the whole
//    product exponent range), multi-threaded over output entries;
//  * mpfr_gemm (mpfr_gemm.hpp): MPFR at a precision chosen from the inputs so no rounding happens.
// |A||B| comes from the same exact sums (of |a||b|), so it is exact before its one rounding too.
// Both return the same GemmReference; tests prove them equal bit for bit.
#pragma once
#include <cstdint>
#include <string>
#include <vector>
#include "reference/formats.hpp"
#include "reference/matrix.hpp"

namespace gemmlab {

// One reference serves every output format of a problem: c_odd holds the exact sum rounded to
// binary64 with round-to-odd, and one round-to-nearest-even of it into any format of precision
// <= 51 bits equals the correct rounding of the exact sum into that format (Boldo & Melquiond,
// "Emulation of FMA and correctly rounded sums: proved algorithms using rounding to odd", IEEE TC
// 2008): output_reference(ref, out). c_out keeps that value for the format `out` the reference was
// asked for, for callers that predate output_reference.
struct GemmReference {
  int M = 0, N = 0, K = 0;
  std::vector<double> c;       // (M, N) row-major: exact C rounded to nearest-even binary64
  std::vector<double> c_odd;   // (M, N): exact C rounded to binary64 with round-to-odd (truncate,
                               // then set the last bit if anything was dropped; overflow gives
                               // +-max finite, an exact zero +0)
  std::vector<double> c_out;   // (M, N): exact C rounded to nearest-even in the output format `out`
                               // (= round_to(out, c_odd); fp64: c)
  std::vector<double> abs_ab;  // (M, N): (|A||B|)(i,j) = sum_k |a_ik| |b_kj| computed exactly and
                               // rounded to nearest-even binary64 (order-independent, so every
                               // engine, CPU or GPU, gives the same bits)
  std::vector<double> row_max_a;  // (M): alpha_i = max_k |a_ik| (0 for K = 0; NaN entries ignored),
  std::vector<double> col_max_b;  // (N): beta_j = max_k |b_kj|: the scales of fixed-point operands'
                                  // bound (error_stats.hpp, fixed_point_term); exact, so every engine
                                  // gives the same bits. Empty in a reference made without them.
  Format out = Format::fp32;
  std::string engine;          // "fixed_int128", "kulisch", "mpfr", "gpu_int8_ozaki" (what ran)
  double seconds = 0;          // wall time of the computation
};

// The exact C correctly rounded (nearest-even) into `out`, (M, N) row-major: round_to(out, c_odd),
// or c for fp64. Entries computed from infinities or NaN keep them (rounded like any value).
std::vector<double> output_reference(const GemmReference& ref, Format out);

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

// alpha_i = max_k |A(i, k)| for every row (row_max_a), beta_j = max_k |B(k, j)| for every column
// (col_max_b), as std::fmax takes them (a NaN is passed over).
std::vector<double> row_max_abs(const Matrix& A);
std::vector<double> col_max_abs(const Matrix& B);

// Exact value of one entry, for spot checks: sum_k A(i,k) B(k,j), rounded to binary64 RNE.
double exact_dot(const Matrix& A, const Matrix& B, int i, int j);

}  // namespace gemmlab
