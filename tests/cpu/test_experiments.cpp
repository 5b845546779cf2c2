// The plain-C++ parts of the CLI: sizes, suite files, atomic CSV and .npy output.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <random>
#include <sstream>
#include <utility>
#include <cstring>
#include <unistd.h>

#include "experiments/report/files.hpp"
#include "experiments/report/result.hpp"
#include "experiments/plan/plan.hpp"

namespace fs = std::filesystem;
using namespace gemmlab;

namespace {

fs::path temp_dir() {
  fs::path d = fs::temp_directory_path() / ("gemmlab_test_" + std::to_string(::getpid()));
  fs::create_directories(d);
  return d;
}

std::string slurp(const fs::path& p) {
  std::ifstream f(p, std::ios::binary);
  std::stringstream s;
  s << f.rdbuf();
  return s.str();
}

std::string write(const fs::path& p, const std::string& text) {
  std::ofstream(p) << text;
  return p.string();
}

TEST(Plan, ParsesSizes) {
  Size a = parse_size("4096");
  EXPECT_EQ(a.M, 4096);
  EXPECT_EQ(a.N, 4096);
  EXPECT_EQ(a.K, 4096);
  Size b = parse_size("100x36x520");
  EXPECT_EQ(b.M, 100);
  EXPECT_EQ(b.N, 36);
  EXPECT_EQ(b.K, 520);
  EXPECT_EQ(b.str(), "100x36x520");
  for (const char* bad : {"", "12x", "x1x2", "1x2", "-4", "0", "1x0x3", "abc", "1.5"})
    EXPECT_THROW(parse_size(bad), UsageError) << bad;
}

TEST(Plan, LoadsAValidSuite) {
  auto d = temp_dir();
  auto p = write(d / "s.toml",
                 "name = \"mine\"\nkernels = [\"sgemm_01_naive\", \"family:cublas\"]\ndistributions = [\"normal_0_1\"]\n"
                 "sizes = [[64, 32, 16], 128]\nseeds = [3, 4]\nreps = 7\nwarmup = 0\nreference = \"mpfr\"\n");
  RunPlan plan = load_suite(p);
  EXPECT_EQ(plan.name, "mine");
  ASSERT_EQ(plan.kernels.size(), 2u);
  EXPECT_EQ(plan.kernels[1], "family:cublas");
  ASSERT_EQ(plan.sizes.size(), 2u);
  EXPECT_EQ(plan.sizes[0].str(), "64x32x16");
  EXPECT_EQ(plan.sizes[1].str(), "128x128x128");
  EXPECT_EQ(plan.seeds, (std::vector<std::uint64_t>{3, 4}));
  EXPECT_EQ(plan.reps, 7);
  EXPECT_EQ(plan.warmup, 0);
  EXPECT_EQ(plan.reference, "mpfr");
}

TEST(Plan, RejectsMalformedSuitesWithTheReason) {
  auto d = temp_dir();
  struct Case {
    const char* text;
    const char* says;
  } cases[] = {
      {"kernels = [\"a\"\n", "not valid TOML"},
      {"kernal = [\"a\"]\n", "'kernal' is not a suite key"},
      {"kernels = \"a\"\n", "'kernels' must be an array"},
      {"kernels = []\n", "'kernels' must not be empty"},
      {"sizes = [[1, 2]]\n", "'sizes' entries must be"},
      {"sizes = [[1, 2, 0]]\n", "'sizes' must be between 1"},
      {"reps = 0\n", "'reps' must be between 1"},
      {"reps = 2.5\n", "'reps' must be an integer"},
      {"seeds = [-1]\n", "'seeds' must be between 0"},
      {"reference = \"fast\"\n", "reference 'fast' is not known"},
      {"name = \"a b\"\n", "'name' must be"},
  };
  for (const auto& c : cases) {
    auto p = write(d / "bad.toml", c.text);
    try {
      load_suite(p);
      ADD_FAILURE() << "accepted: " << c.text;
    } catch (const UsageError& e) {
      EXPECT_NE(std::string(e.what()).find(c.says), std::string::npos) << e.what() << " | wanted: " << c.says;
      EXPECT_NE(std::string(e.what()).find(p), std::string::npos) << "message must name the file";
    }
  }
}

TEST(Plan, FindsShippedSuitesAndRejectsUnknownOnes) {
  EXPECT_NO_THROW(find_suite("default"));
  EXPECT_NO_THROW(load_suite(find_suite("default")));
  EXPECT_NO_THROW(load_suite(find_suite("smoke")));
  EXPECT_THROW(find_suite("no_such_suite_anywhere"), UsageError);
}

TEST(Output, CsvQuotesOnlyWhenNeededAndCommitsAtomically) {
  auto d = temp_dir();
  fs::path p = d / "r.csv";
  {
    CsvWriter w(p.string(), {"a", "b", "c"});
    w.row({"1", "x,y", "say \"hi\""});
    EXPECT_FALSE(fs::exists(p)) << "nothing under the final name before commit";
    EXPECT_TRUE(fs::exists(p.string() + ".partial"));
    w.commit();
  }
  EXPECT_EQ(slurp(p), "a,b,c\n1,\"x,y\",\"say \"\"hi\"\"\"\n");
  EXPECT_FALSE(fs::exists(p.string() + ".partial"));
}

TEST(Output, AbandonedCsvLeavesNothing) {
  auto d = temp_dir();
  fs::path p = d / "abandoned.csv";
  {
    CsvWriter w(p.string(), {"a"});
    w.row({"1"});
  }  // destroyed without commit, as when a run fails
  EXPECT_FALSE(fs::exists(p));
  EXPECT_FALSE(fs::exists(p.string() + ".partial"));
}

TEST(Output, RowWidthMustMatchHeader) {
  auto d = temp_dir();
  CsvWriter w((d / "w.csv").string(), {"a", "b"});
  EXPECT_THROW(w.row({"1"}), std::logic_error);
}

TEST(Output, UnwritableFolderIsAUsageError) {
  // A folder that cannot be made: a file stands in its path (a missing folder is made, even as root).
  auto d = temp_dir();
  const fs::path file = d / "a_file";
  std::ofstream(file) << "not a folder\n";
  const std::string out = (file / "folder" / "x.csv").string();
  try {
    check_writable(out);
    ADD_FAILURE() << "check_writable accepted " << out;
  } catch (const UsageError& e) {
    EXPECT_NE(std::string(e.what()).find("is a file, not a folder"), std::string::npos) << e.what();
  }
  EXPECT_THROW(CsvWriter(out, {"a"}), UsageError);
}

TEST(Output, MissingFoldersOfTheOutputAreMade) {
  auto d = temp_dir();
  const fs::path out = d / "made" / "deeper" / "x.csv";
  check_writable(out.string());  // checks only: nothing made yet
  EXPECT_FALSE(fs::exists(d / "made"));
  CsvWriter w(out.string(), {"a"});
  w.row({"1"});
  w.commit();
  EXPECT_TRUE(fs::is_regular_file(out));
}

TEST(Output, DoublesRoundTrip) {
  for (double x : {0.1, 1.0 / 3.0, -2.5e-300, 4.9e-324, 1e308, 123456789.0, -0.0, 5e-8})
    EXPECT_EQ(std::strtod(fmt_double(x).c_str(), nullptr), x) << fmt_double(x);
  EXPECT_EQ(fmt_double(0.5), "0.5");
  EXPECT_EQ(fmt_double(NAN), "nan");
  EXPECT_EQ(fmt_double(-INFINITY), "-inf");
}

// Every number of the CSV, the journal and a worker's row message is printf's "%.{p}g" for the smallest p in
// 6..17 that reads back as the same double: the definition, printed and read back as written here. fmt_double
// computes it faster (to_chars, from the shortest round trip's digits); a file written before must not change
// by a byte. Seed 20261130: bit patterns of every exponent, statistics-like values, decimals of 1 to 17 digits
// and their neighbours, powers of two (subnormals included) and their neighbours, integers.
static std::string printf_g_that_reads_back(double x) {
  char buf[64];
  for (int p = 6; p <= 17; ++p) {
    std::snprintf(buf, sizeof buf, "%.*g", p, x);
    if (std::strtod(buf, nullptr) == x) break;
  }
  return buf;
}

TEST(Output, DoublesArePrintfsShortestGFormOfSixToSeventeenDigitsThatReadsBack) {
  const std::pair<double, const char*> pinned[] = {
      {0.0, "0"},
      {-0.0, "-0"},
      {0.1, "0.1"},
      {1.0 / 3, "0.3333333333333333"},
      {0.1 + 0.2, "0.30000000000000004"},
      {2.0 / 3 * 1e-7, "6.666666666666665e-08"},
      {-2.5e-300, "-2.5e-300"},
      {4.9e-324, "4.94066e-324"},  // six digits at least, where fewer would read back
      {std::ldexp(1.0, -1022) - std::ldexp(1.0, -1074), "2.225073858507201e-308"},
      {2.2250738585072014e-308, "2.2250738585072014e-308"},
      {1.7976931348623157e308, "1.7976931348623157e+308"},
      {1e308, "1e+308"},
      {1e16, "1e+16"},
      {9007199254740993.0, "9007199254740992"},
      {123456789.0, "123456789"},
      {123456.5, "123456.5"},
      {1e-5, "1e-05"},
      {0.000123456, "0.000123456"},
  };
  for (const auto& [x, text] : pinned) EXPECT_EQ(fmt_double(x), text) << std::hexfloat << x;

  std::mt19937_64 g(20261130);
  std::uniform_real_distribution<double> u(-1, 1);
  std::uniform_int_distribution<int> digits(1, 17), e10(-320, 308);
  int differ = 0, checked = 0;
  auto check = [&](double x) {
    ++checked;
    if (fmt_double(x) != printf_g_that_reads_back(x) && ++differ <= 10)
      ADD_FAILURE() << std::hexfloat << x << ": " << fmt_double(x) << ", printf " << printf_g_that_reads_back(x);
  };
  for (int i = 0; i < 20000; ++i) {
    const std::uint64_t bits = g();
    double x;
    std::memcpy(&x, &bits, sizeof x);
    if (std::isfinite(x)) check(x);
    check(u(g) * std::pow(10.0, e10(g) / 10));
    char dec[64];
    std::snprintf(dec, sizeof dec, "%.*e", digits(g) - 1, u(g) * 9.999);
    const double d = std::strtod(dec, nullptr) * std::pow(10.0, e10(g));
    check(d), check(std::nextafter(d, INFINITY)), check(std::nextafter(d, -INFINITY));
    const double p2 = std::ldexp(1.0, static_cast<int>(g() % 2098) - 1074);
    check(p2), check(std::nextafter(p2, 0.0)), check(std::nextafter(p2, INFINITY));
    check(static_cast<double>(static_cast<std::int64_t>(g() >> (g() % 64))));
  }
  EXPECT_EQ(differ, 0) << "of " << checked << " doubles";
}

// time_ms_iqr: numpy's default percentiles (np.percentile(t, [25, 75]), method "linear").
TEST(Output, TimingNoiseIsTheInterquartileRangeOfTheRepetitions) {
  EXPECT_EQ(interquartile_range({1, 2, 3, 4, 5}), 2.0);            // positions 1 and 3: 2 and 4
  EXPECT_EQ(interquartile_range({4, 1, 3, 2}), 1.5);               // 1.75 and 3.25, order does not matter
  EXPECT_EQ(interquartile_range({0.5, 0.5, 0.5, 8}), 1.875);       // 0.5 and 0.5 + 0.25 * 7.5: one outlier
  EXPECT_EQ(interquartile_range({3}), 0.0);
  EXPECT_TRUE(std::isnan(interquartile_range({})));
}

// The new columns are written and read back by name: an infinite SNR, the noise; and a CSV written
// before them (no such columns) still reads.
TEST(Output, NewColumnsRoundTripAndOlderHeadersStillRead) {
  ResultRow r;
  r.kernel = "k";
  r.M = r.N = r.K = 8;
  r.status = Status::passed;
  ErrorStats s;
  s.snr_db = INFINITY;
  s.calc_diff = 0x1p-50;
  s.max_abs_err = 0.25;
  s.assert_close = 1;
  s.assert_close_mismatches = 0;
  r.stats = s;
  Timing t;
  t.time_ms_median = 1.5;
  t.time_ms_iqr = 0.0625;
  r.timing = t;
  const std::vector<std::string>& cols = result_columns();
  const std::vector<std::string> f = to_fields(r);
  auto at = [&](const char* c) { return f[static_cast<std::size_t>(std::find(cols.begin(), cols.end(), c) - cols.begin())]; };
  EXPECT_EQ(at("snr_db"), "inf");
  EXPECT_EQ(at("time_ms_iqr"), "0.0625");
  EXPECT_EQ(at("assert_close"), "1");
  const ResultRow back = from_fields(cols, f);
  EXPECT_EQ(back.stats->snr_db, INFINITY);
  EXPECT_EQ(back.stats->calc_diff, 0x1p-50);
  EXPECT_EQ(back.stats->max_abs_err, 0.25);
  EXPECT_EQ(back.stats->assert_close, 1);
  EXPECT_EQ(back.timing->time_ms_iqr, 0.0625);
  EXPECT_EQ(to_fields(back), f);
  // An older header without the new columns: the rest reads as before.
  std::vector<std::string> old_cols, old_f;
  for (std::size_t i = 0; i < cols.size(); ++i)
    if (cols[i] != "snr_db" && cols[i] != "time_ms_iqr" && cols[i] != "assert_close") {
      old_cols.push_back(cols[i]);
      old_f.push_back(f[i]);
    }
  const ResultRow old = from_fields(old_cols, old_f);
  EXPECT_EQ(old.stats->max_abs_err, 0.25);
  EXPECT_EQ(old.timing->time_ms_median, 1.5);
}

TEST(Output, SplitColumnsRoundTripAndRefuseMalformedValues) {
  ResultRow r;
  r.kernel = "triton_fp32_bf16x6";
  r.numerics.compute = Format::bf16;
  r.numerics.split = OperandSplit{.pieces = 3, .products = static_cast<std::uint16_t>(
                                                   OperandSplit::bit(0, 0) | OperandSplit::bit(1, 1) | OperandSplit::bit(2, 0)),
                                  .rounding = Rounding::nearest_even};
  const std::vector<std::string>& cols = result_columns();
  std::vector<std::string> f = to_fields(r);
  const auto pos = [&](const char* c) { return static_cast<std::size_t>(std::find(cols.begin(), cols.end(), c) - cols.begin()); };
  EXPECT_EQ(f[pos("split_pieces")], "3");
  EXPECT_EQ(f[pos("split_products")], "00 11 20");
  const ResultRow back = from_fields(cols, f);
  EXPECT_EQ(back.numerics.split.pieces, 3);
  EXPECT_EQ(back.numerics.split.products, r.numerics.split.products);
  // Not split: 1 and empty.
  EXPECT_EQ(to_fields(ResultRow{})[pos("split_products")], "");
  // Malformed: the column and the value are named.
  for (const auto& [column, value] : {std::pair{"split_pieces", "4"}, std::pair{"split_pieces", "0"},
                                      std::pair{"split_products", "0x"}, std::pair{"split_products", "03"}}) {
    std::vector<std::string> bad = f;
    bad[pos(column)] = value;
    try {
      from_fields(cols, bad);
      ADD_FAILURE() << column << " = " << value << " was read";
    } catch (const std::invalid_argument& e) {
      EXPECT_NE(std::string(e.what()).find(column), std::string::npos) << e.what();
    }
  }
  // Each column well formed, the two disagreeing: a pair beyond the pieces, products without a split,
  // a split with none; refused naming both columns.
  for (const auto& [pieces, products] : {std::pair{"2", "00 11 20"}, std::pair{"1", "00"}, std::pair{"2", ""}}) {
    std::vector<std::string> bad = f;
    bad[pos("split_pieces")] = pieces;
    bad[pos("split_products")] = products;
    try {
      from_fields(cols, bad);
      ADD_FAILURE() << pieces << " pieces with products '" << products << "' were read";
    } catch (const std::invalid_argument& e) {
      const std::string what = e.what();
      EXPECT_NE(what.find("split_pieces"), std::string::npos) << what;
      EXPECT_NE(what.find("split_products"), std::string::npos) << what;
    }
  }
}

TEST(Output, NpyHeaderAndDataAreWhatNumpyReads) {
  auto d = temp_dir();
  fs::path p = d / "m.npy";
  std::vector<double> v = {1.0, -2.0, 0.5, 3.25, 1e-300, -0.0};
  write_npy(p.string(), v, 2, 3);
  std::string s = slurp(p);
  ASSERT_GE(s.size(), 10u);
  EXPECT_EQ(s.substr(0, 8), std::string("\x93NUMPY\x01\x00", 8));
  const std::size_t hlen = static_cast<unsigned char>(s[8]) | (static_cast<unsigned char>(s[9]) << 8);
  EXPECT_EQ((10 + hlen) % 64, 0u) << "header must align the data to 64 bytes";
  const std::string header = s.substr(10, hlen);
  EXPECT_NE(header.find("'descr': '<f8'"), std::string::npos);
  EXPECT_NE(header.find("'fortran_order': False"), std::string::npos);
  EXPECT_NE(header.find("'shape': (2, 3)"), std::string::npos);
  EXPECT_EQ(header.back(), '\n');
  ASSERT_EQ(s.size(), 10 + hlen + v.size() * 8);
  for (std::size_t i = 0; i < v.size(); ++i) {
    double x;
    std::memcpy(&x, s.data() + 10 + hlen + 8 * i, 8);
    EXPECT_EQ(std::signbit(x), std::signbit(v[i]));
    EXPECT_EQ(x, v[i]);
  }
  EXPECT_THROW(write_npy((d / "bad.npy").string(), v, 4, 4), std::logic_error);
}

}  // namespace
