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
#include <map>
#include <string>
#include <vector>

#include "experiments/device/order.hpp"
#include "experiments/device/predict.hpp"
#include "reference/kernel_emulation.hpp"
#include "tests/gpu/gpu_test_util.hpp"

namespace gemmlab {
namespace {

constexpr int kSize = 512;
constexpr std::uint64_t kSeed = 1;

// U[0,1), N(0,1) and a wide exponent range (with subnormal inputs for fp16, kept finite in an
// fp16 accumulator).
std::vector<std::string> distributions_for(const Kernel& k) {
  std::string wide = "logunif_-40_40";  // fp32 / bf16
  if (k.numerics.input == Format::fp16) wide = k.numerics.output == Format::fp16 ? "logunif_-20_3" : "logunif_-20_14";
  // fp8: the format's whole range, subnormals included (e4m3: 2^-9 .. 448; e5m2: 2^-16 .. 57344).
  if (k.numerics.input == Format::e4m3) wide = "logunif_-9_8";
  if (k.numerics.input == Format::e5m2) wide = "logunif_-16_15";
  return {"uniform_0_1", "normal_0_1", wide};
}

std::vector<std::string> predictable_kernels() {
  std::vector<std::string> v;
  // Scaled fp8 kernels are predicted on their recipes' operands: tests/gpu/test_scaled_fp8_gpu.cpp.
  for (const Kernel* k : all_kernels())
    if (prediction_params(*k) && k->scale_a == ScaleGranularity::none) v.push_back(k->name);
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

// Every kernel gemmlab builds is predicted, except library calls (cuBLAS, and the fp64 and cpu
// families' cuBLAS and Eigen rows: accumulation `library`) and the kernels named here with the reason.
TEST(PredictionCoverage, EveryKernelGemmlabBuildsHasAnOrder) {
  const std::map<std::string, std::string> not_yet = {};
  for (const Kernel* k : all_kernels()) {
    const std::string fam = k->family;
    if (fam == "cublas") EXPECT_EQ(k->numerics.accumulation, Accumulation::library) << k->name;
    if (k->numerics.accumulation == Accumulation::library || not_yet.count(k->name)) continue;
    EXPECT_TRUE(prediction_params(*k).has_value()) << k->name << " (" << fam << ") has no modelled order";
  }
}

// Stream-K (step 8) at a size with a tail: 2560 x 2048 is 80 cluster tiles, more than the 66
// co-resident clusters of an H100 / H200, so the last 14 tiles' K = 512 (8 slices) is dealt over
// every cluster and most of those tiles are cut into chunks. The kernel's chunk map says where;
// the emulation adds the chunk sums as the owner does. The test insists that tiles were cut, so it
// cannot pass on a size where stream-K did nothing.
TEST(PredictionStreamK, SplitTilesMatchTheHardware) {
  for (const char* name : {"hgemm_wgmma_08_streamk_sm16_fp16_in_wgmma", "hgemm_wgmma_08_streamk_sm16_bf16_in_wgmma"}) {
    GEMMLAB_REQUIRE_FAMILY("hopper");
    const Kernel* k = find_kernel(name);
    ASSERT_NE(k, nullptr);
    GEMMLAB_REQUIRE_KERNEL(*k);
    const auto params = prediction_params(*k);
    ASSERT_TRUE(params.has_value());
    for (const char* dist : {"normal_0_1", k->numerics.input == Format::fp16 ? "logunif_-20_14" : "logunif_-40_40"}) {
      const PredictionRow r = predict_and_compare(*k, parse_distribution(dist), 2560, 2048, 512, kSeed, *params);
      std::cout << "[prediction] " << r.summary() << ", " << r.chunked_tiles << " tiles cut into chunks\n";
      EXPECT_GT(r.chunked_tiles, 0) << "no tile was split: this size does not exercise stream-K";
      EXPECT_EQ(r.unwritten, 0);
      EXPECT_EQ(r.mismatches, 0) << r.summary();
    }
  }
}

// The tree `gemmlab order` reveals for an entry of a split tile is the chunked order the emulation
// assumes there (each chunk's in_wgmma chain, the chunk sums added left to right).
TEST(PredictionStreamK, RevealedTreeOfASplitEntryIsTheChunkedOrder) {
  GEMMLAB_REQUIRE_FAMILY("hopper");
  const Kernel* k = find_kernel("hgemm_wgmma_08_streamk_sm16_fp16_in_wgmma");
  ASSERT_NE(k, nullptr);
  GEMMLAB_REQUIRE_KERNEL(*k);
  const int M = 2560, N = 2048, K = 512;
  const KChunkMap map = k->k_chunks(M, N, K);
  int ti = -1;
  for (std::size_t t = 0; t < map.bounds.size() && ti < 0; ++t)
    if (map.bounds[t].size() > 2) ti = static_cast<int>(t);
  ASSERT_GE(ti, 0) << "no split tile at this size";
  const int i = (ti / map.tiles_n) * map.tile_m + 5, j = (ti % map.tiles_n) * map.tile_n + 7;
  const RevealedTree t = reveal_tree(*k, M, N, K, i, j);
  const SummationTree want = emulation::expected_tree(k->numerics, K, map.of(i, j));
  std::cout << "[order] " << k->name << " C(" << i << "," << j << "): " << describe(t.tree) << " (" << t.runs
            << " runs)\n";
  EXPECT_EQ(t.tree.canonical(), want.canonical()) << "revealed: " << describe(t.tree) << "\nassumed: " << describe(want);
}

// Library kernels, whose order gemmlab cannot know: the tree `gemmlab order` reveals on this GPU at
// 256^3 (at three entries, which must agree), composed with the tensor-core model, predicts every
// entry bit for bit.
class PredictionLibrary : public ::testing::TestWithParam<std::string> {};

TEST_P(PredictionLibrary, MeasuredOrderMatchesTheHardware) {
  GEMMLAB_REQUIRE_FAMILY("cublas");
  const Kernel* k = find_kernel(GetParam());
  ASSERT_NE(k, nullptr);
  GEMMLAB_REQUIRE_KERNEL(*k);
  ASSERT_EQ(measured_order_gap(*k), "");
  const int n = 256;
  const MeasuredOrder order = measure_order(*k, n, n, n, default_tree_entries(n, n));
  std::cout << "[order] " << k->name << " at " << order.entries << ": " << describe(order.tree) << "\n";
  EXPECT_TRUE(order.agree) << "the trees at " << order.entries << " differ";
  for (const std::string& dist : distributions_for(*k)) {
    const PredictionRow r = predict_measured(*k, parse_distribution(dist), n, n, n, kSeed, order);
    std::cout << "[prediction] " << r.summary() << "\n";
    EXPECT_EQ(r.unwritten, 0);
    EXPECT_EQ(r.mismatches, 0) << r.summary() << "\n  order: " << r.order;
  }
}

INSTANTIATE_TEST_SUITE_P(Baselines, PredictionLibrary,
                         ::testing::Values("cublas_gemmex_fp16_f32", "cublas_gemmex_bf16_f32",
                                           "cublas_gemmex_fp32_pedantic", "cublaslt_fp8_e4m3_f32",
                                           "cublaslt_fp8_e4m3_f32_fast_accum"),
                         [](const ::testing::TestParamInfo<std::string>& info) { return info.param; });

}  // namespace
}  // namespace gemmlab
