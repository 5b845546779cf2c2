// hgemm_mma_01_naive: step 1 of the mma.sync series, the tensor core used as plainly as possible.
// A 16x16 thread block (8 warps, 2 in M x 4 in N) owns a (32, 32) tile of C; each warp owns one
// (16, 8) tile and issues one mma.sync.m16n8k16 per k16 step. A (32, 16) tile of A and a (32, 16)
// tile of B^T go through shared memory element by element, and each warp gathers its fragments
// element by element in the PTX ISA's fragment layout (kernels/common/mma_ptx.cuh).
// A row-major (M, K); B col-major, i.e. B^T (N, K) row-major, so both tiles are k-major.
//
// Numerics (per output entry: K/16 k-steps of 16 exact products, in increasing k):
//  * in_mma:   D = A*B + D, the running sum inside the tensor core's truncating 16-term addition.
//  * external: T = A*B + 0 (16 products summed, truncated, in the tensor core), then acc += T in
//              fp32 with __fadd_rn (round to nearest, not contracted).
// Rounding::toward_zero in both modes: external still truncates inside each k-step's block sum,
// and the bound model has one rounding knob, so truncate is the valid, conservative choice.
#include <cstdint>

#include "kernels/common/cuda_check.cuh"
#include "kernels/common/mma_ptx.cuh"
#include "kernels/kernel.hpp"

namespace gemmlab::kernels {
namespace {

constexpr int BM = 32, BN = 32, BK = 16, THREADS = 256;
constexpr int WARPS_N = 4;
static_assert(THREADS == 32 * (BM / 16) * (BN / 8), "one warp per (16, 8) tile of C");
static_assert((BM * BK) % THREADS == 0 && (BN * BK) % THREADS == 0, "whole elements per thread");

template <Accumulation MODE>
__global__ void __launch_bounds__(THREADS)
    hgemm_mma_naive(int M, int N, int K, const uint16_t* __restrict__ A, const uint16_t* __restrict__ Bt,
                    float* __restrict__ C) {
  __shared__ uint16_t As[BM][BK];  // (BM, BK) tile of A, k-major
  __shared__ uint16_t Bs[BN][BK];  // (BN, BK) tile of B^T, k-major
  const int tid = threadIdx.x, lane = tid % 32, warp = tid / 32;
  const int wm = warp / WARPS_N, wn = warp % WARPS_N;
  const int row0 = blockIdx.y * BM, col0 = blockIdx.x * BN;
  const int g = lane / 4, t = lane % 4;

  float acc[4] = {0.0f, 0.0f, 0.0f, 0.0f};
  for (int k0 = 0; k0 < K; k0 += BK) {
    for (int e = tid; e < BM * BK; e += THREADS) As[e / BK][e % BK] = A[(size_t)(row0 + e / BK) * K + k0 + e % BK];
    for (int e = tid; e < BN * BK; e += THREADS) Bs[e / BK][e % BK] = Bt[(size_t)(col0 + e / BK) * K + k0 + e % BK];
    __syncthreads();
    const int ar = wm * 16 + g, bn = wn * 8 + g;
    const uint32_t a[4] = {ptx::pack_b16(As[ar][2 * t], As[ar][2 * t + 1]),
                           ptx::pack_b16(As[ar + 8][2 * t], As[ar + 8][2 * t + 1]),
                           ptx::pack_b16(As[ar][2 * t + 8], As[ar][2 * t + 9]),
                           ptx::pack_b16(As[ar + 8][2 * t + 8], As[ar + 8][2 * t + 9])};
    const uint32_t b[2] = {ptx::pack_b16(Bs[bn][2 * t], Bs[bn][2 * t + 1]),
                           ptx::pack_b16(Bs[bn][2 * t + 8], Bs[bn][2 * t + 9])};
    ptx::mma_accumulate<MODE>(acc, a, b);
    __syncthreads();
  }
  // (16, 8) accumulator: c[0..1] = C(g, 2t..2t+1), c[2..3] = C(g+8, 2t..2t+1).
  const int r = row0 + wm * 16 + g, c = col0 + wn * 8 + 2 * t;
  *reinterpret_cast<float2*>(&C[(size_t)r * N + c]) = make_float2(acc[0], acc[1]);
  *reinterpret_cast<float2*>(&C[(size_t)(r + 8) * N + c]) = make_float2(acc[2], acc[3]);
}

template <Accumulation MODE>
void launch(const GemmArgs& a) {
  dim3 grid(a.N / BN, a.M / BM);
  hgemm_mma_naive<MODE><<<grid, THREADS, 0, as_stream(a.stream)>>>(
      a.M, a.N, a.K, static_cast<const uint16_t*>(a.A), static_cast<const uint16_t*>(a.B), static_cast<float*>(a.C));
  GEMMLAB_LAUNCH_CHECK("hgemm_mma_01_naive");
}

constexpr Kernel base(const char* name, const char* desc, Accumulation mode, void (*fn)(const GemmArgs&)) {
  return ptx::mma_f16_f32_kernel(name, desc, mode, BM, BN, BK, fn);
}

}  // namespace

const Kernel& hgemm_mma_01_naive_in_mma() {
  static const Kernel k = base("hgemm_mma_01_naive_in_mma", "mma.sync m16n8k16, one (16, 8) tile per warp, D = A*B + D",
                               Accumulation::in_mma, launch<Accumulation::in_mma>);
  return k;
}
const Kernel& hgemm_mma_01_naive_external() {
  static const Kernel k = base("hgemm_mma_01_naive_external",
                               "mma.sync m16n8k16, one (16, 8) tile per warp, T = A*B + 0 then acc += T (fp32, nearest)",
                               Accumulation::external, launch<Accumulation::external>);
  return k;
}

}  // namespace gemmlab::kernels
