// The GPU path's statistics reuse (experiments/device/runner.cu, JudgedOutputs): a row whose output is
// the bits of an earlier row's on the same problem, output format and bound takes that row's
// statistics instead of computing them again. Proven against the host path, which computes every row's
// statistics on the CPU from its own output: the same plan both ways, every column but the timings, the
// reference's label and the host path's note equal, with rows of both kinds (kernels whose outputs are
// one FMA chain's bits, and kernels of other bits) and the metadata counting the rows reused.
#include <gtest/gtest.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <set>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "experiments/engine/files.hpp"
#include "experiments/engine/run.hpp"
#include "tests/gpu/gpu_test_util.hpp"

namespace fs = std::filesystem;

namespace gemmlab {
namespace {

struct Table {
  std::vector<std::string> header;
  std::vector<std::vector<std::string>> rows;
  std::size_t col(const std::string& name) const {
    return static_cast<std::size_t>(std::find(header.begin(), header.end(), name) - header.begin());
  }
};

Table read_table(const std::string& csv) {
  auto records = engine::parse_csv(engine::read_file(csv)).records;
  Table t;
  t.header = records.at(0);
  t.rows.assign(records.begin() + 1, records.end());
  return t;
}

TEST(StatsReuse, RowsOfTheSameBitsTakeTheStatisticsTheHostPathComputes) {
  GEMMLAB_REQUIRE_GPU();
  GEMMLAB_REQUIRE_FAMILY("simt");
  GEMMLAB_REQUIRE_FAMILY("cublas");
  const fs::path dir = fs::temp_directory_path() / ("gemmlab_stats_reuse_" + std::to_string(::getpid()));
  fs::create_directories(dir);
  auto request = [&](const std::string& name, const std::string& reference) {
    RunRequest r;
    r.plan.name = "stats_reuse";
    // One FMA chain in increasing k (the same bits, the same bound) four times, then other bits.
    r.plan.kernels = {"sgemm_02_coalesce", "sgemm_03_smem", "sgemm_05_blocktile_2d", "sgemm_10_warptiling",
                      "cublas_gemmex_fp32_fast_tf32", "cublas_gemmex_fp16_f32", "cublaslt_fp16_f32"};
    r.plan.distributions = {"uniform_0_1", "normal_0_1"};
    r.plan.sizes = {{512, 384, 640}};
    r.plan.seeds = {20261121};
    r.plan.reps = 2;
    r.plan.spot_checks = 4;
    r.plan.reference = reference;
    r.out_csv = (dir / name).string();
    r.log = std::fopen("/dev/null", "w");
    r.live_progress = false;
    return r;
  };
  RunRequest gpu = request("gpu.csv", "auto"), host = request("host.csv", "cpu");
  ASSERT_EQ(run_experiment(gpu, gpu_device(0)), 0);
  ASSERT_EQ(run_experiment(host, gpu_device(0)), 0);
  std::fclose(gpu.log);
  std::fclose(host.log);
  const Table a = read_table(gpu.out_csv), b = read_table(host.out_csv);
  ASSERT_EQ(a.rows.size(), b.rows.size());
  const std::set<std::string> skip = {"time_ms_median", "time_ms_min", "time_ms_max", "time_ms_iqr", "time_ms_ci95_rel",
                                      "stopped_by", "reps", "tflops", "sm_clock_mhz", "reference", "note"};
  for (std::size_t i = 0; i < a.rows.size(); ++i)
    for (std::size_t c = 0; c < a.header.size(); ++c)
      if (!skip.count(a.header[c]))
        EXPECT_EQ(a.rows[i][c], b.rows[i][c]) << a.rows[i][a.col("kernel")] << " on " << a.rows[i][a.col("distribution")]
                                              << ": " << a.header[c];
  const auto meta = nlohmann::json::parse(engine::read_file((dir / "gpu.meta.json").string()));
  const auto host_meta = nlohmann::json::parse(engine::read_file((dir / "host.meta.json").string()));
  const long long reused = meta["gpu_path"]["stats_reused_rows"].get<long long>();
  std::printf("[ reuse    ] %lld of %zu rows took an earlier row's statistics\n", reused, a.rows.size());
  EXPECT_GE(reused, 6) << "three FMA-chain rows after the first, on each distribution";
  EXPECT_LT(reused, static_cast<long long>(a.rows.size())) << "the first of each and the other kernels computed theirs";
  EXPECT_EQ(host_meta["gpu_path"]["stats_reused_rows"], 0) << "the host path computes every row's";
  fs::remove_all(dir);
}

}  // namespace
}  // namespace gemmlab
