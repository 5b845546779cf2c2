#include "experiments/engine/files.hpp"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <stdexcept>

#include "experiments/report/files.hpp"
#include "experiments/plan/plan.hpp"

namespace fs = std::filesystem;

namespace gemmlab::engine {

std::string csv_line(const std::vector<std::string>& fields) {
  std::string s;
  for (std::size_t i = 0; i < fields.size(); ++i) s += (i ? "," : "") + csv_escape(fields[i]);
  return s + "\n";
}

CsvRecords parse_csv(const std::string& text) {
  CsvRecords out;
  std::vector<std::string> rec;
  std::string field;
  bool quoted = false;
  std::size_t start = 0;
  for (std::size_t i = 0; i < text.size(); ++i) {
    const char c = text[i];
    if (quoted) {
      if (c != '"') field += c;
      else if (i + 1 < text.size() && text[i + 1] == '"') field += '"', ++i;
      else quoted = false;
    } else if (c == '"') {
      quoted = true;
    } else if (c == ',') {
      rec.push_back(std::move(field)), field.clear();
    } else if (c == '\r' && i + 1 < text.size() && text[i + 1] == '\n') {
      // CRLF (RFC 4180, Python's csv module): the \n that follows ends the record; the \r is no field's
    } else if (c == '\n') {
      rec.push_back(std::move(field)), field.clear();
      out.records.push_back(std::move(rec)), rec.clear();
      out.starts.push_back(start);
      out.complete_bytes = start = i + 1;
    } else {
      field += c;
    }
  }
  out.torn_tail = out.complete_bytes < text.size();
  return out;
}

std::string read_file(const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  if (!f) throw UsageError("cannot read '" + path + "': " + std::strerror(errno));
  std::stringstream s;
  s << f.rdbuf();
  return s.str();
}

void fsync_parent(const std::string& path) {
  fs::path dir = fs::path(path).has_parent_path() ? fs::path(path).parent_path() : fs::path(".");
  int fd = ::open(dir.c_str(), O_RDONLY | O_DIRECTORY);
  if (fd < 0) throw std::runtime_error("cannot open folder '" + dir.string() + "' to sync it: " + std::strerror(errno));
  const int rc = ::fsync(fd);
  ::close(fd);
  if (rc != 0) throw std::runtime_error("fsync of folder '" + dir.string() + "' failed: " + std::strerror(errno));
}

void write_durably(const std::string& path, const std::string& content) {
  const std::string partial = path + ".partial";
  int fd = ::open(partial.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (fd < 0) throw UsageError("cannot create '" + partial + "': " + std::strerror(errno) + "; check the folder's permissions");
  std::size_t done = 0;
  while (done < content.size()) {
    ssize_t n = ::write(fd, content.data() + done, content.size() - done);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) {
      const std::string why = std::strerror(errno);
      ::close(fd), ::unlink(partial.c_str());
      throw std::runtime_error("write to '" + partial + "' failed (" + why + "): free some space and re-run");
    }
    done += static_cast<std::size_t>(n);
  }
  if (::fsync(fd) != 0 || ::close(fd) != 0) {
    ::unlink(partial.c_str());
    throw std::runtime_error("cannot flush '" + partial + "' to disk: " + std::strerror(errno));
  }
  if (std::rename(partial.c_str(), path.c_str()) != 0) {
    const std::string why = std::strerror(errno);
    ::unlink(partial.c_str());
    throw std::runtime_error("cannot rename '" + partial + "' to '" + path + "': " + why);
  }
  fsync_parent(path);
}

void remove_durably(const std::string& path) {
  if (::unlink(path.c_str()) != 0) {
    if (errno == ENOENT) return;
    throw std::runtime_error("cannot remove '" + path + "': " + std::strerror(errno));
  }
  fsync_parent(path);
}

}  // namespace gemmlab::engine
