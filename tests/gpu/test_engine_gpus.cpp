// `gemmlab run` on real GPUs through the engine: every registered kernel at 512^3 (the smoke plan,
// one distribution, few repetitions) on GPU 0 alone, and, with two or more GPUs, on GPUs 0 and 1 as
// two workers. Every column but the timings must be identical: the statistics are functions of
// the inputs and the kernel's output only, and every kernel must launch on either GPU (function
// attributes and occupancy are per device).
#include <gtest/gtest.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <set>
#include <sstream>

#include "experiments/engine/files.hpp"
#include "experiments/engine/run.hpp"
#include "gpu_test_util.hpp"

namespace fs = std::filesystem;

namespace {

gemmlab::RunRequest smoke_request(const fs::path& dir, const std::string& name) {
  gemmlab::RunRequest r;
  r.plan.name = "gpus";
  r.plan.kernels = {"all"};
  r.plan.distributions = {"uniform_0_1"};
  r.plan.sizes = {{512, 512, 512}};
  r.plan.reps = 2;
  r.plan.warmup = 1;
  r.plan.spot_checks = 4;
  r.out_csv = (dir / name).string();
  r.log = std::fopen("/dev/null", "w");
  r.live_progress = false;
  return r;
}

std::vector<std::vector<std::string>> rows_of(const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  std::stringstream s;
  s << f.rdbuf();
  return gemmlab::engine::parse_csv(s.str()).records;
}

// Fields of every row, the timing columns blanked.
std::vector<std::vector<std::string>> without_timings(std::vector<std::vector<std::string>> rows) {
  const std::set<std::string> timing = {"time_ms_median", "time_ms_min", "time_ms_max", "time_ms_iqr", "tflops",
                                        "sm_clock_mhz"};
  const auto header = rows.at(0);
  for (auto& r : rows)
    for (std::size_t i = 0; i < header.size(); ++i)
      if (timing.count(header[i])) r[i] = "";
  return rows;
}

struct Dir {
  fs::path path = fs::temp_directory_path() / ("gemmlab_gpu_engine_" + std::to_string(::getpid()));
  Dir() { fs::create_directories(path); }
  ~Dir() { fs::remove_all(path); }
};

}  // namespace

TEST(EngineGpus, TwoGpusGiveTheOneGpuStatisticsBitForBit) {
  GEMMLAB_REQUIRE_GPU();
  Dir dir;
  auto one = smoke_request(dir.path, "one.csv");
  const int rc1 = gemmlab::run_experiment(one, gemmlab::gpu_device(0));
  EXPECT_EQ(rc1, 0) << "a kernel raised an error on GPU 0: see the note in " << one.out_csv;
  const auto rows1 = rows_of(one.out_csv);
  ASSERT_GT(rows1.size(), 1u);
  if (gemmlab::device_count() < 2) GTEST_SKIP() << "one GPU here: the two-worker half needs two (nvidia-h200-x2)";

  auto two = smoke_request(dir.path, "two.csv");
  std::vector<gemmlab::Device*> devices = {&gemmlab::gpu_device(0), &gemmlab::gpu_device(1)};
  EXPECT_EQ(gemmlab::run_experiment(two, devices), 0) << "a kernel raised an error on GPU 0 or 1: see " << two.out_csv;
  const auto a = without_timings(rows1), b = without_timings(rows_of(two.out_csv));
  ASSERT_EQ(a.size(), b.size());
  for (std::size_t i = 0; i < a.size(); ++i) EXPECT_EQ(a[i], b[i]) << "row " << i << " (" << a[i][0] << ")";
  std::fclose(one.log);
  std::fclose(two.log);
}

// The GPU oracle inside `gemmlab run`: the same plan with the reference and statistics on the GPU
// (reference = auto) and on the CPU (reference = cpu) gives the same rows, every statistic bit for
// bit; only the `reference` column (the engine's name), the timings and the CPU rows' note prefix
// "host path: <why>; " differ. Every default distribution and a wide exponent range, several input
// and output formats, a non-square size.
TEST(EngineGpus, GpuOracleRowsEqualTheCpuOraclesBitForBit) {
  GEMMLAB_REQUIRE_GPU();
  Dir dir;
  auto request = [&](const std::string& name, const std::string& reference) {
    auto r = smoke_request(dir.path, name);
    r.plan.kernels = {"sgemm_01_naive",          "cublas_gemmex_fp16_f32",   "cublas_gemmex_bf16_f32",
                      "cublas_gemmex_fp16_f16",  "hgemm_mma_01_naive_in_mma", "cublas_gemmex_fp32_fast_tf32"};
    r.plan.distributions = {"all", "logunif_-60_60", "expspread_2"};
    r.plan.sizes = {{256, 192, 320}};
    r.plan.reference = reference;
    return r;
  };
  auto gpu = request("gpu.csv", "auto"), cpu = request("cpu.csv", "cpu");
  EXPECT_EQ(gemmlab::run_experiment(gpu, gemmlab::gpu_device(0)), 0);
  EXPECT_EQ(gemmlab::run_experiment(cpu, gemmlab::gpu_device(0)), 0);
  auto a = without_timings(rows_of(gpu.out_csv)), b = without_timings(rows_of(cpu.out_csv));
  ASSERT_EQ(a.size(), b.size());
  const auto& header = a.at(0);
  const std::size_t ref_col = std::find(header.begin(), header.end(), "reference") - header.begin();
  const std::size_t note_col = std::find(header.begin(), header.end(), "note") - header.begin();
  ASSERT_LT(ref_col, header.size());
  ASSERT_LT(note_col, header.size());
  int on_gpu = 0;
  for (std::size_t i = 1; i < a.size(); ++i) {
    on_gpu += a[i][ref_col].rfind("gpu_int8_ozaki", 0) == 0;
    a[i][ref_col] = b[i][ref_col] = "";
    // A measured CPU row says it was judged on the host (experiments/device/gpu_path.hpp).
    const std::string host = "host path: its exact reference is on the CPU, as --reference cpu or mpfr asks; ";
    if (b[i][note_col].rfind(host, 0) == 0) b[i][note_col].erase(0, host.size());
    EXPECT_EQ(a[i], b[i]) << "row " << i << " (" << a[i][0] << ", " << a[i][header.size() > 10 ? 10 : 0] << ")";
  }
  EXPECT_GT(on_gpu, 0) << "no row's reference ran on the GPU";
  std::fclose(gpu.log);
  std::fclose(cpu.log);
}
