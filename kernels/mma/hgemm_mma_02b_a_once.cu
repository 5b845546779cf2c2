// hgemm_mma_02b_a_once: step 2b of the mma.sync series: step 2 with each A fragment loaded once per
// k-step (MT ldmatrix.x4 + NT ldmatrix.x2 per k-step instead of MT*NT of each). As step 2: 8 warps,
// (64, 64) block tile, (32, 16) warp tiles, BK = 32, and the memory path of step 2:
//  * global -> shared: one 128-bit, coalesced load per thread per operand tile (4 threads per row);
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

template <Accumulation MODE>
__global__ void __launch_bounds__(THREADS)
    hgemm_mma_a_once(int M, int N, int K, const uint16_t* __restrict__ A, const uint16_t* __restrict__ Bt,
                       float* __restrict__ C) {
  __shared__ __align__(128) uint16_t As[BM * BK];  // (BM, BK) tile of A, swizzled
  __shared__ __align__(128) uint16_t Bs[BN * BK];  // (BN, BK) tile of B^T, swizzled
  const int tid = threadIdx.x, lane = tid % 32, warp = tid / 32;
  const int wm = warp / WARPS_N, wn = warp % WARPS_N;
  const int row0 = blockIdx.y * BM, col0 = blockIdx.x * BN;
  const int lr = tid / ROW_CHUNKS, lc = tid % ROW_CHUNKS;  // this thread's chunk of each tile
  const uint4* gA = reinterpret_cast<const uint4*>(A + (size_t)(row0 + lr) * K + lc * 8);
  const uint4* gB = reinterpret_cast<const uint4*>(Bt + (size_t)(col0 + lr) * K + lc * 8);
  uint4* sA = reinterpret_cast<uint4*>(As + swz(lr, lc));
  uint4* sB = reinterpret_cast<uint4*>(Bs + swz(lr, lc));
  // ldmatrix rows of this lane: A x4 row lane % 16, chunk +lane / 16; B x2 row lane % 8,
  // chunk +(lane / 8) % 2 (lanes 16..31 repeat 0..15: ignored by .x2 but valid).
  const int a_row = wm * WM + (lane & 15), a_ch = lane >> 4;
  const int b_row = wn * WN + (lane & 7), b_ch = (lane >> 3) & 1;

  float acc[MT][NT][4] = {};
  for (int k0 = 0; k0 < K; k0 += BK) {
    *sA = gA[k0 / 8];
    *sB = gB[k0 / 8];
    __syncthreads();
#pragma unroll
    for (int ks = 0; ks < BK / 16; ++ks) {
      uint32_t a[MT][4], b[NT][2];
#pragma unroll
      for (int i = 0; i < MT; ++i) ptx::ldmatrix_x4(a[i], ptx::smem_u32(As + swz(a_row + i * 16, ks * 2 + a_ch)));
#pragma unroll
      for (int j = 0; j < NT; ++j) ptx::ldmatrix_x2(b[j], ptx::smem_u32(Bs + swz(b_row + j * 8, ks * 2 + b_ch)));
#pragma unroll
      for (int i = 0; i < MT; ++i)
#pragma unroll
        for (int j = 0; j < NT; ++j) ptx::mma_accumulate<MODE>(acc[i][j], a[i], b[j]);
    }
    __syncthreads();
  }
  ptx::store_acc_f32(C, N, row0 + wm * WM, col0 + wn * WN, lane, acc);
}

template <Accumulation MODE>
void launch(const GemmArgs& a) {
  dim3 grid(a.N / BN, a.M / BM);
  hgemm_mma_a_once<MODE><<<grid, THREADS, 0, as_stream(a.stream)>>>(
      a.M, a.N, a.K, static_cast<const uint16_t*>(a.A), static_cast<const uint16_t*>(a.B), static_cast<float*>(a.C));
  GEMMLAB_LAUNCH_CHECK("hgemm_mma_02b_a_once");
}

constexpr Kernel base(const char* name, const char* desc, Accumulation mode, void (*fn)(const GemmArgs&)) {
  return ptx::mma_f16_f32_kernel(name, desc, mode, BM, BN, BK, fn);
}

}  // namespace

const Kernel& hgemm_mma_02b_a_once_in_mma() {
  static const Kernel k = base("hgemm_mma_02b_a_once_in_mma",
                               "mma.sync, 128-bit loads, XOR-swizzled smem, ldmatrix, A fragment once per k-step, D = A*B + D",
                               Accumulation::in_mma, launch<Accumulation::in_mma>);
  return k;
}
const Kernel& hgemm_mma_02b_a_once_external() {
  static const Kernel k = base("hgemm_mma_02b_a_once_external",
                               "mma.sync, 128-bit loads, XOR-swizzled smem, ldmatrix, A once per k-step, T = A*B + 0 then acc += T",
                               Accumulation::external, launch<Accumulation::external>);
  return k;
}

}  // namespace gemmlab::kernels
