// Tensor-core probes on the GPU: every probe (or random validation tile) is one warp executing ONE
// mma.sync instruction (or one nvcuda::wmma mma_sync, or one warpgroup executing ONE wgmma.mma_async
// on sm_90a) on a tile read from global memory, so nothing but that instruction's arithmetic touches
// the result. Tiles travel as bit patterns (uint64 per element on the host; on the device uint32,
// low bits used, or uint64 for the fp64 instruction), so the host decides every input bit and reads
// back every output bit.
//
// Fragment layouts (PTX ISA, "Matrix fragments for mma.m16n8k*"), lane = 4 g + t:
//   m16n8k16 f16/bf16  A: reg r, half h -> (g + 8 (r & 1), 2 t + h + 8 (r >> 1));  B: (2 t + h + 8 r, g)
//   m16n8k8  tf32      A: reg r -> (g + 8 (r & 1), t + 4 (r >> 1));             B: (t + 4 r, g)
//   m16n8k32 e4m3/e5m2 A: reg r, byte q -> (g + 8 (r & 1), 4 t + q + 16 (r >> 1)); B: (4 t + q + 16 r, g)
//   C/D f32: element e -> (g + 8 (e >> 1), 2 t + (e & 1));  C/D f16x2: reg r, half h -> (g + 8 r, 2 t + h)
//   m8n8k4 f64         A: (g, t);  B: (t, g);  C/D: element e -> (g, 2 t + e)
//   m16n8k{4,8,16} f64 A: reg r -> (g + 8 (r & 1), t + 4 (r >> 1)) (k4: r -> (g + 8 r, t));
//                      B: reg r -> (t + 4 r, g);  C/D: as f32 (CUTLASS cute MMA_Traits<SM90_16x8x*_F64...>)
// wgmma m64n8k{16,8,32}: A (64, K) and B (K, 8) both K-major in shared memory, one 128-byte row per
// M (N) index in the 128-byte swizzle of kernels/common/hopper_ptx.cuh (K always fills 32 bytes of
// the row: 16 fp16/bf16, 8 tf32, 32 fp8); D f32 of thread 32 w + l: d[2 h + e] -> (16 w + l/4 + 8 h, 2 (l%4) + e).
#include <cuda_runtime.h>
#include <mma.h>

#include <type_traits>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <map>
#include <random>
#include <sstream>
#include <thread>
#include <vector>

#include "experiments/device/probe.hpp"
#include "experiments/device/runner.hpp"
#include "experiments/report/metadata.hpp"
#include "kernels/common/cuda_check.cuh"
#include "kernels/common/hopper_ptx.cuh"
#include "reference/tc_corpus.hpp"
#include "reference/tc_infer.hpp"
#include "reference/parallel.hpp"
#include "reference/rng.hpp"
#include "reference/tc_model.hpp"

namespace gemmlab {

namespace {

using tc::Instruction;

// (16, K) A, (K, 8) B, (16, 8) C and D per tile, row-major, one uint32 of bits per element.
template <int K>
struct TileView {
  const std::uint32_t* A;
  const std::uint32_t* B;
  const std::uint32_t* C;
  std::uint32_t* D;
  __device__ TileView(const std::uint32_t* a, const std::uint32_t* b, const std::uint32_t* c, std::uint32_t* d, long long t)
      : A(a + t * 16 * K), B(b + t * K * 8), C(c + t * 128), D(d + t * 128) {}
  __device__ std::uint32_t a(int i, int k) const { return A[i * K + k]; }
  __device__ std::uint32_t b(int k, int j) const { return B[k * 8 + j]; }
  // The C/D fragments of lane 4 g + t (module comment): f32 element e; f16x2 register r, half h.
  __device__ void load_c_f32(std::uint32_t (&c)[4], int g, int t) const {
    for (int e = 0; e < 4; ++e) c[e] = C[(g + 8 * (e >> 1)) * 8 + 2 * t + (e & 1)];
  }
  __device__ void store_d_f32(const std::uint32_t (&d)[4], int g, int t) const {
    for (int e = 0; e < 4; ++e) D[(g + 8 * (e >> 1)) * 8 + 2 * t + (e & 1)] = d[e];
  }
  __device__ void load_c_f16(std::uint32_t (&c)[2], int g, int t) const;
  __device__ void store_d_f16(const std::uint32_t (&d)[2], int g, int t) const {
    for (int r = 0; r < 2; ++r) {
      D[(g + 8 * r) * 8 + 2 * t] = d[r] & 0xffffu;
      D[(g + 8 * r) * 8 + 2 * t + 1] = d[r] >> 16;
    }
  }
};

__device__ inline std::uint32_t pack2(std::uint32_t lo, std::uint32_t hi) { return (lo & 0xffffu) | (hi << 16); }

template <int K>
__device__ void TileView<K>::load_c_f16(std::uint32_t (&c)[2], int g, int t) const {
  for (int r = 0; r < 2; ++r) c[r] = pack2(C[(g + 8 * r) * 8 + 2 * t], C[(g + 8 * r) * 8 + 2 * t + 1]);
}
__device__ inline std::uint32_t pack4(std::uint32_t b0, std::uint32_t b1, std::uint32_t b2, std::uint32_t b3) {
  return (b0 & 0xff) | ((b1 & 0xff) << 8) | ((b2 & 0xff) << 16) | ((b3 & 0xff) << 24);
}

// One mma.sync with four A registers and two B registers (m16n8k16 16-bit, m16n8k8 tf32, m16n8k32 fp8), on the
// arrays a, b, c, d in scope: two f16x2 C/D registers, or four f32 ones.
#define GEMMLAB_MMA_F16_ACC(SHAPE_TYPES)                                                          \
  asm volatile("mma.sync.aligned." SHAPE_TYPES " {%0,%1}, {%2,%3,%4,%5}, {%6,%7}, {%8,%9};\n"       \
               : "=r"(d[0]), "=r"(d[1])                                                          \
               : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b[0]), "r"(b[1]), "r"(c[0]), "r"(c[1]))
#define GEMMLAB_MMA_F32_ACC(SHAPE_TYPES)                                                                      \
  asm volatile("mma.sync.aligned." SHAPE_TYPES " {%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, {%10,%11,%12,%13};\n"  \
               : "=r"(d[0]), "=r"(d[1]), "=r"(d[2]), "=r"(d[3])                                              \
               : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b[0]), "r"(b[1]), "r"(c[0]), "r"(c[1]), "r"(c[2]), \
                 "r"(c[3]))

// which: 0 f16->f32, 1 f16->f16, 2 bf16->f32
template <int which>
__global__ void k16_kernel(const std::uint32_t* A, const std::uint32_t* B, const std::uint32_t* C, std::uint32_t* D) {
  TileView<16> v(A, B, C, D, blockIdx.x);
  const int lane = threadIdx.x, g = lane >> 2, t = lane & 3;
  std::uint32_t a[4], b[2];
  for (int r = 0; r < 4; ++r) {
    int row = g + 8 * (r & 1), col = 2 * t + 8 * (r >> 1);
    a[r] = pack2(v.a(row, col), v.a(row, col + 1));
  }
  for (int r = 0; r < 2; ++r) b[r] = pack2(v.b(2 * t + 8 * r, g), v.b(2 * t + 1 + 8 * r, g));
  if constexpr (which == 1) {
    std::uint32_t c[2], d[2];
    v.load_c_f16(c, g, t);
    GEMMLAB_MMA_F16_ACC("m16n8k16.row.col.f16.f16.f16.f16");
    v.store_d_f16(d, g, t);
  } else {
    std::uint32_t c[4], d[4];
    v.load_c_f32(c, g, t);
    if constexpr (which == 0) GEMMLAB_MMA_F32_ACC("m16n8k16.row.col.f32.f16.f16.f32");
    else GEMMLAB_MMA_F32_ACC("m16n8k16.row.col.f32.bf16.bf16.f32");
    v.store_d_f32(d, g, t);
  }
}

__global__ void tf32_kernel(const std::uint32_t* A, const std::uint32_t* B, const std::uint32_t* C, std::uint32_t* D) {
  TileView<8> v(A, B, C, D, blockIdx.x);
  const int lane = threadIdx.x, g = lane >> 2, t = lane & 3;
  std::uint32_t a[4], b[2], c[4], d[4];
  for (int r = 0; r < 4; ++r) a[r] = v.a(g + 8 * (r & 1), t + 4 * (r >> 1));
  for (int r = 0; r < 2; ++r) b[r] = v.b(t + 4 * r, g);
  v.load_c_f32(c, g, t);
  GEMMLAB_MMA_F32_ACC("m16n8k8.row.col.f32.tf32.tf32.f32");
  v.store_d_f32(d, g, t);
}

// which: 0 e4m3, 1 e5m2, 4 e4m3 x e5m2 (f32 C and D); 2 e4m3, 3 e5m2 (f16 C and D). sm_89 and
// later; the host never launches it elsewhere.
template <int which>
__global__ void fp8_kernel(const std::uint32_t* A, const std::uint32_t* B, const std::uint32_t* C, std::uint32_t* D) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 890
  TileView<32> v(A, B, C, D, blockIdx.x);
  const int lane = threadIdx.x, g = lane >> 2, t = lane & 3;
  std::uint32_t a[4], b[2];
  for (int r = 0; r < 4; ++r) {
    int row = g + 8 * (r & 1), col = 4 * t + 16 * (r >> 1);
    a[r] = pack4(v.a(row, col), v.a(row, col + 1), v.a(row, col + 2), v.a(row, col + 3));
  }
  for (int r = 0; r < 2; ++r) {
    int k = 4 * t + 16 * r;
    b[r] = pack4(v.b(k, g), v.b(k + 1, g), v.b(k + 2, g), v.b(k + 3, g));
  }
  if constexpr (which == 2 || which == 3) {
    std::uint32_t c[2], d[2];
    v.load_c_f16(c, g, t);
    if constexpr (which == 2) GEMMLAB_MMA_F16_ACC("m16n8k32.row.col.f16.e4m3.e4m3.f16");
    else GEMMLAB_MMA_F16_ACC("m16n8k32.row.col.f16.e5m2.e5m2.f16");
    v.store_d_f16(d, g, t);
  } else {
    std::uint32_t c[4], d[4];
    v.load_c_f32(c, g, t);
    if constexpr (which == 0) GEMMLAB_MMA_F32_ACC("m16n8k32.row.col.f32.e4m3.e4m3.f32");
    else if constexpr (which == 1) GEMMLAB_MMA_F32_ACC("m16n8k32.row.col.f32.e5m2.e5m2.f32");
    else GEMMLAB_MMA_F32_ACC("m16n8k32.row.col.f32.e4m3.e5m2.f32");
    v.store_d_f32(d, g, t);
  }
#endif
}

// The smaller mma.sync shapes, f32 C and D. which: 0 m16n8k8 f16, 1 m16n8k8 bf16 (A: reg r, half h ->
// (g + 8 r, 2 t + h); B: half h -> (2 t + h, g)), 2 m16n8k4 tf32 (A: reg r -> (g + 8 r, t); B: (t, g)).
template <int which>
__global__ void small_mma_kernel(const std::uint32_t* A, const std::uint32_t* B, const std::uint32_t* C,
                                 std::uint32_t* D) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 800
  constexpr int K = which == 2 ? 4 : 8;
  TileView<K> v(A, B, C, D, blockIdx.x);
  const int lane = threadIdx.x, g = lane >> 2, t = lane & 3;
  std::uint32_t a[2], b, c[4], d[4];
  if constexpr (which == 2) {
    for (int r = 0; r < 2; ++r) a[r] = v.a(g + 8 * r, t);
    b = v.b(t, g);
  } else {
    for (int r = 0; r < 2; ++r) a[r] = pack2(v.a(g + 8 * r, 2 * t), v.a(g + 8 * r, 2 * t + 1));
    b = pack2(v.b(2 * t, g), v.b(2 * t + 1, g));
  }
  v.load_c_f32(c, g, t);
#define GEMMLAB_MMA_SMALL(SHAPE_TYPES)                                                                            \
  asm volatile("mma.sync.aligned." SHAPE_TYPES " {%0,%1,%2,%3}, {%4,%5}, {%6}, {%7,%8,%9,%10};\n"                   \
               : "=r"(d[0]), "=r"(d[1]), "=r"(d[2]), "=r"(d[3])                                                   \
               : "r"(a[0]), "r"(a[1]), "r"(b), "r"(c[0]), "r"(c[1]), "r"(c[2]), "r"(c[3]))
  if constexpr (which == 0) GEMMLAB_MMA_SMALL("m16n8k8.row.col.f32.f16.f16.f32");
  else if constexpr (which == 1) GEMMLAB_MMA_SMALL("m16n8k8.row.col.f32.bf16.bf16.f32");
  else GEMMLAB_MMA_SMALL("m16n8k4.row.col.f32.tf32.tf32.f32");
#undef GEMMLAB_MMA_SMALL
  v.store_d_f32(d, g, t);
#endif
}

// mma.sync.aligned.m8n8k4.row.col.f64 (DMMA), one warp: A (8, 4), B (4, 8), C and D (8, 8) row-major,
// one uint64 of bits per element (a NaN's payload travels untouched: no arithmetic before the mma).
__global__ void dmma_kernel(const std::uint64_t* A, const std::uint64_t* B, const std::uint64_t* C, std::uint64_t* D) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 800
  const long long t = blockIdx.x;
  A += t * 32;
  B += t * 32;
  C += t * 64;
  D += t * 64;
  const int lane = threadIdx.x, g = lane >> 2, q = lane & 3;
  const double a = __longlong_as_double((long long)A[g * 4 + q]), b = __longlong_as_double((long long)B[q * 8 + g]);
  const double c0 = __longlong_as_double((long long)C[g * 8 + 2 * q]), c1 = __longlong_as_double((long long)C[g * 8 + 2 * q + 1]);
  double d0, d1;
  asm volatile("mma.sync.aligned.m8n8k4.row.col.f64.f64.f64.f64 {%0,%1}, {%2}, {%3}, {%4,%5};\n"
               : "=d"(d0), "=d"(d1)
               : "d"(a), "d"(b), "d"(c0), "d"(c1));
  D[g * 8 + 2 * q] = (std::uint64_t)__double_as_longlong(d0);
  D[g * 8 + 2 * q + 1] = (std::uint64_t)__double_as_longlong(d1);
#endif
}

// mma.sync.aligned.m16n8k{4,8,16}.row.col.f64 (sm_90), one warp: A (16, K), B (K, 8), C and D
// (16, 8) row-major, one uint64 per element. A: K/2 registers (k4: 2), B: K/4, C/D: 4.
template <int K>
__global__ void dmma16_kernel(const std::uint64_t* A, const std::uint64_t* B, const std::uint64_t* C, std::uint64_t* D) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
  const long long t = blockIdx.x;
  A += t * 16 * K;
  B += t * K * 8;
  C += t * 128;
  D += t * 128;
  const int lane = threadIdx.x, g = lane >> 2, q = lane & 3;
  const auto f64 = [](std::uint64_t bits) { return __longlong_as_double((long long)bits); };
  double a[K / 2], b[K / 4], c[4], d[4];
  for (int r = 0; r < K / 2; ++r) a[r] = f64(A[(g + 8 * (r & 1)) * K + q + 4 * (r >> 1)]);
  for (int r = 0; r < K / 4; ++r) b[r] = f64(B[(q + 4 * r) * 8 + g]);
  for (int e = 0; e < 4; ++e) c[e] = f64(C[(g + 8 * (e >> 1)) * 8 + 2 * q + (e & 1)]);
  if constexpr (K == 4)
    asm volatile("mma.sync.aligned.m16n8k4.row.col.f64.f64.f64.f64 {%0,%1,%2,%3}, {%4,%5}, {%6}, {%7,%8,%9,%10};\n"
                 : "=d"(d[0]), "=d"(d[1]), "=d"(d[2]), "=d"(d[3])
                 : "d"(a[0]), "d"(a[1]), "d"(b[0]), "d"(c[0]), "d"(c[1]), "d"(c[2]), "d"(c[3]));
  else if constexpr (K == 8)
    asm volatile("mma.sync.aligned.m16n8k8.row.col.f64.f64.f64.f64 {%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, "
                 "{%10,%11,%12,%13};\n"
                 : "=d"(d[0]), "=d"(d[1]), "=d"(d[2]), "=d"(d[3])
                 : "d"(a[0]), "d"(a[1]), "d"(a[2]), "d"(a[3]), "d"(b[0]), "d"(b[1]), "d"(c[0]), "d"(c[1]), "d"(c[2]),
                   "d"(c[3]));
  else
    asm volatile("mma.sync.aligned.m16n8k16.row.col.f64.f64.f64.f64 {%0,%1,%2,%3}, {%4,%5,%6,%7,%8,%9,%10,%11}, "
                 "{%12,%13,%14,%15}, {%16,%17,%18,%19};\n"
                 : "=d"(d[0]), "=d"(d[1]), "=d"(d[2]), "=d"(d[3])
                 : "d"(a[0]), "d"(a[1]), "d"(a[2]), "d"(a[3]), "d"(a[4]), "d"(a[5]), "d"(a[6]), "d"(a[7]), "d"(b[0]),
                   "d"(b[1]), "d"(b[2]), "d"(b[3]), "d"(c[0]), "d"(c[1]), "d"(c[2]), "d"(c[3]));
  for (int e = 0; e < 4; ++e) D[(g + 8 * (e >> 1)) * 8 + 2 * q + (e & 1)] = (std::uint64_t)__double_as_longlong(d[e]);
#endif
}

// nvcuda::wmma 16x16x16 fp16 -> fp32 (Acc float) or fp16 -> fp16 (Acc __half), one warp: A (16, 16)
// row-major, B (16, 16) row-major, C/D in the accumulator's format (fp16 bits in the low half).
template <typename Acc>
__global__ void wmma_kernel(const std::uint32_t* A, const std::uint32_t* B, const std::uint32_t* C, std::uint32_t* D) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 700
  using namespace nvcuda;
  constexpr bool f16_acc = std::is_same_v<Acc, __half>;
  __shared__ __half sa[256], sb[256];
  __shared__ Acc sc[256];
  const long long t = blockIdx.x;
  for (int i = threadIdx.x; i < 256; i += 32) {
    sa[i] = __ushort_as_half((unsigned short)A[t * 256 + i]);
    sb[i] = __ushort_as_half((unsigned short)B[t * 256 + i]);
    if constexpr (f16_acc) sc[i] = __ushort_as_half((unsigned short)C[t * 256 + i]);
    else sc[i] = __uint_as_float(C[t * 256 + i]);
  }
  __syncwarp();
  wmma::fragment<wmma::matrix_a, 16, 16, 16, __half, wmma::row_major> fa;
  wmma::fragment<wmma::matrix_b, 16, 16, 16, __half, wmma::row_major> fb;
  wmma::fragment<wmma::accumulator, 16, 16, 16, Acc> fc;
  wmma::load_matrix_sync(fa, sa, 16);
  wmma::load_matrix_sync(fb, sb, 16);
  wmma::load_matrix_sync(fc, sc, 16, wmma::mem_row_major);
  wmma::mma_sync(fc, fa, fb, fc);
  __syncwarp();
  wmma::store_matrix_sync(sc, fc, 16, wmma::mem_row_major);
  __syncwarp();
  for (int i = threadIdx.x; i < 256; i += 32) {
    if constexpr (f16_acc) D[t * 256 + i] = __half_as_ushort(sc[i]);
    else D[t * 256 + i] = __float_as_uint(sc[i]);
  }
#endif
}

// which: 0 f16, 1 bf16, 2 tf32, 3 e4m3, 4 e5m2, 8 e4m3 x e5m2 (f32 accumulators); 5 f16, 6 e4m3,
// 7 e5m2 (f16 accumulators). N: 8, or 16 (f16 -> f32 only: does a wider wgmma change anything?).
// One warpgroup (128 threads) per tile, ONE wgmma.mma_async m64nNk{16,16,8,32,32} with D = A B + C
// (scale_d = 1, C preloaded in the accumulator). f32 accumulator of thread 32 w + l: d[4 j + 2 h + e]
// -> (16 w + l/4 + 8 h, 8 j + 2 (l%4) + e); f16: register h holds the pair e = 0, 1 of that row.
template <int which, int N = 8>
__global__ void __launch_bounds__(128) wgmma_kernel(const std::uint32_t* A, const std::uint32_t* B, const std::uint32_t* C,
                                                    std::uint32_t* D) {
#ifdef GEMMLAB_SM90A_DEVICE
  using namespace hopper;
  static_assert(N == 8 || (N == 16 && which == 0), "wgmma_kernel: N = 16 is built for f16 -> f32 only");
  constexpr int eb = (which <= 1 || which == 5) ? 2 : which == 2 ? 4 : 1;  // bytes per element
  constexpr bool f16_out = which >= 5 && which <= 7;
  constexpr int K = 32 / eb;
  // (64, 128 B) A then (N, 128 B) B, each starting 1024-byte aligned as the swizzle needs
  __shared__ __align__(128) unsigned char raw[64 * 128 + N * 128 + 1024];
  unsigned char* sa = raw + ((1024 - (smem_u32(raw) & 1023)) & 1023);
  unsigned char* sb = sa + 64 * 128;
  const long long t = blockIdx.x;
  const int tid = threadIdx.x;
  for (int i = tid; i < 64 * 128 / 4; i += 128) reinterpret_cast<std::uint32_t*>(sa)[i] = 0;
  for (int i = tid; i < N * 128 / 4; i += 128) reinterpret_cast<std::uint32_t*>(sb)[i] = 0;
  __syncthreads();
  // element (r, k) of a K-major operand: byte k * eb of row r, 16-byte chunk (k * eb) / 16 swizzled
  auto put = [&](unsigned char* base, int r, int k, std::uint32_t bits) {
    const int byte = k * eb;
    unsigned char* p = base + sw128_offset(r, byte >> 4) + (byte & 15);
    if constexpr (eb == 1) *p = (unsigned char)bits;
    else if constexpr (eb == 2) *reinterpret_cast<unsigned short*>(p) = (unsigned short)bits;
    else *reinterpret_cast<std::uint32_t*>(p) = bits;
  };
  for (int i = tid; i < 64 * K; i += 128) put(sa, i / K, i % K, A[t * 64 * K + i]);        // A (64, K) row-major
  for (int i = tid; i < K * N; i += 128) put(sb, i % N, i / N, B[t * K * N + i]);          // B (K, N) row-major
  fence_proxy_async_smem();
  __syncthreads();
  const int w = tid / 32, l = tid % 32;
  // C/D (64, N) row-major: the entry of accumulator slot q = 4 j + 2 h + e
  auto at = [&](int q) {
    return t * 64 * N + (16 * w + l / 4 + 8 * ((q >> 1) & 1)) * N + 8 * (q >> 2) + 2 * (l % 4) + (q & 1);
  };
  const std::uint64_t da = make_desc_sw128(sa), db = make_desc_sw128(sb);
  wgmma_fence();
#define GEMMLAB_WGMMA_N8(SHAPE_TYPES, TAIL)                                                              \
  asm volatile("{\n.reg .pred p;\nsetp.ne.b32 p, %6, 0;\nwgmma.mma_async.sync.aligned." SHAPE_TYPES         \
               " {%0, %1, %2, %3}, %4, %5, p, 1, 1" TAIL ";\n}\n"                                        \
               : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3])                                          \
               : "l"(da), "l"(db), "r"(1))
#define GEMMLAB_WGMMA_F16(SHAPE_TYPES, TAIL)                                                             \
  asm volatile("{\n.reg .pred p;\nsetp.ne.b32 p, %4, 0;\nwgmma.mma_async.sync.aligned." SHAPE_TYPES         \
               " {%0, %1}, %2, %3, p, 1, 1" TAIL ";\n}\n"                                                \
               : "+r"(d[0]), "+r"(d[1])                                                                  \
               : "l"(da), "l"(db), "r"(1))
  if constexpr (f16_out) {
    std::uint32_t d[2];
    for (int h = 0; h < 2; ++h) d[h] = pack2(C[at(2 * h)], C[at(2 * h + 1)]);
    if constexpr (which == 5) GEMMLAB_WGMMA_F16("m64n8k16.f16.f16.f16", ", 0, 0");
    else if constexpr (which == 6) GEMMLAB_WGMMA_F16("m64n8k32.f16.e4m3.e4m3", "");
    else GEMMLAB_WGMMA_F16("m64n8k32.f16.e5m2.e5m2", "");
    wgmma_commit();
    wgmma_wait<0>();
    for (int h = 0; h < 2; ++h) asm volatile("" : "+r"(d[h])::"memory");
    for (int h = 0; h < 2; ++h) {
      D[at(2 * h)] = d[h] & 0xffffu;
      D[at(2 * h + 1)] = d[h] >> 16;
    }
  } else if constexpr (N == 16) {
    float d[8];
    for (int q = 0; q < 8; ++q) d[q] = __uint_as_float(C[at(q)]);
    asm volatile("{\n.reg .pred p;\nsetp.ne.b32 p, %10, 0;\nwgmma.mma_async.sync.aligned.m64n16k16.f32.f16.f16"
                 " {%0, %1, %2, %3, %4, %5, %6, %7}, %8, %9, p, 1, 1, 0, 0;\n}\n"
                 : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3]), "+f"(d[4]), "+f"(d[5]), "+f"(d[6]), "+f"(d[7])
                 : "l"(da), "l"(db), "r"(1));
    wgmma_commit();
    wgmma_wait<0>();
    fence_regs(d);
    for (int q = 0; q < 8; ++q) D[at(q)] = __float_as_uint(d[q]);
  } else {
    float d[4];
    for (int q = 0; q < 4; ++q) d[q] = __uint_as_float(C[at(q)]);
    if constexpr (which == 0) GEMMLAB_WGMMA_N8("m64n8k16.f32.f16.f16", ", 0, 0");
    else if constexpr (which == 1) GEMMLAB_WGMMA_N8("m64n8k16.f32.bf16.bf16", ", 0, 0");
    else if constexpr (which == 2) GEMMLAB_WGMMA_N8("m64n8k8.f32.tf32.tf32", "");
    else if constexpr (which == 3) GEMMLAB_WGMMA_N8("m64n8k32.f32.e4m3.e4m3", "");
    else if constexpr (which == 4) GEMMLAB_WGMMA_N8("m64n8k32.f32.e5m2.e5m2", "");
    else GEMMLAB_WGMMA_N8("m64n8k32.f32.e4m3.e5m2", "");
    wgmma_commit();
    wgmma_wait<0>();
    fence_regs(d);
    for (int q = 0; q < 4; ++q) D[at(q)] = __float_as_uint(d[q]);
  }
#undef GEMMLAB_WGMMA_N8
#undef GEMMLAB_WGMMA_F16
#endif
}

struct DeviceCaps {
  bool present = false;
  std::string name, why;
  int cc = 0;
};

DeviceCaps device_caps() {
  DeviceCaps d;
  int n = 0;
  cudaError_t e = cudaGetDeviceCount(&n);
  if (e != cudaSuccess || n == 0) {
    d.why = e != cudaSuccess ? cudaGetErrorString(e) : "no CUDA device";
    return d;
  }
  cudaDeviceProp p;
  GEMMLAB_CUDA_CHECK(cudaGetDeviceProperties(&p, 0));
  d.present = true;
  d.name = p.name;
  d.cc = p.major * 10 + p.minor;
  return d;
}

// Why this GPU cannot probe the instruction ("" when it can): too old for it, wgmma off sm_90a (its
// kernels are built for Hopper alone), or an instruction gemmlab models from the literature only
// (Blackwell's tcgen05: no probe kernel).
std::string probe_support(const tc::InstructionInfo& I, const DeviceCaps& dev) {
  const std::string name = I.name;
  if (name.rfind("tcgen05_", 0) == 0)
    return "no probe kernel in gemmlab: a model from the literature (reference/tc_gpus.hpp)";
  if (dev.cc < I.min_cc)
    return "needs compute capability " + std::to_string(I.min_cc) + "; " + dev.name + " is " + std::to_string(dev.cc);
  if (name.rfind("wgmma_", 0) == 0 && dev.cc != 90)
    return "wgmma exists on sm_90a (Hopper) only; " + dev.name + " is " + std::to_string(dev.cc);
  return "";
}

// Runs n tiles (host bit arrays) through the instruction; returns D bits (n, m, n). The device
// holds 64-bit elements for fp64 instructions, 32-bit ones (the host's low bits) otherwise.
std::vector<std::uint64_t> run_tiles(Instruction ins, const std::vector<std::uint64_t>& A,
                                     const std::vector<std::uint64_t>& B, const std::vector<std::uint64_t>& C) {
  const long long n = (long long)C.size() / (tc::info(ins).m * tc::info(ins).n);
  const bool wide = gemmlab::info(tc::info(ins).output).storage_bits == 64;
  const size_t es = wide ? 8 : 4;
  const auto upload = [&](const std::vector<std::uint64_t>& h) {
    void* d = nullptr;
    GEMMLAB_CUDA_CHECK(cudaMalloc(&d, h.size() * es));
    if (wide) {
      GEMMLAB_CUDA_CHECK(cudaMemcpy(d, h.data(), h.size() * 8, cudaMemcpyHostToDevice));
    } else {
      const std::vector<std::uint32_t> low(h.begin(), h.end());
      GEMMLAB_CUDA_CHECK(cudaMemcpy(d, low.data(), low.size() * 4, cudaMemcpyHostToDevice));
    }
    return d;
  };
  void *dA = upload(A), *dB = upload(B), *dC = upload(C), *dD = nullptr;
  GEMMLAB_CUDA_CHECK(cudaMalloc(&dD, C.size() * es));
  GEMMLAB_CUDA_CHECK(cudaMemset(dD, 0xff, C.size() * es));  // poison: an unwritten entry reads as NaN
  const auto *a32 = static_cast<const std::uint32_t*>(dA), *b32 = static_cast<const std::uint32_t*>(dB),
             *c32 = static_cast<const std::uint32_t*>(dC);
  auto* d32 = static_cast<std::uint32_t*>(dD);
  const auto *a64 = static_cast<const std::uint64_t*>(dA), *b64 = static_cast<const std::uint64_t*>(dB),
             *c64 = static_cast<const std::uint64_t*>(dC);
  auto* d64 = static_cast<std::uint64_t*>(dD);
  dim3 grid((unsigned)n), block(32), wg(128);
  switch (ins) {
    case Instruction::mma_m16n8k16_f16_f32: k16_kernel<0><<<grid, block>>>(a32, b32, c32, d32); break;
    case Instruction::mma_m16n8k16_f16_f16: k16_kernel<1><<<grid, block>>>(a32, b32, c32, d32); break;
    case Instruction::mma_m16n8k16_bf16_f32: k16_kernel<2><<<grid, block>>>(a32, b32, c32, d32); break;
    case Instruction::mma_m16n8k8_tf32_f32: tf32_kernel<<<grid, block>>>(a32, b32, c32, d32); break;
    case Instruction::mma_m16n8k32_e4m3_f32: fp8_kernel<0><<<grid, block>>>(a32, b32, c32, d32); break;
    case Instruction::mma_m16n8k32_e5m2_f32: fp8_kernel<1><<<grid, block>>>(a32, b32, c32, d32); break;
    case Instruction::wgmma_m64n8k16_f16_f32: wgmma_kernel<0><<<grid, wg>>>(a32, b32, c32, d32); break;
    case Instruction::wgmma_m64n8k16_bf16_f32: wgmma_kernel<1><<<grid, wg>>>(a32, b32, c32, d32); break;
    case Instruction::wgmma_m64n8k8_tf32_f32: wgmma_kernel<2><<<grid, wg>>>(a32, b32, c32, d32); break;
    case Instruction::wgmma_m64n8k32_e4m3_f32: wgmma_kernel<3><<<grid, wg>>>(a32, b32, c32, d32); break;
    case Instruction::wgmma_m64n8k32_e5m2_f32: wgmma_kernel<4><<<grid, wg>>>(a32, b32, c32, d32); break;
    case Instruction::wmma_m16n16k16_f16_f32: wmma_kernel<float><<<grid, block>>>(a32, b32, c32, d32); break;
    case Instruction::wmma_m16n16k16_f16_f16: wmma_kernel<__half><<<grid, block>>>(a32, b32, c32, d32); break;
    case Instruction::wgmma_m64n8k16_f16_f16: wgmma_kernel<5><<<grid, wg>>>(a32, b32, c32, d32); break;
    case Instruction::wgmma_m64n8k32_e4m3_f16: wgmma_kernel<6><<<grid, wg>>>(a32, b32, c32, d32); break;
    case Instruction::wgmma_m64n8k32_e5m2_f16: wgmma_kernel<7><<<grid, wg>>>(a32, b32, c32, d32); break;
    case Instruction::wgmma_m64n8k32_e4m3_e5m2_f32: wgmma_kernel<8><<<grid, wg>>>(a32, b32, c32, d32); break;
    case Instruction::mma_m16n8k32_e4m3_f16: fp8_kernel<2><<<grid, block>>>(a32, b32, c32, d32); break;
    case Instruction::mma_m16n8k32_e5m2_f16: fp8_kernel<3><<<grid, block>>>(a32, b32, c32, d32); break;
    case Instruction::mma_m16n8k32_e4m3_e5m2_f32: fp8_kernel<4><<<grid, block>>>(a32, b32, c32, d32); break;
    case Instruction::mma_m16n8k8_f16_f32: small_mma_kernel<0><<<grid, block>>>(a32, b32, c32, d32); break;
    case Instruction::mma_m16n8k8_bf16_f32: small_mma_kernel<1><<<grid, block>>>(a32, b32, c32, d32); break;
    case Instruction::mma_m16n8k4_tf32_f32: small_mma_kernel<2><<<grid, block>>>(a32, b32, c32, d32); break;
    case Instruction::wgmma_m64n16k16_f16_f32: wgmma_kernel<0, 16><<<grid, wg>>>(a32, b32, c32, d32); break;
    case Instruction::mma_m8n8k4_f64: dmma_kernel<<<grid, block>>>(a64, b64, c64, d64); break;
    case Instruction::mma_m16n8k4_f64: dmma16_kernel<4><<<grid, block>>>(a64, b64, c64, d64); break;
    case Instruction::mma_m16n8k8_f64: dmma16_kernel<8><<<grid, block>>>(a64, b64, c64, d64); break;
    case Instruction::mma_m16n8k16_f64: dmma16_kernel<16><<<grid, block>>>(a64, b64, c64, d64); break;
    default:
      throw std::runtime_error(std::string("probe: no probe kernel for ") + tc::info(ins).name);
  }
  GEMMLAB_LAUNCH_CHECK(tc::info(ins).name);
  GEMMLAB_CUDA_CHECK(cudaDeviceSynchronize());
  std::vector<std::uint64_t> D(C.size());
  if (wide) {
    GEMMLAB_CUDA_CHECK(cudaMemcpy(D.data(), dD, D.size() * 8, cudaMemcpyDeviceToHost));
  } else {
    std::vector<std::uint32_t> low(C.size());
    GEMMLAB_CUDA_CHECK(cudaMemcpy(low.data(), dD, low.size() * 4, cudaMemcpyDeviceToHost));
    D.assign(low.begin(), low.end());
  }
  cudaFree(dA);
  cudaFree(dB);
  cudaFree(dC);
  cudaFree(dD);
  return D;
}

// One probe = one tile: row 0 of A, column 0 of B, C(0,0); the rest zero. The bits are the probe's
// raw bits where it has them (the corpus: NaN payloads, -0, tf32 containers), else its values encoded.
std::vector<tc::ProbeOutcome> run_probe_set(Instruction ins, const std::vector<tc::Probe>& probes) {
  const tc::InstructionInfo& I = tc::info(ins);
  const size_t K = I.k, M = I.m, N = I.n;
  const size_t n = probes.size();
  std::vector<std::uint64_t> A(n * M * K, 0), B(n * K * N, 0), C(n * M * N, 0);
  for (size_t p = 0; p < n; ++p) {
    const tc::RawBits bits = tc::probe_bits(I, probes[p]);
    for (size_t k = 0; k < K; ++k) {
      A[p * M * K + k] = bits.a[k];
      B[p * K * N + k * N] = bits.b[k];
    }
    C[p * M * N] = bits.c;
  }
  std::vector<std::uint64_t> D = run_tiles(ins, A, B, C);
  std::vector<tc::ProbeOutcome> out;
  for (size_t p = 0; p < n; ++p) out.push_back({probes[p], D[p * M * N]});
  return out;
}

std::vector<tc::ProbeOutcome> run_probe_set(Instruction ins) { return run_probe_set(ins, tc::make_probes(tc::info(ins))); }


// Random tiles for validation, from several distributions (tile index picks one), exact in the
// input format. splitmix64 per tile, so tiles are independent of batching and threads.
// The distribution is tile % 7; the range C is drawn from is (tile / 7) % 3:
//   zero: C = 0 everywhere (the only case published fp8 data covers);
//   unit: a quarter of the entries 0, the rest U[-1, 1), a third of those times 16 (the
//         distribution-specific draws of wide_exponent and subnormal as before);
//   wide: C = +-2^(e + U[-s, s]) (1 + U[0, 1)), e = floor(log2 sum_k |a_ik b_kj|) of that entry
//         (0 when the products are all zero), s = 30 for fp32 output, 16 for fp16: from C
//         negligible beside the products to C dominating them.

const char* kDistributions[] = {"uniform01", "uniform11", "normal", "wide_exponent", "cancellation", "subnormal", "integers"};
const char* kCRanges[] = {"zero", "unit", "wide"};
constexpr int kNumDistributions = 7, kNumCRanges = 3;

void random_tile(const tc::InstructionInfo& I, std::uint64_t seed, long long tile, std::vector<double>& A,
                 std::vector<double>& B, std::vector<double>& C) {
  SplitMix r{seed * 0x100000001b3ull + (std::uint64_t)tile};
  const int K = I.k, M = I.m, N = I.n;
  const int dist = (int)(tile % kNumDistributions), crange = (int)((tile / kNumDistributions) % kNumCRanges);
  const FormatInfo &fi = gemmlab::info(I.input), &fo = gemmlab::info(I.output);
  auto in = [&](double x) {
    x = std::clamp(x, -fi.max_finite, fi.max_finite);
    return tc::round_to_format(I.input, x, Rounding::nearest_even);
  };
  // B in its own format (mixed e4m3 x e5m2); the same as `in` otherwise, so the tiles of the
  // instructions validated before stay the same
  const FormatInfo& fb = gemmlab::info(I.format_b());
  auto in_b = [&](double x) {
    x = std::clamp(x, -fb.max_finite, fb.max_finite);
    return tc::round_to_format(I.format_b(), x, Rounding::nearest_even);
  };
  auto gen = [&]() -> double {
    switch (dist) {
      case 0: return r.uniform();
      case 1: return 2 * r.uniform() - 1;
      case 2: {
        double u1 = std::max(r.uniform(), 1e-300), u2 = r.uniform();
        return std::sqrt(-2 * std::log(u1)) * std::cos(6.283185307179586 * u2);
      }
      case 3: {  // log-uniform over most of the input range, random sign
        int lo = fi.emin - fi.precision + 1, hi = std::min(fi.emax, 20);
        int span = std::min(hi - lo, 24);
        int base = lo + (int)(r.next() % (unsigned)(hi - lo - span + 1));
        double e = base + r.uniform() * span;
        return ((r.next() & 1) ? -1 : 1) * std::exp2(e);
      }
      case 5: {  // near and below the smallest normal
        double e = fi.emin - fi.precision + 1 + r.uniform() * (fi.precision + 2);
        return ((r.next() & 1) ? -1 : 1) * std::exp2(e) * (1 + r.uniform());
      }
      case 6: return (double)((int)(r.next() % 9) - 4);
      default: return 2 * r.uniform() - 1;
    }
  };
  A.resize(M * K);
  B.resize(K * N);
  C.resize(M * N);
  for (auto& x : A) x = in(gen());
  for (auto& x : B) x = in_b(gen());
  if (dist == 4) {  // cancellation: the second half of each row of A negates the first
    for (int i = 0; i < M; ++i)
      for (int k = 0; k < K / 2; ++k) {
        A[i * K + k] = in(2 * r.uniform() - 1);
        A[i * K + K / 2 + k] = -A[i * K + k];
      }
    for (int k = 0; k < K / 2; ++k)
      for (int j = 0; j < N; ++j) {
        B[k * N + j] = in_b(2 * r.uniform() - 1);
        B[(k + K / 2) * N + j] = (r.next() % 8 == 0) ? in_b(B[k * N + j] * 0.75) : B[k * N + j];
      }
  }
  const int wide_span = fo.precision > 11 ? 30 : 16;
  for (int e = 0; e < M * N; ++e) {
    double v = 0;
    if (crange == 1) {
      std::uint64_t m = r.next() % 4;
      v = m == 0 ? 0.0 : (dist == 3 || dist == 5 ? gen() : 2 * r.uniform() - 1) * (m == 3 ? 16.0 : 1.0);
      if (dist == 5 && m == 1) v = std::ldexp((double)(1 + r.next() % 7), fo.emin - fo.precision + 1);
    } else if (crange == 2) {
      const int i = e / N, j = e % N;
      double mag = 0;  // sum of |products| in double: only its binade is used
      for (int k = 0; k < K; ++k) mag += std::fabs(A[i * K + k] * B[k * N + j]);
      int e0 = mag > 0 ? std::ilogb(mag) : 0;
      double ex = e0 + (2 * r.uniform() - 1) * wide_span;
      v = ((r.next() & 1) ? -1 : 1) * std::exp2(ex) * (1 + r.uniform());
    }
    C[e] = tc::round_to_format(I.output, std::clamp(v, -fo.max_finite, fo.max_finite), Rounding::nearest_even);
  }
}

}  // namespace

ValidationResult validate_instruction(const std::string& instruction, long long n_tiles, std::uint64_t seed,
                                      const tc::TcParams* inferred, long long first_tile) {
  auto ins = tc::parse_instruction(instruction);
  if (!ins) throw std::runtime_error("validate: unknown instruction '" + instruction + "'");
  const tc::InstructionInfo& I = tc::info(*ins);
  ValidationResult res;
  res.instruction = instruction;
  res.seed = seed;
  res.tiles = n_tiles;
  res.first_tile = first_tile;
  for (const char* d : kDistributions) res.distributions.push_back(d);
  for (const char* c : kCRanges) res.c_ranges.push_back(c);
  res.cells.assign(kNumDistributions * kNumCRanges, {});
  DeviceCaps dev = device_caps();
  if (!dev.present || !probe_support(I, dev).empty()) {
    res.status = "not_supported";
    return res;
  }
  res.status = "validated";
  auto t_start = std::chrono::steady_clock::now();
  const tc::TcParams params = inferred ? *inferred : tc::infer(I, run_probe_set(*ins)).params;
  res.model = params.describe();
  const int K = I.k, M = I.m, N = I.n, MN = M * N;
  const long long batch = 1 << 14;
  // tiles [first_tile, first_tile + n_tiles): a long validation can be cut into calls that together
  // cover exactly the tiles of one
  for (long long t0 = first_tile; t0 < first_tile + n_tiles; t0 += batch) {
    const long long n = std::min(batch, first_tile + n_tiles - t0);
    std::vector<std::uint64_t> Ab(n * M * K), Bb(n * K * N), Cb(n * MN);
    std::vector<double> Ad(n * M * K), Bd(n * K * N), Cd(n * MN);  // kept for the model's pass
    parallel_for(static_cast<long>(n), 0, [&](long t) {
      std::vector<double> a, b, c;
      random_tile(I, seed, t0 + t, a, b, c);
      for (int i = 0; i < M * K; ++i) Ab[t * M * K + i] = to_bits(I.input, Ad[t * M * K + i] = a[i]);
      for (int i = 0; i < K * N; ++i) Bb[t * K * N + i] = to_bits(I.format_b(), Bd[t * K * N + i] = b[i]);
      for (int i = 0; i < MN; ++i) Cb[t * MN + i] = to_bits(I.output, Cd[t * MN + i] = c[i]);
    });
    std::vector<std::uint64_t> D = run_tiles(*ins, Ab, Bb, Cb);
    std::vector<long long> miss(n, 0), mbits(n, 0);
    std::vector<std::string> ex(n);
    parallel_for(static_cast<long>(n), 0, [&](long t) {
      std::vector<double> a(Ad.begin() + t * M * K, Ad.begin() + (t + 1) * M * K),
          b(Bd.begin() + t * K * N, Bd.begin() + (t + 1) * K * N), c(Cd.begin() + t * MN, Cd.begin() + (t + 1) * MN);
      std::vector<double> d = tc::mma_tile(params, I, a, b, c);
      for (int e = 0; e < MN; ++e) {
        const std::uint64_t want = tc::encode_output(params, d[e]), got = D[t * MN + e];
        if (want != got) {  // bit for bit, NaN included
          ++miss[t];
          mbits[t] += __builtin_popcountll(want ^ got);
          if (ex[t].empty()) {
            int i = e / N, j = e % N;
            std::ostringstream s;
            s << std::hexfloat << "tile " << (t0 + t) << " D(" << i << "," << j << "): model "
              << tc::hex_bits(want, I.output) << " hardware " << tc::hex_bits(got, I.output) << "; row:";
            for (int k = 0; k < K; ++k) s << " " << a[i * K + k] << "*" << b[k * N + j];
            s << " c=" << c[e];
            ex[t] = s.str();
          }
        }
      }
    });
    for (long long t = 0; t < n; ++t) {
      const long long tile = t0 + t;
      ValidationResult::Cell& cell =
          res.cells[(tile % kNumDistributions) * kNumCRanges + (tile / kNumDistributions) % kNumCRanges];
      cell.tiles += 1;
      cell.outputs += MN;
      cell.mismatching_outputs += miss[t];
      cell.mismatching_bits += mbits[t];
      if (cell.first_mismatch.empty() && !ex[t].empty()) cell.first_mismatch = ex[t];
    }
  }
  res.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t_start).count();
  return res;
}

long long ValidationResult::mismatching_outputs() const {
  long long m = 0;
  for (const Cell& c : cells) m += c.mismatching_outputs;
  return m;
}

std::string ValidationResult::summary() const {
  std::ostringstream s;
  if (status != "validated") return instruction + ": " + status;
  long long outputs = 0, bits = 0;
  std::string first;
  for (const Cell& c : cells) {
    outputs += c.outputs;
    bits += c.mismatching_bits;
    if (first.empty()) first = c.first_mismatch;
  }
  s << instruction << ": " << tiles << " tiles (seed " << seed << ", from tile " << first_tile << "), " << outputs << " outputs, "
    << mismatching_outputs() << " mismatching outputs, " << bits << " mismatching bits, " << seconds
    << " s; model " << model;
  if (!first.empty()) s << "; first mismatch: " << first;
  return s.str();
}

std::string write_validation(const std::string& findings_csv, const std::vector<ValidationResult>& results,
                             const std::string& command_line) {
  std::filesystem::path out(findings_csv);
  const std::string path = (out.parent_path() / (out.stem().string() + "_validation.csv")).string();
  const DeviceInfo& dev = query_device();
  std::vector<std::vector<std::string>> rows;
  for (const ValidationResult& r : results) {
    auto row = [&](const std::string& dist, const std::string& cr, const ValidationResult::Cell& c) {
      rows.push_back({r.instruction, dev.name, r.status, std::to_string(r.seed), std::to_string(r.first_tile), dist, cr,
                      std::to_string(c.tiles),
                      std::to_string(c.outputs), std::to_string(c.mismatching_outputs),
                      std::to_string(c.mismatching_bits), r.model, c.first_mismatch});
    };
    ValidationResult::Cell all;
    for (size_t d = 0; d < r.distributions.size(); ++d)
      for (size_t c = 0; c < r.c_ranges.size(); ++c) {
        const ValidationResult::Cell& cell = r.cells[d * r.c_ranges.size() + c];
        all.tiles += cell.tiles;
        all.outputs += cell.outputs;
        all.mismatching_outputs += cell.mismatching_outputs;
        all.mismatching_bits += cell.mismatching_bits;
        if (all.first_mismatch.empty()) all.first_mismatch = cell.first_mismatch;
      }
    row("all", "all", all);
    if (r.status != "validated") continue;
    for (size_t d = 0; d < r.distributions.size(); ++d)
      for (size_t c = 0; c < r.c_ranges.size(); ++c)
        row(r.distributions[d], r.c_ranges[c], r.cells[d * r.c_ranges.size() + c]);
  }
  nlohmann::json meta = base_metadata("probe_validation", command_line, path);
  add_device_metadata(meta, dev, software_versions(), current_sm_clock_mhz());
  meta["findings_csv"] = out.filename().string();
  meta["tile_generator"] =
      "experiments/device/probe.cu random_tile: distribution = tile % 7, c_range = (tile / 7) % 3, splitmix64 of "
      "(seed * 0x100000001b3 + tile)";
  write_table(path,
              {"instruction", "gpu", "status", "seed", "first_tile", "distribution", "c_range", "tiles", "outputs",
               "mismatching_outputs", "mismatching_bits", "model", "first_mismatch"},
              rows, meta);
  return path;
}

long long validate_model(const std::string& instruction, long long n_tiles, std::uint64_t seed, std::string* report) {
  ValidationResult r = validate_instruction(instruction, n_tiles, seed);
  if (report) *report = r.summary();
  return r.status == "validated" ? r.mismatching_outputs() : -1;
}

namespace {

std::string hex_list(const std::vector<std::uint64_t>& bits, Format f) {
  std::string s;
  for (std::uint64_t b : bits) s += (s.empty() ? "" : " ") + tc::hex_bits(b, f);
  return s;
}

}  // namespace

int run_probes(const std::string& out_csv_path, bool print_table, const std::string& command_line, bool corpus,
               std::vector<std::pair<std::string, tc::TcParams>>* inferred, const std::vector<std::string>& only) {
  DeviceCaps dev = device_caps();
  if (!dev.present) {
    std::cerr << "gemmlab probe: no usable GPU (" << dev.why << "); the probes need one.\n";
    return 2;
  }
  std::vector<std::vector<std::string>> findings;
  std::vector<std::vector<std::string>> raw;           // <out>_outcomes.csv: one row per probe
  std::vector<std::vector<std::string>> corpus_raw;    // <out>_corpus_outcomes.csv: one row per corpus case
  std::vector<std::vector<std::string>> corpus_rows;   // <out>_corpus.csv: one row per instruction x class
  for (Instruction ins : tc::all_instructions()) {
    const tc::InstructionInfo& I = tc::info(ins);
    if (!only.empty() && std::find(only.begin(), only.end(), I.name) == only.end()) continue;
    if (const std::string why = probe_support(I, dev); !why.empty()) {
      findings.push_back({I.name, "status", "not_supported (" + why + ")", "", ""});
      if (print_table) std::cout << I.name << ": not_supported on " << dev.name << "\n";
      continue;
    }
    std::vector<tc::ProbeOutcome> outcomes = run_probe_set(ins);
    const size_t n_probes = outcomes.size();
    if (corpus) {  // the adversarial corpus: every special rule is inferred from these outcomes too
      std::vector<tc::ProbeOutcome> c = run_probe_set(ins, tc::make_corpus(I));
      outcomes.insert(outcomes.end(), c.begin(), c.end());
    }
    tc::Inference inf = tc::infer(I, outcomes);
    if (inferred) inferred->push_back({I.name, inf.params});
    for (size_t i = 0; i < n_probes; ++i) {  // every raw outcome, so inference can be redone offline
      const tc::ProbeOutcome& o = outcomes[i];
      raw.push_back({I.name, o.probe.id, o.probe.feature, tc::describe_inputs(o.probe),
                     tc::hex_bits(o.output_bits, I.output), tc::hex_bits(tc::predict_bits(inf.params, o.probe), I.output),
                     tc::reproduces(inf.params, o) ? "1" : "0"});
    }
    // corpus: per case (inputs are a pure function of the case id: tc::make_corpus), and per class
    std::map<std::string, std::pair<long long, long long>> per_class;  // class -> (cases, mismatching)
    std::map<std::string, std::string> first;
    for (size_t i = n_probes; i < outcomes.size(); ++i) {
      const tc::ProbeOutcome& o = outcomes[i];
      const std::uint64_t model = tc::predict_bits(inf.params, o.probe);
      const bool ok = model == o.output_bits;
      corpus_raw.push_back({I.name, o.probe.id, o.probe.feature, tc::hex_bits(o.output_bits, I.output),
                            tc::hex_bits(model, I.output), ok ? "1" : "0"});
      auto& cell = per_class[o.probe.feature];
      ++cell.first;
      cell.second += !ok;
      if (!ok && !first.count(o.probe.feature))
        first[o.probe.feature] = o.probe.id + ": a=" + hex_list(o.probe.raw->a, I.input) + "; b=" +
                                 hex_list(o.probe.raw->b, I.format_b()) + "; c=" + tc::hex_bits(o.probe.raw->c, I.output) +
                                 "; hardware " + tc::hex_bits(o.output_bits, I.output) + ", model " +
                                 tc::hex_bits(model, I.output);
    }
    for (const std::string& cls : tc::corpus_classes(I)) {
      if (!per_class.count(cls)) continue;
      corpus_rows.push_back({I.name, dev.name, cls, std::to_string(per_class[cls].first),
                             std::to_string(per_class[cls].second), inf.params.describe(), first[cls]});
      if (print_table)
        std::cout << "corpus " << I.name << " " << cls << ": " << per_class[cls].second << " of " << per_class[cls].first
                  << " cases differ from the model\n";
    }
    if (print_table) std::cout << "\n== " << I.name << " on " << dev.name << " (" << outcomes.size() << " probes)\n";
    for (const tc::Finding& f : inf.findings) {
      findings.push_back({I.name, f.feature, f.observed, f.evidence_inputs, f.evidence_output_bits});
      if (print_table) {
        std::cout << "  " << f.feature << std::string(f.feature.size() < 22 ? 22 - f.feature.size() : 1, ' ')
                  << f.observed << "\n";
        if (!f.evidence_inputs.empty())
          std::cout << std::string(24, ' ') << "evidence: " << f.evidence_inputs << " -> " << f.evidence_output_bits << "\n";
      }
    }
  }
  std::filesystem::path out(out_csv_path);
  const auto beside = [&](const std::string& suffix) {
    return (out.parent_path() / (out.stem().string() + suffix)).string();
  };
  nlohmann::json meta = base_metadata("probe", command_line, out_csv_path);
  add_device_metadata(meta, query_device(), software_versions(), current_sm_clock_mhz());
  try {
    write_table(beside("_outcomes.csv"),
                {"instruction", "probe", "feature", "inputs", "output_bits", "model_bits", "model_matches"}, raw, meta);
    if (corpus) {
      nlohmann::json cmeta = meta;
      cmeta["corpus_seed"] = tc::kCorpusSeed;
      cmeta["corpus_cases_per_class"] = tc::kCorpusCasesPerClass;
      cmeta["corpus_generator"] =
          "reference/tc_corpus.cpp make_corpus(instruction, seed, cases per class): case i of class C is "
          "corpus/C/<seed>/i; its inputs are a pure function of that id";
      write_table(beside("_corpus_outcomes.csv"),
                  {"instruction", "case", "class", "output_bits", "model_bits", "model_matches"}, corpus_raw, cmeta);
      write_table(beside("_corpus.csv"),
                  {"instruction", "gpu", "class", "cases", "mismatching_outputs", "model", "first_mismatch"},
                  corpus_rows, cmeta);
    }
    meta["csv"] = out.filename().string();
    write_table(out_csv_path, {"instruction", "feature", "observed", "evidence_inputs", "evidence_output_bits"}, findings,
                meta);
  } catch (const std::exception& e) {
    std::cerr << "gemmlab probe: " << e.what() << "\n";
    return 1;
  }
  return 0;
}

}  // namespace gemmlab
