// A kernel whose first and last launch differ bit for bit: the run loop writes status
// nondeterministic with the count in the note, keeps the last launch's statistics, and exits 0
// (the row was produced). A kernel whose launches agree is judged as usual.
#include <gtest/gtest.h>

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
