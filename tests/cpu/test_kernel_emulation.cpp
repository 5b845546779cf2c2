// Kernel emulation (reference/kernel_emulation.hpp): hand-made cases where the order of
// accumulation decides the bits, and the numerics records of registered kernels.
#include <gtest/gtest.h>

#include <cmath>
#include <optional>
#include <vector>

#include "kernels/registry.hpp"
#include "reference/distributions.hpp"
#include "reference/kernel_emulation.hpp"
#include "reference/tc_model.hpp"

using namespace gemmlab;
using namespace gemmlab::emulation;

namespace {

double p2(int e) { return std::ldexp(1.0, e); }

// The parameters results/probes/README.md reports for mma.sync m16n8k16 f16 -> f32 on an H200.
tc::TcParams f16_f32() {
  tc::TcParams p;
  p.input = Format::fp16;
  p.output = Format::fp32;
  p.block_size = 16;
  p.neab = 2;
  return p;
}

Numerics tc_order(Accumulation acc, int promotion_k = 0, int split_k = 1) {
  Numerics o;
  o.input = o.compute = Format::fp16;
  o.accumulation = acc;
  o.instruction = tc::Instruction::mma_m16n8k16_f16_f32;
  o.k_step = 16;
  o.promotion_interval_k = promotion_k;
  o.split_k = split_k;
  o.accumulation_rounding = Rounding::toward_zero;
  return o;
}

// The numerics record of a registered kernel, when gemmlab can predict it bit for bit.
std::optional<Numerics> order_of(const char* name) {
  const Kernel* k = find_kernel(name);
  if (k == nullptr || !k->numerics.predictable()) return std::nullopt;
  return k->numerics;
}

// K = 32: block 0 sums to 1 (one product 1 * 1), block 1 holds the single product
// (3 * 2^-13) * 2^-12 = 3 * 2^-25 = 0.75 ulp(1) of fp32.
void truncation_case(std::vector<double>& a, std::vector<double>& b) {
  a.assign(32, 0.0);
  b.assign(32, 0.0);
  a[0] = 1;
  b[0] = 1;
  a[20] = 3 * p2(-13);
  b[20] = p2(-12);
}

Matrix random_matrix(const char* dist, Operand which, int rows, int cols, Format f, std::uint64_t seed) {
  return generate(parse_distribution(dist), which, rows, cols, f, seed);
}

}  // namespace

TEST(KernelEmulationOrder, InMmaTruncatesWhereExternalRoundsToNearest) {
  std::vector<double> a, b;
  truncation_case(a, b);
  // in_mma: C = 1 joins block 1's alignment, 3 * 2^-25 is kept (25 fraction bits) and the sum
  // 1 + 3 * 2^-25 is truncated to fp32: 1.
  EXPECT_EQ(emulate_dot(tc_order(Accumulation::in_mma), a.data(), b.data(), 32, f16_f32()), 1.0);
  // external: T = 3 * 2^-25 exactly, then 1 + T rounds to nearest: 1 + 2^-23.
  EXPECT_EQ(emulate_dot(tc_order(Accumulation::external), a.data(), b.data(), 32, f16_f32()), 1.0 + p2(-23));
  // promoted every 16 elements is external; every 32 is in_mma plus a final fp32 add of 0.
  EXPECT_EQ(emulate_dot(tc_order(Accumulation::promoted, 16), a.data(), b.data(), 32, f16_f32()), 1.0 + p2(-23));
  EXPECT_EQ(emulate_dot(tc_order(Accumulation::promoted, 32), a.data(), b.data(), 32, f16_f32()), 1.0);
}

TEST(KernelEmulationOrder, SplitKAddsThePartialsToNearest) {
  std::vector<double> a, b;
  truncation_case(a, b);
  // Two partials, k-steps 0 and 1: S0 = 1 and S1 = 3 * 2^-25 (each exact), S0 + S1 rounds to
  // nearest, although each partial runs in_mma.
  EXPECT_EQ(emulate_dot(tc_order(Accumulation::in_mma, 0, 2), a.data(), b.data(), 32, f16_f32()), 1.0 + p2(-23));
  // Moving the small product to k-step 2 (K = 48) puts it in partial 0 with the 1: truncated.
  std::vector<double> a3(48, 0.0), b3(48, 0.0);
  a3[0] = 1;
  b3[0] = 1;
  a3[36] = 3 * p2(-13);
  b3[36] = p2(-12);
  EXPECT_EQ(emulate_dot(tc_order(Accumulation::in_mma, 0, 2), a3.data(), b3.data(), 48, f16_f32()), 1.0);
}

TEST(KernelEmulationOrder, FmaIsOneFusedRoundingPerProduct) {
  Numerics o = *order_of("sgemm_01_naive");
  // -(1 + 2^-11) + (1 + 2^-12)^2 = 2^-24 survives only if the product is not rounded first; in the
  // other order the first FMA rounds the square (a tie, to even: 1 + 2^-11) and the result is 0.
  std::vector<double> a = {-(1 + p2(-11)), 1 + p2(-12)}, b = {1, 1 + p2(-12)};
  EXPECT_EQ(emulate_dot(o, a.data(), b.data(), 2, {}), p2(-24));
  std::vector<double> ar = {a[1], a[0]}, br = {b[1], b[0]};
  EXPECT_EQ(emulate_dot(o, ar.data(), br.data(), 2, {}), 0.0);
  // Sequential order: 1, then 2^-24 twice; each add ties back to 1 (a pairwise sum would give 1 + 2^-23).
  std::vector<double> c = {1, p2(-24), p2(-24)}, ones = {1, 1, 1};
  EXPECT_EQ(emulate_dot(o, c.data(), ones.data(), 3, {}), 1.0);
}

TEST(KernelEmulationOrder, FmaMatchesASequentialFmafLoop) {
  const int M = 8, N = 8, K = 64;
  Matrix A = random_matrix("normal_0_1", Operand::A, M, K, Format::fp32, 11);
  Matrix B = random_matrix("normal_0_1", Operand::B, K, N, Format::fp32, 11);
  std::vector<double> C = emulate(*order_of("sgemm_10_warptiling"), A, B, {}, 2);
  for (int i = 0; i < M; ++i)
    for (int j = 0; j < N; ++j) {
      float acc = 0.0f;
      for (int k = 0; k < K; ++k) acc = std::fmaf(static_cast<float>(A(i, k)), static_cast<float>(B(k, j)), acc);
      ASSERT_EQ(C[i * N + j], static_cast<double>(acc)) << "(" << i << ", " << j << ")";
    }
}

TEST(KernelEmulationOrder, InMmaIsTheModelChainedOverK) {
  // in_mma without split-K is exactly tc::dot over the whole K (each block's result is the next C),
  // for the fp32 and the fp16 accumulator alike.
  const int M = 4, N = 4, K = 64;
  Matrix A = random_matrix("logunif_-8_8", Operand::A, M, K, Format::fp16, 5);
  Matrix B = random_matrix("logunif_-8_8", Operand::B, K, N, Format::fp16, 5);
  for (const char* name : {"hgemm_mma_01_naive_in_mma", "hgemm_mma_03b_pipeline_tile4x_128x256_s4_f16acc_in_mma"}) {
    Numerics o = *order_of(name);
    tc::TcParams p = f16_f32();
    if (o.output == Format::fp16) {
      p.output = Format::fp16;
      p.neab = 15;
      p.output_rounding = Rounding::nearest_even;
    }
    std::vector<double> C = emulate(o, A, B, p, 1);
    for (int i = 0; i < M; ++i)
      for (int j = 0; j < N; ++j) {
        std::vector<double> a(K), b(K);
        for (int k = 0; k < K; ++k) {
          a[k] = A(i, k);
          b[k] = B(k, j);
        }
        ASSERT_EQ(C[i * N + j], tc::dot(p, a.data(), b.data(), K, 0.0)) << name << " (" << i << ", " << j << ")";
      }
  }
}

TEST(KernelEmulationOrder, PromotionIntervalsBracketTheModes) {
  const int M = 6, N = 5, K = 128;
  Matrix A = random_matrix("uniform_-1_1", Operand::A, M, K, Format::fp16, 3);
  Matrix B = random_matrix("uniform_-1_1", Operand::B, K, N, Format::fp16, 3);
  auto ext = emulate(tc_order(Accumulation::external), A, B, f16_f32(), 1);
  auto in = emulate(tc_order(Accumulation::in_mma), A, B, f16_f32(), 1);
  EXPECT_EQ(emulate(tc_order(Accumulation::promoted, 16), A, B, f16_f32(), 1), ext);
  EXPECT_EQ(emulate(tc_order(Accumulation::promoted, 128), A, B, f16_f32(), 1), in);
  int differ = 0;
  for (std::size_t e = 0; e < in.size(); ++e) differ += in[e] != ext[e];
  EXPECT_GT(differ, 0) << "truncating and round-to-nearest accumulation agree on every entry: no test";
}

TEST(KernelEmulationOrder, ThreadCountDoesNotChangeTheResult) {
  const int M = 9, N = 7, K = 64;
  Matrix A = random_matrix("normal_0_1", Operand::A, M, K, Format::fp16, 8);
  Matrix B = random_matrix("normal_0_1", Operand::B, K, N, Format::fp16, 8);
  Numerics o = *order_of("hgemm_wmma_v4_external");
  EXPECT_EQ(emulate(o, A, B, f16_f32(), 1), emulate(o, A, B, f16_f32(), 3));
}

TEST(KernelEmulationOrder, RejectsKThatDoesNotFitTheOrder) {
  Matrix A(2, 40), B(40, 2);
  EXPECT_THROW(emulate(tc_order(Accumulation::in_mma), A, B, f16_f32(), 1), std::invalid_argument);
  Matrix A2(2, 48), B2(48, 2);
  EXPECT_THROW(emulate(tc_order(Accumulation::in_mma, 0, 2), A2, B2, f16_f32(), 1), std::invalid_argument);
  EXPECT_THROW(emulate(tc_order(Accumulation::promoted, 24), A2, B2, f16_f32(), 1), std::invalid_argument);
}

TEST(KernelEmulationNames, NumericsOfRegisteredKernels) {
  auto simt = order_of("sgemm_05_blocktile_2d");
  ASSERT_TRUE(simt);
  EXPECT_EQ(simt->accumulation, Accumulation::fma);

  auto in = order_of("hgemm_mma_02_ldmatrix_in_mma");
  ASSERT_TRUE(in);
  EXPECT_EQ(in->accumulation, Accumulation::in_mma);
  EXPECT_EQ(in->instruction, tc::Instruction::mma_m16n8k16_f16_f32);
  EXPECT_EQ(in->k_step, 16);
  EXPECT_EQ(in->split_k, 1);

  auto promo = order_of("hgemm_mma_03b_pipeline_tile4x_s4_promoted_every_64k");
  ASSERT_TRUE(promo);
  EXPECT_EQ(promo->accumulation, Accumulation::promoted);
  EXPECT_EQ(promo->promotion_interval_k, 64);

  auto bf = order_of("hgemm_mma_03b_pipeline_tile4x_128x256_s4_bf16_external");
  ASSERT_TRUE(bf);
  EXPECT_EQ(bf->accumulation, Accumulation::external);
  EXPECT_EQ(bf->instruction, tc::Instruction::mma_m16n8k16_bf16_f32);

  auto h = order_of("hgemm_mma_03b_pipeline_tile4x_128x256_s4_f16acc_in_mma");
  ASSERT_TRUE(h);
  EXPECT_EQ(h->instruction, tc::Instruction::mma_m16n8k16_f16_f16);
  EXPECT_EQ(h->output, Format::fp16);

  auto v4 = order_of("hgemm_wmma_v4_in_mma");
  ASSERT_TRUE(v4);
  EXPECT_EQ(v4->split_k, 2);
  auto v5 = order_of("hgemm_wmma_v5_multistage_s3_external");
  ASSERT_TRUE(v5);
  EXPECT_EQ(v5->split_k, 1);
  EXPECT_EQ(v5->accumulation, Accumulation::external);

  EXPECT_FALSE(order_of("cublas_gemmex_fp16_f32"));
  // A stream-K tail sums some entries in another order: no single order describes the kernel.
  EXPECT_FALSE(order_of("hgemm_wgmma_08_streamk_sm16_fp16_in_wgmma"));
  EXPECT_FALSE(order_of("hgemm_mma_99_unknown_mode"));
}
