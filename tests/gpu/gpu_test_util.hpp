// Helpers for GPU tests: skip with the reason when there is no GPU (never pass vacuously), and check
// one kernel on one problem against the exact reference with its analytic bound.
#pragma once
#include <gtest/gtest.h>

#include <cmath>
#include <string>

#include "experiments/device/runner.hpp"
#include "kernels/registry.hpp"
#include "reference/distributions.hpp"
#include "reference/error_stats.hpp"
#include "reference/exact_gemm.hpp"
#include "tests/same_bits.hpp"

#define GEMMLAB_REQUIRE_GPU()                                                          \
  do {                                                                                 \
    const auto& gemmlab_dev_ = ::gemmlab::query_device();                              \
    if (!gemmlab_dev_.present) GTEST_SKIP() << "no CUDA GPU: " << gemmlab_dev_.why_absent; \
  } while (0)

// Skips (with the reason) when this build left the kernel family out (cmake -DGEMMLAB_FAMILIES=...).
// A family that is built still has to register every kernel a test names: those tests fail.
#ifndef GEMMLAB_BUILT_FAMILIES
#define GEMMLAB_BUILT_FAMILIES "simt,cublas,mma,wmma,hopper,fp64,cpu"
#endif
#define GEMMLAB_REQUIRE_FAMILY(family)                                                            \
  do {                                                                                            \
    const std::string gemmlab_built_ = std::string(",") + GEMMLAB_BUILT_FAMILIES + ",";           \
    if (gemmlab_built_.find(std::string(",") + (family) + ",") == std::string::npos)              \
      GTEST_SKIP() << "kernel family " << (family) << " is not in this build (GEMMLAB_FAMILIES="    \
                   << GEMMLAB_BUILT_FAMILIES << "); configure with all families to run this test"; \
  } while (0)

// Skips (with the reason) if the kernel cannot run on this GPU/build.
#define GEMMLAB_REQUIRE_KERNEL(kernel)                                                 \
  do {                                                                                 \
    GEMMLAB_REQUIRE_GPU();                                                             \
    std::string gemmlab_why_ = ::gemmlab::hardware_support(kernel, ::gemmlab::query_device()); \
    if (!gemmlab_why_.empty()) GTEST_SKIP() << (kernel).name << ": " << gemmlab_why_;  \
  } while (0)

namespace gemmlab::testing {

// Two references equal bit for bit in c, c_odd, |A||B| and c_out (a GPU engine against a CPU one).
inline void expect_same_reference(const GemmReference& gpu, const GemmReference& cpu, const std::string& what) {
  ASSERT_EQ(gpu.M, cpu.M) << what;
  ASSERT_EQ(gpu.N, cpu.N) << what;
  EXPECT_TRUE(same_bits(gpu.c, cpu.c, gpu.N)) << what << ": c, gpu vs " << cpu.engine;
  EXPECT_TRUE(same_bits(gpu.c_odd, cpu.c_odd, gpu.N)) << what << ": c_odd, gpu vs " << cpu.engine;
  EXPECT_TRUE(same_bits(gpu.abs_ab, cpu.abs_ab, gpu.N)) << what << ": abs_ab, gpu vs " << cpu.engine;
  EXPECT_TRUE(same_bits(gpu.c_out, cpu.c_out, gpu.N)) << what << ": c_out, gpu vs " << cpu.engine;
  // The maxima of A's rows and B's columns (the fixed-point bound's alpha_i, beta_j), where the CPU
  // engine keeps them: a plain problem's reference; a form's (reference/gemm_form.hpp) has none.
  if (cpu.row_max_a.empty() && cpu.col_max_b.empty()) return;
  EXPECT_TRUE(same_bits(gpu.row_max_a, cpu.row_max_a, 1)) << what << ": row_max_a, gpu vs " << cpu.engine;
  EXPECT_TRUE(same_bits(gpu.col_max_b, cpu.col_max_b, 1)) << what << ": col_max_b, gpu vs " << cpu.engine;
}

struct Checked {
  KernelRun run;
  GemmReference ref;
  ErrorStats stats;
};

// Generates A, B from `dist` and `seed` in the kernel's input format, runs the kernel once (no
// timing repetitions), computes the exact reference and the statistics against the kernel's bound.
inline Checked run_and_check(const Kernel& k, int M, int N, int K, const std::string& dist,
                             std::uint64_t seed = 1) {
  Distribution d = parse_distribution(dist);
  Matrix A = generate(d, Operand::A, M, K, k.numerics.input, seed);
  Matrix B = generate(d, Operand::B, K, N, k.numerics.input, seed);
  TimingOptions opt;
  opt.warmup = 0;
  opt.reps = 1;
  opt.flush_l2 = false;
  Checked out;
  out.run = run_kernel(k, A, B, opt);
  out.ref = exact_gemm(A, B, k.numerics.output);
  out.stats = compute_error_stats(out.run.c, out.ref, bound_model(k.numerics, K));
  // A check against an infinite bound (K u_eff >= 1) could not fail: refuse it.
  if (!std::isfinite(out.stats.gamma_bound))
    ADD_FAILURE() << k.name << " at K=" << K << " has no finite gamma_K bound (K u_eff >= 1): choose a smaller K for this test";
  return out;
}

}  // namespace gemmlab::testing
