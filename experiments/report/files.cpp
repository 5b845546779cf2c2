#include "experiments/report/files.hpp"

#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <charconv>
#include <cmath>
#include <cstring>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <stdexcept>

#include "experiments/engine/files.hpp"
#include "experiments/plan/plan.hpp"

namespace fs = std::filesystem;

namespace gemmlab {

namespace {

// The folder a file at `path` goes into ("." for a bare name).
fs::path folder_of(const std::string& path) {
  const fs::path p(path);
  return p.has_parent_path() ? p.parent_path() : fs::path(".");
}

}  // namespace

void check_writable(const std::string& path) {
  const fs::path dir = folder_of(path);
  std::error_code ec;
  // The folder, or where it would be made: its nearest ancestor that exists.
  fs::path existing = dir;
  while (!fs::exists(existing, ec) && existing.has_parent_path() && existing.parent_path() != existing)
    existing = existing.parent_path();
  if (!fs::exists(existing, ec)) existing = ".";
  const bool made = existing != dir;  // the folder is missing and would be made
  if (!fs::is_directory(existing, ec))
    throw UsageError("output folder '" + dir.string() + "' cannot be made: '" + existing.string() +
                     "' is a file, not a folder: choose another --out");
  if (::access(existing.c_str(), W_OK) != 0)
    throw UsageError(made ? "output folder '" + dir.string() + "' cannot be made: '" + existing.string() +
                                "' is not writable: choose another --out"
                          : "output folder '" + dir.string() + "' is not writable: choose another --out");
  if (fs::is_directory(path, ec)) throw UsageError("output path '" + path + "' is a folder: give a file name ending in .csv");
}

void make_output_folder(const std::string& path) {
  check_writable(path);
  const fs::path dir = folder_of(path);
  std::error_code ec;
  if (fs::is_directory(dir, ec)) return;
  fs::create_directories(dir, ec);
  if (ec || !fs::is_directory(dir))
    throw UsageError("cannot make the output folder '" + dir.string() + "': " + ec.message() + ": choose another --out");
}

AtomicFile::AtomicFile(std::string path) : path_(std::move(path)), partial_(path_ + ".partial") {
  make_output_folder(path_);
  out_.open(partial_, std::ios::binary | std::ios::trunc);
  if (!out_) throw UsageError("cannot create '" + partial_ + "': check permissions and free space");
}

AtomicFile::~AtomicFile() {
  if (!committed_) {
    out_.close();
    std::remove(partial_.c_str());
  }
}

void AtomicFile::commit() {
  out_.flush();
  if (!out_) throw std::runtime_error("write to '" + partial_ + "' failed (disk full?)");
  out_.close();
  // On disk before it takes the final name, and the rename itself made durable: a crash leaves the
  // old file or the whole new one (as engine::write_durably does for the journal's files).
  const int fd = ::open(partial_.c_str(), O_RDONLY | O_CLOEXEC);
  const bool synced = fd >= 0 && ::fsync(fd) == 0;
  if (fd >= 0) ::close(fd);
  if (!synced) throw std::runtime_error("cannot flush '" + partial_ + "' to disk: " + std::strerror(errno));
  if (std::rename(partial_.c_str(), path_.c_str()) != 0)
    throw std::runtime_error("cannot rename '" + partial_ + "' to '" + path_ + "'");
  committed_ = true;
  engine::fsync_parent(path_);
}

std::string csv_escape(const std::string& s) {
  if (s.find_first_of(",\"\n\r") == std::string::npos) return s;
  std::string out = "\"";
  for (char c : s) {
    if (c == '"') out += '"';
    out += c;
  }
  return out + "\"";
}

// printf's "%.{p}g" for the smallest p in 6..17 whose text reads back as x. No text of fewer significant
// digits than the shortest round trip (to_chars without a precision) reads back as x, so the search starts
// there: one or two conversions, where printing and reading back each p from 6 took 2.5 us a number, 0.1 ms
// of a result row (most of a worker's time to send it). to_chars with a precision is printf's %g in the "C"
// locale, byte for byte; from_chars and strtod both round correctly.
std::string fmt_double(double x) {
  if (std::isnan(x)) return "nan";
  if (std::isinf(x)) return x > 0 ? "inf" : "-inf";
  char shortest[64];
  const char* const end = std::to_chars(shortest, shortest + sizeof shortest, x, std::chars_format::scientific).ptr;
  int digits = 0, seen = 0;  // significant digits, before the exponent up to the last non-zero ("-1.25e-07": 3)
  for (const char* c = shortest; c != end && *c != 'e'; ++c) {
    if (*c < '0' || *c > '9') continue;
    ++seen;
    if (*c != '0') digits = seen;
  }
  char buf[64];
  std::to_chars_result r{};
  for (int prec = std::max(6, digits); prec <= 17; ++prec) {
    r = std::to_chars(buf, buf + sizeof buf, x, std::chars_format::general, prec);
    double back = 0;
    if (std::from_chars(buf, r.ptr, back).ec != std::errc()) back = std::strtod(std::string(buf, r.ptr).c_str(), nullptr);
    if (back == x) break;
  }
  return std::string(buf, r.ptr);
}

CsvWriter::CsvWriter(const std::string& path, std::vector<std::string> columns) : file_(path), ncols_(columns.size()) {
  row(columns);
}

void CsvWriter::row(const std::vector<std::string>& fields) {
  if (fields.size() != ncols_)
    throw std::logic_error("CSV row has " + std::to_string(fields.size()) + " fields, header has " +
                           std::to_string(ncols_));
  auto& o = file_.stream();
  for (std::size_t i = 0; i < fields.size(); ++i) o << (i ? "," : "") << csv_escape(fields[i]);
  o << '\n';
}

void write_npy(const std::string& path, const std::vector<double>& v, int rows, int cols) {
  if (static_cast<std::size_t>(rows) * cols != v.size()) throw std::logic_error("write_npy: shape does not match data");
  AtomicFile f(path);
  std::string header = "{'descr': '<f8', 'fortran_order': False, 'shape': (" + std::to_string(rows) + ", " +
                       std::to_string(cols) + "), }";
  // magic(6) + version(2) + header_len(2) + header, padded with spaces to a multiple of 64, ending in \n
  std::size_t total = 10 + header.size() + 1;
  header.append((64 - total % 64) % 64, ' ');
  header += '\n';
  auto& o = f.stream();
  o.write("\x93NUMPY\x01\x00", 8);
  const unsigned short len = static_cast<unsigned short>(header.size());
  const char lenb[2] = {static_cast<char>(len & 0xFF), static_cast<char>(len >> 8)};
  o.write(lenb, 2);
  o.write(header.data(), static_cast<std::streamsize>(header.size()));
  o.write(reinterpret_cast<const char*>(v.data()), static_cast<std::streamsize>(v.size() * sizeof(double)));
  f.commit();
}

}  // namespace gemmlab
