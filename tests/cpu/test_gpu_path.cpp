// The guard that keeps the main job on the GPU path (issue 33): the default suite, resolved as
// `gemmlab run --suite default` resolves it, holds no (kernel, format) pair that the GPU path cannot
// serve, by the one predicate GpuDevice::measure chooses the path by (experiments/device/gpu_path.hpp).
// A kernel added with an output the GPU cannot widen would otherwise put every one of its rows on
// the host path (packing, upload, download and CPU statistics per row: seconds each at 4096^3).
// And a row that does leave it is never silent: its note says why and the metadata counts it (a
// fake device that reports a host path for every row, plain and scaled fp8).
#include <gtest/gtest.h>

#include <cstdio>
#include <string>

#include <nlohmann/json.hpp>

#include "engine_test_util.hpp"
#include "experiments/device/gpu_path.hpp"
#include "experiments/engine/run.hpp"
#include "experiments/engine/session.hpp"
#include "experiments/plan/plan.hpp"
#include "kernels/registry.hpp"
#include "reference/exact_gemm.hpp"

namespace gemmlab {
namespace {

std::string refusals(const std::vector<const Kernel*>& kernels) {
  std::string out;
  for (const Kernel* k : kernels)
    if (const std::string why = gpu_path_refusal(*k); !why.empty())
      out += std::string("\n  ") + k->name + " (" + info(k->numerics.input).name + " -> " +
             info(k->numerics.output).name + "): " + why;
  return out;
}

TEST(GpuPath, TheDefaultSuiteHoldsOnlyKernelsTheGpuPathServes) {
  const ResolvedPlan r = resolve(load_suite(find_suite("default")));
  ASSERT_FALSE(r.kernels.empty()) << "the default suite resolved to no kernel";
  const std::string refused = refusals(r.kernels);
  EXPECT_TRUE(refused.empty()) << "the default suite holds kernels whose rows would leave the GPU path:" << refused
                               << "\ngive the GPU path their formats (experiments/device/gpu_path.hpp and the "
                                  "widening in experiments/device/inputs_gpu.cu), or keep them out of `all`";
}

TEST(GpuPath, EveryRegisteredKernelIsServed) {
  const std::string refused = refusals(all_kernels());
  EXPECT_TRUE(refused.empty()) << "registered kernels the GPU path cannot serve:" << refused;
}

TEST(GpuPath, ServesEveryInputFormatAndTheOutputsItWidens) {
  for (Format in : all_formats())
    for (Format out : {Format::fp64, Format::fp32, Format::fp16, Format::bf16, Format::e4m3, Format::e5m2})
      EXPECT_EQ(gpu_path_refusal(in, out), "") << info(in).name << " -> " << info(out).name;
  const std::string why = gpu_path_refusal(Format::fp32, Format::tf32);
  EXPECT_NE(why.find("output format tf32"), std::string::npos) << why;
}

// The correctly rounded product of what it is handed (the scaled form: rowwise scales applied), with
// the CPU defaults of Device for everything else; `reason`, when not empty, is reported as each
// row's host path, as GpuDevice reports a row it judged on the host.
class HostPathDevice final : public Device {
 public:
  explicit HostPathDevice(std::string why) : reason(std::move(why)) { info_ = engine_test::fake_gpu_info("GPU-fake-0"); }
  const DeviceInfo& info() override { return info_; }
  SoftwareVersions software() override { return {"fake", 13000, 13000, "13.0.0", 1980}; }
  std::string hardware_support(const Kernel&) override { return ""; }
  int sm_clock_mhz() override { return 1755; }
  KernelRun run(const Kernel& k, const Matrix& A, const Matrix& B, const TimingOptions&) override {
    return result(exact_gemm(A, B, k.numerics.output, 1).c_out, A, B);
  }
  KernelRun run_scaled(const Kernel& k, const Matrix& A, const Matrix& B, const OperandScales& s,
                       const TimingOptions&) override {
    Matrix a = A, b = B;  // rowwise: one scale per row of A and column of B
    for (int i = 0; i < a.rows; ++i)
      for (int t = 0; t < a.cols; ++t) a(i, t) *= s.a.at(i);
    for (int t = 0; t < b.rows; ++t)
      for (int j = 0; j < b.cols; ++j) b(t, j) *= s.b.at(j);
    return result(exact_gemm(a, b, k.numerics.output, 1).c_out, A, B);
  }
  Measurement measure(const Kernel& k, ProblemInputs& in, ProblemReference& ref, const TimingOptions& opt,
                      const BoundModel& model, bool keep_output, int threads) override {
    Measurement m = Device::measure(k, in, ref, opt, model, keep_output, threads);
    m.host_path = reason;
    return m;
  }
  Measurement measure_scaled(const Kernel& k, ScaledInputs& in, ProblemReference& gemm_ref, ProblemReference& total_ref,
                             const TimingOptions& opt, const BoundModel& model, int threads) override {
    Measurement m = Device::measure_scaled(k, in, gemm_ref, total_ref, opt, model, threads);
    m.host_path = reason;
    return m;
  }
  std::string reason;

 private:
  static KernelRun result(std::vector<double> c, const Matrix& A, const Matrix& B) {
    KernelRun r;
    r.c = std::move(c);
    r.times_ms = {1.0f};
    r.time_ms_median = r.time_ms_min = r.time_ms_max = 1.0;
    r.tflops = 2.0 * A.rows * B.cols * double(A.cols) / 1e-3 / 1e12;
    r.launch_seconds = r.wall_seconds = 0.001;
    return r;
  }
  DeviceInfo info_;
};

// Runs sgemm_01_naive and the rowwise scaled kernel on a plain and a rowwise distribution (2 rows
// measured, 2 not_applicable) on `dev`; returns the CSV and the metadata.
std::pair<engine_test::Csv, nlohmann::json> run_on(Device& dev, const engine_test::TempDir& d, const std::string& name) {
  RunRequest req;
  req.plan.name = "host_path";
  req.plan.kernels = {"sgemm_01_naive", "cublaslt_fp8_scaled_e4m3_rowwise_f32"};
  req.plan.distributions = {"uniform_0_1", "normal_0_1@e4m3_rowwise"};
  req.plan.sizes = {{32, 48, 160}};
  req.plan.seeds = {3};
  req.plan.reps = 1;
  req.plan.warmup = 0;
  req.plan.spot_checks = 2;
  req.out_csv = d / name;
  req.threads = 2;
  req.command_line = "test";
  req.log = std::fopen("/dev/null", "w");
  req.live_progress = false;
  EXPECT_EQ(run_experiment(req, dev), 0);
  std::fclose(req.log);
  return {engine_test::read_csv(req.out_csv),
          nlohmann::json::parse(engine_test::slurp(engine::OutputPaths::for_csv(req.out_csv).meta))};
}

TEST(GpuPath, ARowOnTheHostPathSaysSoAndIsCounted) {
  if (!find_kernel("sgemm_01_naive") || !find_kernel("cublaslt_fp8_scaled_e4m3_rowwise_f32"))
    GTEST_SKIP() << "the simt or cublas family is not in this build";
  engine_test::TempDir d("gpu_path_host");
  HostPathDevice host("because the test says so"), gpu("");
  const auto [h, hmeta] = run_on(host, d, "host.csv");
  const auto [g, gmeta] = run_on(gpu, d, "gpu.csv");
  ASSERT_EQ(h.rows.size(), 4u);
  ASSERT_EQ(g.rows.size(), 4u);
  int measured = 0;
  for (std::size_t i = 0; i < h.rows.size(); ++i) {
    const std::string k = h.col(i, "kernel"), dist = h.col(i, "distribution");
    SCOPED_TRACE(k + " on " + dist + ": " + h.col(i, "note"));
    if (h.col(i, "status") == "not_applicable") {
      EXPECT_EQ(h.col(i, "note"), g.col(i, "note"));  // never measured: nothing to say of a path
      continue;
    }
    ++measured;
    EXPECT_EQ(h.col(i, "status"), "passed");
    EXPECT_EQ(h.col(i, "note"), "host path: because the test says so; " + g.col(i, "note"));
    EXPECT_EQ(g.col(i, "note").find("host path"), std::string::npos);
    EXPECT_EQ(h.col(i, "rel_std"), g.col(i, "rel_std"));
    EXPECT_EQ(h.col(i, "total_rel_std"), g.col(i, "total_rel_std"));
  }
  EXPECT_EQ(measured, 2);
  EXPECT_EQ(hmeta["gpu_path"]["host_path_rows"], 2) << hmeta["gpu_path"].dump();
  EXPECT_EQ(hmeta["gpu_path"]["host_path_reasons"]["because the test says so"], 2) << hmeta["gpu_path"].dump();
  EXPECT_EQ(gmeta["gpu_path"]["host_path_rows"], 0) << gmeta["gpu_path"].dump();
  EXPECT_TRUE(gmeta["gpu_path"]["host_path_reasons"].empty()) << gmeta["gpu_path"].dump();
}

}  // namespace
}  // namespace gemmlab
