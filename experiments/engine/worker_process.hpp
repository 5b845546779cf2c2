// A worker process and its parent's watchdog: a child that runs kernels under test for this process
// (engine/isolation.hpp), the messages between them, and the parent's view of the child's launches.
//
// The child gets two pipes as its file descriptors 3 (messages from the parent) and 4 (messages to
// the parent), each message one JSON object on one line. It runs in a process group of its own, so a
// Ctrl-C in the terminal reaches the parent alone (which stops the child after the row in progress),
// and it dies with the parent (WorkerChannel sets PR_SET_PDEATHSIG). Its stderr is the parent's.
//
// While the child runs a kernel under test it sends `arm` (kernel, size, the launch's limit), `beat`
// (a launch enqueued or ended, a callable called) and `disarm` (engine/watchdog.hpp LaunchReporter);
// the parent's watchdog (WatchedWorker) takes a child that stays silent for the limit plus a grace
// while armed for one whose launch never ends, or whose host call never returns (a callable blocked in
// Python), which nothing in the child can see. Plain C++ (POSIX).
#pragma once
#include <sys/types.h>

#include <chrono>
#include <functional>
#include <mutex>
#include <optional>
#include <stdexcept>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "experiments/engine/watchdog.hpp"

namespace gemmlab::engine {

constexpr int kWorkerInFd = 3, kWorkerOutFd = 4;

// A worker could not be started, or ended before it said it was ready (the message says why; its own
// words are on stderr). gemmlab.judge and explain then run the callable in-process.
struct WorkerStartFailed : std::runtime_error {
  using std::runtime_error::runtime_error;
};

class WorkerProcess {
 public:
  // Starts argv[0] (a path, or a name looked up in PATH) with argv. Throws WorkerStartFailed.
  explicit WorkerProcess(const std::vector<std::string>& argv);
  ~WorkerProcess();  // kills the child if it still runs, and reaps it
  WorkerProcess(const WorkerProcess&) = delete;
  WorkerProcess& operator=(const WorkerProcess&) = delete;

  // Sends one message; false when the child no longer reads (it ended: next() says how).
  bool send(const nlohmann::json& m);
  // The next message, waiting at most `seconds`: nullopt when none came (`ended()` says whether the
  // child closed its end: it exited or died).
  std::optional<nlohmann::json> next(double seconds);
  bool ended() const { return eof_; }
  // Kills the child (SIGKILL) and reaps it.
  void kill();
  // Sends SIGKILL and returns at once: the destructor (or kill) reaps it. A worker whose GPU context the
  // driver is still tearing down (a launch that never ended) can take seconds to be reaped, which the next
  // worker need not wait for.
  void kill_without_waiting();
  // Reaps the child if it ends within `seconds`; whether it was reaped (a process killed before included).
  bool reap_within(double seconds) { return reap(seconds); }
  // Closes the child's input (a worker exits when it reads the end), waits up to `seconds` for it to
  // exit, then kills it.
  void finish(double seconds);
  // How the child ended, in words, once it has: "exited with status 3", "was killed by signal 11
  // (Segmentation fault)". Reaps it (waiting up to `seconds` after its output closed).
  std::string how_it_ended(double seconds = 30.0);
  pid_t pid() const { return pid_; }

 private:
  bool reap(double seconds);
  pid_t pid_ = -1;
  int to_child_ = -1, from_child_ = -1;
  std::string buffer_;
  bool eof_ = false;
  bool reaped_ = false;
  int status_ = 0;
};

// A worker process seen by its parent's watchdog: arm / beat / disarm messages are taken here (never
// returned), and a child silent beyond the armed limit plus `grace_seconds` is reported as timed out.
class WatchedWorker {
 public:
  WatchedWorker(const std::vector<std::string>& argv, double grace_seconds);

  struct Event {
    enum Kind { message, quiet, timed_out, ended } kind = quiet;
    nlohmann::json msg;  // message: the message
  };
  // The next event within `seconds`: a message, quiet (nothing yet), timed_out (armed and silent beyond
  // the limit and the grace: kill it), ended (the child closed its end: exited or died).
  Event next(double seconds);
  // Waits for {"ready": ...} (messages before it are ignored but logs, which go to `log`); throws
  // WorkerStartFailed when the child ends, sends {"failed": why} or is silent for `seconds`.
  nlohmann::json wait_ready(double seconds, const std::function<void(const std::string&)>& log);

  WorkerProcess& process() { return p_; }
  bool armed() const { return armed_; }
  // The kernel, size and limit of the last arm, and the last beat's words ("call 40", "launch 3 of 23").
  const std::string& kernel() const { return kernel_; }
  const std::string& size() const { return size_; }
  double limit_seconds() const { return limit_; }
  const std::string& last_beat() const { return beat_; }
  long long arms() const { return arms_; }  // arm messages so far (an explain's launches)
  double grace_seconds() const { return grace_; }
  // "kernel at size: call 40 did not finish within its limit of 12.3 s (and 5 s of grace)".
  std::string overran_words() const;

 private:
  WorkerProcess p_;
  double grace_;
  bool armed_ = false;
  std::string kernel_, size_, beat_;
  double limit_ = 0;
  long long arms_ = 0;
  std::chrono::steady_clock::time_point last_;
};

// The child's side: its two file descriptors.
class WorkerChannel {
 public:
  // Checks it is a worker (the descriptors are open) and that its parent lives, and asks to die with it.
  // Throws std::runtime_error when it was not started as a worker.
  WorkerChannel(int in_fd = kWorkerInFd, int out_fd = kWorkerOutFd);
  // Sends one message (thread-safe; whole lines). False when the parent no longer reads.
  bool send(const nlohmann::json& m);
  // The next message from the parent (blocking); nullopt at the end of its input (the parent is done or gone).
  std::optional<nlohmann::json> receive();
  // Without blocking: whether the parent asked to stop (or is gone) since the last receive().
  bool stop_requested();

 private:
  std::optional<nlohmann::json> take_line();
  int in_, out_;
  std::string buffer_;
  bool eof_ = false, stop_ = false;
  std::mutex mu_;
};

// The LaunchReporter of a worker: arm / beat / disarm as messages on its channel.
class ChannelReporter final : public LaunchReporter {
 public:
  explicit ChannelReporter(WorkerChannel& ch) : ch_(ch) {}
  void arm(const std::string& kernel, const std::string& size, double limit_seconds) override;
  void beat(const std::string& what) override;
  void disarm() override;
  // Nothing more can run on the GPU in this process (a launch holds it, or faulted it), and the row saying so
  // has been sent: tells the parent `why` and ends the worker here, without unwinding (a destructor on the way
  // out could wait for the launch that never ends).
  [[noreturn]] void lost(const std::string& why);

 private:
  WorkerChannel& ch_;
};

}  // namespace gemmlab::engine
