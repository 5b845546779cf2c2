// Eigen's matrix product for one x86-64 level (kernels/cpu/eigen_product.hpp picks the level at run
// time). CMakeLists.txt compiles this file once per level, GEMMLAB_EIGEN_LEVEL = 2, 3 or 4, with
// -march=x86-64-v<level> and OpenMP, then links each copy partially into one object whose symbols
// are all local but the entries below: otherwise the final link would keep one copy of each
// Eigen template (gebp_kernel<float, ...> has the same name in every level) for all levels, and a
// host without AVX-512 could run the v4 copy from the v2 entry (SIGILL), or a v4 host the v2 copy.
//
// Numerics: Eigen's own blocked GEMM (GEBP) in the scalar type, as Eigen::MatrixXf / MatrixXd
// products compute it: its cache blocking and SIMD lanes fix the order of summation, and at v3 and
// v4 each multiply-add is one fused FMA (EIGEN_VECTORIZE_FMA); at v2 a product and a sum, each
// rounded. With OpenMP, Eigen splits C among up to Eigen::nbThreads() threads (omp_get_max_threads:
// OMP_NUM_THREADS, else one per core), fewer on small products; each entry is still summed by one
// thread in the same order for a given thread count, so a launch repeats its bits.
#include <Eigen/Core>

#if !defined(GEMMLAB_EIGEN_LEVEL) || (GEMMLAB_EIGEN_LEVEL < 2 || GEMMLAB_EIGEN_LEVEL > 4)
#error "compile with -DGEMMLAB_EIGEN_LEVEL=2, 3 or 4 and -march=x86-64-v<level> (CMakeLists.txt does)"
#endif
#ifndef _OPENMP
#error "compile with OpenMP (-fopenmp): Eigen parallelises its product only with it"
#endif
// The SIMD Eigen compiled in, as its own configuration macros say (never what the level promises).
#if GEMMLAB_EIGEN_LEVEL == 4
#if !defined(EIGEN_VECTORIZE_AVX512) || !defined(EIGEN_VECTORIZE_FMA)
#error "x86-64-v4 without Eigen's AVX-512 and FMA paths: is -march=x86-64-v4 set?"
#endif
#define GEMMLAB_EIGEN_SIMD "AVX-512 + FMA"
#elif GEMMLAB_EIGEN_LEVEL == 3
#if !defined(EIGEN_VECTORIZE_AVX2) || !defined(EIGEN_VECTORIZE_FMA) || defined(EIGEN_VECTORIZE_AVX512)
#error "x86-64-v3 must give Eigen's AVX2 and FMA paths and not AVX-512: is -march=x86-64-v3 set?"
#endif
#define GEMMLAB_EIGEN_SIMD "AVX2 + FMA"
#else
#if !defined(EIGEN_VECTORIZE_SSE4_2) || defined(EIGEN_VECTORIZE_AVX) || defined(EIGEN_VECTORIZE_FMA)
#error "x86-64-v2 must give Eigen's SSE4.2 path and not AVX or FMA: is -march=x86-64-v2 set?"
#endif
#define GEMMLAB_EIGEN_SIMD "SSE4.2, no FMA"
#endif

#define GEMMLAB_CAT2(a, b) a##b
#define GEMMLAB_CAT(a, b) GEMMLAB_CAT2(a, b)
#define GEMMLAB_ENTRY(what) GEMMLAB_CAT(GEMMLAB_CAT(gemmlab_eigen_x86_64_v, GEMMLAB_EIGEN_LEVEL), what)
#define GEMMLAB_EXPORT extern "C" __attribute__((visibility("default")))

namespace {

// C (M, N) = A (M, K) * B (K, N), all row-major and dense, through Eigen's GEMM.
template <class T>
void product(const T* a, const T* b, T* c, long M, long N, long K) {
  using RowMajor = Eigen::Matrix<T, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>;
  const Eigen::Map<const RowMajor> A(a, M, K), B(b, K, N);
  Eigen::Map<RowMajor> C(c, M, N);
  C.noalias() = A * B;
}

}  // namespace

GEMMLAB_EXPORT void GEMMLAB_ENTRY(_sgemm)(const float* A, const float* B, float* C, long M, long N, long K) {
  product(A, B, C, M, N, K);
}

GEMMLAB_EXPORT void GEMMLAB_ENTRY(_dgemm)(const double* A, const double* B, double* C, long M, long N, long K) {
  product(A, B, C, M, N, K);
}

// What this copy is: its SIMD (from Eigen's macros), and the most threads Eigen gives a product.
GEMMLAB_EXPORT const char* GEMMLAB_ENTRY(_simd)() { return GEMMLAB_EIGEN_SIMD; }
GEMMLAB_EXPORT int GEMMLAB_ENTRY(_threads)() { return Eigen::nbThreads(); }
GEMMLAB_EXPORT int GEMMLAB_ENTRY(_version)() {
  return EIGEN_WORLD_VERSION * 10000 + EIGEN_MAJOR_VERSION * 100 + EIGEN_MINOR_VERSION;
}
