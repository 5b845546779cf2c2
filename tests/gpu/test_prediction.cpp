// Kernels predicted bit for bit: for every registered kernel whose numerics gemmlab models
// (Numerics::predictable, with a settled model of its instruction: tc::measured_hopper_params), the
// CPU emulation of the whole 512^3 product is compared with the GPU's output entry by entry
// (experiments/device/predict.hpp, the same code as `gemmlab predict`), on U[0,1), N(0,1) and a
// wide-exponent log-uniform distribution. Every mismatch is counted and the first one is reported
// (i, j, predicted and observed bits); the test expects none.
//
// The tensor-core parameters are the ones `gemmlab probe` inferred on Hopper (results/probes/);
// on another GPU generation a mismatch here means "re-run gemmlab probe and compare", not a broken
// kernel.
#include <iostream>
#include <string>
#include <vector>

#include "experiments/device/predict.hpp"
#include "tests/gpu/gpu_test_util.hpp"

namespace gemmlab {
namespace {

constexpr int kSize = 512;
constexpr std::uint64_t kSeed = 1;

// U[0,1), N(0,1) and a wide exponent range (with subnormal inputs for fp16, kept finite in an
// fp16 accumulator).
std::vector<std::string> distributions_for(const Kernel& k) {
  std::string wide = "logunif_-40_40";
  if (k.numerics.input == Format::fp16) wide = k.numerics.output == Format::fp16 ? "logunif_-20_3" : "logunif_-20_14";
  // fp8: the format's whole range, subnormals included (e4m3: 2^-9 .. 448; e5m2: 2^-16 .. 57344).
  if (k.numerics.input == Format::e4m3) wide = "logunif_-9_8";
  if (k.numerics.input == Format::e5m2) wide = "logunif_-16_15";
  return {"uniform_0_1", "normal_0_1", wide};
}

std::vector<std::string> predictable_kernels() {
  std::vector<std::string> v;
  for (const Kernel* k : all_kernels())
    if (prediction_params(*k)) v.push_back(k->name);
  return v;
}

// Predicts the whole (size, size, size) output of one kernel on each distribution and compares it
// with the hardware bit for bit.
void check_whole_matrix(const std::string& name, int size, const std::vector<std::string>& dists) {
  const Kernel* k = find_kernel(name);
  ASSERT_NE(k, nullptr);
  GEMMLAB_REQUIRE_KERNEL(*k);
  ASSERT_EQ(check_size(*k, size, size, size), "");
  const auto params = prediction_params(*k);
  ASSERT_TRUE(params.has_value()) << name;
  for (const std::string& dist : dists) {
    const PredictionRow r = predict_and_compare(*k, parse_distribution(dist), size, size, size, kSeed, *params);
    std::cout << "[prediction] " << r.summary() << " [emulation " << r.emulation_seconds << " s]\n";
    EXPECT_EQ(r.unwritten, 0) << k->name;
    EXPECT_EQ(r.mismatches, 0) << r.summary() << "\n  order: " << r.order;
  }
}

class PredictionBitExact : public ::testing::TestWithParam<std::string> {};

TEST_P(PredictionBitExact, WholeMatrixMatchesTheHardware) {
  const Kernel* k = find_kernel(GetParam());
  ASSERT_NE(k, nullptr);
  check_whole_matrix(GetParam(), kSize, distributions_for(*k));
}

INSTANTIATE_TEST_SUITE_P(Kernels, PredictionBitExact, ::testing::ValuesIn(predictable_kernels()),
                         [](const ::testing::TestParamInfo<std::string>& info) { return info.param; });

TEST(PredictionCoverage, EveryMmaWmmaAndSimtKernelHasAnOrder) {
  for (const Kernel* k : all_kernels()) {
    const std::string fam = k->family;
    if (fam == "mma" || fam == "wmma" || fam == "simt")
      EXPECT_TRUE(prediction_params(*k).has_value()) << k->name << " (" << fam << ") has no modelled order";
  }
}

}  // namespace
}  // namespace gemmlab
