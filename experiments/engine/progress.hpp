// Progress of a run: rows done out of total, elapsed time and an ETA.
//
// On a terminal the last line of stderr is a live bar, redrawn in place, with log lines printed
// above it; in logs and CI (stderr not a terminal) finished rows print plain lines: the first row
// of the run, the last, and otherwise at most one line a second (a dry run of thousands of rows
// would otherwise fill the log with them).
// The bar is written here rather than taken from a library: Debian packages no C++ progress-bar
// library (p-ranav/indicators would have to be vendored: a few thousand lines of headers), and what is needed is one
// line that must interleave with gemmlab's own log lines, which a pure format function plus
// "\r + clear line" does in a few lines that the tests can check.
#pragma once
#include <chrono>
#include <cstdio>
#include <functional>
#include <mutex>
#include <optional>
#include <string>

namespace gemmlab::engine {

struct ProgressSnapshot {
  std::size_t done = 0;     // rows finished, including those resumed from the journal
  std::size_t total = 0;    // rows in the plan (or shard)
  std::size_t resumed = 0;  // rows found finished in the journal: they took no time in this run
  double elapsed_s = 0;     // since this run started
  // What the ETA is projected from (eta_seconds): the rows finished in this run after its first
  // row, the seconds since that first row finished, the planned work of those rows, and the
  // planned work of the rows not finished yet.
  std::size_t rate_rows = 0;
  double rate_s = 0, rate_work = 0, work_left = 0;
};

// Rows that must finish after the first one before an ETA is shown.
constexpr std::size_t kEtaMinRows = 3;

// The time the rows left should take at the pace of this run's rows after its first:
//   rate_s / rate_work * work_left,
// nullopt until kEtaMinRows rows have finished after the first (or while their work is 0).
// Why not the mean over every row: the first row of a run carries its start-up (the CUDA module
// load, cuBLAS handles and heuristics, the first inputs and exact reference), seconds that no later
// row pays; averaged in, it made the first line of an 83 s run say "ETA 1h05m". So the first row's
// time is left out of the pace (it is already spent), and no estimate is shown from one or two
// rows. The pace is per unit of planned work (M N K, proportional to the row's flops), not per row,
// because a suite's rows are in plan order, sizes ascending (accumulation_vs_k: K from 256 to
// 16384), and a per-row pace taken on the small first sizes would under-estimate the large ones.
std::optional<double> eta_seconds(const ProgressSnapshot& s);
// "42s", "3m07s", "2h05m".
std::string format_duration(double seconds);
// "12/510 rows (2.4%), 3 resumed, elapsed 3m12s, ETA 1h02m"
std::string format_progress(const ProgressSnapshot& s);
// "[#####-------------------] " + format_progress(s); `width` is the bar's width in characters.
std::string format_progress_bar(const ProgressSnapshot& s, int width);

struct ProgressOptions {
  // Planned work of the rows this run computes (the rows not resumed), in the unit row_done's
  // `work` is given in (M N K); 0: one unit per row.
  double work = 0;
  // Seconds on a monotonic clock; default std::chrono::steady_clock (tests pass a fake clock).
  std::function<double()> clock;
};

class Progress {
 public:
  // live: redraw a bar in place; by default, when `out` is a terminal.
  Progress(std::size_t total, std::size_t resumed, std::FILE* out = stderr, std::optional<bool> live = std::nullopt,
           ProgressOptions opt = {});
  void row_done(double work = 1);      // thread-safe; work: the row's planned work (ProgressOptions::work)
  void log(const std::string& line);   // thread-safe: a line of the run's log, kept above the bar
  void finish();                       // ends the bar's line
  ProgressSnapshot snapshot() const;

 private:
  void draw_locked();
  ProgressSnapshot snapshot_unlocked() const;
  double now_s() const;
  std::FILE* out_;
  bool live_;
  std::size_t total_, resumed_, done_;
  std::function<double()> clock_;
  double start_s_;
  std::optional<double> last_line_s_;   // of the plain lines
  std::optional<double> first_row_s_;   // when this run's first row finished
  std::size_t rate_rows_ = 0;           // rows finished after it, and their work
  double rate_work_ = 0, work_left_ = 0;
  mutable std::mutex mu_;
};

}  // namespace gemmlab::engine
