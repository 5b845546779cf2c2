// The template behind sgemm_09_autotuned: sgemm_06's vectorized 2D blocktiling with every tile size a
// parameter, so `gemmlab tune` (experiments/tune_sgemm.cu) can instantiate a grid of (BM, BN, BK, TM,
// TN) and time them; the winner is recorded in sgemm_09_autotuned_config.hpp.
//
// Block: (BM/TM) * (BN/TN) threads compute a (BM, BN) tile of C, each thread a (TM, TN) block as an
// outer product of TM values of A and TN of B per k. A's (BM, BK) tile is stored transposed, k-major,
// with rows padded by 4 floats (transposing stores spread over more banks, 16-byte alignment kept);
// global loads/stores and the register loads from shared memory are float4.
//
// Numerics: each accumulator starts at +0 and gets one __fmaf_rn per k in increasing k, like
// sgemm_01_naive, for every instantiation: outputs are bit-identical to the naive kernel's (the
// tuner checks every candidate bit for bit; tests/gpu/test_simt.cpp checks the registered one).
// Sizes: M a multiple of BM, N of BN, K of BK.
#pragma once
#include "kernels/common/cuda_check.cuh"
#include "kernels/kernel.hpp"

namespace gemmlab::kernels::sgemm09 {

template <int BM, int BN, int BK, int TM, int TN>
struct Shape {
  static constexpr int threads = (BM / TM) * (BN / TN);
  static constexpr int a_pad = 4;
  static constexpr int a_f4 = BM * BK / 4;  // float4s in the (BM, BK) tile of A
  static constexpr int b_f4 = BK * BN / 4;  // float4s in the (BK, BN) tile of B
  static constexpr int a_iters = (a_f4 + threads - 1) / threads;
  static constexpr int b_iters = (b_f4 + threads - 1) / threads;
  static constexpr int smem_bytes = (BK * (BM + a_pad) + BK * BN) * 4;
  static_assert(BM % TM == 0 && BN % TN == 0, "TM must divide BM and TN divide BN");
  static_assert(TM % 4 == 0 && TN % 4 == 0, "register tiles are read from shared memory as float4");
  static_assert(BK % 4 == 0 && BN % 4 == 0, "global tiles are read as float4");
  static_assert(threads >= 32 && threads <= 1024 && threads % 32 == 0, "whole warps, at most 1024 threads");
  static_assert(smem_bytes <= 48 * 1024, "static shared memory is limited to 48 KB");
};

template <int BM, int BN, int BK, int TM, int TN>
__global__ void __launch_bounds__(Shape<BM, BN, BK, TM, TN>::threads)
    sgemm_autotuned(int M, int N, int K, const float* __restrict__ A, const float* __restrict__ B,
                    float* __restrict__ C) {
  using S = Shape<BM, BN, BK, TM, TN>;
  __shared__ __align__(16) float As[BK][BM + S::a_pad];  // (BK, BM) tile of A, transposed, padded rows
  __shared__ __align__(16) float Bs[BK][BN];             // (BK, BN) tile of B
  const int tid = threadIdx.x;
  const int tcol = tid % (BN / TN), trow = tid / (BN / TN);
  A += (size_t)blockIdx.y * BM * K;
  B += (size_t)blockIdx.x * BN;
  C += (size_t)blockIdx.y * BM * N + (size_t)blockIdx.x * BN;

  float acc[TM][TN] = {};
  float regM[TM], regN[TN];
  for (int k0 = 0; k0 < K; k0 += BK) {
#pragma unroll
    for (int p = 0; p < S::a_iters; ++p) {
      const int idx = tid + p * S::threads;
      if (S::a_f4 % S::threads == 0 || idx < S::a_f4) {
        const int r = idx / (BK / 4), c = 4 * (idx % (BK / 4));
        const float4 v = *reinterpret_cast<const float4*>(&A[(size_t)r * K + k0 + c]);
        As[c + 0][r] = v.x;
        As[c + 1][r] = v.y;
        As[c + 2][r] = v.z;
        As[c + 3][r] = v.w;
      }
    }
#pragma unroll
    for (int p = 0; p < S::b_iters; ++p) {
      const int idx = tid + p * S::threads;
      if (S::b_f4 % S::threads == 0 || idx < S::b_f4) {
        const int r = idx / (BN / 4), c = 4 * (idx % (BN / 4));
        *reinterpret_cast<float4*>(&Bs[r][c]) = *reinterpret_cast<const float4*>(&B[(size_t)(k0 + r) * N + c]);
      }
    }
    __syncthreads();
#pragma unroll
    for (int k = 0; k < BK; ++k) {
#pragma unroll
      for (int i = 0; i < TM; i += 4)
        *reinterpret_cast<float4*>(&regM[i]) = *reinterpret_cast<const float4*>(&As[k][trow * TM + i]);
#pragma unroll
      for (int j = 0; j < TN; j += 4)
        *reinterpret_cast<float4*>(&regN[j]) = *reinterpret_cast<const float4*>(&Bs[k][tcol * TN + j]);
#pragma unroll
      for (int i = 0; i < TM; ++i)
#pragma unroll
        for (int j = 0; j < TN; ++j) acc[i][j] = __fmaf_rn(regM[i], regN[j], acc[i][j]);
    }
    __syncthreads();
  }
#pragma unroll
  for (int i = 0; i < TM; ++i)
#pragma unroll
    for (int j = 0; j < TN; j += 4)
      *reinterpret_cast<float4*>(&C[(size_t)(trow * TM + i) * N + tcol * TN + j]) =
          make_float4(acc[i][j], acc[i][j + 1], acc[i][j + 2], acc[i][j + 3]);
}

template <int BM, int BN, int BK, int TM, int TN>
void launch(const GemmArgs& a) {
  dim3 grid(a.N / BN, a.M / BM);
  sgemm_autotuned<BM, BN, BK, TM, TN><<<grid, Shape<BM, BN, BK, TM, TN>::threads, 0, as_stream(a.stream)>>>(
      a.M, a.N, a.K, static_cast<const float*>(a.A), static_cast<const float*>(a.B), static_cast<float*>(a.C));
  GEMMLAB_LAUNCH_CHECK("sgemm_09_autotuned");
}

}  // namespace gemmlab::kernels::sgemm09
