// `gemmlab evaluate` and gemmlab.evaluate (Python): judge a product C that gemmlab did not compute
// (a user's kernel, PyTorch, Triton, ...) exactly as `gemmlab run` judges its own kernels, and
// produce the same typed row (report/result.hpp). One implementation for the CLI and the Python
// package: the exact reference and its MPFR spot checks come from compute_reference, the status and
// note from judge (engine/run.hpp), so rows from `evaluate` and `run` plot together.
//
// Plain C++ (no CUDA): the Python extension links it.
#pragma once
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "experiments/report/result.hpp"
#include "reference/exact_gemm.hpp"
#include "reference/matrix.hpp"
#include "reference/numerics.hpp"

namespace gemmlab {

// What the user states about the kernel that produced C.
struct Declared {
  std::string kernel = "user_kernel";  // the CSV `kernel` column
  std::string family = "user";         // "user", or "external" for a library or framework (PyTorch)
  Numerics numerics;                   // see declared_numerics
  std::string distribution;            // canonical name when A and B came from `gemmlab inputs`, else ""
  std::uint64_t seed = 0;
  std::optional<double> time_ms;       // the kernel's median time, measured by the user
  std::optional<int> reps;             // repetitions behind time_ms
  std::string note;                    // prepended to the row's note
};

// The numerics record of a kernel known only by what the user declares: compute defaults to the
// input format, the accumulator to fp32 (fp64 for fp64 output), the rounding of the additions to
// default_accumulation_rounding(accumulation). Throws UsageError when promotion_interval_k is set
// for any accumulation but promoted, or missing for promoted, and for accumulation tree (only an
// explained record, which holds its tree, has it: numerics.hpp undeclarable).
Numerics declared_numerics(Format input, Format output, Accumulation accumulation,
                           std::optional<Format> compute = std::nullopt,
                           std::optional<Format> accumulator = std::nullopt, int promotion_interval_k = 0);

// The exact reference `gemmlab run` computes for these inputs (exact engine, `spot_checks` entries
// chosen by `seed` recomputed with MPFR): compute_reference with run's default plan.
GemmReference evaluation_reference(const Matrix& A, const Matrix& B, Format out, int spot_checks,
                                   std::uint64_t seed, int threads, std::string& label);

// Why a C read as numpy dtype `dtype` cannot be an output of format `out` ('' if it can): fp64 needs
// float64, fp32 float32, fp16 float16; bf16, tf32 and fp8 have no numpy dtype and come as float32
// or float64 holding exactly representable values (check_output_values checks them).
std::string check_output_dtype(const std::string& dtype, Format out);

// Why the values of C (rows x cols, row-major) cannot be evaluated as format `out` ('' if they can):
// a value that is not exactly a value of `out`; NaN or infinity unless allow_nonfinite (they are
// then counted in the row: nonfinite, unwritten, status failed_bound).
std::string check_output_values(const std::vector<double>& C, int cols, Format out, bool allow_nonfinite);

// '' when every exact entry fits the output format; else the not_applicable note (no kernel can
// compute an entry beyond the format's range).
std::string over_range_reason(const GemmReference& ref, Format out);
// The note of a not_applicable row whose exact result has `over` entries beyond `out`'s range
// (shared by evaluate and the run loop, whose reference may live on the GPU).
std::string over_range_note(long long over, Format out);

// The row of C = A B as computed by the declared kernel, against `ref` (of these A and B, in
// declared.numerics.output) labelled `reference_label`. Status: not_applicable (over_range_reason),
// else judge's passed / failed_bound / no_bound; accumulation unknown gives no_bound (no bound is
// claimed; gamma_bound shows the weakest model's, u_eff = 2u) unless C has non-finite entries.
// C must already have passed check_output_values. Throws UsageError for shapes that do not match.
ResultRow evaluate(const Matrix& A, const Matrix& B, const std::vector<double>& C, const Declared& declared,
                   const GemmReference& ref, const std::string& reference_label, int threads = 0);

// The row of a product of size (M, N, K) judged by `stats` as evaluate() judges it (the GPU path of
// gemmlab.evaluate computes the statistics on the GPU and shares this judgement); with `over` exact
// entries beyond the output format's range (or no statistics) the row is not_applicable.
ResultRow evaluated_row(const Declared& declared, int M, int N, int K, const std::string& reference_label,
                        long long over, const ErrorStats* stats);

}  // namespace gemmlab
