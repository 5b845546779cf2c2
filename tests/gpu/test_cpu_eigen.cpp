// The cpu family (kernels/cpu/eigen_gemm.cpp): Eigen's products run by the harness as kernels. Their
// rows are exactly the product of kernels/cpu/eigen_product.hpp at the level this host runs, on the
// same matrices (the copies to and from the GPU change no bit; at 512^3 Eigen runs its OpenMP GEMM),
// and they are judged like any kernel: within their bound, with the fp32 product's error in units of
// fp32's u far from zero (the "reference" users compare against is not exact). Through `gemmlab run`
// (run_experiment on GPU 0), every row says it ran on the host CPU, at which level, with how many
// threads, and passes.
#include <array>
#include <cstdio>
#include <filesystem>
#include <string>
#include <vector>

#include "kernels/cpu/eigen_product.hpp"
#include "tests/gpu/gpu_test_util.hpp"
#include "tests/plugin_test_util.hpp"
#include "tests/same_bits.hpp"

namespace gemmlab {
namespace {

// The product the kernels compute, on the host, at the level they use.
template <class T>
std::vector<double> eigen_on_host(const Matrix& A, const Matrix& B) {
  std::vector<T> a(A.v.begin(), A.v.end()), b(B.v.begin(), B.v.end()), c(static_cast<std::size_t>(A.rows) * B.cols);
  eigen_cpu::product(eigen_cpu::widest_level(), a.data(), b.data(), c.data(), A.rows, B.cols, A.cols);
  return std::vector<double>(c.begin(), c.end());
}

TEST(CpuEigen, RowsAreTheLevelsOwnProductAndWithinBound) {
  GEMMLAB_REQUIRE_FAMILY("cpu");
  for (const char* name : {"eigen_gemm_fp32", "eigen_gemm_fp64"}) {
    const Kernel* k = find_kernel(name);
    ASSERT_NE(k, nullptr) << name;
    GEMMLAB_REQUIRE_KERNEL(*k);
    for (const auto [M, N, K] : {std::array<int, 3>{96, 80, 300}, std::array<int, 3>{512, 512, 512}}) {
      const auto r = testing::run_and_check(*k, M, N, K, "uniform_0_1");
      const Distribution d = parse_distribution("uniform_0_1");
      const Matrix A = generate(d, Operand::A, M, K, k->numerics.input, 1);
      const Matrix B = generate(d, Operand::B, K, N, k->numerics.input, 1);
      const std::vector<double> want =
          k->numerics.input == Format::fp32 ? eigen_on_host<float>(A, B) : eigen_on_host<double>(A, B);
      EXPECT_TRUE(testing::same_bits(r.run.c, want, N)) << name << " at " << M << "x" << N << "x" << K;
      EXPECT_EQ(r.run.unwritten, 0) << name;
      EXPECT_TRUE(r.stats.within_bound) << name;
      EXPECT_GT(r.stats.rel_max_abs_u, 0.5) << name << ": some entries are not correctly rounded";
    }
  }
}

TEST(CpuEigen, RunRowsSayTheyRanOnTheHostCpu) {
  GEMMLAB_REQUIRE_FAMILY("cpu");
  GEMMLAB_REQUIRE_GPU();
  const std::filesystem::path dir = std::filesystem::temp_directory_path() / "gemmlab_cpu_eigen_rows";
  std::filesystem::create_directories(dir);
  RunRequest req = plugin_test::plugin_request((dir / "rows.csv").string(), {}, {"family:cpu"}, {256, 192, 320}, 2);
  req.force = true;
  ASSERT_EQ(run_experiment(req, gpu_device(0)), 0) << "see the notes in " << req.out_csv;
  std::fclose(req.log);
  const auto recs = plugin_test::csv_records(req.out_csv);
  ASSERT_EQ(recs.size(), 1u + 2 * 2) << "two kernels x two distributions";
  const auto& h = recs[0];
  const std::string level = eigen_cpu::to_string(eigen_cpu::widest_level());
  for (std::size_t i = 1; i < recs.size(); ++i) {
    const auto& row = recs[i];
    EXPECT_EQ(row[plugin_test::column(h, "family")], "cpu");
    EXPECT_EQ(row[plugin_test::column(h, "status")], "passed") << row[plugin_test::column(h, "note")];
    const std::string note = row[plugin_test::column(h, "note")];
    EXPECT_EQ(note.rfind("ran on the host CPU, Eigen ", 0), 0u) << note;
    EXPECT_NE(note.find(level), std::string::npos) << note;
    EXPECT_NE(note.find("OpenMP thread"), std::string::npos) << note;
  }
  std::filesystem::remove_all(dir);
}

}  // namespace
}  // namespace gemmlab
