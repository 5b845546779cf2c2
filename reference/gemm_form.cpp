// The problem beyond C = A·B (gemm_form.hpp): its text, its shape, its operands, its exact reference and
// its bound model.
#include "reference/gemm_form.hpp"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <stdexcept>

#include "reference/mpfr_gemm.hpp"
#include "reference/numerics.hpp"

namespace gemmlab {

const char* to_string(BiasKind b) {
  switch (b) {
    case BiasKind::none: return "none";
    case BiasKind::row: return "row";
    case BiasKind::column: return "column";
  }
  return "?";
}

const char* to_string(Placement p) {
  switch (p) {
    case Placement::before_output_rounding: return "before_output_rounding";
    case Placement::after_output_rounding: return "after_output_rounding";
    case Placement::unknown: return "unknown";
  }
  return "?";
}

std::optional<Placement> parse_placement(std::string_view name) {
  for (Placement p : {Placement::before_output_rounding, Placement::after_output_rounding, Placement::unknown})
    if (name == to_string(p)) return p;
  return std::nullopt;
}

namespace {

constexpr const char* kParts =
    "a form is `plain` or key=value parts joined by ',': batch=N (strided batches, N >= 1), groups=a+b+... "
    "(rows of each group; a last `*` takes the rest of M), alpha=X and beta=X (fp32 values), c0=DISTRIBUTION "
    "(C = alpha A B + beta C0; beta defaults to 1 with a C0), bias=row:DISTRIBUTION or bias=column:DISTRIBUTION, "
    "scale=X (output scale, fp32); e.g. alpha=0.5,beta=2,c0=normal_0_1 or bias=column:uniform_-1_1";

[[noreturn]] void bad(std::string_view text, const std::string& why) {
  throw std::invalid_argument("form '" + std::string(text) + "': " + why + "; " + kParts);
}

// The shortest decimal that reads back as the float v.
std::string float_text(double v) {
  char buf[64];
  const auto [p, ec] = std::to_chars(buf, buf + sizeof buf, static_cast<float>(v));
  return ec == std::errc() ? std::string(buf, p) : std::to_string(v);
}

// A decimal rounded once to fp32 (std::from_chars on float: correctly rounded, no double rounding).
double parse_fp32(std::string_view text, std::string_view key, std::string_view value) {
  float f = 0;
  const auto [p, ec] = std::from_chars(value.data(), value.data() + value.size(), f);
  if (value.empty() || ec != std::errc() || p != value.data() + value.size() || !std::isfinite(f))
    bad(text, std::string(key) + "=" + std::string(value) + " is not a finite decimal number");
  return f;
}

int parse_count(std::string_view text, std::string_view what, std::string_view value, int lo) {
  int v = 0;
  const auto [p, ec] = std::from_chars(value.data(), value.data() + value.size(), v);
  if (value.empty() || ec != std::errc() || p != value.data() + value.size() || v < lo)
    bad(text, std::string(what) + " '" + std::string(value) + "' is not a whole number >= " + std::to_string(lo));
  return v;
}

// A distribution name as the CSV writes it (canonical); a bad one is refused naming the key.
std::string distribution_text(std::string_view text, std::string_view key, std::string_view value) {
  Distribution d;
  try {
    d = parse_distribution(value);
  } catch (const std::invalid_argument& e) {
    bad(text, std::string(key) + ": " + e.what());
  }
  if (d.recipe || d.quant) bad(text, std::string(key) + "'s distribution " + d.name() + " carries a recipe: give its source");
  return d.name();
}

}  // namespace

bool GemmForm::plain() const {
  return batch == 1 && group_rows.empty() && alpha == 1.0 && c0.empty() && bias == BiasKind::none && scale == 1.0;
}

std::string GemmForm::name() const {
  if (plain()) return "plain";
  std::string out;
  auto part = [&](const std::string& p) { out += (out.empty() ? "" : ",") + p; };
  if (batch != 1) part("batch=" + std::to_string(batch));
  if (!group_rows.empty()) {
    std::string g;
    for (int r : group_rows) {
      if (!g.empty()) g += '+';
      g += r < 0 ? std::string("*") : std::to_string(r);
    }
    part("groups=" + g);
  }
  if (alpha != 1.0) part("alpha=" + float_text(alpha));
  if (!c0.empty()) part("beta=" + float_text(beta)), part("c0=" + c0);
  if (bias != BiasKind::none) part(std::string("bias=") + to_string(bias) + ":" + bias_distribution);
  if (scale != 1.0) part("scale=" + float_text(scale));
  return out;
}

GemmForm parse_form(std::string_view text) {
  GemmForm f;
  if (text.empty() || text == "plain") return f;
  bool seen[7] = {};
  auto once = [&](int i, std::string_view key) {
    if (seen[i]) bad(text, "'" + std::string(key) + "' is given twice");
    seen[i] = true;
  };
  std::optional<double> beta;
  std::size_t at = 0;
  while (at <= text.size()) {
    std::size_t end = text.find(',', at);
    if (end == std::string_view::npos) end = text.size();
    const std::string_view item = text.substr(at, end - at);
    at = end + 1;
    const std::size_t eq = item.find('=');
    if (item.empty() || eq == std::string_view::npos) bad(text, "'" + std::string(item) + "' is not key=value");
    const std::string_view key = item.substr(0, eq), value = item.substr(eq + 1);
    if (key == "batch") {
      once(0, key);
      f.batch = parse_count(text, "batch", value, 1);
    } else if (key == "groups") {
      once(1, key);
      std::size_t g = 0;
      while (g <= value.size()) {
        std::size_t e = value.find('+', g);
        if (e == std::string_view::npos) e = value.size();
        const std::string_view v = value.substr(g, e - g);
        if (v == "*") {
          if (e != value.size()) bad(text, "only the last group may be `*` (the rest of M)");
          f.group_rows.push_back(-1);
        } else {
          f.group_rows.push_back(parse_count(text, "a group's rows", v, 1));
        }
        g = e + 1;
      }
    } else if (key == "alpha") {
      once(2, key);
      f.alpha = parse_fp32(text, key, value);
    } else if (key == "beta") {
      once(3, key);
      beta = parse_fp32(text, key, value);
    } else if (key == "c0") {
      once(4, key);
      f.c0 = distribution_text(text, key, value);
    } else if (key == "bias") {
      once(5, key);
      const std::size_t colon = value.find(':');
      const std::string_view kind = value.substr(0, colon);
      if (colon == std::string_view::npos || (kind != "row" && kind != "column"))
        bad(text, "bias=" + std::string(value) + " is not row:DISTRIBUTION or column:DISTRIBUTION");
      f.bias = kind == "row" ? BiasKind::row : BiasKind::column;
      f.bias_distribution = distribution_text(text, key, value.substr(colon + 1));
    } else if (key == "scale") {
      once(6, key);
      f.scale = parse_fp32(text, key, value);
      if (f.scale == 0) bad(text, "scale=0 makes every output 0");
    } else {
      std::string why = "'";
      why.append(key).append("' is not a part of a form");
      bad(text, why);
    }
    if (end == text.size()) break;
  }
  if (beta && f.c0.empty()) bad(text, "beta needs a C0 (c0=DISTRIBUTION): C = alpha A B + beta C0");
  if (!f.c0.empty()) {
    f.beta = beta.value_or(1.0);
    if (f.beta == 0) bad(text, "beta=0 with a C0 ignores it: leave out c0 and beta");
  }
  if (f.batch != 1 && f.grouped()) bad(text, "batch and groups together: a problem is batched or grouped, not both");
  if (f.grouped() && f.group_rows.size() < 2) bad(text, "one group is a plain GEMM: give at least two groups");
  return f;
}

std::string form_key(std::string_view text) {
  const GemmForm f = parse_form(text);
  return f.plain() ? "" : f.name();
}

std::string form_unsupported(const FormSupport& s, const GemmForm& f) {
  std::vector<std::string> lacks;
  if (f.alpha != 1.0 && !s.alpha) lacks.push_back("alpha");
  if (!f.c0.empty() && !s.c0) lacks.push_back("beta C0");
  if (f.bias == BiasKind::row && !s.bias_row) lacks.push_back("a row bias");
  if (f.bias == BiasKind::column && !s.bias_column) lacks.push_back("a column bias");
  if (f.batch != 1 && !s.batch) lacks.push_back("batches");
  if (f.grouped() && !s.groups) lacks.push_back("groups");
  if (f.scale != 1.0 && !s.scale) lacks.push_back("an output scale");
  if (lacks.empty()) return "";
  std::string out;
  for (std::size_t i = 0; i < lacks.size(); ++i) out += (i ? (i + 1 == lacks.size() ? " or " : ", ") : "") + lacks[i];
  return "takes no " + out;
}

FormShape form_shape(const GemmForm& f, int M, int N, int K) {
  FormShape s;
  s.M = M, s.N = N, s.K = K;
  if (f.grouped()) {
    long long used = 0;
    for (int r : f.group_rows)
      if (r > 0) used += r;
    for (int r : f.group_rows) {
      const long long rows = r > 0 ? r : M - used;
      if (rows < 1)
        throw std::invalid_argument("form " + f.name() + ": its groups take " + std::to_string(used) + " rows, M is " +
                                    std::to_string(M) + (r < 0 ? " (none left for `*`)" : "") +
                                    ": choose M = the groups' total, or groups that fit");
      s.part_row0.push_back(s.rows);
      s.part_rows.push_back(static_cast<int>(rows));
      s.rows += static_cast<int>(rows);
    }
    if (s.rows != M)
      throw std::invalid_argument("form " + f.name() + ": its groups take " + std::to_string(s.rows) +
                                  " rows, M is " + std::to_string(M) + ": choose M = " + std::to_string(s.rows) +
                                  " or end the groups with `*` (the rest of M)");
  } else {
    if (static_cast<long long>(f.batch) * M > (1LL << 30))
      throw std::invalid_argument("form " + f.name() + ": " + std::to_string(f.batch) + " batches of " +
                                  std::to_string(M) + " rows are too many rows");
    for (int t = 0; t < f.batch; ++t) s.part_row0.push_back(t * M), s.part_rows.push_back(M);
    s.rows = f.batch * M;
  }
  s.bias_length = f.bias == BiasKind::row ? M : f.bias == BiasKind::column ? N : 0;
  return s;
}

int part_of_row(const FormShape& s, int row) {
  const auto it = std::upper_bound(s.part_row0.begin(), s.part_row0.end(), row);
  return static_cast<int>(it - s.part_row0.begin()) - 1;
}

std::string epilogue_distribution_problem(std::string_view what, const std::string& name, Format fmt) {
  Distribution d;
  try {
    d = parse_distribution(name);
  } catch (const std::invalid_argument& e) {
    return std::string(what) + ": " + e.what();
  }
  if (d.recipe) return std::string(what) + "'s distribution " + d.name() + " carries a scaled fp8 recipe";
  if (d.quant) return std::string(what) + "'s distribution " + d.name() + " carries a quantized recipe";
  if (d.kind == DistKind::cancel)
    return std::string(what) + "'s distribution " + d.name() +
           " couples A and B (its cancellation needs both): choose another distribution for it";
  if (std::string why = unusable_reason(d, fmt); !why.empty())
    return std::string(what) + " in " + info(fmt).name + ": " + why;
  return "";
}

std::string form_problem(const GemmForm& f, Format in, const Epilogue& e) {
  if (f.plain()) return "";
  if (info(in).precision > 24)
    return std::string("form ") + f.name() + " with " + info(in).name +
           " inputs: the exact reference of a form takes inputs of at most 24 significand bits (alpha a and s b "
           "must be exact in binary64); fp64 GEMMs run plain";
  if (!f.c0.empty())
    if (std::string why = epilogue_distribution_problem("C0", f.c0, e.c0); !why.empty()) return why;
  if (f.bias != BiasKind::none)
    if (std::string why = epilogue_distribution_problem("the bias", f.bias_distribution, e.bias); !why.empty())
      return why;
  return "";
}

FormOperands make_form_operands(const GemmForm& f, const FormShape& s, const Distribution& d, Format in,
                                const Epilogue& e, std::uint64_t seed, int threads) {
  if (std::string why = form_problem(f, in, e); !why.empty()) throw std::invalid_argument(why);
  FormOperands o;
  o.form = f, o.shape = s, o.input = in, o.epilogue = e;
  o.A = generate(d, Operand::A, s.rows, s.K, in, seed, threads);
  o.B = generate(d, Operand::B, s.K, s.parts() * s.N, in, seed, threads);
  if (!f.c0.empty()) o.C0 = generate(parse_distribution(f.c0), Operand::C0, s.rows, s.N, e.c0, seed, threads);
  if (f.bias != BiasKind::none)
    o.bias = generate(parse_distribution(f.bias_distribution), Operand::bias, 1, s.bias_length, e.bias, seed, threads);
  return o;
}

int augmented_depth(const GemmForm& f, const FormShape& s) {
  return s.K + (f.c0.empty() ? 0 : s.N) + (f.bias == BiasKind::none ? 0 : 1);
}

namespace {

// Entry (i, k) of A'_t and (k, j) of B'_t (gemm_form.hpp): every value exact in binary64 (checked: a product
// that rounds would make the reference wrong, so it stops with a message instead).
double exact_product(double x, double y) {
  const double p = x * y;
  if (std::isfinite(p) && std::fma(x, y, -p) != 0)
    throw std::logic_error("gemm_form: " + std::to_string(x) + " * " + std::to_string(y) +
                           " is not exact in binary64 (an input beyond 24 significand bits reached a form)");
  return p;
}

double a_aug(const FormOperands& in, int part, int i, int k) {
  const GemmForm& f = in.form;
  const FormShape& s = in.shape;
  const int row = s.part_row0[part] + i;
  if (k < s.K) return exact_product(f.alpha, in.A(row, k));
  k -= s.K;
  if (!f.c0.empty()) {
    if (k < s.N) return in.C0(row, k);
    k -= s.N;
  }
  // The bias column: a row bias (its entry of this row: per batch the batch's row, per group the stacked row),
  // or ones.
  return f.bias == BiasKind::row ? in.bias(0, f.grouped() ? row : i) : 1.0;
}

double b_aug(const FormOperands& in, int part, int k, int j) {
  const GemmForm& f = in.form;
  const FormShape& s = in.shape;
  if (k < s.K) return exact_product(f.scale, in.B(k, part * s.N + j));
  k -= s.K;
  if (!f.c0.empty()) {
    if (k < s.N) return k == j ? exact_product(f.beta, f.scale) : 0.0;
    k -= s.N;
  }
  return f.bias == BiasKind::column ? exact_product(f.scale, in.bias(0, j)) : f.scale;
}

}  // namespace

void augmented_operands(const FormOperands& in, int part, Matrix& A_aug, Matrix& B_aug) {
  const FormShape& s = in.shape;
  const int Kp = augmented_depth(in.form, s), m = s.part_rows.at(part);
  A_aug = Matrix(m, Kp);
  B_aug = Matrix(Kp, s.N);
  for (int i = 0; i < m; ++i)
    for (int k = 0; k < Kp; ++k) A_aug(i, k) = a_aug(in, part, i, k);
  for (int k = 0; k < Kp; ++k)
    for (int j = 0; j < s.N; ++j) B_aug(k, j) = b_aug(in, part, k, j);
}

void augmented_line(const FormOperands& in, int part, int i, int j, Matrix& a_row, Matrix& b_col) {
  const int Kp = augmented_depth(in.form, in.shape);
  a_row = Matrix(1, Kp);
  b_col = Matrix(Kp, 1);
  for (int k = 0; k < Kp; ++k) a_row(0, k) = a_aug(in, part, i, k), b_col(k, 0) = b_aug(in, part, k, j);
}

GemmReference exact_form(const FormOperands& in, Format out, int threads, bool mpfr) {
  const FormShape& s = in.shape;
  GemmReference r;
  r.M = s.rows, r.N = s.N, r.K = s.K, r.out = out;
  const std::size_t n = static_cast<std::size_t>(s.rows) * s.N;
  r.c.resize(n), r.c_odd.resize(n), r.c_out.resize(n), r.abs_ab.resize(n);
  for (int t = 0; t < s.parts(); ++t) {
    Matrix Ap, Bp;
    augmented_operands(in, t, Ap, Bp);
    const GemmReference p = mpfr ? mpfr_gemm(Ap, Bp, out, threads) : exact_gemm(Ap, Bp, out, threads);
    const std::size_t at = static_cast<std::size_t>(s.part_row0[t]) * s.N;
    std::copy(p.c.begin(), p.c.end(), r.c.begin() + at);
    std::copy(p.c_odd.begin(), p.c_odd.end(), r.c_odd.begin() + at);
    std::copy(p.c_out.begin(), p.c_out.end(), r.c_out.begin() + at);
    std::copy(p.abs_ab.begin(), p.abs_ab.end(), r.abs_ab.begin() + at);
    r.seconds += p.seconds;
    if (r.engine.empty() || r.engine == p.engine) r.engine = p.engine;
    else r.engine = "mixed";
  }
  if (r.engine.empty()) r.engine = mpfr ? "mpfr" : "kulisch";
  return r;
}

BoundModel form_bound_model(const Numerics& n, const Epilogue& e, const GemmForm& f, int K) {
  BoundModel m = bound_model(n, K);
  const bool c0 = !f.c0.empty(), bias = f.bias != BiasKind::none;
  const int scaled_term = (f.alpha != 1.0 || (c0 && f.beta != 1.0)) ? 1 : 0;
  m.epilogue_roundings = scaled_term + (c0 ? 1 : 0) + (bias ? 1 : 0) + (f.scale != 1.0 ? 1 : 0);
  m.epilogue = e.arithmetic;
  const bool after = (c0 && e.c0_placement != Placement::before_output_rounding) ||
                     (bias && e.bias_placement != Placement::before_output_rounding);
  m.output_roundings = after ? 2 : 1;
  m.underflow_scale = std::fabs(f.alpha * f.scale);
  return m;
}

}  // namespace gemmlab
