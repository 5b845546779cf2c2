// Error statistics of one computed product against its exact reference (see error_stats.hpp).
//
// The definitions (per-entry binary64 operations, fixed double-double summation trees, exact
// counts, maxima and order statistics) are documented in error_stats.hpp. This file is compiled
// with -ffp-contract=off so the host arithmetic is exactly the named binary64 operations.
//  * pass 1 and pass 2 run over blocks of kLeafBlock consecutive entries (threads take whole
//    blocks); each block reduces its leaves with the tree's pairing, then the block results are
//    reduced with the same pairing: the tree of error_stats.hpp whatever the thread count.
//  * order statistics by std::nth_element on one copy of the r values: O(n), exact.
#include "reference/error_stats.hpp"

#include <algorithm>
#include <atomic>
#include <cmath>
#include <limits>
#include <stdexcept>
#include <thread>

namespace gemmlab {
namespace {

double acc_u(const BoundModel& m) {
  return m.acc_unit_roundoff > 0 ? m.acc_unit_roundoff : info(m.accumulator).unit_roundoff;
}
double u_eff_of(const BoundModel& m) {
  return m.rounding == Rounding::nearest_even ? acc_u(m) : 2.0 * acc_u(m);
}

// Runs body(chunk_index) for every chunk on `threads` threads (0: hardware_concurrency).
template <class F>
void for_chunks(std::size_t nchunks, int threads, F&& body) {
  int nt = threads > 0 ? threads : static_cast<int>(std::thread::hardware_concurrency());
  nt = std::max(1, std::min<int>(nt, static_cast<int>(std::min<std::size_t>(nchunks, 1 << 20))));
  if (nt == 1) {
    for (std::size_t c = 0; c < nchunks; ++c) body(c);
    return;
  }
  std::atomic<std::size_t> next{0};
  std::vector<std::thread> pool;
  pool.reserve(nt);
  for (int t = 0; t < nt; ++t)
    pool.emplace_back([&] {
      for (std::size_t c; (c = next.fetch_add(1)) < nchunks;) body(c);
    });
  for (auto& th : pool) th.join();
}

// r_(k) and r_(k+1) of v (modified: partially reordered); r_(k+1) = r_(k) when k + 1 == n.
void order_statistics(std::vector<double>& v, std::int64_t k, double& lo, double& hi) {
  const std::size_t n = v.size(), ku = static_cast<std::size_t>(k);
  std::nth_element(v.begin(), v.begin() + static_cast<std::ptrdiff_t>(ku), v.end());
  lo = v[ku];
  hi = ku + 1 < n ? *std::min_element(v.begin() + static_cast<std::ptrdiff_t>(ku) + 1, v.end()) : lo;
}

// a / b for a, b >= 0 without NaN: an infinite bound gives 0 (unless the error is infinite too), a
// zero bound gives infinity unless the error is zero.
double ratio(double a, double b) {
  constexpr double inf = std::numeric_limits<double>::infinity();
  if (std::isinf(b)) return std::isinf(a) ? inf : 0.0;
  if (b == 0) return a == 0 ? 0.0 : inf;
  return a / b;
}

}  // namespace

int OperandSplit::passes() const {
  int n = 0;
  for (unsigned b = products; b; b &= b - 1) ++n;
  return n;
}

std::string products_text(const OperandSplit& s) {
  std::string out;
  if (s.pieces <= 1) return out;
  for (int i = 0; i < s.pieces; ++i)
    for (int j = 0; j < s.pieces; ++j)
      if (s.products & OperandSplit::bit(i, j)) {
        if (!out.empty()) out += ' ';
        out += static_cast<char>('0' + i);
        out += static_cast<char>('0' + j);
      }
  return out;
}

bool parse_products(std::string_view text, OperandSplit& s) {
  std::uint16_t products = 0;
  std::size_t at = 0;
  while (at < text.size()) {
    if (text[at] == ' ') {
      ++at;
      continue;
    }
    if (at + 2 > text.size() || (at + 2 < text.size() && text[at + 2] != ' ')) return false;
    const int i = text[at] - '0', j = text[at + 1] - '0';
    if (i < 0 || j < 0 || i >= s.pieces || j >= s.pieces) return false;
    products |= OperandSplit::bit(i, j);
    at += 2;
  }
  s.products = products;
  return true;
}

std::string split_problem(const OperandSplit& s) {
  if (s.pieces < 1 || s.pieces > max_operand_pieces)
    return std::to_string(s.pieces) + " pieces: 1 (not split) to " + std::to_string(max_operand_pieces) +
           " are modelled";
  std::uint16_t pairs = 0;
  for (int i = 0; i < s.pieces; ++i)
    for (int j = 0; j < s.pieces; ++j) pairs |= OperandSplit::bit(i, j);
  if (s.products & ~pairs)
    return "a product of a piece beyond the " + std::to_string(s.pieces) + " pieces is listed";
  if (s.pieces > 1 && s.products == 0)
    return "a split of " + std::to_string(s.pieces) + " pieces must form some of its products";
  if (s.pieces == 1 && s.products != 0) return "products of pieces are listed for operands that are not split";
  return "";
}

namespace {

constexpr long long kFixedPointChunkK = 8192;  // K per exact int32 GEMM of slices (see fixed_point_term)
constexpr double kPhi = 383.0 / 127.0;         // sum_s |D_s| w_s <= phi |a^| for int8 digits

std::string fixed_point_problem(const BoundModel& m) {
  if (m.fixed_point_bits < 0 || m.fixed_point_bits > 8 * 64 - 1)
    return std::to_string(m.fixed_point_bits) + " fixed-point bits: 0 (floating-point operands) to " +
           std::to_string(8 * 64 - 1) + " are modelled";
  if (m.fixed_point_bits > 0 && m.split.pieces > 1)
    return "operands both in fixed point and split into pieces: the bound models one or the other";
  return "";
}

// gamma_n(u) = n u / (1 - n u), +infinity for n u >= 1.
double gamma_of(double n, double u) {
  return n * u >= 1 ? std::numeric_limits<double>::infinity() : n * u / (1 - n * u);
}

}  // namespace

long long accumulated_terms(const BoundModel& m) {
  const long long K = std::max(m.K, 0);
  if (m.fixed_point_bits > 0) {
    const long long S = fixed_point_slices(m.fixed_point_bits);
    return S * (S + 1) / 2 * std::max(1LL, (K + kFixedPointChunkK - 1) / kFixedPointChunkK);
  }
  return m.split.pieces > 1 ? K * m.split.passes() : K;
}

namespace {

// gamma_bound_factor for split operands (error_stats.hpp gives the derivation).
double split_bound_factor(const BoundModel& m, double gamma, double u_out) {
  const FormatInfo& comp = info(m.compute);
  const double mu = m.split.rounding == Rounding::nearest_even ? comp.unit_roundoff : 2.0 * comp.unit_roundoff;
  const double E = std::pow(mu, m.split.pieces);
  double formed = 0, dropped = 0;
  for (int i = 0; i < m.split.pieces; ++i)
    for (int j = 0; j < m.split.pieces; ++j) {
      const double size = (1 + mu) * (1 + mu) * std::pow(mu, i + j);
      (m.split.products & OperandSplit::bit(i, j) ? formed : dropped) += size;
    }
  const double delta = dropped + 2 * E + E * E;
  return (1 + u_out) * (delta + formed * gamma) + u_out;
}

}  // namespace

namespace {

// gamma_K(u_eff), or gamma(S) = S / (1 - S) of a revealed tree's path roundoff; +infinity at or past 1.
double accumulation_gamma(const BoundModel& m) {
  const double S = m.tree_path > 0 ? m.tree_path : static_cast<double>(accumulated_terms(m)) * u_eff_of(m);
  if (S >= 1) return std::numeric_limits<double>::infinity();
  return S / (1 - S);
}

}  // namespace

static double plain_bound_factor(const BoundModel& m) {
  if (const std::string why = split_problem(m.split); !why.empty())
    throw std::invalid_argument("gamma_bound_factor: " + why);
  if (const std::string why = fixed_point_problem(m); !why.empty())
    throw std::invalid_argument("gamma_bound_factor: " + why);
  if (m.fixed_point_bits > 0) {  // error_stats.hpp, fixed_point_term: (3)
    const double uo = info(m.output).unit_roundoff;
    const double u_out = uo > acc_u(m) ? uo : 0.0;
    const double gamma = gamma_of(static_cast<double>(accumulated_terms(m)), u_eff_of(m));
    return (1 + u_out) * (kPhi * kPhi * gamma) + u_out;
  }
  const double gamma = accumulation_gamma(m);
  if (std::isinf(gamma)) return gamma;
  const double uo = info(m.output).unit_roundoff;
  const double u_out = uo > acc_u(m) ? uo : 0.0;  // output narrower than the accumulator
  if (m.split.pieces > 1) return split_bound_factor(m, gamma, u_out);
  const FormatInfo& in = info(m.input);
  const FormatInfo& comp = info(m.compute);
  const double uc = comp.unit_roundoff;
  const double d_prod = comp.precision >= in.precision ? 0.0 : uc * (2.0 + uc);  // (1+uc)^2 - 1
  // (1 + d)(1 + g)(1 + o) - 1 expanded, so no small term is lost against the 1.
  return d_prod + gamma + u_out + d_prod * gamma + d_prod * u_out + gamma * u_out +
         d_prod * gamma * u_out;
}

static double plain_underflow_term(const BoundModel& m) {
  const double f = plain_bound_factor(m);
  if (std::isinf(f)) return f;
  auto eta = [&](Format fmt, Rounding r) {
    const FormatInfo& fi = info(fmt);
    if (m.subnormals_flushed || r == Rounding::unknown) return std::ldexp(1.0, fi.emin);
    return std::ldexp(1.0, fi.emin - fi.precision + (r == Rounding::nearest_even ? 0 : 1));
  };
  const double gamma = accumulation_gamma(m);
  if (m.tree_path > 0) {
    const double eta_acc = m.subnormals_flushed || m.rounding == Rounding::unknown
                               ? std::max(m.tree_eta, eta(m.accumulator, m.rounding))
                               : m.tree_eta;
    return static_cast<double>(m.tree_roundings) * eta_acc * (1 + gamma) + eta(m.output, m.rounding);
  }
  const double K = static_cast<double>(accumulated_terms(m));
  // Fixed-point operands: the n terms are rounded into binary64 once each, then added n times.
  const double roundings = m.fixed_point_bits > 0 ? 2 * K : K;
  return roundings * eta(m.accumulator, m.rounding) * (1 + gamma) + eta(m.output, m.rounding);
}

double fixed_point_term(const BoundModel& m) {
  if (const std::string why = fixed_point_problem(m); !why.empty())
    throw std::invalid_argument("fixed_point_term: " + why);
  if (m.fixed_point_bits == 0) return 0;
  const double f = gamma_bound_factor(m);
  if (std::isinf(f)) return f;
  const double uo = info(m.output).unit_roundoff;
  const double u_out = uo > acc_u(m) ? uo : 0.0;
  const double gamma = gamma_of(static_cast<double>(accumulated_terms(m)), u_eff_of(m));
  const int S = fixed_point_slices(m.fixed_point_bits);
  const double delta = std::ldexp(1.0, -m.fixed_point_bits);
  const double represented = (4 * delta + 4 * delta * delta) * (1 + kPhi * kPhi * gamma);  // (1), (3)
  const double dropped = 4.0 * (S - 1) * (256.0 / 255.0) * std::ldexp(1.0, -8 * S);      // (2)
  return (1 + u_out) * static_cast<double>(std::max(m.K, 0)) * (represented + dropped);
}

// The epilogue of a form on top of the accumulation's bound (error_stats.hpp, at gamma_bound_factor and
// underflow_term). With h = 0 and r = 1 both return the plain values unchanged, bit for bit.
namespace {
struct EpilogueFactors {
  double gamma_h = 0;  // gamma_h(u_e)
  double c = 0;        // (1 + u_o)^(r - 1) - 1
  double u_o = 0;
};
EpilogueFactors epilogue_factors(const BoundModel& m) {
  EpilogueFactors e;
  if (m.epilogue_roundings < 0 || m.output_roundings < 1)
    throw std::invalid_argument("gamma_bound_factor: an epilogue of " + std::to_string(m.epilogue_roundings) +
                                " roundings and " + std::to_string(m.output_roundings) +
                                " output roundings (at least 0 and 1)");
  const double ue = m.rounding == Rounding::nearest_even ? info(m.epilogue).unit_roundoff
                                                         : 2.0 * info(m.epilogue).unit_roundoff;
  const double h = m.epilogue_roundings;
  e.gamma_h = h * ue >= 1 ? std::numeric_limits<double>::infinity() : h * ue / (1 - h * ue);
  const double uo = info(m.output).unit_roundoff;
  e.u_o = uo > acc_u(m) ? uo : 0.0;
  e.c = std::pow(1 + e.u_o, m.output_roundings - 1) - 1;
  return e;
}
}  // namespace

double gamma_bound_factor(const BoundModel& m) {
  const double a = plain_bound_factor(m);
  if (m.epilogue_roundings == 0 && m.output_roundings == 1) return a;
  const EpilogueFactors e = epilogue_factors(m);
  const double b = e.gamma_h, c = e.c;
  // (1 + a)(1 + b)(1 + c) - 1 expanded, so no small term is lost against the 1.
  return a + b + c + a * b + a * c + b * c + a * b * c;
}

double underflow_term(const BoundModel& m) {
  const double g = plain_underflow_term(m);
  if (std::isinf(g) || (m.epilogue_roundings == 0 && m.output_roundings == 1 && m.underflow_scale <= 1)) return g;
  const EpilogueFactors e = epilogue_factors(m);
  auto eta = [&](Format fmt) {  // as underflow_term's: half the subnormal spacing, the spacing, or 2^emin
    const FormatInfo& fi = info(fmt);
    if (m.subnormals_flushed || m.rounding == Rounding::unknown) return std::ldexp(1.0, fi.emin);
    return std::ldexp(1.0, fi.emin - fi.precision + (m.rounding == Rounding::nearest_even ? 0 : 1));
  };
  const double grow = (1 + e.gamma_h) * (1 + e.c);
  return (std::max(1.0, std::fabs(m.underflow_scale)) * g + m.epilogue_roundings * eta(m.epilogue)) * grow +
         (m.output_roundings - 1) * eta(m.output);
}

double sqrtk_u(const BoundModel& m) { return std::sqrt(static_cast<double>(std::max(m.K, 0))) * u_eff_of(m); }

namespace stats_detail {

pfp::DD tree_reduce(pfp::DD* a, std::size_t count) {
  for (std::size_t w = count / 2; w >= 1; w /= 2)
    for (std::size_t i = 0; i < w; ++i) a[i] = pfp::dd_add(a[2 * i], a[2 * i + 1]);
  return a[0];
}

ErrorStats assemble(const Raw& raw, Format out, const BoundModel& model) {
  using namespace pfp;
  ErrorStats st;
  st.entries = raw.entries;
  st.zero_reference = raw.zero_reference;
  st.zero_ref_nonzero = raw.zero_ref_nonzero;
  st.nonfinite = raw.nonfinite;
  st.unwritten = raw.unwritten;
  st.rel_count = raw.rel_count;
  st.rel_max_abs = raw.rel_max_abs;
  st.componentwise = raw.componentwise;
  auto ci95 = [](double sd, std::int64_t n) { return div(mul(1.96, sd), sqrt(static_cast<double>(n))); };
  if (raw.rel_count > 0) {
    st.rel_mean = mean_of(raw.rel_sum, raw.rel_count);
    if (raw.rel_count > 1) {
      st.rel_std = sqrt(div(raw.rel_dev2_sum.hi, static_cast<double>(raw.rel_count - 1)));
      st.rel_mean_ci95 = ci95(st.rel_std, raw.rel_count);
    }
    double* q[3] = {&st.rel_median, &st.rel_p01, &st.rel_p99};
    for (int i = 0; i < 3; ++i) {
      std::int64_t k;
      double f;
      quantile_position(raw.rel_count, kQuantiles[i], k, f);
      *q[i] = (f == 0 || k + 1 >= raw.rel_count) ? raw.q_lo[i]
                                                  : add(raw.q_lo[i], mul(f, sub(raw.q_hi[i], raw.q_lo[i])));
    }
  }
  if (raw.cw_count > 0) {
    st.cw_mean = mean_of(raw.cw_sum, raw.cw_count);
    if (raw.cw_count > 1) {
      st.cw_std = sqrt(div(raw.cw_dev2_sum.hi, static_cast<double>(raw.cw_count - 1)));
      st.cw_mean_ci95 = ci95(st.cw_std, raw.cw_count);
    }
  }
  st.u_out = info(out).unit_roundoff;
  st.rel_mean_u = div(st.rel_mean, st.u_out);
  st.rel_std_u = div(st.rel_std, st.u_out);
  st.rel_median_u = div(st.rel_median, st.u_out);
  st.rel_p01_u = div(st.rel_p01, st.u_out);
  st.rel_p99_u = div(st.rel_p99, st.u_out);
  st.rel_max_abs_u = div(st.rel_max_abs, st.u_out);

  const double num = raw.err2_sum.hi, den = raw.ref2_sum.hi;
  if (den > 0)
    st.normwise = div(sqrt(num), sqrt(den));
  else
    st.normwise = num > 0 ? std::numeric_limits<double>::infinity() : 0.0;

  st.frac_correctly_rounded =
      raw.entries > 0 ? div(static_cast<double>(raw.correct), static_cast<double>(raw.entries)) : 0.0;
  st.gamma_bound = gamma_bound_factor(model);
  st.cw_over_gamma = ratio(st.componentwise, st.gamma_bound);
  st.sqrtk_u = sqrtk_u(model);
  st.cw_over_sqrtk_u = ratio(st.componentwise, st.sqrtk_u);
  st.subnormal_reference = raw.subnormal_reference;
  st.underflow_bound = underflow_term(model);
  st.bound_violations = raw.bound_violations;
  st.fixed_point_bound = fixed_point_term(model);
  st.bound_ratio = raw.bound_ratio;
  st.within_bound = st.bound_violations == 0 && st.nonfinite == 0;

  // The measures of other tools, over F (definitions in error_stats.hpp).
  const double f_err2 = raw.f_err2_sum.hi, f_ref2 = raw.f_ref2_sum.hi;
  const double f_den = dd_add(raw.f_x2_sum, raw.f_ref2_sum).hi;
  st.calc_diff = f_den > 0 ? div(f_err2, f_den) : 0.0;
  constexpr double inf = std::numeric_limits<double>::infinity();
  if (f_err2 == 0) st.snr_db = inf;
  else if (f_ref2 == 0) st.snr_db = -inf;
  else st.snr_db = mul(10.0, sub(std::log10(f_ref2), std::log10(f_err2)));
  st.max_abs_err = raw.max_abs_err;
  st.assert_close_mismatches = raw.close_mismatches;
  st.assert_close = raw.close_mismatches == 0 ? 1 : 0;
  return st;
}

void torch_default_tolerances(Format out, double& rtol, double& atol) {
  // torch/testing/_comparison.py, _DTYPE_PRECISIONS = {float16: (0.001, 1e-5), bfloat16: (0.016,
  // 1e-5), float32: (1.3e-6, 1e-5), float64: (1e-7, 1e-7), ...}; default_tolerances() falls back to
  // (0.0, 0.0) for a dtype not listed, which the float8 dtypes are not.
  switch (out) {
    case Format::fp16: rtol = 1e-3, atol = 1e-5; return;
    case Format::bf16: rtol = 1.6e-2, atol = 1e-5; return;
    case Format::fp32:
    case Format::tf32: rtol = 1.3e-6, atol = 1e-5; return;  // a tf32 result is held in a float32 tensor
    case Format::fp64: rtol = 1e-7, atol = 1e-7; return;
    case Format::e4m3:
    case Format::e5m2: rtol = 0, atol = 0; return;
    case Format::e2m1: case Format::e2m3: case Format::e3m2: case Format::ue8m0: case Format::ue4m3:
    case Format::int8: case Format::int4: case Format::uint4: break;  // quantized elements: never an output
  }
  throw std::logic_error("torch_default_tolerances: unknown format");
}

Judge judge_of(Format out, const BoundModel& model) {
  Judge j;
  j.min_normal = std::ldexp(1.0, info(out).emin);
  j.f = gamma_bound_factor(model);
  j.g = underflow_term(model);
  j.h = fixed_point_term(model);
  torch_default_tolerances(out, j.close_rtol, j.close_atol);
  return j;
}

}  // namespace stats_detail

namespace {

// c_out of entry i for format out: the stored c_out when it is for that format, else one rounding
// of c_odd (fp64: c).
struct COut {
  const GemmReference& ref;
  Format out;
  bool stored;
  pfp::FormatParams fp;
  COut(const GemmReference& r, Format o, std::size_t n)
      : ref(r), out(o), stored(o == r.out && r.c_out.size() == n), fp(format_params(o)) {
    if (!stored && out != Format::fp64 && r.c_odd.size() != n)
      throw std::invalid_argument(std::string("compute_error_stats: the reference has no c_out for ") +
                                  info(o).name + " and no c_odd to round from (it was made for " +
                                  info(r.out).name + ")");
  }
  double operator()(std::size_t i) const {
    if (stored) return ref.c_out[i];
    if (out == Format::fp64) return ref.c[i];
    return pfp::round_format(ref.c_odd[i], fp);
  }
};

std::size_t tree_leaves(std::size_t n) {
  std::size_t p = stats_detail::kLeafBlock;
  while (p < n) p *= 2;
  return p;
}

}  // namespace

ErrorStats compute_error_stats(const std::vector<double>& computed, const GemmReference& ref,
                               const BoundModel& model, int threads) {
  return compute_error_stats(computed, ref, ref.out, model, threads);
}

ErrorStats compute_error_stats(const std::vector<double>& computed, const GemmReference& ref, Format out,
                               const BoundModel& model, int threads) {
  using stats_detail::kLeafBlock;
  using pfp::DD;
  const std::size_t n = static_cast<std::size_t>(std::max(ref.M, 0)) * static_cast<std::size_t>(std::max(ref.N, 0));
  if (computed.size() != n || ref.c.size() != n || ref.abs_ab.size() != n)
    throw std::invalid_argument(
        "compute_error_stats: sizes disagree: M*N = " + std::to_string(n) + ", computed " +
        std::to_string(computed.size()) + ", reference c " + std::to_string(ref.c.size()) +
        ", c_out " + std::to_string(ref.c_out.size()) + ", abs_ab " + std::to_string(ref.abs_ab.size()));
  if (out == ref.out && ref.c_out.size() != n && ref.c_odd.size() != n)
    throw std::invalid_argument("compute_error_stats: sizes disagree: M*N = " + std::to_string(n) + ", c_out " +
                                std::to_string(ref.c_out.size()) + ", c_odd " + std::to_string(ref.c_odd.size()));
  const COut c_out(ref, out, n);
  const stats_detail::Judge judge = stats_detail::judge_of(out, model);
  const bool fixed_point = judge.h > 0;
  if (fixed_point && (ref.row_max_a.size() != static_cast<std::size_t>(std::max(ref.M, 0)) ||
                      ref.col_max_b.size() != static_cast<std::size_t>(std::max(ref.N, 0))))
    throw std::invalid_argument(
        "compute_error_stats: the bound of fixed-point operands needs the reference's row maxima of A and column "
        "maxima of B (row_max_a " + std::to_string(ref.row_max_a.size()) + " for M = " + std::to_string(ref.M) +
        ", col_max_b " + std::to_string(ref.col_max_b.size()) + " for N = " + std::to_string(ref.N) +
        "): make the reference with exact_gemm or mpfr_gemm");
  // alpha_i beta_j of entry idx (read only for fixed-point operands).
  auto ab_max = [&](std::size_t idx) {
    if (!fixed_point) return 0.0;
    const std::size_t N = static_cast<std::size_t>(ref.N);
    return pfp::mul(ref.row_max_a[idx / N], ref.col_max_b[idx % N]);
  };

  const std::size_t leaves = tree_leaves(n), nblocks = leaves / kLeafBlock;
  struct BlockStats {
    std::int64_t zero_reference = 0, zero_ref_nonzero = 0, nonfinite = 0, unwritten = 0, correct = 0, rel = 0, cw = 0;
    std::int64_t subnormal_reference = 0, bound_violations = 0, close_mismatches = 0;
    double rel_max_abs = 0, componentwise = 0, max_abs_err = 0, bound_ratio = 0;
  };
  std::vector<BlockStats> blocks(nblocks);
  // Block results of the pass-1 sums: r, e, d^2, c^2, and over F: d^2, c^2, x^2.
  constexpr int kSums = 7;
  std::vector<DD> part[kSums];
  for (auto& p : part) p.assign(nblocks, DD{});
  for_chunks(nblocks, threads, [&](std::size_t b) {
    BlockStats& s = blocks[b];
    std::vector<DD> leaf[kSums];
    for (auto& l : leaf) l.assign(kLeafBlock, DD{});
    const std::size_t i0 = b * kLeafBlock, i1 = std::min(n, i0 + kLeafBlock);
    for (std::size_t i = i0; i < i1; ++i) {
      const stats_detail::Entry t =
          stats_detail::entry(computed[i], ref.c[i], c_out(i), ref.abs_ab[i], ab_max(i), judge);
      s.correct += t.correct;
      s.zero_reference += t.zero_ref;
      s.zero_ref_nonzero += t.zero_ref_nonzero;
      s.close_mismatches += t.close_mismatch;
      if (t.nonfinite) {
        ++s.nonfinite;
        s.unwritten += t.nan;
        continue;
      }
      s.subnormal_reference += t.subnormal_ref;
      s.bound_violations += t.violation;
      const std::size_t l = i - i0;
      leaf[2][l] = pfp::square(t.d);
      leaf[3][l] = pfp::square(ref.c[i]);
      if (t.in_f) {
        leaf[4][l] = leaf[2][l];
        leaf[5][l] = leaf[3][l];
        leaf[6][l] = pfp::square(computed[i]);
        s.max_abs_err = std::max(s.max_abs_err, pfp::fabs(t.d));
      }
      s.componentwise = std::max(s.componentwise, t.cw_abs);
      s.bound_ratio = std::max(s.bound_ratio, t.bound_ratio);
      if (t.has_cw) ++s.cw, leaf[1][l] = DD{t.e, 0};
      if (t.has_rel) {
        ++s.rel, leaf[0][l] = DD{t.r, 0};
        s.rel_max_abs = std::max(s.rel_max_abs, pfp::fabs(t.r));
      }
    }
    for (int q = 0; q < kSums; ++q) part[q][b] = stats_detail::tree_reduce(leaf[q].data(), kLeafBlock);
  });

  stats_detail::Raw raw;
  raw.entries = static_cast<std::int64_t>(n);
  std::vector<std::int64_t> offset(nblocks + 1, 0);
  for (std::size_t b = 0; b < nblocks; ++b) {
    const BlockStats& s = blocks[b];
    raw.zero_reference += s.zero_reference;
    raw.zero_ref_nonzero += s.zero_ref_nonzero;
    raw.nonfinite += s.nonfinite;
    raw.unwritten += s.unwritten;
    raw.correct += s.correct;
    raw.rel_count += s.rel;
    raw.cw_count += s.cw;
    raw.subnormal_reference += s.subnormal_reference;
    raw.bound_violations += s.bound_violations;
    raw.close_mismatches += s.close_mismatches;
    raw.rel_max_abs = std::max(raw.rel_max_abs, s.rel_max_abs);
    raw.max_abs_err = std::max(raw.max_abs_err, s.max_abs_err);
    raw.componentwise = std::max(raw.componentwise, s.componentwise);
    raw.bound_ratio = std::max(raw.bound_ratio, s.bound_ratio);
    offset[b + 1] = offset[b] + s.rel;
  }
  raw.rel_sum = stats_detail::tree_reduce(part[0].data(), nblocks);
  raw.cw_sum = stats_detail::tree_reduce(part[1].data(), nblocks);
  raw.err2_sum = stats_detail::tree_reduce(part[2].data(), nblocks);
  raw.ref2_sum = stats_detail::tree_reduce(part[3].data(), nblocks);
  raw.f_err2_sum = stats_detail::tree_reduce(part[4].data(), nblocks);
  raw.f_ref2_sum = stats_detail::tree_reduce(part[5].data(), nblocks);
  raw.f_x2_sum = stats_detail::tree_reduce(part[6].data(), nblocks);
  const double mean_r = stats_detail::mean_of(raw.rel_sum, raw.rel_count);
  const double mean_e = stats_detail::mean_of(raw.cw_sum, raw.cw_count);

  // Pass 2: squared deviations from the rounded means, and the r values in index order.
  std::vector<double> r(static_cast<std::size_t>(raw.rel_count));
  for (auto& p : part) p.assign(nblocks, DD{});
  for_chunks(nblocks, threads, [&](std::size_t b) {
    std::vector<DD> leaf[2];
    for (auto& l : leaf) l.assign(kLeafBlock, DD{});
    std::size_t at = static_cast<std::size_t>(offset[b]);
    const std::size_t i0 = b * kLeafBlock, i1 = std::min(n, i0 + kLeafBlock);
    for (std::size_t i = i0; i < i1; ++i) {
      // (ab_max 0: the verdict is pass 1's; here only r and e are read)
      const stats_detail::Entry t = stats_detail::entry(computed[i], ref.c[i], 0.0, ref.abs_ab[i], 0.0, judge);
      if (t.nonfinite) continue;
      if (t.has_rel) {
        r[at++] = t.r;
        leaf[0][i - i0] = pfp::square(pfp::sub(t.r, mean_r));
      }
      if (t.has_cw) leaf[1][i - i0] = pfp::square(pfp::sub(t.e, mean_e));
    }
    for (int q = 0; q < 2; ++q) part[q][b] = stats_detail::tree_reduce(leaf[q].data(), kLeafBlock);
  });
  raw.rel_dev2_sum = stats_detail::tree_reduce(part[0].data(), nblocks);
  raw.cw_dev2_sum = stats_detail::tree_reduce(part[1].data(), nblocks);

  if (raw.rel_count > 0)
    for (int q = 0; q < 3; ++q) {
      std::int64_t k;
      double f;
      stats_detail::quantile_position(raw.rel_count, stats_detail::kQuantiles[q], k, f);
      order_statistics(r, k, raw.q_lo[q], raw.q_hi[q]);
    }
  return stats_detail::assemble(raw, out, model);
}

}  // namespace gemmlab
