// Error statistics of one computed product against its exact reference, and the analytic bounds
// they are judged by.
#pragma once
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>
#include "reference/exact_gemm.hpp"
#include "reference/formats.hpp"
#include "reference/portable_fp.hpp"

namespace gemmlab {


// Operands that reach the multiplier as pieces (3xTF32; Triton's input_precision tf32x3, bf16x3, bf16x6):
// each operand x = x_0 + ... + x_{pieces-1} + e, piece i the residual of the pieces before it rounded to
// the compute format as `rounding` says (tf32's last piece: as the instruction reads an fp32 container,
// at worst cut toward zero), and the products (piece i of A) x (piece j of B) of the pairs in `products`
// (bit 3 i + j) are summed in place of each product a b. pieces 1: not split.
struct OperandSplit {
  int pieces = 1;
  std::uint16_t products = 0;
  Rounding rounding = Rounding::nearest_even;
  static constexpr std::uint16_t bit(int i, int j) { return static_cast<std::uint16_t>(1u << (3 * i + j)); }
  // The products formed per k (the passes over K).
  int passes() const;
  bool operator==(const OperandSplit&) const = default;
};
constexpr int max_operand_pieces = 3;
// The pairs as the CSV writes them: "ij" per product, space-separated ("00 01 10"); "" when not split.
std::string products_text(const OperandSplit& s);
// Parses products_text's words into s.products; false on anything else (a pair beyond s.pieces included).
bool parse_products(std::string_view text, OperandSplit& s);
// Why s is not a split the bound models, "" when it is: 1 to max_operand_pieces pieces, products only
// of pairs of those pieces, some when split and none when not. The one check of the bound, the result
// CSV's columns and explain's JSON.
std::string split_problem(const OperandSplit& s);

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
  bool subnormals_flushed = false;    // the accumulation writes results below the normal range as 0
                                      // (fp8 wgmma, results/probes); unknown rounding is judged so too
  OperandSplit split;                 // operands split into pieces of `compute` (pieces 1: not split)
  // A revealed summation tree's bound (reference/tree_bound.hpp), where the kernel's record holds its
  // tree: tree_path = S > 0, the largest sum of unit roundoffs on one product's path to the root,
  // replaces gamma_K(u_eff) by gamma(S) = S / (1 - S); tree_roundings (every rounding of the tree) and
  // tree_eta (the largest underflow error of one) replace K and the accumulator's eta in the underflow
  // term, and `accumulator` is the format of the tree's root. 0: no tree.
  double tree_path = 0;
  long long tree_roundings = 0;
  double tree_eta = 0;
  // Operands in fixed point (cuBLAS's fp64 emulation): t > 0 mantissa bits per entry on a power-of-two
  // scale shared by each row of A and each column of B, held in S = (t + 1 + 7) / 8 int8 slices
  // (fixed_point_term below); 0: floating-point operands. Not with split operands.
  int fixed_point_bits = 0;
  // The epilogue of a form (reference/gemm_form.hpp: alpha, beta C0, a bias, an output scale), on the worst
  // term's path after the accumulation; the defaults (0, 1, 1) are C = A B, where nothing changes.
  int epilogue_roundings = 0;         // h: roundings in the epilogue's arithmetic (alpha, beta C0, adds, scale)
  Format epilogue = Format::fp32;     // the format of that arithmetic
  int output_roundings = 1;           // r: roundings to the output format (2: a term added after C was rounded)
  double underflow_scale = 1;         // |alpha s|: what the accumulation's absolute (underflow) error is scaled by
  bool operator==(const BoundModel&) const = default;
};

// Componentwise deterministic bound factor f with |C^ - C| <= f (|A||B|) for every entry
// (Higham, ASNA 2nd ed. §3.1):
//   f = (1 + d_prod)(1 + gamma_K(u_eff))(1 + u_out) - 1,   gamma_n(u) = n u / (1 - n u),
// d_prod = 0 if products are exact (compute precision >= input precision), else (1 + u_c)^2 - 1
// (both inputs rounded to the compute format); u_eff = u_acc (nearest) or 2 u_acc (truncate, unknown);
// u_out = unit roundoff of the output format if the output is narrower than the accumulator, else 0.
// Returns +infinity if K u_eff >= 1 (no bound).
// A revealed tree (tree_path S > 0): gamma(S) = S / (1 - S) in place of gamma_K(u_eff), +infinity if
// S >= 1; for a chain of K roundings of u_eff each, S = K u_eff and the two are equal.
// Split operands (OperandSplit, P products per k): with mu the pieces' rounding (u_c nearest, 2 u_c
// otherwise), |piece i| <= (1 + mu) mu^i |x| and |e| <= E = mu^pieces |x|, so the products formed sum to
// a b - t with |t| <= delta |a||b|, their magnitudes to at most rho |a||b|, and the P K of them are
// summed through at most P K roundings (each of the K products of the tree becomes P):
//   f = (1 + u_out)(delta + rho gamma_{P K}(u_eff)) + u_out,
//   delta = sum over the pairs not formed of (1 + mu)^2 mu^(i+j) + 2 E + E^2,
//   rho = sum over the pairs formed of (1 + mu)^2 mu^(i+j).
// One piece and the one product reduce it to the formula above (delta = d_prod, rho = 1 + d_prod). The
// pieces are assumed normal (as a compute format's rounding is above): a residual below fp32's normal
// range would add an absolute error to each product.
//
// A form's epilogue (reference/gemm_form.hpp; BoundModel's epilogue_roundings h and output_roundings r), Higham
// ASNA 2nd ed. §3.1 style. S the exact sum, P = |A||B|, T = alpha S + beta c0 + b the exact result, s the output
// scale, M' = |alpha| P + |beta c0| + |b|. The accumulation gives S^ = S + e, |e| <= f_acc P, with
// 1 + f_acc = (1 + d_prod)(1 + gamma_K(u_eff)) (or 1 + delta + rho gamma for split operands), so that
// 1 + f_plain = (1 + f_acc)(1 + u_o), f_plain the factor above. Each term x of s T (s alpha S^, s beta c0, s b)
// reaches C^ through at most h roundings of the epilogue's arithmetic (unit roundoff u_e: u of its format for
// round-to-nearest, 2u otherwise) and at most r roundings to the output format: x (1 + theta)(1 + phi) with
// |theta| <= gamma_h(u_e) (Lemma 3.1) and |phi| <= (1 + u_o)^r - 1. Summing over the terms, with |S| <= P,
//   |C^ - s T| <= |s| |alpha| |e| (1 + gamma_h)(1 + u_o)^r + |s| M' ((1 + gamma_h)(1 + u_o)^r - 1)
//              <= |s| M' ((1 + f_acc)(1 + gamma_h)(1 + u_o)^r - 1),
// so  1 + f = (1 + f_plain)(1 + gamma_h(u_e))(1 + u_o)^(r - 1).
// h counts every rounding on the worst term's path (alpha x or beta c0, each add, s x), wherever it happens;
// r = 1 when beta C0 and the bias enter before the output rounding (in the epilogue, or as the accumulator's
// start: then they pass gamma_K too, which f covers, since (1 + f_acc) multiplies all of M'), r = 2 when one
// enters after C was rounded to the output format and is rounded again, which also bounds a kernel whose
// placement is unknown. alpha on the sum or on each product is one rounding either way. |s| M' is exactly
// |A'||B'| of the augmented product the reference computes (its abs_ab), so every entry is judged by
// |C^ - C| <= f abs_ab + g as for C = A B. Saturation of an fp8 output (s T within the format's range, which the
// run checks) only moves C^ toward s T. Example: fp16 out from an fp32 accumulator and fp32 epilogue (u_o = 2^-11),
// alpha = 0.5, beta = 2, C0 and a bias of unknown placement: h = 1 + 2 = 3, r = 2,
// f = (1 + f_plain)(1 + gamma_3(2^-24))(1 + 2^-11) - 1 (nearest-even arithmetic).
double gamma_bound_factor(const BoundModel& m);
// The sums the accumulation rounds: K, or P K for split operands, or n = L ceil(K / 8192) for
// fixed-point operands (see fixed_point_term).
long long accumulated_terms(const BoundModel& m);
// The absolute term g of the bound for gradual underflow (Higham, ASNA 2nd ed. §2.1, model (2.8), and
// §3.1 with underflow; Demmel 1984): with subnormals every rounding commits |err| <= u |x| + eta, so
//   |C^ - C| <= f (|A||B|) + g,   g = n eta_acc (1 + gamma_n(u_eff)) + eta_out,   n = accumulated_terms,
// eta = 2^(emin - p) (half the subnormal spacing) for round-to-nearest, 2^(emin - p + 1) (the whole
// spacing) for truncation, and 2^emin (the smallest normal) where subnormal results are flushed to
// zero or the rounding is unknown; emin, p of the accumulator (eta_acc) and of the output (eta_out).
// Products of the inputs are exact (or rounded to a compute format with fp32's exponent range), so
// they add no underflow term; inputs rounded to a compute format with a smaller range (fp16 under
// CUBLAS_COMPUTE_32F_FAST_16F) are assumed not to underflow there. +infinity where f is.
// A revealed tree: n = tree_roundings and eta_acc = tree_eta (or 2^emin of the root's format where
// results are flushed or the rounding is unknown, if larger), gamma_n(u_eff) = gamma(S).
// A form's epilogue: the accumulation's absolute error is scaled by |alpha s| (underflow_scale), each of the h
// roundings of the arithmetic adds eta_e, each output rounding beyond the first eta_out, and all of it grows by
// the factors of gamma_bound_factor:  g = (max(1, |alpha s|) g_plain + h eta_e)(1 + gamma_h(u_e))(1 + u_o)^(r - 1)
// + (r - 1) eta_out.
double underflow_term(const BoundModel& m);
// Probabilistic scale sqrt(K) * u_eff (Higham & Mary 2019, with lambda = 1).
double sqrtk_u(const BoundModel& m);

// ---- Fixed-point operands: |C^ - C| <= f (|A||B|) + h alpha_i beta_j + g --------------------------
// alpha_i = max_k |a_ik|, beta_j = max_k |b_kj| (GemmReference::row_max_a, col_max_b). The scheme is
// Ozaki's error-free splitting on integer slices (Ozaki, Ogita, Oishi & Rump, "Error-free
// transformations of matrix multiplication by using fast routines of matrix multiplication and its
// applications", Numer. Algorithms 59, 2012; on int8 tensor cores: Ootomo, Ozaki & Yokota, "DGEMM on
// integer matrix multiplication unit", IJHPCA 2024, which cuBLAS's documentation cites; the
// row/column scaling that makes its error relative to alpha_i beta_j rather than |A||B|: Uchino,
// Ozaki & Imamura, "Ozaki Scheme II", arXiv 2504.08009, section 2). What the cuBLAS documentation
// (13.0 Update 2, "Floating Point Emulation", "Fixed-Point") states: one power-of-two scale per row
// of A and per column of B brings every entry into [-1, 1]; an entry is a sign and t mantissa bits
// stored in int8 slices, S = ceildiv(t + 1, 8), t rounded up to fill the last slice (so t = 8 S - 1);
// the cost grows quadratically with S. What it leaves open, and what the bound assumes (the last
// word of each: what the measured rows show, results/fp64 and kernels/fp64/cublas_dgemm.cu):
//  (a) the scale sigma_i of row i: the power of two with alpha_i < sigma_i <= 2 alpha_i (measured:
//      2^(floor(log2 alpha_i) + 1));
//  (b) how an entry is rounded to the grid sigma 2^-t: any way, |a^ - a| <= sigma 2^-t (measured:
//      toward zero);
//  (c) the slices: digits D_1..D_S of weights w_s = 2^(1 - 8 s), a^ = sigma sum_s D_s w_s, each an
//      int8, |D_s| <= 2^7 (measured: balanced base-256 digits);
//  (d) which products of slices are formed: any subset of the pairs, provided every pair with
//      s + u <= S + 1 is (measured: exactly those, the triangle of Ozaki et al.'s fast mode);
//  (e) the formed products are exact integer GEMMs (int8 in, int32 out); their results are added in
//      binary64 as at most n = L ceil(K / 8192) terms in any order, L = S (S + 1) / 2 pairs and K cut
//      in chunks of 8192 (the split-K of the workspace size the documentation gives), each addition
//      rounded as the library's unknown rounding is judged, u_eff = 2u (measured: the S levels, not
//      the L pairs, summed from the largest; at K = 16384 the rows lie between the model's with
//      levels per K chunk of 8192 and of 4096, which add S ceil(K / 8192) and S ceil(K / 4096)
//      terms, both at most n: n covers chunks down to 8192 S / L elements of K).
// With delta = 2^-t, and sigma_i <= 2 alpha_i, tau_j <= 2 beta_j (B's column scales):
//  (1) the operands as represented: |a^ b^ - a b| <= |a^ - a| |b| + |a| |b^ - b| + |a^ - a| |b^ - b|
//      <= (4 delta + 4 delta^2) alpha_i beta_j per k;
//  (2) the pairs not formed (s + u >= S + 2, 2 S - d + 1 of them with s + u = d): |D_s D_u| w_s w_u <=
//      2^(16 - 8 d), summed <= (S - 1) 2^-8S (256 / 255), times sigma_i tau_j <= 4 alpha_i beta_j per k;
//  (3) the binary64 sum of the n exact terms T: |fl(sum T) - sum T| <= gamma_n(u_eff) sum |T| (Higham,
//      ASNA 2nd ed. §4.2: any order), and sum |T| <= sum_k P_ik Q_kj with P = sigma sum_s |D_s| w_s:
//      below the first non-zero digit the others add at most 2^7 sum_s w_s <= (128/255) w_s0, so
//      P <= phi |a^| with phi = 383/127 (the leading digit is at least 1), and sum |T| <= phi^2
//      (|A||B| + K (4 delta + 4 delta^2) alpha_i beta_j) by (1).
// So, with u_out the output's unit roundoff when it is narrower than binary64 (else 0),
//   f = (1 + u_out) phi^2 gamma_n(u_eff) + u_out,
//   h = (1 + u_out) K [(4 delta + 4 delta^2)(1 + phi^2 gamma_n(u_eff)) + 4 (S - 1) (256/255) 2^-8S],
//   g = 2 n eta_acc (1 + gamma_n(u_eff)) + eta_out (underflow_term: n roundings of the terms into
//       binary64, scaled by powers of two, and n additions).
// An emulation with fewer bits than its record says breaks h: each bit fewer doubles (1) and (2).
// f and h are +infinity where n u_eff >= 1. The binary64 evaluation of f ab + g + h alpha beta
// rounds three times (relative 2^-52 at most), which the bound's slack in (2) and (3) covers.
inline int fixed_point_slices(int bits) { return (bits + 1 + 7) / 8; }
// h of the bound above; 0 for floating-point operands.
double fixed_point_term(const BoundModel& m);

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
  /* Signed relative error r = (C^ - C) / |C| over entries with C != 0 and finite C^ (C: the exact  \
     product rounded to binary64, so for fp64 output r is the distance from the correctly rounded  \
     result, within half an ulp of the distance from the exact one). */                            \
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
  X(double, cw_over_sqrtk_u, "componentwise / sqrtk_u")                                              \
  /* Underflow (appended: earlier columns keep their places). */                                     \
  X(std::int64_t, subnormal_reference,                                                              \
    "entries with exact C != 0 below the output format's normal range: left out of the relative "    \
    "errors (there they measure underflow, not accuracy) and counted here")                          \
  X(double, underflow_bound, "g, the absolute term of the bound: |C^ - C| <= gamma_bound |A||B| + g")  \
  X(std::int64_t, bound_violations, "finite entries with |C^ - C| > gamma_bound |A||B| + underflow_bound") \
  /* The measures other tools report (appended), so a row reads in their terms too. Over F, the      \
     entries where C^ and C are both finite, unless said otherwise; definitions below. */            \
  X(double, calc_diff, "DeepGEMM's 1 - 2<C^,C> / (<C^,C^> + <C,C>) over F")                           \
  X(double, snr_db, "10 log10(sum C^2 / sum (C^ - C)^2) over F; inf when every entry of F is exact")  \
  X(double, max_abs_err, "max |C^ - C| over F")                                                       \
  X(std::int64_t, assert_close,                                                                      \
    "1 if torch.testing.assert_close(C^, C) passes at PyTorch's default tolerances of the output "   \
    "format, else 0")                                                                                 \
  X(std::int64_t, assert_close_mismatches, "entries failing that comparison (all entries, not only F)") \
  /* Fixed-point operands (appended). */                                                           \
  X(double, fixed_point_bound,                                                                      \
    "h, the term of fixed-point operands: |C^ - C| <= gamma_bound |A||B| + underflow_bound + h "      \
    "alpha_i beta_j, alpha_i = max_k |a_ik|, beta_j = max_k |b_kj|; 0 for floating-point operands")     \
  X(double, bound_ratio,                                                                            \
    "max over finite entries of |C^ - C| / (the bound of that entry): > 1 where bound_violations > 0 " \
    "(at 1 an entry may be either side, the quotient rounded); +inf where (|A||B|) = 0 and C^ != C")

struct ErrorStats {
#define GEMMLAB_DECLARE_FIELD(type, name, doc) type name = 0;
  GEMMLAB_ERROR_STATS_FIELDS(GEMMLAB_DECLARE_FIELD)
#undef GEMMLAB_DECLARE_FIELD
  bool within_bound = true;   // bound_violations == 0 and nonfinite == 0
};

// computed: the kernel's output as doubles, (M, N) row-major, judged against `ref` for the output
// format `out` (the correctly rounded value is round_to(out, c_odd), see exact_gemm.hpp). The
// first form takes out = ref.out. Multi-threaded; every `threads` gives the same bits.
//
// Definitions (reproducible bit for bit on any machine, thread count and GPU; the GPU version,
// experiments/device/error_stats_gpu.hpp, runs these same definitions from reference/portable_fp.hpp):
//  * per entry, with x = computed, c = ref.c (exact C rounded to binary64), c_out as above,
//    ab = ref.abs_ab, each operation one IEEE binary64 operation rounded to nearest-even, never
//    fused or widened (reference/portable_fp.hpp):
//      d = x - c,  r = d / |c| (entries with finite x and finite c != 0),
//      e = d / ab (entries with ab > 0 and finite x); componentwise = max |e|, +inf where ab == 0
//      but d != 0. Entries whose c is non-zero but below the output format's smallest normal are
//      left out of r (their relative error measures underflow) and counted in subnormal_reference.
//      An entry violates the bound when |d| > f ab + g (f = gamma_bound_factor, g = underflow_term;
//      for fixed-point operands f ab + g + h alpha_i beta_j, h = fixed_point_term, alpha_i beta_j =
//      RN(ref.row_max_a[i] ref.col_max_b[j])), or when ab == 0 and d != 0; bound_violations counts
//      them, and within_bound is bound_violations == 0 and nonfinite == 0. So an output whose every
//      entry is correctly rounded (|d| <= u_out |c| + eta_out <= f ab + g) always passes.
//      bound_ratio = max over them of |d| / that bound (Entry::bound_ratio).
//    Counts (entries, zero_reference, zero_ref_nonzero, nonfinite, correctly rounded: x == c_out)
//    and maxima are exact.
//  * sums: every sum of n terms is a fixed binary tree in double-double arithmetic: the terms are
//    leaves 0..n-1 padded with zeros to P = max(1024, 2^ceil(log2 n)), each inner node is
//    pfp::dd_add(left, right) of its two children (leaves 2i and 2i+1 form node i of the next
//    level). The tree does not depend on threads or on the GPU's launch shape. Its relative error
//    is below about (log2 P) 3 u^2 (u = 2^-53) of the sum of |terms|: far below the last bit of
//    any statistic derived from it. Squares are exact double-doubles (pfp::square).
//      mean_r = S(r).hi / n,  var_r = S((r - mean_r)^2).hi / (n - 1),  std_r = sqrt(var_r),
//      ci95 = 1.96 std / sqrt(n); the same for e. The deviations use the already rounded mean, and
//      their squares are summed exactly (to 2^-104), so the variance keeps its digits however
//      large the mean is against the spread (a second pass; no Welford, no cancellation).
//      normwise = sqrt(S(d^2).hi) / sqrt(S(c^2).hi) over the finite entries.
//  * order statistics (median, p01, p99) are exact: with the rel_count values r sorted,
//    position pos = (n - 1) p, k = floor(pos), f = pos - k, value = r_(k) + f (r_(k+1) - r_(k))
//    (numpy's "linear"), r_(k) when f == 0 or k + 1 == n.
//  * non-finite outputs are counted in `nonfinite` and left out of every sum and order statistic
//    (which then describe the finite entries); they make within_bound false. A NaN counts as
//    non-zero in zero_ref_nonzero.
//  * the measures other tools report, over F = the entries with x and c both finite, with the sums
//    S_F of the same tree (so they agree bit for bit on the CPU and the GPU too):
//      max_abs_err = max over F of |d| (d = RN(x - c) as above).
//      snr_db = 10 (log10 S_F(c^2).hi - log10 S_F(d^2).hi); +inf where S_F(d^2) == 0 (every entry of
//        F exact, or F empty), -inf where S_F(c^2) == 0 < S_F(d^2). The CSV writes "inf" and "-inf",
//        which from_fields and gemmlab.load_results read back as infinities. std::log10 is the one
//        C-library function in the statistics: it runs in assemble(), on the host for both the CPU
//        and the GPU path, so they agree; another C library may differ in the last bit.
//      calc_diff: DeepGEMM's measure (deepseek-ai/DeepGEMM, `calc_diff` of deep_gemm/utils.py, used by
//        its tests as `assert diff < 0.001`): 1 - 2 sum(x y) / sum(x x + y y) in float64, here with
//        y = c. Evaluated as S_F(d^2).hi / (S_F(x^2) + S_F(c^2)).hi, which is the same number in exact
//        arithmetic (x^2 + y^2 - 2 x y = (x - y)^2) but keeps its digits: in binary64, 1 - sim cancels
//        to an absolute error of about 1e-16, the size of calc_diff itself for an fp32 output. 0 where
//        the denominator is 0 (x and c zero on all of F; DeepGEMM divides 0 by 0 there).
//      assert_close, assert_close_mismatches: whether torch.testing.assert_close(x, c) passes, and the
//        number of entries it reports as mismatched, over ALL entries. The expected tensor is the
//        exact C rounded to binary64 (c), the tolerances PyTorch's defaults for the output format's
//        dtype (torch/testing/_comparison.py `_DTYPE_PRECISIONS`, (rtol, atol)): fp16 (1e-3, 1e-5),
//        bf16 (1.6e-2, 1e-5), fp32 and tf32 (stored as float32) (1.3e-6, 1e-5), fp64 (1e-7, 1e-7),
//        e4m3 and e5m2 (0, 0: not in the table, so PyTorch's fallback, equality). An entry matches as
//        torch.isclose decides it with equal_nan=False (aten/src/ATen/native/TensorCompare.cpp), in
//        binary64: x == c, or |x - c| is finite and |x - c| <= atol + |rtol c|. So a NaN never
//        matches and an infinity only the same infinity. This is
//        torch.testing.assert_close(x.double(), c, rtol=rtol, atol=atol); assert_close on x in its own
//        dtype with check_dtype=False would take the looser of the two dtypes' defaults, which
//        changes only fp8 outputs (to float64's (1e-7, 1e-7)).
ErrorStats compute_error_stats(const std::vector<double>& computed, const GemmReference& ref,
                               const BoundModel& model, int threads = 0);
ErrorStats compute_error_stats(const std::vector<double>& computed, const GemmReference& ref, Format out,
                               const BoundModel& model, int threads = 0);

// ---- the parts shared with the GPU statistics (experiments/device/error_stats_gpu.cu) ----------

namespace stats_detail {

constexpr std::size_t kLeafBlock = 1024;  // leaves summed by one block of the tree (a power of two)

// Everything the statistics are assembled from: pass 1 (counts, maxima, sums of r, e, d^2, c^2),
// pass 2 (sums of squared deviations from the rounded means) and the order statistics.
struct Raw {
  std::int64_t entries = 0, zero_reference = 0, zero_ref_nonzero = 0, nonfinite = 0, unwritten = 0, correct = 0;
  std::int64_t rel_count = 0, cw_count = 0, subnormal_reference = 0, bound_violations = 0;
  std::int64_t close_mismatches = 0;
  double rel_max_abs = 0, componentwise = 0, max_abs_err = 0, bound_ratio = 0;
  pfp::DD rel_sum, cw_sum, err2_sum, ref2_sum;  // pass 1
  pfp::DD f_err2_sum, f_ref2_sum, f_x2_sum;     // pass 1, over F (x and c finite): d^2, c^2, x^2
  pfp::DD rel_dev2_sum, cw_dev2_sum;            // pass 2
  double q_lo[3] = {0, 0, 0}, q_hi[3] = {0, 0, 0};  // r_(k), r_(k+1) for kQuantiles
};
constexpr double kQuantiles[3] = {0.5, 0.01, 0.99};

// What an entry is judged by: the output's smallest normal (relative errors below it measure
// underflow) and the bound |d| <= f ab + g (+ h alpha_i beta_j for fixed-point operands).
struct Judge {
  double min_normal = 0;  // 2^emin of the output format
  double f = 0, g = 0;    // gamma_bound_factor, underflow_term
  double h = 0;           // fixed_point_term: 0 for floating-point operands
  double close_rtol = 0, close_atol = 0;  // torch_default_tolerances of the output format
};

// PyTorch's default (rtol, atol) of torch.testing.assert_close for the dtype holding `out` (see
// compute_error_stats: `_DTYPE_PRECISIONS`, (0, 0) for the fp8 formats it does not list).
void torch_default_tolerances(Format out, double& rtol, double& atol);

// torch.isclose(x, c, rtol, atol, equal_nan=False) on one pair of binary64 values, operation for
// operation as aten computes it: equal, or |x - c| finite and within atol + |rtol c|.
GEMMLAB_HD bool torch_isclose(double x, double c, double rtol, double atol) {
  if (x == c) return true;
  if (rtol == 0 && atol == 0) return false;  // aten's short cut: equality only
  const double actual = pfp::fabs(pfp::sub(x, c));
  return pfp::is_finite(actual) && actual <= pfp::add(atol, pfp::fabs(pfp::mul(rtol, c)));
}

// The per-entry quantities (see compute_error_stats) of computed x against c, c_out, ab, and
// ab_max = alpha_i beta_j (read only where j.h > 0).
struct Entry {
  bool correct = false, zero_ref = false, zero_ref_nonzero = false, nonfinite = false, nan = false;
  bool has_rel = false, has_cw = false, subnormal_ref = false, violation = false;
  bool in_f = false;           // x and c both finite (the set F of calc_diff, snr_db, max_abs_err)
  bool close_mismatch = false;  // torch_isclose fails (assert_close_mismatches)
  double d = 0, r = 0, e = 0;
  double cw_abs = 0;  // contribution to componentwise: |e|, or +inf where ab == 0 and d != 0
  double bound_ratio = 0;  // |d| / (f ab + g [+ h ab_max]): 0 where d == 0, +inf where ab == 0 and d != 0
};
GEMMLAB_HD Entry entry(double x, double c, double c_out, double ab, double ab_max, const Judge& j) {
  Entry t;
  t.correct = x == c_out;
  t.zero_ref = c == 0;
  t.zero_ref_nonzero = t.zero_ref && x != 0;
  t.nonfinite = !pfp::is_finite(x);
  t.nan = pfp::is_nan(x);
  t.close_mismatch = !torch_isclose(x, c, j.close_rtol, j.close_atol);
  if (t.nonfinite) return t;
  t.d = pfp::sub(x, c);
  t.in_f = pfp::is_finite(c);
  if (ab > 0) {
    t.has_cw = true;
    t.e = pfp::div(t.d, ab);
    t.cw_abs = pfp::fabs(t.e);
    double bound = pfp::add(pfp::mul(j.f, ab), j.g);
    if (j.h > 0 && ab_max > 0) bound = pfp::add(bound, pfp::mul(j.h, ab_max));  // else as before
    const double err = pfp::fabs(t.d);
    t.violation = err > bound;
    // err / bound with 0 / 0 = 0, x / 0 = +inf and x / inf = 0 (x finite).
    if (err != 0) t.bound_ratio = bound > 0 ? pfp::div(err, bound) : pfp::from_bits(0x7FF0000000000000ull);
  } else if (t.d != 0) {
    // ab == 0: every product is exactly zero (the exact |A||B| of nonzero products is never 0 in
    // binary64), so nothing rounds and any nonzero output is wrong.
    t.cw_abs = pfp::from_bits(0x7FF0000000000000ull);
    t.violation = true;
    t.bound_ratio = t.cw_abs;
  }
  if (c != 0 && pfp::is_finite(c)) {
    if (pfp::fabs(c) < j.min_normal) {
      t.subnormal_ref = true;
    } else {
      t.has_rel = true;
      t.r = pfp::div(t.d, pfp::fabs(c));
    }
  }
  return t;
}

// Position of quantile p among n sorted values: k and the interpolation weight f.
inline void quantile_position(std::int64_t n, double p, std::int64_t& k, double& f) {
  const double pos = pfp::mul(static_cast<double>(n - 1), p);
  k = static_cast<std::int64_t>(pos);
  if (k > n - 1) k = n - 1;
  f = pfp::sub(pos, static_cast<double>(k));
}

// mean = S.hi / n (0 for n == 0): the value pass 2 subtracts.
inline double mean_of(const pfp::DD& s, std::int64_t n) {
  return n > 0 ? pfp::div(s.hi, static_cast<double>(n)) : 0.0;
}

// Reduces `count` (a power of two) double-doubles in place with the tree's pairing; returns a[0].
pfp::DD tree_reduce(pfp::DD* a, std::size_t count);

// The Judge of a model and output format (host code, shared by the CPU and GPU paths).
Judge judge_of(Format out, const BoundModel& model);

// The statistics from the raw parts (host code, shared by the CPU and GPU paths).
ErrorStats assemble(const Raw& raw, Format out, const BoundModel& model);

}  // namespace stats_detail

}  // namespace gemmlab
