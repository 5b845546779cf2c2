// The fp64 tensor-core instructions on the GPU (issue 23): the probes of each (mma_m8n8k4_f64 on sm_80+,
// mma_m16n8k{4,8,16}_f64 on sm_90) infer a model that explains every probe, the model gives the
// hardware's bits on 1,000 random tiles, and dgemm_mma_01_m8n8k4 (which declares m8n8k4) is
// predicted bit for bit at 256^3 through the model inferred for it. Each inferred model is printed
// beside the committed one (tc::measured_hopper_params), and since the H100/H200 runs of 2026-11-24
// (model_evidence "probed") they must agree, NaN rule included: the probes nan_inf/inf_times_0 and
// friends pick nan_encoding propagate (0xfff8000000000000) over ieee_quiet. Seconds on an H100.
#include <gtest/gtest.h>

#include <cctype>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <sstream>
#include <string>
#include <unistd.h>

#include "experiments/device/predict.hpp"
#include "experiments/device/probe.hpp"
#include "reference/tc_model.hpp"
#include "tests/gpu/gpu_test_util.hpp"

namespace gemmlab {
namespace {

// Probes one instruction alone (no corpus: the special rules stay those the probes settle) into a
// scratch folder; returns the inferred parameters and the findings' model_fit line.
tc::TcParams probe_f64(const char* instruction, std::string& model_fit) {
  const std::filesystem::path dir =
      std::filesystem::temp_directory_path() / ("gemmlab_tc_f64_" + std::to_string(::getpid()));
  std::filesystem::create_directories(dir);
  const std::string csv = (dir / "tc_f64.csv").string();
  std::vector<std::pair<std::string, tc::TcParams>> inferred;
  EXPECT_EQ(run_probes(csv, false, "gemmlab_gpu_tests", false, &inferred, {instruction}), 0);
  EXPECT_EQ(inferred.size(), 1u);
  std::ifstream in(csv);
  for (std::string line; std::getline(in, line);)
    if (line.find(",model_fit,") != std::string::npos) model_fit = line;
  std::filesystem::remove_all(dir);
  if (inferred.empty()) throw std::runtime_error(std::string("gemmlab probe returned no model for ") + instruction);
  return inferred.front().second;
}

bool probed(tc::Instruction i) { return tc::model_evidence(i).rfind("probed", 0) == 0; }

TEST(TcF64Gpu, ProbesInferAModelThatMatchesRandomTiles) {
  GEMMLAB_REQUIRE_GPU();
  int ran = 0;
  for (tc::Instruction i : {tc::Instruction::mma_m8n8k4_f64, tc::Instruction::mma_m16n8k4_f64,
                            tc::Instruction::mma_m16n8k8_f64, tc::Instruction::mma_m16n8k16_f64}) {
    const tc::InstructionInfo& I = tc::info(i);
    if (query_device().cc() < I.min_cc) {
      std::cout << "  " << I.name << ": needs sm_" << I.min_cc << ", " << query_device().name << " is not\n";
      continue;
    }
    ++ran;
    std::string fit;
    const tc::TcParams p = probe_f64(I.name, fit);
    std::cout << "  " << I.name << " inferred: " << p.describe() << "\n  " << fit << "\n";
    // "N/N probes reproduced": the inferred model explains every probe
    const std::size_t slash = fit.find('/');
    ASSERT_NE(slash, std::string::npos) << fit;
    std::size_t start = fit.rfind(',', slash) + 1;
    while (start < slash && !std::isdigit(static_cast<unsigned char>(fit[start]))) ++start;  // a quoted field
    const std::string got = fit.substr(start, slash - start);
    EXPECT_EQ(fit.compare(slash + 1, got.size() + 1, got + " "), 0) << I.name << " leaves probes unexplained: " << fit;
    const ValidationResult r = validate_instruction(I.name, 1000, 23, &p);
    ASSERT_EQ(r.status, "validated") << I.name;
    EXPECT_EQ(r.mismatching_outputs(), 0) << r.summary();
    const tc::TcParams committed = *tc::measured_hopper_params(i);
    std::cout << "  committed (" << (probed(i) ? "probed" : "hypothesis") << "): " << committed.describe() << "\n";
    if (probed(i)) EXPECT_EQ(p, committed) << "inferred " << p.describe();
    else if (!(p == committed)) std::cout << "  the hypothesis differs from what the probes inferred: replace it\n";
  }
  if (ran == 0) GTEST_SKIP() << "mma.sync f64 needs sm_80 (" << query_device().name << ")";
}

// The kernel declares the instruction, in_mma in k-steps of 4 (the order tests/cpu/test_tc_f64.cpp
// emulates), and is predicted bit for bit through the model the probes inferred.
TEST(TcF64Gpu, DgemmMmaIsPredictedBitForBit) {
  GEMMLAB_REQUIRE_FAMILY("fp64");
  const Kernel* k = find_kernel("dgemm_mma_01_m8n8k4");
  ASSERT_NE(k, nullptr);
  EXPECT_EQ(k->numerics.instruction, tc::Instruction::mma_m8n8k4_f64);
  EXPECT_EQ(k->numerics.accumulation, Accumulation::in_mma);
  EXPECT_EQ(k->numerics.k_step, 4);
  ASSERT_TRUE(k->numerics.predictable());
  GEMMLAB_REQUIRE_KERNEL(*k);
  std::string fit;
  const tc::TcParams p = probe_f64("mma_m8n8k4_f64", fit);
  for (const char* dist : {"normal_0_1", "logunif_-40_40", "cancel_-40"}) {
    const PredictionRow r = predict_and_compare(*k, parse_distribution(dist), 256, 256, 256, 1, p);
    std::cout << "[prediction] " << r.summary() << "\n";
    EXPECT_EQ(r.unwritten, 0);
    EXPECT_EQ(r.mismatches, 0) << r.summary();
  }
}

}  // namespace
}  // namespace gemmlab
