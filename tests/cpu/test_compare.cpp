// `gemmlab compare` (experiments/engine/compare.hpp): matching rows by identity, bit-identical
// statistics, the timing noise and the verdict, bad input, and the markdown report.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <unistd.h>

#include "experiments/engine/compare.hpp"
#include "experiments/engine/files.hpp"
#include "experiments/report/files.hpp"
#include "experiments/plan/plan.hpp"

using namespace gemmlab;
using namespace gemmlab::engine;
namespace fs = std::filesystem;

namespace {

// A finished row: statistics 2^-k-ish, a median of `ms` with the given spread.
ResultRow row(const std::string& kernel, int K, double ms, double iqr = 0.01, Format out = Format::fp32) {
  ResultRow r;
  r.kernel = kernel;
  r.family = "simt";
  r.numerics.output = out;
  r.distribution = "uniform_0_1";
  r.M = r.N = 64;
  r.K = K;
  r.seed = 1;
  r.reference = "fixed_int128";
  ErrorStats s;
  s.entries = 4096;
  s.rel_count = 4096;
  s.rel_mean = -0x1p-25;
  s.rel_std = 0x1p-24;
  s.normwise = 0x1p-24;
  s.calc_diff = 0x1p-49;
  s.snr_db = 150;
  s.assert_close = 1;
  r.stats = s;
  Timing t;
  t.time_ms_median = ms;
  t.time_ms_min = ms * 0.99;
  t.time_ms_max = ms * 1.05;
  t.time_ms_iqr = iqr * ms;
  t.tflops = 1;
  r.timing = t;
  r.reps = 20;
  r.status = Status::passed;
  return r;
}

std::string csv(const std::vector<ResultRow>& rows, const std::vector<std::string>& drop = {}) {
  const std::vector<std::string>& cols = result_columns();
  std::vector<std::string> keep;
  for (const auto& c : cols)
    if (std::find(drop.begin(), drop.end(), c) == drop.end()) keep.push_back(c);
  std::string s = csv_line(keep);
  for (const auto& r : rows) {
    const std::vector<std::string> f = to_fields(r);
    std::vector<std::string> out;
    for (std::size_t i = 0; i < cols.size(); ++i)
      if (std::find(drop.begin(), drop.end(), cols[i]) == drop.end()) out.push_back(f[i]);
    s += csv_line(out);
  }
  return s;
}

Comparison compare(const std::vector<ResultRow>& a, const std::vector<ResultRow>& b, const CompareOptions& opt = {}) {
  return compare_results(parse_results(csv(a), "a.csv"), parse_results(csv(b), "b.csv"), opt);
}

}  // namespace

TEST(Compare, IdenticalRowsChangeNothing) {
  const std::vector<ResultRow> a = {row("k1", 64, 1.0), row("k2", 64, 2.0)};
  const Comparison c = compare(a, a);
  EXPECT_EQ(c.exit_status(), 0);
  ASSERT_EQ(c.rows.size(), 2u);
  const int nstats = static_cast<int>(c.stats_compared.size());
  int fields = 0;
#define GEMMLAB_COUNT(type, name, doc) ++fields;
  GEMMLAB_ERROR_STATS_FIELDS(GEMMLAB_COUNT)
#undef GEMMLAB_COUNT
  EXPECT_EQ(nstats, fields) << "every statistics column is compared";
  for (const auto& r : c.rows) {
    EXPECT_TRUE(r.accuracy.empty());
    EXPECT_EQ(r.stats_identical, nstats);
    EXPECT_EQ(r.timing, TimingVerdict::within_noise);
    EXPECT_EQ(*r.ratio, 1.0);
  }
  EXPECT_NE(markdown_report(c).find("**No change beyond noise.**"), std::string::npos) << markdown_report(c);
}

TEST(Compare, OneStatisticOneUlpApartIsAnAccuracyChange) {
  std::vector<ResultRow> a = {row("k1", 64, 1.0), row("k2", 64, 2.0)}, b = a;
  b[1].stats->rel_mean = std::nextafter(a[1].stats->rel_mean, 0.0);
  const Comparison c = compare(a, b);
  EXPECT_EQ(c.exit_status(), 3);
  EXPECT_EQ(c.accuracy_changed(), 1u);
  ASSERT_EQ(c.rows[1].accuracy.size(), 1u);
  const FieldChange& ch = c.rows[1].accuracy[0];
  EXPECT_EQ(ch.column, "rel_mean");
  EXPECT_EQ(ch.a, fmt_double(a[1].stats->rel_mean));
  EXPECT_EQ(ch.b, fmt_double(b[1].stats->rel_mean));
  EXPECT_EQ(*ch.abs, b[1].stats->rel_mean - a[1].stats->rel_mean);
  EXPECT_DOUBLE_EQ(*ch.rel, (b[1].stats->rel_mean - a[1].stats->rel_mean) / std::fabs(a[1].stats->rel_mean));
  EXPECT_EQ(c.rows[1].stats_identical, static_cast<int>(c.stats_compared.size()) - 1);
  const std::string md = markdown_report(c);
  EXPECT_NE(md.find("**Accuracy changed in 1 row.**"), std::string::npos) << md;
  EXPECT_NE(md.find("| rel_mean |"), std::string::npos) << md;
  EXPECT_NE(md.find("`k2`"), std::string::npos) << md;
}

TEST(Compare, StatusAndMissingStatisticsAreAccuracyChanges) {
  std::vector<ResultRow> a = {row("k1", 64, 1.0)}, b = a;
  b[0].status = Status::failed_bound;
  EXPECT_EQ(compare(a, b).exit_status(), 3);
  b = a;
  b[0].stats.reset();
  b[0].timing.reset();
  b[0].status = Status::error;
  b[0].note = "launch failed";
  const Comparison c = compare(a, b);
  EXPECT_EQ(c.exit_status(), 3);
  ASSERT_EQ(c.rows[0].accuracy.size(), 2u) << "status and 'statistics', not every column";
  EXPECT_EQ(c.rows[0].accuracy[0].column, "status");
  EXPECT_EQ(c.rows[0].accuracy[1].column, "statistics");
  EXPECT_EQ(c.rows[0].timing, TimingVerdict::not_compared);
  ASSERT_EQ(c.rows[0].other.size(), 1u);
  EXPECT_EQ(c.rows[0].other[0].column, "note");
}

TEST(Compare, SlowerBeyondTheNoiseIsExit4AndWithinItIs0) {
  // Noise 1% of the median in each run: combined 2%.
  std::vector<ResultRow> a = {row("k1", 64, 1.0, 0.01)};
  EXPECT_EQ(timing_verdict(1.03, Noise{0.01, false}, Noise{0.01, false}, 0), TimingVerdict::slower);
  const Comparison slow = compare(a, {row("k1", 64, 1.03, 0.01)});
  EXPECT_EQ(slow.exit_status(), 4);
  EXPECT_EQ(slow.rows[0].timing, TimingVerdict::slower);
  EXPECT_DOUBLE_EQ(slow.rows[0].allowed, 0.02);
  EXPECT_NE(markdown_report(slow).find("**Slower beyond noise in 1 row.**"), std::string::npos);
  EXPECT_EQ(compare(a, {row("k1", 64, 1.015, 0.01)}).exit_status(), 0) << "1.5% < 2% of noise";
  // A threshold floor: 3% does not count under --slowdown-threshold 0.05.
  EXPECT_EQ(compare(a, {row("k1", 64, 1.03, 0.01)}, CompareOptions{{}, 0.05}).exit_status(), 0);
  // Faster is reported, never a failure.
  const Comparison fast = compare(a, {row("k1", 64, 0.9, 0.01)});
  EXPECT_EQ(fast.exit_status(), 0);
  EXPECT_EQ(fast.rows[0].timing, TimingVerdict::faster);
}

TEST(Compare, AccuracyWinsOverSlowdown) {
  std::vector<ResultRow> a = {row("k1", 64, 1.0), row("k2", 64, 1.0)};
  std::vector<ResultRow> b = {row("k1", 64, 2.0), row("k2", 64, 1.0)};
  b[1].stats->snr_db = 149;
  const Comparison c = compare(a, b);
  EXPECT_EQ(c.slower(), 1u);
  EXPECT_EQ(c.exit_status(), 3);
  EXPECT_NE(markdown_report(c).find("**Accuracy changed in 1 row; slower beyond noise in 1 row.**"), std::string::npos);
}

TEST(Compare, WithoutAnIqrColumnTheNoiseIsTheRange) {
  // row(): min 0.99, max 1.05 of the median: range noise 6% against the IQR's 1%.
  const ResultTable a = parse_results(csv({row("k1", 64, 1.0)}, {"time_ms_iqr"}), "old.csv");
  const ResultTable b = parse_results(csv({row("k1", 64, 1.05)}), "new.csv");
  const Comparison c = compare_results(a, b);
  EXPECT_FALSE(c.iqr_a);
  EXPECT_TRUE(c.iqr_b);
  ASSERT_TRUE(c.rows[0].noise_a.rel);
  EXPECT_TRUE(c.rows[0].noise_a.from_range);
  EXPECT_NEAR(*c.rows[0].noise_a.rel, 0.06, 1e-12);
  EXPECT_FALSE(c.rows[0].noise_b.from_range);
  EXPECT_EQ(c.rows[0].timing, TimingVerdict::within_noise) << "5% < 6% + 1%";
  EXPECT_EQ(c.exit_status(), 0);
  const std::string md = markdown_report(c);
  EXPECT_NE(md.find("the file having no time_ms_iqr column"), std::string::npos) << md;
  EXPECT_NE(md.find("only in B (an older gemmlab wrote A?): time_ms_iqr"), std::string::npos) << md;
}

TEST(Compare, ColumnsOnlyOneFileHasAreNotComparedNorChanges) {
  // An older CSV without the newer statistics: they read back as defaults, which must not count.
  const std::vector<std::string> newer = {"calc_diff", "snr_db", "max_abs_err", "assert_close", "assert_close_mismatches"};
  const ResultTable a = parse_results(csv({row("k1", 64, 1.0)}, newer), "old.csv");
  const ResultTable b = parse_results(csv({row("k1", 64, 1.0)}), "new.csv");
  const Comparison c = compare_results(a, b);
  EXPECT_EQ(c.exit_status(), 0);
  EXPECT_EQ(c.only_in_b, newer);
  for (const auto& n : newer) EXPECT_EQ(std::count(c.stats_compared.begin(), c.stats_compared.end(), n), 0) << n;
}

TEST(Compare, IgnoredColumnsDoNotCount) {
  std::vector<ResultRow> a = {row("k1", 64, 1.0)}, b = a;
  b[0].stats->normwise *= 2;
  b[0].reference = "gpu_int8_ozaki";
  EXPECT_EQ(compare(a, b).exit_status(), 3);
  const Comparison c = compare(a, b, CompareOptions{{"normwise", "reference"}, 0});
  EXPECT_EQ(c.exit_status(), 0);
  EXPECT_TRUE(c.rows[0].other.empty());
  EXPECT_EQ(c.ignored, (std::vector<std::string>{"reference", "normwise"}));  // in column order
  // Ignoring the timing median leaves the speed out.
  EXPECT_EQ(compare(a, {row("k1", 64, 9.0)}, CompareOptions{{"time_ms_median"}, 0}).exit_status(), 0);
  EXPECT_THROW(compare(a, b, CompareOptions{{"seed"}, 0}), UsageError);
  EXPECT_THROW(compare(a, b, CompareOptions{{"no_such_column"}, 0}), UsageError);
  EXPECT_THROW(compare(a, b, CompareOptions{{}, -0.1}), UsageError);
}

TEST(Compare, RowsAreMatchedByIdentityIncludingTheFormats) {
  const std::vector<ResultRow> a = {row("torch", 64, 1.0, 0.01, Format::fp16), row("torch", 64, 1.0, 0.01, Format::bf16),
                                    row("gone", 64, 1.0)};
  const std::vector<ResultRow> b = {row("new", 128, 1.0), row("torch", 64, 1.0, 0.01, Format::bf16),
                                    row("torch", 64, 1.0, 0.01, Format::fp16)};
  const Comparison c = compare(a, b);
  ASSERT_EQ(c.rows.size(), 2u);
  EXPECT_EQ(c.rows[0].identity, "torch|uniform_0_1|64x64x64|1|fp32->fp16");
  EXPECT_EQ(c.rows[1].identity, "torch|uniform_0_1|64x64x64|1|fp32->bf16");
  EXPECT_EQ(c.only_a, std::vector<std::string>{"gone|uniform_0_1|64x64x64|1|fp32->fp32"});
  EXPECT_EQ(c.only_b, std::vector<std::string>{"new|uniform_0_1|64x64x128|1|fp32->fp32"});
  EXPECT_EQ(c.exit_status(), 0) << "rows only on one side are listed, not a change of a matched row";
  const std::string md = markdown_report(c);
  EXPECT_NE(md.find("### Rows only in A (1)\n\n- `gone|uniform_0_1|64x64x64|1|fp32->fp32`"), std::string::npos) << md;
  EXPECT_THROW(compare({row("x", 64, 1.0)}, {row("y", 64, 1.0)}), UsageError) << "nothing matches";
}

TEST(Compare, BadInputNamesTheProblem) {
  auto message = [](const std::string& text) {
    try {
      parse_results(text, "f.csv");
    } catch (const UsageError& e) {
      return std::string(e.what());
    }
    return std::string("no error");
  };
  EXPECT_NE(message("").find("'f.csv' is empty"), std::string::npos);
  EXPECT_NE(message("a,b\n1,2\n").find("not a gemmlab result CSV: it has no 'kernel', 'distribution'"), std::string::npos);
  const std::string good = csv({row("k1", 64, 1.0)});
  EXPECT_NE(message(good + "k2,simt\n").find("line 3 has 2 fields"), std::string::npos);
  EXPECT_NE(message(good.substr(0, good.size() - 1)).find("cut short"), std::string::npos);
  std::string bad_value = good;
  bad_value.replace(bad_value.find(",passed,"), 8, ",exploded,");
  EXPECT_NE(message(bad_value).find("line 2: column 'status': 'exploded' is not a status"), std::string::npos)
      << message(bad_value);
  const std::string dup = csv({row("k1", 64, 1.0), row("k2", 64, 1.0), row("k1", 64, 2.0)});
  EXPECT_NE(message(dup).find("appear more than once, so they cannot be matched (1 extra)"), std::string::npos)
      << message(dup);
  EXPECT_NE(message(dup).find("k1|uniform_0_1|64x64x64|1|fp32->fp32"), std::string::npos);
  EXPECT_THROW(read_results("/nonexistent/x.csv"), UsageError);
}

TEST(Compare, MarkdownEscapesTableCells) {
  std::vector<ResultRow> a = {row("k|1", 64, 1.0)}, b = a;
  b[0].note = "a|b";
  const std::string md = markdown_report(compare(a, b));
  EXPECT_NE(md.find("`k\\|1`"), std::string::npos) << md;
  EXPECT_NE(md.find("| note |  | a\\|b |"), std::string::npos) << md;
}

TEST(Compare, CommandWritesTheReportAtomicallyAndExits) {
  const fs::path d = fs::temp_directory_path() / ("gemmlab_compare_" + std::to_string(::getpid()));
  fs::create_directories(d);
  auto put = [&](const char* name, const std::string& text) {
    std::ofstream(d / name) << text;
    return (d / name).string();
  };
  const std::string a = put("a.csv", csv({row("k1", 64, 1.0)}));
  std::vector<ResultRow> changed = {row("k1", 64, 1.0)};
  changed[0].stats->max_abs_err = 0.5;
  const std::string b = put("b.csv", csv(changed));
  const std::string md = (d / "report.md").string();
  std::FILE* saved = stdout;
  stdout = std::fopen("/dev/null", "w");
  EXPECT_EQ(compare_command({a, a}), 0);
  EXPECT_EQ(compare_command({a, b, "--md", md}), 3);
  EXPECT_EQ(compare_command({a, b, "--ignore", "max_abs_err,reference"}), 0);
  EXPECT_EQ(compare_command({a, (d / "missing.csv").string()}), 2);
  EXPECT_EQ(compare_command({a, b, "--ignore", "kernel"}), 2);
  // A folder --md cannot make: a file stands where it would be (-o and --md make missing folders).
  EXPECT_EQ(compare_command({a, b, "--md", a + "/r.md"}), 2);
  std::fclose(stdout);
  stdout = saved;
  std::ifstream f(md);
  std::stringstream s;
  s << f.rdbuf();
  EXPECT_NE(s.str().find("| max_abs_err | 0 | 0.5 |"), std::string::npos) << s.str();
  EXPECT_FALSE(fs::exists(md + ".partial"));
  fs::remove_all(d);
}

TEST(Compare, ReportTablesStayShortEnoughForAPullRequest) {
  // 300 rows whose normwise, speed and reference engine changed, and 300 rows only in A and in B:
  // each table and list shows 80 lines and counts the rest, and the whole fits a GitHub comment.
  std::vector<ResultRow> a, b;
  for (int i = 0; i < 300; ++i) {
    a.push_back(row("a_kernel_with_a_long_registry_name_" + std::to_string(i), 4096, 1.0));
    b.push_back(a.back());
    b.back().stats->normwise *= 2;
    b.back().timing->time_ms_median = 2;
    b.back().reference = "gpu_int8_ozaki+mpfr_spot16";
    a.push_back(row("only_in_a_kernel_with_a_long_registry_name_" + std::to_string(i), 4096, 1.0));
    b.push_back(row("only_in_b_kernel_with_a_long_registry_name_" + std::to_string(i), 4096, 1.0));
  }
  const Comparison c = compare(a, b);
  EXPECT_EQ(c.accuracy_changed(), 300u);
  EXPECT_EQ(c.slower(), 300u);
  const std::string md = markdown_report(c);
  EXPECT_NE(md.find("... and 220 more changes."), std::string::npos);
  EXPECT_NE(md.find("... and 220 more rows."), std::string::npos);
  EXPECT_NE(md.find("- ... and 220 more\n"), std::string::npos);
  EXPECT_LT(md.size(), 65536u);
}
