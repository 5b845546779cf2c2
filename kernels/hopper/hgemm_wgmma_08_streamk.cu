// hgemm_wgmma_08_streamk: step 8 of the Hopper series, step 7 (clusters of 2 along M with B
// multicast, persistent warp-specialised producer/consumer, 128x256 tiles, 4-stage TMA ring, TMA-store
// epilogue) with a stream-K tail: the full waves of cluster tiles run as in step 7, the tiles of the
// last partial wave are split along K among ALL clusters.
//
// Why: at 4096^3 there are 256 cluster tiles (256 x 256) for 66 co-resident clusters: 3 full waves
// and a tail of 58 (3.88 waves). Step 7 runs the tail as a 4th wave of whole tiles (64 slices of
// K = 64 each) while 8 clusters idle, so the kernel takes 4 x 64 = 256 slice-times. Here the tail's
// 58 x 64 = 3712 slices are dealt out as 66 contiguous ranges of 56 or 57 slices (stream-K, Osama et
// al. 2023, "DP + one-tile SK"): 3 x 64 + 57 = 249 slice-times, -2.7%, less the fix-up (each split
// tile writes/reads one (128, 256) fp32 partial per block, 128 KB, through L2). At 8192^3: 1024 cluster
// tiles = 15 waves + 34 (52%); tail 34 x 128 slices over 66 clusters = 66 slices instead of 128,
// -3.2% of the kernel. Variant `streamk2w` puts one more full wave into the stream-K part (124 cluster
// tiles at 4096^3, ranges of ~120 slices), which the stream-K paper prefers when the fix-up is slow.
//
// Schedule (the same for the producer and the consumers of both blocks of a cluster; both blocks of a
// cluster work on the same K range of their two vertically adjacent tiles, so B multicast is kept):
// G clusters, I cluster tiles, S = K / 64 slices per tile. D = I / G - (SK_WAVES - 1) full waves
// (at least 0) run data-parallel: cluster c takes tiles c, c + G, ... (super_M order). The T = I - D G
// remaining tiles form T S "tail slices" (tile-major, k-minor); cluster c takes the contiguous range
// [floor(c T S / G), floor((c + 1) T S / G)). A range is cut at tile boundaries into pieces (tile, k0,
// k1). A piece with k0 = 0 is the tile's OWNER; a piece with k0 > 0 is a partial. Only a range's first
// piece can be a partial, so each cluster writes at most one partial: its workspace slot is its own.
// The owner runs last in its cluster's range; the later chunks of the same tile belong to clusters
// c+1, c+2, ... and are their FIRST pieces, done at the start of the tail, so the owner rarely waits
// and there is no cycle (a cluster waits only on higher-numbered clusters, all co-resident).
//
// Numerics (changed from step 7 for split tiles only). Products exact (fp16/bf16 in); inside each
// chunk [k0, k1) the sum is accumulated in the wgmma accumulator (in_wgmma, truncating alignment) as
// in step 7. A split tile's chunks are then added in chunk order (increasing k) with fp32
// round-to-nearest adds by the owner: C = ((P_0 + P_1) + P_2) + ..., P_0 being the owner's chunk
// (k0 = 0). The order depends only on (M, N, K) and the grid G (co-resident clusters on this GPU: 66 on
// an H200), not on timing, so repeated launches give bit-identical results (tested). Tiles of the
// full waves are summed exactly as in step 7. The descriptor stays in_wgmma / truncate: the few extra
// round-to-nearest adds (at most one per chunk boundary) are covered by the in_wgmma bound, which
// already allows a rounding per k-step. It is marked k_chunked, and chunk_map (below) tells the CPU
// emulation where each tile is cut on the GPU at hand, so `gemmlab predict` covers this step too.
// Split tiles are summed in another order than full-wave tiles; that shows most in the relative error
// of entries with a near-zero reference.
// NOTES: SK_WAVES = 2 (streamk2w) stays in the template but is not registered: it was slower than
// SK_WAVES = 1. Measurements, the loss at 4096^3 and what may cause it: results/hopper/README.md#step-8.
//
// Workspace: per (cluster, block, consumer warpgroup) a 64 KB fp32 partial slot and a 64-bit flag.
// The flag is set (st.release.gpu, after a bar.sync of the 128 writers and a __threadfence) to an
// epoch value (a 32-bit magic in the high half, a per-process launch counter in the low half) that is
// new for every launch; the owner spins with ld.acquire.gpu until it reads this launch's value. So the
// workspace needs no zeroing and repeated launches work with no reset (a flag left from an earlier
// launch never matches; the counter wraps after 2^32 launches).

#include <atomic>
#include <vector>

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
constexpr int STAGES = 4;
constexpr int CLUSTER = 2;
constexpr int THREADS = 384;       // producer warpgroup + two consumer warpgroups
constexpr int MAX_CLUSTERS = 72;   // workspace slots; the grid is capped at this (66 on H100/H200)
constexpr int SLOTS = MAX_CLUSTERS * CLUSTER * 2;           // one per (cluster, block, consumer)
constexpr std::size_t PARTIAL_FLOATS = 64 * BN;             // a consumer's (64, BN) fp32 fragment
constexpr std::size_t FLAG_BYTES = 4096;                    // SLOTS 64-bit flags, rounded up
constexpr std::size_t WORKSPACE_BYTES = FLAG_BYTES + std::size_t(SLOTS) * PARTIAL_FLOATS * 4;
constexpr std::uint64_t EPOCH_MAGIC = 0x5EC0000Bull << 32;
static_assert(SLOTS * 8 <= int(FLAG_BYTES), "flags must fit in front of the partial slots");

template <class T>
struct Shape {
  static constexpr int BK = 128 / int(sizeof(T));  // one 128-byte swizzled row of K per tile row
  static constexpr int A_BYTES = BM * 128, B_BYTES = BN * 128, STAGE_BYTES = A_BYTES + B_BYTES;
  static constexpr int RING_BYTES = STAGES * STAGE_BYTES;
  static constexpr int STAGING_BYTES = 2 /* consumers */ * 2 /* buffers */ * CBOX_BYTES;
  static constexpr int SMEM_BYTES = RING_BYTES + STAGING_BYTES + 1024 /* alignment */ + 1024 /* barriers */;
  static_assert(sizeof(T) == 2, "fp16/bf16 only (k16 wgmma)");
  static_assert(BN % CBOX_COLS == 0, "the epilogue stores whole (64, 32) boxes");
  static_assert((BN / 2) % 4 == 0, "partials move as float4");
  static_assert(SMEM_BYTES <= 227 * 1024, "shared memory per block on Hopper is 227 KB");
};

// The work of one cluster: data-parallel tiles, then its stream-K range of tail slices.
struct Schedule {
  int G, c;            // clusters in the grid, this cluster
  int items, slices;   // cluster tiles, K slices per tile
  int dp_waves;        // full waves run whole
  long long tail_slices;
  __host__ __device__ long long range_start(int j) const { return (long long)j * tail_slices / G; }
};

__host__ __device__ inline Schedule make_schedule(int M, int N, int K, int bk, int G, int c, int sk_waves) {
  Schedule s;
  s.G = G;
  s.c = c;
  s.items = (M / (CLUSTER * BM)) * (N / BN);
  s.slices = K / bk;
  const int w = s.items / G - (sk_waves - 1);
  s.dp_waves = w > 0 ? w : 0;
  s.tail_slices = (long long)(s.items - s.dp_waves * G) * s.slices;
  return s;
}

// Calls f(item, k0, k1) for every piece of cluster s.c, in order.
template <class F>
__device__ __forceinline__ void for_each_piece(const Schedule& s, F&& f) {
  for (int w = 0; w < s.dp_waves; ++w) f(s.c + w * s.G, 0, s.slices);
  const long long b = s.range_start(s.c), e = s.range_start(s.c + 1);
  for (long long x = b; x < e;) {
    const int t = int(x / s.slices), k0 = int(x % s.slices);
    const long long tile_end = (long long)(t + 1) * s.slices;
    const int k1 = int((e < tile_end ? e : tile_end) - (long long)t * s.slices);
    f(s.dp_waves * s.G + t, k0, k1);
    x = (long long)t * s.slices + k1;
  }
}


// SK_WAVES = 1: only the last partial wave is split along K; 2: that and one full wave before it
// (streamk2w, a measured negative result: not registered).
template <class T, int SUPER_M, int SK_WAVES>
__global__ void __launch_bounds__(THREADS, 1)
    hgemm_wgmma_08(int M, int N, int K, const __grid_constant__ CUtensorMap mapA,
                   const __grid_constant__ CUtensorMap mapB, const __grid_constant__ CUtensorMap mapC,
                   unsigned char* workspace, std::uint64_t epoch) {
#ifdef GEMMLAB_SM90A_DEVICE
  using namespace gemmlab::hopper;
  using S = Shape<T>;
  constexpr int STEPS = S::BK / Wgmma<T, BN>::k;

  extern __shared__ unsigned char smem_raw[];
  // Slot s: (128, BK) tile of A then (BN, BK) tile of B^T, K-major, 128B-swizzled, 1024-aligned;
  // then consumer c's two (64, 32) fp32 staging boxes; then the barriers.
  unsigned char* smem = reinterpret_cast<unsigned char*>((reinterpret_cast<std::uintptr_t>(smem_raw) + 1023) & ~std::uintptr_t(1023));
  unsigned char* staging = smem + S::RING_BYTES;
  std::uint64_t* full = reinterpret_cast<std::uint64_t*>(staging + S::STAGING_BYTES);
  std::uint64_t* empty = full + STAGES;
  std::uint64_t* flags = reinterpret_cast<std::uint64_t*>(workspace);
  float* partials = reinterpret_cast<float*>(workspace + FLAG_BYTES);

  const int tid = threadIdx.x, wg = tid / 128;
  const int tiles_m = M / BM, tiles_n = N / BN;
  const unsigned rank = cluster_ctarank();
  const Schedule sched = make_schedule(M, N, K, S::BK, int(cluster_count_x()), int(cluster_id_x()), SK_WAVES);
  const int slices = sched.slices;

  if (tid == 0) {
    prefetch_tensor_map(&mapA);
    prefetch_tensor_map(&mapB);
    prefetch_tensor_map(&mapC);
    for (int s = 0; s < STAGES; ++s) {
      mbar_init(&full[s], 1);              // the producer's arrive.expect_tx, then the TMA bytes
      mbar_init(&empty[s], 2 * CLUSTER);   // one arrive per consumer warpgroup of each block
    }
    mbar_fence_init();
  }
  cluster_sync();  // the partner's barriers exist before any multicast or remote arrive

  if (wg == 0) {
    // Producer warpgroup: give registers away, one thread issues every copy.
    setmaxnreg_dec<40>();
    if (tid == 0) {
      int it = 0;  // slices issued so far, over all pieces: the ring's position and phase
      for_each_piece(sched, [&](int item, int k0, int k1) {
        int tr, tc;
        tile_coords<SUPER_M / CLUSTER>(item, tiles_m / CLUSTER, tiles_n, tr, tc);
        tr = CLUSTER * tr + int(rank);
        for (int kt = k0; kt < k1; ++kt, ++it)
          load_slice<STAGES, S::STAGE_BYTES, BN, CLUSTER>(smem, full, empty, it, &mapA, &mapB, S::A_BYTES, kt * S::BK,
                                                          tr * BM, tc * BN, rank);
      });
    }
  } else {
    // Consumer warpgroups: rows (wg - 1) * 64 .. + 63 of the block tile.
    setmaxnreg_inc<232>();
    const int c = wg - 1, ct = tid % 128;
    const bool leader = ct == 0;
    unsigned char* my_stage = staging + c * 2 * CBOX_BYTES;
    float d[BN / 2];  // (64, BN) accumulator fragment
    int it = 0;       // slices consumed so far, over all pieces
    // Workspace slot of (cluster j, this block, this consumer).
    auto slot_of = [&](int j) { return (j * CLUSTER + int(rank)) * 2 + c; };
    for_each_piece(sched, [&](int item, int k0, int k1) {
      int tr, tc;
      tile_coords<SUPER_M / CLUSTER>(item, tiles_m / CLUSTER, tiles_n, tr, tc);
      tr = CLUSTER * tr + int(rank);
      for (int kt = k0; kt < k1; ++kt, ++it) {
        const int s = it % STAGES;
        mbar_wait(&full[s], (it / STAGES) & 1);
        const unsigned char* slot = smem + s * S::STAGE_BYTES;
        wgmma_slice<T, BN, STEPS>(d, slot + c * 64 * 128, slot + S::A_BYTES, kt > k0);
        wgmma_wait<1>();  // the group of the previous slice is done: release its slot
        if (leader && kt > k0) release_slot<CLUSTER>(empty, (it - 1) % STAGES, rank);
      }
      wgmma_wait<0>();
      fence_regs(d);
      if (leader) release_slot<CLUSTER>(empty, (it - 1) % STAGES, rank);  // the piece's last slice
      if (k0 > 0) {
        // A partial: (64, BN) fp32 fragment to this cluster's slot, float4 q of thread ct at
        // (q * 128 + ct) * 4 (each warp writes 512 contiguous bytes per q), then the flag.
        float4* w = reinterpret_cast<float4*>(partials + std::size_t(slot_of(sched.c)) * PARTIAL_FLOATS);
#pragma unroll
        for (int q = 0; q < BN / 8; ++q) w[q * 128 + ct] = make_float4(d[4 * q], d[4 * q + 1], d[4 * q + 2], d[4 * q + 3]);
        named_bar_sync(1 + c, 128);
        if (leader) {
          __threadfence();
          st_release_gpu_u64(&flags[slot_of(sched.c)], epoch);
        }
        return;
      }
      if (k1 < slices) {
        // Owner of a split tile: add the later chunks in chunk order (clusters c+1, c+2, ...), fp32
        // round-to-nearest adds.
        const int t = item - sched.dp_waves * sched.G;
        const long long tile_end = (long long)(t + 1) * slices;
        for (int j = sched.c + 1; j < sched.G && sched.range_start(j) < tile_end; ++j) {
          if (sched.range_start(j + 1) == sched.range_start(j)) continue;  // an empty range wrote nothing
          if (leader)
            while (ld_acquire_gpu_u64(&flags[slot_of(j)]) != epoch) {
            }
          named_bar_sync(1 + c, 128);
          const float4* p = reinterpret_cast<const float4*>(partials + std::size_t(slot_of(j)) * PARTIAL_FLOATS);
#pragma unroll
          for (int q = 0; q < BN / 8; ++q) {
            const float4 v = p[q * 128 + ct];
            d[4 * q] += v.x;
            d[4 * q + 1] += v.y;
            d[4 * q + 2] += v.z;
            d[4 * q + 3] += v.w;
          }
        }
      }
      store_tile_tma(d, my_stage, &mapC, tr * BM + c * 64, tc * BN, 1 + c, leader);
    });
    if (leader) bulk_wait_group<0>();  // the staging buffers must outlive the last stores
  }
  cluster_sync();  // no block exits while its partner may still write into it
#else
  __trap();  // built without sm_90a: the descriptor says requires_sm90a, so this never launches
#endif
}

template <class T, int SUPER_M, int SK_WAVES>
void launch(const GemmArgs& a) {
  using S = Shape<T>;
  if (!a.workspace || a.workspace_bytes < WORKSPACE_BYTES)
    throw std::runtime_error("hgemm_wgmma_08_streamk: the harness passed less workspace than Kernel::workspace_bytes");
  static std::atomic<std::uint32_t> launches{0};  // epoch of the flags: new for every launch in this process (any GPU)
  const std::uint64_t epoch = EPOCH_MAGIC | ++launches;
  const CUtensorMap mapA = hopper::make_kmajor_tensor_map(a.A, a.M, a.K, sizeof(T), BM);
  const CUtensorMap mapB = hopper::make_kmajor_tensor_map(a.B, a.N, a.K, sizeof(T), BN / CLUSTER);
  const CUtensorMap mapC = hopper::make_f32_store_tensor_map(a.C, a.M, a.N, 64);
  const int items = (a.M / (CLUSTER * BM)) * (a.N / BN);
  // Every cluster of the grid MUST be resident (the stream-K owners spin on flags of higher-numbered
  // clusters): launch_persistent sizes the grid by the occupancy API, capped by the workspace slots.
  hopper::launch_persistent<hgemm_wgmma_08<T, SUPER_M, SK_WAVES>, CLUSTER>(
      "hgemm_wgmma_08_streamk", THREADS, S::SMEM_BYTES, items, MAX_CLUSTERS, a.stream, a.M, a.N, a.K, mapA, mapB, mapC,
      static_cast<unsigned char*>(a.workspace), epoch);
}

// The tail tiles' K is split over clusters and their fp32 partial sums added in k order: those
// entries are summed in chunks (Numerics::k_chunked), where chunk_map says.
constexpr Numerics streamk_numerics(Format in) {
  Numerics n = wgmma_f32_numerics(in, 0);
  n.k_chunked = true;
  return n;
}

// Where this kernel cuts K on the current GPU: the schedule above with the grid the launch uses.
// Every block tile of a cluster tile gets the cluster tile's cuts: the K-chunk boundaries are the
// starts of the clusters' tail ranges that fall strictly inside the tile's slices (an empty range
// adds no cut), in elements of K.
template <class T, int SUPER_M, int SK_WAVES>
KChunkMap chunk_map(int M, int N, int K) {
  using S = Shape<T>;
  const int tiles_m = M / BM, tiles_n = N / BN;
  const int items = (M / (CLUSTER * BM)) * (N / BN);
  const int G = hopper::persistent_grid<hgemm_wgmma_08<T, SUPER_M, SK_WAVES>, CLUSTER>(
      "hgemm_wgmma_08_streamk", THREADS, S::SMEM_BYTES, items, MAX_CLUSTERS);
  const Schedule s = make_schedule(M, N, K, S::BK, G, 0, SK_WAVES);
  KChunkMap map{.tile_m = BM, .tile_n = BN, .tiles_n = tiles_n,
                .bounds = std::vector<std::vector<int>>(std::size_t(tiles_m) * tiles_n)};
  for (int item = 0; item < items; ++item) {
    std::vector<int> cuts = {0};
    if (item >= s.dp_waves * G) {
      const long long first = (long long)(item - s.dp_waves * G) * s.slices, end = first + s.slices;
      for (int c = 1; c < G; ++c) {
        const long long x = s.range_start(c);
        if (x > first && x < end && int(x - first) * S::BK != cuts.back()) cuts.push_back(int(x - first) * S::BK);
      }
    }
    cuts.push_back(K);
    int tr, tc;
    tile_coords<SUPER_M / CLUSTER>(item, tiles_m / CLUSTER, tiles_n, tr, tc);
    for (int r = 0; r < CLUSTER; ++r) map.bounds[std::size_t(CLUSTER * tr + r) * tiles_n + tc] = cuts;
  }
  return map;
}

template <class T, int SUPER_M, int SK_WAVES>
constexpr Kernel make(const char* name, const char* desc, Format in) {
  Kernel k = hopper::wgmma_f32_kernel(name, desc, streamk_numerics(in), CLUSTER * BM, BN, Shape<T>::BK,
                                      WORKSPACE_BYTES, launch<T, SUPER_M, SK_WAVES>);
  k.k_chunks = chunk_map<T, SUPER_M, SK_WAVES>;
  return k;
}

}  // namespace

#define GEMMLAB_WGMMA08_VARIANT(id, desc, fmt, T, SUPER_M, SK_WAVES)              \
  const Kernel& id() {                                                          \
    static const Kernel k = make<T, SUPER_M, SK_WAVES>(#id, desc, Format::fmt);  \
    return k;                                                                   \
  }

#define GEMMLAB_WGMMA08_DESC(tail)                                                                              \
  "step 7 (clusters of 2, B multicast, 128x256, 4 stages, super_M 16, TMA-store epilogue) with a stream-K " tail \
  "; in_wgmma per K chunk, split tiles' chunks added in k order by fp32 round-to-nearest adds (deterministic)"

GEMMLAB_WGMMA08_VARIANT(hgemm_wgmma_08_streamk_sm16_fp16_in_wgmma, GEMMLAB_WGMMA08_DESC("tail (last partial wave)"),
                        fp16, __half, 16, 1)
GEMMLAB_WGMMA08_VARIANT(hgemm_wgmma_08_streamk_sm16_bf16_in_wgmma, GEMMLAB_WGMMA08_DESC("tail (last partial wave)"),
                        bf16, __nv_bfloat16, 16, 1)
}  // namespace gemmlab::kernels
