#include "experiments/engine/journal.hpp"

#include <chrono>

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <stdexcept>

#include "experiments/engine/files.hpp"
#include "experiments/plan/plan.hpp"

namespace gemmlab::engine {

nlohmann::json JournalIdentity::to_json() const {
  return {{"gemmlab_journal", 1}, {"plan_hash", plan_hash}, {"git_commit", git_commit},
          {"gemmlab_version", gemmlab_version}, {"gpu_name", gpu_name}, {"gpu_uuid", gpu_uuid},
          {"shard", shard}, {"columns", columns}, {"plugins", plugins}};
}

JournalIdentity JournalIdentity::from_json(const nlohmann::json& j) {
  try {
    if (j.at("gemmlab_journal").get<int>() != 1)
      throw UsageError("journal format " + j.at("gemmlab_journal").dump() + " is not 1: written by another gemmlab version");
    JournalIdentity id;
    id.plan_hash = j.at("plan_hash").get<std::string>();
    id.git_commit = j.at("git_commit").get<std::string>();
    id.gemmlab_version = j.at("gemmlab_version").get<std::string>();
    id.gpu_name = j.at("gpu_name").get<std::string>();
    id.gpu_uuid = j.at("gpu_uuid").get<std::string>();
    id.shard = j.at("shard").get<std::string>();
    id.columns = j.at("columns").get<std::vector<std::string>>();
    id.plugins = j.value("plugins", "");  // absent in journals written before plugins existed
    return id;
  } catch (const nlohmann::json::exception& e) {
    throw UsageError(std::string("the journal's identity line is malformed (") + e.what() + ")");
  }
}

std::string identity_difference(const JournalIdentity& expected, const JournalIdentity& found) {
  std::string out;
  auto cmp = [&](const char* what, const std::string& a, const std::string& b) {
    if (a != b) out += std::string(out.empty() ? "" : "; ") + what + " changed: journal has '" + b + "', this run '" + a + "'";
  };
  // The plugins first: a rebuilt plugin changes the plan's hash too, and is the reason to name.
  cmp("plugins", expected.plugins, found.plugins);
  cmp("plan", expected.plan_hash, found.plan_hash);
  cmp("binary (git commit)", expected.git_commit, found.git_commit);
  cmp("gemmlab version", expected.gemmlab_version, found.gemmlab_version);
  cmp("GPU", expected.gpu_name, found.gpu_name);
  cmp("GPU UUID", expected.gpu_uuid, found.gpu_uuid);
  cmp("shard", expected.shard, found.shard);
  if (expected.columns != found.columns)
    out += std::string(out.empty() ? "" : "; ") + "CSV columns changed (" + std::to_string(found.columns.size()) +
           " in the journal, " + std::to_string(expected.columns.size()) + " in this run)";
  return out;
}

RecoveredJournal recover_journal(const std::string& path) {
  const std::string text = read_file(path);
  RecoveredJournal r;
  const std::size_t eol = text.find('\n');
  if (eol == std::string::npos) {
    // Killed while the header was written: nothing was computed yet.
    r.dropped = text.empty() ? "" : "an unfinished identity line (" + std::to_string(text.size()) + " bytes)";
    return r;
  }
  nlohmann::json head;
  try {
    head = nlohmann::json::parse(text.substr(0, eol));
  } catch (const nlohmann::json::exception&) {
    throw UsageError("'" + path + "' is not a gemmlab journal (its first line is not JSON): move it away or pass --force");
  }
  r.has_identity = true;
  r.identity = JournalIdentity::from_json(head);
  const std::size_t ncols = r.identity.columns.size();

  CsvRecords recs = parse_csv(text.substr(eol + 1));
  r.complete_bytes = eol + 1 + recs.complete_bytes;
  if (recs.torn_tail) r.dropped = "a row cut short (" + std::to_string(text.size() - r.complete_bytes) + " bytes without a newline)";
  for (std::size_t i = 0; i < recs.records.size(); ++i) {
    if (recs.records[i].size() == ncols) {
      r.rows.push_back(std::move(recs.records[i]));
      continue;
    }
    if (i + 1 == recs.records.size() && !recs.torn_tail) {
      // A last line with a newline but too few fields: cut short by the crash as well.
      r.complete_bytes = eol + 1 + recs.starts[i];
      r.dropped = "a last row with " + std::to_string(recs.records[i].size()) + " of " + std::to_string(ncols) + " fields";
      break;
    }
    throw UsageError("'" + path + "' row " + std::to_string(i + 1) + " has " + std::to_string(recs.records[i].size()) +
                     " fields, the header names " + std::to_string(ncols) +
                     ": the journal was damaged or edited; move it away, or pass --force to start the run again");
  }
  return r;
}

namespace {

int open_or_throw(const std::string& path, int flags) {
  int fd = ::open(path.c_str(), flags | O_CLOEXEC, 0644);
  if (fd < 0) throw UsageError("cannot open the journal '" + path + "': " + std::strerror(errno) + "; check the folder's permissions");
  return fd;
}

}  // namespace

JournalWriter::JournalWriter(const std::string& path, const JournalIdentity& id) : path_(path), ncols_(id.columns.size()) {
  fd_ = open_or_throw(path, O_WRONLY | O_CREAT | O_TRUNC | O_APPEND);
  write_all(id.to_json().dump() + "\n");
  if (::fdatasync(fd_) != 0) throw std::runtime_error("cannot sync the journal '" + path + "': " + std::strerror(errno));
  fsync_parent(path);  // the journal's name must survive a crash as well as its bytes
  syncer_ = std::thread([this] { sync_loop(); });
}

JournalWriter::JournalWriter(const std::string& path, const RecoveredJournal& recovered)
    : path_(path), ncols_(recovered.identity.columns.size()) {
  if (!recovered.has_identity) throw std::logic_error("JournalWriter: a journal without identity cannot be continued");
  fd_ = open_or_throw(path, O_WRONLY | O_APPEND);
  if (::ftruncate(fd_, static_cast<off_t>(recovered.complete_bytes)) != 0 || ::fdatasync(fd_) != 0) {
    const std::string why = std::strerror(errno);
    ::close(fd_);
    throw std::runtime_error("cannot cut the unfinished row off '" + path + "': " + why);
  }
  syncer_ = std::thread([this] { sync_loop(); });
}

JournalWriter::~JournalWriter() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    stopping_ = true;
  }
  cv_.notify_all();
  if (syncer_.joinable()) syncer_.join();
  if (fd_ >= 0) {
    ::fdatasync(fd_);
    ::close(fd_);
  }
}

void JournalWriter::sync_loop() {
  std::unique_lock<std::mutex> lock(mu_);
  for (;;) {
    // wait_for, not wait: libstdc++ 12 versions condition_variable::wait(unique_lock&) GLIBCXX_3.4.30,
    // which would lift the wheel's tag above manylinux_2_34 (RHEL 9); wait_for is inline there.
    while (!(sync_wanted_ || stopping_)) cv_.wait_for(lock, std::chrono::seconds(1));
    if (stopping_) return;
    sync_wanted_ = false;
    lock.unlock();  // appends go on while the disk syncs
    const int rc = ::fdatasync(fd_);
    const int err = rc == 0 ? 0 : errno;
    lock.lock();
    if (err) sync_errno_ = err;
  }
}

void JournalWriter::write_all(const std::string& bytes) {
  struct stat st {};
  const off_t before = ::fstat(fd_, &st) == 0 ? st.st_size : -1;
  std::size_t done = 0;
  while (done < bytes.size()) {
    ssize_t n = ::write(fd_, bytes.data() + done, bytes.size() - done);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) break;
    done += static_cast<std::size_t>(n);
  }
  if (done == bytes.size()) {
    // The row is in the kernel's page cache once write(2) returns: a killed process loses nothing.
    // Against a crash of the machine it is synced to disk at most a second later, by the syncer (a
    // sync costs ~4 ms: in this thread, once a second, it was 0.25 s of the main job's time outside
    // the kernels).
    const auto now = std::chrono::steady_clock::now();
    if (now - last_sync_ >= std::chrono::seconds(1)) {
      last_sync_ = now;
      sync_wanted_ = true;  // the caller holds mu_ (append), or no syncer runs yet (the constructor)
      cv_.notify_one();
    }
    return;
  }
  const std::string why = std::strerror(errno);
  // Leave no fragment behind for the next row to be glued to.
  if (before >= 0 && ::ftruncate(fd_, before) == 0) ::fdatasync(fd_);
  throw std::runtime_error("cannot write a row to the journal '" + path_ + "' (" + why + "): free some space, then --resume");
}

void JournalWriter::append(const std::vector<std::string>& fields) {
  if (fields.size() != ncols_)
    throw std::logic_error("journal row has " + std::to_string(fields.size()) + " fields, the columns are " +
                           std::to_string(ncols_));
  const std::string line = csv_line(fields);
  std::lock_guard<std::mutex> lock(mu_);
  if (sync_errno_)
    throw std::runtime_error("cannot sync the journal '" + path_ + "' to disk (" + std::strerror(sync_errno_) +
                             "): check the disk and free some space, then --resume");
  write_all(line);
}

}  // namespace gemmlab::engine
