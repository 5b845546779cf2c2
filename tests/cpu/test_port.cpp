// gemmlab port (experiments/engine/port.hpp): a kernel's numerics kept, its tensor-core nodes moved
// to another generation's model. Each row's figures are recomputed here from the same inputs through
// the emulation itself, entry by entry, so that the counts and statistics are checked exactly.
#include <gtest/gtest.h>

#include <cmath>
#include <filesystem>

#include "experiments/engine/port.hpp"
#include "reference/distributions.hpp"
#include "reference/exact_gemm.hpp"
#include "reference/kernel_emulation.hpp"

using namespace gemmlab;

namespace {

Numerics in_mma_fp16() {
  Numerics n;
  n.input = n.compute = Format::fp16;
  n.accumulator = n.output = Format::fp32;
  n.accumulation = Accumulation::in_mma;
  n.instruction = tc::Instruction::mma_m16n8k16_f16_f32;
  n.k_step = 16;
  n.accumulation_rounding = Rounding::toward_zero;
  return n;
}

PortKernel kernel(const Numerics& n, const std::string& name = "k") {
  PortKernel k;
  k.name = name;
  k.numerics = n;
  k.origin = "test";
  return k;
}

PortOptions small(std::vector<tc::Generation> targets, int K = 64) {
  PortOptions o;
  o.targets = std::move(targets);
  o.distributions = {"uniform_0_1", "normal_0_1"};
  o.M = 8, o.N = 8, o.K = K;
  o.entries = 64;  // every entry of the 8 x 8 output
  o.seed = 7;
  o.threads = 2;
  return o;
}

const PortRow& row(const std::vector<PortRow>& rows, const std::string& gpu, const std::string& dist) {
  for (const PortRow& r : rows)
    if (r.gpu == gpu && r.distribution == dist) return r;
  throw std::runtime_error("no row " + gpu + " " + dist);
}

}  // namespace

// Every count and statistic of a ported row, recomputed from the emulation of each entry under the
// two generations' models of the instruction.
TEST(Port, RowsAreTheEmulationsOfEveryEntry) {
  const PortOptions o = small({tc::Generation::ampere, tc::Generation::volta});
  const std::vector<PortRow> rows = port({kernel(in_mma_fp16())}, o);
  ASSERT_EQ(rows.size(), 4u);
  const tc::TcParams hopper = *tc::generation_params(tc::Generation::hopper, tc::Instruction::mma_m16n8k16_f16_f32);
  for (const char* dist : {"uniform_0_1", "normal_0_1"}) {
    const Distribution d = parse_distribution(dist);
    const Matrix A = generate(d, Operand::A, o.M, o.K, Format::fp16, o.seed);
    const Matrix B = generate(d, Operand::B, o.K, o.N, Format::fp16, o.seed);
    for (const auto& [gen, gpu] : {std::pair{tc::Generation::ampere, "ampere"}, std::pair{tc::Generation::volta, "volta"}}) {
      const PortRow& r = row(rows, gpu, dist);
      EXPECT_EQ(r.status, "ported");
      EXPECT_EQ(r.instruction, gen == tc::Generation::volta ? "wmma_m16n16k16_f16_f32" : "mma_m16n8k16_f16_f32");
      EXPECT_EQ(r.entries, 64);
      // Volta has no mma.sync m16n8k16: wmma of the same formats and k, said as an assumption.
      EXPECT_EQ(r.assumption.empty(), gen != tc::Generation::volta) << r.assumption;
      const tc::TcParams target = *tc::generation_params(gen, *tc::parse_instruction(r.instruction));
      long long changed = 0, n = 0;
      double sum = 0, sum_home = 0;
      for (int i = 0; i < o.M; ++i)
        for (int j = 0; j < o.N; ++j) {
          std::vector<double> a(o.K), b(o.K);
          for (int k = 0; k < o.K; ++k) a[k] = A(i, k), b[k] = B(k, j);
          const double home = emulation::emulate_dot(in_mma_fp16(), a.data(), b.data(), o.K, hopper);
          const double there = emulation::emulate_dot(in_mma_fp16(), a.data(), b.data(), o.K, target);
          changed += home != there;
          const double exact = exact_dot(A, B, i, j);
          if (exact == 0) continue;
          ++n;
          sum += (there - exact) / std::fabs(exact) / 0x1p-24;
          sum_home += (home - exact) / std::fabs(exact) / 0x1p-24;
        }
      EXPECT_EQ(r.changed, changed) << gpu << " " << dist;
      EXPECT_DOUBLE_EQ(r.changed_fraction, static_cast<double>(changed) / 64);
      EXPECT_NEAR(r.bias_u, sum / n, 1e-9 * (1 + std::fabs(sum / n))) << gpu << " " << dist;
      EXPECT_NEAR(r.bias_u_from, sum_home / n, 1e-9 * (1 + std::fabs(sum_home / n))) << gpu << " " << dist;
    }
  }
  // Blocks of 8 at 24 bits truncate more than blocks of 16 at 25: on U[0,1) inputs every output moves.
  EXPECT_GT(row(rows, "ampere", "uniform_0_1").changed, 0);
}

TEST(Port, SameModelFmaAndMissingFormats) {
  // Blackwell's mma.sync is Hopper's: nothing moves, said as same_model.
  std::vector<PortRow> rows = port({kernel(in_mma_fp16())}, small({tc::Generation::blackwell}));
  for (const PortRow& r : rows) {
    EXPECT_EQ(r.status, "same_model");
    EXPECT_EQ(r.changed, 0);
    EXPECT_EQ(r.bias_u, r.bias_u_from);
  }
  // CUDA-core FMA: IEEE on every generation.
  Numerics fma;
  fma.accumulation = Accumulation::fma;
  rows = port({kernel(fma)}, small({tc::Generation::volta, tc::Generation::ada}));
  for (const PortRow& r : rows) {
    EXPECT_EQ(r.status, "ported");
    EXPECT_EQ(r.changed, 0);
    EXPECT_EQ(r.instruction, "fma");
  }
  // fp8 wgmma: no fp8 instruction before Ada; Ada's mma.sync at 13 bits; Blackwell's tcgen05.
  Numerics f8 = in_mma_fp16();
  f8.input = f8.compute = Format::e4m3;
  f8.accumulation = Accumulation::in_wgmma;
  f8.instruction = tc::Instruction::wgmma_m64n8k32_e4m3_f32;
  f8.k_step = 32;
  rows = port({kernel(f8)}, small({tc::Generation::ampere, tc::Generation::ada, tc::Generation::blackwell}));
  const PortRow &amp = row(rows, "ampere", "uniform_0_1"), &ada = row(rows, "ada", "uniform_0_1"),
                &bw = row(rows, "blackwell", "uniform_0_1");
  EXPECT_EQ(amp.status, "no_instruction");
  EXPECT_NE(amp.note.find("ampere has no tensor-core instruction taking e4m3 operands"), std::string::npos) << amp.note;
  EXPECT_EQ(ada.status, "ported");
  EXPECT_EQ(ada.instruction, "mma_m16n8k32_e4m3_f32");
  EXPECT_NE(ada.assumption.find("wgmma_m64n8k32_e4m3_f32 does not exist on ada"), std::string::npos) << ada.assumption;
  EXPECT_EQ(bw.instruction, "tcgen05_m128n8k32_e4m3_f32");
  EXPECT_EQ(bw.model_source, "literature");
  // 25 bits where Hopper's wgmma keeps 13: far less truncation bias.
  EXPECT_LT(std::fabs(bw.bias_u), std::fabs(bw.bias_u_from));
}

TEST(Port, RefusesWhatItCannotPort) {
  Numerics lib = in_mma_fp16();
  lib.accumulation = Accumulation::library;
  lib.instruction.reset();
  EXPECT_THROW(port({kernel(lib)}, small({tc::Generation::ampere})), std::invalid_argument);
  Numerics split = in_mma_fp16();
  split.split.pieces = 2;
  try {
    port({kernel(split)}, small({tc::Generation::ampere}));
    ADD_FAILURE() << "split operands ported";
  } catch (const std::invalid_argument& e) {
    EXPECT_NE(std::string(e.what()).find("split operands"), std::string::npos) << e.what();
  }
  PortOptions o = small({tc::Generation::ampere});
  o.distributions = {"gaussian_7"};
  EXPECT_THROW(port({kernel(in_mma_fp16())}, o), std::invalid_argument);
  // A K the instruction's steps do not divide: no kernel's order (its predictions were nonsense, exit 0).
  PortOptions odd = small({tc::Generation::ampere});
  odd.M = odd.N = odd.K = 100;
  try {
    port({kernel(in_mma_fp16())}, odd);
    ADD_FAILURE() << "ported at K = 100, which 16-product steps do not divide";
  } catch (const std::invalid_argument& e) {
    EXPECT_NE(std::string(e.what()).find("take K in multiples of 16; K = 100 is not one"), std::string::npos) << e.what();
  }
}

// A kernel as explain wrote it on the H100 (committed): its tree, conversion and judged rows come back,
// and at the K it was explained at it ports; its own generation's prediction of the sampled entries is
// what the explanation predicted (0 of 65,536 mispredicted there), so the rows' home figures are
// those of the kernel.
TEST(Port, ReadsWhatExplainWrote) {
  const std::string dir = std::string(GEMMLAB_SOURCE_DIR) + "/results/explain/h100_20261127_issue37/last_round/frameworks/";
  const PortKernel k = port_kernel_from_explain(dir + "triton_fp16_f32_4096x4096x4096.meta.json");
  EXPECT_EQ(k.name, "triton_fp16_f32");
  EXPECT_EQ(k.from, tc::Generation::hopper);
  EXPECT_EQ(k.numerics.accumulation, Accumulation::in_mma);  // explain named the revealed tree's order
  EXPECT_EQ(k.numerics.instruction, tc::Instruction::mma_m16n8k16_f16_f32);
  EXPECT_EQ(k.measured.size(), 3u);  // the judged rows beside it
  EXPECT_NEAR(k.measured.at("uniform_0_1").first, -393.93, 0.01);
  // The same file through its CSV.
  EXPECT_EQ(port_kernel_from_explain(dir + "triton_fp16_f32_4096x4096x4096.csv").numerics, k.numerics);
  PortOptions o = small({tc::Generation::ampere, tc::Generation::blackwell}, 4096);
  o.M = o.N = 64;
  o.entries = 16;
  o.distributions = {"uniform_0_1"};
  const std::vector<PortRow> rows = port({k}, o);
  ASSERT_EQ(rows.size(), 2u);
  EXPECT_EQ(row(rows, "blackwell", "uniform_0_1").status, "same_model");
  EXPECT_EQ(row(rows, "ampere", "uniform_0_1").changed, 16);
  EXPECT_THROW(port_kernel_from_explain(dir + "no_such_kernel.meta.json"), std::invalid_argument);
}

// A revealed tree record (accumulation tree, its compact form) of fused nodes of 16 products each adding
// the running sum is the in_mma order: both port to the same bits on every generation, and the tree
// refuses another K.
TEST(Port, ATreeRecordPortsAsItsNamedOrder) {
  Numerics tree = in_mma_fp16();
  tree.accumulation = Accumulation::tree;
  tree.tree = "[(0:15);{16:31}*3+16]";  // K = 64: a chain of four fused nodes of 16
  const PortOptions o = small({tc::Generation::volta, tc::Generation::ampere, tc::Generation::blackwell});
  const std::vector<PortRow> a = port({kernel(tree)}, o), b = port({kernel(in_mma_fp16())}, o);
  ASSERT_EQ(a.size(), b.size());
  for (std::size_t i = 0; i < a.size(); ++i) {
    EXPECT_EQ(a[i].status, b[i].status) << a[i].gpu;
    EXPECT_EQ(a[i].changed, b[i].changed) << a[i].gpu << " " << a[i].distribution;
    EXPECT_EQ(a[i].bias_u, b[i].bias_u) << a[i].gpu << " " << a[i].distribution;
  }
  EXPECT_GT(row(a, "ampere", "uniform_0_1").changed, 0);
  PortOptions other = o;
  other.K = 32;
  try {
    port({kernel(tree)}, other);
    ADD_FAILURE() << "a tree of K = 64 ported at K = 32";
  } catch (const std::invalid_argument& e) {
    EXPECT_NE(std::string(e.what()).find("another K"), std::string::npos) << e.what();
  }
}
