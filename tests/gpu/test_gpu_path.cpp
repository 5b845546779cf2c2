// Every row on the GPU path (issue 33; experiments/device/gpu_path.hpp): rows judged where C lies
// equal, in every statistics column, the rows of the host path (Device::measure's default: operands
// packed and uploaded per row, C downloaded, CPU reference and statistics), on the same inputs:
//  * fp64 kernels (the DFMA kernel, cuBLAS DGEMM, one fixed-point emulation) on every default
//    distribution at 1024^3, their operands generated on the GPU as binary64 values;
//  * scaled fp8 kernels on two recipes at 1024^3, both references (the GEMM's error against the
//    dequantized operands, the total error against the fp32 sources), the problem made on the GPU;
//  * the scaled problem made on the GPU against make_scaled_problem entry by entry, fp64 inputs
//    made by GpuDevice::inputs against generate(), and the exact reference from binary64 operands on
//    the GPU against the CPU's;
//  * every registered kernel on one distribution and one recipe at 512^3 stays on the GPU path
//    (the metadata's gpu_path.host_path_rows is 0, no note says "host path").
// The host-path runs are the same plans with `reference = cpu`, which sends every row to the host
// path (each row's note says so, and the metadata counts them). Each test prints a short table.
#include <gtest/gtest.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <iostream>
#include <map>
#include <set>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include <cuda_runtime.h>

#include <cmath>
#include <memory>
#include <stdexcept>

#include "experiments/device/exact_reference_gpu.hpp"
#include "experiments/engine/files.hpp"
#include "experiments/engine/run.hpp"
#include "reference/scaled_fp8.hpp"
#include "tests/gpu/gpu_test_util.hpp"
#include "tests/same_bits.hpp"

namespace fs = std::filesystem;

namespace gemmlab {
namespace {

using testing::same_bits;

struct Dir {
  fs::path path = fs::temp_directory_path() / ("gemmlab_gpu_path_" + std::to_string(::getpid()));
  Dir() { fs::create_directories(path); }
  ~Dir() { fs::remove_all(path); }
};

struct Table {
  std::vector<std::string> header;
  std::vector<std::vector<std::string>> rows;
  std::size_t col(const std::string& name) const {
    const auto it = std::find(header.begin(), header.end(), name);
    if (it == header.end()) throw std::runtime_error("no column " + name);
    return static_cast<std::size_t>(it - header.begin());
  }
};

Table read_table(const std::string& csv) {
  auto records = engine::parse_csv(engine::read_file(csv)).records;
  Table t;
  t.header = records.at(0);
  t.rows.assign(records.begin() + 1, records.end());
  return t;
}

nlohmann::json read_meta(const std::string& csv) {
  return nlohmann::json::parse(engine::read_file(fs::path(csv).replace_extension(".meta.json").string()));
}

RunRequest request(const fs::path& dir, const std::string& name, std::vector<std::string> kernels,
                   std::vector<std::string> dists, int n, const std::string& reference) {
  RunRequest r;
  r.plan.name = "gpu_path";
  r.plan.kernels = std::move(kernels);
  r.plan.distributions = std::move(dists);
  r.plan.sizes = {{n, n, n}};
  r.plan.seeds = {20261121};
  r.plan.reps = 2;
  r.plan.warmup = 1;
  r.plan.spot_checks = 4;
  r.plan.reference = reference;
  r.out_csv = (dir / name).string();
  r.log = std::fopen("/dev/null", "w");
  r.live_progress = false;
  return r;
}

const std::string kHostPrefix = "host path: ";

// Runs the plan on the GPU path (reference auto) and on the host path (reference cpu) and expects
// every column but the timings, `reference` and the host path's note prefix to be equal, and
// `measured` rows measured (passed, no_bound or failed_bound); the others are not_applicable (a
// scaled kernel on another recipe's distribution) and equal too. Prints a table.
void expect_paths_agree(const std::vector<std::string>& kernels, const std::vector<std::string>& dists, int n,
                        int expected_measured, const std::string& what) {
  Dir dir;
  RunRequest gpu = request(dir.path, "gpu.csv", kernels, dists, n, "auto");
  RunRequest host = request(dir.path, "host.csv", kernels, dists, n, "cpu");
  ASSERT_EQ(run_experiment(gpu, gpu_device(0)), 0) << "a kernel raised an error: see the notes in " << gpu.out_csv;
  ASSERT_EQ(run_experiment(host, gpu_device(0)), 0) << "a kernel raised an error: see the notes in " << host.out_csv;
  std::fclose(gpu.log);
  std::fclose(host.log);
  const Table a = read_table(gpu.out_csv), b = read_table(host.out_csv);
  ASSERT_EQ(a.header, b.header);
  ASSERT_EQ(a.rows.size(), b.rows.size());
  const std::set<std::string> skip = {"time_ms_median", "time_ms_min", "time_ms_max", "time_ms_iqr", "tflops",
                                      "sm_clock_mhz", "reference", "note"};
  const std::size_t kc = a.col("kernel"), dc = a.col("distribution"), sc = a.col("status"), nc = a.col("note"),
                    rc = a.col("reference"), mc = a.col("rel_mean"), tc = a.col("total_rel_mean");
  std::printf("\n[ %s ] GPU path against host path, %dx%dx%d\n", what.c_str(), n, n, n);
  std::printf("%-50s %-34s %-12s %-24s %-24s %s\n", "kernel", "distribution", "status", "rel_mean", "total_rel_mean",
              "equal");
  int measured = 0;
  for (std::size_t i = 0; i < a.rows.size(); ++i) {
    const auto &x = a.rows[i], &y = b.rows[i];
    const std::string label = x[kc] + " on " + x[dc];
    bool equal = true;
    for (std::size_t c = 0; c < a.header.size(); ++c)
      if (!skip.count(a.header[c]) && x[c] != y[c]) {
        ADD_FAILURE() << label << ": " << a.header[c] << " is " << x[c] << " on the GPU path, " << y[c]
                      << " on the host path";
        equal = false;
      }
    const bool is_measured = x[sc] == "passed" || x[sc] == "no_bound" || x[sc] == "failed_bound";
    if (is_measured) {
      // The GPU path's note is the host path's without its prefix; the host path's names the reason.
      EXPECT_EQ(x[nc].find(kHostPrefix), std::string::npos) << label << " left the GPU path: " << x[nc];
      EXPECT_EQ(y[nc].rfind(kHostPrefix + "its exact reference is on the CPU", 0), 0u) << label << ": " << y[nc];
      const std::size_t cut = y[nc].find("; ");
      EXPECT_EQ(x[nc], cut == std::string::npos ? "" : y[nc].substr(cut + 2)) << label;
      EXPECT_EQ(x[rc].rfind("gpu_int8_ozaki", 0), 0u) << label << ": reference " << x[rc];
      ++measured;
    } else {
      EXPECT_EQ(x[sc], "not_applicable") << label << ": " << x[nc];
      EXPECT_EQ(x[nc], y[nc]) << label;
    }
    std::printf("%-50s %-34s %-12s %-24s %-24s %s\n", x[kc].c_str(), x[dc].c_str(), x[sc].c_str(), x[mc].c_str(),
                x[tc].c_str(), equal ? "yes" : "NO");
  }
  const nlohmann::json ma = read_meta(gpu.out_csv), mb = read_meta(host.out_csv);
  EXPECT_EQ(ma["gpu_path"]["host_path_rows"], 0) << ma["gpu_path"].dump();
  EXPECT_EQ(mb["gpu_path"]["host_path_rows"], measured) << mb["gpu_path"].dump();
  std::printf("[ %s ] %d rows measured; statistics %.3f s on the GPU path, %.3f s on the host path; kernel setup "
              "%.3f s / %.3f s; host-path rows %s / %s\n",
              what.c_str(), measured, ma["timing_seconds"]["statistics"].get<double>(),
              mb["timing_seconds"]["statistics"].get<double>(), ma["timing_seconds"]["kernel_setup"].get<double>(),
              mb["timing_seconds"]["kernel_setup"].get<double>(), ma["gpu_path"]["host_path_rows"].dump().c_str(),
              mb["gpu_path"]["host_path_rows"].dump().c_str());
  EXPECT_EQ(measured, expected_measured) << "rows measured (the others not_applicable)";
}

TEST(GpuPathGpu, Fp64RowsEqualTheHostPathsBitForBit) {
  GEMMLAB_REQUIRE_GPU();
  GEMMLAB_REQUIRE_FAMILY("fp64");
  GEMMLAB_REQUIRE_FAMILY("cublas");
  expect_paths_agree({"dgemm_01_dfma_tiled", "cublas_dgemm", "cublas_dgemm_emu_b32"}, {"all"}, 1024, 3 * 6, "fp64");
}

TEST(GpuPathGpu, ScaledFp8RowsEqualTheHostPathsBitForBit) {
  GEMMLAB_REQUIRE_GPU();
  GEMMLAB_REQUIRE_FAMILY("hopper");
  GEMMLAB_REQUIRE_FAMILY("cublas");
  for (const char* k : {"hgemm_wgmma_11_fp8scaled_sm8_e4m3_1x128_128x128", "cublaslt_fp8_scaled_e4m3_rowwise_f32"})
    if (const Kernel* kernel = find_kernel(k)) GEMMLAB_REQUIRE_KERNEL(*kernel);
  expect_paths_agree({"hgemm_wgmma_11_fp8scaled_sm8_e4m3_1x128_128x128", "cublaslt_fp8_scaled_e4m3_1x128_128x128_f32",
                      "cublaslt_fp8_scaled_e4m3_rowwise_f32"},
                     {"normal_0_1@e4m3_1x128_128x128", "expspread_1@e4m3_1x128_128x128", "uniform_0_1@e4m3_rowwise"},
                     1024, 2 * 2 + 1, "scaled fp8");  // each kernel on its recipe's distributions
}

// The inputs the run loop gets from a GPU: fp64 operands (GpuDevice::inputs) and a scaled problem
// (GpuDevice::scaled_inputs) equal to the CPU's, read back through the host copies a host-path row
// uses; partial scale blocks along K, M and N.
TEST(GpuPathGpu, InputsMadeOnTheGpuAreTheCpusBitForBit) {
  GEMMLAB_REQUIRE_GPU();
  Device& dev = gpu_device(0);
  const int M = 300, N = 200, K = 257;
  for (const Distribution& d : default_distributions()) {
    auto in = dev.inputs(d, M, N, K, Format::fp64, 7, 0);
    EXPECT_TRUE(same_bits(in->A().v, generate(d, Operand::A, M, K, Format::fp64, 7).v, K)) << d.name() << " A";
    EXPECT_TRUE(same_bits(in->B().v, generate(d, Operand::B, K, N, Format::fp64, 7).v, N)) << d.name() << " B";
  }
  int recipes = 0;
  for (const char* name : {"normal_0_1@e4m3_1x128_128x128", "uniform_0_1@e5m2_1x128_1x128_ue8m0",
                           "expspread_1@e4m3_rowwise", "logunif_-8_8@e4m3_tensor"}) {
    const Distribution d = parse_distribution(name);
    const ScaledProblem cpu = make_scaled_problem(d, M, N, K, 9, 0);
    auto gpu = dev.scaled_inputs(d, M, N, K, 9, 0);
    EXPECT_TRUE(same_bits(gpu->sources().A().v, cpu.A0.v, K)) << name << " A0";
    EXPECT_TRUE(same_bits(gpu->sources().B().v, cpu.B0.v, N)) << name << " B0";
    EXPECT_TRUE(same_bits(gpu->q(Operand::A).v, cpu.A.q.v, K)) << name << " q of A";
    EXPECT_TRUE(same_bits(gpu->q(Operand::B).v, cpu.B.q.v, N)) << name << " q of B";
    EXPECT_TRUE(same_bits(gpu->dequantized().A().v, cpu.A.dequantized().v, K)) << name << " s q of A";
    EXPECT_TRUE(same_bits(gpu->dequantized().B().v, cpu.B.dequantized().v, N)) << name << " s q of B";
    const std::vector<float> sa = kernel_scales(cpu.A, Operand::A, d.recipe->a), sb = kernel_scales(cpu.B, Operand::B, d.recipe->b);
    EXPECT_EQ(gpu->scales().a, sa) << name << " scales of A";
    EXPECT_EQ(gpu->scales().b, sb) << name << " scales of B";
    ++recipes;
  }
  EXPECT_EQ(recipes, 4);
  // A recipe's refusal is make_scaled_problem's, word for word (an all-zero block of A).
  const Distribution zero = parse_distribution("logunif_-200_-160@e4m3_rowwise");
  std::string cpu_msg;
  try {
    make_scaled_problem(zero, 32, 48, 160, 3, 0);
  } catch (const std::invalid_argument& e) {
    cpu_msg = e.what();
  }
  ASSERT_FALSE(cpu_msg.empty());
  try {
    dev.scaled_inputs(zero, 32, 48, 160, 3, 0);
    ADD_FAILURE() << "an all-zero block was accepted on the GPU";
  } catch (const std::invalid_argument& e) {
    EXPECT_EQ(std::string(e.what()), cpu_msg);
  }
}

// The exact reference from binary64 operands already on the GPU (fp64 inputs, dequantized scaled
// operands) against the CPU's exact engine: c, c_odd, |A||B| and c_out bit for bit, every default
// distribution in fp64, wide spreads, an odd shape; and the refusal beyond the digit limit.
TEST(GpuPathGpu, Fp64ReferenceFromDeviceOperandsIsTheCpus) {
  GEMMLAB_REQUIRE_GPU();
  auto upload = [](const Matrix& m) {
    double* p = nullptr;
    if (cudaMalloc(&p, m.v.size() * sizeof(double)) != cudaSuccess ||
        cudaMemcpy(p, m.v.data(), m.v.size() * sizeof(double), cudaMemcpyHostToDevice) != cudaSuccess)
      throw std::runtime_error("test: cudaMalloc/cudaMemcpy failed");
    return std::unique_ptr<double, decltype(&cudaFree)>(p, &cudaFree);
  };
  const int M = 100, N = 37, K = 129;
  std::vector<Distribution> ds = default_distributions();
  for (const char* n : {"expspread_4", "logunif_-120_120"}) ds.push_back(parse_distribution(n));
  for (const Distribution& d : ds) {
    const Matrix A = generate(d, Operand::A, M, K, Format::fp64, 11), B = generate(d, Operand::B, K, N, Format::fp64, 11);
    const auto a = upload(A), b = upload(B);
    const GemmReference g = device::exact_gemm_gpu_device(a.get(), b.get(), M, N, K).to_host(Format::fp64);
    testing::expect_same_reference(g, exact_gemm(A, B, Format::fp64), "device-resident fp64 " + d.name());
  }
  // 2^-1074 beside 1 in one row: beyond the digits the GPU engine takes; refused, never wrong.
  Matrix A(2, 3), B(3, 2);
  A(0, 0) = 1.0, A(0, 1) = std::ldexp(1.0, -1074), A(1, 2) = 3.0;
  B(0, 0) = B(1, 1) = B(2, 0) = 1.0;
  const auto a = upload(A), b = upload(B);
  EXPECT_THROW(device::exact_gemm_gpu_device(a.get(), b.get(), 2, 2, 3), device::GpuReferenceUnavailable);
}

// The main job's shape in small: every registered kernel on one plain distribution and one recipe,
// and no row leaves the GPU path.
TEST(GpuPathGpu, EveryKernelsRowsStayOnTheGpuPath) {
  GEMMLAB_REQUIRE_GPU();
  Dir dir;
  RunRequest r = request(dir.path, "all.csv", {"all"}, {"uniform_0_1", "normal_0_1@e4m3_1x128_128x128"}, 512, "auto");
  EXPECT_EQ(run_experiment(r, gpu_device(0)), 0) << "a kernel raised an error: see the notes in " << r.out_csv;
  std::fclose(r.log);
  const Table t = read_table(r.out_csv);
  const std::size_t kc = t.col("kernel"), nc = t.col("note"), sc = t.col("status");
  std::map<std::string, int> by_status;
  for (const auto& row : t.rows) {
    ++by_status[row[sc]];
    EXPECT_EQ(row[nc].find(kHostPrefix), std::string::npos) << row[kc] << ": " << row[nc];
  }
  const nlohmann::json meta = read_meta(r.out_csv);
  EXPECT_EQ(meta["gpu_path"]["host_path_rows"], 0) << meta["gpu_path"].dump();
  std::printf("\n[ all kernels, 512^3 ] %zu rows:", t.rows.size());
  for (const auto& [status, count] : by_status) std::printf(" %s %d", status.c_str(), count);
  std::printf("; host-path rows %s; non-kernel time / kernel time %.3f\n", meta["gpu_path"]["host_path_rows"].dump().c_str(),
              meta["timing_seconds"]["non_kernel_fraction_of_kernels"].get<double>());
  EXPECT_GT(by_status["passed"], 0);
}

}  // namespace
}  // namespace gemmlab
