// hgemm_wgmma_05_cluster2: step 5 of the Hopper series, clusters of two blocks with TMA multicast.
// The persistent, warp-specialised kernel of hgemm_wgmma_04_persistent, launched as clusters of 2
// blocks that work on vertically adjacent (128, BN) tiles, i.e. one (256, BN) cluster tile: both need
// the same (BN, BK) slice of B, so each block loads its own A slice and HALF of the B slice, multicast
// into both blocks' shared memory. L2 -> SM traffic per stage drops from 48 KB to 32 KB per block,
// which matters because at ~750 TFLOP/s the (128, 256) tile asks ~11 TB/s of L2. Because a block's
// multicast writes into its partner's slot too, a slot is free only when the consumers of BOTH blocks
// have released it: `empty` counts 4 arrivals (2 consumer warpgroups x 2 blocks), each consumer arrives
// locally and remotely (mapa + mbarrier.arrive.shared::cluster with the default .release.cta
// semantics; a .release.cluster arrive would make every slice's release a cluster-wide fence:
// results/hopper/README.md#step-5 has this step's history, #step-7 the diagnosis). Blocks meet in a
// cluster barrier after initialising their mbarriers and before exiting. Cluster tiles are taken in
// the super_M order of step 4 (SUPER_M counted in 128-row tile rows: 8 = 4 cluster rows).
//
// Numerics: identical to hgemm_wgmma_04_persistent (in_wgmma, truncating tensor-core accumulation;
// fp8 judged with acc_unit_roundoff = 2^-13). Layouts: A row-major, B column-major (K-major).
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

using hopper::tile_coords;  // the super_M order of step 4

template <class T, int BN, int STAGES, int PROMOTE, int SUPER_M>
__global__ void __launch_bounds__(THREADS, 1)
    hgemm_wgmma_cluster2(int M, int N, int K, const __grid_constant__ CUtensorMap mapA,
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
  // Cluster tiles: (256, BN), the block of rank r computing its rows r*128 .. r*128+127.
  const int ctiles_m = M / (2 * BM), tiles_n = N / BN, ctiles = ctiles_m * tiles_n;
  const unsigned rank = cluster_ctarank();
  const int cid = int(cluster_id_x()), nclusters = int(cluster_count_x());

  if (tid == 0) {
    prefetch_tensor_map(&mapA);
    prefetch_tensor_map(&mapB);
    for (int s = 0; s < STAGES; ++s) {
      mbar_init(&full[s], 1);   // the producer's arrive.expect_tx, then the TMA bytes
      mbar_init(&empty[s], 4);  // one arrive per consumer warpgroup of each block of the cluster
    }
    mbar_fence_init();
  }
  cluster_sync();  // the partner's barriers exist before any multicast or remote arrive reaches them

  if (wg == 0) {
    // Producer warpgroup: give registers away, one thread issues every copy.
    setmaxnreg_dec<40>();
    if (tid == 0) {
      int it = 0;  // slices issued so far, over all tiles: the ring's position and phase
      for (int ct = cid; ct < ctiles; ct += nclusters) {
        int ctr, tc;
        tile_coords<SUPER_M / 2>(ct, ctiles_m, tiles_n, ctr, tc);
        const int tr = 2 * ctr + int(rank);
        for (int kt = 0; kt < slices; ++kt, ++it)
          load_slice<STAGES, S::STAGE_BYTES, BN, 2>(smem, full, empty, it, &mapA, &mapB, S::A_BYTES, kt * S::BK,
                                                    tr * BM, tc * BN, rank);
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
    for (int ct = cid; ct < ctiles; ct += nclusters) {
      int ctr, tc;
      tile_coords<SUPER_M / 2>(ct, ctiles_m, tiles_n, ctr, tc);
      const int tr = 2 * ctr + int(rank);
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
        if (leader && kt > 0) {
          mbar_arrive(&empty[(it - 1) % STAGES]);                    // this block's producer
          mbar_arrive_remote(&empty[(it - 1) % STAGES], rank ^ 1u);  // the partner's (its multicast lands here)
        }
      }
      wgmma_wait<0>();
      fence_regs(d);
      if (leader) {  // the tile's last slice
        mbar_arrive(&empty[(it - 1) % STAGES]);
        mbar_arrive_remote(&empty[(it - 1) % STAGES], rank ^ 1u);
      }
      float* cp = C + std::size_t(tr * BM + c * 64) * N + std::size_t(tc) * BN;
      if constexpr (PROMOTE == 0) {
        store_fragment(cp, N, d);
      } else {
        if ((slices * STEPS) % PSTEPS != 0) promote_add(p, d);
        store_fragment(cp, N, p);
      }
    }
  }
  cluster_sync();  // no block exits while its partner may still multicast into it or arrive on it
#else
  __trap();  // built without sm_90a: the descriptor says requires_sm90a, so this never launches
#endif
}

template <class T, int BN, int STAGES, int PROMOTE, int SUPER_M>
void launch(const GemmArgs& a) {
  using S = Shape<T, BN, STAGES>;
  static PerDevice<bool> attr_set;  // once per GPU: the attribute belongs to the current device
  attr_set.get([] {
    GEMMLAB_CUDA_CHECK(cudaFuncSetAttribute(hgemm_wgmma_cluster2<T, BN, STAGES, PROMOTE, SUPER_M>,
                                            cudaFuncAttributeMaxDynamicSharedMemorySize, S::SMEM_BYTES));
    return true;
  });
  const CUtensorMap mapA = hopper::make_kmajor_tensor_map(a.A, a.M, a.K, sizeof(T), BM);
  const CUtensorMap mapB = hopper::make_kmajor_tensor_map(a.B, a.N, a.K, sizeof(T), BN / 2);
  // One cluster per pair of SMs. (A first version sized the grid with cudaOccupancyMaxActiveClusters;
  // clusters that are not resident at once would only run later, so correctness never depends on it.)
  const int max_clusters = hopper::sm_count() / 2;
  const int ctiles = (a.M / (2 * BM)) * (a.N / BN);
  const hopper::ClusterLaunch<2> cl(THREADS, S::SMEM_BYTES, ctiles < max_clusters ? ctiles : max_clusters,
                                    as_stream(a.stream));
  GEMMLAB_CUDA_CHECK(cudaLaunchKernelEx(&cl.cfg, hgemm_wgmma_cluster2<T, BN, STAGES, PROMOTE, SUPER_M>, a.M, a.N, a.K,
                                        mapA, mapB, static_cast<float*>(a.C)));
  GEMMLAB_LAUNCH_CHECK("hgemm_wgmma_05_cluster2");
}

template <class T, int BN, int STAGES, int PROMOTE, int SUPER_M>
constexpr Kernel make(const char* name, const char* desc, Format in) {
  return Kernel{
      .name = name, .family = "hopper", .description = desc,
      .numerics = wgmma_f32_numerics(in, PROMOTE),
      .layout_a = Layout::row_major, .layout_b = Layout::col_major,
      .m_multiple = 2 * BM, .n_multiple = BN, .k_multiple = Shape<T, BN, STAGES>::BK,
      .min_cc = 90, .requires_sm90a = true, .workspace_bytes = 0,
      .launch = launch<T, BN, STAGES, PROMOTE, SUPER_M>,
  };
}

}  // namespace

#define GEMMLAB_WGMMA05_VARIANT(id, desc, fmt, T, BN, STAGES, PROMOTE)                    \
  const Kernel& id() {                                                                   \
    static const Kernel k = make<T, BN, STAGES, PROMOTE, 8>(#id, desc, Format::fmt);     \
    return k;                                                                            \
  }

GEMMLAB_WGMMA05_VARIANT(hgemm_wgmma_05_cluster2_sm8_fp16_in_wgmma,
                        "clusters of 2 with TMA multicast of B, persistent producer/consumer, 256x256 cluster tile, fp32 acc in wgmma",
                        fp16, __half, 256, 4, 0)
GEMMLAB_WGMMA05_VARIANT(hgemm_wgmma_05_cluster2_sm8_bf16_in_wgmma,
                        "clusters of 2 with TMA multicast of B, persistent producer/consumer, 256x256 cluster tile, fp32 acc in wgmma",
                        bf16, __nv_bfloat16, 256, 4, 0)
GEMMLAB_WGMMA05_VARIANT(hgemm_wgmma_05_cluster2_sm8_fp16_promoted_every_128k,
                        "clusters of 2 with TMA multicast of B, persistent, 128x128 tiles, promoted every 128 of K",
                        fp16, __half, 128, 6, 128)
GEMMLAB_WGMMA05_VARIANT(hgemm_wgmma_05_cluster2_sm8_e4m3_in_wgmma,
                        "fp8 e4m3, clusters of 2 with TMA multicast of B, persistent, 256x256 cluster tile, acc in wgmma",
                        e4m3, __nv_fp8_e4m3, 256, 4, 0)

}  // namespace gemmlab::kernels
