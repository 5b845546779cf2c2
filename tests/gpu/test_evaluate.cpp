// `gemmlab inputs` -> a built-in kernel's output -> `gemmlab evaluate` gives exactly the statistics
// `gemmlab run` writes for that kernel (issue 14's second round trip). One CUDA-core and one
// mma.sync kernel: each runs through the device runner on A and B read back from an inputs folder,
// its C is evaluated with the kernel's own numerics record, and every statistics column must equal
// the run's CSV field, character for character (the shortest text that reads back as the same
// double, so bit for bit). `gemmlab run` may compute its reference and statistics on the GPU (the
// oracle); evaluate computes them on the CPU: the test checks that the two agree bit for bit.
#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <fstream>

#include "experiments/engine/evaluate.hpp"
#include "experiments/engine/inputs.hpp"
#include "experiments/engine/run.hpp"
#include "tests/gpu/gpu_test_util.hpp"

namespace fs = std::filesystem;

namespace gemmlab {
namespace {

std::vector<std::string> split_csv(const std::string& line) {
  std::vector<std::string> out(1);
  bool quoted = false;
  for (std::size_t i = 0; i < line.size(); ++i) {
    const char c = line[i];
    if (quoted) {
      if (c == '"' && i + 1 < line.size() && line[i + 1] == '"') out.back() += '"', ++i;
      else if (c == '"') quoted = false;
      else out.back() += c;
    } else if (c == '"') {
      quoted = true;
    } else if (c == ',') {
      out.emplace_back();
    } else {
      out.back() += c;
    }
  }
  return out;
}

void same_statistics_as_run(const std::string& kernel, const std::string& dist, int M, int N, int K) {
  const Kernel* k = find_kernel(kernel);
  ASSERT_NE(k, nullptr) << kernel;
  GEMMLAB_REQUIRE_KERNEL(*k);
  const fs::path dir = fs::temp_directory_path() / ("gemmlab_test_evaluate_" + kernel);
  fs::remove_all(dir);
  fs::create_directories(dir);

  // The run path: gemmlab run for this one kernel, one repetition, its CSV read back.
  RunRequest req;
  req.plan.kernels = {kernel};
  req.plan.distributions = {dist};
  req.plan.sizes = {{M, N, K}};
  req.plan.seeds = {5};
  req.plan.reps = 1;
  req.plan.warmup = 0;
  req.out_csv = (dir / "run.csv").string();
  ASSERT_EQ(run_experiment(req, gpu_device()), 0);
  std::ifstream f(req.out_csv);
  std::string header, line;
  std::getline(f, header);
  std::getline(f, line);
  const std::vector<std::string> cols = split_csv(header), run_fields = split_csv(line);
  ASSERT_EQ(cols, result_columns());
  ASSERT_EQ(run_fields.size(), cols.size());

  // The evaluate path: an inputs folder, the kernel on its A and B, the row of evaluate.
  InputsSpec spec{dist, M, N, K, 5, k->numerics.input};
  write_inputs(spec, (dir / "in").string(), false, 0, "test");
  const InputsFolder in = read_inputs((dir / "in").string());
  const Matrix A = generate(parse_distribution(dist), Operand::A, M, K, k->numerics.input, 5);
  ASSERT_EQ(in.A.v, A.v) << "gemmlab inputs must write gemmlab run's A bit for bit";
  TimingOptions opt;
  opt.warmup = 0, opt.reps = 1, opt.flush_l2 = false;
  const KernelRun run = run_kernel(*k, in.A, in.B, opt);
  Declared d;
  d.kernel = kernel;
  d.numerics = k->numerics;
  d.distribution = dist;
  d.seed = 5;
  std::string label;
  const GemmReference ref = evaluation_reference(in.A, in.B, k->numerics.output, 16, 5, 0, label);
  const ResultRow row = evaluate(in.A, in.B, run.c, d, ref, label, 0);
  const std::vector<std::string> ev_fields = to_fields(row);

  int compared = 0;
#define GEMMLAB_COMPARE(type, name, doc)                                                       \
  {                                                                                          \
    const auto at = std::find(cols.begin(), cols.end(), #name) - cols.begin();               \
    EXPECT_EQ(ev_fields[at], run_fields[at]) << kernel << ": " #name;                         \
    ++compared;                                                                              \
  }
  GEMMLAB_ERROR_STATS_FIELDS(GEMMLAB_COMPARE)
#undef GEMMLAB_COMPARE
  EXPECT_GE(compared, 30);
  // Not `reference`: run may take the GPU oracle (a different engine name, the same exact values).
  for (const char* c : {"status", "accumulation", "input_format", "output_format", "distribution", "seed"}) {
    const auto at = std::find(cols.begin(), cols.end(), c) - cols.begin();
    EXPECT_EQ(ev_fields[at], run_fields[at]) << kernel << ": " << c;
  }
  fs::remove_all(dir);
}

TEST(GpuEvaluate, SimtKernelSameStatisticsAsRun) {
  GEMMLAB_REQUIRE_FAMILY("simt");
  same_statistics_as_run("sgemm_01_naive", "normal_0_1", 128, 96, 256);
}

TEST(GpuEvaluate, MmaKernelSameStatisticsAsRun) {
  GEMMLAB_REQUIRE_FAMILY("mma");
  same_statistics_as_run("hgemm_mma_01_naive_in_mma", "uniform_0_1", 128, 128, 512);
}

}  // namespace
}  // namespace gemmlab
