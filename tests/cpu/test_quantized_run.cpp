// Quantized recipes through `gemmlab run`'s loop on the CPU (experiments/engine/run.cpp), with a fake Device
// whose quantized kernels compute from the tensors of the kernel layouts they are handed (decoding the
// bytes of reference/quantized_layout.hpp): the recipe column, the three errors (the kernel's against the
// dequantized operands, the total against the sources, the problem's quantization error), the bound of
// where the scales are applied (a kernel rounding the dequantized weights to bf16 passes under the
// operands bound with bf16 products; the same output claimed exact fails), not_applicable rows that say why.
// And the built-in cublaslt_int8_rowwise's declarations (recipe, scale placement, roundings, numerics, sizes,
// suites) and its rows through the same loop.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <iostream>
#include <stdexcept>
#include <string>

#include "engine_test_util.hpp"
#include "experiments/engine/evaluate.hpp"
#include "experiments/engine/journal.hpp"
#include "experiments/engine/run.hpp"
#include "experiments/plan/plan.hpp"
#include "kernels/registry.hpp"
#include "reference/exact_gemm.hpp"
#include "reference/quantized_layout.hpp"

using namespace engine_test;
using namespace gemmlab;

namespace {

// Decodes a kernel-layout operand back to its dequantized values, from the bytes alone.
Matrix decode(const QuantizedOperand& op) {
  const KernelOperandLayout l = kernel_layout(op.spec, op.which, op.q.rows, op.q.cols);
  const std::vector<std::uint8_t> e = kernel_elements(op), s = kernel_block_scales(op), z = kernel_zeros(op);
  const bool a = op.which == Operand::A;
  const int K = a ? op.q.cols : op.q.rows;
  Matrix out(op.q.rows, op.q.cols);
  for (int i = 0; i < out.rows; ++i)
    for (int j = 0; j < out.cols; ++j) {
      const int k = a ? j : i;
      double q;
      if (op.spec.element == Format::uint4) {
        const std::size_t byte = a ? static_cast<std::size_t>(i) * (out.cols / 2) + j / 2
                                   : static_cast<std::size_t>(i / 2) * out.cols + j;
        q = (e[byte] >> (4 * (k % 2))) & 0xF;
      } else if (op.spec.element == Format::int8) {
        q = static_cast<std::int8_t>(e[static_cast<std::size_t>(i) * out.cols + j]);
      } else {  // bf16, two bytes
        const std::size_t t = static_cast<std::size_t>(i) * out.cols + j;
        q = from_bits(Format::bf16, e[2 * t] | static_cast<std::uint64_t>(e[2 * t + 1]) << 8);
      }
      if (!l.scales.present()) {
        out(i, j) = q;
        continue;
      }
      const int block = op.spec.block > 0 ? op.spec.block : K;
      if (op.spec.scheme == QuantScheme::channel) {
        const std::size_t t = a ? i : j;
        float f;
        std::memcpy(&f, &s[4 * t], 4);
        out(i, j) = q * f;
      } else {  // uint4 group of B: (K/G, N) scales and zeros, bf16
        const std::size_t t = static_cast<std::size_t>(i / block) * out.cols + j;
        const double sc = from_bits(Format::bf16, s[2 * t] | static_cast<std::uint64_t>(s[2 * t + 1]) << 8);
        const double zr = from_bits(Format::bf16, z[2 * t] | static_cast<std::uint64_t>(z[2 * t + 1]) << 8);
        out(i, j) = (q - 8) * sc + zr;
      }
    }
  return out;
}

class QuantizedFakeDevice final : public Device {
 public:
  QuantizedFakeDevice() { info_ = fake_gpu_info("GPU-fake-0"); }
  const DeviceInfo& info() override { return info_; }
  SoftwareVersions software() override { return {"fake", 13000, 13000, "13.0.0", 1980}; }
  std::string hardware_support(const Kernel&) override { return ""; }
  KernelRun run(const Kernel& k, const Matrix& A, const Matrix& B, const TimingOptions&) override {
    return result(exact_gemm(A, B, k.numerics.output, 1).c_out, A.rows, B.cols, A.cols);
  }
  // The int8 kernel: the exact product of the decoded operands, rounded once to fp32. The weight-only kernel
  // ("w4"): the decoded weights rounded to bf16 first (as a W4A16 kernel dequantizes in registers).
  KernelRun run_quantized(const Kernel& k, const QuantizedOperand& A, const QuantizedOperand& B,
                          const TimingOptions&) override {
    ++quantized_runs;
    if (lose == k.name)
      throw CudaContextLost(std::string("CUDA error cudaErrorIllegalAddress in the fake's launch of ") + k.name);
    const Matrix a = decode(A);
    Matrix b = decode(B);
    if (std::string(k.name).find("w4") != std::string::npos)
      for (double& x : b.v) x = round_to(Format::bf16, x);
    return result(exact_gemm(a, b, k.numerics.output, 1).c_out, a.rows, b.cols, a.cols);
  }
  int sm_clock_mhz() override { return 1755; }
  int quantized_runs = 0;
  std::string lose;  // a kernel whose launch loses the GPU context

 private:
  static KernelRun result(std::vector<double> c, int M, int N, int K) {
    KernelRun r;
    r.c = std::move(c);
    r.times_ms = {1.0f};
    r.time_ms_median = r.time_ms_min = r.time_ms_max = 1.0;
    r.tflops = 2.0 * M * N * double(K) / 1e-3 / 1e12;
    r.launch_seconds = r.wall_seconds = 0.001;
    return r;
  }
  DeviceInfo info_;
};

void dummy_launch(const GemmArgs&) {}

// A quantized kernel descriptor (never launched: the fake device computes its output).
Kernel quantized_kernel(const char* name, const char* recipe, QuantScales where, int roundings, Accumulation acc,
                        Format compute) {
  Kernel k{};
  k.name = name;
  k.family = "user";
  k.description = "test";
  k.numerics = declared_numerics(Format::fp64, Format::fp32, acc, compute, Format::fp32, 0);
  k.layout_a = k.layout_b = Layout::row_major;
  k.m_multiple = k.n_multiple = k.k_multiple = 1;
  k.launch = dummy_launch;
  k.quantized = recipe;
  k.quantized_scales = where;
  k.quantized_scale_roundings = roundings;
  return k;
}

}  // namespace

TEST(QuantizedRun, ThreeErrorsPerRowBoundsByScalePlacementAndRowsThatSayWhy) {
  const Kernel int8 = quantized_kernel("test_int8_mm", "int8_rowwise", QuantScales::output, 1, Accumulation::fma,
                                       Format::fp64);
  const Kernel w4 = quantized_kernel("test_w4_mm", "bf16_x_uint4_g32", QuantScales::operands, 0, Accumulation::fma,
                                     Format::bf16);
  // The same weight-only output, claimed to multiply the exact dequantized values (compute fp64): above its bound.
  const Kernel w4_exact = quantized_kernel("test_w4_claims_exact", "bf16_x_uint4_g32", QuantScales::operands, 0,
                                           Accumulation::fma, Format::fp64);
  const Kernel w4_unknown = quantized_kernel("test_w4_unknown", "bf16_x_uint4_g32", QuantScales::unknown, 0,
                                             Accumulation::fma, Format::bf16);
  for (const Kernel* k : {&int8, &w4, &w4_exact, &w4_unknown}) register_kernel(*k);
  TempDir d("quantized_run");
  RunRequest req = one_launch_request(
      d, "quantized", {"test_int8_mm", "test_w4_mm", "test_w4_claims_exact", "test_w4_unknown", "cublaslt_fp8_e4m3_f32"},
      {"normal_0_1@int8_rowwise", "uniform_-1_1@bf16_x_uint4_g32", "uniform_0_1", "logunif_-200_-160@int8_rowwise"},
      {16, 32, 64});
  QuantizedFakeDevice dev;
  const int rc = run_experiment(req, dev);
  std::fclose(req.log);
  for (const Kernel* k : {&int8, &w4, &w4_exact, &w4_unknown}) unregister_kernel(k->name);
  EXPECT_EQ(rc, 0);
  const Csv csv = read_csv(req.out_csv);
  ASSERT_EQ(csv.rows.size(), 20u);
  EXPECT_EQ(dev.quantized_runs, 4);
  int checked = 0;
  for (std::size_t i = 0; i < csv.rows.size(); ++i) {
    const std::string k = csv.col(i, "kernel"), dist = csv.col(i, "distribution"), st = csv.col(i, "status"),
                      note = csv.col(i, "note");
    SCOPED_TRACE(k + " on " + dist + ": " + st + " " + note);
    if (dist == "normal_0_1@int8_rowwise" && k == "test_int8_mm") {
      ++checked;
      EXPECT_EQ(st, "passed");
      EXPECT_EQ(csv.col(i, "recipe"), "int8_rowwise");
      EXPECT_EQ(csv.col(i, "frac_correctly_rounded"), "1") << "judged against the dequantized operands";
      EXPECT_NE(note.find("scales on the output, 1 fp32 roundings"), std::string::npos);
      // The quantization error (normwise: mean-zero data makes relative errors heavy-tailed): int8 keeps about
      // 8 bits, far above the kernel's own error, which is all the total adds to it.
      const double quant = std::stod(csv.col(i, "quant_normwise")), total = std::stod(csv.col(i, "total_normwise"));
      std::cout << "[ info ] int8 quant_normwise " << quant << ", total_normwise " << total << ", normwise "
                << csv.col(i, "normwise") << "\n";
      EXPECT_GT(quant, 1e-4);
      EXPECT_LT(quant, 0.1);
      EXPECT_NEAR(total, quant, 1e-6);
      EXPECT_LT(std::stod(csv.col(i, "normwise")), 1e-6);
      EXPECT_NE(csv.col(i, "quant_rel_std"), "");
    } else if (dist == "uniform_-1_1@bf16_x_uint4_g32" && k == "test_w4_mm") {
      ++checked;
      EXPECT_EQ(st, "passed");
      EXPECT_NE(note.find("scales on the operands, dequantized values rounded to bf16"), std::string::npos);
      EXPECT_GT(std::stod(csv.col(i, "rel_max_abs")), 1e-5) << "the bf16 rounding of the weights shows";
      EXPECT_NE(csv.col(i, "quant_rel_std"), "");
    } else if (dist == "uniform_-1_1@bf16_x_uint4_g32" && k == "test_w4_claims_exact") {
      ++checked;
      EXPECT_EQ(st, "failed_bound") << "exact products claimed, bf16 weights delivered";
    } else if (dist == "uniform_-1_1@bf16_x_uint4_g32" && k == "test_w4_unknown") {
      ++checked;
      EXPECT_EQ(st, "no_bound");
      EXPECT_NE(note.find("not declared"), std::string::npos);
    } else if (dist == "normal_0_1@int8_rowwise" && k == "test_w4_mm") {
      ++checked;
      EXPECT_EQ(st, "not_applicable");
      EXPECT_NE(note.find("reads bf16_x_uint4_g32 operands; normal_0_1@int8_rowwise gives int8_rowwise"), std::string::npos);
      EXPECT_EQ(csv.col(i, "quant_rel_std"), "");
    } else if (dist == "normal_0_1@int8_rowwise" && k == "cublaslt_fp8_e4m3_f32") {
      ++checked;
      EXPECT_EQ(st, "not_applicable");
      EXPECT_NE(note.find("judge a callable of that recipe"), std::string::npos);
    } else if (dist == "uniform_0_1" && k == "test_int8_mm") {
      ++checked;
      EXPECT_EQ(st, "not_applicable");
      EXPECT_NE(note.find("is a quantized kernel"), std::string::npos);
      EXPECT_NE(note.find("uniform_0_1@int8_rowwise"), std::string::npos);
    } else if (dist == "logunif_-200_-160@int8_rowwise" && k == "test_int8_mm") {
      ++checked;
      EXPECT_EQ(st, "not_applicable");
      EXPECT_NE(note.find("is all zero (amax 0)"), std::string::npos);
    }
  }
  EXPECT_EQ(checked, 8);
}

// A quantized kernel that loses the GPU costs its row, as any kernel's (issue 44): the run stops there in this
// process with that row journaled as faulted after the rows before it, never silently without it.
TEST(QuantizedRun, AQuantizedKernelThatLosesTheGpuIsAFaultedRowInTheJournal) {
  const Kernel ok = quantized_kernel("test_int8_ok", "int8_rowwise", QuantScales::output, 1, Accumulation::fma,
                                     Format::fp64);
  const Kernel bad = quantized_kernel("test_int8_faults", "int8_rowwise", QuantScales::output, 1, Accumulation::fma,
                                      Format::fp64);
  for (const Kernel* k : {&ok, &bad}) register_kernel(*k);
  TempDir d("quantized_lost");
  RunRequest req = one_launch_request(d, "quantized_lost", {"test_int8_ok", "test_int8_faults"},
                                     {"normal_0_1@int8_rowwise"}, {16, 32, 64});
  QuantizedFakeDevice dev;
  dev.lose = "test_int8_faults";
  EXPECT_THROW(run_experiment(req, dev), CudaContextLost);
  std::fclose(req.log);
  for (const Kernel* k : {&ok, &bad}) unregister_kernel(k->name);
  EXPECT_FALSE(fs::exists(req.out_csv)) << "no CSV of a run that stopped";
  const auto kept = recover_journal(req.out_csv + ".journal").rows;
  ASSERT_EQ(kept.size(), 2u) << "the row before it and its own";
  const ResultRow first = from_fields(result_columns(), kept[0]), lost = from_fields(result_columns(), kept[1]);
  EXPECT_EQ(first.kernel, "test_int8_ok");
  EXPECT_EQ(first.status, Status::passed);
  EXPECT_EQ(lost.kernel, "test_int8_faults");
  EXPECT_EQ(lost.status, Status::faulted);
  EXPECT_NE(lost.note.find("cudaErrorIllegalAddress"), std::string::npos) << lost.note;
}

// The bound of each placement, by hand: scales on the output with h roundings is (1 + u)^(h + 1) - 1 above the
// exact accumulation's tiny binary64 term; on exact operands the numerics' own bound.
TEST(QuantizedRun, BoundModelsOfTheScalePlacements) {
  const Numerics n = declared_numerics(Format::fp64, Format::fp32, Accumulation::in_wgmma, Format::bf16, Format::fp32, 0);
  const BoundModel out = quantized_bound_model(n, QuantScales::output, 2, 4096, false);
  const double u = 0x1p-24, f = gamma_bound_factor(out);
  EXPECT_GT(f, std::pow(1 + u, 3) - 1);
  EXPECT_LT(f, std::pow(1 + u, 3) - 1 + 1e-11);
  const BoundModel exact = quantized_bound_model(n, QuantScales::operands, 0, 4096, true);
  const BoundModel rounded = quantized_bound_model(n, QuantScales::operands, 0, 4096, false);
  EXPECT_EQ(exact.input, Format::bf16);
  EXPECT_EQ(rounded.input, Format::fp64);
  EXPECT_GT(gamma_bound_factor(rounded) - gamma_bound_factor(exact), 2 * 0x1p-8 * 0.99);  // both operands rounded
  EXPECT_EQ(gamma_bound_factor(exact), gamma_bound_factor(bound_model(
                                           declared_numerics(Format::bf16, Format::fp32, Accumulation::in_wgmma,
                                                             Format::bf16, Format::fp32, 0), 4096)));
}

// ---- cublaslt_int8_rowwise (kernels/cublas/cublaslt_int8_rowwise.cu): its declarations, without a GPU --------

namespace {
const Kernel& int8_rowwise_kernel() {
  const Kernel* k = find_kernel("cublaslt_int8_rowwise");
  if (!k) throw std::logic_error("cublaslt_int8_rowwise is not registered (kernels/cublas/kernel_list.inc)");
  return *k;
}
}  // namespace

// The recipe it reads, where it applies the scales and how many fp32 roundings come before the output's (the
// conversion RN(S) and RN(RN(S) a_scale); RN(. b_scale) is the output's), the numerics of an exact integer
// sum, the sizes cuBLASLt's int8 "TN" kernels take, and the suites that run it.
TEST(CublasltInt8Rowwise, DeclaresItsRecipeScalePlacementRoundingsAndNumerics) {
  const Kernel& k = int8_rowwise_kernel();
  EXPECT_STREQ(k.family, "cublas");
  ASSERT_NE(k.quantized, nullptr);
  EXPECT_EQ(std::string(k.quantized), parse_quant_recipe("int8_rowwise").name());
  EXPECT_EQ(k.quantized_scales, QuantScales::output);
  EXPECT_EQ(k.quantized_scale_roundings, 2);
  // fp64 in (the dequantized operands, exact in binary64) and accumulated without a rounding (the exact int32
  // sum); the library's order, which an exact sum makes irrelevant; fp32 out.
  const Numerics& n = k.numerics;
  EXPECT_EQ(n.input, Format::fp64);
  EXPECT_EQ(n.compute, Format::fp64);
  EXPECT_EQ(n.accumulator, Format::fp64);
  EXPECT_EQ(n.output, Format::fp32);
  EXPECT_EQ(n.accumulation, Accumulation::library);
  EXPECT_EQ(n.accumulation_rounding, Rounding::nearest_even);
  EXPECT_EQ(n.scale_application, ScaleApplication::none) << "an int8 kernel's scales are QuantScales, not fp8's";
  EXPECT_FALSE(n.predictable()) << "gemmlab.explain's \"behaves like\" must not offer a kernel of quantized operands";
  EXPECT_NE(std::string(k.description).find("int32"), std::string::npos) << k.description;
  EXPECT_NE(std::string(k.description).find("RN(RN(float(S) a_scale[i]) b_scale[j])"), std::string::npos);
  // The recipe's layouts (reference/quantized_layout.hpp): A (M, K) and B (K, N) row-major.
  EXPECT_EQ(k.layout_a, Layout::row_major);
  EXPECT_EQ(k.layout_b, Layout::row_major);
  EXPECT_EQ(k.min_cc, 75);
  EXPECT_GT(k.workspace_bytes, 0u);

  // Its bound: the exact sum's binary64 term (below any fp32 one), then (1 + u)^3 for RN(S), a_scale and the output.
  const BoundModel m = quantized_bound_model(n, k.quantized_scales, k.quantized_scale_roundings, 4096, false);
  EXPECT_EQ(m.epilogue_roundings, 2);
  EXPECT_EQ(m.epilogue, Format::fp32);
  const double u = 0x1p-24, f = gamma_bound_factor(m);
  EXPECT_GT(f, std::pow(1 + u, 3) - 1);
  EXPECT_LT(f, std::pow(1 + u, 3) - 1 + 1e-11);

  // cuBLASLt's int8 kernels in the regular ordering: "TN", m and k (gemmlab's N and K) multiples of 4, any M;
  // B's transposed copy fits the workspace up to K N = 2^27. Refused with the reason, before anything runs.
  EXPECT_EQ(check_size(k, 256, 256, 512), "");
  EXPECT_EQ(check_size(k, 37, 256, 512), "") << "any M";
  const std::string n_odd = check_size(k, 256, 258, 512), k_odd = check_size(k, 256, 256, 514);
  EXPECT_NE(n_odd.find("N a multiple of 4"), std::string::npos) << n_odd;
  EXPECT_NE(k_odd.find("K a multiple of 4"), std::string::npos) << k_odd;
  const std::string big = check_size(k, 16, 16384, 16384);
  EXPECT_NE(big.find("cublaslt_int8_rowwise cannot take M=16 N=16384 K=16384"), std::string::npos) << big;
  EXPECT_NE(big.find("K N must be at most 2^27"), std::string::npos) << big;
  EXPECT_EQ(check_size(k, 16, 8192, 16384), "") << "K N = 2^27 exactly fits";

  // The quantized suite runs it on three sources of its recipe; the default suite does not hold it.
  const ResolvedPlan q = resolve(load_suite(find_suite("quantized")));
  ASSERT_EQ(q.kernels.size(), 1u);
  EXPECT_EQ(q.kernels[0], &k);
  ASSERT_EQ(q.distributions.size(), 3u);
  for (const Distribution& d : q.distributions) {
    ASSERT_TRUE(d.quant) << d.name();
    EXPECT_EQ(d.quant->name(), "int8_rowwise") << d.name();
  }
  for (const Kernel* in_default : resolve(load_suite(find_suite("default"))).kernels)
    EXPECT_NE(in_default, &k) << "the default suite holds cublaslt_int8_rowwise";
}

// `gemmlab run`'s loop (a fake device: nothing launches) gives it a not_applicable row naming its recipe on a
// plain distribution and on another recipe's, and judges it on its own recipe (the fake computes the exact
// product rounded once, which its bound of 2 roundings before the output's holds), the note saying so.
TEST(CublasltInt8Rowwise, OnlyItsRecipesDistributionsRunItOthersSayWhichRecipeItReads) {
  TempDir d("cublaslt_int8_rowwise");
  RunRequest req = one_launch_request(d, "int8", {"cublaslt_int8_rowwise"},
                                      {"uniform_0_1", "normal_0_1@mxfp4", "normal_0_1@int8_rowwise"}, {16, 32, 64});
  QuantizedFakeDevice dev;
  const int rc = run_experiment(req, dev);
  std::fclose(req.log);
  EXPECT_EQ(rc, 0);
  EXPECT_EQ(dev.quantized_runs, 1) << "only its recipe's problem launches it";
  const Csv csv = read_csv(req.out_csv);
  ASSERT_EQ(csv.rows.size(), 3u);
  for (std::size_t i = 0; i < csv.rows.size(); ++i) {
    const std::string dist = csv.col(i, "distribution"), st = csv.col(i, "status"), note = csv.col(i, "note");
    SCOPED_TRACE(dist + ": " + st + " " + note);
    EXPECT_EQ(csv.col(i, "kernel"), "cublaslt_int8_rowwise");
    if (dist == "uniform_0_1") {
      EXPECT_EQ(st, "not_applicable");
      EXPECT_NE(note.find("cublaslt_int8_rowwise is a quantized kernel: it reads int8_rowwise operands"),
                std::string::npos);
      EXPECT_NE(note.find("uniform_0_1@int8_rowwise"), std::string::npos);
    } else if (dist == "normal_0_1@mxfp4") {
      EXPECT_EQ(st, "not_applicable");
      EXPECT_NE(note.find("reads int8_rowwise operands; normal_0_1@mxfp4 gives mxfp4: choose a distribution "
                          "SOURCE@int8_rowwise"),
                std::string::npos);
    } else {
      EXPECT_EQ(dist, "normal_0_1@int8_rowwise");
      EXPECT_EQ(st, "passed");
      EXPECT_EQ(csv.col(i, "recipe"), "int8_rowwise");
      EXPECT_NE(note.find("scales on the output, 2 fp32 roundings before the output's"), std::string::npos);
    }
  }
}
