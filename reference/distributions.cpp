// Controlled input distributions (see distributions.hpp for the names and their parameters).
//
// Every entry is a pure function of (seed, operand, distribution, i, j) through the Philox
// counter-based generator of rng.hpp: one 128-bit block per entry, counter (i, j, stream), key
// seed. Values are made in binary64 and rounded once to the input format (round_to's rounding), so
// the reference sees exactly what the kernel sees. The per-entry arithmetic is
// distribution_entry.hpp's, shared with the GPU generator. Threads split rows; the split never
// changes a value.
#include "reference/distributions.hpp"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <stdexcept>
#include <thread>

#include "reference/distribution_entry.hpp"
#include "reference/rng.hpp"

namespace gemmlab {
namespace {

constexpr const char* kValidForms =
    "valid distributions: uniform_0_1, uniform_-1_1, normal_0_1, logunif_L_H (integers L < H, "
    "e.g. logunif_-8_8), cancel_E (integer E <= -1, e.g. cancel_-10), exactint_R (integer R >= 1, "
    "e.g. exactint_8), expspread_PHI (decimal 0 < PHI <= 16, e.g. expspread_0.5), or the aliases uniform01, uniform_pm1, normal, logunif (= logunif_-8_8), "
    "cancel (= cancel_-10), exactint (= exactint_8)";

constexpr int kDefaultLogL = -8, kDefaultLogH = 8;
constexpr int kDefaultCancelE = -10;
constexpr int kDefaultExactR = 8;

Distribution make(DistKind k, double p1 = 0, double p2 = 0) {
  Distribution d;
  d.kind = k;
  d.p1 = p1;
  d.p2 = p2;
  return d;
}

[[noreturn]] void reject(std::string_view name, const std::string& why) {
  throw std::invalid_argument("bad distribution '" + std::string(name) + "': " + why + "; " +
                              kValidForms);
}

// A whole-token decimal integer (optional leading '-'), or nullopt.
std::optional<long long> parse_int(std::string_view s) {
  long long v = 0;
  if (s.empty() || s.front() == '+') return std::nullopt;
  auto [p, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
  if (ec != std::errc() || p != s.data() + s.size()) return std::nullopt;
  return v;
}

std::string int_str(double v) { return std::to_string(static_cast<long long>(v)); }

// The shortest decimal that reads back as v (std::to_chars): 0.5, 4, 1.25.
std::string decimal_str(double v) {
  char buf[64];
  const auto [p, ec] = std::to_chars(buf, buf + sizeof buf, v);
  return ec == std::errc() ? std::string(buf, p) : std::to_string(v);
}

// Largest |z| rng::normal returns: sqrt(-2 ln 2^-53) < 8.58.
constexpr double kNormalMax = 8.58;

}  // namespace

std::string Distribution::name() const {
  if (recipe) return source().name() + "@" + recipe->name();
  if (quant) return source().name() + "@" + quant->name();
  switch (kind) {
    case DistKind::uniform01: return "uniform_0_1";
    case DistKind::uniform_pm1: return "uniform_-1_1";
    case DistKind::normal: return "normal_0_1";
    case DistKind::logunif: return "logunif_" + int_str(p1) + "_" + int_str(p2);
    case DistKind::cancel: return "cancel_" + int_str(p1);
    case DistKind::exactint: return "exactint_" + int_str(p1);
    case DistKind::expspread: return "expspread_" + decimal_str(p1);
  }
  return "unknown";
}

Distribution Distribution::source() const {
  Distribution d = *this;
  d.recipe.reset();
  d.quant.reset();
  return d;
}

Distribution parse_distribution(std::string_view name) {
  if (const auto at = name.find('@'); at != std::string_view::npos) {
    Distribution d = parse_distribution(name.substr(0, at));
    const std::string_view recipe = name.substr(at + 1);
    if (is_quant_recipe_name(recipe)) {
      d.quant = parse_quant_recipe(recipe);
      return d;
    }
    try {
      d.recipe = parse_recipe(recipe);
    } catch (const std::invalid_argument& e) {
      throw std::invalid_argument(std::string(e.what()) +
                                  "; or a quantized recipe (reference/quantized_recipe.hpp): mxfp8_e4m3, mxfp4, nvfp4, "
                                  "int8_rowwise, bf16_x_uint4_g128, ...");
    }
    return d;
  }
  if (name == "uniform_0_1" || name == "uniform01") return make(DistKind::uniform01);
  if (name == "uniform_-1_1" || name == "uniform_pm1") return make(DistKind::uniform_pm1);
  if (name == "normal_0_1" || name == "normal") return make(DistKind::normal);
  if (name == "logunif") return make(DistKind::logunif, kDefaultLogL, kDefaultLogH);
  if (name == "cancel") return make(DistKind::cancel, kDefaultCancelE);
  if (name == "exactint") return make(DistKind::exactint, kDefaultExactR);

  auto starts = [&](std::string_view p) { return name.substr(0, p.size()) == p; };
  if (starts("logunif_")) {
    std::string_view rest = name.substr(8);
    const auto us = rest.find('_');
    if (us == std::string_view::npos) reject(name, "logunif needs two integers, logunif_L_H");
    const auto L = parse_int(rest.substr(0, us)), H = parse_int(rest.substr(us + 1));
    if (!L || !H) reject(name, "L and H of logunif_L_H must be integers");
    if (*L >= *H) reject(name, "logunif_L_H needs L < H");
    if (*L < -1000 || *H > 1000) reject(name, "logunif_L_H needs -1000 <= L < H <= 1000");
    return make(DistKind::logunif, static_cast<double>(*L), static_cast<double>(*H));
  }
  if (starts("cancel_")) {
    const auto E = parse_int(name.substr(7));
    if (!E) reject(name, "E of cancel_E must be an integer");
    if (*E > -1 || *E < -52) reject(name, "cancel_E needs -52 <= E <= -1");
    return make(DistKind::cancel, static_cast<double>(*E));
  }
  if (starts("exactint_")) {
    const auto R = parse_int(name.substr(9));
    if (!R) reject(name, "R of exactint_R must be an integer");
    if (*R < 1 || *R > (1ll << 30)) reject(name, "exactint_R needs 1 <= R <= 2^30");
    return make(DistKind::exactint, static_cast<double>(*R));
  }
  if (starts("expspread_")) {
    const std::string_view v = name.substr(10);
    double phi = 0;
    const auto [p, ec] = std::from_chars(v.data(), v.data() + v.size(), phi);
    if (v.empty() || v.front() == '+' || ec != std::errc() || p != v.data() + v.size())
      reject(name, "PHI of expspread_PHI must be a decimal number such as 0.5 or 4");
    if (!(phi > 0 && phi <= 16)) reject(name, "expspread_PHI needs 0 < PHI <= 16");
    return make(DistKind::expspread, phi);
  }
  throw std::invalid_argument("unknown distribution '" + std::string(name) + "'; " + kValidForms);
}

const std::vector<Distribution>& default_distributions() {
  static const std::vector<Distribution> all = {
      make(DistKind::uniform01),
      make(DistKind::uniform_pm1),
      make(DistKind::normal),
      make(DistKind::logunif, kDefaultLogL, kDefaultLogH),
      make(DistKind::cancel, kDefaultCancelE),
      make(DistKind::exactint, kDefaultExactR),
  };
  return all;
}

std::string unusable_reason(const Distribution& d, Format in) {
  if (d.quant)
    return d.name() + " quantizes its source under " + d.quant->name() + " (elements with their scales); a kernel "
           "reading plain " + info(in).name + " operands cannot take it: judge a callable of that recipe "
           "(gemmlab.judge(fn, input_format=\"" + d.quant->name() + "\"))";
  if (d.recipe) {
    if (in != d.recipe->fp8)
      return d.name() + " quantizes its source to " + info(d.recipe->fp8).name + " with scales; a kernel reading " +
             info(in).name + " cannot take it (use a scaled " + info(d.recipe->fp8).name + " kernel)";
    return unusable_reason(d.source(), Format::fp32);
  }
  const FormatInfo& fi = info(in);
  const std::string fname = fi.name;
  switch (d.kind) {
    case DistKind::logunif:
      if (d.p2 > fi.emax)
        return d.name() + ": magnitudes reach 2^" + int_str(d.p2) + " but " + fname +
               "'s largest binade is 2^" + std::to_string(fi.emax) +
               " (values could round past its largest finite number); use H <= " +
               std::to_string(fi.emax);
      return {};
    case DistKind::cancel:
      if (d.p1 < 1 - fi.precision)
        return d.name() + ": a relative perturbation 2^" + int_str(d.p1) + " is lost when rounding to " +
               fname + " (precision " + std::to_string(fi.precision) + " bits), so C would be 0; use E >= " +
               std::to_string(1 - fi.precision);
      return {};
    case DistKind::exactint:
      if (d.p1 > std::ldexp(1.0, fi.precision))
        return d.name() + ": not every integer in [-R, R] is representable in " + fname +
               " (exact up to 2^" + std::to_string(fi.precision) + " = " +
               int_str(std::ldexp(1.0, fi.precision)) + "); use R <= " +
               int_str(std::ldexp(1.0, fi.precision));
      return {};
    case DistKind::expspread: {
      const double top = 0.5 * rng::exp(d.p1 * kNormalMax);
      if (top > fi.max_finite)
        return d.name() + ": magnitudes reach 0.5 e^(8.58 PHI) = " + std::to_string(top) + ", beyond " + fname +
               "'s largest finite number " + std::to_string(fi.max_finite) + "; use PHI <= " +
               std::to_string(std::log(2 * fi.max_finite) / kNormalMax);
      return {};
    }
    default:
      return {};
  }
}

std::string exact_in(const Distribution& d, Format in, Format out, int K) {
  if (d.kind != DistKind::exactint)
    return d.name() + " is not an exactly representable distribution (only exactint_R is)";
  if (std::string why = unusable_reason(d, in); !why.empty()) return why;
  const FormatInfo& fo = info(out);
  const auto R = static_cast<unsigned __int128>(d.p1);
  const unsigned __int128 worst = static_cast<unsigned __int128>(std::max(K, 0)) * R * R;
  const unsigned __int128 limit = static_cast<unsigned __int128>(1) << fo.precision;
  if (worst > limit)
    return d.name() + " with K = " + std::to_string(K) + ": partial sums reach K R^2 = " +
           std::to_string(static_cast<long double>(worst)) + " > 2^" + std::to_string(fo.precision) +
           ", beyond the integers " + fo.name + " holds exactly; use K R^2 <= 2^" +
           std::to_string(fo.precision);
  return {};
}

namespace dist_detail {

EntryPlan entry_plan(const Distribution& d, Operand which, int rows, int cols, Format fmt, std::uint64_t seed) {
  if (rows < 0 || cols < 0)
    throw std::invalid_argument("generate: negative shape (" + std::to_string(rows) + ", " +
                                std::to_string(cols) + ")");
  if (d.recipe)
    throw std::invalid_argument(d.name() + " is a scaled fp8 distribution: its operands come from make_scaled_problem "
                                "(reference/scaled_fp8.hpp), not from generate()");
  if (d.quant)
    throw std::invalid_argument(d.name() + " is a quantized distribution: its operands come from make_quantized_problem "
                                "(reference/quantized.hpp), not from generate()");
  if (std::string why = unusable_reason(d, fmt); !why.empty()) throw std::invalid_argument(why);
  EntryPlan p;
  p.kind = d.kind;
  p.operand_a = which == Operand::A;
  p.seed = seed;
  p.stream = stream_of(d.kind, which);
  p.L = static_cast<int>(d.p1);
  p.span = static_cast<int>(d.p2 - d.p1);
  p.pert = std::ldexp(1.0, static_cast<int>(d.p1));
  p.h = (which == Operand::A ? cols : rows) / 2;
  p.R = static_cast<std::uint64_t>(d.p1);
  p.phi = d.p1;
  p.fmt = format_params(fmt);
  return p;
}

}  // namespace dist_detail

Matrix generate(const Distribution& d, Operand which, int rows, int cols, Format fmt,
                std::uint64_t seed, int threads) {
  const dist_detail::EntryPlan plan = dist_detail::entry_plan(d, which, rows, cols, fmt, seed);
  Matrix m(rows, cols);
  auto fill_rows = [&](int r0, int r1) {
    for (int i = r0; i < r1; ++i)
      for (int j = 0; j < cols; ++j) m(i, j) = dist_detail::entry(plan, i, j);
  };

  int nt = threads > 0 ? threads : static_cast<int>(std::thread::hardware_concurrency());
  if (nt < 1) nt = 1;
  if (static_cast<long long>(rows) * cols < (1 << 16)) nt = 1;
  nt = std::min(nt, std::max(rows, 1));
  if (nt == 1) {
    fill_rows(0, rows);
    return m;
  }
  std::vector<std::thread> pool;
  pool.reserve(nt);
  for (int t = 0; t < nt; ++t) {
    const int r0 = static_cast<int>(static_cast<long long>(rows) * t / nt);
    const int r1 = static_cast<int>(static_cast<long long>(rows) * (t + 1) / nt);
    pool.emplace_back(fill_rows, r0, r1);
  }
  for (auto& th : pool) th.join();
  return m;
}

}  // namespace gemmlab
