// hgemm_wgmma_04_persistent: step 4 of the Hopper series, persistent blocks. The warp-specialised
// block of hgemm_wgmma_03_pipelined (below), launched once per SM and looping over output tiles in
// the CTA-swizzled order of the ThunderKittens review: tiles are taken in groups of SUPER_M tile rows,
// column by column inside a group (row = (id / super_repeat) * SUPER_M + id % SUPER_M,
// col = (id % super_repeat) / SUPER_M with super_repeat = SUPER_M * tiles_n; the last group, when the
// number of tile rows is not a multiple of SUPER_M, uses its actual height), so the blocks running at
// one time share rows of A and columns of B in L2. The producer runs ahead across tile boundaries
// (the ring's phases continue over tiles), so the next tile's loads overlap this tile's epilogue.
// SUPER_M is in the name (sm8). fp8 (e4m3, e5m2) variants live here too, as this is the fastest step.
//
// From step 3: a block of three
// warpgroups: warpgroup 0 is the producer (one thread issues TMA into an N-stage ring of shared-memory
// slots, each with a `full` mbarrier armed with the expected transaction bytes and an `empty` mbarrier
// the consumers arrive on when they are done with the slot); warpgroups 1 and 2 are consumers, each
// computing a (64, BN) half of the (128, BN) block tile with wgmma m64nBNk16. setmaxnreg moves
// registers from the producer (40) to the consumers (232). Consumers keep one wgmma group in flight
// (wait_group 1) and release the previous slot as soon as it has been read.
// Tiles: (128, 256) for in_wgmma; (128, 128) for promoted (the promoted sums double the accumulator
// registers, and 2 x 128 fp32 fragments would not fit in 255 registers).
//
// Numerics: fp16/bf16 in (products exact), fp32 out; in_wgmma truncates inside the tensor core,
// promoted_every_N adds every N-element partial sum into fp32 registers with round-to-nearest adds.
// Judged with Rounding::toward_zero. fp8 (e4m3/e5m2, wgmma k32): products are exact too, but the
// Hopper tensor core keeps only about 13 fraction bits when it aligns the terms of fp8 wgmma
// (Khattak & Mikaitis: neab -10; DeepSeek-V3: ~14 bits), so the fp8 variants declare
// acc_unit_roundoff = 2^-13 instead of fp32's 2^-24: their bound is honest and much looser, and the
// promoted variants (DeepSeek-V3's fix, N_C = 128) are what brings the error back toward fp32's.
// Layouts: A row-major (M, K), B column-major (K, N): both K-major, which fp8 wgmma requires.
#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_fp8.h>

#include "kernels/common/cuda_check.cuh"
#include "kernels/common/per_device.cuh"
#include "kernels/common/hopper_ptx.cuh"
#include "kernels/common/hopper_tile.cuh"
#include "kernels/kernel.hpp"

namespace gemmlab::kernels {
namespace {

constexpr int BM = 128;
constexpr int THREADS = 384;  // producer warpgroup + two consumer warpgroups

template <class T, int BN, int STAGES>
struct Shape {
  static constexpr int BK = 128 / int(sizeof(T));  // one 128-byte swizzled row of K per tile row
  static constexpr int A_BYTES = BM * 128, B_BYTES = BN * 128, STAGE_BYTES = A_BYTES + B_BYTES;
  static constexpr int SMEM_BYTES = STAGES * STAGE_BYTES + 1024 /* alignment */ + 1024 /* barriers */;
  static_assert(BN == 128 || BN == 256, "one wgmma covers the whole BN of a consumer");
  static_assert(SMEM_BYTES <= 227 * 1024, "shared memory per block on Hopper is 227 KB");
};

// The super_M tile order of this step (tile `id` -> (tile row, tile column)) is hopper::tile_coords in
// kernels/common/hopper_tile.cuh, shared with steps 5-10.
using hopper::tile_coords;

template <class T, int BN, int STAGES, int PROMOTE, int SUPER_M>
__global__ void __launch_bounds__(THREADS, 1)
    hgemm_wgmma_persistent(int M, int N, int K, const __grid_constant__ CUtensorMap mapA,
                          const __grid_constant__ CUtensorMap mapB, float* __restrict__ C) {
#ifdef GEMMLAB_SM90A_DEVICE
  using namespace gemmlab::hopper;
  using S = Shape<T, BN, STAGES>;
  constexpr int KW = Wgmma<T, BN>::k;
  constexpr int STEPS = S::BK / KW;
  static_assert(PROMOTE == 0 || PROMOTE % KW == 0, "promotion interval must be a multiple of the wgmma K");
  constexpr int PSTEPS = PROMOTE == 0 ? 1 : PROMOTE / KW;

  extern __shared__ unsigned char smem_raw[];
  // Slot s: (128, BK) tile of A then (BN, BK) tile of B^T, K-major, 128B-swizzled, 1024-aligned.
  unsigned char* smem = reinterpret_cast<unsigned char*>((reinterpret_cast<std::uintptr_t>(smem_raw) + 1023) & ~std::uintptr_t(1023));
  std::uint64_t* full = reinterpret_cast<std::uint64_t*>(smem + STAGES * S::STAGE_BYTES);
  std::uint64_t* empty = full + STAGES;

  const int tid = threadIdx.x, wg = tid / 128;
  const int slices = K / S::BK;
  const int tiles_m = M / BM, tiles_n = N / BN, tiles = tiles_m * tiles_n;

  if (tid == 0) {
    prefetch_tensor_map(&mapA);
    prefetch_tensor_map(&mapB);
    for (int s = 0; s < STAGES; ++s) {
      mbar_init(&full[s], 1);   // the producer's arrive.expect_tx, then the TMA bytes
      mbar_init(&empty[s], 2);  // one arrive per consumer warpgroup
    }
    mbar_fence_init();
  }
  __syncthreads();

  if (wg == 0) {
    // Producer warpgroup: give registers away, one thread issues every copy.
    setmaxnreg_dec<40>();
    if (tid == 0) {
      int it = 0;  // slices issued so far, over all tiles: the ring's position and phase
      for (int tile = blockIdx.x; tile < tiles; tile += gridDim.x) {
        int tr, tc;
        tile_coords<SUPER_M>(tile, tiles_m, tiles_n, tr, tc);
        for (int kt = 0; kt < slices; ++kt, ++it)
          load_slice<STAGES, S::STAGE_BYTES, BN, 1>(smem, full, empty, it, &mapA, &mapB, S::A_BYTES, kt * S::BK,
                                                    tr * BM, tc * BN, 0u);
      }
    }
  } else {
    // Consumer warpgroups: rows (wg - 1) * 64 .. + 63 of the block tile.
    setmaxnreg_inc<232>();
    const int c = wg - 1;
    const bool leader = tid % 128 == 0;
    float d[BN / 2];  // (64, BN) accumulator fragment
    float p[BN / 2];  // promoted fp32 sums (unused for in_wgmma)
    int it = 0;       // slices consumed so far, over all tiles
    for (int tile = blockIdx.x; tile < tiles; tile += gridDim.x) {
      int tr, tc;
      tile_coords<SUPER_M>(tile, tiles_m, tiles_n, tr, tc);
      if constexpr (PROMOTE != 0) {
#pragma unroll
        for (int i = 0; i < BN / 2; ++i) p[i] = 0.0f;
      }
      for (int kt = 0; kt < slices; ++kt, ++it) {
        const int s = it % STAGES;
        mbar_wait(&full[s], (it / STAGES) & 1);
        const unsigned char* sA = smem + s * S::STAGE_BYTES + c * 64 * 128;
        const unsigned char* sB = smem + s * S::STAGE_BYTES + S::A_BYTES;
        wgmma_slice_mode<T, BN, STEPS, PROMOTE == 0 ? 0 : PSTEPS>(d, p, sA, sB, kt);
        wgmma_wait<1>();  // the group of the previous slice is done: release its slot
        if (leader && kt > 0) mbar_arrive(&empty[(it - 1) % STAGES]);
      }
      wgmma_wait<0>();
      fence_regs(d);
      if (leader) mbar_arrive(&empty[(it - 1) % STAGES]);  // the tile's last slice
      float* cp = C + std::size_t(tr * BM + c * 64) * N + std::size_t(tc) * BN;
      if constexpr (PROMOTE == 0) {
        store_fragment(cp, N, d);
      } else {
        if ((slices * STEPS) % PSTEPS != 0) promote_add(p, d);
        store_fragment(cp, N, p);
      }
    }
  }
#else
  __trap();  // built without sm_90a: the descriptor says requires_sm90a, so this never launches
#endif
}

template <class T, int BN, int STAGES, int PROMOTE, int SUPER_M>
void launch(const GemmArgs& a) {
  using S = Shape<T, BN, STAGES>;
  static PerDevice<bool> attr_set;  // once per GPU: the attribute belongs to the current device
  attr_set.get([] {
    GEMMLAB_CUDA_CHECK(cudaFuncSetAttribute(hgemm_wgmma_persistent<T, BN, STAGES, PROMOTE, SUPER_M>,
                                            cudaFuncAttributeMaxDynamicSharedMemorySize, S::SMEM_BYTES));
    return true;
  });
  const CUtensorMap mapA = hopper::make_kmajor_tensor_map(a.A, a.M, a.K, sizeof(T), BM);
  const CUtensorMap mapB = hopper::make_kmajor_tensor_map(a.B, a.N, a.K, sizeof(T), BN);
  const int tiles = (a.M / BM) * (a.N / BN);
  const int grid = tiles < hopper::sm_count() ? tiles : hopper::sm_count();  // one block per SM
  hgemm_wgmma_persistent<T, BN, STAGES, PROMOTE, SUPER_M><<<grid, THREADS, S::SMEM_BYTES, as_stream(a.stream)>>>(
      a.M, a.N, a.K, mapA, mapB, static_cast<float*>(a.C));
  GEMMLAB_LAUNCH_CHECK("hgemm_wgmma_04_persistent");
}

template <class T, int BN, int STAGES, int PROMOTE, int SUPER_M>
constexpr Kernel make(const char* name, const char* desc, Format in) {
  return Kernel{
      .name = name, .family = "hopper", .description = desc,
      .numerics = wgmma_f32_numerics(in, PROMOTE),
      .layout_a = Layout::row_major, .layout_b = Layout::col_major,
      .m_multiple = BM, .n_multiple = BN, .k_multiple = Shape<T, BN, STAGES>::BK,
      .min_cc = 90, .requires_sm90a = true, .workspace_bytes = 0,
      .launch = launch<T, BN, STAGES, PROMOTE, SUPER_M>,
  };
}

}  // namespace

#define GEMMLAB_WGMMA04_VARIANT_SM(id, desc, fmt, T, BN, STAGES, PROMOTE, SUPER_M)         \
  const Kernel& id() {                                                                   \
    static const Kernel k = make<T, BN, STAGES, PROMOTE, SUPER_M>(#id, desc, Format::fmt); \
    return k;                                                                            \
  }
#define GEMMLAB_WGMMA04_VARIANT(id, desc, fmt, T, BN, STAGES, PROMOTE) \
  GEMMLAB_WGMMA04_VARIANT_SM(id, desc, fmt, T, BN, STAGES, PROMOTE, 8)

GEMMLAB_WGMMA04_VARIANT_SM(hgemm_wgmma_04_persistent_sm16_fp16_in_wgmma,
                           "persistent producer/consumer, 128x256 tile, 4 stages, super_M 16 tile order, fp32 acc in wgmma",
                           fp16, __half, 256, 4, 0, 16)
GEMMLAB_WGMMA04_VARIANT_SM(hgemm_wgmma_04_persistent_sm16_bf16_in_wgmma,
                           "persistent producer/consumer, 128x256 tile, 4 stages, super_M 16 tile order, fp32 acc in wgmma",
                           bf16, __nv_bfloat16, 256, 4, 0, 16)

GEMMLAB_WGMMA04_VARIANT(hgemm_wgmma_04_persistent_sm8_fp16_in_wgmma,
                        "persistent producer/consumer, 128x256 tile, 4 stages, super_M 8 tile order, fp32 acc in wgmma",
                        fp16, __half, 256, 4, 0)
GEMMLAB_WGMMA04_VARIANT(hgemm_wgmma_04_persistent_sm8_bf16_in_wgmma,
                        "persistent producer/consumer, 128x256 tile, 4 stages, super_M 8 tile order, fp32 acc in wgmma",
                        bf16, __nv_bfloat16, 256, 4, 0)
GEMMLAB_WGMMA04_VARIANT(hgemm_wgmma_04_persistent_sm8_fp16_promoted_every_128k,
                        "persistent producer/consumer, 128x128 tile, 6 stages, super_M 8, promoted every 128 of K",
                        fp16, __half, 128, 6, 128)
GEMMLAB_WGMMA04_VARIANT(hgemm_wgmma_04_persistent_sm8_bf16_promoted_every_128k,
                        "persistent producer/consumer, 128x128 tile, 6 stages, super_M 8, promoted every 128 of K",
                        bf16, __nv_bfloat16, 128, 6, 128)
GEMMLAB_WGMMA04_VARIANT(hgemm_wgmma_04_persistent_sm8_e4m3_in_wgmma,
                        "fp8 e4m3 wgmma k32, persistent, 128x256 tile, super_M 8, acc in wgmma (~13-bit alignment)",
                        e4m3, __nv_fp8_e4m3, 256, 4, 0)
GEMMLAB_WGMMA04_VARIANT(hgemm_wgmma_04_persistent_sm8_e4m3_promoted_every_32k,
                        "fp8 e4m3, persistent, 128x128 tile, promoted to fp32 registers every 32 of K",
                        e4m3, __nv_fp8_e4m3, 128, 6, 32)
GEMMLAB_WGMMA04_VARIANT(hgemm_wgmma_04_persistent_sm8_e4m3_promoted_every_64k,
                        "fp8 e4m3, persistent, 128x128 tile, promoted to fp32 registers every 64 of K",
                        e4m3, __nv_fp8_e4m3, 128, 6, 64)
GEMMLAB_WGMMA04_VARIANT(hgemm_wgmma_04_persistent_sm8_e4m3_promoted_every_128k,
                        "fp8 e4m3, persistent, 128x128 tile, promoted to fp32 registers every 128 of K (DeepSeek-V3)",
                        e4m3, __nv_fp8_e4m3, 128, 6, 128)
GEMMLAB_WGMMA04_VARIANT(hgemm_wgmma_04_persistent_sm8_e4m3_promoted_every_256k,
                        "fp8 e4m3, persistent, 128x128 tile, promoted to fp32 registers every 256 of K",
                        e4m3, __nv_fp8_e4m3, 128, 6, 256)
GEMMLAB_WGMMA04_VARIANT(hgemm_wgmma_04_persistent_sm8_e4m3_promoted_every_512k,
                        "fp8 e4m3, persistent, 128x128 tile, promoted to fp32 registers every 512 of K",
                        e4m3, __nv_fp8_e4m3, 128, 6, 512)
GEMMLAB_WGMMA04_VARIANT(hgemm_wgmma_04_persistent_sm8_e5m2_in_wgmma,
                        "fp8 e5m2 wgmma k32, persistent, 128x256 tile, super_M 8, acc in wgmma (~13-bit alignment)",
                        e5m2, __nv_fp8_e5m2, 256, 4, 0)
GEMMLAB_WGMMA04_VARIANT(hgemm_wgmma_04_persistent_sm8_e5m2_promoted_every_128k,
                        "fp8 e5m2, persistent, 128x128 tile, promoted to fp32 registers every 128 of K",
                        e5m2, __nv_fp8_e5m2, 128, 6, 128)

}  // namespace gemmlab::kernels
