// explain's composition on the GPU (experiments/device/emulate_gpu.hpp) against emulate_tree_at on the host,
// bit for bit: every generation's model of every instruction the GPU path takes, in the trees explain
// reveals (in-mma chains, external fused sums added in fp32, split-K partials, promotion groups, FMA
// chains), Triton's split operands (tf32x3, bf16x3, bf16x6), and data the GPU leaves to the host (NaN,
// infinity, subnormal operands, overflowing blocks): each such output must come back as the host has it.
#include <cmath>
#include <cstdlib>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

#include "experiments/device/emulate_gpu.hpp"
#include "reference/distributions.hpp"
#include "reference/kernel_emulation.hpp"
#include "reference/rng.hpp"
#include "reference/summation_tree.hpp"
#include "reference/tc_gpus.hpp"
#include "tests/gpu/gpu_test_util.hpp"
#include "tests/same_bits.hpp"

namespace gemmlab {
namespace {

using emulation::LowBits;
using emulation::NodeModel;
using emulation::SplitScheme;

NodeModel model_of(const tc::TcParams& p, int block) {
  return [p, block](int leaves) -> std::optional<tc::TcParams> {
    if (leaves != block) return std::nullopt;
    return p;
  };
}

std::vector<std::pair<int, int>> all_entries(int M, int N) {
  std::vector<std::pair<int, int>> e;
  for (int i = 0; i < M; ++i)
    for (int j = 0; j < N; ++j) e.emplace_back(i, j);
  return e;
}

// GPU == host at every entry; returns the GPU's counts.
GpuEmulationCounts expect_same_outputs(const SummationTree& t, const NodeModel& model, const Matrix& A,
                                       const Matrix& B, const SplitScheme* split, const std::string& what) {
  const auto entries = all_entries(A.rows, B.cols);
  GpuEmulationCounts counts;
  const std::optional<std::vector<double>> gpu = emulate_tree_at_gpu(t, model, A, B, entries, 2, split, &counts);
  EXPECT_TRUE(gpu.has_value()) << what << ": not taken: " << counts.not_taken;
  if (!gpu) return counts;
  const std::vector<double> host = emulation::emulate_tree_at(t, model, A, B, entries, 2, split);
  EXPECT_TRUE(testing::same_bits(*gpu, host, B.cols)) << what;
  EXPECT_EQ(counts.on_gpu + counts.on_host, static_cast<long long>(entries.size())) << what;
  return counts;
}

// Operands exact in `f`, with a few zeros (both signs) and the format's smallest subnormals among them.
Matrix operand(const char* dist, Operand which, int rows, int cols, Format f, std::uint64_t seed) {
  Matrix m = generate(parse_distribution(dist), which, rows, cols, f, seed);
  SplitMix r{seed * 7 + 1};
  for (int t = 0; t < rows * cols / 16; ++t) {
    double& x = m.v[r.next() % m.v.size()];
    const int kind = static_cast<int>(r.next() % 3);
    x = kind == 0 ? 0.0 : kind == 1 ? -0.0 : std::ldexp(1.0, info(f).emin - info(f).precision + 1);
  }
  return m;
}

TEST(EmulateGpu, EveryGenerationsBlockModelsInExplainsTrees) {
  GEMMLAB_REQUIRE_GPU();
  int cases = 0;
  long long on_gpu = 0;
  for (tc::Generation g : tc::all_generations())
    for (tc::Instruction ins : tc::instructions_of(g)) {
      const std::optional<tc::TcParams> p = tc::generation_params(g, ins);
      if (!p || p->arithmetic != tc::Arithmetic::block_fused || p->step_interleave > 0) continue;
      const tc::InstructionInfo& ii = tc::info(ins);
      if (p->input_b || info(ii.input).precision > 24) continue;  // mixed fp8 and fp64 inputs: the host's
      const int k = ii.k, K = 8 * k;
      const NodeModel model = model_of(*p, k);
      const std::string name = std::string(tc::to_string(g)) + " " + ii.name;
      const Matrix A = operand("logunif_-8_8", Operand::A, 5, K, ii.input, 3 + cases);
      const Matrix B = operand("normal_0_1", Operand::B, K, 7, ii.input, 5 + cases);
      for (const auto& [tree, shape] : {std::pair{blocked_tree(K, k, true), "in-mma chain"},
                                        std::pair{blocked_tree(K, k, false), "external: fused sums added in fp32"},
                                        std::pair{split_blocked_tree(K, k, 2, true), "two split-K partials"},
                                        std::pair{promoted_tree(K, k, 4 * k), "promotion every 4 blocks"}}) {
        const GpuEmulationCounts c = expect_same_outputs(tree, model, A, B, nullptr, name + ", " + shape);
        on_gpu += c.on_gpu;
      }
      ++cases;
    }
  EXPECT_GE(cases, 20);
  EXPECT_GT(on_gpu, 0) << "the GPU computed nothing: every output came from the host";
}

TEST(EmulateGpu, FmaChainsAndPairwiseAddsOfACudaCoreKernel) {
  GEMMLAB_REQUIRE_GPU();
  const int K = 256;
  const NodeModel none = [](int) -> std::optional<tc::TcParams> { return std::nullopt; };
  const Matrix A = operand("logunif_-8_8", Operand::A, 4, K, Format::fp32, 1);
  const Matrix B = operand("uniform_-1_1", Operand::B, K, 9, Format::fp32, 2);
  for (const auto& [tree, shape] : {std::pair{sequential_tree(K), "sequential FMA chain"},
                                    std::pair{pairwise_tree(K), "pairwise"}}) {
    const GpuEmulationCounts c = expect_same_outputs(tree, none, A, B, nullptr, shape);
    EXPECT_EQ(c.on_host, 0) << shape;
  }
}

// Triton 3.6's schemes (tests/cpu/test_kernel_emulation.cpp has their provenance).
SplitScheme tf32x3() {
  return {LowBits::nearest_away,
          {{SplitScheme::small, SplitScheme::big}, {SplitScheme::big, SplitScheme::small}, {SplitScheme::big, SplitScheme::big}},
          0,
          true};
}
SplitScheme bf16xn(int pieces) {
  constexpr auto H = SplitScheme::hi, Mi = SplitScheme::mid, L = SplitScheme::lo;
  std::vector<std::pair<SplitScheme::Piece, SplitScheme::Piece>> passes{{Mi, H}, {H, Mi}, {H, H}};
  if (pieces == 3) passes.insert(passes.begin(), {{Mi, Mi}, {L, H}, {H, L}});
  return {LowBits::nearest_even, passes, 0, true, SplitScheme::PieceFormat::bf16, pieces};
}

TEST(EmulateGpu, SplitOperandsOfTritonsTf32x3Bf16x3AndBf16x6) {
  GEMMLAB_REQUIRE_GPU();
  const int K = 512;
  const tc::TcParams tf32 = *tc::measured_hopper_params(tc::Instruction::wgmma_m64n8k8_tf32_f32);
  const tc::TcParams bf16 = *tc::measured_hopper_params(tc::Instruction::wgmma_m64n8k16_bf16_f32);
  const Matrix A = operand("logunif_-8_8", Operand::A, 3, K, Format::fp32, 8);
  const Matrix B = operand("normal_0_1", Operand::B, K, 11, Format::fp32, 9);
  const SplitScheme t3 = tf32x3(), b3 = bf16xn(2), b6 = bf16xn(3);
  for (const auto& [scheme, p, block, name] :
       {std::tuple{&t3, tf32, 8, "tf32x3"}, std::tuple{&b3, bf16, 16, "bf16x3"}, std::tuple{&b6, bf16, 16, "bf16x6"}}) {
    for (const auto& [tree, shape] : {std::pair{blocked_tree(K, block, true), "in-mma chain"},
                                      std::pair{promoted_tree(K, block, 4 * block), "k-tiles added in fp32"}}) {
      const GpuEmulationCounts c = expect_same_outputs(tree, model_of(p, block), A, B, scheme,
                                                       std::string(name) + ", " + shape);
      EXPECT_GT(c.on_gpu, 0) << name;
    }
    SplitScheme grouped = *scheme;  // the passes per k-tile of 4 nodes
    grouped.nodes_per_pass = 4;
    expect_same_outputs(blocked_tree(K, block, true), model_of(p, block), A, B, &grouped,
                        std::string(name) + ", passes per 4 nodes");
  }
}

TEST(EmulateGpu, NanInfinityAndOverflowComeBackAsTheHostHasThem) {
  GEMMLAB_REQUIRE_GPU();
  const int K = 128, k = 16;
  const tc::TcParams p = *tc::measured_hopper_params(tc::Instruction::wgmma_m64n8k16_f16_f32);
  Matrix A = operand("normal_0_1", Operand::A, 6, K, Format::fp16, 4);
  Matrix B = operand("normal_0_1", Operand::B, K, 6, Format::fp16, 5);
  const double inf = std::numeric_limits<double>::infinity();
  A.v[0 * K + 3] = std::nan("");
  A.v[1 * K + 40] = inf;
  B.v[17 * 6 + 2] = -inf;
  for (int kk = 0; kk < K; ++kk) {  // row 3 overflows fp32 in its blocks: 65504^2 * 128 > 2^128
    A.v[3 * K + kk] = 65504;
    B.v[kk * 6 + 4] = 65504;
  }
  for (bool in_mma : {true, false}) {
    const GpuEmulationCounts c =
        expect_same_outputs(blocked_tree(K, k, in_mma), model_of(p, k), A, B, nullptr, in_mma ? "in-mma" : "external");
    EXPECT_GT(c.on_host, 0) << "the special outputs must be the host's";
    EXPECT_GT(c.on_gpu, 0);
  }
  // fp16 accumulation overflows to infinity inside the chain
  const tc::TcParams h = *tc::measured_hopper_params(tc::Instruction::mma_m16n8k16_f16_f16);
  expect_same_outputs(blocked_tree(K, k, true), model_of(h, k), A, B, nullptr, "fp16 accumulators");
}

TEST(EmulateGpu, RefusesWhatItDoesNotTakeAndSaysWhy) {
  GEMMLAB_REQUIRE_GPU();
  const int K = 64;
  tc::TcParams chain = *tc::measured_hopper_params(tc::Instruction::wgmma_m64n8k16_f16_f32);
  chain.arithmetic = tc::Arithmetic::fma_chain;
  const Matrix A = operand("normal_0_1", Operand::A, 2, K, Format::fp16, 1);
  const Matrix B = operand("normal_0_1", Operand::B, K, 2, Format::fp16, 2);
  GpuEmulationCounts c;
  EXPECT_FALSE(emulate_tree_at_gpu(blocked_tree(K, 16, true), model_of(chain, 16), A, B, all_entries(2, 2), 1,
                                   nullptr, &c));
  EXPECT_NE(c.not_taken.find("block_fused"), std::string::npos) << c.not_taken;
  Matrix wide = A;
  wide.v[5] = 1 + 0x1p-40;  // not exact in fp32
  EXPECT_FALSE(emulate_tree_at_gpu(blocked_tree(K, 16, true),
                                   model_of(*tc::measured_hopper_params(tc::Instruction::wgmma_m64n8k16_f16_f32), 16),
                                   wide, B, all_entries(2, 2), 1, nullptr, &c));
  EXPECT_NE(c.not_taken.find("fp32"), std::string::npos) << c.not_taken;
}

// GEMMLAB_EMULATE: cpu keeps the predictions on the host (no emulator), gpu or unset the GPU's; anything else
// is refused with the values it takes (no GPU needed).
TEST(EmulateGpu, GemmlabEmulateTakesCpuOrGpuAndRefusesOthers) {
  const char* before = std::getenv("GEMMLAB_EMULATE");
  const std::string saved = before ? before : "";
  setenv("GEMMLAB_EMULATE", "cpu", 1);
  EXPECT_FALSE(gpu_tree_emulator());
  setenv("GEMMLAB_EMULATE", "gpu", 1);
  EXPECT_TRUE(gpu_tree_emulator());
  unsetenv("GEMMLAB_EMULATE");
  EXPECT_TRUE(gpu_tree_emulator());
  setenv("GEMMLAB_EMULATE", "CPU", 1);
  try {
    gpu_tree_emulator();
    ADD_FAILURE() << "GEMMLAB_EMULATE=CPU was taken";
  } catch (const std::invalid_argument& e) {
    EXPECT_NE(std::string(e.what()).find("set it to cpu"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("'CPU'"), std::string::npos) << e.what();
  }
  if (before) setenv("GEMMLAB_EMULATE", saved.c_str(), 1);
  else unsetenv("GEMMLAB_EMULATE");
}

}  // namespace
}  // namespace gemmlab
