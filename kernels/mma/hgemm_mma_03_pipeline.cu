// hgemm_mma_03_pipeline: step 3 of the mma.sync series: step 2b with an N_STAGES-deep global ->
// shared pipeline. k-tiles are copied by cp.async.cg (16 bytes, L1 bypassed) into a ring of
// N_STAGES smem slots, one commit group per k-tile; cp.async.wait_group N_STAGES-2 plus one barrier
// per k-tile make tile kt visible while tiles kt+1 .. kt+N_STAGES-2 are still in flight.
// N_STAGES = 3 and 4 are registered. As step 2b: 8 warps, (64, 64) block tile, (32, 16) warp
// tiles, BK = 32, each A fragment once per k-step, and
//  * global -> shared: one 16-byte, coalesced cp.async per thread per operand tile (4 per row);
//  * shared layout XOR-permuted: 16-byte chunk c of row r lives at chunk c ^ ((r / 2) % 4), so the
//    128-bit stores and every 8-row ldmatrix phase hit 8 distinct 16-byte bank groups (no conflicts);
//  * fragments by ldmatrix.x4 (A, (16, 16)) and ldmatrix.x2 (B, (16, 8)), all of a k-step's
//    fragments in registers before its mma.
// A row-major (M, K); B col-major, i.e. B^T (N, K) row-major: both tiles k-major, no .trans.
//
// Numerics: as hgemm_mma_01_naive (16 exact products per k-step, k-steps in increasing k):
//  in_mma D = A*B + D in the tensor core; external T = A*B + 0, then acc += T with __fadd_rn.
//  Rounding::toward_zero for both (each k-step's block sum truncates even in external mode).
#include <cstdint>

#include "kernels/common/cuda_check.cuh"
#include "kernels/common/mma_ptx.cuh"
#include "kernels/kernel.hpp"

namespace gemmlab::kernels {
namespace {

constexpr int BM = 64, BN = 64, BK = 32, THREADS = 256;
constexpr int WARPS_N = 4, WM = 32, WN = 16;
constexpr int MT = WM / 16, NT = WN / 8;  // 2 x 2 mma tiles per warp
constexpr int ROW_CHUNKS = BK / 8;        // 4 chunks of 16 B per smem row
static_assert(THREADS == 32 * (BM / WM) * (BN / WN), "one warp per (32, 16) tile of C");
static_assert(BM * ROW_CHUNKS == THREADS && BN * ROW_CHUNKS == THREADS, "one 16-byte chunk per thread per tile");

// Offset in halves of chunk `ch` of row `r` in a (rows, 32) k-major tile (64-byte rows).
__device__ __forceinline__ int swz(int r, int ch) { return r * BK + ((ch ^ ((r >> 1) & 3)) << 3); }

template <int N_STAGES, Accumulation MODE>
__global__ void __launch_bounds__(THREADS)
    hgemm_mma_pipeline(int M, int N, int K, const uint16_t* __restrict__ A, const uint16_t* __restrict__ Bt,
                       float* __restrict__ C) {
  static_assert(N_STAGES >= 2, "a pipeline needs at least two stages");
  __shared__ __align__(128) uint16_t As[N_STAGES][BM * BK];  // ring of (BM, BK) tiles of A, swizzled
  __shared__ __align__(128) uint16_t Bs[N_STAGES][BN * BK];  // ring of (BN, BK) tiles of B^T, swizzled
  const int tid = threadIdx.x, lane = tid % 32, warp = tid / 32;
  const int wm = warp / WARPS_N, wn = warp % WARPS_N;
  const int row0 = blockIdx.y * BM, col0 = blockIdx.x * BN;
  const int lr = tid / ROW_CHUNKS, lc = tid % ROW_CHUNKS;  // this thread's chunk of each tile
  const uint4* gA = reinterpret_cast<const uint4*>(A + (size_t)(row0 + lr) * K + lc * 8);
  const uint4* gB = reinterpret_cast<const uint4*>(Bt + (size_t)(col0 + lr) * K + lc * 8);
  const uint32_t sA = ptx::smem_u32(&As[0][swz(lr, lc)]), sB = ptx::smem_u32(&Bs[0][swz(lr, lc)]);
  constexpr uint32_t SLOT_BYTES = BM * BK * 2;
  static_assert(BM == BN, "A and B slots have the same size");
  auto load_tile = [&](int slot, int kt) {
    ptx::cp_async_cg16(sA + slot * SLOT_BYTES, gA + kt * (BK / 8));
    ptx::cp_async_cg16(sB + slot * SLOT_BYTES, gB + kt * (BK / 8));
  };
  // ldmatrix rows of this lane: A x4 row lane % 16, chunk +lane / 16; B x2 row lane % 8,
  // chunk +(lane / 8) % 2 (lanes 16..31 repeat 0..15: ignored by .x2 but valid).
  const int a_row = wm * WM + (lane & 15), a_ch = lane >> 4;
  const int b_row = wn * WN + (lane & 7), b_ch = (lane >> 3) & 1;

  float acc[MT][NT][4] = {};
  const int KT = K / BK;
#pragma unroll
  for (int s = 0; s < N_STAGES - 1; ++s) {  // prologue: k-tiles 0 .. N_STAGES-2 in flight
    if (s < KT) load_tile(s, s);
    ptx::cp_async_commit();
  }
  for (int kt = 0; kt < KT; ++kt) {
    ptx::cp_async_wait<N_STAGES - 2>();  // this thread's copies of k-tile kt have landed
    __syncthreads();                     // everyone's have, and slot (kt - 1) % N_STAGES is free
    if (kt + N_STAGES - 1 < KT) load_tile((kt + N_STAGES - 1) % N_STAGES, kt + N_STAGES - 1);
    ptx::cp_async_commit();              // possibly empty: keeps one group per k-tile
    const uint16_t* as = As[kt % N_STAGES];
    const uint16_t* bs = Bs[kt % N_STAGES];
#pragma unroll
    for (int ks = 0; ks < BK / 16; ++ks) {
      uint32_t a[MT][4], b[NT][2];
#pragma unroll
      for (int i = 0; i < MT; ++i) ptx::ldmatrix_x4(a[i], ptx::smem_u32(as + swz(a_row + i * 16, ks * 2 + a_ch)));
#pragma unroll
      for (int j = 0; j < NT; ++j) ptx::ldmatrix_x2(b[j], ptx::smem_u32(bs + swz(b_row + j * 8, ks * 2 + b_ch)));
#pragma unroll
      for (int i = 0; i < MT; ++i)
#pragma unroll
        for (int j = 0; j < NT; ++j) ptx::mma_accumulate<MODE>(acc[i][j], a[i], b[j]);
    }
  }
  ptx::cp_async_wait<0>();
  ptx::store_acc_f32(C, N, row0 + wm * WM, col0 + wn * WN, lane, acc);
}

template <int N_STAGES, Accumulation MODE>
void launch(const GemmArgs& a) {
  dim3 grid(a.N / BN, a.M / BM);
  hgemm_mma_pipeline<N_STAGES, MODE><<<grid, THREADS, 0, as_stream(a.stream)>>>(
      a.M, a.N, a.K, static_cast<const uint16_t*>(a.A), static_cast<const uint16_t*>(a.B), static_cast<float*>(a.C));
  GEMMLAB_LAUNCH_CHECK("hgemm_mma_03_pipeline");
}

constexpr Kernel base(const char* name, const char* desc, Accumulation mode, void (*fn)(const GemmArgs&)) {
  return ptx::mma_f16_f32_kernel(name, desc, mode, BM, BN, BK, fn);
}

}  // namespace

#define GEMMLAB_MMA03(id, desc, mode, stages)                                                   \
  const Kernel& id() {                                                                         \
    static const Kernel k = base(#id, desc, Accumulation::mode, launch<stages, Accumulation::mode>); \
    return k;                                                                                  \
  }
GEMMLAB_MMA03(hgemm_mma_03_pipeline_s3_in_mma, "mma.sync 64x64x32, 3-stage cp.async pipeline, D = A*B + D", in_mma, 3)
GEMMLAB_MMA03(hgemm_mma_03_pipeline_s3_external,
              "mma.sync 64x64x32, 3-stage cp.async pipeline, T = A*B + 0 then acc += T (fp32, nearest)", external, 3)
GEMMLAB_MMA03(hgemm_mma_03_pipeline_s4_in_mma, "mma.sync 64x64x32, 4-stage cp.async pipeline, D = A*B + D", in_mma, 4)
GEMMLAB_MMA03(hgemm_mma_03_pipeline_s4_external,
              "mma.sync 64x64x32, 4-stage cp.async pipeline, T = A*B + 0 then acc += T (fp32, nearest)", external, 4)

}  // namespace gemmlab::kernels
