// The timing helper's noise rule on the GPU (experiments/report/stopping.hpp, device/runner.cu): the
// output is the same bits whether a row's repetitions are a fixed count or as many as the noise asks,
// the row says what stopped it, and the time limit holds.
#include <cmath>

#include "experiments/report/result.hpp"
#include "tests/gpu/gpu_test_util.hpp"

namespace gemmlab {
namespace {

const Kernel& kernel(const char* name) {
  const Kernel* k = find_kernel(name);
  if (!k) throw std::runtime_error(std::string("test needs kernel ") + name);
  return *k;
}

TEST(GpuStopping, TheOutputIsTheSameBitsWithAFixedCountAndOnNoise) {
  GEMMLAB_REQUIRE_FAMILY("simt");
  GEMMLAB_REQUIRE_FAMILY("cublas");
  for (const char* name : {"sgemm_10_warptiling", "cublas_gemmex_fp16_f32"}) {
    const Kernel& k = kernel(name);
    GEMMLAB_REQUIRE_KERNEL(k);
    const Distribution d = parse_distribution("normal_0_1");
    const Matrix A = generate(d, Operand::A, 512, 384, k.numerics.input, 5);
    const Matrix B = generate(d, Operand::B, 384, 640, k.numerics.input, 5);
    TimingOptions fixed;
    fixed.warmup = 1;
    fixed.reps = 20;
    const KernelRun a = run_kernel(k, A, B, fixed);
    EXPECT_EQ(a.times_ms.size(), 20u);
    EXPECT_EQ(a.stopped_by, StopReason::reps);
    EXPECT_TRUE(std::isfinite(a.time_ms_ci95_rel));
    TimingOptions noise = fixed;
    noise.reps = 0;  // the defaults: +-0.5% after 10 repetitions, at most 500 ms
    const KernelRun b = run_kernel(k, A, B, noise);
    EXPECT_TRUE(testing::same_bits(b.c, a.c, 640)) << name << ": the bits of C depend on how many launches were timed";
    EXPECT_EQ(a.nondeterministic, 0) << name;
    EXPECT_EQ(b.nondeterministic, 0) << name;
    EXPECT_GE(b.times_ms.size(), 10u);
    if (b.stopped_by == StopReason::noise) {
      EXPECT_LE(b.time_ms_ci95_rel, noise.max_noise) << name;
    } else {
      EXPECT_EQ(b.stopped_by, StopReason::time_limit) << name;
    }
    EXPECT_EQ(b.time_ms_ci95_rel, summarize(b.times_ms).ci95_rel);
    std::printf("[ stopping ] %s: fixed %zu reps median %.4f ms (+-%.2f%%); noise %zu reps median %.4f ms (+-%.2f%%, %s)\n",
                name, a.times_ms.size(), a.time_ms_median, 100 * a.time_ms_ci95_rel, b.times_ms.size(),
                b.time_ms_median, 100 * b.time_ms_ci95_rel, to_string(b.stopped_by));
  }
}

TEST(GpuStopping, TheTimeLimitEndsASlowRow) {
  GEMMLAB_REQUIRE_FAMILY("simt");
  const Kernel& k = kernel("sgemm_01_naive");
  GEMMLAB_REQUIRE_KERNEL(k);
  const Distribution d = parse_distribution("uniform_0_1");
  const Matrix A = generate(d, Operand::A, 1024, 1024, Format::fp32, 2);
  const Matrix B = generate(d, Operand::B, 1024, 1024, Format::fp32, 2);
  TimingOptions opt;
  opt.warmup = 1;
  opt.reps = 0;
  opt.min_samples = 1000000;  // the noise can never stop it: only the limit
  opt.max_time_ms = 30;
  const KernelRun r = run_kernel(k, A, B, opt);
  EXPECT_EQ(r.stopped_by, StopReason::time_limit);
  EXPECT_GE(r.times_ms.size(), 1u);
  // The last batch may start just before the limit: it ends within about a launch and a look past it.
  double timed_ms = 0;
  for (float t : r.times_ms) timed_ms += t;
  EXPECT_LT(timed_ms, 30 + 2 * r.time_ms_max + 5) << r.times_ms.size() << " repetitions";
  EXPECT_EQ(r.unwritten, 0);
}

}  // namespace
}  // namespace gemmlab
