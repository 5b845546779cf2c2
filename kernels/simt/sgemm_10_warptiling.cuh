// The template behind sgemm_10_warptiling (Boehm's kernel 10), shared with the tuner
// (experiments/tune_sgemm.cu), which times a few shapes of it.
//
// Three levels of tiling: a block of NT threads computes a (BM, BN) tile of C; each warp a (WM, WN)
// warp tile of it; the warp tile is walked as WMITER x WNITER sub-tiles of (WSUBM, WSUBN), and each
// lane computes a (TM, TN) block of every sub-tile. A lane therefore holds WMITER*TM x WNITER*TN
// accumulators and per k reads WMITER*TM values of A and WNITER*TN of B from shared memory (float4
// loads) for WMITER*WNITER*TM*TN FMAs. Keeping a warp's lanes on one compact warp tile makes the
// shared-memory reads of a warp touch few distinct addresses (broadcasts, no bank conflicts) and
// matches the warp scheduler's unit of work. A's (BM, BK) tile is stored transposed, k-major, with
// rows padded by 4 floats; B's (BK, BN) tile row-major; global traffic in float4.
//
// Numerics: each accumulator starts at +0 and gets one __fmaf_rn per k in increasing k, like
// sgemm_01_naive, for every shape: outputs are bit-identical to the naive kernel's (tested).
// Sizes: M a multiple of BM, N of BN, K of BK.
#pragma once
#include "kernels/common/cuda_check.cuh"
#include "kernels/common/per_device.cuh"
#include "kernels/kernel.hpp"

namespace gemmlab::kernels::sgemm10 {

template <int BM, int BN, int BK, int WM, int WN, int WNITER, int TM, int TN, int NT>
struct Shape {
  static constexpr int warps = NT / 32;
  static constexpr int wmiter = (WM * WN) / (32 * TM * TN * WNITER);
  static constexpr int wsubm = WM / wmiter, wsubn = WN / WNITER;
  static constexpr int a_pad = 4;
  static constexpr int a_stride = BM + a_pad;  // floats per k-row of the transposed A tile
  static constexpr int a_f4 = BM * BK / 4, b_f4 = BK * BN / 4;
  static constexpr int a_iters = a_f4 / NT, b_iters = b_f4 / NT;
  static constexpr int stage_floats = BK * a_stride + BK * BN;  // one (A, B) stage in shared memory
  static_assert(NT % 32 == 0 && NT <= 1024, "whole warps, at most 1024 threads");
  static_assert(BM % WM == 0 && BN % WN == 0 && (BM / WM) * (BN / WN) == warps, "warp tiles must cover the block tile");
  static_assert(wmiter >= 1 && wmiter * WNITER * 32 * TM * TN == WM * WN, "lanes x thread tiles must cover the warp tile");
  static_assert(WM % wmiter == 0 && WN % WNITER == 0, "sub-tiles must divide the warp tile");
  static_assert(wsubm % TM == 0 && wsubn % TN == 0 && (wsubm / TM) * (wsubn / TN) == 32,
                "the 32 lanes must tile one (WSUBM, WSUBN) sub-tile");
  static_assert(TM % 4 == 0 && TN % 4 == 0, "register tiles are read from shared memory as float4");
  static_assert(BK % 4 == 0 && BN % 4 == 0, "global tiles are read as float4");
  static_assert(a_f4 % NT == 0 && b_f4 % NT == 0, "every thread loads the same number of float4s");
};

// The per-k inner product step shared by sgemm_10 and sgemm_11: registers from one shared stage.
// As: (BK, a_stride) transposed A tile; Bs: (BK, BN) B tile; m0/n0: the lane's first row/column.
template <class S, int BK, int BN, int TM, int TN, int WNITER>
__device__ __forceinline__ void warptile_mma(const float* __restrict__ As, const float* __restrict__ Bs, int m0, int n0,
                                             float (&acc)[S::wmiter * TM][WNITER * TN]) {
  float regM[S::wmiter * TM], regN[WNITER * TN];
#pragma unroll
  for (int k = 0; k < BK; ++k) {
#pragma unroll
    for (int wm = 0; wm < S::wmiter; ++wm)
#pragma unroll
      for (int i = 0; i < TM; i += 4)
        *reinterpret_cast<float4*>(&regM[wm * TM + i]) =
            *reinterpret_cast<const float4*>(&As[k * S::a_stride + m0 + wm * S::wsubm + i]);
#pragma unroll
    for (int wn = 0; wn < WNITER; ++wn)
#pragma unroll
      for (int j = 0; j < TN; j += 4)
        *reinterpret_cast<float4*>(&regN[wn * TN + j]) =
            *reinterpret_cast<const float4*>(&Bs[k * BN + n0 + wn * S::wsubn + j]);
#pragma unroll
    for (int i = 0; i < S::wmiter * TM; ++i)
#pragma unroll
      for (int j = 0; j < WNITER * TN; ++j) acc[i][j] = __fmaf_rn(regM[i], regN[j], acc[i][j]);
  }
}

// PREFETCH: the next K-step's tiles are loaded from global memory into registers before the compute
// on the current one (one shared stage, two barriers per K-step), so the load latency hides behind
// BK steps of FMAs instead of stalling the block; sgemm_11 adds a second shared stage.
template <int BM, int BN, int BK, int WM, int WN, int WNITER, int TM, int TN, int NT, int MINB, bool PREFETCH>
__global__ void __launch_bounds__(NT, MINB)
    sgemm_warptiling(int M, int N, int K, const float* __restrict__ A, const float* __restrict__ B,
                     float* __restrict__ C) {
  using S = Shape<BM, BN, BK, WM, WN, WNITER, TM, TN, NT>;
  extern __shared__ __align__(16) float smem[];
  float* As = smem;                    // (BK, BM + a_pad) tile of A, transposed
  float* Bs = smem + BK * S::a_stride; // (BK, BN) tile of B
  const int tid = threadIdx.x, warp = tid / 32, lane = tid % 32;
  const int warp_row = warp / (BN / WN), warp_col = warp % (BN / WN);
  const int lane_row = lane / (S::wsubn / TN), lane_col = lane % (S::wsubn / TN);
  const int m0 = warp_row * WM + lane_row * TM;  // the lane's first row in the block tile
  const int n0 = warp_col * WN + lane_col * TN;  // the lane's first column in the block tile
  A += (size_t)blockIdx.y * BM * K;
  B += (size_t)blockIdx.x * BN;
  C += (size_t)blockIdx.y * BM * N + (size_t)blockIdx.x * BN;

  float4 pa[S::a_iters], pb[S::b_iters];  // this thread's float4s of one K-step's A and B tiles
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
  auto stash = [&] {
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
  if constexpr (PREFETCH) fetch(0);
  for (int k0 = 0; k0 < K; k0 += BK) {
    if constexpr (!PREFETCH) fetch(k0);
    stash();
    __syncthreads();
    if constexpr (PREFETCH)
      if (k0 + BK < K) fetch(k0 + BK);  // in flight during the compute below
    warptile_mma<S, BK, BN, TM, TN, WNITER>(As, Bs, m0, n0, acc);
    __syncthreads();
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
template <int BM, int BN, int BK, int WM, int WN, int WNITER, int TM, int TN, int NT, int MINB = 1,
          bool PREFETCH = false>
void launch(const GemmArgs& a) {
  using S = Shape<BM, BN, BK, WM, WN, WNITER, TM, TN, NT>;
  constexpr int smem = S::stage_floats * 4;
  auto* fn = sgemm_warptiling<BM, BN, BK, WM, WN, WNITER, TM, TN, NT, MINB, PREFETCH>;
  static PerDevice<bool> attr_set;  // once per instantiation and GPU: allow > 48 KB of dynamic shared memory
  attr_set.get([&] {
    GEMMLAB_CUDA_CHECK(cudaFuncSetAttribute(fn, cudaFuncAttributeMaxDynamicSharedMemorySize, smem));
    return true;
  });
  dim3 grid(a.N / BN, a.M / BM);
  fn<<<grid, NT, smem, as_stream(a.stream)>>>(a.M, a.N, a.K, static_cast<const float*>(a.A),
                                              static_cast<const float*>(a.B), static_cast<float*>(a.C));
  GEMMLAB_LAUNCH_CHECK("sgemm_10_warptiling");
}

}  // namespace gemmlab::kernels::sgemm10
