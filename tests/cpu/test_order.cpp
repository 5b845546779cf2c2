// Summation trees and FPRev reconstruction (reference/summation_tree.hpp): synthetic count
// matrices from known trees must give the trees back; FPRev's masking, simulated on the CPU
// through the kernel emulation, must reveal the order each emulated kernel uses.
#include <gtest/gtest.h>

#include <cmath>
#include <optional>
#include <stdexcept>
#include <string>
#include <vector>

#include "kernels/registry.hpp"
#include "reference/kernel_emulation.hpp"
#include "reference/summation_tree.hpp"
#include "reference/tc_model.hpp"

using namespace gemmlab;

namespace {

// Rebuilds t from its own lca sizes; returns the number of pairs asked.
int roundtrip(const SummationTree& t, SummationTree& out) {
  const int K = t.leaves();
  std::vector<int> sizes = t.lca_sizes();
  int asked = 0;
  out = reconstruct(K, [&](int p, int q) {
    ++asked;
    return sizes[static_cast<std::size_t>(p) * K + q];
  });
  return asked;
}

bool contains(const std::string& s, const std::string& part) { return s.find(part) != std::string::npos; }

}  // namespace


namespace {
// The numerics record of a registered kernel, when gemmlab can predict it bit for bit.
std::optional<gemmlab::Numerics> order_of(const char* name) {
  const gemmlab::Kernel* k = gemmlab::find_kernel(name);
  if (k == nullptr || !k->numerics.predictable()) return std::nullopt;
  return k->numerics;
}
}  // namespace

TEST(SummationTreeReconstruct, KnownTreesComeBack) {
  const std::vector<std::pair<std::string, SummationTree>> trees = {
      {"sequential", sequential_tree(37)},
      {"pairwise", pairwise_tree(64)},
      {"in_mma", blocked_tree(128, 16, true)},
      {"external", blocked_tree(128, 16, false)},
      {"split-K in_mma", split_blocked_tree(128, 16, 2, true)},
      {"split-K external", split_blocked_tree(96, 16, 3, false)},
      {"promoted", promoted_tree(256, 16, 64)},
  };
  for (const auto& [name, t] : trees) {
    SummationTree back(1);
    roundtrip(t, back);
    EXPECT_EQ(back.canonical(), t.canonical()) << name;
    EXPECT_EQ(back.lca_sizes(), t.lca_sizes()) << name;
  }
}

TEST(SummationTreeReconstruct, FromFullMatrix) {
  SummationTree t = split_blocked_tree(64, 8, 2, false);
  EXPECT_EQ(reconstruct_from_matrix(64, t.lca_sizes()).canonical(), t.canonical());
}

TEST(SummationTreeReconstruct, FusedNodesHaveMoreThanTwoChildren) {
  SummationTree back(1);
  roundtrip(blocked_tree(64, 16, true), back);
  EXPECT_STREQ(back.kind(back.root()), "fused");
  EXPECT_EQ(back.children(back.root()).size(), 17u) << "running sum + 16 products in one node";
  roundtrip(blocked_tree(64, 16, false), back);
  EXPECT_STREQ(back.kind(back.root()), "binary");
  EXPECT_EQ(back.size(back.children(back.root())[1]), 16);
  EXPECT_STREQ(back.kind(back.children(back.root())[1]), "fused");
}

TEST(SummationTreeReconstruct, AsksFewPairsForChains) {
  SummationTree back(1);
  EXPECT_EQ(roundtrip(sequential_tree(256), back), 255) << "one query per leaf for a chain of binary adds";
  const int in_mma = roundtrip(blocked_tree(256, 16, true), back);
  EXPECT_LT(in_mma, 256 * 255 / 2 / 10) << "a tenth of all pairs at most; asked " << in_mma;
}

TEST(SummationTreeReconstruct, RejectsCountsThatAreNotATree) {
  // lca(0,1) = lca(0,2) = 2 says 1 and 2 both meet leaf 0 in a node of 2 leaves (impossible), and
  // lca(1,2) = 3 says they meet above it.
  std::vector<int> m = {1, 2, 2, 2, 1, 3, 2, 3, 1};
  EXPECT_THROW(reconstruct_from_matrix(3, m), std::runtime_error);
  // Four leaves: 1 and 2 meet 0 at size 3 with lca(1,2) = 2, so {0, 1, 2} is a node; but 3 meets 0
  // at size 3 too.
  std::vector<int> m4 = {1, 3, 3, 3, 3, 1, 2, 4, 3, 2, 1, 4, 3, 4, 4, 1};
  EXPECT_THROW(reconstruct_from_matrix(4, m4), std::runtime_error);
  EXPECT_THROW(reconstruct_from_matrix(3, m), std::runtime_error);
  std::vector<int> out_of_range = {1, 5, 3, 5, 1, 3, 3, 3, 1};
  EXPECT_THROW(reconstruct_from_matrix(3, out_of_range), std::runtime_error);
}

TEST(SummationTreeDescribe, ReadableSummaries) {
  EXPECT_EQ(describe(sequential_tree(16)), "sequential over 16 terms in increasing k, one binary add each");
  EXPECT_EQ(describe(pairwise_tree(16)), "pairwise (recursive halving) over 16 terms");
  EXPECT_EQ(describe(blocked_tree(64, 16, true)),
            "sequential over 4 blocks of 16 terms in increasing k, each block one fused node of the running sum "
            "and its 16 terms (the first block a fused 16-term sum)");
  EXPECT_EQ(describe(blocked_tree(64, 16, false)),
            "sequential over 4 parts in increasing k (binary adds), each part a fused 16-term sum");
  const std::string split = describe(split_blocked_tree(128, 16, 2, true));
  EXPECT_TRUE(contains(split, "2 parts of the same shape, added at the end by one binary add "
                              "(k in [0,16) + 32j, j < 4; k in [16,32) + 32j, j < 4)"))
      << split;
  EXPECT_TRUE(contains(split, "each part sequential over 4 blocks of 16 terms in increasing k")) << split;
  const std::string promo = describe(promoted_tree(256, 16, 64));
  EXPECT_TRUE(contains(promo, "sequential over 4 parts in increasing k (binary adds), each part sequential over 4 "
                              "blocks of 16 terms"))
      << promo;
}

TEST(SummationTreeDescribe, InterleavedPartsAreNamed) {
  // cuBLAS fp32 (pedantic) on an H200 at 128x128x256 (results/order): 4 partial sums of 8-term
  // chunks at stride 32, each a chain of FMAs, added one after the other at the end.
  SummationTree t(256);
  int total = -1;
  for (int w = 0; w < 4; ++w) {
    int part = -1;
    for (int j = 0; j < 8; ++j)
      for (int k = 32 * j + 8 * w; k < 32 * j + 8 * w + 8; ++k) part = part < 0 ? k : t.add_node({part, k});
    total = total < 0 ? part : t.add_node({total, part});
  }
  EXPECT_EQ(describe(t),
            "sequential over 4 parts (not in increasing k) (binary adds) (in order of addition: "
            "k in [0,8) + 32j, j < 8; k in [8,16) + 32j, j < 8; k in [16,24) + 32j, j < 8; k in [24,32) + 32j, j < 8), "
            "each part sequential over 64 terms in increasing k, one binary add each");
}

TEST(SummationTreeDescribe, LeafRanges) {
  EXPECT_EQ(describe_leaves({0, 1, 2, 3}), "k in [0,4)");
  EXPECT_EQ(describe_leaves({0, 1, 4, 5, 8, 9}), "k in [0,2) + 4j, j < 3");
  EXPECT_EQ(describe_leaves({0, 2, 3, 7}), "k in [0,1) [2,4) [7,8)");
}

TEST(SummationTreeExpected, KernelOrdersGiveTheirTrees) {
  using emulation::expected_tree;
  EXPECT_EQ(expected_tree(*order_of("sgemm_01_naive"), 32).canonical(), sequential_tree(32).canonical());
  EXPECT_EQ(expected_tree(*order_of("hgemm_mma_01_naive_in_mma"), 64).canonical(),
            blocked_tree(64, 16, true).canonical());
  EXPECT_EQ(expected_tree(*order_of("hgemm_mma_01_naive_external"), 64).canonical(),
            blocked_tree(64, 16, false).canonical());
  EXPECT_EQ(expected_tree(*order_of("hgemm_wmma_v4_external"), 128).canonical(),
            split_blocked_tree(128, 16, 2, false).canonical());
  EXPECT_EQ(expected_tree(*order_of("hgemm_mma_03b_pipeline_tile4x_s4_promoted_every_32k"), 128).canonical(),
            promoted_tree(128, 16, 32).canonical());
}

// FPRev on the emulated kernels: product p = +M, q = -M, the rest u; the emulation's output counts
// the units added after p and q met. The masks are those run_order chooses (experiments/order_gpu.cpp):
// fp16 -> fp32 M = 2^30, u = 2^-14; fp16 -> fp16 M = 2^13, u = 2^-24; fp32 FMA M = 2^40, u = 2^-16.
TEST(SummationTreeFprev, MaskingRevealsTheEmulatedOrder) {
  struct Case {
    const char* kernel;
    int K;
    int ea_big, eb_big, ea_unit, eb_unit;
  };
  const Case cases[] = {
      {"sgemm_01_naive", 48, 20, 20, 0, -16},
      {"hgemm_mma_01_naive_in_mma", 64, 15, 15, 0, -14},
      {"hgemm_mma_01_naive_external", 64, 15, 15, 0, -14},
      {"hgemm_wmma_v4_in_mma", 128, 15, 15, 0, -14},
      {"hgemm_wmma_v4_external", 64, 15, 15, 0, -14},
      {"hgemm_mma_03b_pipeline_tile4x_s4_promoted_every_32k", 128, 15, 15, 0, -14},
      {"hgemm_mma_03b_pipeline_tile4x_128x256_s4_bf16_in_mma", 64, 20, 20, 0, -16},
      {"hgemm_mma_03b_pipeline_tile4x_128x256_s4_f16acc_in_mma", 64, 7, 6, 0, -24},
  };
  for (const Case& c : cases) {
    const Numerics o = *order_of(c.kernel);
    tc::TcParams p;  // the H200 parameters of results/probes/README.md (unused for fma)
    const tc::Instruction ins = o.instruction.value_or(tc::Instruction::mma_m16n8k16_f16_f32);
    p.input = tc::info(ins).input;
    p.output = tc::info(ins).output;
    if (o.output == Format::fp16) {
      p.neab = 15;
      p.output_rounding = Rounding::nearest_even;
    }
    const double u = std::ldexp(1.0, c.ea_unit + c.eb_unit);
    std::vector<double> a(c.K), b(c.K);
    auto lca = [&](int pp, int qq) {
      for (int k = 0; k < c.K; ++k) {
        a[k] = std::ldexp(1.0, (k == pp || k == qq) ? c.ea_big : c.ea_unit);
        b[k] = k == pp ? std::ldexp(1.0, c.eb_big) : k == qq ? -std::ldexp(1.0, c.eb_big) : std::ldexp(1.0, c.eb_unit);
      }
      double n = emulation::emulate_dot(o, a.data(), b.data(), c.K, p) / u;
      EXPECT_EQ(n, std::floor(n)) << c.kernel << " pair " << pp << ", " << qq;
      return c.K - static_cast<int>(n);
    };
    SummationTree measured = reconstruct(c.K, lca);
    EXPECT_EQ(measured.canonical(), emulation::expected_tree(o, c.K).canonical()) << c.kernel << ": " << describe(measured);
  }
}
