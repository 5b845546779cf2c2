// The bound of any revealed tree (reference/tree_bound.hpp) through the numerics record (Numerics::tree,
// bound_model): the path roundoff of synthetic trees computed by hand; equal to gamma_K for a plain
// chain and never above it for gemmlab's named orders; inputs that drive a kernel close to its bound
// but never past it, and a kernel whose tree is worse than the record's breaks it.
#include <gtest/gtest.h>

#include <cmath>
#include <string>
#include <vector>

#include "reference/error_stats.hpp"
#include "reference/exact_gemm.hpp"
#include "reference/kernel_emulation.hpp"
#include "reference/numerics.hpp"
#include "reference/summation_tree.hpp"
#include "reference/tc_model.hpp"
#include "reference/tree_bound.hpp"
#include "reference/tree_form.hpp"

using namespace gemmlab;

namespace {

constexpr double u32 = 0x1p-24;  // fp32 unit roundoff (binary nodes, to nearest)

tc::TcParams measured(tc::Instruction i) { return *tc::measured_hopper_params(i); }

FusedNodeModel only(const tc::TcParams& p) {
  return [p](int) { return std::optional<tc::TcParams>(p); };
}
const FusedNodeModel no_fused = [](int) { return std::optional<tc::TcParams>(); };

// An FMA chain over the products in the order given (the first two start it).
SummationTree fma_chain(const std::vector<int>& order) {
  SummationTree t(static_cast<int>(order.size()));
  int cur = order[0];
  for (std::size_t i = 1; i < order.size(); ++i) cur = t.add_node({cur, order[i]});
  return t;
}

std::vector<int> decreasing_blocks_order(int K, int B) {
  std::vector<int> out;
  for (int b = K / B - 1; b >= 0; --b)
    for (int k = b * B; k < (b + 1) * B; ++k) out.push_back(k);
  return out;
}

// The record of a kernel `gemmlab explain` would identify: fp32 (or `in`) inputs, tree t.
Numerics tree_record(const SummationTree& t, Format in, std::optional<tc::Instruction> ins) {
  Numerics n;
  n.input = n.compute = in;
  n.accumulator = ins ? tc::info(*ins).output : Format::fp32;
  n.output = Format::fp32;
  n.accumulation = Accumulation::tree;
  n.instruction = ins;
  n.k_step = ins ? tc::info(*ins).k : 1;
  n.accumulation_rounding = ins ? Rounding::toward_zero : Rounding::nearest_even;
  n.tree = compact_form(t);
  return n;
}

// One output entry: a (1, K) and b (K, 1), computed by `tree` with fp32 binary nodes and `model`'s fused
// nodes, judged by the bound of record n.
ErrorStats judged(const SummationTree& tree, const emulation::NodeModel& model, const std::vector<double>& a,
                  const std::vector<double>& b, const Numerics& n) {
  const int K = tree.leaves();
  Matrix A(1, K), B(K, 1);
  for (int k = 0; k < K; ++k) {
    A(0, k) = a[k];
    B(k, 0) = b[k];
  }
  const std::vector<double> c = emulation::emulate_tree_at(tree, model, A, B, {{0, 0}}, 1);
  return compute_error_stats(c, exact_gemm(A, B, Format::fp32), bound_model(n, K), 1);
}

emulation::NodeModel model_of(const std::optional<tc::TcParams>& p) {
  return [p](int) { return p; };
}

}  // namespace

TEST(TreeBound, PathRoundoffOfSyntheticTreesByHand) {
  // A reversed chain: fma(a_6, .., fma(a_7, b_7, 0)) ... over 8 products, 7 then 6, ..., 0: product 6
  // starts the chain (rounded twice in its first node) and meets 6 more FMAs: 8 roundings, S = 8u.
  TreeRoundoff r = tree_roundoff(fma_chain({7, 6, 5, 4, 3, 2, 1, 0}), no_fused);
  EXPECT_EQ(r.path, 8 * u32);
  EXPECT_EQ(r.roundings, 8);
  EXPECT_EQ(r.worst_product, 6);
  EXPECT_EQ(r.total_roundings, 8);
  // Pairwise over 8: product 0 is rounded twice in (0 1), then in (01 23) and the root: 4u.
  r = tree_roundoff(pairwise_tree(8), no_fused);
  EXPECT_EQ(r.path, 4 * u32);
  EXPECT_EQ(r.roundings, 4);
  EXPECT_EQ(r.total_roundings, 7 + 4);  // 7 adds, 4 of them starting with two products (one more FMA each)
  // Mixed blocks: an in-mma chain of 4 nodes of 16 fp16 products (mma_m16n8k16_f16_f32: F = 25 bits kept,
  // alignment and output truncated), each node within eps = alpha + beta + alpha beta of its 17 terms,
  // alpha = 17 2^-25, beta = 2^-23; product 0 passes all 4 nodes.
  const tc::TcParams f16 = measured(tc::Instruction::mma_m16n8k16_f16_f32);
  const double alpha = 17 * 0x1p-25, beta = 0x1p-23, eps = alpha + beta + alpha * beta;
  EXPECT_EQ(fused_node_roundoff(f16, 16), eps);
  r = tree_roundoff(blocked_tree(64, 16, true), only(f16));
  EXPECT_EQ(r.path, 4 * eps);
  EXPECT_EQ(r.roundings, 4);
  // Two chains of 2 nodes (promoted every 32), their sums added in fp32: 2 eps + u.
  r = tree_roundoff(promoted_tree(64, 16, 32), only(f16));
  EXPECT_EQ(r.path, 2 * eps + u32);
  EXPECT_EQ(r.roundings, 3);
  // Blocks summed apart and added sequentially (external), 4 blocks: product 0's block, then 3 adds.
  r = tree_roundoff(blocked_tree(64, 16, false), only(f16));
  EXPECT_EQ(r.path, eps + 3 * u32);
  // fp8 wgmma: one block of 32 products and C at 13 fraction bits, the result cut to 13 fraction bits:
  // alpha = 33 2^-13, beta = 2^-13.
  const tc::TcParams e4m3 = measured(tc::Instruction::wgmma_m64n8k32_e4m3_f32);
  EXPECT_EQ(fused_node_roundoff(e4m3, 32), 33 * 0x1p-13 + 0x1p-13 + 33 * 0x1p-26);
  // fp8 mma.sync on sm_90: two fp16 HMMA steps of 16, then C added to nearest in fp32.
  const tc::TcParams sync = measured(tc::Instruction::mma_m16n8k32_e4m3_f32);
  EXPECT_EQ(fused_node_roundoff(sync, 32), 2 * eps + u32);
  EXPECT_EQ(fused_node_roundings(sync, 32), 3);
  // fp16 accumulator (f16 -> f16): 25 fraction bits kept, the sum rounded to nearest fp16: beta = 2^-11.
  const tc::TcParams h = measured(tc::Instruction::wgmma_m64n8k16_f16_f16);
  EXPECT_EQ(fused_node_roundoff(h, 16), alpha + 0x1p-11 + alpha * 0x1p-11);
  r = tree_roundoff(blocked_tree(64, 16, true), only(h));
  EXPECT_EQ(r.root, Format::fp16);
  // The fp64 tensor core: one binary64 FMA per product.
  EXPECT_EQ(fused_node_roundoff(measured(tc::Instruction::mma_m8n8k4_f64), 4), 4 * 0x1p-53);
  // Split operands: every fused node once per pass.
  EXPECT_EQ(tree_roundoff(blocked_tree(64, 16, true), only(f16), Format::fp32, 3).path, 3 * 4 * eps);
  // A fused node no model covers is refused, naming it.
  EXPECT_THROW(tree_roundoff(blocked_tree(64, 16, true), no_fused), std::invalid_argument);
}

TEST(TreeBound, EqualsGammaKForAPlainChainAndNeverExceedsItForTheNamedOrders) {
  for (int K : {16, 64, 256, 1024, 4096}) {
    // The CUDA-core FMA chain: the same factor, bit for bit, and the same underflow term.
    Numerics fma = cuda_core_fp32_fma();
    const BoundModel named = bound_model(fma, K);
    fma.tree = compact_form(emulation::expected_tree(fma, K));
    const BoundModel tree = bound_model(fma, K);
    EXPECT_GT(tree.tree_path, 0);
    EXPECT_EQ(gamma_bound_factor(tree), gamma_bound_factor(named)) << K;
    EXPECT_EQ(underflow_term(tree), underflow_term(named)) << K;
    // Every instruction's named orders (in_mma or in_wgmma, external, promoted, split-K).
    for (tc::Instruction ins : tc::all_instructions()) {
      const tc::InstructionInfo& I = tc::info(ins);
      if (I.input == Format::fp64 || I.input_b) continue;
      const int g = I.k;
      if (K % (2 * g)) continue;
      const bool fp8 = I.input == Format::e4m3 || I.input == Format::e5m2;
      const Numerics base{.input = I.input, .compute = I.input, .accumulator = I.output, .output = I.output,
                          .accumulation = Accumulation::in_mma, .instruction = ins, .k_step = g,
                          .accumulation_rounding = Rounding::toward_zero,
                          .acc_unit_roundoff = fp8 && I.output == Format::fp32 ? 0x1p-13 : 0.0,
                          .subnormals_flushed = fp8, .split = {}, .tree = {}};
      std::vector<Numerics> orders{base};
      if (I.output == Format::fp32) {
        Numerics e = base, s = base, p = base;
        e.accumulation = Accumulation::external;
        s.split_k = 2;
        p.accumulation = Accumulation::promoted;
        p.promotion_interval_k = 2 * g;
        orders.insert(orders.end(), {e, s, p});
      }
      for (Numerics n : orders) {
        SCOPED_TRACE(std::string(I.name) + " " + to_string(n.accumulation) + " K=" + std::to_string(K) +
                     " split_k=" + std::to_string(n.split_k));
        const double f_named = gamma_bound_factor(bound_model(n, K));
        n.tree = compact_form(emulation::expected_tree(n, K));
        const double f_tree = gamma_bound_factor(bound_model(n, K));
        EXPECT_LE(f_tree, f_named);
        EXPECT_TRUE(std::isfinite(f_tree) || !std::isfinite(f_named));
      }
    }
  }
  // Where gamma_K reaches 1 the tree's may not: fp8 wgmma at K = 4096 (K 2^-12 = 1), fp16 accumulation.
  Numerics fp8 = wgmma_f32_numerics(Format::e4m3, 0);
  EXPECT_TRUE(std::isinf(gamma_bound_factor(bound_model(fp8, 4096))));
  fp8.tree = compact_form(emulation::expected_tree(fp8, 4096));
  EXPECT_TRUE(std::isfinite(gamma_bound_factor(bound_model(fp8, 4096))));
  // ... and a tree with too many roundings on a path reaches it too: no bound (S >= 1).
  Numerics chain8 = fp8;
  chain8.tree = compact_form(emulation::expected_tree(fp8, 4096 * 4));
  EXPECT_TRUE(std::isinf(gamma_bound_factor(bound_model(chain8, 4096 * 4))));
}

TEST(TreeBound, RecordsRefuseATreeThatIsNotTheirs) {
  Numerics n = cuda_core_fp32_fma();
  n.tree = compact_form(sequential_tree(64));
  try {  // a tree of 64 products judged at K = 128
    bound_model(n, 128);
    ADD_FAILURE() << "a tree of 64 products bounded at K = 128";
  } catch (const std::invalid_argument& e) {
    EXPECT_NE(std::string(e.what()).find("not a tree of K = 128 products"), std::string::npos) << e.what();
  }
  Numerics t = n;
  t.accumulation = Accumulation::tree;
  t.tree.clear();
  EXPECT_THROW(bound_model(t, 64), std::invalid_argument);  // accumulation tree without its tree
  Numerics fused = n;
  fused.tree = compact_form(blocked_tree(64, 16, true));  // fused nodes, no instruction
  EXPECT_THROW(bound_model(fused, 64), std::invalid_argument);
  EXPECT_FALSE(undeclarable(Accumulation::tree).empty());
  EXPECT_TRUE(undeclarable(Accumulation::unknown).empty());
}

TEST(TreeBound, DecreasingBlocksFmaChainDrivenCloseToItsBoundNeverPast) {
  // Triton's fp32 kernel with its K blocks in decreasing order (an FMA chain the named orders do not
  // have), K = 1024 in blocks of 32. The first product added is 1, every later one 2^-24 (1 - 2^-20):
  // each FMA rounds 1 + t back to 1 (t below half an ulp of 1), so the error is the sum of all the
  // others, (K - 1) 2^-24 (1 - 2^-20), while the bound is gamma(S) (1 + ...), S = K u: a ratio of about
  // (K - 1) / K.
  const int K = 1024;
  const std::vector<int> order = decreasing_blocks_order(K, 32);
  const SummationTree t = fma_chain(order);
  const Numerics rec = tree_record(t, Format::fp32, std::nullopt);
  EXPECT_EQ(bound_model(rec, K).tree_path, K * u32);
  std::vector<double> a(K, 0x1p-24 * (1 - 0x1p-20)), b(K, 1.0);
  a[order[0]] = 1.0;
  const ErrorStats st = judged(t, model_of(std::nullopt), a, b, rec);
  EXPECT_EQ(st.bound_violations, 0);
  EXPECT_TRUE(st.within_bound);
  EXPECT_GT(st.cw_over_gamma, 0.99) << st.componentwise << " vs " << st.gamma_bound;
  EXPECT_LE(st.cw_over_gamma, 1.0);
  // The same kernel under a record that claims a pairwise tree (log2 K + 1 roundings a path): its error
  // is ~K / 11 times that bound.
  const Numerics claims_pairwise = tree_record(pairwise_tree(K), Format::fp32, std::nullopt);
  const ErrorStats worse = judged(t, model_of(std::nullopt), a, b, claims_pairwise);
  EXPECT_GT(worse.bound_violations, 0) << worse.componentwise << " vs " << worse.gamma_bound;
}

TEST(TreeBound, TruncatingInMmaChainDrivenCloseToItsBoundNeverPast) {
  // fp16 products in an in-mma chain of 64 nodes of 16 (mma_m16n8k16_f16_f32). Product 0 is 1; every
  // other one is (2 - 2^-9) 2^-26, just below 2^-25. Each node aligns its products to the running sum's
  // exponent (that of 1) and keeps 25 fraction bits, so every small product is cut away whole: a loss
  // of almost 2^-25 per product, all in one direction, against the bound's eps = 17 2^-25 + 2^-23 + ...
  // = 21 2^-25 per node of 16: a ratio of about 16 / 21.
  const int K = 1024;
  const SummationTree t = blocked_tree(K, 16, true);
  const tc::TcParams p = measured(tc::Instruction::mma_m16n8k16_f16_f32);
  const Numerics rec = tree_record(t, Format::fp16, tc::Instruction::mma_m16n8k16_f16_f32);
  // (2 - 2^-9) 2^-26 = a b with a = (2 - 2^-9) 2^-13, b = 2^-13, both normal fp16 values.
  std::vector<double> a(K, (2 - 0x1p-9) * 0x1p-13), b(K, 0x1p-13);
  a[0] = 1.0;
  b[0] = 1.0;
  const ErrorStats st = judged(t, model_of(p), a, b, rec);
  EXPECT_EQ(st.bound_violations, 0);
  EXPECT_LE(st.cw_over_gamma, 1.0);
  EXPECT_GT(st.cw_over_gamma, 0.5) << st.componentwise << " vs " << st.gamma_bound;
  // The same kernel's record with its named order gives the weaker gamma_K bound: the tree's is tighter.
  Numerics named = rec;
  named.accumulation = Accumulation::in_mma;
  named.tree.clear();
  EXPECT_LT(st.gamma_bound, gamma_bound_factor(bound_model(named, K)));
}
