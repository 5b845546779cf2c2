// The journal "<out>.journal": every finished row, written as soon as it is computed, so that a
// kill at any moment loses at most the row in progress (a crash of the machine, at most the rows of
// the last second), and `--resume` continues.
//
// Format: line 1 is the run's identity as one line of JSON; every further line is one complete
// CSV row (the final CSV's columns, in the order the rows finished). Each row is written with one
// write(2) before append() returns, and fdatasync'd at most a second later. Recovery keeps every complete row and drops a
// last row cut short (no newline at its end, or too few fields), which is the only damage a crash
// can do to an append-only file.
#pragma once
#include <chrono>
#include <condition_variable>
#include <mutex>
#include <thread>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

namespace gemmlab::engine {

// What must be equal for rows of two processes to belong in one CSV: the same plan, computed by
// the same binary on the same GPU, for the same shard, with the same columns.
struct JournalIdentity {
  std::string plan_hash;        // plan_hash() of the resolved plan
  std::string git_commit;       // of the gemmlab binary (…-dirty when built from a modified tree)
  std::string gemmlab_version;
  std::string gpu_name;         // "" for --dry-run
  std::string gpu_uuid;         // e.g. "GPU-5f1c…"; several, comma-separated, for --gpus
  std::string shard;            // "i/n", or "" for the whole plan
  std::vector<std::string> columns;
  // The plugins whose kernels the plan runs, "<path> sha256:<hex>" each, comma-separated ("" for
  // none). The plan hash covers them too; this field lets a refusal say which plugin changed.
  std::string plugins;

  nlohmann::json to_json() const;
  static JournalIdentity from_json(const nlohmann::json& j);  // throws UsageError
};

// "" when `found` matches `expected`; otherwise one sentence per difference, naming the field and
// both values ("plan changed: journal has sha256:ab…, this run sha256:cd…").
std::string identity_difference(const JournalIdentity& expected, const JournalIdentity& found);

struct RecoveredJournal {
  bool has_identity = false;  // false: the crash came while the header was being written; no rows
  JournalIdentity identity;
  std::vector<std::vector<std::string>> rows;  // complete rows, in the order they finished
  std::size_t complete_bytes = 0;              // the journal's length up to its last complete row
  std::string dropped;                         // what recovery dropped from the end, "" if nothing
};

// Reads a journal. Throws UsageError if the file is not a gemmlab journal, or if a row other than
// the last has the wrong number of fields (damage no crash causes: the file was edited).
RecoveredJournal recover_journal(const std::string& path);

// Appends rows to a journal. Thread-safe: rows from several workers are serialised by one mutex,
// and each is written (out of the process) before append() returns.
class JournalWriter {
 public:
  // Starts a new journal at `path` (replacing any file there) holding only the identity line.
  JournalWriter(const std::string& path, const JournalIdentity& id);
  // Continues a recovered journal: cuts off the dropped tail, then appends after its last row.
  JournalWriter(const std::string& path, const RecoveredJournal& recovered);
  ~JournalWriter();
  JournalWriter(const JournalWriter&) = delete;
  JournalWriter& operator=(const JournalWriter&) = delete;

  // Throws std::logic_error for a wrong field count (a bug in the caller), std::runtime_error on an
  // I/O failure; in both cases the journal is left as it was before the call.
  void append(const std::vector<std::string>& fields);
  const std::string& path() const { return path_; }

 private:
  void write_all(const std::string& bytes);
  void sync_loop();
  std::string path_;
  std::size_t ncols_;
  int fd_ = -1;
  std::mutex mu_;
  std::chrono::steady_clock::time_point last_sync_{};
  // The sync to disk (fdatasync, milliseconds), at most once a second on a thread of its own, so that
  // it never holds up the run: a row is in the kernel's page cache when append returns (a killed
  // process loses nothing), on disk a second later at most. A failed sync is reported by the next append.
  std::thread syncer_;
  std::condition_variable cv_;
  bool sync_wanted_ = false, stopping_ = false;
  int sync_errno_ = 0;
};

}  // namespace gemmlab::engine
