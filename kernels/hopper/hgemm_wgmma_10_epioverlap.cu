// hgemm_wgmma_10_epioverlap: step 10 of the Hopper series, step 7 (clusters of two blocks along M with
// TMA multicast of B, persistent warp-specialised producer/consumer, (128, 256) tiles, 4-stage ring,
// TMA-store epilogue) with HALF OF EACH TILE'S EPILOGUE OVERLAPPED WITH THE NEXT TILE'S MAINLOOP.
//
// Why: step 7's epilogue is exposed, and none of barrier cost, boxes in flight, direct stores or a
// chip-wide write burst explained it (results/hopper/README.md#step-7): 128 KB of fp32 per tile
// leave each SM at its own store rate while the tensor cores wait, because the fp32 accumulators
// are needed by the next tile's first wgmma and the 16 KB of staging per warpgroup holds only a
// quarter of a warpgroup's 64 KB. Here each consumer warpgroup, once its tile's last wgmma is done,
// stores columns 0..127 of its (64, 256) fragment through the staging buffers as before (4 boxes of
// (64, 32)), COPIES columns 128..255 into 64 spare registers per thread (128 accumulators + 64
// stash + addresses fit the 232 registers that setmaxnreg gives a consumer; ptxas: no spill, wgmmas
// not serialised), and starts the next tile at once; the stashed boxes go out during that tile's
// mainloop, one after each of its slices 3, 7, 11 and 15, between the wgmma wait and the next
// full-barrier wait, while the tensor cores work. The exposed part of the epilogue halves.
//
// Schedule per consumer warpgroup: slices of tile t (wgmma, release) with stash box q of tile t - 1
// stored after slice 4q + 3 (SPACING = 4: after slices 3, 7, 11, 15); then, at the end of tile t: any
// stash boxes still pending (K < 16 slices), boxes 0..3 of tile t from the accumulators, the copy,
// and tile t + 1. After the last tile the stash is flushed. Boxes alternate between the warpgroup's
// two staging buffers in one sequence (0, 1, 0, 1, ... over boxes 0..3 then stash boxes 0..3), so
// the wait in store_box_tma (at most one group still reading shared memory) always guards the
// buffer about to be reused.
//
// Numerics: identical to steps 4, 6, 7 and 9 for every output entry (tested bit for bit against step
// 7): fp16/bf16 products exact, the K/16 k-steps accumulated in increasing k inside the wgmma
// accumulator (in_wgmma, truncating alignment), fp32 out through the TMA store; the stash is a
// register copy of the accumulator, bits unchanged. Layouts: A row-major (M, K), B column-major
// (K, N), both K-major, 128-byte swizzle. Registered in_wgmma only: a promoted_every_N variant needs
// a second (64, 256) fp32 fragment (128 registers) beside the accumulator, which leaves no room for
// the 64-register stash (step 4 carries the promoted and fp8 variants).
//
// NOTES: the stash boxes go out 4 slices apart (SPACING = 4), through the staging buffers and the TMA
// store: after every slice or every second slice, or by st.global straight from the registers (the
// uncoalesced 8-byte stores of the fragment layout), they were slower. The overlap buys less than
// half of the epilogue's share; a likely reason (not profiled) is that the staging traffic uses the
// shared-memory bandwidth that the wgmmas' operand reads need. Measurements:
// results/hopper/README.md#step-10.
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
constexpr int BN = 256;
constexpr int CLUSTER = 2;         // blocks per cluster, along M
constexpr int THREADS = 384;       // producer warpgroup + two consumer warpgroups
constexpr int HALF = BN / 2 / CBOX_COLS;  // 4 boxes of (64, 32) per half of a warpgroup's (64, 256) tile
constexpr int SPACING = 4;         // a stash box after k-slices 3, 7, 11, 15 of the next tile

template <class T, int STAGES>
struct Shape {
  static constexpr int BK = 128 / int(sizeof(T));  // one 128-byte swizzled row of K per tile row
  static constexpr int A_BYTES = BM * 128, B_BYTES = BN * 128, STAGE_BYTES = A_BYTES + B_BYTES;
  static constexpr int RING_BYTES = STAGES * STAGE_BYTES;
  static constexpr int STAGING_BYTES = 2 /* consumers */ * 2 /* buffers */ * CBOX_BYTES;
  static constexpr int SMEM_BYTES = RING_BYTES + STAGING_BYTES + 1024 /* alignment */ + 1024 /* barriers */;
  static_assert(sizeof(T) == 2, "fp16/bf16 only (k16 wgmma)");
  static_assert(BN == 2 * HALF * CBOX_COLS, "a warpgroup's fragment is two halves of HALF boxes");
  static_assert(SMEM_BYTES <= 227 * 1024, "shared memory per block on Hopper is 227 KB");
};

template <class T, int STAGES, int SUPER_M>
__global__ void __launch_bounds__(THREADS, 1)
    hgemm_wgmma_10(int M, int N, int K, const __grid_constant__ CUtensorMap mapA,
                   const __grid_constant__ CUtensorMap mapB, const __grid_constant__ CUtensorMap mapC) {
#ifdef GEMMLAB_SM90A_DEVICE
  using namespace gemmlab::hopper;
  using S = Shape<T, STAGES>;
  constexpr int STEPS = S::BK / Wgmma<T, BN>::k;

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
  const int items = (tiles_m / CLUSTER) * tiles_n;  // (256, 256) cluster tiles
  const unsigned rank = cluster_ctarank();
  const int first_item = int(cluster_id_x());
  const int item_step = int(cluster_count_x());

  if (tid == 0) {
    prefetch_tensor_map(&mapA);
    prefetch_tensor_map(&mapB);
    prefetch_tensor_map(&mapC);
    for (int s = 0; s < STAGES; ++s) {
      mbar_init(&full[s], 1);             // the producer's arrive.expect_tx, then the TMA bytes
      mbar_init(&empty[s], 2 * CLUSTER);  // one arrive per consumer warpgroup of each block
    }
    mbar_fence_init();
  }
  cluster_sync();  // the partner's barriers exist before any multicast or remote arrive

  if (wg == 0) {
    // Producer warpgroup (as step 7): give registers away, one thread issues every copy.
    setmaxnreg_dec<40>();
    if (tid == 0) {
      int it = 0;  // slices issued so far, over all tiles: the ring's position and phase
      for (int item = first_item; item < items; item += item_step) {
        int tr, tc;
        tile_coords<SUPER_M / CLUSTER>(item, tiles_m / CLUSTER, tiles_n, tr, tc);
        tr = CLUSTER * tr + int(rank);
        for (int kt = 0; kt < slices; ++kt, ++it)
          load_slice<STAGES, S::STAGE_BYTES, BN, CLUSTER>(smem, full, empty, it, &mapA, &mapB, S::A_BYTES, kt * S::BK,
                                                          tr * BM, tc * BN, rank);
      }
    }
  } else {
    // Consumer warpgroups: rows (wg - 1) * 64 .. + 63 of the block tile.
    setmaxnreg_inc<232>();
    const int c = wg - 1;
    const bool leader = tid % 128 == 0;
    unsigned char* my_stage = staging + c * 2 * CBOX_BYTES;
    float d[BN / 2];      // (64, BN) accumulator fragment
    float stash[BN / 4];  // columns BN/2 .. BN - 1 of the previous tile's fragment
    int pending = 0;      // stash boxes not yet stored: HALF - pending .. HALF - 1
    int srow = 0, scol = 0;
    int it = 0;           // slices consumed so far, over all tiles
    // Stores the next pending stash box (box q of the stash half lives in staging buffer q & 1).
    auto store_stash_box = [&]() {
      const int q = HALF - pending;
      switch (q) {
        case 0: store_box_tma<0>(stash, my_stage, &mapC, srow, scol, 1 + c, leader); break;
        case 1: store_box_tma<1>(stash, my_stage + CBOX_BYTES, &mapC, srow, scol + CBOX_COLS, 1 + c, leader); break;
        case 2: store_box_tma<2>(stash, my_stage, &mapC, srow, scol + 2 * CBOX_COLS, 1 + c, leader); break;
        default: store_box_tma<3>(stash, my_stage + CBOX_BYTES, &mapC, srow, scol + 3 * CBOX_COLS, 1 + c, leader); break;
      }
      --pending;
    };
    for (int item = first_item; item < items; item += item_step) {
      int tr, tc;
      tile_coords<SUPER_M / CLUSTER>(item, tiles_m / CLUSTER, tiles_n, tr, tc);
      tr = CLUSTER * tr + int(rank);
      for (int kt = 0; kt < slices; ++kt, ++it) {
        const int s = it % STAGES;
        mbar_wait(&full[s], (it / STAGES) & 1);
        const unsigned char* slot = smem + s * S::STAGE_BYTES;
        wgmma_slice<T, BN, STEPS>(d, slot + c * 64 * 128, slot + S::A_BYTES, kt > 0);
        wgmma_wait<1>();  // the group of the previous slice is done: release its slot
        if (leader && kt > 0) release_slot<CLUSTER>(empty, (it - 1) % STAGES, rank);
        if (pending > 0 && kt % SPACING == SPACING - 1) store_stash_box();  // while this slice's wgmmas run
      }
      wgmma_wait<0>();
      fence_regs(d);
      if (leader) release_slot<CLUSTER>(empty, (it - 1) % STAGES, rank);  // the tile's last slice
      while (pending > 0) store_stash_box();   // K shorter than SPACING * HALF slices
      const int row = tr * BM + c * 64, col = tc * BN;
      store_boxes_tma<0, HALF>(d, my_stage, &mapC, row, col, 1 + c, leader);
#pragma unroll
      for (int i = 0; i < BN / 4; ++i) stash[i] = d[BN / 4 + i];
      pending = HALF;
      srow = row;
      scol = col + HALF * CBOX_COLS;
    }
    while (pending > 0) store_stash_box();
    if (leader) bulk_wait_group<0>();  // the staging buffers must outlive the last stores
  }
  cluster_sync();  // no block exits while its partner may still write into it
#else
  __trap();  // built without sm_90a: the descriptor says requires_sm90a, so this never launches
#endif
}

template <class T, int STAGES, int SUPER_M>
void launch(const GemmArgs& a) {
  using S = Shape<T, STAGES>;
  const CUtensorMap mapA = hopper::make_kmajor_tensor_map(a.A, a.M, a.K, sizeof(T), BM);
  const CUtensorMap mapB = hopper::make_kmajor_tensor_map(a.B, a.N, a.K, sizeof(T), BN / CLUSTER);
  const CUtensorMap mapC = hopper::make_f32_store_tensor_map(a.C, a.M, a.N, 64);
  const int items = (a.M / (CLUSTER * BM)) * (a.N / BN);
  hopper::launch_persistent<hgemm_wgmma_10<T, STAGES, SUPER_M>, CLUSTER>(
      "hgemm_wgmma_10_epioverlap", THREADS, S::SMEM_BYTES, items, items, a.stream, a.M, a.N, a.K, mapA, mapB, mapC);
}

template <class T, int STAGES, int SUPER_M>
constexpr Kernel make(const char* name, const char* desc, Format in) {
  return hopper::wgmma_f32_kernel(name, desc, wgmma_f32_numerics(in, 0), CLUSTER * BM, BN, Shape<T, STAGES>::BK, 0,
                                  launch<T, STAGES, SUPER_M>);
}

}  // namespace

#define GEMMLAB_WGMMA10_VARIANT(id, desc, fmt, T, STAGES, SUPER_M)                     \
  const Kernel& id() {                                                                \
    static const Kernel k = make<T, STAGES, SUPER_M>(#id, desc, Format::fmt);          \
    return k;                                                                         \
  }

GEMMLAB_WGMMA10_VARIANT(hgemm_wgmma_10_epioverlap_sm16_fp16_in_wgmma,
                        "step 7 with half of each tile's epilogue stashed in registers and stored during the next tile's first slices; clusters of 2 along M, B multicast, 128x256 tile, 4 stages, super_M 16",
                        fp16, __half, 4, 16)
GEMMLAB_WGMMA10_VARIANT(hgemm_wgmma_10_epioverlap_sm16_bf16_in_wgmma,
                        "step 7 with half of each tile's epilogue stashed in registers and stored during the next tile's first slices; clusters of 2 along M, B multicast, 128x256 tile, 4 stages, super_M 16",
                        bf16, __nv_bfloat16, 4, 16)
}  // namespace gemmlab::kernels
