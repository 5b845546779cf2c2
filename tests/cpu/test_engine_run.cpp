// Progress, stop signals and the multi-worker dispatch (experiments/engine/progress, signals,
// dispatch), with fake workers on the CPU.
#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <csignal>
#include <thread>

#include "engine_test_util.hpp"
#include "experiments/engine/dispatch.hpp"
#include "experiments/engine/files.hpp"
#include "experiments/engine/progress.hpp"
#include "experiments/engine/session.hpp"
#include "experiments/engine/signals.hpp"

using namespace engine_test;

TEST(EngineProgress, FormatsCountElapsedAndEta) {
  EXPECT_EQ(format_duration(0), "0s");
  EXPECT_EQ(format_duration(42.4), "42s");
  EXPECT_EQ(format_duration(187), "3m07s");
  EXPECT_EQ(format_duration(7500), "2h05m");
  EXPECT_EQ(format_progress({0, 510, 0, 0.0}), "0/510 rows (0.0%), elapsed 0s, ETA --");
  // 11 rows after the first took 176 s for 11 units of work; 498 units left: 7968 s.
  EXPECT_EQ(format_progress({12, 510, 0, 192.0, 11, 176.0, 11.0, 498.0}), "12/510 rows (2.4%), elapsed 3m12s, ETA 2h12m");
  EXPECT_EQ(format_progress_bar({5, 10, 0, 10.0, 4, 8.0, 4.0, 5.0}, 10), "[#####-----] 5/10 rows (50.0%), elapsed 10s, ETA 10s");
  EXPECT_EQ(format_progress_bar({10, 10, 0, 10.0, 9, 9.0, 9.0, 0.0}, 4), "[####] 10/10 rows (100.0%), elapsed 10s, ETA 0s");
}

TEST(EngineProgress, EtaWaitsForRowsAfterTheFirstAndIsPacedByThem) {
  // No estimate from the first row (its start-up) or from fewer than kEtaMinRows rows after it.
  EXPECT_FALSE(eta_seconds({1, 552, 0, 7.0, 0, 0.0, 0.0, 551.0}));
  EXPECT_FALSE(eta_seconds({kEtaMinRows, 552, 0, 7.3, kEtaMinRows - 1, 0.3, 2.0, 549.0}));
  // From then on: seconds per unit of work since the first row, times the work left.
  EXPECT_DOUBLE_EQ(*eta_seconds({4, 552, 0, 7.42, 3, 0.42, 3.0, 548.0}), 0.42 / 3 * 548);
  // Resumed rows took no time here and count in neither the pace nor the work left.
  ProgressSnapshot s{110, 200, 100, 21.0, 9, 18.0, 9.0, 90.0};
  EXPECT_DOUBLE_EQ(*eta_seconds(s), 180.0);
  EXPECT_EQ(format_progress(s), "110/200 rows (55.0%), 100 resumed, elapsed 21s, ETA 3m00s");
  EXPECT_FALSE(eta_seconds({100, 200, 100, 5.0}));  // nothing computed yet: no estimate
}

// The reported case: an 83 s run of 552 equal rows whose first row took 7 s (CUDA module load,
// cuBLAS handles, the first reference), then 0.138 s a row. The old estimate (elapsed / rows done
// times rows left) said "ETA 1h04m" on the first line; now there is no ETA until kEtaMinRows rows
// after the first, and then it is the true remaining time.
TEST(EngineProgress, StartUpOfTheFirstRowDoesNotInflateTheEta) {
  double now = 0;
  std::FILE* f = std::fopen("/dev/null", "w");
  Progress p(552, 0, f, false, ProgressOptions{552.0, [&] { return now; }});
  now = 7.0;
  p.row_done();
  EXPECT_FALSE(eta_seconds(p.snapshot()));
  EXPECT_NE(format_progress(p.snapshot()).find("ETA --"), std::string::npos);
  const double old_eta = 7.0 / 1 * 551;  // what the mean over every row said
  EXPECT_GT(old_eta, 3600.0);
  for (std::size_t i = 1; i <= kEtaMinRows; ++i) {
    now += 0.138;
    p.row_done();
  }
  const ProgressSnapshot s = p.snapshot();
  ASSERT_TRUE(eta_seconds(s));
  const double left = 552.0 - 1 - kEtaMinRows;
  EXPECT_NEAR(*eta_seconds(s), 0.138 * left, 1e-9);
  EXPECT_LT(s.elapsed_s + *eta_seconds(s), 90.0);
  std::fclose(f);
}

// Rows of a suite whose size grows in plan order: the pace is per unit of planned work (M N K).
TEST(EngineProgress, EtaIsPacedByPlannedWorkNotRowCount) {
  double now = 0;
  std::FILE* f = std::fopen("/dev/null", "w");
  // 5 small rows (work 1 each, 1 s each after start-up) then 5 rows 8 times larger: work 5 + 40.
  Progress p(10, 0, f, false, ProgressOptions{45.0, [&] { return now; }});
  now = 10;  // start-up
  p.row_done(1);
  for (int i = 0; i < 4; ++i) {
    now += 1;
    p.row_done(1);
  }
  // 4 units in 4 s after the first row; 40 units left: 40 s (a per-row pace would say 5 s).
  EXPECT_DOUBLE_EQ(*eta_seconds(p.snapshot()), 40.0);
  std::fclose(f);
}

TEST(EngineProgress, PlainLinesInLogsAndABarOnATerminal) {
  for (bool live : {false, true}) {
    char* buf = nullptr;
    std::size_t len = 0;
    std::FILE* f = open_memstream(&buf, &len);
    {
      Progress p(3, 1, f, live);
      p.log("[gemmlab] uniform_0_1 64x64x64 seed 1");
      p.row_done();
      p.row_done();
      p.finish();
    }
    std::fclose(f);
    const std::string out(buf, len);
    std::free(buf);
    EXPECT_NE(out.find("3/3 rows (100.0%), 1 resumed"), std::string::npos) << out;
    EXPECT_NE(out.find("[gemmlab] uniform_0_1 64x64x64 seed 1\n"), std::string::npos) << out;
    if (live) {
      EXPECT_NE(out.find("\r\033[2K[##########"), std::string::npos) << out;
    } else {
      EXPECT_EQ(out.find('\r'), std::string::npos) << "a log got terminal control characters: " << out;
      EXPECT_NE(out.find("[gemmlab] 2/3 rows"), std::string::npos) << out;
    }
  }
}

TEST(EngineProgress, PlainLinesAreAtMostOneASecondBesidesTheFirstAndTheLast) {
  char* buf = nullptr;
  std::size_t len = 0;
  std::FILE* f = open_memstream(&buf, &len);
  {
    Progress p(1000, 0, f, false);
    for (int i = 0; i < 1000; ++i) p.row_done();  // a dry run: far faster than one a second
    p.finish();
  }
  std::fclose(f);
  const std::string out(buf, len);
  std::free(buf);
  EXPECT_EQ(out.rfind("[gemmlab] 1/1000 rows", 0), 0u) << out;
  EXPECT_NE(out.find("[gemmlab] 1000/1000 rows (100.0%)"), std::string::npos) << out;
  EXPECT_LE(std::count(out.begin(), out.end(), '\n'), 4) << out;
}

TEST(EngineSignals, SigtermAndSigintAskToStopAndASecondOneKills) {
  for (int sig : {SIGTERM, SIGINT}) {
    install_stop_handlers();
    EXPECT_EQ(stop_signal(), 0);
    std::raise(sig);
    EXPECT_EQ(stop_signal(), sig);  // the process goes on, to finish its row
    EXPECT_EQ(stopped_exit_status(sig), 128 + sig);
    // The handler restored the default action: a second signal would end the process at once.
    struct sigaction now {};
    sigaction(sig, nullptr, &now);
    EXPECT_EQ(now.sa_handler, SIG_DFL);
  }
  remove_stop_handlers();
}

TEST(EngineSignals, ResumeCommandDropsForceAndAddsResume) {
  EXPECT_EQ(resume_command({"build/gemmlab", "run", "--suite", "default", "-o", "my results.csv", "--force"}),
            "build/gemmlab run --suite default -o 'my results.csv' --resume");
  EXPECT_EQ(resume_command({"gemmlab", "run", "--resume", "-o", "x.csv"}), "gemmlab run --resume -o x.csv");
  EXPECT_EQ(resume_command({"gemmlab", "run", "-d", "it's"}), "gemmlab run -d 'it'\\''s' --resume");
}

namespace {

// A fake GPU worker: a problem's rows, one by one, each after a short, varying delay, so that
// workers finish in an order unlike the plan's.
void fake_worker(const Problem& p, WorkerContext& ctx) {
  for (const auto& k : p.rows) {
    if (ctx.should_stop()) return;
    std::this_thread::sleep_for(std::chrono::microseconds(200 * (sha256_hex(k.str())[0] % 4)));
    ctx.emit(fake_row(k));
  }
}

std::string run_with_workers(const TempDir& d, int workers) {
  const std::string csv = d / ("w" + std::to_string(workers) + ".csv");
  RunSession s(OutputPaths::for_csv(csv), identity(small_plan()), plan_rows(small_plan()), {false, false, "test"});
  DispatchOptions opt;
  opt.workers = workers;
  std::set<std::thread::id> threads;
  std::mutex mu;
  opt.worker_start = [&](int) {
    std::lock_guard<std::mutex> lock(mu);
    threads.insert(std::this_thread::get_id());
  };
  DispatchResult r = dispatch(group_by_problem(s.pending()), fake_worker, [&](const auto& row) { s.record(row); }, opt);
  EXPECT_EQ(r.rows_emitted, plan_rows(small_plan()).size());
  EXPECT_FALSE(r.stopped);
  EXPECT_EQ(threads.size(), static_cast<std::size_t>(workers));
  s.finalise({{"workers", workers}});
  return slurp(csv);
}

}  // namespace

TEST(EngineDispatch, AnyNumberOfWorkersGivesTheOneWorkerCsv) {
  TempDir d("dispatch");
  const std::string one = run_with_workers(d, 1);
  ASSERT_EQ(parse_csv(one).records.size(), plan_rows(small_plan()).size() + 1);
  for (int n : {2, 3, 4, 8}) EXPECT_EQ(run_with_workers(d, n), one) << n << " workers";
}

TEST(EngineDispatch, StopFinishesTheRowInProgressAndResumeCompletes) {
  TempDir d("stop");
  const auto paths = OutputPaths::for_csv(d / "out.csv");
  const auto id = identity(small_plan());
  const auto rows = plan_rows(small_plan());
  std::size_t journaled = 0;
  {
    RunSession s(paths, id, rows, {false, false, "test"});
    install_stop_handlers();
    DispatchOptions opt;
    opt.workers = 3;
    opt.should_stop = [] { return stop_signal() != 0; };
    std::atomic<int> emitted{0};
    auto sink = [&](const std::vector<std::string>& row) {
      s.record(row);
      if (++emitted == 7) std::raise(SIGTERM);  // as if `kill -TERM` arrived now
    };
    DispatchResult r = dispatch(group_by_problem(s.pending()), fake_worker, sink, opt);
    remove_stop_handlers();
    EXPECT_TRUE(r.stopped);
    EXPECT_GE(r.rows_emitted, 7u);
    EXPECT_LE(r.rows_emitted, 7u + 2u) << "each other worker may finish only the row it was computing";
    journaled = r.rows_emitted;
    EXPECT_FALSE(s.complete());
  }
  EXPECT_FALSE(fs::exists(paths.csv));
  RunSession s(paths, id, rows, {true, false, "test"});
  EXPECT_EQ(s.resumed(), journaled);
  dispatch(group_by_problem(s.pending()), fake_worker, [&](const auto& row) { s.record(row); }, {});
  s.finalise({});
  std::string expected = csv_line(columns());
  for (const auto& k : rows) expected += csv_line(fake_row(k));
  EXPECT_EQ(slurp(paths.csv), expected);
}

TEST(EngineDispatch, AWorkerErrorStopsTheOthersAndIsRethrown) {
  std::atomic<int> started{0};
  DispatchOptions opt;
  opt.workers = 4;
  auto fn = [&](const Problem& p, WorkerContext& ctx) {
    if (++started == 3) throw std::runtime_error("CUDA error on GPU " + std::to_string(ctx.worker));
    std::this_thread::sleep_for(std::chrono::milliseconds(2));  // a problem takes a while, as on a GPU
    for (const auto& k : p.rows) ctx.emit(fake_row(k));
  };
  EXPECT_THROW(dispatch(group_by_problem(plan_rows(small_plan())), fn, [](const auto&) {}, opt), std::runtime_error);
  EXPECT_LT(started.load(), 24) << "problems kept starting after a worker failed";
}
