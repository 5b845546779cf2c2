// Error statistics of one computed product against its exact reference, and the analytic bounds
// they are judged by.
#pragma once
#include <cstdint>
#include <string>
#include <vector>
#include "reference/exact_gemm.hpp"
#include "reference/formats.hpp"

namespace gemmlab {


struct BoundModel {
  int K = 0;
  Format input = Format::fp32;        // format the inputs were rounded to before the run
  Format compute = Format::fp32;      // format the multiplier sees (fp32 inputs under TF32 mode: tf32)
  Format accumulator = Format::fp32;  // format of the running sum
  Format output = Format::fp32;       // format written to C
  // How the accumulation rounds: nearest_even (CUDA-core fp32 FMA / adds); toward_zero (tensor-core
  // accumulation: alignment and normalisation truncate, Fasi et al. 2021, so each addition can lose
  // up to one ulp, 2u, instead of half an ulp); unknown (a library whose internals are not known:
  // judged as toward_zero, the weaker of the two).
  Rounding rounding = Rounding::nearest_even;
  double acc_unit_roundoff = 0;       // 0: use info(accumulator).unit_roundoff; set this where the
                                      // hardware keeps fewer bits (fp8 wgmma keeps ~13-14)
};

// Componentwise deterministic bound factor f with |C^ - C| <= f (|A||B|) for every entry
// (Higham, ASNA 2nd ed. §3.1):
//   f = (1 + d_prod)(1 + gamma_K(u_eff))(1 + u_out) - 1,   gamma_n(u) = n u / (1 - n u),
// d_prod = 0 if products are exact (compute precision >= input precision), else (1 + u_c)^2 - 1
// (both inputs rounded to the compute format); u_eff = u_acc (nearest) or 2 u_acc (truncate, unknown);
// u_out = unit roundoff of the output format if the output is narrower than the accumulator, else 0.
// Returns +infinity if K u_eff >= 1 (no bound).
double gamma_bound_factor(const BoundModel& m);
// Probabilistic scale sqrt(K) * u_eff (Higham & Mary 2019, with lambda = 1).
double sqrtk_u(const BoundModel& m);

// The statistics of one computed product, in CSV column order: X(type, name, what it is). This list
// is the one place the fields are named: the struct below and the CSV columns of the report layer
// (experiments/report/result.hpp) are generated from it.
#define GEMMLAB_ERROR_STATS_FIELDS(X)                                                                  \
  X(std::int64_t, entries, "all entries compared")                                                   \
  X(std::int64_t, zero_reference, "entries with exact C == 0 (excluded from relative errors)")         \
  X(std::int64_t, zero_ref_nonzero, "... of which the computed value is not exactly zero")            \
  X(std::int64_t, nonfinite, "computed NaN or infinity (an unwritten entry or overflow)")             \
  X(std::int64_t, unwritten, "computed NaN: the harness poisons C with NaN, so an entry a kernel skipped") \
  X(std::int64_t, rel_count, "entries in the relative-error statistics")                             \
  /* Signed relative error r = (C^ - C) / |C| over entries with C != 0 and finite C^. */              \
  X(double, rel_mean, "bias")                                                                         \
  X(double, rel_mean_ci95, "half-width of the 95% confidence interval of the mean (1.96 s / sqrt(n))") \
  X(double, rel_std, "spread (sample standard deviation)")                                            \
  X(double, rel_median, "median")                                                                     \
  X(double, rel_p01, "1st percentile")                                                                \
  X(double, rel_p99, "99th percentile")                                                               \
  X(double, rel_max_abs, "largest |r|")                                                               \
  /* The same in units of the output format's unit roundoff u_out. */                                 \
  X(double, u_out, "unit roundoff of the output format")                                              \
  X(double, rel_mean_u, "rel_mean / u_out")                                                           \
  X(double, rel_std_u, "rel_std / u_out")                                                             \
  X(double, rel_median_u, "rel_median / u_out")                                                       \
  X(double, rel_p01_u, "rel_p01 / u_out")                                                             \
  X(double, rel_p99_u, "rel_p99 / u_out")                                                             \
  X(double, rel_max_abs_u, "rel_max_abs / u_out")                                                     \
  X(double, normwise, "||C^ - C||_F / ||C||_F")                                                       \
  X(double, componentwise, "max |C^ - C| / (|A||B|) over entries with (|A||B|) > 0")                  \
  /* Signed componentwise error e = (C^ - C) / (|A||B|): a bias that stays meaningful for mean-zero  \
     data, where |C| << |A||B| makes relative errors explode. */                                      \
  X(double, cw_mean, "mean of e")                                                                     \
  X(double, cw_mean_ci95, "half-width of the 95% confidence interval of cw_mean")                     \
  X(double, cw_std, "standard deviation of e")                                                        \
  X(double, frac_correctly_rounded, "fraction of entries with C^ == RN_out(C)")                       \
  X(double, gamma_bound, "gamma_bound_factor(model)")                                                 \
  X(double, cw_over_gamma, "componentwise / gamma_bound")                                             \
  X(double, sqrtk_u, "sqrt(K) u_eff")                                                                 \
  X(double, cw_over_sqrtk_u, "componentwise / sqrtk_u")

struct ErrorStats {
#define GEMMLAB_DECLARE_FIELD(type, name, doc) type name = 0;
  GEMMLAB_ERROR_STATS_FIELDS(GEMMLAB_DECLARE_FIELD)
#undef GEMMLAB_DECLARE_FIELD
  bool within_bound = true;   // componentwise <= gamma_bound and nonfinite == 0
};

// computed: the kernel's output as doubles, (M, N) row-major. Sums are accumulated with Welford's
// update in long double plus Neumaier compensation for the Frobenius sums, so 16M entries lose no
// digits; percentiles by selection (no full sort). Multi-threaded where it pays.
ErrorStats compute_error_stats(const std::vector<double>& computed, const GemmReference& ref,
                               const BoundModel& model, int threads = 0);

}  // namespace gemmlab
