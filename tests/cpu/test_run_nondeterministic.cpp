// A kernel whose first and last launch differ bit for bit: the run loop writes status
// nondeterministic with the count in the note, keeps the last launch's statistics, and exits 0
// (the row was produced). A kernel whose launches agree is judged as usual. The same for the launch
// under a perturbation of the schedule (TimingOptions::perturbation), and a row whose GPU context is
// lost stops the run, the rows before it in the journal.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "engine_test_util.hpp"
#include "experiments/engine/run.hpp"
#include "reference/exact_gemm.hpp"

using namespace engine_test;

namespace {

class DriftingDevice final : public gemmlab::Device {
 public:
  DriftingDevice() {
    info_ = engine_test::fake_gpu_info("GPU-fake-drift");
  }
  const gemmlab::DeviceInfo& info() override { return info_; }
  gemmlab::SoftwareVersions software() override { return {"fake", 13000, 13000, "13.0.0", 1980}; }
  std::string hardware_support(const gemmlab::Kernel&) override { return ""; }
  gemmlab::KernelRun run(const gemmlab::Kernel& k, const gemmlab::Matrix& A, const gemmlab::Matrix& B,
                         const gemmlab::TimingOptions&) override {
    gemmlab::KernelRun r;
    r.c = gemmlab::exact_gemm(A, B, k.numerics.output, 1).c_out;
    r.times_ms = {1.0f};
    r.time_ms_median = r.time_ms_min = r.time_ms_max = 1.0;
    r.tflops = 1;
    // The fake "launched twice": sgemm_01_naive's two launches disagreed in 5 entries.
    if (std::string(k.name) == "sgemm_01_naive") r.nondeterministic = 5;
    return r;
  }
  int sm_clock_mhz() override { return 1755; }

 private:
  gemmlab::DeviceInfo info_;
};

}  // namespace

TEST(RunLoop, AKernelWhoseLaunchesDisagreeIsNondeterministicNotJudged) {
  TempDir d("run_nondeterministic");
  DriftingDevice dev;
  gemmlab::RunRequest req;
  req.plan.name = "drift";
  req.plan.kernels = {"sgemm_01_naive", "cublas_gemmex_fp32_pedantic"};
  req.plan.distributions = {"uniform_0_1"};
  req.plan.sizes = {{32, 24, 40}};
  req.plan.seeds = {1};
  req.plan.reps = 2;
  req.plan.warmup = 1;
  req.plan.spot_checks = 2;
  req.out_csv = d / "drift.csv";
  req.log = std::fopen((d / "log.txt").c_str(), "w");
  req.live_progress = false;
  EXPECT_EQ(gemmlab::run_experiment(req, dev), 0);
  std::fclose(req.log);
  const Csv csv = read_csv(req.out_csv);
  ASSERT_EQ(csv.rows.size(), 2u);
  for (std::size_t i = 0; i < 2; ++i) {
    if (csv.col(i, "kernel") == "sgemm_01_naive") {
      EXPECT_EQ(csv.col(i, "status"), "nondeterministic");
      EXPECT_EQ(csv.col(i, "note").rfind("5 of 768 entries differ bit for bit", 0), 0u) << csv.col(i, "note");
      EXPECT_EQ(csv.col(i, "frac_correctly_rounded"), "1") << "the last launch's statistics are kept";
    } else {
      EXPECT_EQ(csv.col(i, "status"), "passed");
    }
  }
}

namespace {

// A device whose perturbed launch (TimingOptions::perturbation) changes sgemm_01_naive's bits, cannot
// be applied to cublas_gemmex_fp32_pedantic, and agrees for the others; and, where `lose_on` names a
// kernel, whose GPU context is lost on that kernel's row.
class PerturbedDevice final : public gemmlab::Device {
 public:
  explicit PerturbedDevice(std::string lose_on = "") : lose_on_(std::move(lose_on)) {
    info_ = engine_test::fake_gpu_info("GPU-fake-perturbed");
  }
  const gemmlab::DeviceInfo& info() override { return info_; }
  gemmlab::SoftwareVersions software() override { return {"fake", 13000, 13000, "13.0.0", 1980}; }
  std::string hardware_support(const gemmlab::Kernel&) override { return ""; }
  gemmlab::KernelRun run(const gemmlab::Kernel& k, const gemmlab::Matrix& A, const gemmlab::Matrix& B,
                         const gemmlab::TimingOptions& opt) override {
    if (k.name == lose_on_)
      throw gemmlab::CudaContextLost("CUDA error cudaErrorIllegalAddress in the fake: the CUDA context is lost");
    gemmlab::KernelRun r;
    r.c = gemmlab::exact_gemm(A, B, k.numerics.output, 1).c_out;
    r.times_ms = {1.0f};
    r.time_ms_median = r.time_ms_min = r.time_ms_max = 1.0;
    r.tflops = 1;
    r.perturbation = opt.perturbation;
    if (std::string(k.name) == "sgemm_01_naive") r.perturbed_differences = 7;
    if (std::string(k.name) == "cublas_gemmex_fp32_pedantic") r.perturbation_not_applied = "no green contexts here";
    return r;
  }
  int sm_clock_mhz() override { return 1755; }

 private:
  gemmlab::DeviceInfo info_;
  std::string lose_on_;
};

gemmlab::RunRequest perturbed_request(const TempDir& d, std::vector<std::string> kernels) {
  gemmlab::RunRequest req;
  req.plan.name = "perturbed";
  req.plan.kernels = std::move(kernels);
  req.plan.distributions = {"uniform_0_1"};
  req.plan.sizes = {{32, 24, 40}};
  req.plan.seeds = {1};
  req.plan.reps = 2;
  req.plan.warmup = 1;
  req.plan.spot_checks = 2;
  req.out_csv = d / "perturbed.csv";
  req.log = std::fopen((d / "log.txt").c_str(), "w");
  req.live_progress = false;
  req.timing.perturbation = "busy_sms_66";
  return req;
}

}  // namespace

TEST(RunLoop, BitsThatChangeUnderAPerturbationAreNondeterministicAndSaySo) {
  TempDir d("run_perturbed");
  PerturbedDevice dev;
  gemmlab::RunRequest req = perturbed_request(d, {"sgemm_01_naive", "cublas_gemmex_fp32_pedantic", "sgemm_02_coalesce"});
  EXPECT_EQ(gemmlab::run_experiment(req, dev), 0);
  std::fclose(req.log);
  const Csv csv = read_csv(req.out_csv);
  ASSERT_EQ(csv.rows.size(), 3u);
  for (std::size_t i = 0; i < 3; ++i) {
    const std::string k = csv.col(i, "kernel"), note = csv.col(i, "note");
    if (k == "sgemm_01_naive") {
      EXPECT_EQ(csv.col(i, "status"), "nondeterministic");
      EXPECT_EQ(note.rfind("7 of 768 entries differ bit for bit between the last launch and one under busy_sms_66", 0), 0u)
          << note;
    } else if (k == "cublas_gemmex_fp32_pedantic") {
      EXPECT_EQ(csv.col(i, "status"), "passed");
      EXPECT_EQ(note.rfind("determinism under busy_sms_66 not checked: no green contexts here", 0), 0u) << note;
    } else {
      EXPECT_EQ(csv.col(i, "status"), "passed");
      EXPECT_EQ(note.find("busy_sms"), std::string::npos) << note;
    }
  }
}

TEST(RunLoop, ALostGpuContextStopsTheRunWithItsFaultedRowAndTheRowsBeforeItJournaled) {
  TempDir d("run_lost");
  PerturbedDevice dev("sgemm_02_coalesce");
  gemmlab::RunRequest req = perturbed_request(d, {"sgemm_01_naive", "sgemm_02_coalesce", "sgemm_03_smem"});
  req.plan.distributions = {"uniform_0_1", "normal_0_1"};
  EXPECT_THROW(gemmlab::run_experiment(req, dev), gemmlab::CudaContextLost);
  std::fclose(req.log);
  // No CSV: the run did not finish. The journal holds the row computed before the lost one, the lost
  // one's (status faulted, CUDA's error in its note: a result, which --resume keeps), and nothing after.
  EXPECT_FALSE(std::filesystem::exists(req.out_csv));
  const std::string journal = req.out_csv + ".journal";
  ASSERT_TRUE(std::filesystem::exists(journal));
  std::ifstream in(journal);
  std::string line;
  std::vector<std::string> rows;
  std::getline(in, line);  // the identity
  while (std::getline(in, line)) rows.push_back(line);
  ASSERT_EQ(rows.size(), 2u);
  EXPECT_NE(rows[0].find("sgemm_01_naive"), std::string::npos) << rows[0];
  const auto lost = gemmlab::from_fields(gemmlab::result_columns(), parse_csv(rows[1] + "\n").records.at(0));
  EXPECT_EQ(lost.kernel, "sgemm_02_coalesce");
  EXPECT_EQ(lost.status, gemmlab::Status::faulted);
  EXPECT_EQ(lost.note, "CUDA error cudaErrorIllegalAddress in the fake: the CUDA context is lost");
}
