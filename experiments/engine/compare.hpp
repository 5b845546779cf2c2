// `gemmlab compare A.csv B.csv`: what changed between two result CSVs, as a markdown report for a
// pull request and an exit status for CI.
//
// Rows are matched by identity (row_identity: kernel, distribution, M x N x K, seed, input and
// output format). For each matched row:
//  * accuracy: every statistics column (GEMMLAB_ERROR_STATS_FIELDS) and the status, compared as the
//    text the report layer writes (fmt_double: the shortest text that reads back as the same
//    double, so equal text is equal bits, and a value read from an older writer is normalised by
//    reading it first). A value that differs is a change, with B - A and (B - A) / |A|;
//  * speed: B / A of time_ms_median against the noise of the two runs (Noise, timing_verdict).
// Only the columns both files have are compared (an older CSV lacks the newer statistics: they are
// listed as not compared, never reported as changed); --ignore leaves out more.
//
// Exit status (compare_command): 0 nothing changed beyond the noise; 3 an accuracy change (any
// statistic or status differs); 4 a matched row is slower beyond the noise; 3 wins over 4; 2 bad
// input (a missing file, a file that is not a gemmlab result CSV, key columns missing, two rows
// with one identity, an unknown option), with a message saying which.
#pragma once
#include <optional>
#include <string>
#include <vector>

#include "experiments/report/result.hpp"

namespace gemmlab::engine {

// One result CSV: its header and each row, parsed by the report layer (from_fields).
struct ResultTable {
  std::string name;                  // the file, for messages and the report
  std::vector<std::string> columns;  // the header as written
  std::vector<ResultRow> rows;       // in file order
  bool has(const std::string& column) const;
};

// Parses result-CSV text; `name` names it in messages. Throws UsageError when it is empty or cut
// short, lacks a key column or `status` (not a gemmlab result CSV), has a row of the wrong width or
// a value that does not parse (the row and column named), or two rows with one identity.
ResultTable parse_results(const std::string& text, const std::string& name);
// The same from a file (UsageError if it cannot be read).
ResultTable read_results(const std::string& path);

// What compare matches rows by: ResultRow::key() (kernel, distribution, MxNxK, seed) and the input
// and output formats, because a kernel name given to `gemmlab evaluate` (e.g. torch.matmul) may be
// used for several formats. "kernel|distribution|MxNxK|seed|input->output".
std::string row_identity(const ResultRow& r);

struct CompareOptions {
  std::vector<std::string> ignore;  // columns left out (any column but the identity's)
  double slowdown_threshold = 0;    // the least relative slowdown that counts (0.02: 2%), noise or not
};

// The timing noise of one row, relative to its median: time_ms_iqr / time_ms_median (the spread of
// the middle half of the repetitions), or (time_ms_max - time_ms_min) / time_ms_median where the
// CSV has no time_ms_iqr column (an older gemmlab): wider, so a slowdown has to be larger to count.
struct Noise {
  std::optional<double> rel;  // absent: no figure (one time given, e.g. by `gemmlab evaluate`)
  bool from_range = false;    // (max - min) / median
};
Noise timing_noise(const ResultRow& r, bool has_iqr_column);

enum class TimingVerdict {
  not_compared,  // a row without a time on either side, or time_ms_median ignored or missing
  no_noise,      // a time on both sides but no noise figure on one: reported, not judged
  within_noise,
  slower,        // B / A - 1 > allowed
  faster,        // 1 - B / A > allowed
};
const char* to_string(TimingVerdict v);

// Whether B / A is beyond the noise: allowed = max(noise_A + noise_B, threshold), slower when
// B / A - 1 > allowed, faster when 1 - B / A > allowed. To first order the ratio of two medians moves
// by the sum of their relative errors; taking each run's whole interquartile spread for that error
// (not the far smaller standard error of its median) flags only changes larger than the scatter of
// single repetitions, so a slowdown that counts is one a reader can see in the raw times.
TimingVerdict timing_verdict(double ratio, const Noise& a, const Noise& b, double threshold, double* allowed = nullptr);

struct FieldChange {
  std::string column;
  std::string a, b;                 // the values as the report layer writes them
  std::optional<double> abs, rel;   // B - A and (B - A) / |A| for numbers (rel absent where A = 0)
};

struct RowComparison {
  std::string identity;
  ResultRow a, b;
  std::vector<FieldChange> accuracy;  // statistics and status that differ
  std::vector<FieldChange> other;     // descriptive columns that differ (family, reference, note, ...)
  int stats_identical = 0;            // statistics columns compared and bit-identical
  std::optional<double> ratio;        // B / A of time_ms_median
  Noise noise_a, noise_b;
  double allowed = 0;                 // max(noise_a + noise_b, threshold)
  TimingVerdict timing = TimingVerdict::not_compared;
};

struct Comparison {
  std::string name_a, name_b;
  std::size_t rows_a = 0, rows_b = 0;
  std::vector<RowComparison> rows;          // matched, in A's order
  std::vector<std::string> only_a, only_b;  // identities
  std::vector<std::string> stats_compared;  // statistics columns both files have, not ignored
  std::vector<std::string> only_in_a, only_in_b, ignored;  // columns not compared, and why
  bool timing_compared = false;             // time_ms_median in both and not ignored
  bool iqr_a = false, iqr_b = false;        // each file's noise is time_ms_iqr (else max - min)
  double slowdown_threshold = 0;
  std::size_t accuracy_changed() const;
  std::size_t slower() const;
  int exit_status() const;  // 3 if accuracy_changed(), else 4 if slower(), else 0
};

// Throws UsageError for an --ignore naming an identity column or a column gemmlab does not write,
// or a negative or non-finite threshold.
void check_options(const CompareOptions& opt);

// Throws what check_options throws, and UsageError when no row of A matches a row of B (nothing to
// compare: different experiments).
Comparison compare_results(const ResultTable& a, const ResultTable& b, const CompareOptions& opt = {});

// The report: a summary line, the changed rows, the rows only in A or B, what was not compared.
std::string markdown_report(const Comparison& c);

// `gemmlab compare A.csv B.csv [--md FILE] [--ignore COLS] [--slowdown-threshold X]`: args without
// the program and subcommand names. Prints the report; with --md also writes it to FILE atomically.
// Returns the exit status above.
int compare_command(const std::vector<std::string>& args);

}  // namespace gemmlab::engine
