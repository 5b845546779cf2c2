// dgemm_mma_01_m8n8k4: fp64 tensor-core DGEMM with mma.sync.aligned.m8n8k4.row.col.f64 (DMMA, sm_80+).
// A block of 4 warps (2 x 2) computes a (BM, BN) = (64, 64) tile of C from (64, 16) tiles of A and
// (16, 64) tiles of B in shared memory; each warp a (32, 32) tile, as 4 x 4 fragments of (8, 8).
//
// Numerics: in_mma. Every fragment's accumulator starts at +0 and is the C of every instruction:
// D = A(8, 4) B(4, 8) + D, k-steps of 4 in increasing k, instruction k index t = global k0 + kk + t.
// What one instruction does with its four products and C is tc::measured_hopper_params
// (mma_m8n8k4_f64): until the probes run on a GPU, the hypothesis of MMA-Sim (a chain of four
// binary64 FMAs from C in increasing k, each rounded to nearest even: the accumulation rounding
// below); under it the kernel is the DFMA chain of dgemm_01_dfma_tiled, bit for bit.
// Fragment layout (PTX ISA, m8n8k4 .f64): lane = 4 g + t; A(g, t); B(t, g); C/D(g, 2t) and (g, 2t + 1).
// Sizes: M, N multiples of 64, K a multiple of 16 (declared; other sizes are not_supported rows).
#include "kernels/common/cuda_check.cuh"
#include "kernels/kernel.hpp"

namespace gemmlab::kernels {
namespace {

constexpr int BM = 64, BN = 64, BK = 16, WM = 32, WN = 32;
constexpr int WARPS = (BM / WM) * (BN / WN);  // 4
constexpr int THREADS = 32 * WARPS;          // 128
constexpr int FM = WM / 8, FN = WN / 8;      // (8, 8) fragments per warp: 4 x 4
static_assert(BM * BK % THREADS == 0 && BK * BN % THREADS == 0, "tile loads must split evenly over the threads");
static_assert(BK % 4 == 0, "BK must be a whole number of k-steps of 4");

__device__ __forceinline__ void dmma_m8n8k4(double& d0, double& d1, double a, double b) {
  asm volatile("mma.sync.aligned.m8n8k4.row.col.f64.f64.f64.f64 {%0,%1}, {%2}, {%3}, {%0,%1};\n"
               : "+d"(d0), "+d"(d1)
               : "d"(a), "d"(b));
}

__global__ void __launch_bounds__(THREADS)
    dgemm_mma_m8n8k4(int M, int N, int K, const double* __restrict__ A, const double* __restrict__ B,
                     double* __restrict__ C) {
  __shared__ double As[BM][BK + 1];  // (BM, BK) tile of A, row-major (+1: fewer bank conflicts)
  __shared__ double Bs[BK][BN + 1];  // (BK, BN) tile of B, row-major
  const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
  const int g = lane / 4, t = lane % 4;
  const int wm = (warp / (BN / WN)) * WM, wn = (warp % (BN / WN)) * WN;  // warp's (WM, WN) tile
  A += (size_t)blockIdx.y * BM * K;
  B += (size_t)blockIdx.x * BN;
  C += (size_t)blockIdx.y * BM * N + (size_t)blockIdx.x * BN;

  double acc[FM][FN][2] = {};  // +0 initially
  for (int k0 = 0; k0 < K; k0 += BK) {
#pragma unroll
    for (int e = threadIdx.x; e < BM * BK; e += THREADS) As[e / BK][e % BK] = A[(size_t)(e / BK) * K + k0 + e % BK];
#pragma unroll
    for (int e = threadIdx.x; e < BK * BN; e += THREADS) Bs[e / BN][e % BN] = B[(size_t)(k0 + e / BN) * N + e % BN];
    __syncthreads();
#pragma unroll
    for (int kk = 0; kk < BK; kk += 4) {
      double a[FM], b[FN];
#pragma unroll
      for (int i = 0; i < FM; ++i) a[i] = As[wm + i * 8 + g][kk + t];
#pragma unroll
      for (int j = 0; j < FN; ++j) b[j] = Bs[kk + t][wn + j * 8 + g];
#pragma unroll
      for (int i = 0; i < FM; ++i)
#pragma unroll
        for (int j = 0; j < FN; ++j) dmma_m8n8k4(acc[i][j][0], acc[i][j][1], a[i], b[j]);
    }
    __syncthreads();
  }
#pragma unroll
  for (int i = 0; i < FM; ++i)
#pragma unroll
    for (int j = 0; j < FN; ++j) {
      double* c = C + (size_t)(wm + i * 8 + g) * N + wn + j * 8 + 2 * t;
      c[0] = acc[i][j][0];
      c[1] = acc[i][j][1];
    }
}

void launch(const GemmArgs& a) {
  dim3 grid(a.N / BN, a.M / BM);
  dgemm_mma_m8n8k4<<<grid, THREADS, 0, as_stream(a.stream)>>>(a.M, a.N, a.K, static_cast<const double*>(a.A),
                                                             static_cast<const double*>(a.B),
                                                             static_cast<double*>(a.C));
  GEMMLAB_LAUNCH_CHECK("dgemm_mma_01_m8n8k4");
}

}  // namespace

const Kernel& dgemm_mma_01_m8n8k4() {
  static const Kernel k{
      .name = "dgemm_mma_01_m8n8k4",
      .family = "fp64",
      .description = "fp64 tensor cores, mma.sync m8n8k4 f64, 64x64 block tile, BK=16, D = A*B + D in k order",
      .numerics = {.input = Format::fp64, .compute = Format::fp64, .accumulator = Format::fp64,
                   .output = Format::fp64, .accumulation = Accumulation::in_mma,
                   .instruction = tc::Instruction::mma_m8n8k4_f64, .k_step = 4,
                   .accumulation_rounding = Rounding::nearest_even},
      .layout_a = Layout::row_major, .layout_b = Layout::row_major,
      .m_multiple = BM, .n_multiple = BN, .k_multiple = BK,
      .min_cc = 80, .requires_sm90a = false, .workspace_bytes = 0,
      .launch = launch,
  };
  return k;
}

}  // namespace gemmlab::kernels
