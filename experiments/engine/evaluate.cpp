// Judging a user's C (see evaluate.hpp).
#include "experiments/engine/evaluate.hpp"

#include <cmath>
#include <stdexcept>

#include "experiments/engine/run.hpp"
#include "experiments/report/files.hpp"
#include "reference/distributions.hpp"
#include "reference/error_stats.hpp"

namespace gemmlab {

Numerics declared_numerics(Format input, Format output, Accumulation accumulation, std::optional<Format> compute,
                           std::optional<Format> accumulator, int promotion_interval_k) {
  if (const std::string why = undeclarable(accumulation); !why.empty()) throw UsageError(why);
  if (accumulation == Accumulation::promoted && promotion_interval_k <= 0)
    throw UsageError("accumulation promoted needs --promotion-interval-k N (in Python promotion_interval_k=N: elements of K "
                     "summed in the tensor core before each fp32 addition)");
  if (accumulation != Accumulation::promoted && promotion_interval_k != 0)
    throw UsageError("--promotion-interval-k (promotion_interval_k) is for accumulation promoted only, not " +
                     std::string(to_string(accumulation)));
  Numerics n;
  n.input = input;
  n.compute = compute.value_or(input);
  n.accumulator = accumulator.value_or(output == Format::fp64 ? Format::fp64 : Format::fp32);
  n.output = output;
  n.accumulation = accumulation;
  n.instruction = std::nullopt;
  n.k_step = accumulation == Accumulation::fma ? 1 : 0;  // 0: not known
  n.promotion_interval_k = promotion_interval_k;
  n.accumulation_rounding = default_accumulation_rounding(accumulation);
  return n;
}

GemmReference evaluation_reference(const Matrix& A, const Matrix& B, Format out, int spot_checks,
                                   std::uint64_t seed, int threads, std::string& label) {
  RunPlan plan;  // run's defaults: exact engine + MPFR spot checks
  plan.reference = "auto";
  plan.spot_checks = spot_checks;
  return compute_reference(plan, A, B, out, threads, seed, label);
}

std::string check_output_dtype(const std::string& dtype, Format out) {
  const std::string f = info(out).name;
  switch (out) {
    case Format::fp64:
      return dtype == "float64" ? "" : "C is " + dtype + " but the output format is fp64: save C as float64";
    case Format::fp32:
      return dtype == "float32" ? "" : "C is " + dtype + " but the output format is fp32: save C as float32 (as the kernel wrote it), or declare --output-format";
    case Format::fp16:
      return dtype == "float16" ? "" : "C is " + dtype + " but the output format is fp16: save C as float16 (as the kernel wrote it), or declare --output-format";
    default:
      return dtype == "float32" || dtype == "float64"
                 ? ""
                 : "C is " + dtype + " but the output format is " + f + ", which numpy has no dtype for: save C as float32 or float64 holding the exact " + f + " values";
  }
}

std::string check_output_values(const std::vector<double>& C, int cols, Format out, bool allow_nonfinite) {
  long long nonfinite = 0, bad = 0;
  long long first_nonfinite = -1, first_bad = -1;
  for (std::size_t k = 0; k < C.size(); ++k) {
    if (!std::isfinite(C[k])) {
      if (!nonfinite++) first_nonfinite = static_cast<long long>(k);
    } else if (!is_representable(out, C[k])) {
      if (!bad++) first_bad = static_cast<long long>(k);
    }
  }
  auto at = [&](long long k) {
    return "[" + std::to_string(k / cols) + ", " + std::to_string(k % cols) + "]";
  };
  if (bad)
    return "C" + at(first_bad) + " = " + fmt_double(C[first_bad]) + " is not a value of " + info(out).name + " (" +
           std::to_string(bad) + " entries are not): a " + info(out).name +
           " output must hold exactly representable values; round C to the format the kernel really writes, "
           "or declare that format with --output-format";
  if (nonfinite && !allow_nonfinite)
    return "C has " + std::to_string(nonfinite) + " NaN or infinite entries (first at " + at(first_nonfinite) +
           "): fix the kernel, or pass --allow-nonfinite to count them in the row (status failed_bound)";
  return "";
}

std::string over_range_reason(const GemmReference& ref, Format out) {
  const double maxf = info(out).max_finite;
  long long over = 0;
  for (double c : ref.c) over += !(std::fabs(c) <= maxf);
  return over ? over_range_note(over, out) : "";
}

std::string over_range_note(long long over, Format out) {
  return std::to_string(over) + " exact entries exceed " + info(out).name + "'s range (max " +
         fmt_double(info(out).max_finite) + "): choose a narrower distribution for this output format";
}

ResultRow evaluate(const Matrix& A, const Matrix& B, const std::vector<double>& C, const Declared& d,
                   const GemmReference& ref, const std::string& reference_label, int threads) {
  const Numerics& n = d.numerics;
  if (A.cols != B.rows)
    throw UsageError("A is " + std::to_string(A.rows) + "x" + std::to_string(A.cols) + " but B is " +
                     std::to_string(B.rows) + "x" + std::to_string(B.cols) + ": A's columns must equal B's rows (K)");
  if (C.size() != static_cast<std::size_t>(A.rows) * B.cols)
    throw UsageError("C has " + std::to_string(C.size()) + " entries but A B is " + std::to_string(A.rows) + "x" +
                     std::to_string(B.cols));
  if (ref.M != A.rows || ref.N != B.cols || ref.out != n.output)
    throw std::invalid_argument("evaluate: the reference is not of these inputs and output format");

  long long over = 0;
  for (double c : ref.c) over += !(std::fabs(c) <= info(n.output).max_finite);
  if (over) return evaluated_row(d, A.rows, B.cols, A.cols, reference_label, over, nullptr);
  const ErrorStats s = compute_error_stats(C, ref, bound_model(n, A.cols), threads);
  return evaluated_row(d, A.rows, B.cols, A.cols, reference_label, 0, &s);
}

ResultRow evaluated_row(const Declared& d, int M, int N, int K, const std::string& reference_label, long long over,
                        const ErrorStats* stats) {
  const Numerics& n = d.numerics;
  ResultRow row;
  row.kernel = d.kernel;
  row.family = d.family;
  row.numerics = n;
  row.distribution = d.distribution;
  row.M = M, row.N = N, row.K = K;
  row.seed = d.seed;
  row.reference = reference_label;
  row.reps = d.reps;
  if (d.time_ms) {
    const double t = *d.time_ms;
    // One time given, no repetitions: min, max and the noise are unknown.
    row.timing = Timing{.time_ms_median = t, .time_ms_min = std::nan(""), .time_ms_max = std::nan(""),
                        .time_ms_iqr = std::nan(""), .time_ms_ci95_rel = std::nullopt, .stopped_by = std::nullopt,
                        .tflops = 2.0 * row.M * row.N * row.K / (t * 1e-3) / 1e12,
                        .sm_clock_mhz = -1};
  }
  auto with_note = [&](const std::string& s) {
    if (d.note.empty()) return s;
    return s.empty() ? d.note : d.note + "; " + s;
  };
  if (over || !stats) {
    row.status = Status::not_applicable;
    row.note = with_note(over_range_note(over, n.output));
    return row;
  }
  row.stats = *stats;
  const ErrorStats& s = *row.stats;
  Distribution dist;  // judge reads only whether it is exactint
  if (!d.distribution.empty()) {
    try {
      dist = parse_distribution(d.distribution);
    } catch (const std::invalid_argument& e) {
      throw UsageError(e.what());
    }
  }
  // judge reads NaN as the run's poison left unwritten, and any non-finite entry as a failure of the
  // bound; a user's C has no poison, so judge sees the finite entries and the non-finite are said
  // here. With accumulation unknown no bound is claimed: judge sees no violation, and the status is
  // no_bound whatever the weakest model (u_eff = 2u, in gamma_bound) says.
  const bool unknown = n.accumulation == Accumulation::unknown;
  ErrorStats finite = s;
  finite.unwritten = 0;
  if (unknown) finite.bound_violations = 0;
  finite.within_bound = finite.bound_violations == 0;
  judge(row, finite, dist, n);
  std::string note;
  if (s.nonfinite)
    note += std::to_string(s.nonfinite) + " entries of C are NaN or infinite (" + std::to_string(s.unwritten) +
            " NaN), left out of the statistics; ";
  if (unknown) {
    note += std::string("accumulation unknown: no bound is claimed (gamma_bound is the weakest model's, u_eff = 2u") +
            (s.bound_violations ? ", and " + std::to_string(s.bound_violations) + " entries are above it)" : ")") + "; ";
    const std::string vacuous = "K u_eff >= 1: no deterministic bound applies; judge by the statistics; ";
    if (row.note.rfind(vacuous, 0) == 0) row.note.erase(0, vacuous.size());
    row.status = Status::no_bound;
  }
  if (s.nonfinite) row.status = Status::failed_bound;
  row.note = note + row.note;
  while (!row.note.empty() && (row.note.back() == ' ' || row.note.back() == ';')) row.note.pop_back();
  row.note = with_note(row.note);
  return row;
}

}  // namespace gemmlab
