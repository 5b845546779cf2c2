// The choice among the levels' Eigen products (see eigen_product.hpp). Compiled with the build's
// baseline flags: it must run on any x86-64 host before it knows which level that host runs.
#include "kernels/cpu/eigen_product.hpp"

#include <stdexcept>

// The entries of kernels/cpu/levels/eigen_product_level.cpp, one set per level.
#define GEMMLAB_EIGEN_DECLARE(v)                                                                            \
  extern "C" void gemmlab_eigen_x86_64_v##v##_sgemm(const float*, const float*, float*, long, long, long);   \
  extern "C" void gemmlab_eigen_x86_64_v##v##_dgemm(const double*, const double*, double*, long, long, long); \
  extern "C" const char* gemmlab_eigen_x86_64_v##v##_simd();                                                 \
  extern "C" int gemmlab_eigen_x86_64_v##v##_threads();                                                     \
  extern "C" int gemmlab_eigen_x86_64_v##v##_version();
GEMMLAB_EIGEN_DECLARE(2)
GEMMLAB_EIGEN_DECLARE(3)
GEMMLAB_EIGEN_DECLARE(4)
#undef GEMMLAB_EIGEN_DECLARE

namespace gemmlab::eigen_cpu {
namespace {

struct Entries {
  void (*sgemm)(const float*, const float*, float*, long, long, long);
  void (*dgemm)(const double*, const double*, double*, long, long, long);
  const char* (*simd)();
  int (*threads)();
  int (*version)();
};

const Entries& entries(Level l) {
#define GEMMLAB_EIGEN_ENTRIES(v)                                                                       \
  {gemmlab_eigen_x86_64_v##v##_sgemm, gemmlab_eigen_x86_64_v##v##_dgemm, gemmlab_eigen_x86_64_v##v##_simd, \
   gemmlab_eigen_x86_64_v##v##_threads, gemmlab_eigen_x86_64_v##v##_version}
  static const Entries v2 = GEMMLAB_EIGEN_ENTRIES(2), v3 = GEMMLAB_EIGEN_ENTRIES(3), v4 = GEMMLAB_EIGEN_ENTRIES(4);
#undef GEMMLAB_EIGEN_ENTRIES
  switch (l) {
    case Level::v2: return v2;
    case Level::v3: return v3;
    case Level::v4: return v4;
  }
  throw std::invalid_argument("eigen_cpu: unknown level " + std::to_string(static_cast<int>(l)));
}

// The entries of a level this CPU runs; throws before any of its instructions could execute.
const Entries& runnable(Level l) {
  if (!cpu_runs(l))
    throw std::invalid_argument(std::string("eigen_cpu: this CPU does not run ") + to_string(l) +
                                " instructions; use widest_level()");
  return entries(l);
}

}  // namespace

const char* to_string(Level l) {
  switch (l) {
    case Level::v2: return "x86-64-v2";
    case Level::v3: return "x86-64-v3";
    case Level::v4: return "x86-64-v4";
  }
  return "x86-64-v?";
}

std::vector<Level> all_levels() { return {Level::v2, Level::v3, Level::v4}; }

bool cpu_runs(Level l) {
  // GCC's cpu model checks the CPUID bits and, for AVX and AVX-512, that the OS saves their
  // registers (XGETBV), for every feature of the level.
  __builtin_cpu_init();
  switch (l) {
    case Level::v2: return __builtin_cpu_supports("x86-64-v2");
    case Level::v3: return __builtin_cpu_supports("x86-64-v3");
    case Level::v4: return __builtin_cpu_supports("x86-64-v4");
  }
  return false;
}

Level widest_level() {
  for (Level l : {Level::v4, Level::v3, Level::v2})
    if (cpu_runs(l)) return l;
  // gemmlab's reference code is itself built for x86-64-v2: such a host cannot run gemmlab at all.
  throw std::runtime_error("eigen_cpu: this CPU lacks x86-64-v2 (SSE4.2, POPCNT), which gemmlab needs");
}

const char* simd(Level l) { return runnable(l).simd(); }

int max_threads(Level l) { return runnable(l).threads(); }

void product(Level l, const float* A, const float* B, float* C, int M, int N, int K) {
  runnable(l).sgemm(A, B, C, M, N, K);
}

void product(Level l, const double* A, const double* B, double* C, int M, int N, int K) {
  runnable(l).dgemm(A, B, C, M, N, K);
}

std::string describe(Level l) {
  const int t = max_threads(l), v = runnable(l).version();
  return "host CPU, Eigen " + std::to_string(v / 10000) + "." + std::to_string(v / 100 % 100) + "." +
         std::to_string(v % 100) + " " + to_string(l) + " (" + simd(l) + "), up to " + std::to_string(t) +
         " OpenMP thread" + (t == 1 ? "" : "s");
}

}  // namespace gemmlab::eigen_cpu
