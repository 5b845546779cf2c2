// hgemm_wgmma_01_basic: the first Hopper step. One warpgroup (128 threads) per (64, 128) block tile;
// every BK = 64 slice of K is brought into shared memory by ordinary 16-byte loads and stores, written
// straight into the 128-byte-swizzled K-major layout that the wgmma descriptors describe, then
// multiplied by four wgmma.mma_async m64n128k16 (fence, commit, wait for all). No overlap of loads
// and math: this is the baseline the TMA and pipelined steps improve on.
//
// Numerics: fp16 or bf16 in (products exact), fp32 out.
//  * in_wgmma: D = A*B + D inside wgmma over all of K. The tensor core aligns the terms of each block
//    to the largest exponent and truncates (Fasi et al. 2021; Khattak & Mikaitis for Hopper: block 16
//    plus the accumulator, 2 extra alignment bits), so the sum is biased toward zero: judged with
//    Rounding::toward_zero (u_eff = 2 u_fp32).
//  * promoted_every_N: wgmma accumulates N elements of K (N/16 instructions, the first with
//    scale-d = 0, i.e. D = A*B), then the partial sum is added into separate fp32 registers with
//    round-to-nearest adds (__fadd_rn). Still judged as truncate (the in-wgmma part truncates).
// Layouts: A row-major (M, K) and B column-major (K, N), i.e. both K-major, as wgmma's descriptors
// and (later) TMA want them without transposes.
#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include "kernels/common/cuda_check.cuh"
#include "kernels/common/hopper_ptx.cuh"
#include "kernels/kernel.hpp"

namespace gemmlab::kernels {
namespace {

constexpr int BM = 64, BN = 128, BK = 64;  // block tile; BK elements of 2 bytes = one 128-byte row
constexpr int THREADS = 128;               // one warpgroup
static_assert(BK * 2 == 128, "one K-slice row must be exactly the 128-byte swizzle width");
static_assert((BM * BK * 2 / 16) % THREADS == 0 && (BN * BK * 2 / 16) % THREADS == 0,
              "each thread copies a whole number of 16-byte chunks");

template <class T, int PROMOTE>
__global__ void __launch_bounds__(THREADS, 1)
    hgemm_wgmma_basic(int M, int N, int K, const T* __restrict__ A, const T* __restrict__ B, float* __restrict__ C) {
#ifdef GEMMLAB_SM90A_DEVICE
  using namespace gemmlab::hopper;
  constexpr int KW = Wgmma<T, BN>::k;            // elements of K per wgmma (16)
  constexpr int STEPS = BK / KW;                 // wgmmas per K-slice (4)
  static_assert(PROMOTE == 0 || PROMOTE % KW == 0, "promotion interval must be a multiple of the wgmma K");
  constexpr int PSTEPS = PROMOTE == 0 ? 1 : PROMOTE / KW;

  __shared__ __align__(1024) unsigned char sA[BM * 128];  // (BM, BK) tile of A, K-major, swizzled
  __shared__ __align__(1024) unsigned char sB[BN * 128];  // (BN, BK) tile of B^T, K-major, swizzled

  const int tid = threadIdx.x;
  const int m0 = blockIdx.y * BM, n0 = blockIdx.x * BN;
  const T* gA = A + std::size_t(m0) * K;  // row m0 of A (M, K) row-major
  const T* gB = B + std::size_t(n0) * K;  // column n0 of B (K, N) column-major = row n0 of B^T

  float d[BN / 2];        // wgmma accumulator fragment of the (64, 128) tile
  float p[BN / 2] = {};   // promoted fp32 sums (unused for in_wgmma)

  const int slices = K / BK;
  for (int kt = 0; kt < slices; ++kt) {
    const int k0 = kt * BK;
    // Ordinary loads: 16 bytes (8 elements) per chunk, chunk c of row r stored at chunk c ^ (r % 8).
#pragma unroll
    for (int i = 0; i < BM * 8 / THREADS; ++i) {
      const int q = tid + i * THREADS, r = q / 8, c = q % 8;
      *reinterpret_cast<uint4*>(sA + sw128_offset(r, c)) =
          *reinterpret_cast<const uint4*>(gA + std::size_t(r) * K + k0 + c * 8);
    }
#pragma unroll
    for (int i = 0; i < BN * 8 / THREADS; ++i) {
      const int q = tid + i * THREADS, r = q / 8, c = q % 8;
      *reinterpret_cast<uint4*>(sB + sw128_offset(r, c)) =
          *reinterpret_cast<const uint4*>(gB + std::size_t(r) * K + k0 + c * 8);
    }
    fence_proxy_async_smem();  // generic-proxy stores -> visible to wgmma (async proxy)
    __syncthreads();

    wgmma_fence();
#pragma unroll
    for (int s = 0; s < STEPS; ++s) {
      const int g = kt * STEPS + s;  // global wgmma index along K
      const int scale_d = PROMOTE == 0 ? (g > 0) : (g % PSTEPS != 0);
      Wgmma<T, BN>::run(d, make_desc_sw128(sA + s * 32), make_desc_sw128(sB + s * 32), scale_d);
      if (PROMOTE != 0 && (g + 1) % PSTEPS == 0) {
        wgmma_commit();
        wgmma_wait<0>();
        fence_regs(d);
        promote_add(p, d);
        wgmma_fence();
      }
    }
    wgmma_commit();
    wgmma_wait<0>();
    fence_regs(d);
    __syncthreads();  // every warp done with this slice before it is overwritten
  }
  float* c = C + std::size_t(m0) * N + n0;
  if constexpr (PROMOTE == 0) {
    store_fragment(c, N, d);
  } else {
    if ((slices * STEPS) % PSTEPS != 0) promote_add(p, d);  // a last, partial interval
    store_fragment(c, N, p);
  }
#else
  __trap();  // built without sm_90a: the descriptor says requires_sm90a, so this never launches
#endif
}

template <class T, int PROMOTE>
void launch(const GemmArgs& a) {
  dim3 grid(a.N / BN, a.M / BM);
  hgemm_wgmma_basic<T, PROMOTE><<<grid, THREADS, 0, as_stream(a.stream)>>>(
      a.M, a.N, a.K, static_cast<const T*>(a.A), static_cast<const T*>(a.B), static_cast<float*>(a.C));
  GEMMLAB_LAUNCH_CHECK("hgemm_wgmma_01_basic");
}

constexpr Kernel base(const char* name, const char* desc, Format in, int interval,
                      void (*fn)(const GemmArgs&)) {
  return Kernel{
      .name = name, .family = "hopper", .description = desc,
      .numerics = wgmma_f32_numerics(in, interval),
      .layout_a = Layout::row_major, .layout_b = Layout::col_major,
      .m_multiple = BM, .n_multiple = BN, .k_multiple = BK,
      .min_cc = 90, .requires_sm90a = true, .workspace_bytes = 0,
      .launch = fn,
  };
}

}  // namespace

#define GEMMLAB_WGMMA01_VARIANT(id, desc, fmt, T, interval)                                      \
  const Kernel& id() {                                                                               \
    static const Kernel k = base(#id, desc, Format::fmt, interval, launch<T, interval>); \
    return k;                                                                                        \
  }

GEMMLAB_WGMMA01_VARIANT(hgemm_wgmma_01_basic_fp16_in_wgmma,
                        "wgmma m64n128k16, one warpgroup, 64x128 tile, smem by ordinary loads, fp32 acc in wgmma",
                        fp16, __half, 0)
GEMMLAB_WGMMA01_VARIANT(hgemm_wgmma_01_basic_bf16_in_wgmma,
                        "wgmma m64n128k16, one warpgroup, 64x128 tile, smem by ordinary loads, fp32 acc in wgmma",
                        bf16, __nv_bfloat16, 0)
GEMMLAB_WGMMA01_VARIANT(hgemm_wgmma_01_basic_fp16_promoted_every_128k,
                        "wgmma m64n128k16, one warpgroup, 64x128 tile, promoted to fp32 registers every 128 of K",
                        fp16, __half, 128)

}  // namespace gemmlab::kernels
