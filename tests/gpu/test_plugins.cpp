// Kernels from plugins on the GPU: the example plugin (examples/plugin/, a naive fp32 FMA
// chain built as its own library against the C header alone) through `gemmlab run`'s engine beside
// the built-in sgemm_01_naive, whose numerics it shares: every column but the kernel's identity and
// the timings must be equal, bit for bit, on two distributions; `gemmlab predict`'s emulation
// computes its every output bit; `gemmlab order` reveals one fma chain. And a plugin whose launch
// fails gives an `error` row carrying the plugin's own message.
#include <gtest/gtest.h>

#include <set>

#include "experiments/device/order.hpp"
#include "experiments/device/predict.hpp"
#include "experiments/engine/plugin.hpp"
#include "experiments/engine/run.hpp"
#include "gpu_test_util.hpp"
#include "reference/kernel_emulation.hpp"
#include "tests/cpu/engine_test_util.hpp"
#include "tests/plugin_test_util.hpp"

using namespace gemmlab;
using engine_test::TempDir;
using plugin_test::column;
using plugin_test::csv_records;

namespace {

RunRequest request(const TempDir& dir, const std::string& name, std::vector<std::string> plugins,
                   std::vector<std::string> kernels) {
  return plugin_test::plugin_request(dir / name, std::move(plugins), std::move(kernels), {256, 192, 320}, 2);
}

}  // namespace

TEST(Plugins, ExamplePluginRowsEqualSgemm01NaivesInEveryStatistic) {
  GEMMLAB_REQUIRE_GPU();
  GEMMLAB_REQUIRE_FAMILY("simt");
  TempDir dir("gpu_plugins");
  RunRequest req = request(dir, "plugin.csv", {GEMMLAB_EXAMPLE_PLUGIN}, {"sgemm_plugin_naive", "sgemm_01_naive"});
  EXPECT_EQ(run_experiment(req, gpu_device(0)), 0) << "see the notes in " << req.out_csv;
  std::fclose(req.log);
  const auto rows = csv_records(req.out_csv);
  ASSERT_EQ(rows.size(), 1u + 2 * 2);
  const auto& h = rows[0];
  const std::set<std::string> skip = {"kernel", "family", "time_ms_median", "time_ms_min", "time_ms_max", "time_ms_iqr", "tflops",
                                      "sm_clock_mhz"};
  const std::size_t dist = column(h, "distribution"), status = column(h, "status");
  int compared = 0;
  for (std::size_t r = 1; r < rows.size(); r += 2) {
    const auto &plugin = rows[r], &builtin = rows[r + 1];
    ASSERT_EQ(plugin[0], "sgemm_plugin_naive");
    ASSERT_EQ(builtin[0], "sgemm_01_naive");
    for (std::size_t c = 0; c < h.size(); ++c) {
      if (skip.count(h[c])) continue;
      EXPECT_EQ(plugin[c], builtin[c]) << "column " << h[c] << ", " << plugin[dist];
      ++compared;
    }
    EXPECT_EQ(plugin[status], "passed");
  }
  EXPECT_GT(compared, 2 * 40) << "the statistics columns were compared";
}

TEST(Plugins, PredictAndOrderTreatTheExamplePluginAsTheBuiltIn) {
  GEMMLAB_REQUIRE_GPU();
  load_plugin(GEMMLAB_EXAMPLE_PLUGIN);
  const Kernel* k = find_kernel("sgemm_plugin_naive");
  ASSERT_NE(k, nullptr);
  GEMMLAB_REQUIRE_KERNEL(*k);
  const auto params = prediction_params(*k);
  ASSERT_TRUE(params) << "an fma kernel is predictable";
  for (const char* dist : {"uniform_0_1", "normal_0_1"}) {
    const PredictionRow row = predict_and_compare(*k, parse_distribution(dist), 256, 192, 320, 1, *params);
    EXPECT_EQ(row.outputs, 256 * 192);
    EXPECT_EQ(row.mismatches, 0) << row.summary();
    EXPECT_EQ(row.unwritten, 0) << row.summary();
  }
  const RevealedTree t = reveal_tree(*k, 64, 64, 64, 5, 7);
  EXPECT_EQ(t.tree.canonical(), emulation::expected_tree(k->numerics, 64, {}).canonical()) << describe(t.tree);
}

TEST(Plugins, ALaunchFailureIsAnErrorRowWithThePluginsMessage) {
  GEMMLAB_REQUIRE_GPU();
  TempDir dir("gpu_plugins");
  const std::string lib = std::string(GEMMLAB_PLUGIN_FIXTURES) + "/libgemmlab_fixture_launch_fails.so";
  RunRequest req = request(dir, "fails.csv", {lib}, {"plugin_launch_fails"});
  EXPECT_EQ(run_experiment(req, gpu_device(0)), 3) << "a kernel raised an error";
  std::fclose(req.log);
  const auto rows = csv_records(req.out_csv);
  ASSERT_EQ(rows.size(), 3u);
  const auto& h = rows[0];
  const std::size_t status = column(h, "status"), note = column(h, "note");
  for (std::size_t r = 1; r < rows.size(); ++r) {
    EXPECT_EQ(rows[r][status], "error");
    EXPECT_EQ(rows[r][note], "plugin_launch_fails (plugin " + lib + ") failed: fixture launch refused 256x192x320 on purpose");
  }
}
