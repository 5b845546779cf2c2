// Scaled fp8 through `gemmlab run`'s loop on the CPU (experiments/engine/run.cpp), with a fake
// Device that returns the correctly rounded product of the dequantized operands it is handed (so it
// also checks that the kernel gets the fp8 values and the scales in kernel_scales' layout): the
// recipe column, both references (the GEMM error is then within u_out, the total error is the
// quantization's and larger), not_applicable rows for kernels that cannot take a recipe and for
// data a recipe refuses (an all-zero block), and kernel_scales' layouts.
#include <gtest/gtest.h>

#include <cmath>
#include <string>

#include "engine_test_util.hpp"
#include "experiments/engine/run.hpp"
#include "reference/exact_gemm.hpp"
#include "reference/scaled_fp8.hpp"

using namespace engine_test;
using namespace gemmlab;

namespace {

class ScaledFakeDevice final : public Device {
 public:
  ScaledFakeDevice() {
    info_ = fake_gpu_info("GPU-fake-0");
  }
  const DeviceInfo& info() override { return info_; }
  SoftwareVersions software() override { return {"fake", 13000, 13000, "13.0.0", 1980}; }
  std::string hardware_support(const Kernel&) override { return ""; }
  KernelRun run(const Kernel& k, const Matrix& A, const Matrix& B, const TimingOptions&) override {
    return result(exact_gemm(A, B, k.numerics.output, 1).c_out, A, B);
  }
  // Understands the rowwise layout only (A: M scales, B: N scales), which the plan below uses.
  KernelRun run_scaled(const Kernel& k, const Matrix& A, const Matrix& B, const OperandScales& s,
                       const TimingOptions&) override {
    ++scaled_runs;
    EXPECT_EQ(k.scale_a, ScaleGranularity::outer);
    EXPECT_EQ(s.a.size(), static_cast<std::size_t>(A.rows));
    EXPECT_EQ(s.b.size(), static_cast<std::size_t>(B.cols));
    Matrix a = A, b = B;
    for (int i = 0; i < a.rows; ++i)
      for (int kk = 0; kk < a.cols; ++kk) a(i, kk) *= s.a[i];
    for (int kk = 0; kk < b.rows; ++kk)
      for (int j = 0; j < b.cols; ++j) b(kk, j) *= s.b[j];
    for (double q : A.v) EXPECT_EQ(q, round_to(Format::e4m3, q)) << "the kernel gets the fp8 values";
    return result(exact_gemm(a, b, k.numerics.output, 1).c_out, A, B);
  }
  int sm_clock_mhz() override { return 1755; }
  int scaled_runs = 0;

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

}  // namespace

TEST(ScaledFp8Run, BothReferencesPerRowAndNotApplicableRowsThatSayWhy) {
  TempDir d("scaled_fp8_run");
  // logunif_-200_-160: every fp32 source value is 0, so every block is all zero (refused).
  RunRequest req = one_launch_request(
      d, "scaled", {"cublaslt_fp8_scaled_e4m3_rowwise_f32", "cublaslt_fp8_scaled_e4m3_tensor_f32", "cublaslt_fp8_e4m3_f32"},
      {"normal_0_1@e4m3_rowwise", "uniform_0_1", "logunif_-200_-160@e4m3_rowwise"}, {32, 48, 160});
  ScaledFakeDevice dev;
  EXPECT_EQ(run_experiment(req, dev), 0);
  std::fclose(req.log);
  const Csv csv = read_csv(req.out_csv);
  ASSERT_EQ(csv.rows.size(), 9u);
  EXPECT_EQ(dev.scaled_runs, 1);
  int checked = 0;
  for (std::size_t i = 0; i < csv.rows.size(); ++i) {
    const std::string k = csv.col(i, "kernel"), dist = csv.col(i, "distribution"), st = csv.col(i, "status"),
                      note = csv.col(i, "note");
    SCOPED_TRACE(k + " on " + dist + ": " + st + " " + note);
    if (dist == "normal_0_1@e4m3_rowwise" && k == "cublaslt_fp8_scaled_e4m3_rowwise_f32") {
      ++checked;
      EXPECT_EQ(st, "passed");
      EXPECT_EQ(csv.col(i, "recipe"), "e4m3_rowwise");
      EXPECT_EQ(csv.col(i, "frac_correctly_rounded"), "1") << "judged against the dequantized operands";
      EXPECT_LE(std::stod(csv.col(i, "rel_max_abs")), std::ldexp(1.0, -24));
      // Against the sources the error is the quantization's: e4m3 keeps 4 bits, so far above u_out.
      const double total = std::stod(csv.col(i, "total_rel_std"));
      EXPECT_GT(total, 1e-3);
      EXPECT_LT(total, 1.0);
      EXPECT_GT(std::stod(csv.col(i, "total_normwise")), std::stod(csv.col(i, "normwise")));
      EXPECT_NE(csv.col(i, "total_calc_diff"), "");
    } else if (dist == "normal_0_1@e4m3_rowwise") {
      ++checked;
      EXPECT_EQ(st, "not_applicable");
      EXPECT_NE(note.find(k == "cublaslt_fp8_e4m3_f32" ? "takes no scales" : "takes tensor x tensor scales"),
                std::string::npos);
      EXPECT_NE(note.find("recipe e4m3_rowwise gives outer x outer"), std::string::npos);
      EXPECT_EQ(csv.col(i, "total_rel_std"), "");
    } else if (dist == "uniform_0_1" && k != "cublaslt_fp8_e4m3_f32") {
      ++checked;
      EXPECT_EQ(st, "not_applicable");
      EXPECT_NE(note.find("is a scaled fp8 kernel"), std::string::npos);
      EXPECT_EQ(csv.col(i, "recipe"), "");
    } else if (dist == "logunif_-200_-160@e4m3_rowwise" && k == "cublaslt_fp8_scaled_e4m3_rowwise_f32") {
      ++checked;
      EXPECT_EQ(st, "not_applicable");
      EXPECT_NE(note.find("is all zero (amax 0)"), std::string::npos);
    }
  }
  EXPECT_EQ(checked, 6);
}

TEST(ScaledFp8Run, KernelScaleLayoutsAreCuBlasLts) {
  const Distribution d = parse_distribution("normal_0_1@e4m3_1x128_128x128");
  // K = 5 blocks of 128 (the last partial): B's K blocks are padded to L4 = 8.
  const ScaledProblem p = make_scaled_problem(d, 3, 260, 600, 1);
  const std::vector<float> a = kernel_scales(p.A, Operand::A, ScaleGranularity::k128);
  ASSERT_EQ(a.size(), 3u * 5);
  for (int i = 0; i < 3; ++i)
    for (int kb = 0; kb < 5; ++kb) EXPECT_EQ(a[kb * 3 + i], p.A.scale_of(i, 128 * kb));
  const std::vector<float> b = kernel_scales(p.B, Operand::B, ScaleGranularity::blk128);
  ASSERT_EQ(b.size(), 3u * 8);  // N = 260: 3 blocks of 128
  for (int nb = 0; nb < 3; ++nb)
    for (int kb = 0; kb < 8; ++kb) EXPECT_EQ(b[nb * 8 + kb], kb < 5 ? p.B.scale_of(128 * kb, 128 * nb) : 0.0f);
  const ScaledProblem v = make_scaled_problem(parse_distribution("normal_0_1@e4m3_1x128_1x128"), 3, 7, 300, 1);
  const std::vector<float> vb = kernel_scales(v.B, Operand::B, ScaleGranularity::k128);
  for (int kb = 0; kb < 3; ++kb)
    for (int n = 0; n < 7; ++n) EXPECT_EQ(vb[kb * 7 + n], v.B.scale_of(128 * kb, n));
}
