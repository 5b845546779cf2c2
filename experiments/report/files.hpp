// Result files written whole or not at all: each is written to "<path>.partial", synced to disk and
// renamed onto its final name only by commit() (the folder synced after), so an interrupted or
// failed run, or a crash of the machine, never leaves a half-written CSV, .npy or metadata file
// under the name a reader looks for.
#pragma once
#include <cstdint>
#include <fstream>
#include <string>
#include <vector>

namespace gemmlab {

class AtomicFile {
 public:
  explicit AtomicFile(std::string path);  // makes the folder if missing; throws UsageError if it cannot
  ~AtomicFile();                          // removes the partial file unless committed
  std::ofstream& stream() { return out_; }
  void commit();                          // flush, fsync, rename, fsync the folder; throws on I/O failure
  const std::string& path() const { return path_; }

 private:
  std::string path_, partial_;
  std::ofstream out_;
  bool committed_ = false;
};

// Checks (without leaving anything behind) that a file can be created at `path`: its folder exists and
// is writable, or is missing and can be made (its nearest existing ancestor is a writable folder).
// Throws UsageError naming the folder and what to do. Commands check before they run anything.
void check_writable(const std::string& path);
// Makes the folder of `path` (and its parents) where missing, once the command writes: every `-o`
// names a file whose folder need not exist. Throws UsageError as check_writable does.
void make_output_folder(const std::string& path);

// Tidy CSV: a fixed header, one row per observation. Fields are quoted only when needed.
class CsvWriter {
 public:
  CsvWriter(const std::string& path, std::vector<std::string> columns);
  void row(const std::vector<std::string>& fields);  // must have as many fields as columns
  void commit() { file_.commit(); }

 private:
  AtomicFile file_;
  std::size_t ncols_;
};

std::string csv_escape(const std::string& s);
// Text that reads back as the same double: printf's "%.{p}g" for the smallest p in 6..17 that does
// ("nan", "inf", "-inf" for non-finite).
std::string fmt_double(double x);

// A (rows, cols) float64 C-order array in NumPy's .npy format (version 1.0), written atomically.
void write_npy(const std::string& path, const std::vector<double>& v, int rows, int cols);

}  // namespace gemmlab
