// eigen_gemm_fp32, eigen_gemm_fp64: the CPU GEMMs many users take as their "reference", Eigen's
// matrix product (Eigen/Core's blocked GEBP kernel), judged by the same exact oracle as the GPU rows.
//
// How the harness runs a host kernel without an engine change: the launch waits for the stream, copies
// A and B from the GPU to the host, multiplies them with Eigen, and copies C back, all inside the
// launch, so the harness's timing helper (CUDA events around the launch, the GPU idle meanwhile)
// times the whole: both copies and the product.
//
// Numerics: Eigen's order of summation (its cache blocking and SIMD lanes) and whether it fuses
// multiply and add depend on its version and on the compiler's target flags, so the accumulation is
// `library` with unknown rounding (bounds use the weaker truncating model, u_eff = 2u of the
// accumulator). fp32: fp32 in, out and running sums, as `Eigen::MatrixXf` products are; fp64 likewise
// in binary64. Single-threaded unless the build enables OpenMP for Eigen (this one does not): run
// them at moderate sizes (experiments/suites/fp64_emulation.toml runs them at 1024^3).
#include <cuda_runtime.h>

#include <Eigen/Core>
#include <vector>

#include "kernels/common/cuda_check.cuh"
#include "kernels/kernel.hpp"

namespace gemmlab::kernels {
namespace {

template <class T>
void launch(const GemmArgs& a) {
  using RowMajor = Eigen::Matrix<T, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>;
  GEMMLAB_CUDA_CHECK(cudaStreamSynchronize(as_stream(a.stream)));
  RowMajor A(a.M, a.K), B(a.K, a.N);
  GEMMLAB_CUDA_CHECK(cudaMemcpy(A.data(), a.A, sizeof(T) * A.size(), cudaMemcpyDeviceToHost));
  GEMMLAB_CUDA_CHECK(cudaMemcpy(B.data(), a.B, sizeof(T) * B.size(), cudaMemcpyDeviceToHost));
  RowMajor C(a.M, a.N);
  C.noalias() = A * B;
  GEMMLAB_CUDA_CHECK(cudaMemcpy(a.C, C.data(), sizeof(T) * C.size(), cudaMemcpyHostToDevice));
}

constexpr Kernel base(const char* name, const char* desc, Format f, void (*fn)(const GemmArgs&)) {
  return Kernel{
      .name = name, .family = "cpu", .description = desc,
      .numerics = library_numerics(f),
      .layout_a = Layout::row_major, .layout_b = Layout::row_major,
      .m_multiple = 1, .n_multiple = 1, .k_multiple = 1,
      .min_cc = 0, .requires_sm90a = false, .workspace_bytes = 0,
      .launch = fn,
      .left_out_of_all = "runs on the host CPU (Eigen), far slower than the GPU kernels (the main job would spend most "
                         "of its time in it); run it by name or with family:cpu",
  };
}

}  // namespace

const Kernel& eigen_gemm_fp32() {
  static const Kernel k = base("eigen_gemm_fp32",
                               "Eigen MatrixXf product on the host (copies to and from the GPU timed with it)",
                               Format::fp32, launch<float>);
  return k;
}

const Kernel& eigen_gemm_fp64() {
  static const Kernel k = base("eigen_gemm_fp64",
                               "Eigen MatrixXd product on the host (copies to and from the GPU timed with it)",
                               Format::fp64, launch<double>);
  return k;
}

}  // namespace gemmlab::kernels
