// sgemm_08_bank_offset: Boehm's kernel 8, resolving bank conflicts with offsets instead of a
// linearized layout, keeping 128-bit shared loads:
//  * A's transposed tile gets a padded row stride BM + 4: the transposing stores As[k][i] of a warp
//    (two k-groups of 16 rows each) then land in 32 different banks instead of 16 (2-way conflict).
//  * each thread's 8x8 block of C is split into 4x4 quarters at offsets BM/2 and BN/2: the thread
//    owns rows {4 trow + i, BM/2 + 4 trow + i} and columns {4 tcol + j, BN/2 + 4 tcol + j}, so the 8
//    threads of each quarter-warp phase of an LDS.128 read 8 consecutive float4s (128 bytes, every bank
//    once) instead of float4s 32 bytes apart (2-way conflict in sgemm_06).
// Otherwise sgemm_06: 128x128 block tile, BK = 8, float4 global loads and stores, 256 threads.
//
// Numerics: identical to sgemm_01_naive: each accumulator starts at +0 and gets one __fmaf_rn per k
// in increasing k; which thread owns which output changes nothing. Bit-identical to naive (tested).
// Sizes: M, N multiples of 128, K a multiple of 8 (declared).
#include "kernels/common/cuda_check.cuh"
#include "kernels/kernel.hpp"

namespace gemmlab::kernels {
namespace {

constexpr int BM = 128, BN = 128, BK = 8, TM = 8, TN = 8;
constexpr int A_PAD = 4;  // floats: keeps 16-byte alignment of A's rows, shifts banks by 4 per k
constexpr int THREADS = (BM / TM) * (BN / TN);  // 256
static_assert(THREADS * 4 == BM * BK, "one float4 of the (BM, BK) tile of A per thread");
static_assert(THREADS * 4 == BK * BN, "one float4 of the (BK, BN) tile of B per thread");
static_assert(TM == 8 && TN == 8, "the thread block is two 4-wide halves in each direction");

__global__ void __launch_bounds__(THREADS)
    sgemm_bank_offset(int M, int N, int K, const float* __restrict__ A, const float* __restrict__ B,
                      float* __restrict__ C) {
  __shared__ __align__(16) float As[BK][BM + A_PAD];  // (BK, BM) tile of A, transposed, padded rows
  __shared__ __align__(16) float Bs[BK][BN];          // (BK, BN) tile of B
  const int tcol = threadIdx.x % (BN / TN), trow = threadIdx.x / (BN / TN);
  const int a_r = threadIdx.x / (BK / 4), a_c4 = threadIdx.x % (BK / 4);
  const int b_r = threadIdx.x / (BN / 4), b_c4 = threadIdx.x % (BN / 4);
  A += (size_t)blockIdx.y * BM * K;
  B += (size_t)blockIdx.x * BN;
  C += (size_t)blockIdx.y * BM * N + (size_t)blockIdx.x * BN;

  float acc[TM][TN] = {};  // row h*4+i is tile row h*BM/2 + 4 trow + i; column likewise with BN/2
  float regM[TM], regN[TN];
  for (int k0 = 0; k0 < K; k0 += BK) {
    const float4 a4 = *reinterpret_cast<const float4*>(&A[(size_t)a_r * K + k0 + 4 * a_c4]);
    As[4 * a_c4 + 0][a_r] = a4.x;
    As[4 * a_c4 + 1][a_r] = a4.y;
    As[4 * a_c4 + 2][a_r] = a4.z;
    As[4 * a_c4 + 3][a_r] = a4.w;
    *reinterpret_cast<float4*>(&Bs[b_r][4 * b_c4]) =
        *reinterpret_cast<const float4*>(&B[(size_t)(k0 + b_r) * N + 4 * b_c4]);
    __syncthreads();
#pragma unroll
    for (int k = 0; k < BK; ++k) {
#pragma unroll
      for (int h = 0; h < 2; ++h) {
        *reinterpret_cast<float4*>(&regM[4 * h]) =
            *reinterpret_cast<const float4*>(&As[k][h * (BM / 2) + 4 * trow]);
        *reinterpret_cast<float4*>(&regN[4 * h]) =
            *reinterpret_cast<const float4*>(&Bs[k][h * (BN / 2) + 4 * tcol]);
      }
#pragma unroll
      for (int i = 0; i < TM; ++i)
#pragma unroll
        for (int j = 0; j < TN; ++j) acc[i][j] = __fmaf_rn(regM[i], regN[j], acc[i][j]);
    }
    __syncthreads();
  }
#pragma unroll
  for (int i = 0; i < TM; ++i) {
    const int row = (i / 4) * (BM / 2) + 4 * trow + i % 4;
#pragma unroll
    for (int h = 0; h < 2; ++h)
      *reinterpret_cast<float4*>(&C[(size_t)row * N + h * (BN / 2) + 4 * tcol]) =
          make_float4(acc[i][4 * h], acc[i][4 * h + 1], acc[i][4 * h + 2], acc[i][4 * h + 3]);
  }
}

void launch(const GemmArgs& a) {
  dim3 grid(a.N / BN, a.M / BM);
  sgemm_bank_offset<<<grid, THREADS, 0, as_stream(a.stream)>>>(a.M, a.N, a.K, static_cast<const float*>(a.A),
                                                              static_cast<const float*>(a.B),
                                                              static_cast<float*>(a.C));
  GEMMLAB_LAUNCH_CHECK("sgemm_08_bank_offset");
}

}  // namespace

const Kernel& sgemm_08_bank_offset() {
  static const Kernel k{
      .name = "sgemm_08_bank_offset",
      .family = "simt",
      .description = "sgemm_06 with padded A tile and 4x4 quarters at BM/2, BN/2 offsets: conflict-free LDS.128, fp32 FMA in k order",
      .numerics = cuda_core_fp32_fma(),
      .layout_a = Layout::row_major, .layout_b = Layout::row_major,
      .m_multiple = BM, .n_multiple = BN, .k_multiple = BK,
      .min_cc = 50, .requires_sm90a = false, .workspace_bytes = 0,
      .launch = launch,
  };
  return k;
}

}  // namespace gemmlab::kernels
