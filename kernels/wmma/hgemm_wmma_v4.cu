// hgemm_wmma_v4: the WMMA tutorial's v4. A (32, 32) tile of C per block of 64 threads (2 warps),
// BK = 32, nvcuda::wmma 16x16x16 fragments (fp16 in, fp32 accumulator), float4 global -> shared
// loads. The two warps split the K range of every tile: warp w multiplies k in [16w, 16w + 16) of
// each (32, 32) k-tile into its own four (16, 16) accumulators; at the end warp 1 hands its
// accumulators to warp 0 through shared memory, warp 0 adds them and writes C straight from the
// fragment registers, using the mma.sync m16n8k16 accumulator layout of the PTX ISA (a 16x16 wmma
// fp32 accumulator is two m16n8 ones side by side; tests/gpu/test_wmma.cpp checks this on exact data):
//   x[e], g = lane / 4, t = lane % 4:  row g + 8 ((e / 2) % 2),  col 2t + (e % 2) + 8 (e / 4).
// A row-major (M, K), B row-major (K, N).
//
// Numerics (per output entry): the split-K changes the order of summation: C = S0 + S1 (one fp32
// round-to-nearest add), where S_w is warp w's running sum over its K/2 products (k-steps of 16
// products, k in [32j + 16w, 32j + 16w + 16) for j = 0, 1, ...):
//  * in_mma:   S_w = A*B + S_w in the tensor core at each k-step (truncating block additions);
//  * external: T = A*B + 0 in the tensor core, S_w += T with __fadd_rn (round to nearest).
// Rounding::toward_zero for both (each k-step's block sum truncates even in external mode).
#include <mma.h>

#include <cstdint>

#include "kernels/common/cuda_check.cuh"
#include "kernels/common/mma_ptx.cuh"
#include "kernels/kernel.hpp"

namespace gemmlab::kernels {
namespace {
using namespace nvcuda;

constexpr int BM = 32, BN = 32, BK = 32, THREADS = 64;
constexpr int LDS = BK + 8;   // smem row stride in halves (padding against bank conflicts; wmma needs % 8 == 0)
constexpr int LDC = BN + 4;   // fp32 row stride of the reduction buffer
static_assert(BM == BK && BN == BK, "A and B tiles are both (32, 32): one loop loads both");
static_assert(BM * BK / 8 == 2 * THREADS, "two float4 per thread per tile");

using FragA = wmma::fragment<wmma::matrix_a, 16, 16, 16, __half, wmma::row_major>;
using FragB = wmma::fragment<wmma::matrix_b, 16, 16, 16, __half, wmma::row_major>;
using FragC = wmma::fragment<wmma::accumulator, 16, 16, 16, float>;

template <Accumulation MODE>
__global__ void __launch_bounds__(THREADS)
    hgemm_wmma_v4(int M, int N, int K, const __half* __restrict__ A, const __half* __restrict__ B,
                  float* __restrict__ C) {
  __shared__ __align__(32) __half As[BM][LDS];   // (BM, BK) tile of A
  __shared__ __align__(32) __half Bs[BK][LDS];   // (BK, BN) tile of B
  __shared__ __align__(32) float Cs[BM][LDC];    // warp 1's (32, 32) accumulators, for the reduction
  const int tid = threadIdx.x, warp = tid / 32, lane = tid % 32;
  const int row0 = blockIdx.y * BM, col0 = blockIdx.x * BN;

  FragC acc[2][2];
#pragma unroll
  for (int i = 0; i < 2; ++i)
#pragma unroll
    for (int j = 0; j < 2; ++j) wmma::fill_fragment(acc[i][j], 0.0f);

  for (int k0 = 0; k0 < K; k0 += BK) {
#pragma unroll
    for (int p = 0; p < 2; ++p) {  // float4 = 8 halves; rows of 4 float4
      const int e = tid + p * THREADS, r = e / 4, c = (e % 4) * 8;
      *reinterpret_cast<float4*>(&As[r][c]) = *reinterpret_cast<const float4*>(&A[(size_t)(row0 + r) * K + k0 + c]);
      *reinterpret_cast<float4*>(&Bs[r][c]) = *reinterpret_cast<const float4*>(&B[(size_t)(k0 + r) * N + col0 + c]);
    }
    __syncthreads();
    const int kw = warp * 16;  // this warp's half of the k-tile
    FragA a[2];
    FragB b[2];
#pragma unroll
    for (int i = 0; i < 2; ++i) wmma::load_matrix_sync(a[i], &As[i * 16][kw], LDS);
#pragma unroll
    for (int j = 0; j < 2; ++j) wmma::load_matrix_sync(b[j], &Bs[kw][j * 16], LDS);
#pragma unroll
    for (int i = 0; i < 2; ++i)
#pragma unroll
      for (int j = 0; j < 2; ++j) {
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
    __syncthreads();
  }

  // Split-K reduction: warp 1 -> smem -> warp 0, C = S0 + S1 element by element.
  if (warp == 1) {
#pragma unroll
    for (int i = 0; i < 2; ++i)
#pragma unroll
      for (int j = 0; j < 2; ++j) wmma::store_matrix_sync(&Cs[i * 16][j * 16], acc[i][j], LDC, wmma::mem_row_major);
  }
  __syncthreads();
  if (warp == 0) {
    const int g = lane / 4, t = lane % 4;
#pragma unroll
    for (int i = 0; i < 2; ++i)
#pragma unroll
      for (int j = 0; j < 2; ++j) {
        FragC other;
        wmma::load_matrix_sync(other, &Cs[i * 16][j * 16], LDC, wmma::mem_row_major);
        static_assert(sizeof(FragC::x) / sizeof(float) == 8, "the m16n8k16 layout below has 8 fp32 per lane");
#pragma unroll
        for (int e = 0; e < 8; e += 2) {  // x[e], x[e+1]: C(g + 8((e/2)%2), 2t + 8(e/4) + {0, 1})
          const int r = row0 + i * 16 + g + 8 * ((e / 2) % 2), c = col0 + j * 16 + 2 * t + 8 * (e / 4);
          *reinterpret_cast<float2*>(&C[(size_t)r * N + c]) = make_float2(
              __fadd_rn(acc[i][j].x[e], other.x[e]), __fadd_rn(acc[i][j].x[e + 1], other.x[e + 1]));
        }
      }
  }
}

template <Accumulation MODE>
void launch(const GemmArgs& a) {
  dim3 grid(a.N / BN, a.M / BM);
  hgemm_wmma_v4<MODE><<<grid, THREADS, 0, as_stream(a.stream)>>>(
      a.M, a.N, a.K, static_cast<const __half*>(a.A), static_cast<const __half*>(a.B), static_cast<float*>(a.C));
  GEMMLAB_LAUNCH_CHECK("hgemm_wmma_v4");
}

constexpr Kernel base(const char* name, const char* desc, Accumulation mode, void (*fn)(const GemmArgs&)) {
  return Kernel{
      .name = name, .family = "wmma", .description = desc,
      .numerics = ptx::fp16_f32_mma_numerics(mode, /*split_k=*/2),
      .layout_a = Layout::row_major, .layout_b = Layout::row_major,
      .m_multiple = BM, .n_multiple = BN, .k_multiple = BK,
      .min_cc = 70, .requires_sm90a = false, .workspace_bytes = 0,
      .launch = fn,
  };
}

}  // namespace

const Kernel& hgemm_wmma_v4_in_mma() {
  static const Kernel k = base("hgemm_wmma_v4_in_mma",
                               "wmma 16x16x16, 32x32x32 tile, 2 warps split K, smem reduction; D = A*B + D",
                               Accumulation::in_mma, launch<Accumulation::in_mma>);
  return k;
}
const Kernel& hgemm_wmma_v4_external() {
  static const Kernel k = base("hgemm_wmma_v4_external",
                               "wmma 16x16x16, 32x32x32 tile, 2 warps split K; T = A*B + 0 then acc += T (fp32, nearest)",
                               Accumulation::external, launch<Accumulation::external>);
  return k;
}

}  // namespace gemmlab::kernels
