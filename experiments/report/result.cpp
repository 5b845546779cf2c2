// The column table: every CSV column is named once here, with how it is written and read back.
#include "experiments/report/result.hpp"

#include "reference/tree_form.hpp"

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <functional>
#include <stdexcept>
#include <unordered_map>

#include "experiments/report/files.hpp"

namespace gemmlab {

const char* to_string(Status s) {
  switch (s) {
    case Status::passed: return "passed";
    case Status::failed_bound: return "failed_bound";
    case Status::no_bound: return "no_bound";
    case Status::not_supported: return "not_supported";
    case Status::not_applicable: return "not_applicable";
    case Status::error: return "error";
    case Status::timeout: return "timeout";
    case Status::faulted: return "faulted";
    case Status::nondeterministic: return "nondeterministic";
    case Status::planned: return "planned";
  }
  return "?";
}

const std::vector<Status>& all_statuses() {
  static const std::vector<Status> v = {Status::passed,         Status::failed_bound,   Status::no_bound,
                                        Status::not_supported,  Status::not_applicable, Status::error,
                                        Status::timeout,        Status::faulted,        Status::nondeterministic,
                                        Status::planned};
  return v;
}

bool retried_by_retry_failed(Status s) { return s == Status::error || s == Status::timeout || s == Status::faulted; }

std::optional<Status> parse_status(std::string_view s) {
  for (Status x : all_statuses())
    if (s == to_string(x)) return x;
  return std::nullopt;
}

std::string ResultRow::key() const {
  return kernel + "|" + distribution + "|" + std::to_string(M) + "x" + std::to_string(N) + "x" + std::to_string(K) +
         "|" + std::to_string(seed) + (form.empty() || form == "plain" ? "" : "|" + form);
}

double interquartile_range(std::vector<double> times_ms) {
  const auto n = static_cast<std::int64_t>(times_ms.size());
  if (n == 0) return std::nan("");
  std::sort(times_ms.begin(), times_ms.end());
  auto quantile = [&](double p) {
    std::int64_t k;
    double f;
    stats_detail::quantile_position(n, p, k, f);
    const double lo = times_ms[static_cast<std::size_t>(k)];
    return f == 0 || k + 1 >= n ? lo : lo + f * (times_ms[static_cast<std::size_t>(k + 1)] - lo);
  };
  return quantile(0.75) - quantile(0.25);
}

ResultRow describe(const Kernel& k, const std::string& distribution, int M, int N, int K, std::uint64_t seed) {
  ResultRow r;
  r.kernel = k.name;
  r.family = k.family;
  r.numerics = k.numerics;
  r.layout_a = k.layout_a;
  r.layout_b = k.layout_b;
  r.distribution = distribution;
  if (const auto at = distribution.find('@'); at != std::string::npos) r.recipe = distribution.substr(at + 1);
  r.M = M, r.N = N, r.K = K;
  r.seed = seed;
  return r;
}

namespace {

struct Column {
  std::string name;
  std::function<std::string(const ResultRow&)> get;
  std::function<void(ResultRow&, const std::string&)> set;
};

[[noreturn]] void bad_value(const std::string& column, const std::string& v, const char* expected) {
  throw std::invalid_argument("column '" + column + "': '" + v + "' is not " + expected);
}

long long to_int(const std::string& c, const std::string& v) {
  char* end = nullptr;
  const long long x = std::strtoll(v.c_str(), &end, 10);
  if (v.empty() || *end != '\0') bad_value(c, v, "an integer");
  return x;
}
std::uint64_t to_u64(const std::string& c, const std::string& v) {
  char* end = nullptr;
  const unsigned long long x = std::strtoull(v.c_str(), &end, 10);
  if (v.empty() || *end != '\0' || v[0] == '-') bad_value(c, v, "a non-negative integer");
  return x;
}
double to_double(const std::string& c, const std::string& v) {
  if (v == "nan") return std::nan("");
  if (v == "inf") return HUGE_VAL;
  if (v == "-inf") return -HUGE_VAL;
  char* end = nullptr;
  const double x = std::strtod(v.c_str(), &end);
  if (v.empty() || *end != '\0') bad_value(c, v, "a number");
  return x;
}
Format to_format(const std::string& c, const std::string& v) {
  auto f = parse_format(v);
  if (!f) bad_value(c, v, "a format (fp64, fp32, tf32, fp16, bf16, e4m3, e5m2)");
  return *f;
}
Layout to_layout(const std::string& c, const std::string& v) {
  if (v == "row") return Layout::row_major;
  if (v == "col") return Layout::col_major;
  bad_value(c, v, "a layout (row, col)");
}

ErrorStats& stats_of(ResultRow& r) {
  if (!r.stats) r.stats.emplace();
  return *r.stats;
}
Timing& timing_of(ResultRow& r) {
  if (!r.timing) r.timing.emplace();
  return *r.timing;
}

std::string fmt(std::int64_t x) { return std::to_string(x); }
std::string fmt(double x) { return fmt_double(x); }
void parse_into(const std::string& c, const std::string& v, std::int64_t& out) { out = to_int(c, v); }
void parse_into(const std::string& c, const std::string& v, double& out) { out = to_double(c, v); }

const std::vector<Column>& columns() {
  static const std::vector<Column> cols = [] {
    std::vector<Column> v;
    auto text = [&](const char* name, std::string ResultRow::*field) {
      v.push_back({name, [field](const ResultRow& r) { return r.*field; },
                   [field](ResultRow& r, const std::string& s) { r.*field = s; }});
    };
    auto format = [&](const char* name, Format Numerics::*field) {
      v.push_back({name, [field](const ResultRow& r) { return std::string(info(r.numerics.*field).name); },
                   [field, name](ResultRow& r, const std::string& s) { r.numerics.*field = to_format(name, s); }});
    };
    auto layout = [&](const char* name, Layout ResultRow::*field) {
      v.push_back({name, [field](const ResultRow& r) { return std::string(to_string(r.*field)); },
                   [field, name](ResultRow& r, const std::string& s) { r.*field = to_layout(name, s); }});
    };
    auto integer = [&](const char* name, int ResultRow::*field) {
      v.push_back({name, [field](const ResultRow& r) { return std::to_string(r.*field); },
                   [field, name](ResultRow& r, const std::string& s) { r.*field = static_cast<int>(to_int(name, s)); }});
    };
    auto timing = [&](const char* name, double Timing::*field) {
      v.push_back({name, [field](const ResultRow& r) { return r.timing ? fmt_double((*r.timing).*field) : ""; },
                   [field, name](ResultRow& r, const std::string& s) {
                     if (!s.empty()) timing_of(r).*field = to_double(name, s);
                   }});
    };

    text("kernel", &ResultRow::kernel);
    text("family", &ResultRow::family);
    format("input_format", &Numerics::input);
    format("compute_format", &Numerics::compute);
    format("accumulator_format", &Numerics::accumulator);
    format("output_format", &Numerics::output);
    v.push_back({"accumulation", [](const ResultRow& r) { return std::string(to_string(r.numerics.accumulation)); },
                 [](ResultRow& r, const std::string& s) {
                   auto a = parse_accumulation(s);
                   if (!a)
                     bad_value("accumulation", s, "an accumulation (fma, in_mma, in_wgmma, external, promoted, library, unknown, tree)");
                   r.numerics.accumulation = *a;
                 }});
    v.push_back({"promotion_interval_k", [](const ResultRow& r) { return std::to_string(r.numerics.promotion_interval_k); },
                 [](ResultRow& r, const std::string& s) {
                   r.numerics.promotion_interval_k = static_cast<int>(to_int("promotion_interval_k", s));
                 }});
    v.push_back({"split_pieces", [](const ResultRow& r) { return std::to_string(r.numerics.split.pieces); },
                 [](ResultRow& r, const std::string& s) {
                   const auto n = to_int("split_pieces", s);
                   if (n < 1 || n > max_operand_pieces) bad_value("split_pieces", s, "1 (not split) to 3 pieces");
                   r.numerics.split.pieces = static_cast<int>(n);
                 }});
    v.push_back({"split_products", [](const ResultRow& r) { return products_text(r.numerics.split); },
                 [](ResultRow& r, const std::string& s) {
                   OperandSplit any{.pieces = max_operand_pieces};
                   if (!parse_products(s, any)) bad_value("split_products", s, "pairs of piece indices 0-2, e.g. \"00 01 10\"");
                   r.numerics.split.products = any.products;
                 }});
    // The revealed tree of an explained record (tree_form.hpp), checked against K once the row is read.
    v.push_back({"summation_tree", [](const ResultRow& r) { return r.numerics.tree; },
                 [](ResultRow& r, const std::string& s) { r.numerics.tree = s; }});
    v.push_back({"fixed_point_bits", [](const ResultRow& r) { return std::to_string(r.numerics.fixed_point_bits); },
                 [](ResultRow& r, const std::string& s) {
                   const auto n = to_int("fixed_point_bits", s);
                   if (n < 0) bad_value("fixed_point_bits", s, "0 (floating-point operands) or the mantissa bits kept");
                   r.numerics.fixed_point_bits = static_cast<int>(n);
                 }});
    layout("layout_a", &ResultRow::layout_a);
    layout("layout_b", &ResultRow::layout_b);
    text("distribution", &ResultRow::distribution);
    integer("M", &ResultRow::M);
    integer("N", &ResultRow::N);
    integer("K", &ResultRow::K);
    v.push_back({"seed", [](const ResultRow& r) { return std::to_string(r.seed); },
                 [](ResultRow& r, const std::string& s) { r.seed = to_u64("seed", s); }});
    text("reference", &ResultRow::reference);
    text("recipe", &ResultRow::recipe);
    // A form's columns (reference/gemm_form.hpp); a CSV without them reads as plain rows.
    v.push_back({"form", [](const ResultRow& r) { return r.form.empty() ? std::string("plain") : r.form; },
                 [](ResultRow& r, const std::string& s) {
                   try {
                     r.form = parse_form(s).name();
                   } catch (const std::invalid_argument& e) {
                     throw std::invalid_argument(std::string("column 'form': ") + e.what());
                   }
                 }});
    auto epilogue_of = [](ResultRow& r) -> Epilogue& {
      if (!r.epilogue) r.epilogue.emplace();
      return *r.epilogue;
    };
    auto epi_format = [&](const char* name, Format Epilogue::*field) {
      v.push_back({name, [field](const ResultRow& r) { return r.epilogue ? std::string(info((*r.epilogue).*field).name) : ""; },
                   [field, name, epilogue_of](ResultRow& r, const std::string& s) {
                     if (!s.empty()) epilogue_of(r).*field = to_format(name, s);
                   }});
    };
    auto epi_placement = [&](const char* name, Placement Epilogue::*field) {
      v.push_back({name, [field](const ResultRow& r) { return r.epilogue ? std::string(to_string((*r.epilogue).*field)) : ""; },
                   [field, name, epilogue_of](ResultRow& r, const std::string& s) {
                     if (s.empty()) return;
                     auto p = parse_placement(s);
                     if (!p) bad_value(name, s, "a placement (before_output_rounding, after_output_rounding, unknown)");
                     epilogue_of(r).*field = *p;
                   }});
    };
    epi_format("c0_format", &Epilogue::c0);
    epi_format("bias_format", &Epilogue::bias);
    epi_format("epilogue_format", &Epilogue::arithmetic);
    epi_placement("c0_placement", &Epilogue::c0_placement);
    epi_placement("bias_placement", &Epilogue::bias_placement);
    auto optional_number = [&](const char* name, std::optional<double> ResultRow::*field) {
      v.push_back({name, [field](const ResultRow& r) { return r.*field ? fmt_double(*(r.*field)) : std::string(); },
                   [field, name](ResultRow& r, const std::string& s) {
                     if (!s.empty()) r.*field = to_double(name, s);
                   }});
    };
    optional_number("amax", &ResultRow::amax);
    optional_number("amax_exact", &ResultRow::amax_exact);
#define GEMMLAB_STATS_COLUMN(type, name, doc)                                                      \
  v.push_back({#name, [](const ResultRow& r) { return r.stats ? fmt(r.stats->name) : std::string(); }, \
               [](ResultRow& r, const std::string& s) {                                           \
                 if (!s.empty()) parse_into(#name, s, stats_of(r).name);                           \
               }});
    GEMMLAB_ERROR_STATS_FIELDS(GEMMLAB_STATS_COLUMN)
#undef GEMMLAB_STATS_COLUMN
    // Scaled fp8 and quantized rows: the total error against A0 B0 (TotalError), empty on other rows.
    auto total = [&](const char* name, double TotalError::*field) {
      v.push_back({name, [field](const ResultRow& r) { return r.total ? fmt_double((*r.total).*field) : ""; },
                   [field, name](ResultRow& r, const std::string& s) {
                     if (s.empty()) return;
                     if (!r.total) r.total.emplace();
                     (*r.total).*field = to_double(name, s);
                   }});
    };
    total("total_rel_mean", &TotalError::rel_mean);
    total("total_rel_std", &TotalError::rel_std);
    total("total_rel_max_abs", &TotalError::rel_max_abs);
    total("total_normwise", &TotalError::normwise);
    total("total_componentwise", &TotalError::componentwise);
    total("total_calc_diff", &TotalError::calc_diff);
    // The problem's quantization error (ResultRow::quantization), empty on other rows.
    auto quant = [&](const char* name, double TotalError::*field) {
      v.push_back({name, [field](const ResultRow& r) { return r.quantization ? fmt_double((*r.quantization).*field) : ""; },
                   [field, name](ResultRow& r, const std::string& s) {
                     if (s.empty()) return;
                     if (!r.quantization) r.quantization.emplace();
                     (*r.quantization).*field = to_double(name, s);
                   }});
    };
    quant("quant_rel_mean", &TotalError::rel_mean);
    quant("quant_rel_std", &TotalError::rel_std);
    quant("quant_rel_max_abs", &TotalError::rel_max_abs);
    quant("quant_normwise", &TotalError::normwise);
    quant("quant_componentwise", &TotalError::componentwise);
    timing("time_ms_median", &Timing::time_ms_median);
    timing("time_ms_min", &Timing::time_ms_min);
    timing("time_ms_max", &Timing::time_ms_max);
    timing("time_ms_iqr", &Timing::time_ms_iqr);
    v.push_back({"time_ms_ci95_rel",
                 [](const ResultRow& r) {
                   return r.timing && r.timing->time_ms_ci95_rel ? fmt_double(*r.timing->time_ms_ci95_rel) : std::string();
                 },
                 [](ResultRow& r, const std::string& s) {
                   if (!s.empty()) timing_of(r).time_ms_ci95_rel = to_double("time_ms_ci95_rel", s);
                 }});
    v.push_back({"reps", [](const ResultRow& r) { return r.reps ? std::to_string(*r.reps) : std::string(); },
                 [](ResultRow& r, const std::string& s) {
                   if (!s.empty()) r.reps = static_cast<int>(to_int("reps", s));
                 }});
    v.push_back({"stopped_by",
                 [](const ResultRow& r) {
                   return r.timing && r.timing->stopped_by ? std::string(to_string(*r.timing->stopped_by)) : std::string();
                 },
                 [](ResultRow& r, const std::string& s) {
                   if (s.empty()) return;
                   auto why = parse_stop_reason(s);
                   if (!why) bad_value("stopped_by", s, "what stopped the repetitions (reps, noise, time_limit)");
                   timing_of(r).stopped_by = *why;
                 }});
    timing("tflops", &Timing::tflops);
    v.push_back({"sm_clock_mhz", [](const ResultRow& r) { return r.timing ? std::to_string(r.timing->sm_clock_mhz) : ""; },
                 [](ResultRow& r, const std::string& s) {
                   if (!s.empty()) timing_of(r).sm_clock_mhz = static_cast<int>(to_int("sm_clock_mhz", s));
                 }});
    v.push_back({"status", [](const ResultRow& r) { return std::string(to_string(r.status)); },
                 [](ResultRow& r, const std::string& s) {
                   auto st = parse_status(s);
                   if (!st) {
                     std::string all;
                     for (Status x : all_statuses()) all += std::string(all.empty() ? "" : ", ") + to_string(x);
                     bad_value("status", s, ("a status (" + all + ")").c_str());
                   }
                   r.status = *st;
                 }});
    text("note", &ResultRow::note);
    return v;
  }();
  return cols;
}

}  // namespace

const std::vector<std::string>& timing_columns() {
  static const std::vector<std::string> v = {"time_ms_median", "time_ms_min", "time_ms_max", "time_ms_iqr",
                                             "time_ms_ci95_rel", "reps", "stopped_by", "tflops", "sm_clock_mhz"};
  return v;
}

const std::vector<std::string>& result_columns() {
  static const std::vector<std::string> names = [] {
    std::vector<std::string> v;
    for (const Column& c : columns()) v.push_back(c.name);
    return v;
  }();
  return names;
}

std::vector<std::string> to_fields(const ResultRow& r) {
  std::vector<std::string> out;
  out.reserve(columns().size());
  for (const Column& c : columns()) out.push_back(c.get(r));
  return out;
}

ResultRow from_fields(const std::vector<std::string>& header, const std::vector<std::string>& fields) {
  if (header.size() != fields.size())
    throw std::invalid_argument("row has " + std::to_string(fields.size()) + " fields but the header has " +
                                std::to_string(header.size()));
  static const std::unordered_map<std::string, const Column*> by_name = [] {
    std::unordered_map<std::string, const Column*> m;
    for (const Column& c : columns()) m.emplace(c.name, &c);
    return m;
  }();
  ResultRow r;
  for (std::size_t i = 0; i < header.size(); ++i)
    if (auto it = by_name.find(header[i]); it != by_name.end()) it->second->set(r, fields[i]);
  // A tree must be one of the row's K products; accumulation tree must come with one.
  if (!r.numerics.tree.empty()) {
    try {
      parse_compact_form(r.numerics.tree, r.K);
    } catch (const std::invalid_argument& e) {
      throw std::invalid_argument("column summation_tree is not a tree of the row's K = " + std::to_string(r.K) +
                                  " products: " + e.what());
    }
  } else if (r.numerics.accumulation == Accumulation::tree) {
    throw std::invalid_argument("column accumulation is tree but the row's summation_tree is empty");
  }
  // The split's two columns are read apart; together they must be a split the bound models.
  if (const std::string why = split_problem(r.numerics.split); !why.empty())
    throw std::invalid_argument("columns split_pieces " + std::to_string(r.numerics.split.pieces) + " and split_products '" +
                                products_text(OperandSplit{.pieces = max_operand_pieces, .products = r.numerics.split.products}) +
                                "' disagree: " + why);
  return r;
}

}  // namespace gemmlab
