// hgemm_wgmma_07_cluster2: step 7 of the Hopper series, clusters of two blocks with TMA multicast of
// B on top of step 6 (persistent, warp-specialised, asynchronous TMA-store epilogue).
//
// Why: at ~750 TFLOP/s a (128, 256) tile with a (128, 64) A slice and a (256, 64) B slice per k-step
// asks 48 KB per 4.2 MFLOP, about 8.5 TB/s of L2 -> SM traffic over the chip. Two blocks on vertically
// adjacent tiles (tile rows 2i and 2i+1, the same tile column: one (256, BN) cluster tile) need the
// same B slice, so each block loads its own A (128, 64) and HALF of B, (BN/2, 64), multicast into both
// blocks (mask 0b11): 32 KB per block per k-step instead of 48 KB, a third less L2 traffic.
// Each block's producer waits on its OWN empty barrier, which counts the releases of the consumers of
// both blocks (2 x 2 = 4 arrivals per phase: its half of B lands in the partner's slot too). Each
// consumer warpgroup releases a slot with one elected thread: a local arrive and one remote arrive
// (mapa + mbarrier.arrive.release.cluster) on the partner. The full barrier expects the whole stage
// (A + both halves of B). Launched with cudaLaunchKernelEx and a cluster dimension of 2; the grid is
// the number of co-resident clusters from cudaOccupancyMaxActiveClusters (GEMMLAB_HOPPER_VERBOSE=1
// prints it). Cluster tiles are taken in the super_M order of step 4 in units of cluster rows.
//
// Numerics: unchanged from steps 4 and 6. fp16/bf16 in (products exact), fp32 out, accumulation inside
// the wgmma accumulator (in_wgmma, truncating alignment, judged with AccRounding::truncate). The TMA
// store copies fp32 bits unchanged. Layouts: A row-major (M, K), B column-major (K, N), both K-major.
//
// Measured on an H200 (results/hopper/hopper_step7_bench_h200.csv: one run, median of 21, L2 flushed,
// ratios to cuBLAS cublasGemmEx fp32-out of the same format in the same run):
//   4096^3  fp16 0.1887 ms 728 TFLOP/s 0.997x (step 6: 0.993x); bf16 0.1832 ms 750 TFLOP/s 0.998x (step 6: 0.996x)
//   8192^3  fp16 1.4662 ms 750 TFLOP/s 1.013x (step 6: 0.998x); bf16 1.4054 ms 782 TFLOP/s 1.014x (step 6: 1.007x)
// So multicast pays at 8192^3 (+1.5% over step 6) and is level with cuBLAS at 4096^3 (3.88 waves of
// 128x256 tiles on 132 SMs: the last partial wave, not the mainloop, is what is left there).
// Why step 5 and step 6's cluster variant ran at 0.59x: their consumers released each slot with
// mbarrier.arrive.release.cluster on BOTH blocks (mapa even for the local one). A cluster-scope
// release makes each arrive a cluster-wide fence of the thread's memory operations (MEMBAR-class), on
// the k-loop's critical path, every slice. Measured in the first device run of this step: local arrive
// + one .release.cluster remote arrive = 0.756x / 0.68x (fp16, 4096^3 / 8192^3); local arrive + one
// remote arrive with the default .release.cta semantics (hopper::mbar_arrive_remote, as CUTLASS's
// ClusterBarrier::arrive) = the figures above. The slot was read only by wgmma (async proxy,
// complete at wgmma.wait_group), so no cluster-scope ordering of generic accesses is needed.
// cudaOccupancyMaxActiveClusters reports 66 co-resident clusters of 2 at 226 KB (all 132 SMs):
// occupancy was not the cause.
// Negative results (registered, measured, removed):
//   3 stages (178 KB) instead of 4: 0.933x / 0.989x fp16 (same run as the figures above).
//   step 6 without clusters at super_M 32: 0.188 ms / 1.502 ms fp16 vs step 6 sm16 0.187 / 1.482 ms
//   (first run): no gain from a taller super_M.
// Session 2 (2026-11-21, H200, each a registered variant measured in one run beside this kernel and
// cuBLAS fp16->fp32, median of 21, 4096^3 / 8192^3; CSVs under results/hopper/, then removed):
//   * no epilogue at all (DIAGNOSTIC, wrong results): 1.067x / 1.043x against 1.001x / 1.011x: the
//     epilogue costs ~6% at 4096^3 (~2.7 us per (128, 256) tile, 128 KB through 16 KB of staging)
//     and ~3% at 8192^3 (step7_epilogue_diag_h200.csv). This is what is left to win at 4096^3.
//   * super_M 8 / 32: 0.987x / 0.989x at 4096^3, 0.997x / 1.002x at 8192^3 (same file): 16 stays.
//   * per-warp TMA-store epilogue in (16, 32) boxes, __syncwarp instead of the 128-thread named
//     barriers: 0.997x / 1.009x against 1.001x / 1.011x (step7_epilogue_diag_h200.csv); per-warp
//     (8, 32) boxes with 4 in flight per warp: 0.995x / 1.010x, and direct st.global from the
//     fragments: 0.972x / 1.005x, against 0.995x / 1.006x (step7_epilogue_variants_h200.csv). So neither barrier cost nor boxes in flight limit the
//     epilogue.
//   * staggered start (cluster groups 2 or 4, each 2000-6000 SM cycles later than the previous, so
//     the SMs' epilogues fall at different times): 0.971x-0.993x / 1.006x-1.007x against 0.997x /
//     1.008x (step7_stagger_bench_h200.csv): the epilogue is not a chip-wide write burst either.
//   * ping-pong consumer warpgroups (a whole (64, 256) tile per warpgroup, so one warpgroup's
//     epilogue overlaps the other's mainloop): step 9, 0.81x: one warpgroup alone does not keep the
//     tensor cores busy.
//   * half of the epilogue stashed in registers and stored during the next tile's mainloop: step 10
//     (session 3), +0.5-1% over this step, 1.009x / 1.012x: the fastest kernel at 4096^3.
// cuBLAS's own choice (CUBLASLT_LOG_LEVEL=5, cublaslt_algo_4096_8192_h200.log): algo 66, tile 256x128,
// cluster 1x2x1 at 4096^3; tile 320x128, cluster 1x2x1 at 8192^3.
#include <cstdio>
#include <cstdlib>

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

// CLUSTER = 2: clusters of two blocks on vertically adjacent tiles (a (256, BN) cluster tile); each
// block loads its own A slice and half of the shared B slice, multicast into both blocks, so a slot
// is free only when the consumers of both blocks have released it (empty counts 4 arrivals).
template <class T, int BN, int STAGES, int PROMOTE, int SUPER_M, int CLUSTER>
__global__ void __launch_bounds__(THREADS, 1)
    hgemm_wgmma_07(int M, int N, int K, const __grid_constant__ CUtensorMap mapA,
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
  // Work items: tiles (CLUSTER 1) or cluster tiles of CLUSTER vertically adjacent tiles.
  const int items = (tiles_m / CLUSTER) * tiles_n;
  const unsigned rank = CLUSTER == 1 ? 0u : cluster_ctarank();
  const int first_item = CLUSTER == 1 ? int(blockIdx.x) : int(cluster_id_x());
  const int item_step = CLUSTER == 1 ? int(gridDim.x) : int(cluster_count_x());

  if (tid == 0) {
    prefetch_tensor_map(&mapA);
    prefetch_tensor_map(&mapB);
    prefetch_tensor_map(&mapC);
    for (int s = 0; s < STAGES; ++s) {
      mbar_init(&full[s], 1);   // the producer's arrive.expect_tx, then the TMA bytes
      mbar_init(&empty[s], 2 * CLUSTER);  // one arrive per consumer warpgroup of each block
    }
    mbar_fence_init();
  }
  if constexpr (CLUSTER == 1) __syncthreads();
  else cluster_sync();  // the partner's barriers exist before any multicast or remote arrive

  if (wg == 0) {
    // Producer warpgroup: give registers away, one thread issues every copy.
    setmaxnreg_dec<40>();
    if (tid == 0) {
      int it = 0;  // slices issued so far, over all tiles: the ring's position and phase
      for (int item = first_item; item < items; item += item_step) {
        int tr, tc;
        tile_coords<SUPER_M / CLUSTER>(item, tiles_m / CLUSTER, tiles_n, tr, tc);
        tr = CLUSTER * tr + int(rank);
        for (int kt = 0; kt < slices; ++kt, ++it) {
          const int s = it % STAGES;
          if (it >= STAGES) mbar_wait(&empty[s], ((it / STAGES) - 1) & 1);  // consumers freed the slot
          unsigned char* slot = smem + s * S::STAGE_BYTES;
          mbar_arrive_expect_tx(&full[s], S::STAGE_BYTES);
          tma_load_2d(slot, &mapA, &full[s], kt * S::BK, tr * BM);
          if constexpr (CLUSTER == 1) {
            tma_load_2d(slot + S::A_BYTES, &mapB, &full[s], kt * S::BK, tc * BN);
          } else {  // this block's half of the B slice, into both blocks (same offsets)
            tma_load_2d_multicast(slot + S::A_BYTES + rank * (BN / 2) * 128, &mapB, &full[s], kt * S::BK,
                                  tc * BN + int(rank) * (BN / 2), std::uint16_t(0x3));
          }
        }
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
    // Frees slot `s` in every block of the cluster.
    auto release = [&](int s) {
      if constexpr (CLUSTER == 1) {
        mbar_arrive(&empty[s]);
      } else {
        mbar_arrive(&empty[s]);                    // this block's producer
        mbar_arrive_remote(&empty[s], rank ^ 1u);  // the partner's producer multicasts into this slot too
      }
    };
    for (int item = first_item; item < items; item += item_step) {
      int tr, tc;
      tile_coords<SUPER_M / CLUSTER>(item, tiles_m / CLUSTER, tiles_n, tr, tc);
      tr = CLUSTER * tr + int(rank);
      if constexpr (PROMOTE != 0) {
#pragma unroll
        for (int i = 0; i < BN / 2; ++i) p[i] = 0.0f;
      }
      for (int kt = 0; kt < slices; ++kt, ++it) {
        const int s = it % STAGES;
        mbar_wait(&full[s], (it / STAGES) & 1);
        const unsigned char* sA = smem + s * S::STAGE_BYTES + c * 64 * 128;
        const unsigned char* sB = smem + s * S::STAGE_BYTES + S::A_BYTES;
        wgmma_fence();
#pragma unroll
        for (int k = 0; k < STEPS; ++k) {
          const int g = kt * STEPS + k;
          const int scale_d = PROMOTE == 0 ? (g > 0) : (g % PSTEPS != 0);
          Wgmma<T, BN>::run(d, make_desc_sw128(sA + k * 32), make_desc_sw128(sB + k * 32), scale_d);
          if (PROMOTE != 0 && (g + 1) % PSTEPS == 0) {
            wgmma_commit();
            wgmma_wait<0>();
            fence_regs(d);
            promote_add(p, d);
            wgmma_fence();
          }
        }
        wgmma_commit();
        wgmma_wait<1>();  // the group of the previous slice is done: release its slot
        if (leader && kt > 0) release((it - 1) % STAGES);
      }
      wgmma_wait<0>();
      fence_regs(d);
      if (leader) release((it - 1) % STAGES);  // the tile's last slice
      if constexpr (PROMOTE == 0) {
        store_tile_tma(d, my_stage, &mapC, tr * BM + c * 64, tc * BN, 1 + c, leader);
      } else {
        if ((slices * STEPS) % PSTEPS != 0) promote_add(p, d);
        store_tile_tma(p, my_stage, &mapC, tr * BM + c * 64, tc * BN, 1 + c, leader);
      }
    }
    if (leader) bulk_wait_group<0>();  // the staging buffers must outlive the last stores
  }
  if constexpr (CLUSTER == 2) cluster_sync();  // no block exits while its partner may still write into it
#else
  __trap();  // built without sm_90a: the descriptor says requires_sm90a, so this never launches
#endif
}

template <class T, int BN, int STAGES, int PROMOTE, int SUPER_M, int CLUSTER>
void launch(const GemmArgs& a) {
  using S = Shape<T, BN, STAGES>;
  auto kernel = hgemm_wgmma_07<T, BN, STAGES, PROMOTE, SUPER_M, CLUSTER>;
  cudaLaunchConfig_t cfg{};
  cudaLaunchAttribute attr[1];
  attr[0].id = cudaLaunchAttributeClusterDimension;
  attr[0].val.clusterDim.x = CLUSTER;
  attr[0].val.clusterDim.y = 1;
  attr[0].val.clusterDim.z = 1;
  cfg.blockDim = dim3(THREADS);
  cfg.dynamicSmemBytes = S::SMEM_BYTES;
  cfg.stream = as_stream(a.stream);
  cfg.attrs = attr;
  cfg.numAttrs = CLUSTER == 1 ? 0 : 1;  // no cluster attribute for single blocks
  // Persistent: at most as many blocks (clusters) as can be resident at once. For clusters this is
  // what the occupancy API says, not SMs / 2: a cluster must fit in one GPC, and a cluster that is
  // not resident would run only after the others finished (a second, nearly empty wave).
  static const int resident = [&] {
    GEMMLAB_CUDA_CHECK(cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, S::SMEM_BYTES));
    if (CLUSTER == 1) return hopper::sm_count();
    cudaLaunchConfig_t q = cfg;
    q.gridDim = dim3(CLUSTER * hopper::sm_count());
    int clusters = 0;
    GEMMLAB_CUDA_CHECK(cudaOccupancyMaxActiveClusters(&clusters, kernel, &q));
    if (std::getenv("GEMMLAB_HOPPER_VERBOSE"))
      std::fprintf(stderr, "hgemm_wgmma_07: %d resident clusters of %d at %d bytes of shared memory (%d SMs)\n",
                   clusters, CLUSTER, S::SMEM_BYTES, hopper::sm_count());
    return clusters > 0 ? clusters : 1;
  }();
  const CUtensorMap mapA = hopper::make_kmajor_tensor_map(a.A, a.M, a.K, sizeof(T), BM);
  const CUtensorMap mapB = hopper::make_kmajor_tensor_map(a.B, a.N, a.K, sizeof(T), BN / CLUSTER);
  const CUtensorMap mapC = hopper::make_f32_store_tensor_map(a.C, a.M, a.N, 64);
  const int items = (a.M / (CLUSTER * BM)) * (a.N / BN);
  cfg.gridDim = dim3(CLUSTER * (items < resident ? items : resident));
  GEMMLAB_CUDA_CHECK(cudaLaunchKernelEx(&cfg, kernel, a.M, a.N, a.K, mapA, mapB, mapC));
  GEMMLAB_LAUNCH_CHECK("hgemm_wgmma_07_cluster2");
}

template <class T, int BN, int STAGES, int PROMOTE, int SUPER_M, int CLUSTER>
constexpr Kernel make(const char* name, const char* desc, Format in) {
  return Kernel{
      .name = name, .family = "hopper", .description = desc,
      .input = in, .compute = in, .accumulator = Format::fp32, .output = Format::fp32,
      .accumulation = PROMOTE == 0 ? Accumulation::in_wgmma : Accumulation::promoted,
      .promotion_interval_k = PROMOTE, .acc_rounding = AccRounding::truncate,
      .layout_a = Layout::row_major, .layout_b = Layout::col_major,
      .m_multiple = CLUSTER * BM, .n_multiple = BN, .k_multiple = Shape<T, BN, STAGES>::BK,
      .min_cc = 90, .requires_sm90a = true, .workspace_bytes = 0,
      .launch = launch<T, BN, STAGES, PROMOTE, SUPER_M, CLUSTER>,
      .supports = nullptr,
      .acc_unit_roundoff = 0.0,
  };
}

}  // namespace

#define GEMMLAB_WGMMA07_VARIANT(id, desc, fmt, T, STAGES, SUPER_M, CLUSTER)                       \
  const Kernel& id() {                                                                           \
    static const Kernel k = make<T, 256, STAGES, 0, SUPER_M, CLUSTER>(#id, desc, Format::fmt);    \
    return k;                                                                                    \
  }

GEMMLAB_WGMMA07_VARIANT(hgemm_wgmma_07_cluster2_sm16_fp16_in_wgmma,
                        "clusters of 2 along M, B multicast, persistent producer/consumer, 128x256 tile, 4 stages, super_M 16, TMA-store epilogue",
                        fp16, __half, 4, 16, 2)
GEMMLAB_WGMMA07_VARIANT(hgemm_wgmma_07_cluster2_sm16_bf16_in_wgmma,
                        "clusters of 2 along M, B multicast, persistent producer/consumer, 128x256 tile, 4 stages, super_M 16, TMA-store epilogue",
                        bf16, __nv_bfloat16, 4, 16, 2)

}  // namespace gemmlab::kernels
