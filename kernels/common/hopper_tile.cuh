// Shared pieces of the warp-specialised Hopper kernels (steps 3-10): the super_M tile
// order, one k-slice of the producer (TMA into the ring, B multicast across a cluster of 2) and of a
// consumer warpgroup (the slice's wgmmas as one group), the release of a ring slot, the asynchronous
// TMA-store epilogue of one consumer warpgroup, and the persistent cluster launch. Device code needs
// sm_90a (GEMMLAB_SM90A_DEVICE, from hopper_ptx.cuh); tile_coords is plain arithmetic.
#pragma once

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <utility>

#include "kernels/common/cuda_check.cuh"
#include "kernels/common/per_device.cuh"
#include "kernels/common/hopper_ptx.cuh"
#include "kernels/kernel.hpp"

namespace gemmlab::hopper {

constexpr int CBOX_COLS = 32;                   // (64, 32) fp32 staging box = 128-byte rows, the swizzle's width
constexpr int CBOX_BYTES = 64 * CBOX_COLS * 4;  // 8 KB

// Tile `id` of the swizzled order -> (tile row, tile column): groups of SUPER_M tile rows, column by
// column inside a group, the last group shorter when tiles_m is not a multiple of SUPER_M (step 4).
// Host code calls it too (the stream-K kernel's chunk map for the CPU emulation).
template <int SUPER_M>
__host__ __device__ __forceinline__ void tile_coords(int id, int tiles_m, int tiles_n, int& row, int& col) {
  const int first = (id / (SUPER_M * tiles_n)) * SUPER_M;               // first tile row of this group
  const int h = SUPER_M < tiles_m - first ? SUPER_M : tiles_m - first;  // group height (smaller for the last one)
  const int local = id - first * tiles_n;
  row = first + local % h;
  col = local / h;
}

#ifdef GEMMLAB_SM90A_DEVICE
// Producer: k-slice kt of a block tile into ring position `it` (slot it % STAGES, each STAGE_BYTES:
// the (BM, BK) slice of A at a_bytes = BM * 128, then the (BN, BK) slice of B^T, both K-major with
// the 128-byte swizzle). Waits until the consumers freed the slot (from the second lap on), arms the
// full barrier with the whole stage, then loads A rows a_row.. and B rows (= C columns) b_col..
// b_col + BN - 1. CLUSTER 2: the two blocks of a cluster share the B slice; each loads its half,
// BN / 2 rows at offset rank * BN / 2, multicast into both blocks at the same offset, so the full
// barrier of each block still receives a whole stage.
template <int STAGES, int STAGE_BYTES, int BN, int CLUSTER>
__device__ __forceinline__ void load_slice(unsigned char* smem, std::uint64_t* full, std::uint64_t* empty, int it,
                                           const CUtensorMap* mapA, const CUtensorMap* mapB, int a_bytes, int k0,
                                           int a_row, int b_col, unsigned rank) {
  static_assert(CLUSTER == 1 || CLUSTER == 2, "clusters of one or two blocks");
  const int s = it % STAGES;
  if (it >= STAGES) mbar_wait(&empty[s], ((it / STAGES) - 1) & 1);  // consumers freed the slot
  unsigned char* slot = smem + s * STAGE_BYTES;
  mbar_arrive_expect_tx(&full[s], STAGE_BYTES);
  tma_load_2d(slot, mapA, &full[s], k0, a_row);
  if constexpr (CLUSTER == 1) {
    tma_load_2d(slot + a_bytes, mapB, &full[s], k0, b_col);
  } else {
    tma_load_2d_multicast(slot + a_bytes + rank * (BN / 2) * 128, mapB, &full[s], k0, b_col + int(rank) * (BN / 2),
                          std::uint16_t(0x3));
  }
}

// Consumer: frees ring slot s for the producer of every block of the cluster (CLUSTER 2: the partner's
// producer multicasts into this slot too, so its empty barrier counts this warpgroup as well). The
// remote arrive keeps the default .release.cta semantics: the slot was read only by wgmma, complete
// at wgmma.wait_group, so no cluster-scope fence is needed (.release.cluster made steps 5 and 6's
// cluster variant much slower: results/hopper/README.md#step-7).
template <int CLUSTER>
__device__ __forceinline__ void release_slot(std::uint64_t* empty, int s, unsigned rank) {
  mbar_arrive(&empty[s]);
  if constexpr (CLUSTER == 2) mbar_arrive_remote(&empty[s], rank ^ 1u);
}

// Consumer: one k-slice of a warpgroup, the (64, BK) rows of A at sA times the (BN, BK) slice of B^T
// at sB, as BK / k wgmmas m64nBNk in increasing k, committed as one group (COMMIT_EACH: each wgmma
// as its own group, so wgmma_wait<n> can tell how many of them are still running); accumulate = false
// starts the fragment afresh (scale-d 0 on the first wgmma).
template <class T, int BN, int STEPS, bool COMMIT_EACH = false>
__device__ __forceinline__ void wgmma_slice(float (&d)[BN / 2], const unsigned char* sA, const unsigned char* sB,
                                            bool accumulate) {
  wgmma_fence();
#pragma unroll
  for (int k = 0; k < STEPS; ++k) {
    Wgmma<T, BN>::run(d, make_desc_sw128(sA + k * 32), make_desc_sw128(sB + k * 32), (accumulate || k > 0) ? 1 : 0);
    if (COMMIT_EACH) wgmma_commit();
  }
  if (!COMMIT_EACH) wgmma_commit();
}

// Consumer: k-slice kt in the accumulation mode of steps 3-6. PSTEPS = 0: in_wgmma, as wgmma_slice
// (the fragment restarts at kt = 0). PSTEPS > 0: promoted_every_N with N = PSTEPS k-steps: the wgmma
// accumulator d restarts every PSTEPS k-steps (counted from k = 0 of the tile) and is added into p
// with fp32 round-to-nearest adds after waiting for its wgmmas. The slice's last wgmmas are committed
// as one group.
template <class T, int BN, int STEPS, int PSTEPS>
__device__ __forceinline__ void wgmma_slice_mode(float (&d)[BN / 2], float (&p)[BN / 2], const unsigned char* sA,
                                                 const unsigned char* sB, int kt) {
  if constexpr (PSTEPS == 0) {
    wgmma_slice<T, BN, STEPS>(d, sA, sB, kt > 0);
  } else {
    wgmma_fence();
#pragma unroll
    for (int k = 0; k < STEPS; ++k) {
      const int g = kt * STEPS + k;
      Wgmma<T, BN>::run(d, make_desc_sw128(sA + k * 32), make_desc_sw128(sB + k * 32), g % PSTEPS != 0 ? 1 : 0);
      if ((g + 1) % PSTEPS == 0) {
        wgmma_commit();
        wgmma_wait<0>();
        fence_regs(d);
        promote_add(p, d);
        wgmma_fence();
      }
    }
    wgmma_commit();
  }
}

// One (64, 32) box of a consumer warpgroup's (64, BN) fragment v, columns 32Q .. 32Q + 31 (v[16Q ..
// 16Q + 15]) -> C rows row0 .., columns col .., through the staging buffer `buf` (CBOX_BYTES,
// 1024-aligned), handed to the TMA engine as one bulk async-group. Waits first until at most
// BUFFERS - 1 of the leader's earlier groups still read shared memory, so `buf` may be reused every
// BUFFERS-th box (2: two staging buffers in turn; 1: one, each box waiting for the previous one's read).
// Named barrier bar_id over the warpgroup's 128 threads.
// Fragment layout (see the wgmma wrappers): v[4j + 2h + e] = D(16w + l/4 + 8h, 8j + 2(l%4) + e).
template <int Q, int R, int BUFFERS = 2>
__device__ __forceinline__ void store_box_tma(const float (&v)[R], unsigned char* buf, const CUtensorMap* mapC,
                                              int row0, int col, int bar_id, bool leader) {
  static_assert(16 * (Q + 1) <= R, "box Q lies inside the fragment");
  static_assert(BUFFERS == 1 || BUFFERS == 2, "one or two staging buffers");
  const int t = threadIdx.x % 128, w = t / 32, l = t % 32;
  if (leader) bulk_wait_group_read<BUFFERS - 1>();  // the box stored from this buffer BUFFERS boxes ago has been read
  named_bar_sync(bar_id, 128);
#pragma unroll
  for (int jj = 0; jj < 4; ++jj) {  // four 8-column blocks per 32-column box
    const int j = 4 * Q + jj;
#pragma unroll
    for (int h = 0; h < 2; ++h) {
      const int r = 16 * w + l / 4 + 8 * h;
      const int chunk = 2 * jj + (l % 4) / 2;  // 16-byte chunk of the 128-byte row
      const std::uint32_t off = std::uint32_t(r) * 128u + (std::uint32_t(chunk ^ (r & 7)) << 4) + (l % 2) * 8u;
      *reinterpret_cast<float2*>(buf + off) = make_float2(v[4 * j + 2 * h], v[4 * j + 2 * h + 1]);
    }
  }
  fence_proxy_async_smem();  // this thread's writes -> visible to the TMA engine
  named_bar_sync(bar_id, 128);
  if (leader) {
    tma_store_2d(mapC, buf, col, row0);
    bulk_commit_group();
  }
}

// Epilogue of one consumer warpgroup: boxes Q0 .. Q0 + NQ - 1 of its fragment v -> C, the boxes
// taking the BUFFERS staging buffers `stage` in turn (box Q in buffer Q % BUFFERS).
template <int Q0, int NQ, int R, int BUFFERS = 2>
__device__ __forceinline__ void store_boxes_tma(const float (&v)[R], unsigned char* stage, const CUtensorMap* mapC,
                                                int row0, int col0, int bar_id, bool leader) {
  [&]<int... I>(std::integer_sequence<int, I...>) {
    (store_box_tma<Q0 + I, R, BUFFERS>(v, stage + ((Q0 + I) % BUFFERS) * CBOX_BYTES, mapC, row0,
                                       col0 + (Q0 + I) * CBOX_COLS, bar_id, leader),
     ...);
  }(std::make_integer_sequence<int, NQ>{});
}

// The whole (64, BN) fragment, BN / 32 boxes; waits only until the box written BUFFERS boxes earlier
// has been read out of shared memory.
template <int BUFFERS = 2, int R>
__device__ __forceinline__ void store_tile_tma(const float (&v)[R], unsigned char* stage, const CUtensorMap* mapC,
                                               int row0, int col0, int bar_id, bool leader) {
  store_boxes_tma<0, (R / 4 * 8) / CBOX_COLS, R, BUFFERS>(v, stage, mapC, row0, col0, bar_id, leader);
}
#endif

// Descriptor of a wgmma kernel of steps 6-10 (numerics: usually wgmma_f32_numerics(in, promotion
// interval)): A row-major, B column-major, sm_90a.
constexpr Kernel wgmma_f32_kernel(const char* name, const char* desc, Numerics numerics, int m_multiple,
                                  int n_multiple, int k_multiple, std::size_t workspace_bytes,
                                  void (*launch)(const GemmArgs&)) {
  return Kernel{
      .name = name, .family = "hopper", .description = desc,
      .numerics = numerics,
      .layout_a = Layout::row_major, .layout_b = Layout::col_major,
      .m_multiple = m_multiple, .n_multiple = n_multiple, .k_multiple = k_multiple,
      .min_cc = 90, .requires_sm90a = true, .workspace_bytes = workspace_bytes,
      .launch = launch,
  };
}

// A launch of blocks of `threads` with `smem_bytes` of dynamic shared memory in clusters of CLUSTER
// along x (no cluster attribute for 1) on `grid` clusters; the attribute lives in the struct.
template <int CLUSTER>
struct ClusterLaunch {
  cudaLaunchConfig_t cfg{};
  cudaLaunchAttribute attr[1];
  ClusterLaunch(int threads, int smem_bytes, int grid, cudaStream_t stream) {
    attr[0].id = cudaLaunchAttributeClusterDimension;
    attr[0].val.clusterDim.x = CLUSTER;
    attr[0].val.clusterDim.y = 1;
    attr[0].val.clusterDim.z = 1;
    cfg.blockDim = dim3(threads);
    cfg.dynamicSmemBytes = smem_bytes;
    cfg.stream = stream;
    cfg.attrs = attr;
    cfg.numAttrs = CLUSTER == 1 ? 0 : 1;
    cfg.gridDim = dim3(CLUSTER * grid);
  }
  ClusterLaunch(const ClusterLaunch&) = delete;  // cfg.attrs points into this object
};

// Grid of a persistent launch of KERNEL (one template instance per kernel, so the co-resident count
// is cached per kernel and GPU): blocks of `threads` with `smem_bytes` of dynamic shared memory, in
// clusters of CLUSTER blocks along x. Returns the number of blocks (clusters) that can be resident
// at once, at most `items` and at most max_resident: for clusters that is what
// cudaOccupancyMaxActiveClusters says, not SMs / 2, since a cluster must fit in one GPC and a
// cluster that is not resident would run only after the others (a second, nearly empty wave).
// GEMMLAB_HOPPER_VERBOSE=1 prints the count. Host code that must know a kernel's schedule (the
// stream-K chunk map) asks this too, so it sees the grid the launch uses.
template <auto KERNEL, int CLUSTER>
int persistent_grid(const char* name, int threads, int smem_bytes, int items, int max_resident) {
  static PerDevice<int> resident_per_device;  // occupancy and the attribute belong to the current GPU
  const int resident = resident_per_device.get([&] {
    GEMMLAB_CUDA_CHECK(cudaFuncSetAttribute(KERNEL, cudaFuncAttributeMaxDynamicSharedMemorySize, smem_bytes));
    int n = sm_count();
    if (CLUSTER > 1) {
      const ClusterLaunch<CLUSTER> q(threads, smem_bytes, sm_count(), nullptr);
      GEMMLAB_CUDA_CHECK(cudaOccupancyMaxActiveClusters(&n, KERNEL, &q.cfg));
    }
    if (std::getenv("GEMMLAB_HOPPER_VERBOSE"))
      std::fprintf(stderr, "%s: %d resident clusters of %d at %d bytes of shared memory (%d SMs)\n", name, n, CLUSTER,
                   smem_bytes, sm_count());
    return n > 0 ? n : 1;
  });
  int grid = resident < max_resident ? resident : max_resident;
  if (items < grid) grid = items;
  return grid;
}

// Persistent launch of KERNEL on the grid persistent_grid gives (clusters of CLUSTER along x).
template <auto KERNEL, int CLUSTER, class... Args>
void launch_persistent(const char* name, int threads, int smem_bytes, int items, int max_resident, void* stream,
                       Args... args) {
  const int grid = persistent_grid<KERNEL, CLUSTER>(name, threads, smem_bytes, items, max_resident);
  const ClusterLaunch<CLUSTER> cl(threads, smem_bytes, grid, as_stream(stream));
  GEMMLAB_CUDA_CHECK(cudaLaunchKernelEx(&cl.cfg, KERNEL, args...));
  GEMMLAB_LAUNCH_CHECK(name);
}

}  // namespace gemmlab::hopper
