#include "experiments/engine/lock.hpp"

#include <fcntl.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <ctime>
#include <nlohmann/json.hpp>

#include "experiments/engine/files.hpp"
#include "experiments/plan/plan.hpp"

namespace gemmlab::engine {

std::string LockHolder::describe() const {
  std::string s = "pid " + std::to_string(pid) + " on host " + host + ", started " + started_utc;
  if (!command.empty()) s += ": " + command;
  return s;
}

std::optional<LockHolder> read_lock_holder(const std::string& lock_path) {
  try {
    auto j = nlohmann::json::parse(read_file(lock_path));
    return LockHolder{j.at("pid").get<long>(), j.at("host").get<std::string>(), j.at("started_utc").get<std::string>(),
                      j.value("command", std::string())};
  } catch (const std::exception&) {
    return std::nullopt;  // absent, or the holder has not written itself in yet
  }
}

namespace {

std::string utc_now() {
  std::time_t t = std::time(nullptr);
  char buf[32];
  std::strftime(buf, sizeof buf, "%Y-%m-%dT%H:%M:%SZ", std::gmtime(&t));
  return buf;
}

std::string host_name() {
  char buf[256] = {0};
  ::gethostname(buf, sizeof buf - 1);
  return buf;
}

}  // namespace

OutputLock::OutputLock(const std::string& lock_path, const std::string& command_line) : path_(lock_path) {
  // A holder removes the file before releasing it, so a lock taken on a file that is no longer
  // at lock_path (or has been replaced) protects nothing: then open the new one and try again.
  for (int attempt = 0; attempt < 100; ++attempt) {
    int fd = ::open(path_.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0644);
    if (fd < 0) throw UsageError("cannot create the lock file '" + path_ + "': " + std::strerror(errno) + "; check the folder's permissions");
    if (::flock(fd, LOCK_EX | LOCK_NB) != 0) {
      const int err = errno;
      ::close(fd);
      if (err != EWOULDBLOCK) throw UsageError("cannot lock '" + path_ + "': " + std::strerror(err));
      auto holder = read_lock_holder(path_);
      throw UsageError("another gemmlab run is writing this output (" +
                       (holder ? holder->describe() : std::string("holder still starting")) + "; lock '" + path_ +
                       "'): wait for it to finish, or choose another --out");
    }
    struct stat held {}, named {};
    if (::fstat(fd, &held) == 0 && ::stat(path_.c_str(), &named) == 0 && held.st_ino == named.st_ino &&
        held.st_dev == named.st_dev) {
      fd_ = fd;
      break;
    }
    ::close(fd);
  }
  if (fd_ < 0) throw UsageError("cannot take the lock '" + path_ + "': it keeps being replaced by another process");

  nlohmann::json me = {{"pid", static_cast<long>(::getpid())}, {"host", host_name()}, {"started_utc", utc_now()},
                       {"command", command_line}};
  const std::string text = me.dump() + "\n";
  if (::ftruncate(fd_, 0) != 0 || ::pwrite(fd_, text.data(), text.size(), 0) != static_cast<ssize_t>(text.size())) {
    const std::string why = std::strerror(errno);
    release();
    throw UsageError("cannot write into the lock file '" + path_ + "': " + why);
  }
}

OutputLock::~OutputLock() { release(); }

void OutputLock::release() {
  if (fd_ < 0) return;
  ::unlink(path_.c_str());
  ::close(fd_);
  fd_ = -1;
}

}  // namespace gemmlab::engine
