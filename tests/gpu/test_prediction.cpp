// Kernels predicted bit for bit: for every registered kernel whose order of accumulation gemmlab
// models (reference/kernel_emulation.hpp: the mma.sync and WMMA kernels in every accumulation mode,
// the CUDA-core SGEMM kernels), the CPU emulation of the whole 512^3 product is compared with the
// GPU's output entry by entry, on U[0,1), N(0,1) and a wide-exponent log-uniform distribution.
// Every mismatch is counted and the first one is reported (i, j, predicted and observed bits); the
// test expects none.
//
// The tensor-core parameters are the ones `gemmlab probe` inferred on an H200 (cc 9.0), copied
// here as published by the probes: results/probes/README.md and results/probes/h200_probes.csv.
// They are typed in rather than re-inferred at test start because the inference needs the probe
// kernels of experiments/probe_gpu.cu, which expose only the CSV-writing command; on another GPU
// generation a mismatch here means "re-run gemmlab probe and compare", not a broken kernel.
//
// Also here: OrderDemo.DISABLED_Kernels runs `gemmlab order` (experiments/order.hpp) on a few
// kernels and writes their trees under $GEMMLAB_ORDER_OUT (default results/order).
#include <chrono>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <iostream>
#include <map>
#include <sstream>
#include <string>
#include <vector>

#include "experiments/order.hpp"
#include "experiments/output.hpp"
#include "reference/kernel_emulation.hpp"
#include "reference/tc_model.hpp"
#include "tests/gpu/gpu_test_util.hpp"

namespace gemmlab {
namespace {

using emulation::KernelOrder;

// Published by the probes on an H200 (results/probes/README.md, "What the probes found"): every
// fp16/bf16 -> fp32 instruction: block 16, neab 2 (25 fraction bits), alignment and output
// truncated toward zero (magnitude), alignment by exponent sum, C joins the alignment, subnormals
// kept; fp16 -> fp16: the same 25 fraction bits (neab 15), output rounded to nearest even.
tc::TcParams published_params(tc::Instruction ins) {
  tc::TcParams p;
  p.input = tc::info(ins).input;
  p.output = tc::info(ins).output;
  p.block_size = 16;
  p.neab = 2;
  p.align_rounding = tc::AlignRounding::toward_zero;
  p.output_rounding = tc::OutputRounding::toward_zero;
  p.align_reference = tc::AlignReference::exponent_sum;
  p.c_in_alignment = true;
  p.subnormal_inputs = true;
  p.subnormal_output = true;
  switch (ins) {
    case tc::Instruction::mma_m16n8k16_f16_f32:
    case tc::Instruction::mma_m16n8k16_bf16_f32:
      break;
    case tc::Instruction::mma_m16n8k16_f16_f16:
      p.neab = 15;
      p.output_rounding = tc::OutputRounding::nearest_even;
      break;
    case tc::Instruction::mma_m16n8k8_tf32_f32:
      p.block_size = 8;
      break;
    default:
      ADD_FAILURE() << tc::info(ins).name << ": no published parameters (the fp8 model is an open question)";
  }
  return p;
}

constexpr int kSize = 512;
constexpr std::uint64_t kSeed = 1;

// U[0,1), N(0,1) and a wide exponent range (with subnormal inputs for fp16, kept finite in an
// fp16 accumulator).
std::vector<std::string> distributions_for(const Kernel& k) {
  std::string wide = "logunif_-40_40";
  if (k.input == Format::fp16) wide = k.output == Format::fp16 ? "logunif_-20_3" : "logunif_-20_14";
  return {"uniform_0_1", "normal_0_1", wide};
}

std::vector<std::string> predictable_kernels() {
  std::vector<std::string> v;
  for (const Kernel* k : all_kernels())
    if (emulation::order_of(k->name)) v.push_back(k->name);
  return v;
}

std::string hex(std::uint64_t bits, Format f) {
  std::ostringstream s;
  s << "0x" << std::hex;
  s.width((gemmlab::info(f).storage_bits + 3) / 4);
  s.fill('0');
  s << bits;
  return s.str();
}

// One summary row per (kernel, distribution), rewritten whole after each test when
// GEMMLAB_PREDICTION_CSV names a file.
std::vector<std::vector<std::string>>& summary_rows() {
  static std::vector<std::vector<std::string>> rows;
  return rows;
}
void write_summary() {
  const char* path = std::getenv("GEMMLAB_PREDICTION_CSV");
  if (!path || !*path) return;
  CsvWriter csv(path, {"kernel", "order", "distribution", "seed", "M", "N", "K", "outputs", "mismatches", "first_i",
                       "first_j", "predicted_bits", "observed_bits"});
  for (const auto& r : summary_rows()) csv.row(r);
  csv.commit();
}

// Predictions are shared by kernels with the same order (every in_mma fp16 kernel, say).
const std::vector<double>& prediction(const KernelOrder& o, const std::string& dist, const Matrix& A, const Matrix& B) {
  static std::map<std::string, std::vector<double>> cache;
  const std::string key = o.describe() + " | " + dist + " | " + std::to_string(A.rows) + "x" +
                          std::to_string(B.cols) + "x" + std::to_string(A.cols);
  auto it = cache.find(key);
  if (it != cache.end()) return it->second;
  tc::TcParams p = o.accumulation == emulation::Accumulation::fma ? tc::TcParams{} : published_params(o.instruction);
  return cache.emplace(key, emulation::emulate(o, A, B, p, 0)).first->second;
}

// Predicts the whole (size, size, size) output of one kernel on each distribution and compares it
// with the hardware bit for bit.
void check_whole_matrix(const std::string& name, int size, const std::vector<std::string>& dists) {
  const Kernel* k = find_kernel(name);
  ASSERT_NE(k, nullptr);
  GEMMLAB_REQUIRE_KERNEL(*k);
  const KernelOrder o = *emulation::order_of(k->name);
  // The name-derived order must agree with the kernel's descriptor.
  ASSERT_STREQ(emulation::to_string(o.accumulation), to_string(k->accumulation)) << k->name;
  ASSERT_EQ(o.output, k->output) << k->name;
  if (o.accumulation == emulation::Accumulation::promoted) ASSERT_EQ(o.promotion_k, k->promotion_interval_k);
  if (o.accumulation != emulation::Accumulation::fma) ASSERT_EQ(tc::info(o.instruction).input, k->input);
  ASSERT_EQ(check_size(*k, size, size, size), "");

  for (const std::string& dist : dists) {
    Distribution d = parse_distribution(dist);
    Matrix A = generate(d, Operand::A, size, size, k->input, kSeed);
    Matrix B = generate(d, Operand::B, size, size, k->input, kSeed);
    TimingOptions opt;
    opt.warmup = 0;
    opt.reps = 1;
    opt.flush_l2 = false;
    KernelRun run = run_kernel(*k, A, B, opt);
    const auto t0 = std::chrono::steady_clock::now();
    const std::vector<double>& pred = prediction(o, dist, A, B);
    const double emu_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    ASSERT_EQ(pred.size(), run.c.size());
    long long mismatches = 0;
    std::size_t first = 0;
    for (std::size_t e = 0; e < pred.size(); ++e) {
      const bool both_nan = std::isnan(pred[e]) && std::isnan(run.c[e]);
      if (both_nan || to_bits(k->output, pred[e]) == to_bits(k->output, run.c[e])) continue;
      if (mismatches++ == 0) first = e;
    }
    std::ostringstream line;
    line << k->name << " on " << dist << " (seed " << kSeed << ", " << size << "^3): " << mismatches << " / "
         << pred.size() << " outputs differ from the prediction";
    std::vector<std::string> row = {k->name, o.describe(), dist, std::to_string(kSeed), std::to_string(size),
                                    std::to_string(size), std::to_string(size), std::to_string(pred.size()),
                                    std::to_string(mismatches), "", "", "", ""};
    if (mismatches) {
      const int i = static_cast<int>(first / size), j = static_cast<int>(first % size);
      const std::string pb = hex(to_bits(k->output, pred[first]), k->output),
                        ob = hex(to_bits(k->output, run.c[first]), k->output);
      line << "; first at (" << i << ", " << j << "): predicted " << pb << " (" << fmt_double(pred[first])
           << "), observed " << ob << " (" << fmt_double(run.c[first]) << ")";
      row[9] = std::to_string(i);
      row[10] = std::to_string(j);
      row[11] = pb;
      row[12] = ob;
    }
    std::cout << "[prediction] " << line.str() << " [emulation " << emu_s << " s]\n";
    summary_rows().push_back(row);
    EXPECT_EQ(run.unwritten, 0) << k->name;
    EXPECT_EQ(mismatches, 0) << line.str() << "\n  order: " << o.describe();
  }
  write_summary();
}

class PredictionBitExact : public ::testing::TestWithParam<std::string> {};

TEST_P(PredictionBitExact, WholeMatrixMatchesTheHardware) {
  const Kernel* k = find_kernel(GetParam());
  ASSERT_NE(k, nullptr);
  check_whole_matrix(GetParam(), kSize, distributions_for(*k));
}

// The "4096^3 once as an experiment": run with --gtest_also_run_disabled_tests;
// GEMMLAB_PREDICT_KERNELS (comma-separated, default the fastest in_mma and external mma.sync
// kernels), GEMMLAB_PREDICT_SIZE (default 4096), GEMMLAB_PREDICT_DISTS (default uniform_0_1), and
// GEMMLAB_PREDICTION_CSV for the summary.
TEST(PredictionExperiment, DISABLED_LargeWholeMatrix) {
  auto env = [](const char* n, const char* d) {
    const char* v = std::getenv(n);
    return std::string(v && *v ? v : d);
  };
  auto split = [](const std::string& s) {
    std::vector<std::string> out;
    std::stringstream ss(s);
    for (std::string item; std::getline(ss, item, ',');)
      if (!item.empty()) out.push_back(item);
    return out;
  };
  const int size = std::stoi(env("GEMMLAB_PREDICT_SIZE", "4096"));
  for (const std::string& name : split(env("GEMMLAB_PREDICT_KERNELS",
                                           "hgemm_mma_04_warpspec_128x256_w64x64_in_mma,"
                                           "hgemm_mma_04_warpspec_128x256_w64x64_external")))
    check_whole_matrix(name, size, split(env("GEMMLAB_PREDICT_DISTS", "uniform_0_1")));
}

INSTANTIATE_TEST_SUITE_P(Kernels, PredictionBitExact, ::testing::ValuesIn(predictable_kernels()),
                         [](const ::testing::TestParamInfo<std::string>& info) { return info.param; });

TEST(PredictionCoverage, EveryMmaWmmaAndSimtKernelHasAnOrder) {
  for (const Kernel* k : all_kernels()) {
    const std::string fam = k->family;
    if (fam == "mma" || fam == "wmma" || fam == "simt")
      EXPECT_TRUE(emulation::order_of(k->name).has_value()) << k->name << " (" << fam << ") has no modelled order";
  }
}

// `gemmlab order` on a few kernels; run with --gtest_also_run_disabled_tests. Kernels from
// GEMMLAB_ORDER_KERNELS (comma-separated) or the list below; CSVs to $GEMMLAB_ORDER_OUT/<kernel>_K<K>.csv.
TEST(OrderDemo, DISABLED_Kernels) {
  GEMMLAB_REQUIRE_GPU();
  std::vector<std::string> names = {
      "hgemm_mma_01_naive_in_mma",
      "hgemm_mma_01_naive_external",
      "hgemm_wmma_v4_in_mma",
      "hgemm_mma_03b_pipeline_tile4x_s4_promoted_every_64k",
      "sgemm_01_naive",
      "hgemm_mma_03b_pipeline_tile4x_128x256_s4_f16acc_in_mma",
      "cublas_gemmex_fp16_f32",
      "hgemm_wgmma_03_pipelined_fp16_in_wgmma",
      "cublas_gemmex_fp32_pedantic",
      "hgemm_wgmma_03_pipelined_fp16_promoted_every_128k",
  };
  if (const char* env = std::getenv("GEMMLAB_ORDER_KERNELS"); env && *env) {
    names.clear();
    std::stringstream s(env);
    for (std::string n; std::getline(s, n, ',');) names.push_back(n);
  }
  const char* out_env = std::getenv("GEMMLAB_ORDER_OUT");
  const std::string out = out_env && *out_env ? out_env : "results/order";
  for (const std::string& name : names) {
    const Kernel* k = find_kernel(name);
    if (!k) {
      ADD_FAILURE() << "unknown kernel " << name;
      continue;
    }
    if (!hardware_support(*k, query_device()).empty()) {
      std::cout << name << ": not supported here, skipped\n";
      continue;
    }
    int K = 256;
    K = (K + k->k_multiple - 1) / k->k_multiple * k->k_multiple;
    const std::string csv = out + "/" + name + "_K" + std::to_string(K) + ".csv";
    const int M = (128 + k->m_multiple - 1) / k->m_multiple * k->m_multiple;
    const int N = (128 + k->n_multiple - 1) / k->n_multiple * k->n_multiple;
    int rc = run_order(name, M, N, K, 0, 0, csv);
    std::cout.flush();
    EXPECT_EQ(rc, 0) << name;
  }
}

}  // namespace
}  // namespace gemmlab
