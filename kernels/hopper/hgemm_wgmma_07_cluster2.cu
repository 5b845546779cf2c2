// hgemm_wgmma_07_cluster2: step 7 of the Hopper series, clusters of two blocks with TMA multicast of
// B on top of step 6 (persistent, warp-specialised, asynchronous TMA-store epilogue).
//
// Why: at ~750 TFLOP/s a (128, 256) tile with a (128, 64) A slice and a (256, 64) B slice per k-step
// asks 48 KB per 4.2 MFLOP, about 8.5 TB/s of L2 -> SM traffic over the chip. Two blocks on vertically
// adjacent tiles (tile rows 2i and 2i+1, the same tile column: one (256, BN) cluster tile) need the
// same B slice, so each block loads its own A (128, 64) and HALF of B, (BN/2, 64), multicast into both
// blocks (mask 0b11): 32 KB per block per k-step instead of 48 KB, a third less L2 traffic.
// Each block's producer waits on its OWN empty barrier, which counts the releases of the consumers
// of both blocks (2 x 2 = 4 arrivals per phase: its half of B lands in the partner's slot too).
// Each consumer warpgroup releases a slot with one elected thread: a local arrive and one remote
// arrive (mapa + mbarrier.arrive.shared::cluster, default .release.cta: see NOTES) on the partner.
// The full barrier expects the whole stage (A + both halves of B). Launched with cudaLaunchKernelEx
// and a cluster dimension of 2; the grid is the number of co-resident clusters from
// cudaOccupancyMaxActiveClusters (GEMMLAB_HOPPER_VERBOSE=1 prints it). Cluster tiles are taken in
// the super_M order of step 4 in units of cluster rows.
//
// Numerics: unchanged from steps 4 and 6. fp16/bf16 in (products exact), fp32 out, accumulation inside
// the wgmma accumulator (in_wgmma, truncating alignment, judged with Rounding::toward_zero). The TMA
// store copies fp32 bits unchanged. Layouts: A row-major (M, K), B column-major (K, N), both K-major.
//
// NOTES:
//  * The remote arrive keeps the default .release.cta semantics (hopper::mbar_arrive_remote, as
//    CUTLASS's ClusterBarrier::arrive). The slot was read only by wgmma (async proxy, complete at
//    wgmma.wait_group), so no cluster-scope ordering of generic accesses is needed. A cluster-scope
//    release makes each arrive a cluster-wide fence of the thread's memory operations (MEMBAR-class)
//    on the k-loop's critical path, every slice: that is what held steps 5 and 6's cluster variant back.
//  * 4 stages (226 KB of shared memory; 66 co-resident clusters of 2 on 132 SMs) and super_M 16:
//    3 stages and super_M 8 / 32 were no faster.
//  * What is left at 4096^3 is the last partial wave (3.88 waves of 128x256 tiles on 132 SMs) and the
//    epilogue: steps 8, 9 and 10 each take on one of them.
// Measurements, the diagnosis of .release.cluster, the variants tried and cuBLAS's own choice of
// algorithm: results/hopper/README.md#step-7.

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

template <class T, int STAGES>
struct Shape {
  static constexpr int BK = 128 / int(sizeof(T));  // one 128-byte swizzled row of K per tile row
  static constexpr int A_BYTES = BM * 128, B_BYTES = BN * 128, STAGE_BYTES = A_BYTES + B_BYTES;
  static constexpr int RING_BYTES = STAGES * STAGE_BYTES;
  static constexpr int STAGING_BYTES = 2 /* consumers */ * 2 /* buffers */ * CBOX_BYTES;
  static constexpr int SMEM_BYTES = RING_BYTES + STAGING_BYTES + 1024 /* alignment */ + 1024 /* barriers */;
  static_assert(sizeof(T) == 2, "fp16/bf16 only (k16 wgmma)");
  static_assert(BN % CBOX_COLS == 0, "the epilogue stores whole (64, 32) boxes");
  static_assert(SMEM_BYTES <= 227 * 1024, "shared memory per block on Hopper is 227 KB");
};

// Clusters of two blocks on vertically adjacent tiles (a (256, BN) cluster tile); each block loads
// its own A slice and half of the shared B slice, multicast into both blocks, so a slot is free only
// when the consumers of both blocks have released it (empty counts 4 arrivals).
template <class T, int STAGES, int SUPER_M>
__global__ void __launch_bounds__(THREADS, 1)
    hgemm_wgmma_07(int M, int N, int K, const __grid_constant__ CUtensorMap mapA,
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
  const int items = (tiles_m / CLUSTER) * tiles_n;  // (256, BN) cluster tiles
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
    // Producer warpgroup: give registers away, one thread issues every copy.
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
    float d[BN / 2];  // (64, BN) accumulator fragment
    int it = 0;       // slices consumed so far, over all tiles
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
      }
      wgmma_wait<0>();
      fence_regs(d);
      if (leader) release_slot<CLUSTER>(empty, (it - 1) % STAGES, rank);  // the tile's last slice
      store_tile_tma(d, my_stage, &mapC, tr * BM + c * 64, tc * BN, 1 + c, leader);
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
  const CUtensorMap mapA = hopper::make_kmajor_tensor_map(a.A, a.M, a.K, sizeof(T), BM);
  const CUtensorMap mapB = hopper::make_kmajor_tensor_map(a.B, a.N, a.K, sizeof(T), BN / CLUSTER);
  const CUtensorMap mapC = hopper::make_f32_store_tensor_map(a.C, a.M, a.N, 64);
  const int items = (a.M / (CLUSTER * BM)) * (a.N / BN);
  hopper::launch_persistent<hgemm_wgmma_07<T, STAGES, SUPER_M>, CLUSTER>(
      "hgemm_wgmma_07_cluster2", THREADS, S::SMEM_BYTES, items, items, a.stream, a.M, a.N, a.K, mapA, mapB, mapC);
}

template <class T, int STAGES, int SUPER_M>
constexpr Kernel make(const char* name, const char* desc, Format in) {
  return hopper::wgmma_f32_kernel(name, desc, wgmma_f32_numerics(in, 0), CLUSTER * BM, BN, Shape<T, STAGES>::BK, 0,
                                  launch<T, STAGES, SUPER_M>);
}

}  // namespace

#define GEMMLAB_WGMMA07_VARIANT(id, desc, fmt, T, STAGES, SUPER_M)                     \
  const Kernel& id() {                                                                \
    static const Kernel k = make<T, STAGES, SUPER_M>(#id, desc, Format::fmt);          \
    return k;                                                                         \
  }

GEMMLAB_WGMMA07_VARIANT(hgemm_wgmma_07_cluster2_sm16_fp16_in_wgmma,
                        "clusters of 2 along M, B multicast, persistent producer/consumer, 128x256 tile, 4 stages, super_M 16, TMA-store epilogue",
                        fp16, __half, 4, 16)
GEMMLAB_WGMMA07_VARIANT(hgemm_wgmma_07_cluster2_sm16_bf16_in_wgmma,
                        "clusters of 2 along M, B multicast, persistent producer/consumer, 128x256 tile, 4 stages, super_M 16, TMA-store epilogue",
                        bf16, __nv_bfloat16, 4, 16)

}  // namespace gemmlab::kernels
