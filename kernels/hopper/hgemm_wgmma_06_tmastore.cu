// hgemm_wgmma_06_tmastore: step 5 of the Hopper series done again, the persistent warp-specialised
// kernel of hgemm_wgmma_04_persistent with an asynchronous TMA-store epilogue.
//
// Why: C is fp32, so a (128, 256) tile is 128 KB of output. In step 4 the consumers write it with
// st.global straight from the accumulator fragments; the blocks run in lock-step waves, so all 132
// SMs write their 17 MB at the same moment and the consumers (and the tensor cores) wait for the
// stores to drain, a few microseconds per ~45 us tile. Here each consumer warpgroup copies its
// (64, 256) fragment through two 8 KB staging buffers of (64, 32) fp32 in shared memory (128-byte
// swizzle: conflict-free fragment writes) and hands each box to the TMA engine
// (cp.async.bulk.tensor store, one bulk async-group per box); it waits only until the box written two
// steps earlier has been *read* out of shared memory (cp.async.bulk.wait_group.read 1), never for the
// global writes, and goes on to the next tile's mainloop while the stores drain. The producer has
// already filled the 4-stage ring with the next tile's first slices during the epilogue (its phases
// run on across tiles). Shared memory: 4 x 48 KB ring + 2 x 2 x 8 KB staging + 2 KB = 226 KB of 227.
//
// Block: warpgroup 0 is the producer (one thread issues TMA loads into the ring of full/empty
// mbarriers; setmaxnreg 40), warpgroups 1 and 2 the consumers (setmaxnreg 232), each a (64, BN) half
// of the (128, BN) tile with wgmma m64nBNk16 and one wgmma group in flight. Persistent: one block per
// SM, tiles in the super_M order of step 4 (SUPER_M in the name).
// Tiles: (128, 256) for in_wgmma; (128, 128) with 6 stages for promoted (two fp32 fragments).
//
// Numerics: unchanged from step 4. fp16/bf16 in (products exact), fp32 out; in_wgmma accumulates
// inside the tensor core (truncating alignment, judged with Rounding::toward_zero); promoted_every_N
// adds every N-element partial sum into fp32 registers with round-to-nearest adds. The TMA store
// copies fp32 bits unchanged. Layouts: A row-major (M, K), B column-major (K, N), both K-major.
//
// NOTES: super_M 16 (8 was no faster). No cluster path here: step 7 is this kernel in clusters of 2;
// both use the shared slice/launch helpers of kernels/common/hopper_tile.cuh.
// Measurements and variants tried: results/hopper/README.md#step-6.
#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include "kernels/common/cuda_check.cuh"
#include "kernels/common/hopper_ptx.cuh"
#include "kernels/common/hopper_tile.cuh"
#include "kernels/kernel.hpp"

namespace gemmlab::kernels {
namespace {

using hopper::CBOX_BYTES;
using hopper::CBOX_COLS;
using hopper::tile_coords;

constexpr int BM = 128;
constexpr int THREADS = 384;       // producer warpgroup + two consumer warpgroups

template <class T, int BN, int STAGES>
struct Shape {
  static constexpr int BK = 128 / int(sizeof(T));  // one 128-byte swizzled row of K per tile row
  static constexpr int A_BYTES = BM * 128, B_BYTES = BN * 128, STAGE_BYTES = A_BYTES + B_BYTES;
  static constexpr int RING_BYTES = STAGES * STAGE_BYTES;
  static constexpr int STAGING_BYTES = 2 /* consumers */ * 2 /* buffers */ * CBOX_BYTES;
  static constexpr int SMEM_BYTES = RING_BYTES + STAGING_BYTES + 1024 /* alignment */ + 1024 /* barriers */;
  static_assert(sizeof(T) == 2, "fp16/bf16 only (k16 wgmma)");
  static_assert(BN == 128 || BN == 256, "one wgmma covers the whole BN of a consumer");
  static_assert(BN % CBOX_COLS == 0, "the epilogue stores whole (64, 32) boxes");
  static_assert(SMEM_BYTES <= 227 * 1024, "shared memory per block on Hopper is 227 KB");
};

template <class T, int BN, int STAGES, int PROMOTE, int SUPER_M>
__global__ void __launch_bounds__(THREADS, 1)
    hgemm_wgmma_tmastore(int M, int N, int K, const __grid_constant__ CUtensorMap mapA,
                         const __grid_constant__ CUtensorMap mapB, const __grid_constant__ CUtensorMap mapC) {
#ifdef GEMMLAB_SM90A_DEVICE
  using namespace gemmlab::hopper;
  using S = Shape<T, BN, STAGES>;
  constexpr int KW = Wgmma<T, BN>::k;
  constexpr int STEPS = S::BK / KW;
  static_assert(PROMOTE == 0 || PROMOTE % KW == 0, "promotion interval must be a multiple of the wgmma K");
  constexpr int PSTEPS = PROMOTE == 0 ? 1 : PROMOTE / KW;

  extern __shared__ unsigned char smem_raw[];
  // Slot s: (128, BK) tile of A then (BN, BK) tile of B^T, K-major, 128B-swizzled, 1024-aligned;
  // then consumer c's two (64, 32) fp32 staging boxes; then the barriers.
  unsigned char* smem = reinterpret_cast<unsigned char*>((reinterpret_cast<std::uintptr_t>(smem_raw) + 1023) & ~std::uintptr_t(1023));
  unsigned char* staging = smem + S::RING_BYTES;
  std::uint64_t* full = reinterpret_cast<std::uint64_t*>(staging + S::STAGING_BYTES);
  std::uint64_t* empty = full + STAGES;

  const int tid = threadIdx.x, wg = tid / 128;
  const int slices = K / S::BK;
  const int tiles_m = M / BM, tiles_n = N / BN;
  const int tiles = tiles_m * tiles_n;

  if (tid == 0) {
    prefetch_tensor_map(&mapA);
    prefetch_tensor_map(&mapB);
    prefetch_tensor_map(&mapC);
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
          load_slice<STAGES, S::STAGE_BYTES, BN, 1>(smem, full, empty, it, &mapA, &mapB, S::A_BYTES, kt * S::BK, tr * BM,
                                                    tc * BN, 0u);
      }
    }
  } else {
    // Consumer warpgroups: rows (wg - 1) * 64 .. + 63 of the block tile.
    setmaxnreg_inc<232>();
    const int c = wg - 1;
    const bool leader = tid % 128 == 0;
    unsigned char* my_stage = staging + c * 2 * CBOX_BYTES;
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
        if (leader && kt > 0) release_slot<1>(empty, (it - 1) % STAGES, 0u);
      }
      wgmma_wait<0>();
      fence_regs(d);
      if (leader) release_slot<1>(empty, (it - 1) % STAGES, 0u);  // the tile's last slice
      if constexpr (PROMOTE == 0) {
        store_tile_tma(d, my_stage, &mapC, tr * BM + c * 64, tc * BN, 1 + c, leader);
      } else {
        if ((slices * STEPS) % PSTEPS != 0) promote_add(p, d);
        store_tile_tma(p, my_stage, &mapC, tr * BM + c * 64, tc * BN, 1 + c, leader);
      }
    }
    if (leader) bulk_wait_group<0>();  // the staging buffers must outlive the last stores
  }
#else
  __trap();  // built without sm_90a: the descriptor says requires_sm90a, so this never launches
#endif
}

template <class T, int BN, int STAGES, int PROMOTE, int SUPER_M>
void launch(const GemmArgs& a) {
  using S = Shape<T, BN, STAGES>;
  const CUtensorMap mapA = hopper::make_kmajor_tensor_map(a.A, a.M, a.K, sizeof(T), BM);
  const CUtensorMap mapB = hopper::make_kmajor_tensor_map(a.B, a.N, a.K, sizeof(T), BN);
  const CUtensorMap mapC = hopper::make_f32_store_tensor_map(a.C, a.M, a.N, 64);
  const int tiles = (a.M / BM) * (a.N / BN);
  // Persistent: one block per SM (at most one per tile).
  hopper::launch_persistent<hgemm_wgmma_tmastore<T, BN, STAGES, PROMOTE, SUPER_M>, 1>(
      "hgemm_wgmma_06_tmastore", THREADS, S::SMEM_BYTES, tiles, tiles, a.stream, a.M, a.N, a.K, mapA, mapB, mapC);
}

template <class T, int BN, int STAGES, int PROMOTE, int SUPER_M>
constexpr Kernel make(const char* name, const char* desc, Format in) {
  return hopper::wgmma_f32_kernel(name, desc, wgmma_f32_numerics(in, PROMOTE), BM, BN, Shape<T, BN, STAGES>::BK, 0,
                                  launch<T, BN, STAGES, PROMOTE, SUPER_M>);
}

}  // namespace

#define GEMMLAB_WGMMA06_VARIANT(id, desc, fmt, T, BN, STAGES, PROMOTE, SUPER_M)                 \
  const Kernel& id() {                                                                     \
    static const Kernel k = make<T, BN, STAGES, PROMOTE, SUPER_M>(#id, desc, Format::fmt);   \
    return k;                                                                              \
  }

GEMMLAB_WGMMA06_VARIANT(hgemm_wgmma_06_tmastore_sm16_fp16_in_wgmma,
                        "persistent producer/consumer, 128x256 tile, 4 stages, super_M 16, TMA-store epilogue, fp32 acc in wgmma",
                        fp16, __half, 256, 4, 0, 16)
GEMMLAB_WGMMA06_VARIANT(hgemm_wgmma_06_tmastore_sm16_bf16_in_wgmma,
                        "persistent producer/consumer, 128x256 tile, 4 stages, super_M 16, TMA-store epilogue, fp32 acc in wgmma",
                        bf16, __nv_bfloat16, 256, 4, 0, 16)
GEMMLAB_WGMMA06_VARIANT(hgemm_wgmma_06_tmastore_sm16_fp16_promoted_every_128k,
                        "persistent producer/consumer, 128x128 tile, 6 stages, super_M 16, TMA-store epilogue, promoted every 128 of K",
                        fp16, __half, 128, 6, 128, 16)
GEMMLAB_WGMMA06_VARIANT(hgemm_wgmma_06_tmastore_sm16_bf16_promoted_every_128k,
                        "persistent producer/consumer, 128x128 tile, 6 stages, super_M 16, TMA-store epilogue, promoted every 128 of K",
                        bf16, __nv_bfloat16, 128, 6, 128, 16)


}  // namespace gemmlab::kernels
