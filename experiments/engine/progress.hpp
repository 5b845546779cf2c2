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
#include <mutex>
#include <optional>
#include <string>

namespace gemmlab::engine {

struct ProgressSnapshot {
  std::size_t done = 0;     // rows finished, including those resumed from the journal
  std::size_t total = 0;    // rows in the plan (or shard)
  std::size_t resumed = 0;  // rows found finished in the journal: they took no time in this run
  double elapsed_s = 0;     // since this run started
};

// Mean time per row finished in this run times the rows left; nullopt before the first such row.
std::optional<double> eta_seconds(const ProgressSnapshot& s);
// "42s", "3m07s", "2h05m".
std::string format_duration(double seconds);
// "12/510 rows (2.4%), 3 resumed, elapsed 3m12s, ETA 1h02m"
std::string format_progress(const ProgressSnapshot& s);
// "[#####-------------------] " + format_progress(s); `width` is the bar's width in characters.
std::string format_progress_bar(const ProgressSnapshot& s, int width);

class Progress {
 public:
  // live: redraw a bar in place; by default, when `out` is a terminal.
  Progress(std::size_t total, std::size_t resumed, std::FILE* out = stderr, std::optional<bool> live = std::nullopt);
  void row_done();                     // thread-safe
  void log(const std::string& line);   // thread-safe: a line of the run's log, kept above the bar
  void finish();                       // ends the bar's line
  ProgressSnapshot snapshot() const;

 private:
  void draw_locked();
  ProgressSnapshot snapshot_unlocked() const;
  std::FILE* out_;
  bool live_;
  std::size_t total_, resumed_, done_;
  std::chrono::steady_clock::time_point start_;
  std::optional<std::chrono::steady_clock::time_point> last_line_;  // of the plain lines
  mutable std::mutex mu_;
};

}  // namespace gemmlab::engine
