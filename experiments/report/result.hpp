// One typed result per (kernel, distribution, size, seed): what `gemmlab run`, `evaluate`, `merge`
// and every benchmark suite write, one CSV row each. The columns are defined once (result.cpp,
// from this struct and GEMMLAB_ERROR_STATS_FIELDS); formatting and parsing both go through that one
// table, so a column cannot be misspelt in one place and silently left empty.
// results/README.md documents every column.
#pragma once
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "experiments/report/stopping.hpp"
#include "kernels/kernel.hpp"
#include "reference/error_stats.hpp"
#include "reference/numerics.hpp"

namespace gemmlab {

// What became of one row (CUTLASS profiler's Disposition):
//  passed          within its deterministic bound, every entry written
//  failed_bound    above the bound, or entries left unwritten (NaN poison) or non-finite
//  no_bound        K u_eff >= 1: no deterministic bound applies; judged by the statistics
//  not_supported   this GPU or build cannot run the kernel (note says why)
//  not_applicable  the distribution cannot be expressed in the kernel's formats (note says why)
//  error           the kernel raised an error (note has the message)
//  timeout         a launch did not end within its limit (engine/watchdog.hpp; note: which launch, the
//                  kernel, the size and the limit); the run went on without it
//  faulted         the kernel made the GPU report an error that ends the process's CUDA context (an
//                  illegal address, a trap), or its worker process died (note: CUDA's error or the signal)
//  nondeterministic  two launches on the same inputs gave different bits (note: how many entries);
//                  the statistics are the last launch's, and no judgement is passed on them
//  planned         `--dry-run`: the row a run would produce, not run
enum class Status {
  passed, failed_bound, no_bound, not_supported, not_applicable, error, timeout, faulted, nondeterministic, planned
};
// A row whose kernel did not finish (timeout, faulted) or raised (error): `--retry-failed` computes it again.
bool retried_by_retry_failed(Status s);
const char* to_string(Status s);
std::optional<Status> parse_status(std::string_view s);
const std::vector<Status>& all_statuses();  // in the order above

struct Timing {
  double time_ms_median = 0, time_ms_min = 0, time_ms_max = 0;
  double time_ms_iqr = 0;  // interquartile_range of the repetitions: the run's timing noise
  // The median's distribution-free 95% confidence interval lies within +- this fraction of it
  // (experiments/report/stopping.hpp); absent below 6 repetitions and where no repetition was timed.
  std::optional<double> time_ms_ci95_rel;
  std::optional<StopReason> stopped_by;  // what ended the repetitions (absent: not timed here)
  double tflops = 0;     // 2 M N K / median
  int sm_clock_mhz = -1;  // sampled after the run (nvidia-smi), -1 if unknown
};

// A scaled fp8 row's total error: the kernel's output against the exact product of the fp32
// sources A0 B0 (quantization included), reported as measured (no bound applies to it). The
// fields are those of ErrorStats of the same name, computed against that second reference; the
// row's other statistics are against the dequantized operands (the GEMM's own error).
struct TotalError {
  double rel_mean = 0, rel_std = 0, rel_max_abs = 0, normwise = 0, componentwise = 0, calc_diff = 0;
  static TotalError of(const ErrorStats& s) {
    return {s.rel_mean, s.rel_std, s.rel_max_abs, s.normwise, s.componentwise, s.calc_diff};
  }
};

struct ResultRow {
  // What ran.
  std::string kernel, family;
  Numerics numerics;
  Layout layout_a = Layout::row_major, layout_b = Layout::row_major;
  // On what.
  std::string distribution;
  int M = 0, N = 0, K = 0;
  std::uint64_t seed = 0;
  std::string reference;          // engine that computed the exact reference (+ MPFR spot checks)
  std::string recipe;             // scaled fp8 or quantized: the distribution's recipe (after '@'); empty otherwise
  // The problem beyond C = A B (reference/gemm_form.hpp): its canonical text ("plain", or e.g.
  // "alpha=0.5,beta=2,c0=normal_0_1"); a row read from a CSV written before forms is plain.
  std::string form = "plain";
  std::optional<Epilogue> epilogue;  // the kernel's epilogue record, on rows of a form that is not plain
  // A kernel that reports amax = max |T| (an output scale's form): what it reported, and the exact value.
  std::optional<double> amax, amax_exact;
  // What came out (absent where the kernel did not run).
  std::optional<ErrorStats> stats;
  std::optional<TotalError> total;  // scaled fp8 and quantized rows: against A0 B0
  // Scaled fp8 and quantized rows: the problem's quantization error, the exact product of the dequantized
  // operands against A0 B0 (the same for every kernel of the problem; total is kernel and quantization together).
  std::optional<TotalError> quantization;
  std::optional<Timing> timing;
  // Timed repetitions: those the median is taken over where the kernel ran; before (and where it did
  // not run) the fixed count asked for, absent when the count is left to the noise rule.
  std::optional<int> reps;
  Status status = Status::planned;
  std::string note;

  // The row's identity within a plan: kernel, distribution, MxNxK, seed (and the form, when not plain).
  std::string key() const;
};

// q(0.75) - q(0.25) of the repetition times, each quantile by numpy's default ("linear") method on
// the sorted times: position (n - 1) p, interpolated between its two neighbours (the definition of
// the rel_median, rel_p01, rel_p99 columns too). The time_ms_iqr column. 0 for one repetition, NaN
// for none.
double interquartile_range(std::vector<double> times_ms);

// The row describing kernel k on (distribution, M, N, K, seed), before anything ran.
ResultRow describe(const Kernel& k, const std::string& distribution, int M, int N, int K, std::uint64_t seed);

// The CSV columns, in order.
const std::vector<std::string>& result_columns();
// The columns that say how a row was timed, not what its kernel computed: two runs of the same kernel on the
// same inputs may differ in these alone (`gemmlab compare` compares them through the medians' ratio and noise).
const std::vector<std::string>& timing_columns();
std::vector<std::string> to_fields(const ResultRow& r);
// Inverse of to_fields for a row read back from a CSV with `columns` as its header (the columns may
// be a subset or in another order; unknown columns are ignored). A column the header lacks (a CSV
// written before it existed) keeps the struct's default, 0 for a statistic of a row with statistics:
// a reader that compares rows must look at which columns the file has (`gemmlab compare` does).
// Throws std::invalid_argument naming the column and value that do not parse.
ResultRow from_fields(const std::vector<std::string>& columns, const std::vector<std::string>& fields);

}  // namespace gemmlab
