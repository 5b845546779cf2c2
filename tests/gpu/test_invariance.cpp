// `gemmlab invariance` on the GPU (experiments/engine/invariance.hpp through gpu_device(0)):
//  * a data-parallel built-in kernel (fixed tiling) is batch invariant at every m, n and K tail it
//    takes, and run to run;
//  * the stream-K kernel differs exactly at the m whose compared rows its chunk map
//    (Kernel::k_chunks) cuts differently from the full M's, and the row names the chunks;
//  * cuBLAS and cuBLASLt: whatever they show, the same spec run twice gives the same verdicts, a
//    differing row says why, and cuBLASLt rows name the heuristic's algorithm.
#include <gtest/gtest.h>

#include <set>

#include "experiments/device/library_variants.hpp"
#include "experiments/engine/invariance.hpp"
#include "gpu_test_util.hpp"
#include "kernels/cublas/cublaslt.hpp"

using namespace gemmlab;

namespace {

InvarianceSpec spec(int M, int N, int K) {
  InvarianceSpec s;
  s.M = M;
  s.N = N;
  s.K = K;
  s.repeats = 2;
  s.distribution = parse_distribution("uniform_-1_1");
  s.seed = 3;
  s.reveal_k_max = 0;  // the verdicts are under test here; the reveal has its own tests
  s.cost = false;
  s.timing.warmup = 0;
  s.timing.reps = 1;
  s.timing.flush_l2 = false;
  s.threads = 2;
  return s;
}

int count(const std::vector<InvarianceRow>& rows, const std::string& status) {
  int n = 0;
  for (const auto& r : rows) n += r.status == status;
  return n;
}

}  // namespace

TEST(InvarianceGpu, DataParallelBuiltinIsInvariant) {
  GEMMLAB_REQUIRE_FAMILY("simt");
  const Kernel* k = find_kernel("sgemm_01_naive");
  ASSERT_NE(k, nullptr);
  GEMMLAB_REQUIRE_KERNEL(*k);
  InvarianceSpec s = spec(256, 128, 256);
  s.ms = default_sweep(256);
  s.ns = {1, 3, 64, 127};
  s.k_tails = {1, 32};
  const auto rows = check_invariance(*k, gpu_device(0), s);
  ASSERT_EQ(rows.size(), 1 + s.ms.size() + s.ns.size() + s.k_tails.size());
  for (const auto& r : rows) EXPECT_EQ(r.status, "equal") << r.check << " " << r.m << "x" << r.n << "x" << r.k << ": " << r.why;
  EXPECT_EQ(invariance_by_construction(*k).rfind("yes:", 0), 0u);
}

TEST(InvarianceGpu, HopperDataParallelStepIsInvariant) {
  GEMMLAB_REQUIRE_FAMILY("hopper");
  const Kernel* k = find_kernel("hgemm_wgmma_07_cluster2_sm16_bf16_in_wgmma");
  ASSERT_NE(k, nullptr);
  GEMMLAB_REQUIRE_KERNEL(*k);
  const int M = 8 * k->m_multiple, N = 4 * k->n_multiple, K = 8 * k->k_multiple;
  InvarianceSpec s = spec(M, N, K);
  for (int m = k->m_multiple; m < M; m += k->m_multiple) s.ms.push_back(m);
  s.ns = {k->n_multiple};
  const auto rows = check_invariance(*k, gpu_device(0), s);
  EXPECT_EQ(count(rows, "equal"), static_cast<int>(1 + s.ms.size() + s.ns.size()))
      << "every size is a multiple the kernel takes, so every row is compared";
}

TEST(InvarianceGpu, StreamKIsCaughtWhereItsChunkMapChanges) {
  GEMMLAB_REQUIRE_FAMILY("hopper");
  const Kernel* k = find_kernel("hgemm_wgmma_08_streamk_sm16_bf16_in_wgmma");
  ASSERT_NE(k, nullptr);
  GEMMLAB_REQUIRE_KERNEL(*k);
  ASSERT_TRUE(k->numerics.k_chunked && k->k_chunks);
  const int M = 16 * k->m_multiple, N = 8 * k->n_multiple, K = 32 * k->k_multiple;
  InvarianceSpec s = spec(M, N, K);
  for (int m = k->m_multiple; m < M; m += k->m_multiple) s.ms.push_back(m);
  s.repeats = 1;
  const KChunkMap full = k->k_chunks(M, N, K);
  // The expected verdict of each m: does any compared entry's chunk list change?
  std::set<int> moved;
  for (int m : s.ms) {
    const KChunkMap small = k->k_chunks(m, N, K);
    for (int i = 0; i < m && !moved.count(m); i += std::min(small.tile_m, full.tile_m))
      for (int j = 0; j < N; j += std::min(small.tile_n, full.tile_n))
        if (small.of(i, j) != full.of(i, j)) {
          moved.insert(m);
          break;
        }
  }
  if (moved.empty() || moved.size() == s.ms.size())
    GTEST_FAIL() << "at " << M << "x" << N << "x" << K << " the chunk map moves for " << moved.size() << " of "
                 << s.ms.size() << " m on this GPU: choose a size where it moves for some m and not others";
  const auto rows = check_invariance(*k, gpu_device(0), s);
  for (const auto& r : rows) {
    if (r.check != "m") continue;
    if (moved.count(r.m)) {
      EXPECT_EQ(r.status, "differs") << "m = " << r.m;
      EXPECT_NE(r.why.find("stream-K split-K"), std::string::npos) << r.why;
    } else {
      EXPECT_EQ(r.status, "equal") << "m = " << r.m << ": " << r.why;
    }
  }
}

TEST(InvarianceGpu, LibrariesGiveConsistentVerdicts) {
  GEMMLAB_REQUIRE_FAMILY("cublas");
  for (const char* name : {"cublas_gemmex_bf16_f32", "cublaslt_bf16_f32"}) {
    const Kernel* k = find_kernel(name);
    ASSERT_NE(k, nullptr) << name;
    GEMMLAB_REQUIRE_KERNEL(*k);
    InvarianceSpec s = spec(256, 256, 4096);
    s.ms = {1, 8, 33, 128};
    InvarianceProbes probes;
    if (is_cublaslt(*k))
      probes.algorithm = [](const Kernel& kk, int M, int N, int K) {
        return cublaslt_algorithm(kk, M, N, K, kk.workspace_bytes);
      };
    const auto first = check_invariance(*k, gpu_device(0), s, probes);
    const auto second = check_invariance(*k, gpu_device(0), s, probes);
    ASSERT_EQ(first.size(), second.size());
    for (std::size_t x = 0; x < first.size(); ++x) {
      EXPECT_TRUE(first[x].status == "equal" || first[x].status == "differs") << name << ": " << first[x].note;
      EXPECT_EQ(first[x].status, second[x].status) << name << " m = " << first[x].m;
      EXPECT_EQ(first[x].differing, second[x].differing) << name << " m = " << first[x].m;
      if (first[x].status == "differs") EXPECT_FALSE(first[x].why.empty());
      if (is_cublaslt(*k)) EXPECT_NE(first[x].algorithm.find("split-K "), std::string::npos) << first[x].algorithm;
    }
    // The same kernel with no workspace, on fresh handles: runs, and is consistent with itself too.
    auto ws0 = library_variant(*k, parse_library_setting("ws=0"));
    s.config = "ws=0";
    const auto a = check_invariance(ws0->kernel, gpu_device(0), s), b = check_invariance(ws0->kernel, gpu_device(0), s);
    for (std::size_t x = 0; x < a.size(); ++x) {
      EXPECT_TRUE(a[x].status == "equal" || a[x].status == "differs") << name << " ws=0: " << a[x].note;
      EXPECT_EQ(a[x].differing, b[x].differing) << name << " ws=0 m = " << a[x].m;
    }
  }
}
