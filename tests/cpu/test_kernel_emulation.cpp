// Kernel emulation (reference/kernel_emulation.hpp): hand-made cases where the order of
// accumulation decides the bits, and the numerics records of registered kernels.
#include <gtest/gtest.h>

#include <cmath>
#include <optional>
#include <tuple>
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
  // No partial sums is no order: refused (split_k 0 divided K by zero, SIGFPE; -1 summed nothing); an fma
  // order with any split is one gemmlab has no model of, refused as such.
  Numerics fma = *order_of("sgemm_01_naive");
  for (int split : {0, -1}) {
    try {
      emulate(tc_order(Accumulation::in_mma, 0, split), A2, B2, f16_f32(), 1);
      ADD_FAILURE() << "split_k " << split << " emulated";
    } catch (const std::invalid_argument& e) {
      EXPECT_NE(std::string(e.what()).find("split_k is " + std::to_string(split)), std::string::npos) << e.what();
    }
    fma.split_k = split;
    EXPECT_THROW(emulate(fma, A2, B2, f16_f32(), 1), std::invalid_argument);
  }
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
  EXPECT_FALSE(order_of("cublaslt_fp8_e4m3_f32"));
  // A stream-K tail cuts some entries' K into chunks: predictable with the kernel's chunk map.
  auto sk = order_of("hgemm_wgmma_08_streamk_sm16_fp16_in_wgmma");
  ASSERT_TRUE(sk);
  EXPECT_TRUE(sk->k_chunked);
  EXPECT_NE(find_kernel("hgemm_wgmma_08_streamk_sm16_fp16_in_wgmma")->k_chunks, nullptr);
  for (const Kernel* k : all_kernels())
    EXPECT_EQ(k->numerics.k_chunked, k->k_chunks != nullptr) << k->name << ": k_chunked and the chunk map go together";
  EXPECT_FALSE(order_of("hgemm_mma_99_unknown_mode"));
}

// K = 64 cut into chunks [0, 16), [16, 48), [48, 64): each chunk in_mma from +0, the chunk sums
// added to nearest in k order. Chunk 0 holds 1, chunk 1 the single term 3 * 2^-25 (0.75 ulp(1)),
// chunk 2 nothing: unchunked, in_mma truncates 1 + 3 * 2^-25 to 1; chunked, 1 + 3 * 2^-25 rounds to
// nearest: 1 + 2^-23.
TEST(KernelEmulationChunks, ChunkSumsAreAddedToNearestInKOrder) {
  std::vector<double> a(64, 0.0), b(64, 0.0);
  a[0] = b[0] = 1;
  a[20] = 3 * p2(-13);
  b[20] = p2(-12);
  Numerics o = tc_order(Accumulation::in_mma);
  Matrix A(1, 64), B(64, 1);
  for (int k = 0; k < 64; ++k) A(0, k) = a[k], B(k, 0) = b[k];
  EXPECT_EQ(emulate(o, A, B, f16_f32(), 1)[0], 1.0);
  o.k_chunked = true;
  EXPECT_THROW(emulate(o, A, B, f16_f32(), 1), std::invalid_argument) << "a chunked order needs its chunk map";
  KChunkMap map{.tile_m = 1, .tile_n = 1, .tiles_n = 1, .bounds = {{0, 16, 48, 64}}};
  EXPECT_EQ(emulate(o, A, B, f16_f32(), 1, &map)[0], 1.0 + p2(-23));
  map.bounds = {{0, 64}};  // one chunk: the unchunked order
  EXPECT_EQ(emulate(o, A, B, f16_f32(), 1, &map)[0], 1.0);
  map.bounds = {{0, 24, 64}};  // not a whole number of k-steps
  EXPECT_THROW(emulate(o, A, B, f16_f32(), 1, &map), std::invalid_argument);
  map.bounds = {{0, 32, 16, 64}};
  EXPECT_THROW(emulate(o, A, B, f16_f32(), 1, &map), std::invalid_argument);
}

// The chunked order's tree: each chunk's in_mma chain, the chunk sums added left to right.
TEST(KernelEmulationChunks, ExpectedTreeOfAChunkedEntry) {
  const Numerics o = tc_order(Accumulation::in_mma);
  const SummationTree t = expected_tree(o, 64, {0, 16, 48, 64});
  SummationTree want(64);
  const int c0 = want.add_node([] { std::vector<int> v; for (int k = 0; k < 16; ++k) v.push_back(k); return v; }());
  int c1 = [&] { std::vector<int> v; for (int k = 16; k < 32; ++k) v.push_back(k); return want.add_node(v); }();
  c1 = [&] { std::vector<int> v = {c1}; for (int k = 32; k < 48; ++k) v.push_back(k); return want.add_node(v); }();
  const int c2 = [&] { std::vector<int> v; for (int k = 48; k < 64; ++k) v.push_back(k); return want.add_node(v); }();
  want.add_node({want.add_node({c0, c1}), c2});
  EXPECT_EQ(t.canonical(), want.canonical());
  EXPECT_EQ(expected_tree(o, 64, {0, 64}).canonical(), blocked_tree(64, 16, true).canonical());
}

// A measured tree composed with the model must give what the numerics record gives for the same
// order, bit for bit: the tree rules (FMA chains, fused nodes as instructions, fp32 adds) are the
// emulation's orders seen from the tree.
TEST(KernelEmulationTree, TreeOfEveryOrderReproducesTheOrder) {
  struct Case { const char* kernel; const char* dist; };
  const Case cases[] = {
      {"sgemm_01_naive", "normal_0_1"},
      {"hgemm_mma_01_naive_in_mma", "logunif_-20_14"},
      {"hgemm_mma_01_naive_external", "normal_0_1"},
      {"hgemm_mma_03b_pipeline_tile4x_s4_promoted_every_64k", "normal_0_1"},
      {"hgemm_mma_03b_pipeline_tile4x_128x256_s4_bf16_in_mma", "logunif_-40_40"},
      {"hgemm_wmma_v4_in_mma", "normal_0_1"},
      {"hgemm_wgmma_04_persistent_sm8_e4m3_in_wgmma", "logunif_-9_8"},
      {"hgemm_wgmma_04_persistent_sm8_e5m2_promoted_every_128k", "normal_0_1"},
  };
  const int K = 256;
  for (const Case& c : cases) {
    auto o = order_of(c.kernel);
    ASSERT_TRUE(o) << c.kernel;
    const Matrix A = random_matrix(c.dist, Operand::A, 8, K, o->input, 7);
    const Matrix B = random_matrix(c.dist, Operand::B, K, 8, o->input, 7);
    const tc::TcParams params = o->instruction ? *tc::measured_hopper_params(*o->instruction) : tc::TcParams{};
    const SummationTree t = expected_tree(*o, K);
    ASSERT_EQ(tree_gap(t, o->compute), "") << c.kernel;
    const std::vector<double> by_order = emulate(*o, A, B, params, 1);
    const std::vector<double> by_tree = emulate_tree(t, o->compute, A, B, 1);
    for (std::size_t e = 0; e < by_order.size(); ++e)
      ASSERT_EQ(to_bits(Format::fp32, by_tree[e]), to_bits(Format::fp32, by_order[e])) << c.kernel << " entry " << e;
  }
}

// Hand-computed, fp32 inputs. Products 1, 2^-24, 2^-24, 2^-24: sequentially each 1 + 2^-24 ties to
// even, 1; pairwise ((k0 k1) (k2 k3)) gives 1 and 2^-24 + 2^-24 = 2^-23 exactly, then 1 + 2^-23.
// Products -1 (k0) and (1 + 2^-12)^2 = 1 + 2^-11 + 2^-24 (k1) in one binary node: the chain starts
// at the smaller k, fma(a1, b1, RN(-1)) = 2^-11 + 2^-24 (exact, one rounding); a rounded product
// first would lose the 2^-24 (RN(1 + 2^-11 + 2^-24) = 1 + 2^-11, a tie to even), and so would the
// chain started at k1 (fma(a0, b0, RN(p1)) = 2^-11).
TEST(KernelEmulationTree, BinaryNodesAreFmaChainsAndFp32Adds) {
  const std::vector<double> a = {1, p2(-24), p2(-24), p2(-24)}, b = {1, 1, 1, 1};
  EXPECT_EQ(emulate_tree_dot(sequential_tree(4), Format::fp32, a.data(), b.data()), 1.0);
  EXPECT_EQ(emulate_tree_dot(pairwise_tree(4), Format::fp32, a.data(), b.data()), 1.0 + p2(-23));
  const std::vector<double> x = {-1, 1 + p2(-12)}, y = {1, 1 + p2(-12)};
  EXPECT_EQ(emulate_tree_dot(sequential_tree(2), Format::fp32, x.data(), y.data()), p2(-11) + p2(-24));
}

TEST(KernelEmulationTree, GapsAreNamed) {
  // Two partial sums and products in one fused node: no instruction takes two Cs.
  SummationTree t(18);
  const int x = t.add_node({0, 1}), y = t.add_node({2, 3});
  std::vector<int> ch = {x, y};
  for (int k = 4; k < 18; ++k) ch.push_back(k);
  t.add_node(ch);
  EXPECT_NE(tree_gap(t, Format::fp16).find("2 partial sums"), std::string::npos) << tree_gap(t, Format::fp16);
  // A fused node of 8 fp16 products: no modelled fp16 instruction has a block of 8.
  EXPECT_NE(tree_gap(blocked_tree(64, 8, true), Format::fp16).find("8 products"), std::string::npos);
  EXPECT_EQ(tree_gap(blocked_tree(64, 8, true), Format::tf32), "");
  EXPECT_EQ(tree_gap(blocked_tree(64, 16, false), Format::e4m3), "");  // fp8 mma.sync's fp16 HMMA steps
  EXPECT_THROW(emulate_tree_dot(blocked_tree(64, 8, true), Format::fp16, std::vector<double>(64, 1).data(),
                                std::vector<double>(64, 1).data()),
               std::invalid_argument);
}

// ---------------------------------------------------------------------------------------------
// Split operands (SplitScheme, 3xTF32)

namespace {

// Triton 3.6's tf32x3 (F32DotTC.cpp): big = cvt.rna.tf32.f32(x), small = x - big; per k-tile the
// three tf32 dots small*big, big*small (NaN -> 0), big*big chained from +0, then added to the sum.
SplitScheme triton_tf32x3() {
  return {LowBits::nearest_away,
          {{SplitScheme::small, SplitScheme::big}, {SplitScheme::big, SplitScheme::small}, {SplitScheme::big, SplitScheme::big}},
          0,
          true};
}

// The measured model of `ins` for its nodes of `block` products, none for others.
NodeModel model_for(tc::Instruction ins, int block) {
  const tc::TcParams p = *tc::measured_hopper_params(ins);
  return [p, block](int leaves) -> std::optional<tc::TcParams> {
    if (leaves != block) return std::nullopt;
    return p;
  };
}

NodeModel tf32_model() { return model_for(tc::Instruction::wgmma_m64n8k8_tf32_f32, 8); }

// What the tensor core reads of an fp32 value as a tf32 operand: its 11 leading significant bits,
// cut toward zero (written apart from round_low_bits, on the value, not the bits).
double tf32_cut(double x) {
  if (x == 0 || !std::isfinite(x)) return x;
  const int e = std::ilogb(x);
  return std::ldexp(std::trunc(std::ldexp(x, 10 - e)), e - 10);
}

}  // namespace

TEST(KernelEmulationSplit, RoundLowBitsAndPieces) {
  // 1 + 2^-11 is the tie between tf32 neighbours 1 and 1 + 2^-10.
  EXPECT_EQ(round_low_bits(1 + p2(-11), 13, LowBits::nearest_even), 1.0);
  EXPECT_EQ(round_low_bits(1 + p2(-11), 13, LowBits::nearest_away), 1 + p2(-10));
  EXPECT_EQ(round_low_bits(-(1 + p2(-11)), 13, LowBits::nearest_away), -(1 + p2(-10)));
  EXPECT_EQ(round_low_bits(1 + p2(-10) - p2(-23), 13, LowBits::toward_zero), 1.0);
  EXPECT_EQ(round_low_bits(0x1.fffffep127, 13, LowBits::nearest_away), INFINITY);  // the carry reaches the exponent
  EXPECT_TRUE(std::isnan(round_low_bits(NAN, 13, LowBits::nearest_even)));
  const tc::TcParams p = *tc::measured_hopper_params(tc::Instruction::wgmma_m64n8k8_tf32_f32);
  ASSERT_EQ(p.tf32_low_bits, Rounding::toward_zero);
  // x = 1 + 0xfff 2^-23: the low 13 bits are below the tie, so big = 1 and small = 0xfff 2^-23, whose
  // 12 significant bits the instruction reads as 11: 0xffe 2^-23.
  const SplitScheme s = triton_tf32x3();
  auto pieces = split_pieces(s, p, 1 + 0xfff * p2(-23));
  EXPECT_EQ(pieces[0], 1.0);
  EXPECT_EQ(pieces[1], 0xffe * p2(-23));
  // A tie: away from zero, the small piece is negative.
  pieces = split_pieces(s, p, 1 + p2(-11));
  EXPECT_EQ(pieces[0], 1 + p2(-10));
  EXPECT_EQ(pieces[1], -p2(-11));
  // Infinity: big is infinite, small = inf - inf is NaN.
  pieces = split_pieces(s, p, INFINITY);
  EXPECT_EQ(pieces[0], INFINITY);
  EXPECT_TRUE(std::isnan(pieces[1]));
}

TEST(KernelEmulationSplit, SingleProductLosesWhatTheSmallPieceCannotHold) {
  // One product x * 1 in a fused node of 8: the passes add big * 1 and small * 1 exactly, but the
  // small piece 0xfff 2^-23 reaches the tensor core as 0xffe 2^-23: x - 2^-23 comes back.
  std::vector<double> a(8, 0.0), b(8, 0.0);
  a[3] = 1 + 0xfff * p2(-23);
  b[3] = 1;
  Matrix A(1, 8), B(8, 1);
  for (int k = 0; k < 8; ++k) {
    A(0, k) = a[k];
    B(k, 0) = b[k];
  }
  const SplitScheme s = triton_tf32x3();
  EXPECT_EQ(emulate_tree_at(blocked_tree(8, 8, true), tf32_model(), A, B, {{0, 0}}, 1, &s)[0], 1 + 0xffe * p2(-23));
}

TEST(KernelEmulationSplit, TritonTf32x3AsItsKTilesDoIt) {
  // Triton's loop written out with tc::dot: K = 64 in two k-tiles of 32 (four k8 nodes each), the
  // tiles' sums added in fp32; the tree of the big x big products is promoted_tree(64, 8, 32).
  const tc::TcParams p = *tc::measured_hopper_params(tc::Instruction::wgmma_m64n8k8_tf32_f32);
  const int M = 6, N = 5, K = 64;
  for (const char* dist : {"uniform_0_1", "normal_0_1", "logunif_-8_8"}) {
    const Matrix A = generate(parse_distribution(dist), Operand::A, M, K, Format::fp32, 7);
    const Matrix B = generate(parse_distribution(dist), Operand::B, K, N, Format::fp32, 7);
    std::vector<std::pair<int, int>> entries;
    for (int i = 0; i < M; ++i)
      for (int j = 0; j < N; ++j) entries.emplace_back(i, j);
    for (int per_node : {0, 1}) {
      SplitScheme s = triton_tf32x3();
      s.nodes_per_pass = per_node;
      const std::vector<double> got = emulate_tree_at(promoted_tree(K, 8, 32), tf32_model(), A, B, entries, 1, &s);
      for (std::size_t e = 0; e < entries.size(); ++e) {
        const auto [i, j] = entries[e];
        // The pieces, written out: big to nearest with ties away, small = x - big in fp32, read cut.
        double ab[K], as[K], bb[K], bs[K];
        for (int k = 0; k < K; ++k) {
          ab[k] = round_low_bits(A(i, k), 13, LowBits::nearest_away);
          as[k] = tf32_cut(static_cast<float>(A(i, k) - ab[k]));
          bb[k] = round_low_bits(B(k, j), 13, LowBits::nearest_away);
          bs[k] = tf32_cut(static_cast<float>(B(k, j) - bb[k]));
        }
        float acc = 0;
        for (int tile = 0; tile < K / 32; ++tile) {
          double d = 0;
          const double* pass_a[] = {as, ab, ab};
          const double* pass_b[] = {bb, bs, bb};
          if (per_node == 0) {
            for (int pass = 0; pass < 3; ++pass)
              for (int k0 = tile * 32; k0 < tile * 32 + 32; k0 += 8) d = tc::dot(p, pass_a[pass] + k0, pass_b[pass] + k0, 8, d);
          } else {
            for (int k0 = tile * 32; k0 < tile * 32 + 32; k0 += 8)
              for (int pass = 0; pass < 3; ++pass) d = tc::dot(p, pass_a[pass] + k0, pass_b[pass] + k0, 8, d);
          }
          acc = tile == 0 ? static_cast<float>(d) : acc + static_cast<float>(d);
        }
        ASSERT_EQ(got[e], acc) << dist << " per_node " << per_node << " C(" << i << "," << j << ")";
      }
    }
  }
}

// Triton 3.6's bf16x3 and bf16x6 (F32DotTC.cpp, BF16xN): pieces rounded to bf16 nearest even, the
// passes in the order its dots run, the NaN mask before hi x hi.
SplitScheme triton_bf16(int pieces) {
  constexpr auto H = SplitScheme::hi, M = SplitScheme::mid, L = SplitScheme::lo;
  std::vector<std::pair<SplitScheme::Piece, SplitScheme::Piece>> passes{{M, H}, {H, M}, {H, H}};
  if (pieces == 3) passes.insert(passes.begin(), {{M, M}, {L, H}, {H, L}});
  return {LowBits::nearest_even, passes, 0, true, SplitScheme::PieceFormat::bf16, pieces};
}

NodeModel bf16_model() { return model_for(tc::Instruction::wgmma_m64n8k16_bf16_f32, 16); }

// bf16 round to nearest even of an fp32 value, on the value (apart from round_low_bits).
float bf16_rne(float x) {
  if (x == 0 || !std::isfinite(x)) return x;
  const int e = std::ilogb(x);
  return static_cast<float>(std::ldexp(std::nearbyint(std::ldexp(static_cast<double>(x), 7 - e)), e - 7));
}

TEST(KernelEmulationSplit, Bf16Pieces) {
  const tc::TcParams p = *tc::measured_hopper_params(tc::Instruction::wgmma_m64n8k16_bf16_f32);
  // x = 1 + 2^-9 + 2^-17 + 2^-23: hi = 1 (below the tie 2^-8); the residual 2^-9 + 2^-17 + 2^-23 is
  // above the tie of its 8 bits: mid = 2^-9 + 2^-16; lo = 2^-23 - 2^-17 (7 bits, exact in bf16).
  const double x = 1 + p2(-9) + p2(-17) + p2(-23);
  auto pieces = split_pieces(triton_bf16(3), p, x);
  EXPECT_EQ(pieces[0], 1.0);
  EXPECT_EQ(pieces[1], p2(-9) + p2(-16));
  EXPECT_EQ(pieces[2], p2(-23) - p2(-17));
  pieces = split_pieces(triton_bf16(2), p, x);
  EXPECT_EQ(pieces[1], p2(-9) + p2(-16));
  EXPECT_EQ(pieces[2], 0.0);  // no third piece
  // A tie upward to even: 1 + 3 2^-8 -> hi 1 + 2^-6, mid = -2^-8.
  pieces = split_pieces(triton_bf16(2), p, 1 + 3 * p2(-8));
  EXPECT_EQ(pieces[0], 1 + p2(-6));
  EXPECT_EQ(pieces[1], -p2(-8));
  pieces = split_pieces(triton_bf16(3), p, -INFINITY);
  EXPECT_EQ(pieces[0], -INFINITY);
  EXPECT_TRUE(std::isnan(pieces[1]) && std::isnan(pieces[2]));
  // A scheme naming a piece it does not have, or a third tf32 piece, is refused.
  Matrix A(1, 16), B(16, 1);
  SplitScheme bad = triton_bf16(2);
  bad.passes.push_back({SplitScheme::lo, SplitScheme::hi});
  EXPECT_THROW(emulate_tree_at(blocked_tree(16, 16, true), bf16_model(), A, B, {{0, 0}}, 1, &bad), std::invalid_argument);
  SplitScheme three_tf32 = triton_tf32x3();
  three_tf32.pieces = 3;
  EXPECT_THROW(emulate_tree_at(blocked_tree(8, 8, true), tf32_model(), A, B, {{0, 0}}, 1, &three_tf32),
               std::invalid_argument);
}

TEST(KernelEmulationSplit, TritonBf16xNAsItsKTilesDoIt) {
  // Triton's loop written out with tc::dot: K = 64 in two k-tiles of 32 (two k16 bf16 nodes each),
  // each dot a chain over the tile from +0, the NaN mask before hi x hi, the tiles' sums added in fp32.
  const tc::TcParams p = *tc::measured_hopper_params(tc::Instruction::wgmma_m64n8k16_bf16_f32);
  const int M = 5, N = 4, K = 64;
  for (int np : {2, 3}) {
    const SplitScheme s = triton_bf16(np);
    for (const char* dist : {"uniform_0_1", "normal_0_1", "logunif_-8_8"}) {
      Matrix A = generate(parse_distribution(dist), Operand::A, M, K, Format::fp32, 11);
      const Matrix B = generate(parse_distribution(dist), Operand::B, K, N, Format::fp32, 11);
      A(1, 5) = INFINITY;  // the mask: row 1 is +-inf or NaN as the hi x hi products say
      std::vector<std::pair<int, int>> entries;
      for (int i = 0; i < M; ++i)
        for (int j = 0; j < N; ++j) entries.emplace_back(i, j);
      const std::vector<double> got = emulate_tree_at(promoted_tree(K, 16, 32), bf16_model(), A, B, entries, 1, &s);
      for (std::size_t e = 0; e < entries.size(); ++e) {
        const auto [i, j] = entries[e];
        double a[3][K], b[3][K];
        for (int k = 0; k < K; ++k) {
          float ra = static_cast<float>(A(i, k)), rb = static_cast<float>(B(k, j));
          for (int x = 0; x < 3; ++x) {
            a[x][k] = bf16_rne(ra);
            b[x][k] = bf16_rne(rb);
            ra -= static_cast<float>(a[x][k]);
            rb -= static_cast<float>(b[x][k]);
          }
        }
        // (a piece, b piece) per dot, in Triton's order: bf16x6 = (mid mid, lo hi, hi lo) + bf16x3's
        std::vector<std::pair<int, int>> dots{{1, 1}, {2, 0}, {0, 2}, {1, 0}, {0, 1}, {0, 0}};
        if (np == 2) dots.erase(dots.begin(), dots.begin() + 3);
        float acc = 0;
        for (int tile = 0; tile < K / 32; ++tile) {
          double d = 0;
          for (std::size_t x = 0; x < dots.size(); ++x) {
            if (x + 1 == dots.size() && std::isnan(d)) d = 0;
            for (int k0 = tile * 32; k0 < tile * 32 + 32; k0 += 16)
              d = tc::dot(p, a[dots[x].first] + k0, b[dots[x].second] + k0, 16, d);
          }
          acc = tile == 0 ? static_cast<float>(d) : acc + static_cast<float>(d);
        }
        if (std::isnan(acc)) ASSERT_TRUE(std::isnan(got[e])) << dist << " np " << np << " C(" << i << "," << j << ")";
        else ASSERT_EQ(got[e], acc) << dist << " np " << np << " C(" << i << "," << j << ")";
      }
    }
  }
}

TEST(KernelEmulationSplit, NanMaskGivesTheInfinity) {
  // inf * 1.5: the small piece of inf is NaN, so small * big is NaN; masked before big * big, the
  // result is inf * 1.5 = inf; unmasked it stays NaN.
  Matrix A(1, 8), B(8, 1);
  for (int k = 0; k < 8; ++k) {
    A(0, k) = k == 2 ? INFINITY : 1;
    B(k, 0) = 1.5;
  }
  SplitScheme s = triton_tf32x3();
  EXPECT_EQ(emulate_tree_at(blocked_tree(8, 8, true), tf32_model(), A, B, {{0, 0}}, 1, &s)[0], INFINITY);
  s.nan_to_zero_before_last = false;
  EXPECT_TRUE(std::isnan(emulate_tree_at(blocked_tree(8, 8, true), tf32_model(), A, B, {{0, 0}}, 1, &s)[0]));
}

TEST(KernelEmulationSplit, ProductsOutsideFusedNodesAreAGap) {
  const SplitScheme s = triton_tf32x3();
  EXPECT_NE(tree_gap(sequential_tree(8), tf32_model(), "fp32", &s).find("FMA"), std::string::npos);
  EXPECT_EQ(tree_gap(promoted_tree(64, 8, 32), tf32_model(), "fp32", &s), "");
  Matrix A(1, 8), B(8, 1);
  EXPECT_THROW(emulate_tree_at(sequential_tree(8), tf32_model(), A, B, {{0, 0}}, 1, &s), std::invalid_argument);
}

TEST(KernelEmulationSplit, ChainsOfFusedNodes) {
  // promoted_tree: one chain of four k8 nodes per k-tile of 32; blocked in-MMA: one chain of all.
  const SummationTree t = promoted_tree(64, 8, 32);
  const std::vector<std::vector<int>> chains = fused_chains(t);
  ASSERT_EQ(chains.size(), 2u);
  for (const auto& c : chains) ASSERT_EQ(c.size(), 4u);
  EXPECT_EQ(fused_chains(blocked_tree(64, 8, true)).size(), 1u);
  EXPECT_EQ(fused_chains(blocked_tree(64, 8, false)).size(), 8u);
}

TEST(KernelEmulationTree, Fp16AccumulatorNodesChainTheirFp16Outputs) {
  // A tree of fused f16 -> f16 nodes (Triton's out_dtype=fp16, mma.sync / wgmma .f16.f16): each node's C is
  // the previous node's fp16 output. The tree emulation (explain's composition) must give, bit for bit,
  // the chain written out with tc::dot, and the in-mma record's emulate().
  const tc::TcParams h = *tc::measured_hopper_params(tc::Instruction::wgmma_m64n8k16_f16_f16);
  const int M = 4, N = 4, K = 256;
  const Matrix A = random_matrix("normal_0_1", Operand::A, M, K, Format::fp16, 5);
  const Matrix B = random_matrix("uniform_0_1", Operand::B, K, N, Format::fp16, 5);
  const NodeModel model = [h](int leaves) -> std::optional<tc::TcParams> {
    if (leaves != 16) return std::nullopt;
    return h;
  };
  std::vector<std::pair<int, int>> all;
  for (int i = 0; i < M; ++i)
    for (int j = 0; j < N; ++j) all.emplace_back(i, j);
  const std::vector<double> tree = emulate_tree_at(blocked_tree(K, 16, true), model, A, B, all, 1);
  Numerics rec = tc_order(Accumulation::in_wgmma);
  rec.instruction = tc::Instruction::wgmma_m64n8k16_f16_f16;
  rec.accumulator = rec.output = Format::fp16;
  const std::vector<double> named = emulate(rec, A, B, h, 1);
  int not_fp32_exact = 0;
  for (std::size_t e = 0; e < all.size(); ++e) {
    const auto [i, j] = all[e];
    double a[16], b[16], d = 0.0;
    for (int k0 = 0; k0 < K; k0 += 16) {
      for (int k = 0; k < 16; ++k) {
        a[k] = A(i, k0 + k);
        b[k] = B(k0 + k, j);
      }
      d = tc::dot(h, a, b, 16, d);  // fp16 in, fp16 out: the next node's C
      ASSERT_EQ(tc::round_to_format(Format::fp16, d, Rounding::nearest_even), d);
    }
    EXPECT_EQ(tree[e], d) << "(" << i << ", " << j << ")";
    EXPECT_EQ(named[static_cast<std::size_t>(i) * N + j], d) << "(" << i << ", " << j << ")";
    // The fp32 chain of the same products differs: the fp16 rounding after every node is what is modelled.
    not_fp32_exact += emulate_tree_at(blocked_tree(K, 16, true), [](int l) -> std::optional<tc::TcParams> {
                        if (l != 16) return std::nullopt;
                        return *tc::measured_hopper_params(tc::Instruction::wgmma_m64n8k16_f16_f32);
                      }, A, B, {all[e]}, 1)[0] != d;
  }
  EXPECT_GT(not_fp32_exact, 0);
}

// flatten_tree: emulate_tree_at's work as arrays (what explain's GPU composition reads): every internal node's
// children in the tree's order, one model per distinct fused node model, the chains of split operands, and the
// pieces split_line gives through the flattened tree as through the model that reads them. The GPU's walk of
// these arrays is held to emulate_tree_at bit for bit in tests/gpu/test_emulate_gpu.cpp.
TEST(KernelEmulationFlat, ArraysHoldTheTreeItsModelsAndItsChains) {
  const int K = 64;
  const SummationTree t = promoted_tree(K, 16, 32);  // chains of 2 fused nodes, their sums added in fp32
  const FlatTree plain = flatten_tree(t, bf16_model());
  EXPECT_EQ(plain.leaves, K);
  EXPECT_EQ(plain.nodes, t.node_count());
  EXPECT_EQ(plain.pieces, 1);
  ASSERT_EQ(plain.first_child.size(), static_cast<std::size_t>(t.node_count() - K + 1));
  ASSERT_EQ(plain.params.size(), 1u);  // one model for every fused node
  EXPECT_EQ(plain.params[0], *bf16_model()(16));
  int fused = 0;
  for (int n = K; n < t.node_count(); ++n) {
    const int i = n - K;
    const std::vector<int> ch(plain.children.begin() + plain.first_child[i],
                              plain.children.begin() + plain.first_child[i + 1]);
    EXPECT_EQ(ch, t.children(n)) << "node " << n;
    EXPECT_EQ(plain.model[i], ch.size() == 2 ? -1 : 0) << "node " << n;
    fused += plain.model[i] == 0;
  }
  EXPECT_EQ(fused, K / 16);
  EXPECT_TRUE(plain.chain_of.empty() && plain.chain_nodes.empty());

  const SplitScheme s = triton_bf16(3);
  const FlatTree split = flatten_tree(t, bf16_model(), &s);
  EXPECT_EQ(split.pieces, max_split_pieces);
  const std::vector<std::vector<int>> chains = fused_chains(t);
  ASSERT_EQ(split.chain_first.size(), chains.size() + 1);
  for (std::size_t c = 0; c < chains.size(); ++c) {
    const std::vector<int> nodes(split.chain_nodes.begin() + split.chain_first[c],
                                 split.chain_nodes.begin() + split.chain_first[c + 1]);
    EXPECT_EQ(nodes, chains[c]);
    EXPECT_EQ(split.chain_of[chains[c].back() - K], static_cast<int>(c));  // the chain runs at its last node
    for (std::size_t x = 0; x + 1 < chains[c].size(); ++x) EXPECT_EQ(split.chain_of[chains[c][x] - K], -1);
  }
  std::vector<double> x(K), via_flat, via_model;
  for (int k = 0; k < K; ++k) x[k] = 1 + std::ldexp(static_cast<double>(k * 2654435761u % 65536), -20);
  split_line(s, split, x.data(), K, via_flat);
  ASSERT_EQ(via_flat.size(), static_cast<std::size_t>(max_split_pieces * K));
  for (int k = 0; k < K; ++k) {
    const std::array<double, max_split_pieces> p = split_pieces(s, *bf16_model()(16), x[k]);
    for (int q = 0; q < max_split_pieces; ++q) EXPECT_EQ(via_flat[static_cast<std::size_t>(max_split_pieces) * k + q], p[q]);
  }
  EXPECT_THROW(split_line(s, plain, x.data(), K, via_model), std::invalid_argument);  // flattened without pieces
  // What emulate_tree_at refuses, flatten_tree refuses the same way.
  EXPECT_THROW(flatten_tree(blocked_tree(K, 8, true), bf16_model()), std::invalid_argument);
}
