// hgemm_wgmma_09_pingpong: step 9 of the Hopper series, step 7 (clusters of two blocks along M with
// TMA multicast of B, persistent warp-specialised producer/consumer, TMA-store epilogue) with the
// consumer warpgroups in PING-PONG instead of cooperating on one tile.
//
// Why: step 7's epilogue is exposed (step 7 timed without it runs faster:
// results/hopper/README.md#step-7): per (128, 256) tile both consumer warpgroups copy 128 KB of
// fp32 out through 16 KB of staging while the tensor cores idle (all 132 SMs store at the same
// moment, so the copy runs at the chip's write rate shared 132 ways). Here each consumer warpgroup
// owns whole (64, 256) tiles: warpgroup 0 takes the cluster's work items 0, 2, 4, ..., warpgroup 1
// items 1, 3, 5, ... The producer fills one ring in item order, so warpgroup 1's mainloop starts as
// warpgroup 0's ends, and warpgroup 0's epilogue runs while warpgroup 1 keeps the tensor cores busy
// (one warpgroup issuing m64n256k16 back to back can saturate them: each wgmma is 128 SM cycles of
// tensor work). Cost: the block tile per mainloop halves, (64, 256) instead of (128, 256), so each
// slice of 64 K brings 8 KB of A + 16 KB (this block's multicast half) of B per 1 M multiply-adds
// instead of 32 KB per 2 M: 1.5x the L2->SM traffic of step 7 (the same per flop as step 6, which
// had no multicast).
//
// A negative result, kept registered because ping-pong is a standard Hopper technique and its numerics
// are those of step 7 bit for bit (tested): it is slower than step 7 (results/hopper/README.md#step-9).
// Reading: with one warpgroup in its mainloop at a time the tensor cores run below what two
// cooperating warpgroups reach (wgmma.wait_group with one group in flight per warpgroup leaves gaps
// that a second warpgroup's wgmmas would fill), which costs more than the epilogue it hides. Not
// tried: three consumer warpgroups (two in the mainloop while one stores) - a (64, 256) fp32
// accumulator per warpgroup leaves too few registers.
//
// Cluster of 2 along M: a work item is a (128, 256) cluster tile; block r of the cluster takes its rows
// r*64 .. r*64+63, so the two blocks' current warpgroups read the same B slice, multicast as in
// step 7. A ring slot is consumed by ONE warpgroup per block, so its empty barrier counts 2 arrivals
// (that warpgroup in both blocks). Items in the super_M order of step 4; super_M counts 128-row
// cluster rows here, so sm16 groups 2048 rows of C, as step 7's sm16 (16 tile rows of 128).
//
// Numerics: identical to steps 4, 6 and 7 for every output entry: fp16/bf16 products exact, the
// K/16 k-steps accumulated in increasing k inside the wgmma accumulator (in_wgmma, truncating
// alignment), fp32 out through the TMA store (bits unchanged). Layouts: A row-major (M, K), B
// column-major (K, N), both K-major, 128-byte swizzle.
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

constexpr int BMW = 64;            // rows of a warpgroup tile in one block
constexpr int CLUSTER = 2;         // blocks per cluster, along M
constexpr int BN = 256;
constexpr int THREADS = 384;       // producer warpgroup + two consumer warpgroups

template <class T, int STAGES>
struct Shape {
  static constexpr int BK = 128 / int(sizeof(T));  // one 128-byte swizzled row of K per tile row
  static constexpr int A_BYTES = BMW * 128, B_BYTES = BN * 128, STAGE_BYTES = A_BYTES + B_BYTES;
  static constexpr int RING_BYTES = STAGES * STAGE_BYTES;
  static constexpr int STAGING_BYTES = 2 /* consumers */ * 2 /* buffers */ * CBOX_BYTES;
  static constexpr int SMEM_BYTES = RING_BYTES + STAGING_BYTES + 1024 /* alignment */ + 1024 /* barriers */;
  static_assert(sizeof(T) == 2, "fp16/bf16 only (k16 wgmma)");
  static_assert(STAGE_BYTES % 1024 == 0, "slots stay 1024-aligned for the 128B swizzle");
  static_assert(SMEM_BYTES <= 227 * 1024, "shared memory per block on Hopper is 227 KB");
};

template <class T, int STAGES, int SUPER_M>
__global__ void __launch_bounds__(THREADS, 1)
    hgemm_wgmma_09(int M, int N, int K, const __grid_constant__ CUtensorMap mapA,
                   const __grid_constant__ CUtensorMap mapB, const __grid_constant__ CUtensorMap mapC) {
#ifdef GEMMLAB_SM90A_DEVICE
  using namespace gemmlab::hopper;
  using S = Shape<T, STAGES>;
  constexpr int STEPS = S::BK / Wgmma<T, BN>::k;

  extern __shared__ unsigned char smem_raw[];
  unsigned char* smem = reinterpret_cast<unsigned char*>((reinterpret_cast<std::uintptr_t>(smem_raw) + 1023) & ~std::uintptr_t(1023));
  unsigned char* staging = smem + S::RING_BYTES;
  std::uint64_t* full = reinterpret_cast<std::uint64_t*>(staging + S::STAGING_BYTES);
  std::uint64_t* empty = full + STAGES;

  const int tid = threadIdx.x, wg = tid / 128;
  const int slices = K / S::BK;
  const int crows = M / (CLUSTER * BMW), tiles_n = N / BN;  // cluster rows of 128, tile columns of 256
  const int items = crows * tiles_n;
  const unsigned rank = cluster_ctarank();
  const int first_item = int(cluster_id_x());
  const int item_step = int(cluster_count_x());

  if (tid == 0) {
    prefetch_tensor_map(&mapA);
    prefetch_tensor_map(&mapB);
    prefetch_tensor_map(&mapC);
    for (int s = 0; s < STAGES; ++s) {
      mbar_init(&full[s], 1);         // the producer's arrive.expect_tx, then the TMA bytes
      mbar_init(&empty[s], CLUSTER);  // the slot's consumer warpgroup in each block of the cluster
    }
    mbar_fence_init();
  }
  cluster_sync();  // the partner's barriers exist before any multicast or remote arrive

  if (wg == 0) {
    setmaxnreg_dec<40>();
    if (tid == 0) {
      int it = 0;  // slices issued so far, over all items: the ring's position and phase
      for (int item = first_item; item < items; item += item_step) {
        int cr, tc;
        tile_coords<SUPER_M>(item, crows, tiles_n, cr, tc);
        const int row = cr * CLUSTER * BMW + int(rank) * BMW;
        for (int kt = 0; kt < slices; ++kt, ++it)
          load_slice<STAGES, S::STAGE_BYTES, BN, CLUSTER>(smem, full, empty, it, &mapA, &mapB, S::A_BYTES, kt * S::BK,
                                                          row, tc * BN, rank);
      }
    }
  } else {
    setmaxnreg_inc<232>();
    const int c = wg - 1;  // this warpgroup takes the cluster's items c, c + 2, c + 4, ...
    const bool leader = tid % 128 == 0;
    unsigned char* my_stage = staging + c * 2 * CBOX_BYTES;
    float d[BN / 2];  // (64, BN) accumulator fragment
    // Turn-taking (named barriers 3 + c, 256 threads): warpgroup c may start waiting on the ring
    // slots of its item n only after the other warpgroup has passed the full-barrier wait of item
    // n - 1's last slice. A slot's full barrier is then at most one phase behind the one waited for,
    // so the parity test cannot match a phase STAGES * k slices old (the other warpgroup's items
    // sit between ours in the ring).
    int n = c;  // index of the item in this cluster's list
    for (int item = first_item + c * item_step; item < items; item += 2 * item_step, n += 2) {
      int cr, tc;
      tile_coords<SUPER_M>(item, crows, tiles_n, cr, tc);
      const int row = cr * CLUSTER * BMW + int(rank) * BMW;
      const bool next_exists = item + item_step < items;  // the other warpgroup's next item
      if (n > 0) named_bar_sync(3 + c, 256);
      int it = n * slices;  // ring position of this item's first slice
      for (int kt = 0; kt < slices; ++kt, ++it) {
        const int s = it % STAGES;
        mbar_wait(&full[s], (it / STAGES) & 1);
        if (kt == slices - 1 && next_exists) named_bar_arrive(3 + (c ^ 1), 256);
        const unsigned char* slot = smem + s * S::STAGE_BYTES;
        wgmma_slice<T, BN, STEPS>(d, slot, slot + S::A_BYTES, kt > 0);
        wgmma_wait<1>();  // the group of the previous slice is done: release its slot
        if (leader && kt > 0) release_slot<CLUSTER>(empty, (it - 1) % STAGES, rank);
      }
      wgmma_wait<0>();
      fence_regs(d);
      if (leader) release_slot<CLUSTER>(empty, (it - 1) % STAGES, rank);
      store_tile_tma(d, my_stage, &mapC, row, tc * BN, 1 + c, leader);
    }
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
  const CUtensorMap mapA = hopper::make_kmajor_tensor_map(a.A, a.M, a.K, sizeof(T), BMW);
  const CUtensorMap mapB = hopper::make_kmajor_tensor_map(a.B, a.N, a.K, sizeof(T), BN / CLUSTER);
  const CUtensorMap mapC = hopper::make_f32_store_tensor_map(a.C, a.M, a.N, 64);
  const int items = (a.M / (CLUSTER * BMW)) * (a.N / BN);
  hopper::launch_persistent<hgemm_wgmma_09<T, STAGES, SUPER_M>, CLUSTER>(
      "hgemm_wgmma_09_pingpong", THREADS, S::SMEM_BYTES, items, items, a.stream, a.M, a.N, a.K, mapA, mapB, mapC);
}

template <class T, int STAGES, int SUPER_M>
constexpr Kernel make(const char* name, const char* desc, Format in) {
  return hopper::wgmma_f32_kernel(name, desc, wgmma_f32_numerics(in, 0), CLUSTER * BMW, BN, Shape<T, STAGES>::BK, 0,
                                  launch<T, STAGES, SUPER_M>);
}

}  // namespace

#define GEMMLAB_WGMMA09_VARIANT(id, desc, fmt, T, STAGES, SUPER_M)                     \
  const Kernel& id() {                                                                \
    static const Kernel k = make<T, STAGES, SUPER_M>(#id, desc, Format::fmt);          \
    return k;                                                                         \
  }

GEMMLAB_WGMMA09_VARIANT(hgemm_wgmma_09_pingpong_sm16_fp16_in_wgmma,
                        "ping-pong consumer warpgroups on (64, 256) tiles, clusters of 2 along M with B multicast, persistent, 4 stages, super_M 16, TMA-store epilogue",
                        fp16, __half, 4, 16)
GEMMLAB_WGMMA09_VARIANT(hgemm_wgmma_09_pingpong_sm16_bf16_in_wgmma,
                        "ping-pong consumer warpgroups on (64, 256) tiles, clusters of 2 along M with B multicast, persistent, 4 stages, super_M 16, TMA-store epilogue",
                        bf16, __nv_bfloat16, 4, 16)

}  // namespace gemmlab::kernels
