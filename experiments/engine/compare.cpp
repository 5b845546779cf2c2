#include "experiments/engine/compare.hpp"

#include <CLI/CLI.hpp>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <stdexcept>
#include <unordered_map>

#include "experiments/engine/command_line.hpp"
#include "experiments/engine/files.hpp"
#include "experiments/plan/plan.hpp"
#include "experiments/report/files.hpp"

namespace gemmlab::engine {

namespace {

// The columns that make a row's identity (row_identity), and `status`: a file without them is not a
// gemmlab result CSV.
const std::vector<std::string> kIdentity = {"kernel", "distribution", "M", "N", "K", "seed", "input_format", "output_format"};

const std::vector<std::string>& stats_columns() {
  static const std::vector<std::string> v = {
#define GEMMLAB_STATS_NAME(type, name, doc) #name,
      GEMMLAB_ERROR_STATS_FIELDS(GEMMLAB_STATS_NAME)
#undef GEMMLAB_STATS_NAME
  };
  return v;
}

bool contains(const std::vector<std::string>& v, const std::string& s) { return std::find(v.begin(), v.end(), s) != v.end(); }

// At most this many identities of one kind in a message; the count says how many there are.
constexpr std::size_t kListed = 10;
// At most this many lines in a table or list of the report, which must fit a pull-request comment
// (GitHub takes 65536 characters) when a change touches every row; the rest is counted.
constexpr std::size_t kReportLines = 80;

std::string listed(const std::vector<std::string>& v) {
  std::string s;
  for (std::size_t i = 0; i < v.size() && i < kListed; ++i) s += "\n    " + v[i];
  if (v.size() > kListed) s += "\n    ... and " + std::to_string(v.size() - kListed) + " more";
  return s;
}

std::optional<double> number(const std::string& text) {
  if (text.empty()) return std::nullopt;
  char* end = nullptr;
  const double x = std::strtod(text.c_str(), &end);  // reads fmt_double's "nan", "inf", "-inf" too
  if (*end != '\0') return std::nullopt;
  return x;
}

FieldChange change(const std::string& column, const std::string& a, const std::string& b) {
  FieldChange c{column, a, b, std::nullopt, std::nullopt};
  const auto x = number(a), y = number(b);
  if (x && y) {
    c.abs = *y - *x;
    if (*x != 0) c.rel = (*y - *x) / std::fabs(*x);
  }
  return c;
}

// Markdown table cell: '|' would end the cell, a newline the row.
std::string md(const std::string& s) {
  std::string out;
  for (char ch : s) {
    if (ch == '|') out += "\\|";
    else if (ch == '\n' || ch == '\r') out += ' ';
    else out += ch;
  }
  return out;
}

std::string g3(double x, bool sign = false) {
  if (std::isnan(x)) return "nan";
  if (std::isinf(x)) return x > 0 ? (sign ? "+inf" : "inf") : "-inf";
  char buf[32];
  std::snprintf(buf, sizeof buf, sign ? "%+.3g" : "%.3g", x);
  return buf;
}

std::string percent(double x) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.1f%%", 100 * x);
  return buf;
}

std::string rows_word(std::size_t n) { return std::to_string(n) + (n == 1 ? " row" : " rows"); }

// The identity as table cells: kernel | distribution | M×N×K | seed | formats.
std::string identity_cells(const ResultRow& r) {
  return "`" + md(r.kernel) + "` | " + md(r.distribution) + " | " + std::to_string(r.M) + "×" + std::to_string(r.N) +
         "×" + std::to_string(r.K) + " | " + std::to_string(r.seed) + " | " + info(r.numerics.input).name + "→" +
         info(r.numerics.output).name;
}

std::string noise_text(const Noise& n) {
  if (!n.rel) return "none";
  return percent(*n.rel) + (n.from_range ? " (max−min)" : "");
}

}  // namespace

bool ResultTable::has(const std::string& column) const { return contains(columns, column); }

std::string row_identity(const ResultRow& r) {
  return r.key() + "|" + info(r.numerics.input).name + "->" + info(r.numerics.output).name;
}

ResultTable parse_results(const std::string& text, const std::string& name) {
  CsvRecords recs = parse_csv(text);
  if (recs.records.empty()) throw UsageError("'" + name + "' is empty: it is not a gemmlab result CSV");
  if (recs.torn_tail)
    throw UsageError("'" + name + "' is cut short (its last line has no end): it was being written; use a finished CSV");
  ResultTable t;
  t.name = name;
  t.columns = recs.records[0];
  std::vector<std::string> missing;
  for (const std::string& c : kIdentity)
    if (!t.has(c)) missing.push_back(c);
  if (!t.has("status")) missing.push_back("status");
  if (!missing.empty()) {
    std::string m;
    for (const auto& c : missing) m += (m.empty() ? "'" : ", '") + c + "'";
    throw UsageError("'" + name + "' is not a gemmlab result CSV: it has no " + m + " column" +
                     (missing.size() > 1 ? "s" : "") + " (compare matches rows by kernel, distribution, M, N, K, seed, "
                     "input_format and output_format)");
  }
  std::unordered_map<std::string, std::size_t> seen;
  std::vector<std::string> duplicated;
  for (std::size_t i = 1; i < recs.records.size(); ++i) {
    const auto& rec = recs.records[i];
    const std::string where = "'" + name + "' line " + std::to_string(i + 1);
    if (rec.size() != t.columns.size())
      throw UsageError(where + " has " + std::to_string(rec.size()) + " fields, the header " +
                       std::to_string(t.columns.size()) + ": the file is damaged");
    try {
      t.rows.push_back(from_fields(t.columns, rec));
    } catch (const std::invalid_argument& e) {
      throw UsageError(where + ": " + e.what());
    }
    const std::string id = row_identity(t.rows.back());
    if (!seen.emplace(id, i).second) duplicated.push_back(id);
  }
  if (!duplicated.empty())
    throw UsageError("in '" + name + "', rows with one identity (kernel|distribution|MxNxK|seed|formats) appear more "
                     "than once, so they cannot be matched (" + std::to_string(duplicated.size()) + " extra):" +
                     listed(duplicated) + "\ncompare the CSV of one run (`gemmlab merge` joins the shards of one plan)");
  return t;
}

ResultTable read_results(const std::string& path) { return parse_results(read_file(path), path); }

Noise timing_noise(const ResultRow& r, bool has_iqr_column) {
  Noise n;
  if (!r.timing || !(r.timing->time_ms_median > 0)) return n;
  const Timing& t = *r.timing;
  if (has_iqr_column && std::isfinite(t.time_ms_iqr)) {
    n.rel = t.time_ms_iqr / t.time_ms_median;
  } else if (std::isfinite(t.time_ms_min) && std::isfinite(t.time_ms_max)) {
    n.rel = (t.time_ms_max - t.time_ms_min) / t.time_ms_median;
    n.from_range = true;
  }
  return n;
}

const char* to_string(TimingVerdict v) {
  switch (v) {
    case TimingVerdict::not_compared: return "not compared";
    case TimingVerdict::no_noise: return "no noise figure";
    case TimingVerdict::within_noise: return "within noise";
    case TimingVerdict::slower: return "slower";
    case TimingVerdict::faster: return "faster";
  }
  return "?";
}

TimingVerdict timing_verdict(double ratio, const Noise& a, const Noise& b, double threshold, double* allowed) {
  if (!a.rel || !b.rel) return TimingVerdict::no_noise;
  const double limit = std::max(*a.rel + *b.rel, threshold);
  if (allowed) *allowed = limit;
  if (ratio - 1 > limit) return TimingVerdict::slower;
  if (1 - ratio > limit) return TimingVerdict::faster;
  return TimingVerdict::within_noise;
}

std::size_t Comparison::accuracy_changed() const {
  return static_cast<std::size_t>(std::count_if(rows.begin(), rows.end(), [](const RowComparison& r) { return !r.accuracy.empty(); }));
}

std::size_t Comparison::slower() const {
  return static_cast<std::size_t>(
      std::count_if(rows.begin(), rows.end(), [](const RowComparison& r) { return r.timing == TimingVerdict::slower; }));
}

int Comparison::exit_status() const {
  if (accuracy_changed() > 0) return 3;
  if (slower() > 0) return 4;
  return 0;
}

void check_options(const CompareOptions& opt) {
  for (const std::string& c : opt.ignore) {
    if (contains(kIdentity, c))
      throw UsageError("--ignore " + c + ": rows are matched by that column, so it cannot be left out");
    if (!contains(result_columns(), c))
      throw UsageError("--ignore " + c + ": gemmlab writes no column of that name (docs/csv.md lists them)");
  }
  if (!(opt.slowdown_threshold >= 0) || !std::isfinite(opt.slowdown_threshold))
    throw UsageError("--slowdown-threshold must be a non-negative fraction (0.02 for 2%)");
}

Comparison compare_results(const ResultTable& a, const ResultTable& b, const CompareOptions& opt) {
  check_options(opt);
  const std::vector<std::string>& all = result_columns();
  Comparison cmp;
  cmp.name_a = a.name, cmp.name_b = b.name;
  cmp.rows_a = a.rows.size(), cmp.rows_b = b.rows.size();
  cmp.slowdown_threshold = opt.slowdown_threshold;
  auto compared = [&](const std::string& c) { return a.has(c) && b.has(c) && !contains(opt.ignore, c); };
  for (const std::string& c : all) {
    if (contains(opt.ignore, c)) cmp.ignored.push_back(c);
    else if (a.has(c) && !b.has(c)) cmp.only_in_a.push_back(c);
    else if (b.has(c) && !a.has(c)) cmp.only_in_b.push_back(c);
  }
  for (const std::string& c : stats_columns())
    if (compared(c)) cmp.stats_compared.push_back(c);
  cmp.timing_compared = compared("time_ms_median");
  cmp.iqr_a = a.has("time_ms_iqr") && !contains(opt.ignore, "time_ms_iqr");
  cmp.iqr_b = b.has("time_ms_iqr") && !contains(opt.ignore, "time_ms_iqr");
  std::vector<std::string> other;  // descriptive columns: neither identity, statistics, status nor timing
  for (const std::string& c : all)
    if (compared(c) && !contains(kIdentity, c) && !contains(stats_columns(), c) && c != "status" &&
        !contains(timing_columns(), c))
      other.push_back(c);

  std::unordered_map<std::string, std::size_t> in_b;
  for (std::size_t i = 0; i < b.rows.size(); ++i) in_b.emplace(row_identity(b.rows[i]), i);
  std::vector<bool> matched_b(b.rows.size(), false);
  std::unordered_map<std::string, std::size_t> col;
  for (std::size_t i = 0; i < all.size(); ++i) col.emplace(all[i], i);

  for (const ResultRow& ra : a.rows) {
    const std::string id = row_identity(ra);
    auto it = in_b.find(id);
    if (it == in_b.end()) {
      cmp.only_a.push_back(id);
      continue;
    }
    matched_b[it->second] = true;
    RowComparison rc;
    rc.identity = id;
    rc.a = ra;
    rc.b = b.rows[it->second];
    // Normalised text: the report layer writes both rows, so equal text is equal values, bit for bit.
    const std::vector<std::string> fa = to_fields(rc.a), fb = to_fields(rc.b);
    if (compared("status") && fa[col.at("status")] != fb[col.at("status")])
      rc.accuracy.push_back(change("status", fa[col.at("status")], fb[col.at("status")]));
    if (rc.a.stats.has_value() != rc.b.stats.has_value()) {
      if (!cmp.stats_compared.empty())
        rc.accuracy.push_back({"statistics", rc.a.stats ? "measured" : "none", rc.b.stats ? "measured" : "none", {}, {}});
    } else if (rc.a.stats) {
      for (const std::string& c : cmp.stats_compared) {
        const std::size_t i = col.at(c);
        if (fa[i] == fb[i]) ++rc.stats_identical;
        else rc.accuracy.push_back(change(c, fa[i], fb[i]));
      }
    }
    for (const std::string& c : other)
      if (fa[col.at(c)] != fb[col.at(c)]) rc.other.push_back(change(c, fa[col.at(c)], fb[col.at(c)]));
    if (cmp.timing_compared && rc.a.timing && rc.b.timing && rc.a.timing->time_ms_median > 0 &&
        rc.b.timing->time_ms_median > 0) {
      rc.ratio = rc.b.timing->time_ms_median / rc.a.timing->time_ms_median;
      rc.noise_a = timing_noise(rc.a, cmp.iqr_a);
      rc.noise_b = timing_noise(rc.b, cmp.iqr_b);
      rc.timing = timing_verdict(*rc.ratio, rc.noise_a, rc.noise_b, opt.slowdown_threshold, &rc.allowed);
    }
    cmp.rows.push_back(std::move(rc));
  }
  for (std::size_t i = 0; i < b.rows.size(); ++i)
    if (!matched_b[i]) cmp.only_b.push_back(row_identity(b.rows[i]));
  if (cmp.rows.empty())
    throw UsageError("no row of '" + a.name + "' (" + rows_word(a.rows.size()) + ") matches a row of '" + b.name + "' (" +
                     rows_word(b.rows.size()) + ") by kernel, distribution, size, seed and formats: compare two runs "
                     "of one experiment");
  return cmp;
}

std::string markdown_report(const Comparison& c) {
  std::string s = "## gemmlab compare\n\nA: `" + md(c.name_a) + "` (" + rows_word(c.rows_a) + "), B: `" + md(c.name_b) +
                  "` (" + rows_word(c.rows_b) + ").\n\n";
  const std::size_t acc = c.accuracy_changed(), slow = c.slower();
  std::size_t fast = 0;
  for (const auto& r : c.rows) fast += r.timing == TimingVerdict::faster;
  // The summary line: the verdict in bold, then what it rests on.
  if (acc == 0 && slow == 0) s += "**No change beyond noise.** ";
  else if (acc && slow) s += "**Accuracy changed in " + rows_word(acc) + "; slower beyond noise in " + rows_word(slow) + ".** ";
  else if (acc) s += "**Accuracy changed in " + rows_word(acc) + ".** ";
  else s += "**Slower beyond noise in " + rows_word(slow) + ".** ";
  s += rows_word(c.rows.size()) + " matched";
  if (acc < c.rows.size())
    s += std::string(acc ? "; in the other " + std::to_string(c.rows.size() - acc) : "; in each") + ", the " +
         std::to_string(c.stats_compared.size()) + " statistics compared and the status are bit-identical";
  s += ".";
  if (fast) s += " " + rows_word(fast) + " faster beyond noise.";
  s += " Rows only in A: " + std::to_string(c.only_a.size()) + ", only in B: " + std::to_string(c.only_b.size()) +
       ". Exit " + std::to_string(c.exit_status()) + ".\n";

  // A table of the changes `which` of every row; with the differences B - A and (B - A)/|A| if `diffs`.
  auto changes_table = [&](std::vector<FieldChange> RowComparison::*which, bool diffs) {
    s += std::string("| kernel | distribution | M×N×K | seed | formats | column | A | B |") +
         (diffs ? " B − A | (B − A)/\\|A\\| |\n" : "\n") + "| --- | --- | --- | --- | --- | --- | --- | --- |" +
         (diffs ? " --- | --- |\n" : "\n");
    std::size_t lines = 0;
    for (const auto& r : c.rows)
      for (const auto& ch : r.*which)
        if (++lines <= kReportLines)
          s += "| " + identity_cells(r.a) + " | " + md(ch.column) + " | " + md(ch.a) + " | " + md(ch.b) + " |" +
               (diffs ? " " + (ch.abs ? g3(*ch.abs, true) : "") + " | " + (ch.rel ? g3(*ch.rel, true) : "") + " |" : "") +
               "\n";
    if (lines > kReportLines) s += "\n... and " + std::to_string(lines - kReportLines) + " more changes.\n";
  };
  if (acc) {
    s += "\n### Accuracy changes\n\nEvery statistic not listed for a row is bit-identical in A and B.\n\n";
    changes_table(&RowComparison::accuracy, true);
  }

  if (c.timing_compared) {
    s += "\n### Timing\n\nB/A of time_ms_median. Noise of a row: ";
    auto source = [](bool iqr) { return iqr ? std::string("time_ms_iqr / time_ms_median") : std::string("(time_ms_max − time_ms_min) / time_ms_median, the file having no time_ms_iqr column"); };
    if (c.iqr_a == c.iqr_b) s += source(c.iqr_a) + " (both files)";
    else s += source(c.iqr_a) + " in A, " + source(c.iqr_b) + " in B";
    s += ". A row is slower when B/A − 1, faster when 1 − B/A, exceeds noise A + noise B";
    if (c.slowdown_threshold > 0) s += " and " + percent(c.slowdown_threshold) + " (--slowdown-threshold)";
    s += ".\n";
    std::size_t judged = 0, unjudged = 0;
    for (const auto& r : c.rows) {
      judged += r.timing == TimingVerdict::within_noise || r.timing == TimingVerdict::slower || r.timing == TimingVerdict::faster;
      unjudged += r.timing == TimingVerdict::no_noise;
    }
    s += "\n" + rows_word(judged) + " timed in both: " + std::to_string(slow) + " slower, " + std::to_string(fast) +
         " faster, " + std::to_string(judged - slow - fast) + " within noise";
    if (unjudged) s += "; " + rows_word(unjudged) + " without a noise figure (one time only), not judged";
    s += ".\n";
    if (slow || fast) {
      s += "\n| kernel | distribution | M×N×K | seed | formats | A ms | B ms | B/A | noise A | noise B | verdict |\n"
           "| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |\n";
      std::size_t lines = 0;
      for (TimingVerdict v : {TimingVerdict::slower, TimingVerdict::faster})
        for (const auto& r : c.rows)
          if (r.timing == v && ++lines <= kReportLines)
            s += "| " + identity_cells(r.a) + " | " + fmt_double(r.a.timing->time_ms_median) + " | " +
                 fmt_double(r.b.timing->time_ms_median) + " | " + g3(*r.ratio) + " | " + noise_text(r.noise_a) + " | " +
                 noise_text(r.noise_b) + " | " + to_string(v) + " |\n";
      if (lines > kReportLines) s += "\n... and " + std::to_string(lines - kReportLines) + " more rows.\n";
    }
  }

  std::size_t other = 0;
  for (const auto& r : c.rows) other += !r.other.empty();
  if (other) {
    s += "\n### Other columns that differ (not an accuracy change)\n\n";
    changes_table(&RowComparison::other, false);
  }
  auto only = [&](const char* title, const std::vector<std::string>& ids) {
    if (ids.empty()) return;
    s += std::string("\n### ") + title + " (" + std::to_string(ids.size()) + ")\n\n";
    for (std::size_t i = 0; i < ids.size() && i < kReportLines; ++i) s += "- `" + ids[i] + "`\n";
    if (ids.size() > kReportLines) s += "- ... and " + std::to_string(ids.size() - kReportLines) + " more\n";
  };
  only("Rows only in A", c.only_a);
  only("Rows only in B", c.only_b);
  if (!c.only_in_a.empty() || !c.only_in_b.empty() || !c.ignored.empty()) {
    s += "\n### Columns not compared\n\n";
    auto names = [](const std::vector<std::string>& v) {
      std::string out;
      for (const auto& x : v) out += (out.empty() ? "" : ", ") + x;
      return out;
    };
    if (!c.only_in_a.empty()) s += "- only in A: " + names(c.only_in_a) + "\n";
    if (!c.only_in_b.empty()) s += "- only in B (an older gemmlab wrote A?): " + names(c.only_in_b) + "\n";
    if (!c.ignored.empty()) s += "- ignored (--ignore): " + names(c.ignored) + "\n";
  }
  return s;
}

int compare_command(const std::vector<std::string>& args) {
  CLI::App app("compare two result CSVs: statistics bit for bit, status, and time against the noise", "gemmlab compare");
  std::string a, b, md_out;
  std::vector<std::string> ignore;
  double threshold = 0;
  app.add_option("A", a, "the result CSV before (the base)")->required();
  app.add_option("B", b, "the result CSV after")->required();
  app.add_option("--md", md_out, "also write the markdown report to this file (atomically)");
  app.add_option("--ignore", ignore, "columns to leave out, comma-separated (e.g. reference,note)")->delimiter(',');
  app.add_option("--slowdown-threshold", threshold,
                 "the least relative slowdown that counts, beside the noise (e.g. 0.02 for 2%; default 0)");
  app.footer(
      "Exit status: 0 nothing changed beyond noise; 3 a statistic or status changed; 4 a row is slower beyond the "
      "noise (3 wins over 4); 2 bad input.");
  if (auto done = parse_subcommand(app, args)) return *done;
  try {
    // The options first, then the files: a mistake in what was asked is named before any file is read.
    const CompareOptions opt{ignore, threshold};
    check_options(opt);
    if (!md_out.empty()) check_writable(md_out);
    const Comparison c = compare_results(read_results(a), read_results(b), opt);
    const std::string report = markdown_report(c);
    if (!md_out.empty()) write_durably(md_out, report);
    std::fputs(report.c_str(), stdout);
    return c.exit_status();
  } catch (const UsageError& e) {
    std::fprintf(stderr, "gemmlab compare: %s\n", e.what());
    return 2;
  }
}

}  // namespace gemmlab::engine
