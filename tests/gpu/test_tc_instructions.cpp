// Every tensor-core instruction gemmlab models runs on this GPU through the probe kernels
// (experiments/device/probe.cu) on 2,000 random tiles, seconds in all: every instruction probed on
// the H100 and H200 (model_evidence "probed": all 23 since 2026-11-24) must give the model's bits
// exactly (measured_hopper_params) and write every output; an instruction added later runs as a
// hypothesis, its mismatch count printed, until `scripts/lab/gpu_session.sh BIN OUT tc-corpus` infers it.
#include <gtest/gtest.h>

#include <iostream>

#include "experiments/device/probe.hpp"
#include "tests/gpu/gpu_test_util.hpp"
#include "reference/tc_model.hpp"

using namespace gemmlab;

TEST(TcInstructions, EveryInstructionRunsAndTheProbedOnesMatchTheModel) {
  GEMMLAB_REQUIRE_GPU();
#ifndef GEMMLAB_HAVE_SM90A
  GTEST_SKIP() << "this build has no sm_90a code (the wgmma probe kernels): configure with CMAKE_CUDA_ARCHITECTURES=90a";
#endif
  const DeviceInfo& dev = query_device();
  if (dev.cc() < 90) GTEST_SKIP() << "the wgmma instructions need sm_90a (" << dev.name << " is " << dev.cc() << ")";
  for (tc::Instruction i : tc::all_instructions()) {
    const tc::InstructionInfo& ii = tc::info(i);
    const tc::TcParams p = *tc::measured_hopper_params(i);
    const long long tiles = 2000;
    const ValidationResult r = validate_instruction(ii.name, tiles, 7, &p);
    ASSERT_EQ(r.status, "validated") << ii.name;
    long long outputs = 0;
    for (const ValidationResult::Cell& c : r.cells) outputs += c.outputs;
    EXPECT_EQ(outputs, tiles * ii.m * ii.n) << ii.name;
    const bool probed = tc::model_evidence(i).rfind("probed", 0) == 0;
    std::cout << "  " << ii.name << ": " << r.mismatching_outputs() << " of " << outputs << " outputs differ from the "
              << (probed ? "probed model" : "hypothesis") << "\n";
    if (probed) EXPECT_EQ(r.mismatching_outputs(), 0) << r.summary();
  }
}
