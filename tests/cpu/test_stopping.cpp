// When a row's timed launches stop (experiments/report/stopping.hpp): the median's distribution-free
// 95% confidence interval against the binomial table and by simulation, the batches of the noise rule,
// the plan's keys and flags, and the run loop on a fake device that follows the rule: every statistic
// and status the same with a fixed count and with the noise rule.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <unistd.h>

#include "engine_test_util.hpp"
#include "experiments/engine/run.hpp"
#include "experiments/engine/session.hpp"
#include "experiments/plan/plan.hpp"
#include "experiments/report/result.hpp"
#include "experiments/report/stopping.hpp"
#include "reference/exact_gemm.hpp"
#include "reference/rng.hpp"

using namespace gemmlab;

namespace {

// P(B <= j) for B ~ Bin(n, 1/2), summed in long double from the pmf's exact recurrence (an
// independent computation: the code sums in logs).
long double binomial_cdf(std::size_t n, std::size_t j) {
  long double pmf = std::pow(0.5L, static_cast<long double>(n)), cdf = 0;
  for (std::size_t i = 0; i <= j; ++i) {
    cdf += pmf;
    pmf = pmf * static_cast<long double>(n - i) / static_cast<long double>(i + 1);
  }
  return cdf;
}

TEST(Stopping, MedianIntervalRanksAreTheBinomialTables) {
  for (std::size_t n = 0; n < 6; ++n) EXPECT_FALSE(median_ci95_ranks(n)) << n << " times: no 95% interval exists";
  // The published table (1-based ranks): n 6 (1, 6), 9 (2, 8), 10 (2, 9), 20 (6, 15), 100 (40, 61).
  const std::pair<std::size_t, std::pair<std::size_t, std::size_t>> table[] = {
      {6, {0, 5}}, {9, {1, 7}}, {10, {1, 8}}, {20, {5, 14}}, {100, {39, 60}}, {1000, {468, 531}}};
  for (const auto& [n, ranks] : table) EXPECT_EQ(median_ci95_ranks(n), ranks) << n;
  // Every n up to 1000 (past 2^-n's underflow at 1075 too): the interval covers at least 95%, and the
  // next narrower one less (so it is the narrowest symmetric interval that does).
  for (std::size_t n : {6, 7, 8, 13, 37, 64, 255, 256, 999, 1100, 4000}) {
    const auto r = median_ci95_ranks(n);
    ASSERT_TRUE(r) << n;
    EXPECT_EQ(r->second, n - 1 - r->first);
    // [X(j+1), X(n-j)] (1-based) misses the median when j + 1 or more times fall on one side of it.
    const long double coverage = 1 - 2 * binomial_cdf(n, r->first);
    const long double narrower = 1 - 2 * binomial_cdf(n, r->first + 1);
    EXPECT_GE(coverage, 0.95L) << n;
    EXPECT_LT(narrower, 0.95L) << n;
  }
}

TEST(Stopping, MedianIntervalHoldsTheTrueMedianAt95PercentOnSkewedTimes) {
  // Lognormal times (median exactly 1), as skewed as timings are: over 20000 seeded trials the
  // interval holds 1 at least as often as its exact coverage says, within the simulation's noise.
  SplitMix rng{20261129};
  auto normal = [&] {  // Box-Muller
    const double u = std::max(rng.uniform(), 1e-300), v = rng.uniform();
    return std::sqrt(-2 * std::log(u)) * std::cos(6.283185307179586 * v);
  };
  for (std::size_t n : {6, 10, 37}) {
    const auto r = *median_ci95_ranks(n);
    const double coverage = static_cast<double>(1 - 2 * binomial_cdf(n, r.first));
    constexpr int kTrials = 20000;
    int held = 0;
    for (int t = 0; t < kTrials; ++t) {
      std::vector<float> x(n);
      for (float& v : x) v = static_cast<float>(std::exp(normal()));
      std::sort(x.begin(), x.end());
      held += x[r.first] <= 1.0f && 1.0f <= x[r.second];
    }
    const double seen = static_cast<double>(held) / kTrials, sigma = std::sqrt(coverage * (1 - coverage) / kTrials);
    EXPECT_NEAR(seen, coverage, 4 * sigma) << n << " times";
    EXPECT_GT(seen, 0.95 - 4 * sigma) << n << " times";
  }
}

TEST(Stopping, SummaryKeepsTheMedianIqrAndAddsTheInterval) {
  const TimingSummary odd = summarize({3.0f, 1.0f, 2.0f});
  EXPECT_EQ(odd.median, 2.0);
  EXPECT_EQ(odd.min, 1.0);
  EXPECT_EQ(odd.max, 3.0);
  EXPECT_TRUE(std::isnan(odd.ci95_rel)) << "three times: no 95% interval";
  std::vector<float> ten;
  for (int i = 10; i >= 1; --i) ten.push_back(static_cast<float>(i));
  const TimingSummary s = summarize(ten);
  EXPECT_EQ(s.median, 5.5);
  EXPECT_EQ(s.iqr, interquartile_range({1, 2, 3, 4, 5, 6, 7, 8, 9, 10}));
  // n = 10: X(2) = 2 and X(9) = 9, 3.5 on either side of 5.5.
  EXPECT_DOUBLE_EQ(s.ci95_rel, 3.5 / 5.5);
  const TimingSummary flat = summarize(std::vector<float>(12, 0.25f));
  EXPECT_EQ(flat.ci95_rel, 0.0);
  EXPECT_TRUE(std::isnan(summarize({}).median));
}

TEST(Stopping, AFixedCountIsOneBatchOfExactlyThatMany) {
  StoppingRule rule;
  rule.reps = 20;
  LaunchBatches b(rule);
  EXPECT_EQ(b.next(0.2, 0), 20);
  b.add(std::vector<float>(20, 1.0f), 1e9);  // the wall clock does not matter to a fixed count
  EXPECT_TRUE(b.done());
  EXPECT_EQ(b.reason(), StopReason::reps);
  EXPECT_EQ(b.next(0.2, 0), 0);
  EXPECT_EQ(b.times().size(), 20u);
}

TEST(Stopping, QuietTimesStopOnNoiseAfterTheMinimumSamples) {
  StoppingRule rule;  // defaults: 0.5%, 10 samples, no minimum time, 500 ms
  LaunchBatches b(rule);
  const int first = b.next(0.25, 0);
  EXPECT_EQ(first, rule.min_samples) << "the first look comes after the minimum samples";
  std::vector<float> t(first);
  for (int i = 0; i < first; ++i) t[i] = 1.0f + 0.001f * static_cast<float>(i % 3);  // within 0.2%
  b.add(t, 3.0);
  ASSERT_TRUE(b.done());
  EXPECT_EQ(b.reason(), StopReason::noise);
  EXPECT_LE(summarize(b.times()).ci95_rel, rule.max_noise);
}

TEST(Stopping, NoisyTimesGoOnInGrowingBatchesUntilTheTimeLimit) {
  StoppingRule rule;
  rule.max_time_ms = 50;
  LaunchBatches b(rule);
  double elapsed = 0;
  int looks = 0;
  for (int n; (n = b.next(0.5, elapsed)) > 0; ++looks) {
    const std::size_t before = b.times().size();
    if (before >= static_cast<std::size_t>(rule.min_samples)) {
      const int fits = static_cast<int>(std::ceil((rule.max_time_ms - elapsed) / 0.5));
      EXPECT_GE(n, std::min(static_cast<int>((before + 3) / 4), fits))
          << "a batch is a quarter of the samples so far, or what is left of the time limit";
    }
    EXPECT_LE(elapsed + n * 0.5, rule.max_time_ms + 0.5) << "a batch never runs past the time limit";
    std::vector<float> t(n);
    for (int i = 0; i < n; ++i) t[i] = (before + i) % 2 ? 1.0f : 2.0f;  // two modes: the median is never known
    elapsed += n * 0.5;
    b.add(t, elapsed);
  }
  EXPECT_EQ(b.reason(), StopReason::time_limit);
  EXPECT_EQ(b.times().size(), 100u) << "50 ms of 0.5 ms launches";
  EXPECT_LT(looks, 20) << "batches grow: few looks";
}

TEST(Stopping, MinimumTimeAndASlowKernelsTimeLimit) {
  StoppingRule rule;
  rule.min_time_ms = 5;
  LaunchBatches quick(rule);
  double elapsed = 0;
  for (int n; (n = quick.next(0.15, elapsed)) > 0;) {
    elapsed += n * 0.15;
    quick.add(std::vector<float>(n, 0.1f), elapsed);
  }
  EXPECT_EQ(quick.reason(), StopReason::noise);
  EXPECT_GE(quick.times().size(), 50u) << "5 ms of 0.1 ms times";
  // A 276 ms kernel (sgemm_01_naive at 4096^3) under the 500 ms limit: two timed launches.
  LaunchBatches slow{StoppingRule{}};
  EXPECT_EQ(slow.next(276, 0), 2);
  slow.add({276.0f, 275.5f}, 552);
  EXPECT_TRUE(slow.done());
  EXPECT_EQ(slow.reason(), StopReason::time_limit);
  EXPECT_TRUE(std::isnan(summarize(slow.times()).ci95_rel));
}

TEST(Stopping, RulesThatCannotBeFollowedAreRefusedWithTheReason) {
  EXPECT_EQ(StoppingRule{}.problem(), "");
  auto says = [](StoppingRule r, const char* what) {
    EXPECT_NE(r.problem().find(what), std::string::npos) << r.problem() << " | wanted: " << what;
  };
  says({.reps = -1}, "reps -1");
  says({.max_noise = 0}, "max_noise 0");
  says({.max_noise = NAN}, "max_noise");
  says({.min_samples = 0}, "min_samples 0");
  says({.min_time_ms = -1}, "min_time_ms -1");
  says({.max_time_ms = 0}, "max_time_ms 0");
  says({.min_time_ms = 10, .max_time_ms = 5}, "below min_time_ms");
  for (StopReason r : {StopReason::reps, StopReason::noise, StopReason::time_limit})
    EXPECT_EQ(parse_stop_reason(to_string(r)), r);
  EXPECT_FALSE(parse_stop_reason("timeout"));
}

TEST(Stopping, SuiteKeysAndTheDefaultSuite) {
  namespace fs = std::filesystem;
  const fs::path dir = fs::temp_directory_path() / ("gemmlab_stopping_" + std::to_string(::getpid()));
  fs::create_directories(dir);
  const std::string path = (dir / "s.toml").string();
  std::ofstream(path) << "max_noise = 0.01\nmin_samples = 20\nmin_time_ms = 2\nmax_time_ms = 250.5\nwarmup = 2\n";
  const RunPlan p = load_suite(path);
  EXPECT_EQ(p.reps, 0) << "no reps: the noise rule";
  EXPECT_EQ(p.stopping(), (StoppingRule{0, 0.01, 20, 2, 250.5}));
  EXPECT_EQ(p.warmup, 2);
  std::ofstream(path) << "max_time_ms = 1\nmin_time_ms = 2\n";
  EXPECT_THROW(load_suite(path), UsageError);
  std::ofstream(path) << "max_noise = \"half\"\n";
  EXPECT_THROW(load_suite(path), UsageError);
  fs::remove_all(dir);
  // The main job stops on noise with the defaults, one warm-up.
  const RunPlan main_job = load_suite(find_suite("default"));
  EXPECT_EQ(main_job.stopping(), StoppingRule{});
  EXPECT_EQ(main_job.warmup, 1);
}

TEST(Stopping, ThePlanHashCoversTheNoiseRuleOnlyWithoutAFixedCount) {
  engine::PlanSpec noise = engine_test::small_plan();
  noise.reps = 0;
  engine::PlanSpec other = noise;
  other.max_noise = 0.01;
  EXPECT_NE(engine::plan_hash(noise), engine::plan_hash(other)) << "the noise rule decides the launches";
  other = noise;
  other.max_time_ms = 100;
  EXPECT_NE(engine::plan_hash(noise), engine::plan_hash(other));
  EXPECT_EQ(engine::plan_from_json(engine::plan_to_json(other)), other) << "the rule reads back";
  engine::PlanSpec fixed = engine_test::small_plan(), fixed_other = fixed;
  fixed_other.max_noise = 0.01;
  EXPECT_EQ(engine::plan_hash(fixed), engine::plan_hash(fixed_other)) << "a fixed count ignores the noise rule";
  EXPECT_FALSE(engine::plan_to_json(fixed).contains("stopping")) << "a fixed plan hashes as before the rule existed";
}

// A device that times its launches as the GPU's timing helper does (warm-up, then the batches of the
// rule it is given, a deterministic jittery time per launch) and returns the correctly rounded product,
// the same bits at every launch.
class BatchingDevice final : public Device {
 public:
  const DeviceInfo& info() override { return info_; }
  SoftwareVersions software() override { return {"fake", 13000, 13000, "13.0.0", 1980}; }
  std::string hardware_support(const Kernel& k) override { return k.requires_sm90a ? "fake GPU: no sm_90a" : ""; }
  KernelRun run(const Kernel& k, const Matrix& A, const Matrix& B, const TimingOptions& opt) override {
    rules.push_back(opt.rule());
    KernelRun r;
    r.c = exact_gemm(A, B, k.numerics.output, 1).c_out;
    SplitMix jitter{std::hash<std::string>{}(k.name)};
    LaunchBatches batches(opt.rule());
    double elapsed = 0;
    for (int n; (n = batches.next(1.1, elapsed)) > 0;) {
      std::vector<float> t(n);
      for (float& x : t) x = static_cast<float>(1.0 + 0.003 * jitter.uniform());
      elapsed += 1.1 * n;
      batches.add(t, elapsed);
    }
    r.times_ms = batches.times();
    const TimingSummary s = summarize(r.times_ms);
    r.time_ms_median = s.median, r.time_ms_min = s.min, r.time_ms_max = s.max, r.time_ms_iqr = s.iqr;
    r.time_ms_ci95_rel = s.ci95_rel;
    r.stopped_by = batches.reason();
    r.tflops = 2.0 * A.rows * B.cols * double(A.cols) / (s.median * 1e-3) / 1e12;
    r.launch_seconds = r.wall_seconds = elapsed * 1e-3;
    return r;
  }
  int sm_clock_mhz() override { return 1755; }
  std::vector<StoppingRule> rules;

 private:
  DeviceInfo info_ = engine_test::fake_gpu_info("GPU-batching");
};

TEST(Stopping, EveryStatisticAndStatusIsTheSameWithAFixedCountAndWithTheNoiseRule) {
  engine_test::TempDir d("stopping_fixed_vs_noise");
  auto run = [&](int reps, const std::string& name, BatchingDevice& dev) {
    RunRequest req;
    req.plan.name = "stopping";
    req.plan.kernels = {"sgemm_01_naive", "cublas_gemmex_fp16_f32", "cublas_gemmex_fp16_f16", "cublas_gemmex_bf16_f32"};
    req.plan.distributions = {"uniform_0_1", "normal_0_1", "logunif_-4_14"};
    req.plan.sizes = {{96, 64, 128}};
    req.plan.seeds = {7};
    req.plan.reps = reps;
    req.plan.max_noise = 0.002;
    req.plan.spot_checks = 2;
    req.out_csv = d / name;
    req.threads = 2;
    req.log = std::fopen("/dev/null", "w");
    req.live_progress = false;
    EXPECT_EQ(run_experiment(req, dev), 0);
    std::fclose(req.log);
    return engine_test::read_csv(req.out_csv);
  };
  BatchingDevice fixed_dev, noise_dev;
  const engine_test::Csv fixed = run(20, "fixed.csv", fixed_dev), noise = run(0, "noise.csv", noise_dev);
  for (const StoppingRule& r : fixed_dev.rules) EXPECT_EQ(r.reps, 20);
  for (const StoppingRule& r : noise_dev.rules) EXPECT_EQ(r, (StoppingRule{.max_noise = 0.002}));
  ASSERT_EQ(fixed.rows.size(), noise.rows.size());
  ASSERT_EQ(fixed.header, noise.header);
  const std::vector<std::string> timing = {"time_ms_median", "time_ms_min", "time_ms_max", "time_ms_iqr",
                                           "time_ms_ci95_rel", "reps", "stopped_by", "tflops"};
  int measured = 0, stopped_on_noise = 0;
  for (std::size_t i = 0; i < fixed.rows.size(); ++i) {
    for (const std::string& c : fixed.header)
      if (std::find(timing.begin(), timing.end(), c) == timing.end())
        EXPECT_EQ(fixed.col(i, c), noise.col(i, c)) << c << " of row " << i << " (" << fixed.col(i, "kernel") << ")";
    if (fixed.col(i, "time_ms_median").empty()) {
      EXPECT_EQ(noise.col(i, "reps"), "") << "no fixed count: nothing to say before the noise rule runs";
      continue;
    }
    ++measured;
    EXPECT_EQ(fixed.col(i, "reps"), "20");
    EXPECT_EQ(fixed.col(i, "stopped_by"), "reps");
    EXPECT_FALSE(fixed.col(i, "time_ms_ci95_rel").empty());
    const std::string why = noise.col(i, "stopped_by");
    EXPECT_TRUE(why == "noise" || why == "time_limit") << why;
    if (why == "noise") {
      ++stopped_on_noise;
      EXPECT_LE(std::stod(noise.col(i, "time_ms_ci95_rel")), 0.002);
      EXPECT_GE(std::stoi(noise.col(i, "reps")), 10);
    }
  }
  EXPECT_GT(measured, 6);
  EXPECT_EQ(stopped_on_noise, measured) << "0.3% jitter reaches +-0.2% well within 500 ms";
  // The plan's rule is in the metadata (and, with reps 0, in the plan's hash).
  const auto meta = nlohmann::json::parse(engine_test::slurp(engine::OutputPaths::for_csv(d / "noise.csv").meta));
  EXPECT_EQ(meta["plan"]["stopping"]["max_noise"], 0.002);
  EXPECT_FALSE(nlohmann::json::parse(engine_test::slurp(engine::OutputPaths::for_csv(d / "fixed.csv").meta))["plan"]
                   .contains("stopping"));
  // Where each row's time went: one line per row, its parts adding up to the run's.
  const auto& t = meta["timing_seconds"];
  const auto& rows = meta["timing_rows"];
  EXPECT_EQ(rows["columns"], nlohmann::json({"key", "status", "kernels", "kernel_setup", "statistics", "reference",
                                             "inputs", "io", "wall"}));
  ASSERT_EQ(rows["rows"].size(), noise.rows.size());
  double kernels = 0, statistics = 0, reference = 0, wall = 0;
  for (const auto& r : rows["rows"]) {
    kernels += r[2].get<double>();
    statistics += r[4].get<double>();
    reference += r[5].get<double>();
    wall += r[8].get<double>();
  }
  EXPECT_NEAR(kernels, t["kernels"].get<double>(), 1e-9);
  EXPECT_NEAR(statistics, t["statistics"].get<double>(), 1e-9);
  EXPECT_NEAR(reference, t["reference"].get<double>(), 1e-9);
  EXPECT_LE(wall, t["total"].get<double>());
  EXPECT_GE(t["startup"].get<double>(), 0.0);
  EXPECT_LE(t["startup"].get<double>(), t["total"].get<double>());
}

}  // namespace
