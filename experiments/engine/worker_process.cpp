// Worker processes and the parent's watchdog (see worker_process.hpp).
#include "experiments/engine/worker_process.hpp"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstdio>
#include <cstring>
#include <thread>

extern char** environ;

namespace gemmlab::engine {

namespace {

using Clock = std::chrono::steady_clock;

double seconds_between(Clock::time_point a, Clock::time_point b) { return std::chrono::duration<double>(b - a).count(); }

// Writes all of `bytes` to fd; false when the reader is gone (EPIPE) or on another error.
bool write_all(int fd, const std::string& bytes) {
  std::size_t done = 0;
  while (done < bytes.size()) {
    // MSG_NOSIGNAL is for sockets: a pipe's reader gone raises SIGPIPE, which the writer must not die of.
    const ssize_t n = ::write(fd, bytes.data() + done, bytes.size() - done);
    if (n < 0) {
      if (errno == EINTR) continue;
      return false;
    }
    done += static_cast<std::size_t>(n);
  }
  return true;
}

// SIGPIPE ignored once for the process: a worker or parent that is gone shows as a failed write instead.
void ignore_sigpipe() {
  static const bool done = [] {
    struct sigaction sa {};
    sa.sa_handler = SIG_IGN;
    sigemptyset(&sa.sa_mask);
    sigaction(SIGPIPE, &sa, nullptr);
    return true;
  }();
  (void)done;
}

std::optional<nlohmann::json> parse_line(const std::string& line) {
  try {
    return nlohmann::json::parse(line);
  } catch (const nlohmann::json::exception& e) {
    return nlohmann::json{{"garbled", line.substr(0, 200)}};
  }
}

}  // namespace

WorkerProcess::WorkerProcess(const std::vector<std::string>& argv) {
  if (argv.empty()) throw WorkerStartFailed("no command to start a worker process with");
  ignore_sigpipe();
  int down[2], up[2];  // parent -> child, child -> parent
  if (::pipe2(down, O_CLOEXEC) != 0) throw WorkerStartFailed(std::string("pipe: ") + std::strerror(errno));
  if (::pipe2(up, O_CLOEXEC) != 0) {
    ::close(down[0]), ::close(down[1]);
    throw WorkerStartFailed(std::string("pipe: ") + std::strerror(errno));
  }
  posix_spawn_file_actions_t fa;
  posix_spawn_file_actions_init(&fa);
  // dup2 clears FD_CLOEXEC on the copies; the originals close at exec.
  posix_spawn_file_actions_adddup2(&fa, down[0], kWorkerInFd);
  posix_spawn_file_actions_adddup2(&fa, up[1], kWorkerOutFd);
  posix_spawnattr_t at;
  posix_spawnattr_init(&at);
  sigset_t none, defaults;
  sigemptyset(&none);
  sigemptyset(&defaults);
  for (int s : {SIGINT, SIGTERM, SIGPIPE, SIGHUP}) sigaddset(&defaults, s);
  posix_spawnattr_setsigmask(&at, &none);
  posix_spawnattr_setsigdefault(&at, &defaults);
  posix_spawnattr_setpgroup(&at, 0);  // a group of its own: the terminal's Ctrl-C is the parent's
  posix_spawnattr_setflags(&at, POSIX_SPAWN_SETSIGMASK | POSIX_SPAWN_SETSIGDEF | POSIX_SPAWN_SETPGROUP);

  std::vector<std::string> env_strings;
  for (char** e = environ; *e; ++e)
    if (std::strncmp(*e, "GEMMLAB_WORKER_PARENT=", 22) != 0) env_strings.emplace_back(*e);
  env_strings.push_back("GEMMLAB_WORKER_PARENT=" + std::to_string(::getpid()));
  std::vector<char*> envp, args;
  for (auto& s : env_strings) envp.push_back(s.data());
  envp.push_back(nullptr);
  std::vector<std::string> argv_copy = argv;
  for (auto& s : argv_copy) args.push_back(s.data());
  args.push_back(nullptr);
  const int rc = ::posix_spawnp(&pid_, args[0], &fa, &at, args.data(), envp.data());
  posix_spawn_file_actions_destroy(&fa);
  posix_spawnattr_destroy(&at);
  ::close(down[0]);
  ::close(up[1]);
  if (rc != 0) {
    ::close(down[1]), ::close(up[0]);
    pid_ = -1;
    throw WorkerStartFailed("cannot start the worker process '" + argv[0] + "': " + std::strerror(rc));
  }
  to_child_ = down[1];
  from_child_ = up[0];
}

WorkerProcess::~WorkerProcess() {
  if (pid_ > 0 && !reaped_) kill();
  if (to_child_ >= 0) ::close(to_child_);
  if (from_child_ >= 0) ::close(from_child_);
}

bool WorkerProcess::send(const nlohmann::json& m) {
  if (to_child_ < 0) return false;
  return write_all(to_child_, m.dump() + "\n");
}

std::optional<nlohmann::json> WorkerProcess::next(double seconds) {
  const Clock::time_point until = Clock::now() + std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(std::max(0.0, seconds)));
  for (;;) {
    if (const auto nl = buffer_.find('\n'); nl != std::string::npos) {
      const std::string line = buffer_.substr(0, nl);
      buffer_.erase(0, nl + 1);
      if (line.empty()) continue;
      return parse_line(line);
    }
    if (eof_) return std::nullopt;
    const double left = seconds_between(Clock::now(), until);
    pollfd p{from_child_, POLLIN, 0};
    const int r = ::poll(&p, 1, left <= 0 ? 0 : static_cast<int>(left * 1000) + 1);
    if (r < 0 && errno == EINTR) continue;
    if (r <= 0) return std::nullopt;
    char buf[1 << 16];
    const ssize_t n = ::read(from_child_, buf, sizeof buf);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) {
      eof_ = true;
      continue;  // a last line without its newline is dropped: a message cut short by a death
    }
    buffer_.append(buf, static_cast<std::size_t>(n));
  }
}

bool WorkerProcess::reap(double seconds) {
  if (reaped_ || pid_ <= 0) return true;
  const Clock::time_point t0 = Clock::now();
  for (;;) {
    const pid_t r = ::waitpid(pid_, &status_, WNOHANG);
    if (r == pid_ || (r < 0 && errno == ECHILD)) {
      reaped_ = true;
      return true;
    }
    if (seconds_between(t0, Clock::now()) >= seconds) return false;
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
}

void WorkerProcess::kill() {
  if (pid_ <= 0 || reaped_) return;
  ::kill(pid_, SIGKILL);
  reap(60.0);  // a process killed while the driver tears its GPU context down can take a moment
}

void WorkerProcess::kill_without_waiting() {
  if (pid_ > 0 && !reaped_) ::kill(pid_, SIGKILL);
}

void WorkerProcess::finish(double seconds) {
  if (to_child_ >= 0) {
    ::close(to_child_);
    to_child_ = -1;
  }
  if (!reap(seconds)) kill();
}

std::string WorkerProcess::how_it_ended(double seconds) {
  if (!reap(seconds)) {
    kill();
    return "stopped answering and was killed";
  }
  if (WIFEXITED(status_)) return "exited with status " + std::to_string(WEXITSTATUS(status_));
  if (WIFSIGNALED(status_)) {
    const int s = WTERMSIG(status_);
    const char* name = ::strsignal(s);
    return "was killed by signal " + std::to_string(s) + (name ? std::string(" (") + name + ")" : std::string());
  }
  return "ended";
}

WatchedWorker::WatchedWorker(const std::vector<std::string>& argv, double grace_seconds)
    : p_(argv), grace_(grace_seconds), last_(Clock::now()) {}

WatchedWorker::Event WatchedWorker::next(double seconds) {
  const Clock::time_point until = Clock::now() + std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(seconds));
  for (;;) {
    const double left = std::max(0.0, seconds_between(Clock::now(), until));
    // While armed, wake in time to see the limit pass.
    double wait = left;
    if (armed_) wait = std::min(wait, std::max(0.0, limit_ + grace_ - seconds_between(last_, Clock::now())) + 0.01);
    std::optional<nlohmann::json> m = p_.next(wait);
    if (m) {
      if (m->contains("arm")) {
        const auto& a = (*m)["arm"];
        armed_ = true;
        ++arms_;
        kernel_ = a.value("kernel", "");
        size_ = a.value("size", "");
        limit_ = a.value("limit", 0.0);
        beat_.clear();
        last_ = Clock::now();
        continue;
      }
      if (m->contains("beat")) {
        beat_ = (*m)["beat"].get<std::string>();
        last_ = Clock::now();
        continue;
      }
      if (m->contains("disarm")) {
        armed_ = false;
        continue;
      }
      return {Event::message, std::move(*m)};
    }
    if (p_.ended()) return {Event::ended, {}};
    if (armed_ && seconds_between(last_, Clock::now()) > limit_ + grace_) return {Event::timed_out, {}};
    if (Clock::now() >= until) return {Event::quiet, {}};
  }
}

nlohmann::json WatchedWorker::wait_ready(double seconds, const std::function<void(const std::string&)>& log) {
  const Clock::time_point until = Clock::now() + std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(seconds));
  for (;;) {
    const double left = seconds_between(Clock::now(), until);
    if (left <= 0) {
      p_.kill();
      throw WorkerStartFailed("the worker process did not get ready within " + std::to_string(static_cast<int>(seconds)) +
                              " s and was stopped");
    }
    Event e = next(std::min(left, 1.0));
    if (e.kind == Event::message) {
      if (e.msg.contains("ready")) return e.msg["ready"];
      if (e.msg.contains("failed")) {
        const std::string why = e.msg["failed"].get<std::string>();
        p_.finish(5.0);
        throw WorkerStartFailed(why);
      }
      if (e.msg.contains("log") && log) log(e.msg["log"].get<std::string>());
    } else if (e.kind == Event::ended) {
      throw WorkerStartFailed("the worker process " + p_.how_it_ended() + " before it was ready (its messages are above)");
    }
  }
}

std::string WatchedWorker::overran_words() const {
  char limit[64];
  std::snprintf(limit, sizeof limit, "%.3g s (and %.3g s of grace)", limit_, grace_);
  return kernel_ + " at " + size_ + ": " + (beat_.empty() ? std::string("its launch") : beat_) +
         " did not finish within its limit of " + limit;
}

WorkerChannel::WorkerChannel(int in_fd, int out_fd) : in_(in_fd), out_(out_fd) {
  if (::fcntl(in_, F_GETFD) < 0 || ::fcntl(out_, F_GETFD) < 0)
    throw std::runtime_error("this process was not started as a gemmlab worker (file descriptors " +
                             std::to_string(in_fd) + " and " + std::to_string(out_fd) + " are not open)");
  ignore_sigpipe();
  // Not inherited by what the worker starts (a compiler, nvidia-smi): one that outlived it would keep the
  // parent from seeing the worker's end.
  ::fcntl(in_, F_SETFD, FD_CLOEXEC);
  ::fcntl(out_, F_SETFD, FD_CLOEXEC);
  ::prctl(PR_SET_PDEATHSIG, SIGKILL);
  // The parent may have died before the line above: then the worker has no one to work for.
  if (const char* p = std::getenv("GEMMLAB_WORKER_PARENT"); p && std::atoi(p) != static_cast<int>(::getppid())) ::_exit(1);
}

bool WorkerChannel::send(const nlohmann::json& m) {
  const std::string line = m.dump() + "\n";
  std::lock_guard<std::mutex> lock(mu_);
  return write_all(out_, line);
}

std::optional<nlohmann::json> WorkerChannel::take_line() {
  for (;;) {
    const auto nl = buffer_.find('\n');
    if (nl == std::string::npos) return std::nullopt;
    const std::string line = buffer_.substr(0, nl);
    buffer_.erase(0, nl + 1);
    if (!line.empty()) return parse_line(line);
  }
}

std::optional<nlohmann::json> WorkerChannel::receive() {
  stop_ = false;
  for (;;) {
    if (auto m = take_line()) return m;
    if (eof_) return std::nullopt;
    char buf[1 << 16];
    const ssize_t n = ::read(in_, buf, sizeof buf);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) {
      eof_ = true;
      continue;
    }
    buffer_.append(buf, static_cast<std::size_t>(n));
  }
}

bool WorkerChannel::stop_requested() {
  if (stop_ || eof_) return true;
  for (;;) {
    pollfd p{in_, POLLIN, 0};
    if (::poll(&p, 1, 0) <= 0) break;
    char buf[4096];
    const ssize_t n = ::read(in_, buf, sizeof buf);
    if (n <= 0) {
      eof_ = true;
      return true;
    }
    buffer_.append(buf, static_cast<std::size_t>(n));
  }
  // A stop request is the only message a parent sends while a problem runs.
  if (buffer_.find("\"stop\"") != std::string::npos) stop_ = true;
  return stop_;
}

void ChannelReporter::arm(const std::string& kernel, const std::string& size, double limit_seconds) {
  ch_.send({{"arm", {{"kernel", kernel}, {"size", size}, {"limit", limit_seconds}}}});
}
void ChannelReporter::beat(const std::string& what) { ch_.send({{"beat", what}}); }
void ChannelReporter::disarm() { ch_.send({{"disarm", true}}); }
void ChannelReporter::lost(const std::string& why) {
  ch_.send({{"lost", why}});
  std::fflush(nullptr);
  ::_exit(3);  // no teardown and no unwinding: the context's state is the kernel's
}

}  // namespace gemmlab::engine
