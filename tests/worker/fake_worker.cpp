// The worker process of the isolation tests (tests/cpu/test_isolation.cpp): `gemmlab run`'s worker loop
// (serve_run_worker) on the fake GPU of tests/cpu/isolation_fake.hpp, which misbehaves on one kernel.
//
//   gemmlab_fake_worker MISDEED KERNEL RAN_LOG FLOOR_SECONDS
//
// MISDEED: none, hang, crash, lost, overrun, late, die_idle, no_start (exits before it is ready), or
// hang_then_no_start (the first worker hangs on KERNEL, every later one exits before it is ready: the GPU a
// killed launch still holds, as an H200 showed on 2026-11-29).
#include <cstdio>
#include <cstdlib>
#include <string>

#include "../cpu/isolation_fake.hpp"

int main(int argc, char** argv) {
  if (argc != 5) {
    std::fprintf(stderr, "usage: %s MISDEED KERNEL RAN_LOG FLOOR_SECONDS\n", argv[0]);
    return 2;
  }
  std::string misdeed = argv[1];
  {  // RAN_LOG.starts: one line per worker process started (its pid), for the standby worker's test
    const std::string starts = std::string(argv[3]) + ".starts";
    const int fd = ::open(starts.c_str(), O_WRONLY | O_CREAT | O_APPEND, 0644);
    if (fd >= 0) {
      const std::string line = std::to_string(::getpid()) + "\n";
      (void)!::write(fd, line.data(), line.size());
      ::close(fd);
    }
  }
  if (misdeed == "hang_then_no_start") {
    const std::string first = std::string(argv[3]) + ".first_worker";
    const int fd = ::open(first.c_str(), O_WRONLY | O_CREAT | O_EXCL, 0644);
    if (fd >= 0) ::close(fd);
    misdeed = fd >= 0 ? "hang" : "no_start";
  }
  if (misdeed == "no_start") {
    std::fprintf(stderr, "fake worker: told not to start\n");
    return 7;
  }
  gemmlab::LaunchLimit limit;
  limit.floor_seconds = std::atof(argv[4]);
  gemmlab::set_launch_limit(limit);
  gemmlab::RunRequest req;
  req.plan = isolation_test::plan();
  req.threads = 1;
  req.out_csv = "unused.csv";
  isolation_test::FakeDevice dev(isolation_test::misdeed_of(misdeed), argv[2], argv[3]);
  return gemmlab::serve_run_worker(req, dev, 1);
}
