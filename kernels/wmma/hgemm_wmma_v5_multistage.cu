// hgemm_wmma_v5_multistage: the WMMA tutorial's next step after v4: a deeper (128, 128) tile of C
// per block of 8 warps (2 in M x 4 in N, (64, 32) warp tiles = 4 x 2 wmma 16x16x16 fragments),
// BK = 32, and a 3-stage global -> shared pipeline with cp.async.cg (16 bytes) and
// commit_group / wait_group. No split-K: each warp runs over the whole K range of its tile, and
// C is written with wmma::store_matrix_sync. Padded smem rows (+8 halves) against bank conflicts.
// A row-major (M, K), B row-major (K, N).
//
// Numerics (per output entry, k-steps of 16 exact products in increasing k):
//  * in_mma:   D = A*B + D in the tensor core (truncating block additions);
//  * external: T = A*B + 0 in the tensor core, then acc += T with __fadd_rn (round to nearest).
// Rounding::toward_zero for both (each k-step's block sum truncates even in external mode).
#include <mma.h>

#include <cstdint>

#include "kernels/common/cuda_check.cuh"
#include "kernels/common/mma_ptx.cuh"
#include "kernels/kernel.hpp"

namespace gemmlab::kernels {
namespace {
using namespace nvcuda;

constexpr int BM = 128, BN = 128, BK = 32, THREADS = 256, STAGES = 3;
constexpr int WARPS_N = 4, WM = 64, WN = 32;
constexpr int FM = WM / 16, FN = WN / 16;    // 4 x 2 fragments per warp
constexpr int LDA = BK + 8, LDB = BN + 8;    // smem row strides in halves (multiples of 8 for wmma)
constexpr int A_STAGE = BM * LDA, B_STAGE = BK * LDB;  // halves per stage
constexpr int SMEM_BYTES = STAGES * (A_STAGE + B_STAGE) * 2;
static_assert(THREADS == 32 * (BM / WM) * (BN / WN), "one warp per (64, 32) tile of C");
static_assert((BM * BK / 8) % THREADS == 0 && (BK * BN / 8) % THREADS == 0, "whole 16-byte chunks per thread");

using FragA = wmma::fragment<wmma::matrix_a, 16, 16, 16, __half, wmma::row_major>;
using FragB = wmma::fragment<wmma::matrix_b, 16, 16, 16, __half, wmma::row_major>;
using FragC = wmma::fragment<wmma::accumulator, 16, 16, 16, float>;

template <Accumulation MODE>
__global__ void __launch_bounds__(THREADS)
    hgemm_wmma_multistage(int M, int N, int K, const __half* __restrict__ A, const __half* __restrict__ B,
                          float* __restrict__ C) {
  extern __shared__ __align__(128) __half smem[];
  __half* As = smem;                     // STAGES x (BM, BK) tiles of A, row stride LDA
  __half* Bs = smem + STAGES * A_STAGE;  // STAGES x (BK, BN) tiles of B, row stride LDB
  const int tid = threadIdx.x, warp = tid / 32;
  const int wm = warp / WARPS_N, wn = warp % WARPS_N;
  const int row0 = blockIdx.y * BM, col0 = blockIdx.x * BN;
  const int KT = K / BK;

  auto load_tile = [&](int slot, int kt) {
#pragma unroll
    for (int p = 0; p < BM * BK / 8 / THREADS; ++p) {  // A: 4 chunks per row
      const int e = tid + p * THREADS, r = e / (BK / 8), c = (e % (BK / 8)) * 8;
      ptx::cp_async_cg16(ptx::smem_u32(As + slot * A_STAGE + r * LDA + c), A + (size_t)(row0 + r) * K + kt * BK + c);
    }
#pragma unroll
    for (int p = 0; p < BK * BN / 8 / THREADS; ++p) {  // B: 16 chunks per row
      const int e = tid + p * THREADS, r = e / (BN / 8), c = (e % (BN / 8)) * 8;
      ptx::cp_async_cg16(ptx::smem_u32(Bs + slot * B_STAGE + r * LDB + c), B + (size_t)(kt * BK + r) * N + col0 + c);
    }
  };

  FragC acc[FM][FN];
#pragma unroll
  for (int i = 0; i < FM; ++i)
#pragma unroll
    for (int j = 0; j < FN; ++j) wmma::fill_fragment(acc[i][j], 0.0f);

#pragma unroll
  for (int s = 0; s < STAGES - 1; ++s) {
    if (s < KT) load_tile(s, s);
    ptx::cp_async_commit();
  }
  for (int kt = 0; kt < KT; ++kt) {
    ptx::cp_async_wait<STAGES - 2>();
    __syncthreads();  // k-tile kt visible to all; slot of k-tile kt-1 free
    if (kt + STAGES - 1 < KT) load_tile((kt + STAGES - 1) % STAGES, kt + STAGES - 1);
    ptx::cp_async_commit();
    const __half* as = As + (kt % STAGES) * A_STAGE;
    const __half* bs = Bs + (kt % STAGES) * B_STAGE;
#pragma unroll
    for (int kk = 0; kk < BK; kk += 16) {
      FragA a[FM];
      FragB b[FN];
#pragma unroll
      for (int i = 0; i < FM; ++i) wmma::load_matrix_sync(a[i], as + (wm * WM + i * 16) * LDA + kk, LDA);
#pragma unroll
      for (int j = 0; j < FN; ++j) wmma::load_matrix_sync(b[j], bs + kk * LDB + wn * WN + j * 16, LDB);
#pragma unroll
      for (int i = 0; i < FM; ++i)
#pragma unroll
        for (int j = 0; j < FN; ++j) {
          if constexpr (MODE == Accumulation::external) {
            FragC t;
            wmma::fill_fragment(t, 0.0f);
            wmma::mma_sync(t, a[i], b[j], t);
#pragma unroll
            for (int e = 0; e < t.num_elements; ++e) acc[i][j].x[e] = __fadd_rn(acc[i][j].x[e], t.x[e]);
          } else {
            wmma::mma_sync(acc[i][j], a[i], b[j], acc[i][j]);
          }
        }
    }
  }
  ptx::cp_async_wait<0>();
#pragma unroll
  for (int i = 0; i < FM; ++i)
#pragma unroll
    for (int j = 0; j < FN; ++j)
      wmma::store_matrix_sync(C + (size_t)(row0 + wm * WM + i * 16) * N + col0 + wn * WN + j * 16, acc[i][j], N,
                              wmma::mem_row_major);
}

template <Accumulation MODE>
void launch(const GemmArgs& a) {
  auto* kern = hgemm_wmma_multistage<MODE>;
  GEMMLAB_CUDA_CHECK(cudaFuncSetAttribute(kern, cudaFuncAttributeMaxDynamicSharedMemorySize, SMEM_BYTES));
  dim3 grid(a.N / BN, a.M / BM);
  kern<<<grid, THREADS, SMEM_BYTES, as_stream(a.stream)>>>(a.M, a.N, a.K, static_cast<const __half*>(a.A),
                                                            static_cast<const __half*>(a.B), static_cast<float*>(a.C));
  GEMMLAB_LAUNCH_CHECK("hgemm_wmma_v5_multistage");
}

constexpr Kernel base(const char* name, const char* desc, Accumulation mode, void (*fn)(const GemmArgs&)) {
  return Kernel{
      .name = name, .family = "wmma", .description = desc,
      .numerics = ptx::fp16_f32_mma_numerics(mode),
      .layout_a = Layout::row_major, .layout_b = Layout::row_major,
      .m_multiple = BM, .n_multiple = BN, .k_multiple = BK,
      .min_cc = 80, .requires_sm90a = false, .workspace_bytes = 0,
      .launch = fn,
  };
}

}  // namespace

const Kernel& hgemm_wmma_v5_multistage_s3_in_mma() {
  static const Kernel k = base("hgemm_wmma_v5_multistage_s3_in_mma",
                               "wmma 16x16x16, 128x128x32 tile, 3-stage cp.async; D = A*B + D", Accumulation::in_mma,
                               launch<Accumulation::in_mma>);
  return k;
}
const Kernel& hgemm_wmma_v5_multistage_s3_external() {
  static const Kernel k = base("hgemm_wmma_v5_multistage_s3_external",
                               "wmma 16x16x16, 128x128x32 tile, 3-stage cp.async; T = A*B + 0 then acc += T",
                               Accumulation::external, launch<Accumulation::external>);
  return k;
}

}  // namespace gemmlab::kernels
