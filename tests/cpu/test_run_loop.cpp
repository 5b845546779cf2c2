// `gemmlab run`'s loop end to end on the CPU (experiments/engine/run): real registered kernels,
// real inputs, exact references and statistics, with a fake Device standing in for the GPU. It
// returns the exact result rounded to the kernel's output format, refuses sm_90a kernels and fails
// one kernel on purpose, so every status of a row is produced. Checks statuses and exit codes,
// resume skipping exactly the finished rows, refusal after a plan change, --force, the lock,
// --dry-run, shards + merge, and that several workers (GPUs) give the one-worker CSV byte for byte.
#include <gtest/gtest.h>

#include <atomic>
#include <csignal>
#include <map>

#include "engine_test_util.hpp"
#include "experiments/engine/files.hpp"
#include "experiments/engine/lock.hpp"
#include "experiments/engine/merge.hpp"
#include "experiments/engine/run.hpp"
#include "experiments/engine/session.hpp"
#include "experiments/engine/signals.hpp"
#include "reference/exact_gemm.hpp"

using namespace engine_test;
using gemmlab::Device;
using gemmlab::DeviceInfo;
using gemmlab::Kernel;
using gemmlab::KernelRun;
using gemmlab::Matrix;
using gemmlab::RunRequest;
using gemmlab::SoftwareVersions;
using gemmlab::TimingOptions;
using gemmlab::UsageError;

namespace {

constexpr const char* kFailing = "cublas_gemmex_fp32_pedantic";  // the fake raises an error for it

class FakeDevice final : public Device {
 public:
  explicit FakeDevice(int index) {
    info_ = fake_gpu_info("GPU-fake-" + std::to_string(index), index);
  }
  const DeviceInfo& info() override { return info_; }
  SoftwareVersions software() override { return {"fake", 13000, 13000, "13.0.0", 1980}; }
  std::string hardware_support(const Kernel& k) override { return k.requires_sm90a ? "fake GPU: no sm_90a" : ""; }
  KernelRun run(const Kernel& k, const Matrix& A, const Matrix& B, const TimingOptions&) override {
    ++runs;
    if (stop_after_runs > 0 && runs == stop_after_runs) gemmlab::engine::request_stop(SIGTERM);  // as `kill -TERM` would
    if (std::string(k.name) == kFailing) throw std::runtime_error("fake launch failure");
    KernelRun r;
    r.c = gemmlab::exact_gemm(A, B, k.numerics.output, 1).c_out;  // correctly rounded: within every bound
    r.times_ms = {1.0f};
    r.time_ms_median = r.time_ms_min = r.time_ms_max = 1.0;
    r.tflops = 2.0 * A.rows * B.cols * double(A.cols) / 1e-3 / 1e12;
    r.launch_seconds = 0.001;  // the launches: all of the fake's run
    r.wall_seconds = 0.001;
    return r;
  }
  int sm_clock_mhz() override { return 1755; }
  void bind_thread() override { ++bound; }

  std::atomic<int> runs{0}, bound{0};
  int stop_after_runs = 0;

 private:
  DeviceInfo info_;
};

// 5 kernels x 3 distributions x 1 size x 2 seeds = 30 rows in 12 problems; 18 of them run a kernel.
gemmlab::RunPlan plan() {
  gemmlab::RunPlan p;
  p.name = "loop";
  p.kernels = {"sgemm_01_naive", "cublas_gemmex_fp16_f32", "hgemm_wgmma_01_basic_fp16_in_wgmma",
               "cublas_gemmex_fp16_f16", kFailing};
  // logunif_-4_14: fine in fp16 inputs, but products reach 2^28, beyond fp16's range: the
  // fp16-output kernel's row is not_applicable. cancel_-20 cannot be expressed in fp16 at all.
  p.distributions = {"uniform_0_1", "logunif_-4_14", "cancel_-20"};
  p.sizes = {{128, 128, 64}};
  p.seeds = {1, 2};
  p.reps = 3;
  p.warmup = 1;
  p.spot_checks = 4;
  return p;
}
constexpr std::size_t kRows = 30;

RunRequest request(const TempDir& d, const std::string& name = "out.csv") {
  RunRequest r;
  r.plan = plan();
  r.out_csv = d / name;
  r.threads = 2;
  r.command_line = "gemmlab run --suite loop -o " + r.out_csv;
  r.argv = {"gemmlab", "run", "--suite", "loop", "-o", r.out_csv};
  r.log = std::fopen("/dev/null", "w");
  r.live_progress = false;
  return r;
}

nlohmann::json read_meta(const std::string& csv) {
  return nlohmann::json::parse(slurp(OutputPaths::for_csv(csv).meta));
}

// The reference CSV: one worker, uninterrupted.
std::string full_run_csv(const TempDir& d) {
  FakeDevice dev(0);
  RunRequest req = request(d, "reference_run.csv");
  EXPECT_EQ(gemmlab::run_experiment(req, dev), 3);
  std::fclose(req.log);
  return slurp(req.out_csv);
}

}  // namespace

TEST(RunLoop, EveryStatusWithTodaysNotesAndExitCode3ForAKernelError) {
  TempDir d("run_loop_statuses");
  FakeDevice dev(0);
  RunRequest req = request(d);
  EXPECT_EQ(gemmlab::run_experiment(req, dev), 3) << "a kernel raised an error";
  const Csv csv = read_csv(req.out_csv);
  EXPECT_EQ(csv.header, gemmlab::result_columns());
  ASSERT_EQ(csv.rows.size(), kRows);
  std::map<std::string, int> statuses;
  for (std::size_t i = 0; i < csv.rows.size(); ++i) {
    const std::string k = csv.col(i, "kernel"), dist = csv.col(i, "distribution"), st = csv.col(i, "status");
    ++statuses[st];
    const std::string note = csv.col(i, "note");
    if (dist == "cancel_-20" && csv.col(i, "input_format") == "fp16") {
      EXPECT_EQ(st, "not_applicable") << k;
      EXPECT_NE(note.find("is lost when rounding to fp16"), std::string::npos) << note;
      EXPECT_EQ(csv.col(i, "reps"), "") << "nothing was going to run";
    } else if (k == "hgemm_wgmma_01_basic_fp16_in_wgmma") {
      EXPECT_EQ(st, "not_supported");
      EXPECT_EQ(note, "fake GPU: no sm_90a");
      EXPECT_EQ(csv.col(i, "reps"), "3");
    } else if (k == kFailing) {
      EXPECT_EQ(st, "error");
      EXPECT_EQ(note, "fake launch failure");
    } else if (k == "cublas_gemmex_fp16_f16" && dist == "logunif_-4_14") {
      EXPECT_EQ(st, "not_applicable");
      EXPECT_NE(note.find("exact entries exceed fp16's range"), std::string::npos) << note;
    } else {
      EXPECT_EQ(st, "passed") << k << " " << dist << ": " << note;
      EXPECT_EQ(csv.col(i, "frac_correctly_rounded"), "1") << "the fake returns the correctly rounded result";
      EXPECT_EQ(csv.col(i, "time_ms_median"), "1");
      EXPECT_EQ(csv.col(i, "sm_clock_mhz"), "1755");
      EXPECT_NE(csv.col(i, "reference").find("+mpfr_spot4"), std::string::npos) << csv.col(i, "reference");
    }
  }
  EXPECT_EQ(statuses["error"], 6);
  EXPECT_EQ(statuses["not_supported"], 4);
  // Plan order: size, distribution, seed, input format (fp32 first), kernels in list order.
  EXPECT_EQ(csv.col(0, "kernel"), "sgemm_01_naive");
  EXPECT_EQ(csv.col(1, "kernel"), kFailing);
  EXPECT_EQ(csv.col(2, "kernel"), "cublas_gemmex_fp16_f32");

  const nlohmann::json meta = read_meta(req.out_csv);
  EXPECT_EQ(meta["produced_by"], "run");
  EXPECT_EQ(meta["rows"], kRows);
  EXPECT_EQ(meta["kernel_errors"], 6);
  EXPECT_EQ(meta["gpu"]["name"], "Fake GPU");
  EXPECT_EQ(meta["gpu"]["uuid"], "GPU-fake-0");
  EXPECT_EQ(meta["gpu"]["sm_clock_mhz_end"], 1755);
  EXPECT_EQ(meta["columns"], gemmlab::result_columns());
  EXPECT_EQ(meta["engine"]["plan_hash"], plan_hash(gemmlab::plan_spec(req.plan, gemmlab::resolve(req.plan))));
  EXPECT_EQ(meta["engine"]["shard"], "");
  for (const char* part : {"total", "kernels", "non_kernel", "non_kernel_fraction_of_kernels", "kernel_setup",
                           "reference", "statistics", "inputs", "io", "other"})
    EXPECT_TRUE(meta["timing_seconds"].contains(part)) << part;
  EXPECT_DOUBLE_EQ(meta["timing_seconds"]["non_kernel"].get<double>(),
                   meta["timing_seconds"]["total"].get<double>() - meta["timing_seconds"]["kernels"].get<double>());
  // The launches of the 12 runs that returned (the 6 failing ones count as kernel set-up).
  EXPECT_GE(meta["timing_seconds"]["kernels"].get<double>(), 0.001 * 12);
  EXPECT_LT(meta["timing_seconds"]["kernels"].get<double>(), 0.001 * 12 + 1e-9);
  EXPECT_GT(meta["timing_seconds"]["reference"].get<double>(), 0.0);
  EXPECT_EQ(meta["reference_seconds"], meta["timing_seconds"]["reference"]);
  EXPECT_FALSE(fs::exists(req.out_csv + ".journal"));
  EXPECT_FALSE(fs::exists(req.out_csv + ".lock"));
  std::fclose(req.log);
}

TEST(RunLoop, SigtermThenResumeSkipsExactlyTheFinishedRowsAndCountsTheirErrors) {
  TempDir d("run_loop_resume");
  const std::string expected = full_run_csv(d);
  RunRequest req = request(d);
  {
    FakeDevice dev(0);
    dev.stop_after_runs = 5;  // the 5th kernel run asks to stop: its row finishes, nothing new starts
    EXPECT_EQ(gemmlab::run_experiment(req, dev), 128 + SIGTERM);
    EXPECT_FALSE(fs::exists(req.out_csv));
    EXPECT_EQ(dev.runs, 5);
  }
  const auto kept = recover_journal(req.out_csv + ".journal").rows;
  ASSERT_FALSE(kept.empty());
  int kept_runs = 0, kept_errors = 0;
  for (const auto& row : kept) {
    const auto r = gemmlab::from_fields(gemmlab::result_columns(), row);
    kept_runs += r.status == gemmlab::Status::passed || r.status == gemmlab::Status::error;
    kept_errors += r.status == gemmlab::Status::error;
  }
  EXPECT_EQ(kept_runs, 5);
  ASSERT_GE(kept_errors, 1) << "the failing kernel's first row comes second in the plan";

  // Without --resume the journal is not discarded silently.
  {
    FakeDevice dev(0);
    EXPECT_THROW(gemmlab::run_experiment(req, dev), UsageError);
    EXPECT_EQ(dev.runs, 0);
  }
  FakeDevice dev(0);
  req.resume = true;
  EXPECT_EQ(gemmlab::run_experiment(req, dev), 3) << "the error row resumed from the journal still counts";
  EXPECT_EQ(dev.runs, 18 - kept_runs) << "resume ran exactly the kernels of the unfinished rows";
  EXPECT_EQ(slurp(req.out_csv), expected);
  EXPECT_EQ(read_meta(req.out_csv)["kernel_errors"], 6);
  std::fclose(req.log);
}

TEST(RunLoop, ResumeRefusesAfterAPlanChangeAndWithoutAJournal) {
  TempDir d("run_loop_refuse");
  RunRequest req = request(d);
  {
    FakeDevice dev(0);
    dev.stop_after_runs = 2;
    EXPECT_EQ(gemmlab::run_experiment(req, dev), 128 + SIGTERM);
  }
  const std::string journal = slurp(req.out_csv + ".journal");
  FakeDevice dev(0);
  RunRequest changed = req;
  changed.resume = true;
  changed.plan.seeds = {1, 3};
  try {
    gemmlab::run_experiment(changed, dev);
    ADD_FAILURE() << "resumed another plan's journal";
  } catch (const UsageError& e) {
    EXPECT_NE(std::string(e.what()).find("plan"), std::string::npos) << e.what();
  }
  FakeDevice other_gpu(1);  // another GPU (UUID): its timings would not belong with these
  changed.plan = req.plan;
  EXPECT_THROW(gemmlab::run_experiment(changed, other_gpu), UsageError);
  EXPECT_EQ(dev.runs + other_gpu.runs, 0);
  EXPECT_EQ(slurp(req.out_csv + ".journal"), journal) << "a refused resume leaves the journal as it was";

  RunRequest fresh = request(d, "never_started.csv");
  fresh.resume = true;
  EXPECT_THROW(gemmlab::run_experiment(fresh, dev), UsageError);
  EXPECT_FALSE(fs::exists(fresh.out_csv + ".journal"));
  std::fclose(req.log);
  std::fclose(fresh.log);
}

TEST(RunLoop, NoOverwriteWithoutForceAndNoRunWhileAnotherHoldsTheLock) {
  TempDir d("run_loop_force");
  RunRequest req = request(d);
  spit(req.out_csv, "precious\n");
  FakeDevice dev(0);
  try {
    gemmlab::run_experiment(req, dev);
    ADD_FAILURE() << "overwrote an existing CSV";
  } catch (const UsageError& e) {
    EXPECT_NE(std::string(e.what()).find("--force"), std::string::npos) << e.what();
  }
  EXPECT_EQ(slurp(req.out_csv), "precious\n");
  EXPECT_EQ(dev.runs, 0);
  {
    OutputLock other(req.out_csv + ".lock", "gemmlab run (another one)");
    req.force = true;
    try {
      gemmlab::run_experiment(req, dev);
      ADD_FAILURE() << "ran while another run held the lock";
    } catch (const UsageError& e) {
      EXPECT_NE(std::string(e.what()).find("pid " + std::to_string(::getpid())), std::string::npos) << e.what();
    }
    EXPECT_EQ(dev.runs, 0);
  }
  EXPECT_EQ(gemmlab::run_experiment(req, dev), 3);
  EXPECT_EQ(read_csv(req.out_csv).rows.size(), kRows);
  std::fclose(req.log);
}

TEST(RunLoop, DryRunWritesThePlannedRowsWithoutADevice) {
  TempDir d("run_loop_dry");
  RunRequest req = request(d);
  req.dry_run = true;
  EXPECT_EQ(gemmlab::run_experiment(req, std::vector<Device*>{}), 0);
  const Csv csv = read_csv(req.out_csv);
  ASSERT_EQ(csv.rows.size(), kRows);
  full_run_csv(d);
  const Csv real_csv = read_csv(d / "reference_run.csv");
  for (std::size_t i = 0; i < kRows; ++i) {
    EXPECT_EQ(csv.col(i, "status"), "planned");
    EXPECT_EQ(csv.col(i, "rel_mean"), "");
    for (const char* c : {"kernel", "distribution", "M", "N", "K", "seed", "input_format", "accumulation"})
      EXPECT_EQ(csv.col(i, c), real_csv.col(i, c)) << "a dry run lists the rows of a real run, in its order";
  }
  const nlohmann::json meta = read_meta(req.out_csv);
  EXPECT_EQ(meta["dry_run"], true);
  EXPECT_EQ(meta["gpu"]["name"], "none");
  std::fclose(req.log);
}

TEST(RunLoop, ShardsMergeIntoTheOneProcessCsv) {
  TempDir d("run_loop_shards");
  const std::string expected = full_run_csv(d);
  for (bool dry : {false, true}) {
    std::vector<ShardFiles> shards;
    for (int i = 1; i <= 3; ++i) {
      FakeDevice dev(0);
      RunRequest req = request(d, std::string(dry ? "dry" : "run") + "_shard" + std::to_string(i) + ".csv");
      req.dry_run = dry;
      req.shard = std::to_string(i) + "/3";
      const int rc = dry ? gemmlab::run_experiment(req, std::vector<Device*>{}) : gemmlab::run_experiment(req, dev);
      EXPECT_EQ(rc, dry ? 0 : 3) << "shard " << i << " of 3: each has a seed-1 or seed-2 error row";
      EXPECT_EQ(read_meta(req.out_csv)["engine"]["shard"], std::to_string(i) + "/3");
      shards.push_back(ShardFiles::for_csv(req.out_csv));
      std::fclose(req.log);
    }
    const std::string merged = d / (dry ? "dry_merged.csv" : "run_merged.csv");
    write_merged(merge_shards(shards), merged, false);
    if (!dry) EXPECT_EQ(slurp(merged), expected);
    else {
      RunRequest req = request(d, "dry_full.csv");
      req.dry_run = true;
      EXPECT_EQ(gemmlab::run_experiment(req, std::vector<Device*>{}), 0);
      EXPECT_EQ(slurp(merged), slurp(req.out_csv));
      std::fclose(req.log);
    }
  }
}

TEST(RunLoop, TwoWorkersGiveTheOneWorkerCsv) {
  TempDir d("run_loop_workers");
  const std::string expected = full_run_csv(d);
  FakeDevice gpu0(0), gpu1(1);
  RunRequest req = request(d);
  req.threads = 4;  // two per worker: the statistics must not depend on it
  EXPECT_EQ(gemmlab::run_experiment(req, std::vector<Device*>{&gpu0, &gpu1}), 3);
  EXPECT_EQ(slurp(req.out_csv), expected);
  EXPECT_EQ(gpu0.runs + gpu1.runs, 18);
  EXPECT_EQ(gpu0.bound, 1);
  EXPECT_EQ(gpu1.bound, 1);
  const nlohmann::json meta = read_meta(req.out_csv);
  EXPECT_EQ(meta["workers"], 2);
  ASSERT_EQ(meta["gpus"].size(), 2u);
  EXPECT_EQ(meta["gpus"][1]["uuid"], "GPU-fake-1");
  std::fclose(req.log);
}

TEST(RunLoop, GpuListsAreCheckedAgainstTheHost) {
  EXPECT_EQ(gemmlab::parse_gpus("all", 2), (std::vector<int>{0, 1}));
  EXPECT_EQ(gemmlab::parse_gpus("1,0", 2), (std::vector<int>{1, 0}));
  auto what = [](const std::string& text, int count) {
    try {
      gemmlab::parse_gpus(text, count);
    } catch (const UsageError& e) {
      return std::string(e.what());
    }
    return std::string("no error");
  };
  EXPECT_NE(what("3", 1).find("names GPU 3, but this host has 1 GPU (0)"), std::string::npos) << what("3", 1);
  EXPECT_NE(what("all", 0).find("no usable GPU"), std::string::npos);
  EXPECT_NE(what("0,0", 2).find("twice"), std::string::npos);
  for (const char* bad : {"", "x", "0,", "-1", "1.5", "0;1"})
    EXPECT_NE(what(bad, 8).find("is not understood"), std::string::npos) << bad << ": " << what(bad, 8);
}
