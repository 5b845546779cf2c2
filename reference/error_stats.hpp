// Error statistics of one computed product against its exact reference, and the analytic bounds
// they are judged by.
#pragma once
#include <cstdint>
#include <string>
#include <vector>
#include "reference/exact_gemm.hpp"
#include "reference/formats.hpp"

namespace gemmlab {

// How the kernel's additions round. nearest: fp32 FMA / adds on CUDA cores. truncate: tensor-core
// accumulation (alignment and normalisation truncate, Fasi et al. 2021), so each addition can lose
// up to one ulp (2u) instead of half an ulp (u). unknown: a library whose internals are not known:
// judged as truncate, the weaker of the two.
enum class AccRounding { nearest, truncate, unknown };

struct BoundModel {
  int K = 0;
  Format input = Format::fp32;        // format the inputs were rounded to before the run
  Format compute = Format::fp32;      // format the multiplier sees (fp32 inputs under TF32 mode: tf32)
  Format accumulator = Format::fp32;  // format of the running sum
  Format output = Format::fp32;       // format written to C
  AccRounding rounding = AccRounding::nearest;
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

struct ErrorStats {
  std::int64_t entries = 0;          // all entries compared
  std::int64_t zero_reference = 0;   // entries with exact C == 0 (excluded from relative errors)
  std::int64_t zero_ref_nonzero = 0; // ... of which the computed value is not exactly zero
  std::int64_t nonfinite = 0;        // computed NaN or infinity (an unwritten entry or overflow)
  std::int64_t rel_count = 0;        // entries in the relative-error statistics

  // Signed relative error r = (C^ - C) / |C| over entries with C != 0 and finite C^.
  double rel_mean = 0;        // bias
  double rel_mean_ci95 = 0;   // half-width of the 95% confidence interval of the mean (1.96 s / sqrt(n))
  double rel_std = 0;         // spread (sample standard deviation)
  double rel_median = 0;
  double rel_p01 = 0, rel_p99 = 0;
  double rel_max_abs = 0;
  // The same in units of the output format's unit roundoff u_out.
  double u_out = 0;
  double rel_mean_u = 0, rel_std_u = 0, rel_median_u = 0, rel_p01_u = 0, rel_p99_u = 0, rel_max_abs_u = 0;

  double normwise = 0;        // ||C^ - C||_F / ||C||_F
  double componentwise = 0;   // max |C^ - C| / (|A||B|) over entries with (|A||B|) > 0
  // Signed componentwise error e = (C^ - C) / (|A||B|) over entries with |A||B| > 0: its mean is a
  // bias that stays meaningful for mean-zero data, where |C| << |A||B| makes relative errors explode.
  double cw_mean = 0, cw_mean_ci95 = 0, cw_std = 0;
  double frac_correctly_rounded = 0;  // fraction of entries with C^ == RN_out(C)
  double gamma_bound = 0;     // gamma_bound_factor(model)
  double cw_over_gamma = 0;   // componentwise / gamma_bound
  double sqrtk_u = 0;         // sqrt(K) u_eff
  double cw_over_sqrtk_u = 0; // componentwise / sqrtk_u
  bool within_bound = true;   // componentwise <= gamma_bound and nonfinite == 0
};

// computed: the kernel's output as doubles, (M, N) row-major. Sums are accumulated with Welford's
// update in long double plus Neumaier compensation for the Frobenius sums, so 16M entries lose no
// digits; percentiles by selection (no full sort). Multi-threaded where it pays.
ErrorStats compute_error_stats(const std::vector<double>& computed, const GemmReference& ref,
                               const BoundModel& model, int threads = 0);

}  // namespace gemmlab
