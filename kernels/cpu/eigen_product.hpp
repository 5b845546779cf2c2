// Eigen's matrix product on the host, built for several x86-64 levels, the widest this CPU runs
// picked at run time (kernels/cpu/levels/eigen_product_level.cpp is compiled once per level). The
// binary is built on one machine and run on the GPU's host, whose CPU may lack the builder's SIMD:
// a level is called only where __builtin_cpu_supports says the CPU (and the OS) runs it, never a
// SIGILL. Plain C++: no CUDA header; the CPU tests call every level the test machine runs.
#pragma once
#include <string>
#include <vector>

namespace gemmlab::eigen_cpu {

// x86-64 micro-architecture levels: v2 (SSE4.2, the floor gemmlab's other code is built for), v3
// (AVX2, FMA), v4 (AVX-512 F/BW/CD/DQ/VL).
enum class Level { v2 = 2, v3 = 3, v4 = 4 };

const char* to_string(Level l);             // "x86-64-v3"
std::vector<Level> all_levels();            // v2, v3, v4: the levels built
bool cpu_runs(Level l);                     // this CPU and OS run the level's instructions
Level widest_level();                       // the widest level cpu_runs(): what the kernels use
const char* simd(Level l);                  // the SIMD Eigen compiled in at that level, e.g. "AVX2 + FMA"
// (simd, max_threads and product run code of that level: they throw for a level !cpu_runs)
int max_threads(Level l);                   // Eigen::nbThreads() there: the most threads of one product

// C (M, N) = A (M, K) * B (K, N), row-major and dense, by Eigen's GEMM at level l. Throws
// std::invalid_argument for a level this CPU does not run (never executes its instructions).
void product(Level l, const float* A, const float* B, float* C, int M, int N, int K);
void product(Level l, const double* A, const double* B, double* C, int M, int N, int K);

// One line for a row's note and a kernel's description: where and how the product runs, e.g.
// "host CPU, Eigen 3.4.0 x86-64-v4 (AVX-512 + FMA), up to 16 OpenMP threads".
std::string describe(Level l);

}  // namespace gemmlab::eigen_cpu
