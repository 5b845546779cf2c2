// The engine's run loop (experiments/engine/engine): complete runs, a SIGTERM that keeps the
// journal and prints how to resume, and a SIGKILLed process whose run --resume completes with
// no row missing and none twice.
#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <csignal>
#include <thread>

#include "engine_test_util.hpp"
#include "experiments/engine/engine.hpp"
#include "experiments/engine/files.hpp"

using namespace engine_test;

namespace {

std::string expected_csv() {
  std::string s = csv_line(columns());
  for (const auto& k : plan_rows(small_plan())) s += csv_line(fake_row(k));
  return s;
}

EngineRequest request(const TempDir& d, bool resume, int workers, std::FILE* log) {
  EngineRequest r;
  r.paths = OutputPaths::for_csv(d / "out.csv");
  r.identity = identity(small_plan());
  r.rows = plan_rows(small_plan());
  r.session = {resume, false, "gemmlab run -o out.csv"};
  r.argv = {"gemmlab", "run", "-k", "all", "-o", r.paths.csv};
  if (resume) r.argv.push_back("--resume");
  r.workers = workers;
  r.log = log;
  r.live_progress = false;
  return r;
}

// Rows one by one; `raise_after` rows in, a SIGTERM arrives (as from `kill` or Slurm).
WorkerFn worker(std::atomic<int>* emitted, int raise_after, std::chrono::microseconds per_row) {
  return [=](const Problem& p, WorkerContext& ctx) {
    ctx.log("[gemmlab] " + p.key.str());
    for (const auto& k : p.rows) {
      if (ctx.should_stop()) return;
      std::this_thread::sleep_for(per_row);
      ctx.emit(fake_row(k));
      if (++*emitted == raise_after) std::raise(SIGTERM);
    }
  };
}

struct CapturedLog {
  char* buf = nullptr;
  std::size_t len = 0;
  std::FILE* f = open_memstream(&buf, &len);
  std::string text() {
    std::fflush(f);
    return std::string(buf, len);
  }
  ~CapturedLog() {
    std::fclose(f);
    std::free(buf);
  }
};

nlohmann::json meta() { return {{"gemmlab_version", "0.1"}}; }

}  // namespace

TEST(EngineLoop, CompleteRunWritesThePlanAndCleansUp) {
  TempDir d("loop");
  CapturedLog log;
  std::atomic<int> emitted{0};
  EngineResult r = run_rows(request(d, false, 2, log.f), worker(&emitted, -1, {}), meta);
  EXPECT_EQ(r.exit_status, 0);
  EXPECT_TRUE(r.complete);
  EXPECT_EQ(r.computed, plan_rows(small_plan()).size());
  EXPECT_EQ(slurp(d / "out.csv"), expected_csv());
  EXPECT_FALSE(fs::exists(d / "out.csv.journal"));
  EXPECT_FALSE(fs::exists(d / "out.csv.lock"));
  EXPECT_NE(log.text().find("48/48 rows (100.0%)"), std::string::npos) << log.text();
  EXPECT_NE(log.text().find("[gemmlab] uniform_0_1|64x64x64|1|fp32"), std::string::npos) << log.text();
}

TEST(EngineLoop, SigtermKeepsTheJournalAndPrintsTheResumeCommand) {
  TempDir d("sigterm");
  std::size_t kept = 0;
  {
    CapturedLog log;
    std::atomic<int> emitted{0};
    EngineResult r = run_rows(request(d, false, 1, log.f), worker(&emitted, 10, {}), meta);
    EXPECT_EQ(r.exit_status, 128 + SIGTERM);
    EXPECT_FALSE(r.complete);
    EXPECT_EQ(r.computed, 10u) << "one worker finishes exactly the row in progress";
    kept = r.computed;
    const std::string text = log.text();
    EXPECT_NE(text.find("stopped by SIGTERM: 10 of 48 rows are kept in " + d / "out.csv.journal"), std::string::npos) << text;
    EXPECT_NE(text.find("\n  gemmlab run -k all -o " + d / "out.csv" + " --resume\n"), std::string::npos) << text;
    EXPECT_FALSE(fs::exists(d / "out.csv"));
    EXPECT_FALSE(fs::exists(d / "out.csv.lock"));
  }
  // After the run, SIGTERM has its default action again.
  struct sigaction now {};
  sigaction(SIGTERM, nullptr, &now);
  EXPECT_EQ(now.sa_handler, SIG_DFL);

  CapturedLog log;
  std::atomic<int> emitted{0};
  EngineResult r = run_rows(request(d, true, 3, log.f), worker(&emitted, -1, {}), meta);
  EXPECT_EQ(r.exit_status, 0);
  EXPECT_EQ(r.resumed, kept);
  EXPECT_EQ(r.computed, 48u - kept) << "resume skips exactly the finished rows";
  EXPECT_EQ(slurp(d / "out.csv"), expected_csv());
  EXPECT_NE(log.text().find("resuming '" + d / "out.csv.journal" + "': 10 of 48 rows finished"), std::string::npos)
      << log.text();
}

TEST(EngineLoop, SigkilledRunResumesWithNoRowMissingOrTwice) {
  TempDir d("sigkill");
  const std::string journal = d / "out.csv.journal";
  const pid_t child = ::fork();
  ASSERT_GE(child, 0);
  if (child == 0) {
    std::FILE* devnull = std::fopen("/dev/null", "w");
    std::atomic<int> emitted{0};
    try {
      run_rows(request(d, false, 2, devnull), worker(&emitted, -1, std::chrono::milliseconds(20)), meta);
    } catch (...) {
    }
    ::_exit(0);  // not reached in time: the parent kills it first
  }
  // Kill it mid-run, without any chance to clean up, once some rows are on disk.
  std::size_t seen = 0;
  for (int i = 0; i < 2000 && seen < 6; ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
    if (fs::exists(journal)) seen = recover_journal(journal).rows.size();
  }
  ::kill(child, SIGKILL);
  int status = 0;
  ::waitpid(child, &status, 0);
  ASSERT_TRUE(WIFSIGNALED(status)) << "the run ended before it was killed: slow the fake worker down";
  ASSERT_GE(seen, 6u);
  EXPECT_FALSE(fs::exists(d / "out.csv"));

  CapturedLog log;
  std::atomic<int> emitted{0};
  EngineResult r = run_rows(request(d, true, 2, log.f), worker(&emitted, -1, {}), meta);
  EXPECT_EQ(r.exit_status, 0);
  EXPECT_GE(r.resumed, seen);
  EXPECT_EQ(r.resumed + r.computed, 48u);
  EXPECT_EQ(slurp(d / "out.csv"), expected_csv());
}
