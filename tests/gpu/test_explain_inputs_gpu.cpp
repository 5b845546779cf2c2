// explain's composition inputs made on the GPU (EntryRunner::generate_operands, KernelOracle::
// run_generated): the values that come back are generate()'s bit for bit, and the kernel's outputs on
// them are its outputs on the host-made operands uploaded whole (set_operands).
#include <algorithm>
#include <cstring>

#include "tests/gpu/gpu_test_util.hpp"

namespace gemmlab {
namespace {

bool same(const std::vector<double>& a, const std::vector<double>& b) {
  return a.size() == b.size() && std::memcmp(a.data(), b.data(), a.size() * sizeof(double)) == 0;
}

TEST(ExplainInputsGpu, OperandsMadeOnTheGpuAreTheHostsAndGiveTheSameOutputs) {
  GEMMLAB_REQUIRE_FAMILY("simt");
  GEMMLAB_REQUIRE_FAMILY("cublas");
  for (const char* name : {"sgemm_10_warptiling", "cublas_gemmex_fp16_f32", "cublas_gemmex_bf16_f32"}) {
    const Kernel* k = find_kernel(name);
    ASSERT_NE(k, nullptr) << name;
    GEMMLAB_REQUIRE_KERNEL(*k);
    const int M = 256, N = 384, K = 512;
    for (const char* dn : {"uniform_0_1", "normal_0_1", "logunif_-8_8"}) {
      const Distribution d = parse_distribution(dn);
      const Matrix hostA = generate(d, Operand::A, M, K, k->numerics.input, 11);
      const Matrix hostB = generate(d, Operand::B, K, N, k->numerics.input, 11);
      EntryRunner r(*k, Matrix(M, K), Matrix(K, N));
      Matrix A, B;
      const std::vector<int> rows = {0, 7, M / 2, M - 1};
      r.generate_operands(d, 11, rows, A, B);
      EXPECT_TRUE(same(B.v, hostB.v)) << name << " " << dn << ": B";
      ASSERT_EQ(A.rows, M);
      ASSERT_EQ(A.cols, K);
      for (int i = 0; i < M; ++i) {
        const bool asked = std::find(rows.begin(), rows.end(), i) != rows.end();
        for (int t = 0; t < K; ++t) {
          const double want = asked ? hostA(i, t) : 0.0;
          if (std::memcmp(&A.v[static_cast<std::size_t>(i) * K + t], &want, sizeof want) != 0) {
            ADD_FAILURE() << name << " " << dn << ": A(" << i << ", " << t << ")";
            break;
          }
        }
      }
      std::vector<std::pair<int, int>> entries;
      for (int i : rows)
        for (int j = 0; j < N; j += 37) entries.emplace_back(i, j);
      const std::vector<std::uint64_t> made_here = r.run_entries(entries);
      r.set_operands(hostA, hostB);
      EXPECT_EQ(made_here, r.run_entries(entries)) << name << " " << dn;
    }
  }
}

}  // namespace
}  // namespace gemmlab
