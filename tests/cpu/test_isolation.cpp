// The watchdog and process isolation of the kernels under test, on the CPU: the limit's derivation, and
// `gemmlab run`'s parent with real worker processes (tests/worker/fake_worker.cpp) whose fake GPU hangs,
// dies, loses its context or overruns on one kernel. Each costs that kernel's row (timeout or faulted,
// the note naming the kernel, the size and the limit or the error) and a worker restart, never the run:
// every other row is the one an undisturbed run writes. Also: the same faults in-process (no worker)
// stop the run with the faulted row journaled, --resume keeps such rows and --retry-failed computes
// them again.
#include <gtest/gtest.h>

#include <signal.h>

#include <cerrno>
#include <chrono>
#include <map>
#include <thread>

#include "engine_test_util.hpp"
#include "experiments/engine/session.hpp"
#include "experiments/engine/worker_process.hpp"
#include "isolation_fake.hpp"

using namespace engine_test;
using isolation_test::FakeDevice;
using isolation_test::Misdeed;

namespace {

constexpr double kFloor = 0.4;  // the fake worker's launch limit floor: a hang costs 0.4 s + the grace
constexpr double kGrace = 0.6;

gemmlab::RunRequest request(const TempDir& d, const std::string& misdeed, const std::string& kernel,
                            const std::string& name = "out.csv") {
  gemmlab::RunRequest r;
  r.plan = isolation_test::plan();
  r.out_csv = d / name;
  r.threads = 1;
  r.command_line = "gemmlab run --suite isolation -o " + r.out_csv;
  r.argv = {"gemmlab", "run", "--suite", "isolation", "-o", r.out_csv};
  r.log = std::fopen((d / (name + ".log")).c_str(), "w");
  r.live_progress = false;
  r.worker_grace_seconds = kGrace;
  const std::string ran = d / "ran.txt";
  r.worker_command = [misdeed, kernel, ran](int, int) {
    return std::vector<std::string>{GEMMLAB_FAKE_WORKER, misdeed, kernel, ran, std::to_string(kFloor)};
  };
  return r;
}

std::map<std::string, int> ran(const TempDir& d) {
  std::map<std::string, int> n;
  std::istringstream in(slurp(d / "ran.txt"));
  for (std::string k; std::getline(in, k);) ++n[k];
  return n;
}

// The parent's device: only its description is used (the kernels run in the workers).
int run(const gemmlab::RunRequest& req) {
  FakeDevice parent(Misdeed::none, "", "");
  return gemmlab::run_experiment(req, parent);
}

// The CSV as an undisturbed run writes it: every row passed.
Csv undisturbed(const TempDir& d) {
  gemmlab::RunRequest req = request(d, "none", "", "undisturbed.csv");
  EXPECT_EQ(run(req), 0);
  std::fclose(req.log);
  return read_csv(req.out_csv);
}

double seconds_since(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

// Runs the plan with the fake misbehaving on `kernel` and checks: its rows have `status` and a note
// holding each of `words`; every other row equals the undisturbed run's; the run finished (exit 3: a
// kernel failed) with `restarts` worker restarts. Returns the CSV.
Csv check_run(const std::string& misdeed, const std::string& kernel, const std::string& status,
              const std::vector<std::string>& words, int restarts, double at_most_seconds, bool standby = false,
              std::vector<std::string>* starts = nullptr) {
  TempDir d("isolation_" + misdeed + (standby ? "_standby" : "") + (starts ? "_starts" : ""));
  const Csv base = undisturbed(d);
  if (starts) fs::remove(d / "ran.txt.starts");
  gemmlab::RunRequest req = request(d, misdeed, kernel);
  req.standby_worker = standby;
  const auto t0 = std::chrono::steady_clock::now();
  EXPECT_EQ(run(req), 3) << "a kernel failed: exit 3";
  const double took = seconds_since(t0);
  std::fclose(req.log);
  EXPECT_LT(took, at_most_seconds) << misdeed;
  const Csv csv = read_csv(req.out_csv);
  EXPECT_EQ(csv.header, base.header);
  EXPECT_EQ(csv.rows.size(), isolation_test::kRows);
  int failed = 0;
  for (std::size_t i = 0; i < csv.rows.size() && i < base.rows.size(); ++i) {
    if (csv.col(i, "kernel") == kernel) {
      ++failed;
      EXPECT_EQ(csv.col(i, "status"), status) << csv.col(i, "note");
      for (const auto& w : words) EXPECT_NE(csv.col(i, "note").find(w), std::string::npos) << w << " in: " << csv.col(i, "note");
      EXPECT_EQ(csv.col(i, "time_ms_median"), "") << "nothing measured";
      EXPECT_EQ(csv.col(i, "reps"), "2");
    } else {
      EXPECT_EQ(csv.rows[i], base.rows[i]) << "row " << i << " (" << csv.col(i, "kernel") << ") as undisturbed";
    }
  }
  EXPECT_EQ(failed, 2) << "both distributions' rows of " << kernel;
  const auto meta = nlohmann::json::parse(slurp(OutputPaths::for_csv(req.out_csv).meta));
  EXPECT_EQ(meta["isolation"]["kernels_run_in"], "worker processes");
  EXPECT_EQ(meta["isolation"]["worker_restarts"], restarts);
  EXPECT_EQ(meta["kernel_errors"], 2);
  // Every kernel but the failing one ran once per distribution, in the workers.
  for (const auto& [k, n] : ran(d))
    if (k != kernel) EXPECT_EQ(n, 4) << k << ": twice here, twice in the undisturbed run";
  if (starts) {
    std::istringstream in(slurp(d / "ran.txt.starts"));
    for (std::string pid; std::getline(in, pid);) starts->push_back(pid);
  }
  return csv;
}

// Runs req, which must stop with an exception of type E; returns its message (a failure naming `unreported`
// when none came). Closes req.log either way.
template <class E>
std::string stop_message(gemmlab::RunRequest& req, const char* unreported) {
  std::string what;
  try {
    run(req);
    ADD_FAILURE() << unreported;
  } catch (const E& e) {
    what = e.what();
  }
  std::fclose(req.log);
  return what;
}

}  // namespace

TEST(LaunchLimit, AFloorPlusTheWorkAtTenGflopsAndAFirstCallAllowance) {
  gemmlab::LaunchLimit l;
  EXPECT_DOUBLE_EQ(l.seconds(0), 10.0) << "the floor";
  const double flops = 2.0 * 4096.0 * 4096.0 * 4096.0;
  EXPECT_NEAR(l.seconds(flops), 10.0 + flops / 1e10, 1e-9);
  EXPECT_NEAR(l.seconds(flops), 23.74, 0.01) << "4096^3";
  EXPECT_EQ(l.words(flops), "23.7 s (10 s + 2MNK at 10 GFLOP/s)");
  l.first_call_seconds = gemmlab::LaunchLimit::kCallableFirstCallSeconds;
  EXPECT_NEAR(l.seconds(flops, true), 143.74, 0.01);
  EXPECT_NEAR(l.seconds(flops, false), 23.74, 0.01) << "only a first call gets the allowance";
  EXPECT_EQ(l.words(flops, true), "144 s (10 s + 2MNK at 10 GFLOP/s + 120 s for a first call)");
  // Ten times below the slowest kernel gemmlab runs: sgemm_01_naive's 0.5 TFLOP/s on an H100 at 4096^3
  // takes 0.28 s a launch, far within its limit.
  EXPECT_GT(l.seconds(flops) / (flops / 0.5e12), 50.0);
}

TEST(LaunchLimit, TheProcessLimitIsScopedAndAWatchNamesLaunchKernelSizeAndLimit) {
  const gemmlab::LaunchLimit before = gemmlab::launch_limit();
  {
    gemmlab::LaunchLimit l;
    l.floor_seconds = 3;
    gemmlab::ScopedLaunchLimit scoped(l);
    EXPECT_DOUBLE_EQ(gemmlab::launch_limit().floor_seconds, 3);
    gemmlab::LaunchWatch w("kernel_under_test_limit", 256, 128, 64, 2.0 * 256 * 128 * 64, 23);
    EXPECT_NEAR(w.limit_seconds(), 3.0 + 2.0 * 256 * 128 * 64 / 1e10, 1e-12);
    EXPECT_EQ(w.overran(2, "did not end within"),
              "launch 3 of 23 of kernel_under_test_limit at 256x128x64 did not end within its limit of 3 s (3 s + 2MNK "
              "at 10 GFLOP/s); --launch-timeout (launch_timeout= in Python) sets the floor");
    // A first batch: its host calls get the first-call allowance (compilation), its GPU launches do not.
    l.first_call_seconds = 120;
    gemmlab::set_launch_limit(l);
    gemmlab::LaunchWatch first("kernel_under_test_first", 256, 128, 64, 0, 1);
    EXPECT_DOUBLE_EQ(first.limit_seconds(), 3.0);
    EXPECT_DOUBLE_EQ(first.host_limit_seconds(), 123.0);
    EXPECT_NE(first.overran(0, "returned after 130 s, beyond", true).find("123 s (3 s + 2MNK at 10 GFLOP/s + 120 s for a first call)"),
              std::string::npos) << first.overran(0, "x", true);
    gemmlab::LaunchWatch second("kernel_under_test_first", 256, 128, 64, 0, 1);
    EXPECT_DOUBLE_EQ(second.host_limit_seconds(), 3.0) << "the next batch is not a first";
    gemmlab::LaunchWatch patient("kernel_under_test_limit", 256, 128, 64, 0, 1, 20.0);
    EXPECT_DOUBLE_EQ(patient.limit_seconds(), 20.0) << "a perturbed launch's patience, where longer";
    EXPECT_NE(patient.overran(0, "did not end within").find("20 s (the patience of a launch under a schedule perturbation)"),
              std::string::npos);
  }
  EXPECT_DOUBLE_EQ(gemmlab::launch_limit().floor_seconds, before.floor_seconds) << "restored";
  EXPECT_TRUE(gemmlab::first_launch_of("a_kernel_never_launched"));
  EXPECT_FALSE(gemmlab::first_launch_of("a_kernel_never_launched"));
}

TEST(Isolation, AKernelWhoseHostCallNeverReturnsIsATimeoutRowAndTheRunGoesOn) {
  // The parent's watchdog: silent beyond the limit (0.4 s) and the grace (0.6 s), the worker is killed.
  check_run("hang", "sgemm_03_smem", "timeout",
            {"sgemm_03_smem at 128x128x64", "did not finish within its limit of 0.4 s", "the worker process running it was stopped"},
            2, 30.0);
}

TEST(Isolation, AStandbyWorkerTakesOverFromAStoppedOneAndNoneIsLeftRunning) {
  // gemmlab.judge's Python workers take seconds to start: a second one waits ready beside the one at work
  // and takes over when it is stopped; a new standby starts then. Two hangs: the first worker, its standby
  // and one new standby per hang are started (4, against 3 without); every one has ended at the end.
  std::vector<std::string> starts;
  check_run("hang", "sgemm_03_smem", "timeout", {"sgemm_03_smem at 128x128x64", "did not finish within its limit"}, 2,
            30.0, true, &starts);
  EXPECT_EQ(starts.size(), 4u);
  for (const std::string& pid : starts) {
    // The standby is reaped by a thread of its own after the run: given a few seconds.
    bool gone = false;
    for (int t = 0; t < 100 && !gone; ++t) {
      errno = 0;
      gone = ::kill(std::stoi(pid), 0) == -1 && errno == ESRCH;
      if (!gone) std::this_thread::sleep_for(std::chrono::milliseconds(50));
    }
    EXPECT_TRUE(gone) << "worker " << pid << " still runs, or is a zombie never reaped";
  }
  std::vector<std::string> without;
  check_run("hang", "sgemm_03_smem", "timeout", {"sgemm_03_smem at 128x128x64"}, 2, 30.0, false, &without);
  EXPECT_EQ(without.size(), 3u) << "without a standby: the first worker and one per hang";
}

TEST(Isolation, AWorkerThatDiesOfASignalIsAFaultedRowNamingTheSignal) {
  check_run("crash", "sgemm_02_coalesce", "faulted",
            {"the worker process running sgemm_02_coalesce at 128x128x64", "was killed by signal 11"}, 2, 30.0);
}

TEST(Isolation, ALostContextIsAFaultedRowWithCudasErrorAndANewWorker) {
  check_run("lost", "sgemm_05_blocktile_2d", "faulted", {"cudaErrorIllegalAddress", "sgemm_05_blocktile_2d"}, 2, 30.0);
}

TEST(Isolation, ALaunchBeyondItsLimitSeenByTheWorkerIsATimeoutRow) {
  check_run("overrun", "sgemm_01_naive", "timeout",
            {"launch 2 of 3 of sgemm_01_naive at 128x128x64 did not end within its limit of 0.4 s"}, 2, 30.0);
}

TEST(Isolation, AWorkerWhoseProblemCannotBeLetGoOfAfterATimeoutEndsAndTheRunGoesOn) {
  // The H200 (2026-11-29): after its timeout row a worker waited forever in a cudaFree on its way out of the
  // problem, and the run with it. The worker now ends as soon as the row is sent, without unwinding.
  check_run("overrun_stuck", "sgemm_03_smem", "timeout",
            {"launch 2 of 3 of sgemm_03_smem at 128x128x64 did not end within its limit of 0.4 s"}, 2, 30.0);
}

TEST(Isolation, AHostCallThatCameBackLateIsATimeoutRowAndTheSameWorkerGoesOn) {
  check_run("late", "sgemm_04_blocktile_1d", "timeout", {"returned after 9.9 s, beyond its limit"}, 0, 30.0);
}

TEST(Isolation, AWorkerDyingTwiceWithNoKernelRunningStopsTheRunAndKeepsTheJournal) {
  TempDir d("isolation_die_idle");
  gemmlab::RunRequest req = request(d, "die_idle", "");
  const std::string what =
      stop_message<std::runtime_error>(req, "a worker that cannot make a reference was not reported");
  EXPECT_NE(what.find("twice while no kernel under test was running"), std::string::npos) << what;
  EXPECT_NE(what.find("gemmlab's own failure"), std::string::npos) << what;
  EXPECT_FALSE(fs::exists(req.out_csv));
  EXPECT_TRUE(fs::exists(req.out_csv + ".journal"));
}

TEST(Isolation, AWorkerThatCannotStartStopsTheRunBeforeAnythingIsWritten) {
  TempDir d("isolation_no_start");
  gemmlab::RunRequest req = request(d, "no_start", "");
  const std::string what =
      stop_message<gemmlab::engine::WorkerStartFailed>(req, "a worker that did not start was not reported");
  EXPECT_NE(what.find("exited with status 7 before it was ready"), std::string::npos) << what;
  EXPECT_FALSE(fs::exists(req.out_csv));
  EXPECT_FALSE(fs::exists(req.out_csv + ".journal")) << "nothing written";
  EXPECT_FALSE(fs::exists(req.out_csv + ".lock"));
}

TEST(Isolation, AWorkerThatCannotStartAfterAHangStopsTheRunSayingTheGpuIsHeldAndKeepsTheRowsFinished) {
  // The first worker hangs on sgemm_03_smem and is stopped; the next cannot start (a killed launch still
  // holding the GPU): the run stops with a message naming the kernel and --resume, the journal keeping the
  // rows finished and the timeout row, and no CSV.
  TempDir d("isolation_no_restart");
  gemmlab::RunRequest req = request(d, "hang_then_no_start", "sgemm_03_smem");
  const std::string what =
      stop_message<gemmlab::CudaContextLost>(req, "a worker that could not start after a hang was not reported");
  for (const char* w : {"a new worker process for the rows after sgemm_03_smem could not start",
                        "exited with status 7 before it was ready", "still held by that kernel", "--resume",
                        // what became of the stopped worker (killed and reaped: gone)
                        ") has ended", "the stopped worker process (pid "})
    EXPECT_NE(what.find(w), std::string::npos) << w << " in: " << what;
  EXPECT_FALSE(fs::exists(req.out_csv)) << "no CSV of a run that stopped";
  ASSERT_TRUE(fs::exists(req.out_csv + ".journal"));
  const std::string journal = slurp(req.out_csv + ".journal");
  for (const char* k : {"sgemm_01_naive", "sgemm_02_coalesce", "sgemm_03_smem"})
    EXPECT_NE(journal.find(k), std::string::npos) << k << " journaled";
  EXPECT_NE(journal.find("timeout"), std::string::npos) << "the hung row is journaled as a timeout";
  EXPECT_EQ(journal.find("sgemm_04_blocktile_1d"), std::string::npos) << "nothing after the stop ran";
}

TEST(Isolation, InProcessATimeoutStopsTheRunWithItsRowJournaledAndResumeKeepsOrRetriesIt) {
  TempDir d("isolation_in_process");
  gemmlab::RunRequest req = request(d, "none", "");
  req.worker_command = nullptr;  // in this process
  const std::string ran_log = d / "ran_here.txt";
  {
    FakeDevice dev(Misdeed::overrun, "sgemm_03_smem", ran_log);
    EXPECT_THROW(gemmlab::run_experiment(req, dev), gemmlab::LaunchTimeout);
  }
  EXPECT_FALSE(fs::exists(req.out_csv));
  auto kept = recover_journal(req.out_csv + ".journal").rows;
  ASSERT_EQ(kept.size(), 3u) << "the two rows before it and its own";
  const auto row = gemmlab::from_fields(gemmlab::result_columns(), kept[2]);
  EXPECT_EQ(row.kernel, "sgemm_03_smem");
  EXPECT_EQ(row.status, gemmlab::Status::timeout);
  EXPECT_NE(row.note.find("did not end within its limit"), std::string::npos) << row.note;

  // --resume: the timeout row is a result; the run goes on from the next row (the kernel behaves now).
  req.resume = true;
  {
    FakeDevice dev(Misdeed::none, "", ran_log);
    EXPECT_EQ(gemmlab::run_experiment(req, dev), 3) << "a timeout row resumed from the journal counts";
  }
  Csv csv = read_csv(req.out_csv);
  ASSERT_EQ(csv.rows.size(), isolation_test::kRows);
  EXPECT_EQ(csv.col(2, "status"), "timeout");
  EXPECT_EQ(csv.col(7, "status"), "passed") << "the next problem's row of the same kernel ran";
  EXPECT_EQ(slurp(ran_log), "sgemm_01_naive\nsgemm_02_coalesce\nsgemm_03_smem\nsgemm_04_blocktile_1d\n"
                            "sgemm_05_blocktile_2d\nsgemm_01_naive\nsgemm_02_coalesce\nsgemm_03_smem\n"
                            "sgemm_04_blocktile_1d\nsgemm_05_blocktile_2d\n")
      << "resume ran the rows after the timeout, not the timeout again";
  std::fclose(req.log);
}

TEST(Isolation, RetryFailedComputesExactlyTheJournalsTimeoutFaultedAndErrorRowsAgain) {
  TempDir d("isolation_retry");
  gemmlab::RunRequest req = request(d, "none", "");
  req.worker_command = nullptr;
  const std::string ran_log = d / "ran_here.txt";
  {
    FakeDevice dev(Misdeed::lost, "sgemm_04_blocktile_1d", ran_log);
    EXPECT_THROW(gemmlab::run_experiment(req, dev), gemmlab::CudaContextLost);
  }
  auto kept = recover_journal(req.out_csv + ".journal").rows;
  ASSERT_EQ(kept.size(), 4u);
  EXPECT_EQ(gemmlab::from_fields(gemmlab::result_columns(), kept[3]).status, gemmlab::Status::faulted);
  fs::remove(ran_log);
  req.resume = true;
  req.retry_failed = true;
  {
    FakeDevice dev(Misdeed::none, "", ran_log);
    EXPECT_EQ(gemmlab::run_experiment(req, dev), 0) << "every row passed once the faulted one was computed again";
  }
  const Csv csv = read_csv(req.out_csv);
  ASSERT_EQ(csv.rows.size(), isolation_test::kRows);
  for (std::size_t i = 0; i < csv.rows.size(); ++i) EXPECT_EQ(csv.col(i, "status"), "passed") << i;
  EXPECT_EQ(slurp(ran_log), "sgemm_04_blocktile_1d\nsgemm_05_blocktile_2d\nsgemm_01_naive\nsgemm_02_coalesce\n"
                            "sgemm_03_smem\nsgemm_04_blocktile_1d\nsgemm_05_blocktile_2d\n")
      << "the faulted row computed again, the three rows that passed before kept";
  std::fclose(req.log);
}
