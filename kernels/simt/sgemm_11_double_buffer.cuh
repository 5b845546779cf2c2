// The template behind sgemm_11_double_buffer (Boehm's kernel 11), shared with the tuner.
//
// sgemm_10's warptiling with two shared-memory stages: while the warps compute on stage s, each
// thread already has the next (BM, BK) / (BK, BN) tiles in flight from global memory into registers;
// after the compute it writes them into stage s^1, and one __syncthreads per K-step (instead of two)
// both publishes stage s^1 and retires stage s. Global-memory latency hides behind BK steps of FMAs.
//
// Numerics: each accumulator starts at +0 and gets one __fmaf_rn per k in increasing k (the stages
// change when data arrives, not the arithmetic): bit-identical to sgemm_01_naive (tested).
// Sizes: M a multiple of BM, N of BN, K of BK.
#pragma once
#include "kernels/common/per_device.cuh"
#include "kernels/simt/sgemm_10_warptiling.cuh"

namespace gemmlab::kernels::sgemm11 {

using sgemm10::Shape;
using sgemm10::warptile_mma;

template <int BM, int BN, int BK, int WM, int WN, int WNITER, int TM, int TN, int NT, int MINB>
__global__ void __launch_bounds__(NT, MINB)
    sgemm_double_buffer(int M, int N, int K, const float* __restrict__ A, const float* __restrict__ B,
                        float* __restrict__ C) {
  using S = Shape<BM, BN, BK, WM, WN, WNITER, TM, TN, NT>;
  extern __shared__ __align__(16) float smem[];  // 2 stages of [(BK, BM + a_pad) A^T | (BK, BN) B]
  const int tid = threadIdx.x, warp = tid / 32, lane = tid % 32;
  const int warp_row = warp / (BN / WN), warp_col = warp % (BN / WN);
  const int lane_row = lane / (S::wsubn / TN), lane_col = lane % (S::wsubn / TN);
  const int m0 = warp_row * WM + lane_row * TM;
  const int n0 = warp_col * WN + lane_col * TN;
  A += (size_t)blockIdx.y * BM * K;
  B += (size_t)blockIdx.x * BN;
  C += (size_t)blockIdx.y * BM * N + (size_t)blockIdx.x * BN;

  float4 pa[S::a_iters], pb[S::b_iters];  // the next K-step's tiles, in flight in registers
  auto fetch = [&](int k0) {
#pragma unroll
    for (int p = 0; p < S::a_iters; ++p) {
      const int idx = tid + p * NT, r = idx / (BK / 4), c = 4 * (idx % (BK / 4));
      pa[p] = *reinterpret_cast<const float4*>(&A[(size_t)r * K + k0 + c]);
    }
#pragma unroll
    for (int p = 0; p < S::b_iters; ++p) {
      const int idx = tid + p * NT, r = idx / (BN / 4), c = 4 * (idx % (BN / 4));
      pb[p] = *reinterpret_cast<const float4*>(&B[(size_t)(k0 + r) * N + c]);
    }
  };
  auto stash = [&](int stage) {
    float* As = smem + stage * S::stage_floats;
    float* Bs = As + BK * S::a_stride;
#pragma unroll
    for (int p = 0; p < S::a_iters; ++p) {
      const int idx = tid + p * NT, r = idx / (BK / 4), c = 4 * (idx % (BK / 4));
      As[(c + 0) * S::a_stride + r] = pa[p].x;
      As[(c + 1) * S::a_stride + r] = pa[p].y;
      As[(c + 2) * S::a_stride + r] = pa[p].z;
      As[(c + 3) * S::a_stride + r] = pa[p].w;
    }
#pragma unroll
    for (int p = 0; p < S::b_iters; ++p) {
      const int idx = tid + p * NT, r = idx / (BN / 4), c = 4 * (idx % (BN / 4));
      *reinterpret_cast<float4*>(&Bs[r * BN + c]) = pb[p];
    }
  };

  float acc[S::wmiter * TM][WNITER * TN] = {};
  fetch(0);
  stash(0);
  __syncthreads();
  int stage = 0;
  for (int k0 = 0; k0 < K; k0 += BK) {
    const bool more = k0 + BK < K;
    if (more) fetch(k0 + BK);  // loads issued now, consumed after the compute below
    const float* As = smem + stage * S::stage_floats;
    warptile_mma<S, BK, BN, TM, TN, WNITER>(As, As + BK * S::a_stride, m0, n0, acc);
    if (more) stash(stage ^ 1);  // stage^1 was last read one step ago, before the last barrier
    __syncthreads();
    stage ^= 1;
  }
#pragma unroll
  for (int wm = 0; wm < S::wmiter; ++wm)
#pragma unroll
    for (int i = 0; i < TM; ++i)
#pragma unroll
      for (int wn = 0; wn < WNITER; ++wn)
#pragma unroll
        for (int j = 0; j < TN; j += 4) {
          const float* a = &acc[wm * TM + i][wn * TN + j];
          *reinterpret_cast<float4*>(&C[(size_t)(m0 + wm * S::wsubm + i) * N + n0 + wn * S::wsubn + j]) =
              make_float4(a[0], a[1], a[2], a[3]);
        }
}

// MINB: blocks per SM the register allocation must allow (__launch_bounds__'s second argument).
template <int BM, int BN, int BK, int WM, int WN, int WNITER, int TM, int TN, int NT, int MINB = 1>
void launch(const GemmArgs& a) {
  using S = Shape<BM, BN, BK, WM, WN, WNITER, TM, TN, NT>;
  constexpr int smem = 2 * S::stage_floats * 4;
  auto* fn = sgemm_double_buffer<BM, BN, BK, WM, WN, WNITER, TM, TN, NT, MINB>;
  static PerDevice<bool> attr_set;  // once per GPU: the attribute belongs to the current device
  attr_set.get([&] {
    GEMMLAB_CUDA_CHECK(cudaFuncSetAttribute(fn, cudaFuncAttributeMaxDynamicSharedMemorySize, smem));
    return true;
  });
  dim3 grid(a.N / BN, a.M / BM);
  fn<<<grid, NT, smem, as_stream(a.stream)>>>(a.M, a.N, a.K, static_cast<const float*>(a.A),
                                              static_cast<const float*>(a.B), static_cast<float*>(a.C));
  GEMMLAB_LAUNCH_CHECK("sgemm_11_double_buffer");
}

}  // namespace gemmlab::kernels::sgemm11
