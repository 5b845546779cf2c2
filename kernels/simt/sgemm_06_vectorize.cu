// sgemm_06_vectorize: Boehm's kernel 6, vectorized memory access. Same tiling as sgemm_05 (128x128
// block tile, BK = 8, an 8x8 block of C per thread), but every global load and store is a 128-bit
// float4, and the (BM, BK) tile of A is stored transposed, k-major, in shared memory, so a thread's
// 8 values of A for one k are contiguous and load as two 128-bit shared loads (LDS.128) like B's.
//
// Numerics: identical to sgemm_01_naive: each accumulator starts at +0 and gets one __fmaf_rn per k
// in increasing k; the transposition moves data, not arithmetic. Bit-identical to naive (tested).
// Sizes: M, N multiples of 128, K a multiple of 8 (declared), so every float4 is 16-byte aligned.
#include "kernels/common/cuda_check.cuh"
#include "kernels/kernel.hpp"

namespace gemmlab::kernels {
namespace {

constexpr int BM = 128, BN = 128, BK = 8, TM = 8, TN = 8;
constexpr int THREADS = (BM / TM) * (BN / TN);  // 256
static_assert(THREADS * 4 == BM * BK, "one float4 of the (BM, BK) tile of A per thread");
static_assert(THREADS * 4 == BK * BN, "one float4 of the (BK, BN) tile of B per thread");
static_assert(TM % 4 == 0 && TN % 4 == 0, "register tiles are read as float4");

__global__ void __launch_bounds__(THREADS)
    sgemm_vectorize(int M, int N, int K, const float* __restrict__ A, const float* __restrict__ B,
                    float* __restrict__ C) {
  __shared__ __align__(16) float As[BK][BM];  // (BK, BM) tile of A, transposed: As[k][i] = A(i, k)
  __shared__ __align__(16) float Bs[BK][BN];  // (BK, BN) tile of B, row-major
  const int tcol = threadIdx.x % (BN / TN), trow = threadIdx.x / (BN / TN);
  const int a_r = threadIdx.x / (BK / 4), a_c4 = threadIdx.x % (BK / 4);  // float4 (a_r, 4*a_c4..) of A
  const int b_r = threadIdx.x / (BN / 4), b_c4 = threadIdx.x % (BN / 4);  // float4 (b_r, 4*b_c4..) of B
  A += (size_t)blockIdx.y * BM * K;
  B += (size_t)blockIdx.x * BN;
  C += (size_t)blockIdx.y * BM * N + (size_t)blockIdx.x * BN;

  float acc[TM][TN] = {};
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

void launch(const GemmArgs& a) {
  dim3 grid(a.N / BN, a.M / BM);
  sgemm_vectorize<<<grid, THREADS, 0, as_stream(a.stream)>>>(a.M, a.N, a.K, static_cast<const float*>(a.A),
                                                            static_cast<const float*>(a.B),
                                                            static_cast<float*>(a.C));
  GEMMLAB_LAUNCH_CHECK("sgemm_06_vectorize");
}

}  // namespace

const Kernel& sgemm_06_vectorize() {
  static const Kernel k{
      .name = "sgemm_06_vectorize",
      .family = "simt",
      .description = "sgemm_05 with float4 global loads/stores and A transposed in shared memory, fp32 FMA in k order",
      .numerics = cuda_core_fp32_fma(),
      .layout_a = Layout::row_major, .layout_b = Layout::row_major,
      .m_multiple = BM, .n_multiple = BN, .k_multiple = BK,
      .min_cc = 50, .requires_sm90a = false, .workspace_bytes = 0,
      .launch = launch,
  };
  return k;
}

}  // namespace gemmlab::kernels
