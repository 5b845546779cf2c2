// Underflow-aware verdicts (issue 13): the bound's absolute term for gradual underflow, relative
// errors that leave out exact values below the output's normal range, and the case that used to be
// a false failed_bound: fp32 logunif_-140_-120 at 256^3, whose exact sums lie below fp32's smallest
// subnormal, so a CUDA-core kernel returns the correctly rounded +0 everywhere.
#include <gtest/gtest.h>

#include <cmath>
#include <vector>

#include "experiments/engine/run.hpp"
#include "reference/distributions.hpp"
#include "reference/error_stats.hpp"
#include "reference/exact_gemm.hpp"
#include "reference/kernel_emulation.hpp"
#include "reference/numerics.hpp"

using namespace gemmlab;

namespace {
double p2(int e) { return std::ldexp(1.0, e); }
}  // namespace

TEST(Underflow, AbsoluteTermByHand) {
  BoundModel m;  // fp32 throughout, round to nearest
  m.K = 4;
  const double u = p2(-24), gamma = 4 * u / (1 - 4 * u);
  // eta = 2^(emin - p) = 2^(-126 - 24): half fp32's subnormal spacing 2^-149.
  EXPECT_EQ(underflow_term(m), 4 * p2(-150) * (1 + gamma) + p2(-150));
  m.rounding = Rounding::toward_zero;  // truncation: the whole spacing, u_eff = 2u
  const double g2 = 4 * 2 * u / (1 - 4 * 2 * u);
  EXPECT_EQ(underflow_term(m), 4 * p2(-149) * (1 + g2) + p2(-149));
  m.subnormals_flushed = true;  // flushed results: the smallest normal
  EXPECT_EQ(underflow_term(m), 4 * p2(-126) * (1 + g2) + p2(-126));
  m.rounding = Rounding::unknown;
  m.subnormals_flushed = false;
  EXPECT_EQ(underflow_term(m), 4 * p2(-126) * (1 + g2) + p2(-126));
  // fp16 output of an fp32 accumulation: eta_out from fp16 (emin -14, p 11).
  m.rounding = Rounding::nearest_even;
  m.output = Format::fp16;
  EXPECT_EQ(underflow_term(m), 4 * p2(-150) * (1 + gamma) + p2(-25));
  m.K = 1 << 25;  // K u >= 1: no bound, and no absolute term either
  EXPECT_TRUE(std::isinf(underflow_term(m)));
}

TEST(Underflow, CorrectlyRoundedOutputBelowTheSubnormalsPasses) {
  // The case: every exact entry is about 2^-236, far below fp32's 2^-149.
  const Distribution d = parse_distribution("logunif_-140_-120");
  const int n = 256;
  const Matrix A = generate(d, Operand::A, n, n, Format::fp32, 1), B = generate(d, Operand::B, n, n, Format::fp32, 1);
  const GemmReference ref = exact_gemm(A, B, Format::fp32);
  const Numerics fma = cuda_core_fp32_fma();
  // What sgemm_01_naive computes: one fmaf per k from +0 (bit for bit: tests/gpu prediction tests).
  const std::vector<double> x = emulation::emulate(fma, A, B, tc::TcParams{}, 0);
  const ErrorStats s = compute_error_stats(x, ref, bound_model(fma, n));
  EXPECT_EQ(s.frac_correctly_rounded, 1.0);
  EXPECT_GT(s.subnormal_reference, 0);                 // the exact values are non-zero ...
  EXPECT_EQ(s.subnormal_reference + s.zero_reference, s.entries);
  EXPECT_EQ(s.rel_count, 0);                           // ... and none enters the relative errors
  EXPECT_EQ(s.bound_violations, 0);
  EXPECT_TRUE(s.within_bound);
  ResultRow row;
  row.K = n;
  judge(row, s, d, fma);
  EXPECT_EQ(row.status, Status::passed) << row.note;
  // The library baseline (cublas_gemmex_fp32_pedantic: rounding unknown) on the same output.
  Numerics lib = fma;
  lib.accumulation = Accumulation::library;
  lib.accumulation_rounding = Rounding::unknown;
  EXPECT_TRUE(compute_error_stats(x, ref, bound_model(lib, n)).within_bound);
}

TEST(Underflow, AWrongValueInTheUnderflowRangeStillFails) {
  const Distribution d = parse_distribution("logunif_-140_-120");
  const int n = 64;
  const Matrix A = generate(d, Operand::A, n, n, Format::fp32, 2), B = generate(d, Operand::B, n, n, Format::fp32, 2);
  const GemmReference ref = exact_gemm(A, B, Format::fp32);
  std::vector<double> x = ref.c_out;
  x[7] = p2(-140);  // many subnormal spacings away from an exact value of about 2^-236
  const ErrorStats s = compute_error_stats(x, ref, bound_model(cuda_core_fp32_fma(), n));
  EXPECT_EQ(s.bound_violations, 1);
  EXPECT_FALSE(s.within_bound);
  // One subnormal spacing away from the correctly rounded value is within K eta (rounding nearest).
  x[7] = ref.c_out[7] + p2(-149);
  EXPECT_TRUE(compute_error_stats(x, ref, bound_model(cuda_core_fp32_fma(), n)).within_bound);
}

TEST(Underflow, ExactZeroProductsAdmitNoError) {
  // ab == 0 means every product is exactly zero: nothing rounds, so any non-zero output fails,
  // however small the absolute term.
  Matrix A(1, 2), B(2, 1);  // zeros
  const GemmReference ref = exact_gemm(A, B, Format::fp32);
  const ErrorStats ok = compute_error_stats({0.0}, ref, bound_model(cuda_core_fp32_fma(), 2));
  EXPECT_TRUE(ok.within_bound);
  const ErrorStats bad = compute_error_stats({p2(-149)}, ref, bound_model(cuda_core_fp32_fma(), 2));
  EXPECT_EQ(bad.bound_violations, 1);
  EXPECT_FALSE(bad.within_bound);
}
