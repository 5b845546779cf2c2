// The watchdog and the worker processes of `gemmlab run` on a GPU, with plugin kernels that fail for real
// (tests/plugins/faulting.cu): one that spins on a flag nobody sets, one that traps, one that stores at an
// illegal address. Each runs through the gemmlab command in a process of its own (a kernel that never ends
// holds the GPU of its process until that process ends; a trap loses its context), in a plan of five
// kernels: its row is `timeout` or `faulted`, the note naming the kernel, the size and the limit or CUDA's
// error, and every other row equals, in every column but the timings, the row a run without it writes.
// With --isolation none the run stops at that row, journaled, and --resume goes on after it.
//
// GEMMLAB_BINARY and GEMMLAB_FAULTING_PLUGIN (environment) name the command and the plugin where they are
// not where this build put them (scripts/lab/gpu_watchdog.sh, prebuilt binaries on another machine).
#include <gtest/gtest.h>

#include <sys/wait.h>

#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <set>

#include "experiments/engine/journal.hpp"
#include "experiments/report/result.hpp"
#include "gpu_test_util.hpp"
#include "tests/cpu/engine_test_util.hpp"

using engine_test::Csv;
using engine_test::TempDir;

namespace {

std::string from_env(const char* name, const char* built) {
  const char* e = std::getenv(name);
  return e && *e ? e : built;
}
std::string gemmlab_binary() { return from_env("GEMMLAB_BINARY", GEMMLAB_BINARY); }
std::string faulting_plugin() { return from_env("GEMMLAB_FAULTING_PLUGIN", GEMMLAB_FAULTING_PLUGIN); }

constexpr double kFloor = 3;  // --launch-timeout of these runs: a spin costs 3 s + the work term + the grace

struct Ran {
  int rc = -1;
  double seconds = 0;
};

// `gemmlab run` of `kernels` (comma-separated, one problem: fp32, 512^3, U[0,1)) into `csv`, its log beside.
Ran run(const std::string& kernels, const std::string& csv, const std::string& extra = "") {
  const std::string cmd = "'" + gemmlab_binary() + "' run --plugin '" + faulting_plugin() + "' -k " + kernels +
                          " -s 512 -d uniform_0_1 --reps 5 --warmup 1 --launch-timeout " + std::to_string(kFloor) +
                          " -o '" + csv + "' " + extra + " > '" + csv + ".log' 2>&1";
  const auto t0 = std::chrono::steady_clock::now();
  const int status = std::system(cmd.c_str());
  Ran r;
  r.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  r.rc = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  return r;
}

// Every column but the timings.
bool same_but_timings(const Csv& a, std::size_t i, const Csv& b, std::size_t j) {
  static const std::set<std::string> timing = {"time_ms_median", "time_ms_min", "time_ms_max", "time_ms_iqr", "tflops",
                                               "sm_clock_mhz"};
  for (const std::string& c : a.header)
    if (!timing.count(c) && a.col(i, c) != b.col(j, c)) {
      ADD_FAILURE() << a.col(i, "kernel") << ": column " << c << " is '" << a.col(i, c) << "', without the faulty kernel '"
                    << b.col(j, c) << "'";
      return false;
    }
  return true;
}

// The plan with `faulty` third among four built-in kernels: its row has `status` and a note holding `words`;
// the others equal a run of the four alone. Returns (the run's wall time, the four's wall time).
std::pair<double, double> check_five(const std::string& faulty, const std::string& status,
                                     const std::vector<std::string>& words) {
  TempDir dir("gpu_watchdog_" + faulty);
  const std::string four = "sgemm_01_naive,sgemm_02_coalesce,sgemm_03_smem,sgemm_10_warptiling";
  const std::string five = "sgemm_01_naive,sgemm_02_coalesce," + faulty + ",sgemm_03_smem,sgemm_10_warptiling";
  const Ran base = run(four, dir / "four.csv");
  EXPECT_EQ(base.rc, 0) << engine_test::slurp(dir / "four.csv.log");
  const Ran r = run(five, dir / "five.csv");
  EXPECT_EQ(r.rc, 3) << "a kernel failed, the run finished: " << engine_test::slurp(dir / "five.csv.log");
  const Csv b = engine_test::read_csv(dir / "four.csv"), c = engine_test::read_csv(dir / "five.csv");
  EXPECT_EQ(c.rows.size(), 5u);
  EXPECT_EQ(b.rows.size(), 4u);
  if (c.rows.size() != 5 || b.rows.size() != 4) return {r.seconds, base.seconds};
  EXPECT_EQ(c.col(2, "kernel"), faulty);
  EXPECT_EQ(c.col(2, "status"), status) << c.col(2, "note");
  for (const auto& w : words) EXPECT_NE(c.col(2, "note").find(w), std::string::npos) << w << " in: " << c.col(2, "note");
  for (std::size_t i : {0, 1, 3, 4}) {
    EXPECT_EQ(c.col(i, "status"), "passed") << c.col(i, "kernel") << ": " << c.col(i, "note");
    same_but_timings(c, i, b, i < 2 ? i : i - 1);
  }
  std::printf("[ watchdog ] %s: %s in %.1f s; the four kernels alone %.1f s\n", faulty.c_str(), status.c_str(), r.seconds,
              base.seconds);
  return {r.seconds, base.seconds};
}

}  // namespace

TEST(WatchdogGpu, ASpinningKernelIsATimeoutRowAndTheRunGoesOnWithinTheLimitAndTenSeconds) {
  GEMMLAB_REQUIRE_GPU();
  GEMMLAB_REQUIRE_FAMILY("simt");
  const auto [five, four] = check_five("fault_spin_fp32", "timeout",
                                       {"fault_spin_fp32 at 512x512x512", "did not end within its limit of 3.03 s"});
  // The limit (3 s + 2MNK at 10 GFLOP/s) and a new worker's start, beyond the four rows' own time.
  EXPECT_LE(five, kFloor + 0.03 + four + 10.0);
}

TEST(WatchdogGpu, ATrapAndAnIllegalAddressAreFaultedRowsWithCudasError) {
  GEMMLAB_REQUIRE_GPU();
  GEMMLAB_REQUIRE_FAMILY("simt");
  check_five("fault_trap_fp32", "faulted", {"cudaError"});
  check_five("fault_illegal_fp32", "faulted", {"cudaErrorIllegalAddress"});
}

TEST(WatchdogGpu, InProcessASpinningKernelStopsTheRunWithItsRowAndResumeGoesOnAfterIt) {
  GEMMLAB_REQUIRE_GPU();
  GEMMLAB_REQUIRE_FAMILY("simt");
  TempDir dir("gpu_watchdog_in_process");
  const std::string five = "sgemm_01_naive,sgemm_02_coalesce,fault_spin_fp32,sgemm_03_smem,sgemm_10_warptiling";
  const Ran r = run(five, dir / "five.csv", "--isolation none");
  EXPECT_EQ(r.rc, 3) << engine_test::slurp(dir / "five.csv.log");
  EXPECT_FALSE(std::filesystem::exists(dir / "five.csv"));
  const auto kept = gemmlab::engine::recover_journal(dir / "five.csv.journal").rows;
  ASSERT_EQ(kept.size(), 3u) << "the two rows before and the spinning kernel's";
  const auto row = gemmlab::from_fields(gemmlab::result_columns(), kept[2]);
  EXPECT_EQ(row.status, gemmlab::Status::timeout) << row.note;
  const Ran resumed = run(five, dir / "five.csv", "--isolation none --resume");
  EXPECT_EQ(resumed.rc, 3) << "the timeout row is kept: " << engine_test::slurp(dir / "five.csv.log");
  const Csv c = engine_test::read_csv(dir / "five.csv");
  ASSERT_EQ(c.rows.size(), 5u);
  EXPECT_EQ(c.col(2, "status"), "timeout");
  EXPECT_EQ(c.col(3, "status"), "passed");
  EXPECT_EQ(c.col(4, "status"), "passed");
}
