// The cpu family (kernels/cpu/eigen_gemm.cpp): Eigen's products run by the harness as kernels. Their
// rows are exactly Eigen's own product of the same matrices (the copies to and from the GPU change
// no bit), and they are judged like any kernel: within their bound, with the fp32 product's error
// in units of fp32's u far from zero (the "reference" users compare against is not exact).
#include <Eigen/Core>
#include <string>
#include <vector>

#include "tests/gpu/gpu_test_util.hpp"
#include "tests/same_bits.hpp"

namespace gemmlab {
namespace {

template <class T>
std::vector<double> eigen_on_host(const Matrix& A, const Matrix& B) {
  using RowMajor = Eigen::Matrix<T, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>;
  RowMajor a(A.rows, A.cols), b(B.rows, B.cols);
  for (int i = 0; i < A.rows; ++i)
    for (int k = 0; k < A.cols; ++k) a(i, k) = static_cast<T>(A(i, k));
  for (int k = 0; k < B.rows; ++k)
    for (int j = 0; j < B.cols; ++j) b(k, j) = static_cast<T>(B(k, j));
  RowMajor c(A.rows, B.cols);
  c.noalias() = a * b;
  return std::vector<double>(c.data(), c.data() + c.size());
}

TEST(CpuEigen, RowsAreEigensOwnProductAndWithinBound) {
  GEMMLAB_REQUIRE_FAMILY("cpu");
  for (const char* name : {"eigen_gemm_fp32", "eigen_gemm_fp64"}) {
    const Kernel* k = find_kernel(name);
    ASSERT_NE(k, nullptr) << name;
    GEMMLAB_REQUIRE_KERNEL(*k);
    const auto r = testing::run_and_check(*k, 96, 80, 300, "uniform_0_1");
    const Distribution d = parse_distribution("uniform_0_1");
    const Matrix A = generate(d, Operand::A, 96, 300, k->numerics.input, 1);
    const Matrix B = generate(d, Operand::B, 300, 80, k->numerics.input, 1);
    const std::vector<double> want =
        k->numerics.input == Format::fp32 ? eigen_on_host<float>(A, B) : eigen_on_host<double>(A, B);
    EXPECT_TRUE(testing::same_bits(r.run.c, want, 80)) << name;
    EXPECT_TRUE(r.stats.within_bound) << name;
    EXPECT_GT(r.stats.rel_max_abs_u, 0.5) << name << ": some entries are not correctly rounded";
  }
}

}  // namespace
}  // namespace gemmlab
