// hgemm_wgmma_11_fp8scaled: scaled fp8 on step 4 of the Hopper series (persistent blocks, TMA ring,
// producer warpgroup + two consumer warpgroups, super_M 8 tile order, 128 x 128 tiles), the kernels
// of the scaled fp8 recipes (reference/scaled_fp8.hpp):
//  * _1x128_128x128: DeepSeek-V3's block scaling, A with one fp32 scale per row and 128 elements of K,
//    B with one per 128 x 128 block. One k-slice of the ring is exactly one 128-element block of K
//    (BK = 128 bytes of e4m3), so each slice is summed by four wgmma m64n128k32 from zero, and then
//    promoted in DeepGEMM's order (deepseek-ai/DeepGEMM, sm90_fp8_gemm_1d2d): the two scales are
//    multiplied first, s = RN_fp32(s_a(row, kb) s_b(kb, nb)), then one FFMA per accumulator,
//    p = RN_fp32(d s + p), with p from +0 and the K blocks in increasing order.
//  * _rowwise: one scale per row of A and per column of B: K blocks of 128 promoted with fp32 adds
//    (p = RN(p + d)) as hgemm_wgmma_04's promoted_every_128k, then the epilogue writes
//    RN_fp32(p RN_fp32(s_a(row) s_b(col))) (the scales multiplied first, as above).
// The scales arrive in kernel_scales' layouts (cuBLASLt's): A's 1 x 128 grid M-contiguous, (row, kb)
// at kb M + row; B's 128 x 128 grid K-contiguous with the K blocks padded to L4 = a multiple of 4,
// (kb, nb) at nb L4 + kb. The producer brings each slice's scales into shared memory with the slice
// itself (two TMA bulk copies on the slot's full barrier: the tile's 128 scales of A at that K block,
// and the 16-byte group of B's grid holding its scale), so a consumer reads them from shared memory
// after the slot's barrier (rows r and r + 8 of its warpgroup's 64: the wgmma fragment layout).
// NOTES (H100, 2026-11-24, TFLOP/s at 4096^3 / 8192x8192x7168, cuBLASLt VEC128 x BLK128x128 at
// 1,163 / 1,283 in the same runs): scales read with __ldg from L2 every K block, even one block
// ahead: 810-833 / 806-909; from shared memory as here: 974 / 1,044-1,048. Slower, measured and
// dropped: two wgmma fragments per consumer, block i + 1 issued before block i is promoted (865 /
// 964); clusters of 2 with B multicast as step 7 (882 / 969-996); the two consumers issuing each
// block's wgmmas in turn through named barriers (931 / 1,004). The rowwise kernel reaches 0.95x /
// 0.98x of cuBLASLt's rowwise mode; the block-scaled one 0.84x / 0.82x (issue 22's target is 1.0x).
// K: any multiple of 16 (a TMA row must be a multiple of 16 bytes). The last K block may be partial:
// TMA fills the part beyond K with zeros, which add nothing, and the block has its own scale.
//
// Numerics: e4m3 products exact; within a K block the wgmma accumulator keeps about 13 fraction
// bits (wgmma_f32_numerics(e4m3, 128): promoted every 128, Rounding::toward_zero, u = 2^-13); the
// promotion is one fp32 round-to-nearest FFMA per block (one fp32 add for _rowwise) after one fp32
// product of the scales. Judged against the exact product of the dequantized operands.
// Layouts: A row-major (M, K), B column-major (K, N): both K-major, which fp8 wgmma requires.
#include <cuda_fp8.h>

#include "kernels/common/cuda_check.cuh"
#include "kernels/common/hopper_ptx.cuh"
#include "kernels/common/hopper_tile.cuh"
#include "kernels/common/per_device.cuh"
#include "kernels/kernel.hpp"

namespace gemmlab::kernels {
namespace {

using T = __nv_fp8_e4m3;
constexpr int BM = 128, BN = 128, BK = 128;  // BK: one 128-byte swizzled row of e4m3 = one scale block of K
constexpr int STAGES = 6;
constexpr int SUPER_M = 8;
constexpr int THREADS = 384;  // producer warpgroup + two consumer warpgroups
constexpr int A_BYTES = BM * BK, B_BYTES = BN * BK, STAGE_BYTES = A_BYTES + B_BYTES;
// Per slot, beside the ring: the slice's scales of A (BM floats: the tile's rows at its K block) and
// the 16 bytes of B's scale grid that hold its scale (4 K blocks of the tile column).
constexpr int SA_BYTES = BM * 4, SB_BYTES = 16, SCALE_SLOT = SA_BYTES + 128;
static_assert(SB_BYTES <= SCALE_SLOT - SA_BYTES && SCALE_SLOT % 128 == 0, "a slot's scales: A's, then B's 16 bytes");
constexpr int SMEM_BYTES = STAGES * STAGE_BYTES + STAGES * SCALE_SLOT + 1024 /* alignment */ + 1024 /* barriers */;
static_assert(SMEM_BYTES <= 227 * 1024, "shared memory per block on Hopper is 227 KB");
static_assert(BN == 128, "one 128 x 128 scale block of B per tile column: the scale of B is one value per slice");

enum class Scaling { block_1x128_128x128, rowwise };

template <Scaling SC>
__global__ void __launch_bounds__(THREADS, 1)
    hgemm_wgmma_fp8scaled(int M, int N, int K, const __grid_constant__ CUtensorMap mapA,
                          const __grid_constant__ CUtensorMap mapB, const float* __restrict__ scale_a,
                          const float* __restrict__ scale_b, float* __restrict__ C) {
#ifdef GEMMLAB_SM90A_DEVICE
  using namespace gemmlab::hopper;
  constexpr int KW = Wgmma<T, BN>::k;  // 32
  constexpr int STEPS = BK / KW;       // 4 wgmmas per K block
  constexpr bool BLOCK = SC == Scaling::block_1x128_128x128;
  constexpr int TX_BYTES = STAGE_BYTES + (BLOCK ? SA_BYTES + SB_BYTES : 0);

  extern __shared__ unsigned char smem_raw[];
  // Slot s: (128, BK) tile of A then (BN, BK) tile of B^T, K-major, 128B-swizzled, 1024-aligned;
  // then the slots' scales; then the barriers.
  unsigned char* smem = reinterpret_cast<unsigned char*>((reinterpret_cast<std::uintptr_t>(smem_raw) + 1023) & ~std::uintptr_t(1023));
  unsigned char* scales = smem + STAGES * STAGE_BYTES;
  std::uint64_t* full = reinterpret_cast<std::uint64_t*>(scales + STAGES * SCALE_SLOT);
  std::uint64_t* empty = full + STAGES;

  const int tid = threadIdx.x, wg = tid / 128;
  const int slices = (K + BK - 1) / BK;  // the last one partial when K % 128 != 0
  const int l4 = (slices + 3) / 4 * 4;   // B's padded K-block stride
  const int tiles_m = M / BM, tiles_n = N / BN;
  const int items = tiles_m * tiles_n;
  auto coords = [&](int item, int& tr, int& tc) { tile_coords<SUPER_M>(item, tiles_m, tiles_n, tr, tc); };

  if (tid == 0) {
    prefetch_tensor_map(&mapA);
    prefetch_tensor_map(&mapB);
    for (int s = 0; s < STAGES; ++s) {
      mbar_init(&full[s], 1);              // the producer's arrive.expect_tx, then the TMA bytes
      mbar_init(&empty[s], 2);   // one arrive per consumer warpgroup
    }
    mbar_fence_init();
  }
  __syncthreads();

  if (wg == 0) {
    setmaxnreg_dec<40>();
    if (tid == 0) {
      int it = 0;  // slices issued so far, over all tiles: the ring's position and phase
      for (int item = int(blockIdx.x); item < items; item += gridDim.x) {
        int tr, tc;
        coords(item, tr, tc);
        for (int kt = 0; kt < slices; ++kt, ++it) {
          const int s = it % STAGES;
          if (it >= STAGES) mbar_wait(&empty[s], ((it / STAGES) - 1) & 1);  // consumers freed the slot
          unsigned char* slot = smem + s * STAGE_BYTES;
          mbar_arrive_expect_tx(&full[s], TX_BYTES);
          tma_load_2d(slot, &mapA, &full[s], kt * BK, tr * BM);
          tma_load_2d(slot + A_BYTES, &mapB, &full[s], kt * BK, tc * BN);
          if constexpr (BLOCK) {
            unsigned char* sc = scales + s * SCALE_SLOT;
            bulk_load_1d(sc, scale_a + std::size_t(kt) * M + std::size_t(tr) * BM, SA_BYTES, &full[s]);
            bulk_load_1d(sc + SA_BYTES, scale_b + std::size_t(tc) * l4 + (kt & ~3), SB_BYTES, &full[s]);
          }
        }
      }
    }
  } else {
    setmaxnreg_inc<232>();
    const int c = wg - 1;
    const bool leader = tid % 128 == 0;
    const int t = tid % 128, w = t / 32, l = t % 32;
    const int r_in = c * 64 + 16 * w + l / 4;  // this thread's first row in the tile (the second: + 8)
    float p[BN / 2];  // fp32 sums of the scaled blocks of the current tile
#pragma unroll
    for (int i = 0; i < BN / 2; ++i) p[i] = 0.0f;
    // Slice `it` (K block kt of the tile) is in slot it % STAGES once its full barrier flips.
    auto wait_slot = [&](int it) { mbar_wait(&full[it % STAGES], (it / STAGES) & 1); };
    auto slice_scales = [&](int it, int kt, float& sa0, float& sa1, float& sb) {
      if constexpr (BLOCK) {
        const float* sc = reinterpret_cast<const float*>(scales + (it % STAGES) * SCALE_SLOT);
        sa0 = sc[r_in];
        sa1 = sc[r_in + 8];
        sb = sc[SA_BYTES / 4 + (kt & 3)];
      }
    };
    auto issue = [&](float(&d)[BN / 2], int it) {
      const int s = it % STAGES;
      wgmma_slice<T, BN, STEPS>(d, smem + s * STAGE_BYTES + c * 64 * BK, smem + s * STAGE_BYTES + A_BYTES, false);
    };
    // Block in fragment d is done (its wgmma group waited for): free its slot, promote it.
    auto promote = [&](float(&d)[BN / 2], int it, float sa0, float sa1, float sb) {
      fence_regs(d);
      if (leader) mbar_arrive(&empty[it % STAGES]);  // the slot is read: the producer may refill it
      if constexpr (BLOCK) {
        // NOTES: DeepGEMM's order: the scale product rounded first, then one FFMA per entry.
        const float s0 = __fmul_rn(sa0, sb), s1 = __fmul_rn(sa1, sb);
#pragma unroll
        for (int j = 0; j < BN / 8; ++j) {
          p[4 * j + 0] = __fmaf_rn(d[4 * j + 0], s0, p[4 * j + 0]);
          p[4 * j + 1] = __fmaf_rn(d[4 * j + 1], s0, p[4 * j + 1]);
          p[4 * j + 2] = __fmaf_rn(d[4 * j + 2], s1, p[4 * j + 2]);
          p[4 * j + 3] = __fmaf_rn(d[4 * j + 3], s1, p[4 * j + 3]);
        }
      } else {
        promote_add(p, d);
      }
    };
    // After a tile's last block: the rowwise scales, then the store; p restarts.
    auto finish_tile = [&](int tr, int tc) {
      const int row0 = tr * BM + r_in;
      if constexpr (SC == Scaling::rowwise) {
        const float ra0 = __ldg(scale_a + row0), ra1 = __ldg(scale_a + row0 + 8);
#pragma unroll
        for (int j = 0; j < BN / 8; ++j) {
          const int col = tc * BN + 8 * j + 2 * (l % 4);
          const float sb0 = __ldg(scale_b + col), sb1 = __ldg(scale_b + col + 1);
          p[4 * j + 0] = __fmul_rn(p[4 * j + 0], __fmul_rn(ra0, sb0));
          p[4 * j + 1] = __fmul_rn(p[4 * j + 1], __fmul_rn(ra0, sb1));
          p[4 * j + 2] = __fmul_rn(p[4 * j + 2], __fmul_rn(ra1, sb0));
          p[4 * j + 3] = __fmul_rn(p[4 * j + 3], __fmul_rn(ra1, sb1));
        }
      }
      store_fragment(C + std::size_t(tr * BM + c * 64) * N + std::size_t(tc) * BN, N, p);
#pragma unroll
      for (int i = 0; i < BN / 2; ++i) p[i] = 0.0f;
    };
    float d[BN / 2];  // (64, BN) wgmma fragment: one K block, from zero
    int it = 0;
    for (int item = int(blockIdx.x); item < items; item += gridDim.x) {
      int tr, tc;
      coords(item, tr, tc);
      for (int kt = 0; kt < slices; ++kt, ++it) {
        float sa0 = 1.0f, sa1 = 1.0f, sb = 1.0f;
        wait_slot(it);
        slice_scales(it, kt, sa0, sa1, sb);
        issue(d, it);
        wgmma_wait<0>();
        promote(d, it, sa0, sa1, sb);
      }
      finish_tile(tr, tc);
    }
  }
#else
  __trap();  // built without sm_90a: the descriptor says requires_sm90a, so this never launches
#endif
}

template <Scaling SC>
void launch(const GemmArgs& a) {
  if (!a.scale_a || !a.scale_b) throw std::runtime_error("hgemm_wgmma_11_fp8scaled: the harness passed no scale grids");
  if (reinterpret_cast<std::uintptr_t>(a.scale_a) % 16 || reinterpret_cast<std::uintptr_t>(a.scale_b) % 16)
    throw std::runtime_error("hgemm_wgmma_11_fp8scaled: the scale grids must start on 16-byte boundaries (TMA bulk copies)");
  const CUtensorMap mapA = hopper::make_kmajor_tensor_map(a.A, a.M, a.K, 1, BM);
  const CUtensorMap mapB = hopper::make_kmajor_tensor_map(a.B, a.N, a.K, 1, BN);
  const int items = (a.M / BM) * (a.N / BN);
  hopper::launch_persistent<hgemm_wgmma_fp8scaled<SC>, 1>(
      "hgemm_wgmma_11_fp8scaled", THREADS, SMEM_BYTES, items, items, a.stream, a.M, a.N, a.K, mapA, mapB, a.scale_a,
      a.scale_b, static_cast<float*>(a.C));
}

template <Scaling SC>
constexpr Kernel make(const char* name, const char* desc) {
  return Kernel{
      .name = name, .family = "hopper", .description = desc,
      .numerics = [] {
        Numerics n = wgmma_f32_numerics(Format::e4m3, 128);
        n.scale_application = SC == Scaling::rowwise ? ScaleApplication::epilogue : ScaleApplication::block_fma;
        return n;
      }(),
      .layout_a = Layout::row_major, .layout_b = Layout::col_major,
      .m_multiple = BM, .n_multiple = BN, .k_multiple = 16,
      .min_cc = 90, .requires_sm90a = true, .workspace_bytes = 0,
      .launch = launch<SC>,
      .scale_a = SC == Scaling::rowwise ? ScaleGranularity::outer : ScaleGranularity::k128,
      .scale_b = SC == Scaling::rowwise ? ScaleGranularity::outer : ScaleGranularity::blk128,
  };
}

}  // namespace

const Kernel& hgemm_wgmma_11_fp8scaled_sm8_e4m3_1x128_128x128() {
  static const Kernel k = make<Scaling::block_1x128_128x128>(
      "hgemm_wgmma_11_fp8scaled_sm8_e4m3_1x128_128x128",
      "fp8 e4m3, A 1x128 / B 128x128 fp32 scales, promoted every 128 of K by one FFMA with the scale product "
      "(DeepGEMM's order), persistent, 128x128 tile");
  return k;
}
const Kernel& hgemm_wgmma_11_fp8scaled_sm8_e4m3_rowwise() {
  static const Kernel k = make<Scaling::rowwise>(
      "hgemm_wgmma_11_fp8scaled_sm8_e4m3_rowwise",
      "fp8 e4m3, rowwise A / columnwise B fp32 scales applied in the epilogue, promoted every 128 of K, persistent");
  return k;
}

}  // namespace gemmlab::kernels
