// Shared pieces of the persistent Hopper kernels (steps 6-9): the super_M tile order and the
// asynchronous TMA-store epilogue of one consumer warpgroup. Device code needs sm_90a
// (GEMMLAB_SM90A_DEVICE, from hopper_ptx.cuh); tile_coords is plain arithmetic.
#pragma once

#include <cstdint>
#include <utility>

#include "kernels/common/hopper_ptx.cuh"

namespace gemmlab::hopper {

constexpr int CBOX_COLS = 32;                   // (64, 32) fp32 staging box = 128-byte rows, the swizzle's width
constexpr int CBOX_BYTES = 64 * CBOX_COLS * 4;  // 8 KB

// Tile `id` of the swizzled order -> (tile row, tile column): groups of SUPER_M tile rows, column by
// column inside a group, the last group shorter when tiles_m is not a multiple of SUPER_M (step 4).
template <int SUPER_M>
__device__ __forceinline__ void tile_coords(int id, int tiles_m, int tiles_n, int& row, int& col) {
  const int first = (id / (SUPER_M * tiles_n)) * SUPER_M;  // first tile row of this group
  const int h = min(SUPER_M, tiles_m - first);             // group height (smaller for the last one)
  const int local = id - first * tiles_n;
  row = first + local % h;
  col = local / h;
}

#ifdef GEMMLAB_SM90A_DEVICE
// One (64, 32) box of a consumer warpgroup's (64, BN) fragment v, columns 32Q .. 32Q + 31 (v[16Q ..
// 16Q + 15]) -> C rows row0 .., columns col .., through the staging buffer `buf` (CBOX_BYTES,
// 1024-aligned), handed to the TMA engine as one bulk async-group. Waits first until at most one of
// the leader's earlier groups still reads shared memory, so `buf` may be reused every second box.
// Named barrier bar_id over the warpgroup's 128 threads.
// Fragment layout (see the wgmma wrappers): v[4j + 2h + e] = D(16w + l/4 + 8h, 8j + 2(l%4) + e).
template <int Q, int R>
__device__ __forceinline__ void store_box_tma(const float (&v)[R], unsigned char* buf, const CUtensorMap* mapC,
                                              int row0, int col, int bar_id, bool leader) {
  static_assert(16 * (Q + 1) <= R, "box Q lies inside the fragment");
  const int t = threadIdx.x % 128, w = t / 32, l = t % 32;
  if (leader) bulk_wait_group_read<1>();  // the box stored from this buffer two boxes ago has been read
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
// alternating between the two staging buffers `stage` (box Q in buffer Q & 1).
template <int Q0, int NQ, int R>
__device__ __forceinline__ void store_boxes_tma(const float (&v)[R], unsigned char* stage, const CUtensorMap* mapC,
                                                int row0, int col0, int bar_id, bool leader) {
  [&]<int... I>(std::integer_sequence<int, I...>) {
    (store_box_tma<Q0 + I>(v, stage + ((Q0 + I) & 1) * CBOX_BYTES, mapC, row0, col0 + (Q0 + I) * CBOX_COLS, bar_id,
                           leader),
     ...);
  }(std::make_integer_sequence<int, NQ>{});
}

// The whole (64, BN) fragment, BN / 32 boxes; waits only until the box written two boxes earlier
// has been read out of shared memory.
template <int R>
__device__ __forceinline__ void store_tile_tma(const float (&v)[R], unsigned char* stage, const CUtensorMap* mapC,
                                               int row0, int col0, int bar_id, bool leader) {
  store_boxes_tma<0, (R / 4 * 8) / CBOX_COLS>(v, stage, mapC, row0, col0, bar_id, leader);
}
#endif

}  // namespace gemmlab::hopper
