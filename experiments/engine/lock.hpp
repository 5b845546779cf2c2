// The lock "<out>.lock": one run writes an output at a time. A second run refuses, naming the
// first (pid, host, start time, command).
//
// The lock is flock(2) on the file, so the kernel releases it when the holder exits or dies, even
// by SIGKILL: a stale lock file never blocks anyone, and no pid has to be probed for liveness.
// The holder writes who it is into the file for the refusal message.
#pragma once
#include <optional>
#include <string>

namespace gemmlab::engine {

struct LockHolder {
  long pid = 0;
  std::string host;
  std::string started_utc;  // "2026-11-23T04:31:27Z"
  std::string command;      // the holder's command line, for the message
  std::string describe() const;  // "pid 1234 on host h, started …: <command>"
};

// What the lock file at `lock_path` says about its holder; nullopt if absent or not yet written.
std::optional<LockHolder> read_lock_holder(const std::string& lock_path);

class OutputLock {
 public:
  // Takes the lock or throws UsageError naming the holder and what to do.
  OutputLock(const std::string& lock_path, const std::string& command_line);
  // Removes the lock file, then releases the lock (in that order, so that no third process can
  // lock a file that is about to disappear).
  ~OutputLock();
  OutputLock(const OutputLock&) = delete;
  OutputLock& operator=(const OutputLock&) = delete;
  void release();

 private:
  std::string path_;
  int fd_ = -1;
};

}  // namespace gemmlab::engine
