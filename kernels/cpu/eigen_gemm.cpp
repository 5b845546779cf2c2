// eigen_gemm_fp32, eigen_gemm_fp64: the CPU GEMMs many users take as their "reference", Eigen's
// matrix product (Eigen/Core's blocked GEBP kernel) on the host, judged by the same exact oracle as
// the GPU rows. They run on the CPU: `all` leaves them out (the main job would spend most of its
// time in them); name them, or family:cpu, to run them.
//
// How the harness runs a host kernel: prepare() (untimed) waits for the stream and copies A and B
// from the GPU into this worker thread's host buffers; launch() (timed: CUDA events around it, the
// GPU idle meanwhile) is Eigen's product alone; collect() (untimed) copies C back to the GPU, where
// the harness judges it like any kernel's C. A launch without its prepare() is refused (it would time
// the copies or read stale buffers).
//
// Which product: Eigen's, built for x86-64-v2, v3 and v4, the widest level this host runs, with
// Eigen's OpenMP parallel GEMM (kernels/cpu/eigen_product.hpp); the description and every row's note
// say which level and how many threads.
//
// Numerics: Eigen's order of summation (its cache blocking, SIMD lanes and, with OpenMP, the blocking
// for the thread count) and whether it fuses multiply and add (v3, v4: FMA; v2: not) depend on its
// version, the level and the host, so the accumulation is `library` with unknown rounding (bounds use
// the weaker truncating model, u_eff = 2u of the accumulator). fp32: fp32 in, out and running sums,
// as `Eigen::MatrixXf` products are; fp64 likewise in binary64.
#include <cuda_runtime.h>

#include <stdexcept>
#include <string>
#include <vector>

#include "kernels/common/cuda_check.cuh"
#include "kernels/cpu/eigen_product.hpp"
#include "kernels/kernel.hpp"

namespace gemmlab::kernels {
namespace {

constexpr const char* kLeftOut =
    "runs on the host CPU (Eigen), far slower than the GPU kernels (the main job would spend most of its "
    "time in it); run it by name or with family:cpu";

// A worker's host copies of one launch's operands and output. One per thread and scalar type: with
// --gpus each worker thread runs its own launches, and prepare, launch and collect of one launch run
// on the same thread, in that order.
template <class T>
struct HostBuffers {
  std::vector<T> A, B, C;
  GemmArgs prepared{};  // the launch prepare() copied A and B for; cleared by the launch that uses them
  bool ready = false;
};

template <class T>
HostBuffers<T>& buffers() {
  thread_local HostBuffers<T> b;
  return b;
}

bool same_launch(const GemmArgs& x, const GemmArgs& y) {
  return x.A == y.A && x.B == y.B && x.C == y.C && x.M == y.M && x.N == y.N && x.K == y.K;
}

template <class T>
void prepare(const GemmArgs& a) {
  HostBuffers<T>& h = buffers<T>();
  cudaStream_t s = as_stream(a.stream);
  h.ready = false;
  h.A.resize(static_cast<std::size_t>(a.M) * a.K);
  h.B.resize(static_cast<std::size_t>(a.K) * a.N);
  h.C.resize(static_cast<std::size_t>(a.M) * a.N);
  GEMMLAB_CUDA_CHECK(cudaMemcpyAsync(h.A.data(), a.A, sizeof(T) * h.A.size(), cudaMemcpyDeviceToHost, s));
  GEMMLAB_CUDA_CHECK(cudaMemcpyAsync(h.B.data(), a.B, sizeof(T) * h.B.size(), cudaMemcpyDeviceToHost, s));
  // Everything enqueued before (the L2 flush, C's NaN poison) is done too: the timed launch that
  // follows finds the stream idle, so its events time the product alone.
  GEMMLAB_CUDA_CHECK(cudaStreamSynchronize(s));
  h.prepared = a;
  h.ready = true;
}

template <class T>
void launch(const GemmArgs& a) {
  HostBuffers<T>& h = buffers<T>();
  if (!h.ready || !same_launch(h.prepared, a))
    throw std::logic_error("eigen_gemm: launched without its prepare() (Kernel::prepare) for these operands: "
                           "the harness calls prepare before every launch of a host kernel");
  h.ready = false;
  eigen_cpu::product(eigen_cpu::widest_level(), h.A.data(), h.B.data(), h.C.data(), a.M, a.N, a.K);
}

template <class T>
void collect(const GemmArgs& a) {
  HostBuffers<T>& h = buffers<T>();
  cudaStream_t s = as_stream(a.stream);
  GEMMLAB_CUDA_CHECK(cudaMemcpyAsync(a.C, h.C.data(), sizeof(T) * h.C.size(), cudaMemcpyHostToDevice, s));
  GEMMLAB_CUDA_CHECK(cudaStreamSynchronize(s));
}

// Where and how the product runs on this host, said once: "host CPU, Eigen 3.4.0 x86-64-v4 (AVX-512
// + FMA), up to 16 OpenMP threads".
const std::string& how() {
  static const std::string s = eigen_cpu::describe(eigen_cpu::widest_level());
  return s;
}

// The row note both kernels' rows begin with.
const char* row_note() {
  static const std::string s = "ran on the " + how() + " (copies to and from the GPU untimed); ";
  return s.c_str();
}

// `desc` lives for the process (the caller's static string).
template <class T>
Kernel base(const char* name, const std::string& desc, Format f) {
  return Kernel{
      .name = name, .family = "cpu", .description = desc.c_str(),
      .numerics = library_numerics(f),
      .layout_a = Layout::row_major, .layout_b = Layout::row_major,
      .m_multiple = 1, .n_multiple = 1, .k_multiple = 1,
      .min_cc = 0, .requires_sm90a = false, .workspace_bytes = 0,
      .launch = launch<T>,
      .collect = collect<T>,
      .left_out_of_all = kLeftOut,
      .prepare = prepare<T>,
      .row_note = row_note(),
  };
}

std::string description(const char* type) {
  return std::string("Eigen ") + type + " product on the " + how() +
         "; A and B copied from the GPU and C back outside the timed region";
}

}  // namespace

const Kernel& eigen_gemm_fp32() {
  static const std::string desc = description("MatrixXf");
  static const Kernel k = base<float>("eigen_gemm_fp32", desc, Format::fp32);
  return k;
}

const Kernel& eigen_gemm_fp64() {
  static const std::string desc = description("MatrixXd");
  static const Kernel k = base<double>("eigen_gemm_fp64", desc, Format::fp64);
  return k;
}

}  // namespace gemmlab::kernels
