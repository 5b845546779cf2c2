// The exact reference C = A*B on the GPU: bit for bit what exact_gemm (reference/exact_gemm.hpp)
// computes on the CPU (c, c_odd and |A||B|), from integer tensor-core products.
//
// Numerics (an exact Ozaki-style integer split; Ozaki, Ogita, Oishi, Rump, "Error-free
// transformations of matrix multiplication by using fast routines of matrix multiplication and
// its applications", Numer. Algorithms 2012; Ootomo, Ozaki, Yokota, "DGEMM on integer matrix
// multiplication unit", IJHPCA 2024):
//  * every finite input is sign * m * 2^lsb with m an odd integer below 2^53. Row i of A is
//    scaled to integers on its own grid 2^ea(i), ea(i) = the smallest lsb in the row: a_ik =
//    Ia_ik 2^ea(i) with |Ia_ik| < 2^wa(i), wa(i) = top(row) - ea(i); column j of B likewise
//    (eb(j), wb(j)). Nothing is rounded.
//  * each |Ia| is cut into S_A = ceil(max_i wa(i) / 7) digits of 7 bits, |Ia| = sum_s d_s 2^(7s),
//    d_s in [0, 127], stored as int8 with the entry's sign (so the digits of |A| are their
//    magnitudes); the same for B (S_B digits).
//  * every digit pair (s, t) is one int8 GEMM on the tensor cores through cuBLAS (CUDA_R_8I in,
//    CUDA_R_32I out, CUBLAS_COMPUTE_32I): integer arithmetic, exact as long as no int32 overflows.
//    Each product is at most 127^2 < 2^14, so a GEMM accumulates at most 2^17 terms (K is cut into
//    chunks, and GEMMs of one level s + t share an int32 buffer until 2^17 terms): below 2^31.
//    Levels L_d = sum_{s+t=d} P_st are kept in int64.
//  * per entry, X = sum_d L_d 2^(7d) is evaluated exactly (Horner, two's complement over enough
//    64-bit limbs for K 2^(max wa + max wb)), and X 2^(ea(i) + eb(j)) is rounded once to binary64:
//    nearest-even (c) and round-to-odd (c_odd), exactly as reference/long_accumulator.hpp's
//    round_bigint. |A||B| is the same computation on the digit magnitudes, rounded to nearest-even.
//    An exact zero is +0.
// Cost: S_A S_B int8 GEMMs, twice (signed and magnitudes) unless A and B are non-negative.
// The same integers can instead be reduced modulo a CRT basis of P odd moduli below 256 (Ozaki scheme II,
// exact here; reference/crt_split.hpp): P int8 GEMMs a pass, P about (spread_A + spread_B + log2 K) / 7.9
// (fp32 data at 4096^3: 15 against the digits' 49); the split that takes fewer GEMMs runs
// (ReferenceSplit), and both give the same bits (tests/gpu/test_gpu_oracle.cpp).
// Measured digits (H100 run, results/oracle/): fp16 data 4 (at most 6), exactint 1, fp32 U[0,1),
// U[-1,1), N(0,1), cancel_-10 7-8, logunif_-8_8 6; logunif_-60_60 in fp32 about 21. The limit is
// kMaxDigits (any fp32, bf16 or tf32 data needs at most 40). fp64 inputs (53-bit significands, the
// whole binary64 range) go through the same split: exact on the GPU whenever every row of A and
// every column of B spans at most 336 bits (expspread_PHI in fp64 at K = 4096: 11 digits at
// PHI = 0.5, 15 at PHI = 4; tests/cpu/test_int8_split.cpp); a row or column beyond that (2^-1074 beside 1.0) is refused, and the engine's
// `--reference auto` computes that problem on the CPU, saying why on stderr (fallback rule:
// reference/int8_split.hpp).
// The cuBLAS handle and the pinned staging buffer are kept per process, on the device current at
// the first call; calls from several host threads at once are not supported.
//
// What it refuses (GpuReferenceUnavailable; use exact_gemm on the CPU instead): an infinity or NaN
// in A or B, more than kMaxDigits digits, or more GPU memory than is free. Any CUDA or cuBLAS error
// during the computation throws std::runtime_error: a reference is never returned half computed.
//
// Plain C++ header (no CUDA types): device buffers are behind GpuReference.
#pragma once
#include <cstddef>
#include <memory>
#include <stdexcept>
#include <string>
#include <vector>

#include "reference/exact_gemm.hpp"
#include "reference/formats.hpp"
#include "reference/int8_split.hpp"
#include "reference/matrix.hpp"

namespace gemmlab::device {

// The GPU cannot compute this reference exactly; the message says why. Fall back to exact_gemm.
class GpuReferenceUnavailable : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

// 7-bit digits per operand entry: 336 bits of spread per row or column (fp32's whole range is 277;
// the split and this fallback rule: reference/int8_split.hpp, tested on the CPU).
constexpr int kMaxDigits = split::kMaxSplitDigits;

// Digits an operand of format `in` needs at most, whatever its values (its whole finite range):
// fp16 6, e4m3 3, e5m2 5, fp32 / tf32 / bf16 40; fp64 is beyond kMaxDigits (returns kMaxDigits + 1).
int worst_case_digits(Format in);

// GPU memory (bytes) the exact reference of an (M, K) x (K, N) product needs with digits_a /
// digits_b digits per operand, together with the statistics of one output on it
// (error_stats_gpu.hpp): inputs, digits, level buffers, c, c_odd, |A||B|, the sort of the
// relative errors, and cuBLAS's workspace.
std::size_t gpu_oracle_bytes(long M, long N, long K, int digits_a, int digits_b);
// The same for the worst data of input format `in` (an upper bound a caller can check before
// generating anything).
std::size_t gpu_oracle_bytes(long M, long N, long K, Format in);

// The largest n such that an n x n x n problem of input format `in` fits `bytes` by the worst-case
// estimate above (for messages that say what fits).
long gpu_oracle_max_square(Format in, std::size_t bytes);

// How the integers of A and B are cut for the int8 GEMMs (both exact, bit for bit the same reference):
// digits (7-bit digits, S_A S_B GEMMs a pass: int8_split.hpp) or residues (one GEMM per modulus of a CRT
// basis, reference/crt_split.hpp: where every row of A and column of B spans at most 120 bits, the two
// spreads and log2 K add up to at most 182 bits and K <= 2^17). automatic: residues where they take fewer GEMMs than digits, else digits.
enum class ReferenceSplit { automatic, digits, residues };
// The split of this process's next references (tests force one; residues where they cannot apply
// fall back to digits). Until set_reference_split is called, GEMMLAB_REFERENCE_SPLIT chooses it (read at
// the first reference; unset or empty: automatic); a value parse_reference_split refuses stops that
// reference with its message. Not thread-safe against references being computed.
void set_reference_split(ReferenceSplit s);
ReferenceSplit reference_split();
// "digits", "residues", "auto" or "" (automatic); anything else: std::invalid_argument naming the variable
// and its values.
inline ReferenceSplit parse_reference_split(const std::string& v) {
  if (v.empty() || v == "auto") return ReferenceSplit::automatic;
  if (v == "digits") return ReferenceSplit::digits;
  if (v == "residues") return ReferenceSplit::residues;
  throw std::invalid_argument("GEMMLAB_REFERENCE_SPLIT='" + v +
                              "': give digits, residues or auto (or unset it), the exact reference's int8 split");
}

// Timing of one GPU reference, seconds.
struct GpuReferenceTiming {
  double upload = 0;   // A and B to the GPU (as binary64)
  double compute = 0;  // scan, digits, int8 GEMMs, exact composition and rounding (device work)
  double total = 0;    // everything exact_gemm_gpu did, from the call to the return
};

// A reference resident on the GPU: c, c_odd, |A||B| as (M, N) row-major binary64.
class GpuReference {
 public:
  GpuReference();
  ~GpuReference();
  GpuReference(GpuReference&&) noexcept;
  GpuReference& operator=(GpuReference&&) noexcept;
  GpuReference(const GpuReference&) = delete;
  GpuReference& operator=(const GpuReference&) = delete;

  int M = 0, N = 0, K = 0;
  int digits_a = 0, digits_b = 0;  // S_A, S_B (what the digit split needs, whichever split ran)
  std::string engine = "gpu_int8_ozaki";
  std::string split = "digits";  // "digits" or "residues" (ReferenceSplit)
  int gemms = 0;                 // int8 GEMMs it took (per K chunk and row block)
  GpuReferenceTiming timing;

  // Device pointers (M*N doubles each), valid while this object lives.
  const double* device_c() const;
  const double* device_c_odd() const;
  const double* device_abs_ab() const;
  // max_k |a_ik| per row of A (M doubles) and max_k |b_kj| per column of B (N doubles): the scales of
  // fixed-point operands' bound (GemmReference::row_max_a, col_max_b; the same bits).
  const double* device_row_max_a() const;
  const double* device_col_max_b() const;

  // Copies to the host: c, c_odd, abs_ab, row_max_a, col_max_b, and c_out for `out` (rounded from
  // c_odd on the host).
  GemmReference to_host(Format out) const;

  struct Buffers;
  std::unique_ptr<Buffers> buffers;
};

// Computes the exact reference of A (M, K) times B (K, N) on the current GPU. Throws
// GpuReferenceUnavailable (fall back to the CPU) or std::runtime_error (a CUDA error: stop).
// The operands travel as fp32 through pinned memory when every value is a float (all gemmlab input
// formats), else as binary64.
GpuReference exact_gemm_gpu(const Matrix& A, const Matrix& B);

// The same from operands already on the GPU as fp32 values (every gemmlab input format is a
// subset of fp32: a runner widens its fp16 / bf16 / fp8 / tf32 buffers to float first), row-major
// A (M, K) and B (K, N) device pointers. No host transfer.
GpuReference exact_gemm_gpu_device(const float* device_A, const float* device_B, int M, int N, int K);
// The same from binary64 values on the GPU (fp64 operands; the dequantized operands s q of a scaled
// fp8 problem): any finite doubles, split under the digit limit above (a row of A or column of B
// wider than kMaxDigits digits throws GpuReferenceUnavailable: compute that reference on the CPU).
// A is read where it lies; B is transposed into a scratch copy.
GpuReference exact_gemm_gpu_device(const double* device_A, const double* device_B, int M, int N, int K);

// The same from binary64 operands already on the GPU: A (M, K) and B transposed, (N, K), both row-major (a
// form's augmented operands, reference/gemm_form.hpp, whose alpha a and s b are exact in binary64 but not
// floats). No host transfer; the device arrays are read, not kept.
GpuReference exact_gemm_gpu_device_bt(const double* device_A, const double* device_Bt, int M, int N, int K);

// References of row blocks with one N stacked into one (M the sum of theirs, K the first's): a batched or
// grouped form's parts judged as one output. The parts are consumed.
GpuReference stack_rows(std::vector<GpuReference> parts);

// Convenience: exact_gemm_gpu(A, B).to_host(out), with seconds = the whole call.
GemmReference exact_gemm_gpu_host(const Matrix& A, const Matrix& B, Format out);

// The GPU engine, or the CPU engine (exact_gemm with `threads`) where the GPU cannot do this
// problem exactly; the returned engine says which ran, and *fallback_reason (if given) why the GPU
// did not (empty when it did). CUDA errors still throw.
GemmReference exact_reference(const Matrix& A, const Matrix& B, Format out, int threads = 0,
                              std::string* fallback_reason = nullptr);

}  // namespace gemmlab::device
