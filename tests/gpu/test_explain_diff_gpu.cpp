// `gemmlab explain --diff` on the GPU (reference/explain/diff.hpp through KernelOracle): two built-in
// kernels of the same numerics must be bit-identical by construction with no output differing; the
// in-MMA and external variants of one kernel must differ in their tree, with a witness whose bits,
// launched again from the witness's own row and column, are the recorded ones; cuBLAS fp32 against
// cuBLAS TF32 must differ. Sizes are small (seconds). A short table of what each pair gave is printed.
#include <gtest/gtest.h>

#include <cstdio>

#include "experiments/device/explain_diff.hpp"
#include "experiments/device/explain_gpu.hpp"
#include "kernels/registry.hpp"
#include "tests/gpu/gpu_test_util.hpp"

using namespace gemmlab;

namespace {

struct Diffed {
  explain::DiffReport d;
  std::vector<std::uint64_t> rerun_a, rerun_b;  // each confirmed witness launched again, alone
};

Diffed diff_builtins(const char* a_name, const char* b_name, int M, int N, int K) {
  const Kernel* a = find_kernel(a_name);
  const Kernel* b = find_kernel(b_name);
  explain::DiffOptions opt;
  opt.explain.distributions = {"uniform_0_1", "normal_0_1"};
  opt.explain.compare_outputs = 0;
  opt.explain.known = known_kernels(all_kernels());
  KernelOracle oa(*a, M, N, K), ob(*b, M, N, K);
  Diffed out{explain::explain_diff(oa, ob, a_name, b_name, opt), {}, {}};
  for (const explain::Difference& x : out.d.differences) {
    if (!x.confirmed || (x.a_row.at.empty() && x.a_row.fill == 0)) continue;
    explain::SparseInputs in;
    in.a_rows.push_back(x.a_row);
    in.b_cols.push_back(x.b_col);
    out.rerun_a.push_back(oa.run_sparse(in, {x.entry})[0]);
    out.rerun_b.push_back(ob.run_sparse(in, {x.entry})[0]);
  }
  std::printf("[explain --diff] %s", out.d.summary().c_str());
  return out;
}

// Every confirmed witness with lines gave, launched alone again, the bits it recorded, and they differ.
void expect_witnesses_hold(const Diffed& r) {
  std::size_t w = 0;
  for (const explain::Difference& x : r.d.differences) {
    if (!x.confirmed || (x.a_row.at.empty() && x.a_row.fill == 0)) continue;
    EXPECT_EQ(r.rerun_a[w], x.a_bits) << x.aspect << ": " << r.d.summary();
    EXPECT_EQ(r.rerun_b[w], x.b_bits) << x.aspect << ": " << r.d.summary();
    ++w;
  }
}

void table_row(const char* pair, const Diffed& r) {
  std::string aspects;
  for (const explain::Difference& x : r.d.differences)
    aspects += (aspects.empty() ? "" : ",") + x.aspect + (x.confirmed ? "" : "(unconfirmed)");
  long long outputs = 0, differing = 0;
  for (const explain::DiffComparison& c : r.d.comparisons) {
    outputs += c.outputs;
    differing += c.differing;
  }
  std::printf("[explain --diff table] %-40s %-26s %-30s %lld/%lld outputs differ, %.1f s\n", pair, r.d.verdict.c_str(),
              aspects.empty() ? "-" : aspects.c_str(), differing, outputs, r.d.seconds);
}

}  // namespace

TEST(ExplainDiffGpu, TwoFmaChainSgemmsAreBitIdenticalByConstruction) {
  GEMMLAB_REQUIRE_FAMILY("simt");
  for (const char* n : {"sgemm_01_naive", "sgemm_02_coalesce"}) {
    ASSERT_NE(find_kernel(n), nullptr) << n;
    GEMMLAB_REQUIRE_KERNEL(*find_kernel(n));
  }
  const Diffed r = diff_builtins("sgemm_01_naive", "sgemm_02_coalesce", 128, 128, 256);
  table_row("sgemm_01_naive vs sgemm_02_coalesce", r);
  ASSERT_TRUE(r.d.a.identified && r.d.b.identified) << r.d.summary();
  EXPECT_EQ(r.d.verdict, "identical_by_construction") << r.d.summary();
  for (const explain::DiffComparison& c : r.d.comparisons) {
    EXPECT_EQ(c.outputs, 128 * 128) << c.distribution;
    EXPECT_EQ(c.differing, 0) << c.distribution;
  }
  // The writer: one row with aspect none, and the JSON's verdict.
  const auto rows = explain_diff_rows(r.d, 1);
  ASSERT_EQ(rows.size(), 1u);
  EXPECT_EQ(rows[0][7], "none");
  EXPECT_EQ(diff_to_json(r.d)["verdict"], "identical_by_construction");
}

TEST(ExplainDiffGpu, InMmaVersusExternalIsTheTree) {
  GEMMLAB_REQUIRE_FAMILY("mma");
  for (const char* n : {"hgemm_mma_01_naive_in_mma", "hgemm_mma_01_naive_external"}) {
    ASSERT_NE(find_kernel(n), nullptr) << n;
    GEMMLAB_REQUIRE_KERNEL(*find_kernel(n));
  }
  const Diffed r = diff_builtins("hgemm_mma_01_naive_in_mma", "hgemm_mma_01_naive_external", 128, 128, 256);
  table_row("hgemm_mma_01_naive in_mma vs external", r);
  ASSERT_TRUE(r.d.a.identified && r.d.b.identified) << r.d.summary();
  ASSERT_EQ(r.d.verdict, "different") << r.d.summary();
  bool tree = false;
  for (const explain::Difference& x : r.d.differences) {
    EXPECT_NE(x.aspect, "unexplained") << r.d.summary();
    if (x.aspect != "tree") continue;
    tree = true;
    EXPECT_TRUE(x.confirmed) << r.d.summary();
    EXPECT_NE(x.a_bits, x.b_bits) << r.d.summary();
  }
  EXPECT_TRUE(tree) << r.d.summary();
  expect_witnesses_hold(r);
  EXPECT_EQ(explain_diff_rows(r.d, 1).size(), r.d.differences.size());
}

TEST(ExplainDiffGpu, CublasFp32VersusTf32Differ) {
  GEMMLAB_REQUIRE_FAMILY("cublas");
  for (const char* n : {"cublas_gemmex_fp32_pedantic", "cublas_gemmex_fp32_fast_tf32"}) {
    ASSERT_NE(find_kernel(n), nullptr) << n;
    GEMMLAB_REQUIRE_KERNEL(*find_kernel(n));
  }
  const Diffed r = diff_builtins("cublas_gemmex_fp32_pedantic", "cublas_gemmex_fp32_fast_tf32", 256, 256, 256);
  table_row("cublas fp32 pedantic vs fast_tf32", r);
  EXPECT_EQ(r.d.verdict, "different") << r.d.summary();
  if (r.d.a.identified && r.d.b.identified) {
    bool conversion = false;
    for (const explain::Difference& x : r.d.differences) conversion = conversion || x.aspect == "operand_conversion";
    EXPECT_TRUE(conversion) << r.d.summary();
  }
  expect_witnesses_hold(r);
}
