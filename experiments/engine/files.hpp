// Durable file primitives the engine is built on: CSV records that may be cut short by a crash,
// and whole files that appear under their name only when complete and on disk.
#pragma once
#include <string>
#include <vector>

namespace gemmlab::engine {

// One CSV line for `fields` (quoted only where needed, as experiments/report/files.hpp does), ending in '\n'.
std::string csv_line(const std::vector<std::string>& fields);

// Splits CSV text into records. A field may be quoted and then hold commas, quotes ("") and
// newlines, so a record is complete only at a newline outside quotes (\n or \r\n). A final record without one
// was cut short by a crash: it is not returned, and complete_bytes ends before it.
struct CsvRecords {
  std::vector<std::vector<std::string>> records;
  std::vector<std::size_t> starts;  // byte offset where each record begins
  std::size_t complete_bytes = 0;  // length of the prefix holding exactly `records`
  bool torn_tail = false;          // bytes after complete_bytes were dropped
};
CsvRecords parse_csv(const std::string& text);

// The whole file; throws UsageError naming the file if it cannot be read.
std::string read_file(const std::string& path);

// Writes `content` to "<path>.partial", fsyncs it, renames it onto `path` and fsyncs the folder:
// a reader (or a crash) sees either no file or the whole of it. Throws on I/O failure, leaving no
// partial file behind.
void write_durably(const std::string& path, const std::string& content);

// fsync of the folder holding `path`, so that a create, rename or unlink there survives a crash.
void fsync_parent(const std::string& path);

// Removes `path` if it exists and makes the removal durable; throws if it cannot.
void remove_durably(const std::string& path);

}  // namespace gemmlab::engine
