// PTX wrappers for the Hopper family (sm_90a): wgmma shared-memory descriptors and mma_async
// wrappers, wgmma fences, mbarriers, TMA (cp.async.bulk.tensor) loads, setmaxnreg, and the host-side
// encoding of TMA tensor maps through the driver entry point (gemmlab never links libcuda).
//
// One shared-memory layout serves every Hopper kernel: an operand tile is stored K-major, one row of
// 128 bytes per M (or N) index (64 fp16/bf16 or 128 fp8 elements of K), in the 128-byte swizzle
// that both TMA (CU_TENSOR_MAP_SWIZZLE_128B) and wgmma (descriptor swizzle mode 1) understand:
// within each 1024-byte atom of 8 rows, the 16-byte chunk c of row r sits at chunk c ^ (r % 8).
// Tiles must start 1024-byte aligned.
#pragma once
#include <cuda.h>  // CUtensorMap and the driver's enums (types only: no libcuda link)
#include <cuda_runtime.h>

#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_fp8.h>

#include <cstdint>
#include <stdexcept>
#include <string>

#include "kernels/common/per_device.cuh"

// Device code of this family compiles only for the sm_90a target; elsewhere kernels have an empty
// (or trapping) body and their descriptors say requires_sm90a, so the harness reports not_supported.
#if defined(__CUDA_ARCH__) && (__CUDA_ARCH__ >= 900) && defined(__CUDA_ARCH_FEAT_SM90_ALL)
#define GEMMLAB_SM90A_DEVICE 1
#endif

namespace gemmlab::hopper {

// Host side ---------------------------------------------------------------------------------------

// cuTensorMapEncodeTiled, fetched once from the driver through the runtime (no libcuda link).
using EncodeTiledFn = CUresult (*)(CUtensorMap*, CUtensorMapDataType, cuuint32_t, void*, const cuuint64_t*,
                                   const cuuint64_t*, const cuuint32_t*, const cuuint32_t*, CUtensorMapInterleave,
                                   CUtensorMapSwizzle, CUtensorMapL2promotion, CUtensorMapFloatOOBfill);
inline EncodeTiledFn encode_tiled_fn() {
  static EncodeTiledFn fn = [] {
    void* p = nullptr;
    cudaDriverEntryPointQueryResult q{};
    cudaError_t e = cudaGetDriverEntryPointByVersion("cuTensorMapEncodeTiled", &p, 12000, cudaEnableDefault, &q);
    if (e != cudaSuccess || q != cudaDriverEntryPointSuccess || !p)
      throw std::runtime_error(std::string("cannot get cuTensorMapEncodeTiled from the CUDA driver (") +
                               cudaGetErrorString(e) + "); a driver for CUDA 12.0 or newer is needed");
    return reinterpret_cast<EncodeTiledFn>(p);
  }();
  return fn;
}

// Encodes a 2D tensor map for a K-major operand: `rows` rows of `k` elements of `elem_bytes` each
// (row stride k * elem_bytes), copied in boxes of (box_rows, 128 bytes of K) with the 128-byte swizzle.
// Throws std::runtime_error with the driver's status on failure.
inline CUtensorMap make_kmajor_tensor_map(const void* base, int rows, int k, int elem_bytes, int box_rows) {
  CUtensorMap map{};
  const CUtensorMapDataType dtype =
      elem_bytes == 2 ? CU_TENSOR_MAP_DATA_TYPE_FLOAT16 : CU_TENSOR_MAP_DATA_TYPE_UINT8;  // bits only
  const cuuint64_t dims[2] = {cuuint64_t(k), cuuint64_t(rows)};
  const cuuint64_t strides[1] = {cuuint64_t(k) * cuuint64_t(elem_bytes)};
  const cuuint32_t box[2] = {cuuint32_t(128 / elem_bytes), cuuint32_t(box_rows)};
  const cuuint32_t elem_strides[2] = {1, 1};
  CUresult r = encode_tiled_fn()(&map, dtype, 2, const_cast<void*>(base), dims, strides, box, elem_strides,
                                 CU_TENSOR_MAP_INTERLEAVE_NONE, CU_TENSOR_MAP_SWIZZLE_128B,
                                 CU_TENSOR_MAP_L2_PROMOTION_L2_256B, CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE);
  if (r != CUDA_SUCCESS)
    throw std::runtime_error("cuTensorMapEncodeTiled failed with CUresult " + std::to_string(int(r)) +
                             " for a (" + std::to_string(rows) + ", " + std::to_string(k) +
                             ") operand; K * element size must be a multiple of 16 bytes and the base 16-byte aligned");
  return map;
}

// Encodes a 2D tensor map for storing a row-major fp32 matrix (rows, cols) with TMA in boxes of
// (box_rows, 32 floats = 128 bytes) in the 128-byte swizzle: the staging tile in shared memory holds
// row r's 16-byte chunk c at chunk c ^ (r % 8), so a warp's fragment writes are free of bank
// conflicts. Throws std::runtime_error with the driver's status on failure.
inline CUtensorMap make_f32_store_tensor_map(void* base, int rows, int cols, int box_rows) {
  CUtensorMap map{};
  const cuuint64_t dims[2] = {cuuint64_t(cols), cuuint64_t(rows)};
  const cuuint64_t strides[1] = {cuuint64_t(cols) * 4u};
  const cuuint32_t box[2] = {32u, cuuint32_t(box_rows)};
  const cuuint32_t elem_strides[2] = {1, 1};
  CUresult r = encode_tiled_fn()(&map, CU_TENSOR_MAP_DATA_TYPE_FLOAT32, 2, base, dims, strides, box, elem_strides,
                                 CU_TENSOR_MAP_INTERLEAVE_NONE, CU_TENSOR_MAP_SWIZZLE_128B,
                                 CU_TENSOR_MAP_L2_PROMOTION_NONE, CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE);
  if (r != CUDA_SUCCESS)
    throw std::runtime_error("cuTensorMapEncodeTiled failed with CUresult " + std::to_string(int(r)) +
                             " for a (" + std::to_string(rows) + ", " + std::to_string(cols) +
                             ") fp32 output; cols * 4 must be a multiple of 16 bytes and the base 16-byte aligned");
  return map;
}

// Number of SMs of the current device (cached per device: --gpus runs one worker per GPU).
inline int sm_count() {
  static PerDevice<int> n;
  return n.get([] {
    int dev = 0, count = 0;
    cudaGetDevice(&dev);
    cudaDeviceGetAttribute(&count, cudaDevAttrMultiProcessorCount, dev);
    return count > 0 ? count : 1;
  });
}

#ifdef GEMMLAB_SM90A_DEVICE
// Device side -------------------------------------------------------------------------------------

__device__ __forceinline__ std::uint32_t smem_u32(const void* p) {
  return static_cast<std::uint32_t>(__cvta_generic_to_shared(p));
}

// wgmma shared-memory matrix descriptor for a K-major tile in the 128-byte swizzle: start address,
// leading byte offset unused for swizzled K-major layouts (1 by convention), stride byte offset
// 1024 bytes (from one 8-row atom to the next), swizzle mode 1 (128B) in bits 62-63. Advancing along
// K inside the 128-byte row is done by adding the byte offset (32 bytes per k16 fp16 / k32 fp8 step)
// to the start address; the hardware applies the swizzle to the full address.
__device__ __forceinline__ std::uint64_t make_desc_sw128(const void* tile) {
  std::uint64_t addr = smem_u32(tile);
  std::uint64_t d = 0;
  d |= (addr & 0x3FFFF) >> 4;               // bits 0-13: start address >> 4
  d |= std::uint64_t(16 >> 4) << 16;        // bits 16-29: leading byte offset >> 4 (unused here)
  d |= std::uint64_t(1024 >> 4) << 32;      // bits 32-45: stride byte offset >> 4
  d |= std::uint64_t(1) << 62;              // bits 62-63: 128-byte swizzle
  return d;
}

// Byte offset of the 16-byte chunk `chunk` (0..7) of row `row` in a 128B-swizzled K-major tile.
__device__ __forceinline__ std::uint32_t sw128_offset(int row, int chunk) {
  return std::uint32_t(row) * 128u + (std::uint32_t(chunk ^ (row & 7)) << 4);
}

__device__ __forceinline__ void wgmma_fence() { asm volatile("wgmma.fence.sync.aligned;\n" ::: "memory"); }
__device__ __forceinline__ void wgmma_commit() { asm volatile("wgmma.commit_group.sync.aligned;\n" ::: "memory"); }
template <int N>
__device__ __forceinline__ void wgmma_wait() {
  asm volatile("wgmma.wait_group.sync.aligned %0;\n" ::"n"(N) : "memory");
}
// Keeps the compiler from moving accumulator reads/writes across the asynchronous wgmma.
template <int R>
__device__ __forceinline__ void fence_regs(float (&d)[R]) {
#pragma unroll
  for (int i = 0; i < R; ++i) asm volatile("" : "+f"(d[i])::"memory");
}

// Promotion: P += D with round-to-nearest fp32 adds on the CUDA cores (never contracted into an FMA).
template <int R>
__device__ __forceinline__ void promote_add(float (&p)[R], const float (&d)[R]) {
#pragma unroll
  for (int i = 0; i < R; ++i) p[i] = __fadd_rn(p[i], d[i]);
}

// Stores a warpgroup's (64, 8 * R / 4) fp32 accumulator fragment (layout: see the wgmma wrappers)
// into row-major C with leading dimension ldc, the fragment's (0, 0) at c.
template <int R>
__device__ __forceinline__ void store_fragment(float* c, int ldc, const float (&v)[R]) {
  const int t = threadIdx.x % 128, w = t / 32, l = t % 32;
  float* row0 = c + std::size_t(16 * w + l / 4) * ldc + 2 * (l % 4);
  float* row8 = row0 + std::size_t(8) * ldc;
#pragma unroll
  for (int j = 0; j < R / 4; ++j) {
    *reinterpret_cast<float2*>(row0 + 8 * j) = make_float2(v[4 * j + 0], v[4 * j + 1]);
    *reinterpret_cast<float2*>(row8 + 8 * j) = make_float2(v[4 * j + 2], v[4 * j + 3]);
  }
}

// Ordinary (generic-proxy) shared-memory stores made visible to the async proxy (wgmma, TMA).
__device__ __forceinline__ void fence_proxy_async_smem() {
  asm volatile("fence.proxy.async.shared::cta;\n" ::: "memory");
}

// mbarrier -------------------------------------------------------------------------------------
__device__ __forceinline__ void mbar_init(std::uint64_t* bar, unsigned count) {
  asm volatile("mbarrier.init.shared::cta.b64 [%0], %1;\n" ::"r"(smem_u32(bar)), "r"(count) : "memory");
}
__device__ __forceinline__ void mbar_fence_init() {
  asm volatile("fence.mbarrier_init.release.cluster;\n" ::: "memory");
}
// Arrive once and announce `bytes` of transactions (TMA) that must land before the phase completes.
__device__ __forceinline__ void mbar_arrive_expect_tx(std::uint64_t* bar, unsigned bytes) {
  asm volatile("mbarrier.arrive.expect_tx.shared::cta.b64 _, [%0], %1;\n" ::"r"(smem_u32(bar)), "r"(bytes)
               : "memory");
}
__device__ __forceinline__ void mbar_arrive(std::uint64_t* bar) {
  asm volatile("mbarrier.arrive.shared::cta.b64 _, [%0];\n" ::"r"(smem_u32(bar)) : "memory");
}
// Waits until the phase with parity `parity` of the barrier has completed.
__device__ __forceinline__ void mbar_wait(std::uint64_t* bar, unsigned parity) {
  const std::uint32_t addr = smem_u32(bar);
  std::uint32_t done = 0;
  do {
    asm volatile(
        "{\n.reg .pred p;\n"
        "mbarrier.try_wait.parity.shared::cta.b64 p, [%1], %2;\n"
        "selp.u32 %0, 1, 0, p;\n}\n"
        : "=r"(done)
        : "r"(addr), "r"(parity)
        : "memory");
  } while (!done);
}

// TMA: 2D tile load of box (c0 = k coordinate in elements, c1 = row) into shared memory, completing
// as transaction bytes on `bar`.
__device__ __forceinline__ void tma_load_2d(void* dst, const CUtensorMap* map, std::uint64_t* bar, int c0, int c1) {
  asm volatile(
      "cp.async.bulk.tensor.2d.shared::cluster.global.tile.mbarrier::complete_tx::bytes [%0], [%1, {%3, %4}], [%2];\n"
      ::"r"(smem_u32(dst)), "l"(reinterpret_cast<std::uint64_t>(map)), "r"(smem_u32(bar)), "r"(c0), "r"(c1)
      : "memory");
}
// Bulk copy (TMA, no tensor map): `bytes` contiguous bytes from global `src` into shared `dst`,
// completing as transaction bytes on `bar`. bytes, src and dst: multiples of 16.
__device__ __forceinline__ void bulk_load_1d(void* dst, const void* src, unsigned bytes, std::uint64_t* bar) {
  asm volatile("cp.async.bulk.shared::cluster.global.mbarrier::complete_tx::bytes [%0], [%1], %2, [%3];\n"
               ::"r"(smem_u32(dst)), "l"(reinterpret_cast<std::uint64_t>(src)), "r"(bytes), "r"(smem_u32(bar))
               : "memory");
}
__device__ __forceinline__ void prefetch_tensor_map(const CUtensorMap* map) {
  asm volatile("prefetch.tensormap [%0];\n" ::"l"(reinterpret_cast<std::uint64_t>(map)) : "memory");
}

// TMA store: the 2D box at (c0 = column, c1 = row) of the tensor map's global tensor is written from
// shared memory `src` (in the map's swizzle) as part of this thread's current bulk async-group.
// The generic-proxy writes to `src` must be fenced (fence_proxy_async_smem) and synchronised first.
__device__ __forceinline__ void tma_store_2d(const CUtensorMap* map, const void* src, int c0, int c1) {
  asm volatile("cp.async.bulk.tensor.2d.global.shared::cta.bulk_group [%0, {%2, %3}], [%1];\n"
               ::"l"(reinterpret_cast<std::uint64_t>(map)), "r"(smem_u32(src)), "r"(c0), "r"(c1)
               : "memory");
}
__device__ __forceinline__ void bulk_commit_group() { asm volatile("cp.async.bulk.commit_group;\n" ::: "memory"); }
// Waits until at most N of this thread's bulk async-groups still read their shared-memory source.
template <int N>
__device__ __forceinline__ void bulk_wait_group_read() {
  asm volatile("cp.async.bulk.wait_group.read %0;\n" ::"n"(N) : "memory");
}
// Waits until at most N of this thread's bulk async-groups are incomplete (writes done).
template <int N>
__device__ __forceinline__ void bulk_wait_group() {
  asm volatile("cp.async.bulk.wait_group %0;\n" ::"n"(N) : "memory");
}
// Named barrier over `count` threads (ids 1..15; 0 is __syncthreads).
__device__ __forceinline__ void named_bar_sync(int id, int count) {
  asm volatile("bar.sync %0, %1;\n" ::"r"(id), "r"(count) : "memory");
}
// Arrive on a named barrier without waiting (the producer side of a bar.sync / bar.arrive pair).
__device__ __forceinline__ void named_bar_arrive(int id, int count) {
  asm volatile("bar.arrive %0, %1;\n" ::"r"(id), "r"(count) : "memory");
}

// TMA multicast: the same 2D box lands at the same shared-memory offset in every CTA of the cluster
// named in cta_mask, and completes as transaction bytes on the mbarrier at the same offset in each.
__device__ __forceinline__ void tma_load_2d_multicast(void* dst, const CUtensorMap* map, std::uint64_t* bar, int c0,
                                                      int c1, std::uint16_t cta_mask) {
  asm volatile(
      "cp.async.bulk.tensor.2d.shared::cluster.global.tile.mbarrier::complete_tx::bytes.multicast::cluster"
      " [%0], [%1, {%3, %4}], [%2], %5;\n"
      ::"r"(smem_u32(dst)), "l"(reinterpret_cast<std::uint64_t>(map)), "r"(smem_u32(bar)), "r"(c0), "r"(c1),
      "h"(cta_mask)
      : "memory");
}

// Clusters ------------------------------------------------------------------------------------
__device__ __forceinline__ unsigned cluster_ctarank() {
  unsigned r;
  asm volatile("mov.u32 %0, %%cluster_ctarank;\n" : "=r"(r));
  return r;
}
__device__ __forceinline__ unsigned cluster_id_x() {
  unsigned r;
  asm volatile("mov.u32 %0, %%clusterid.x;\n" : "=r"(r));
  return r;
}
__device__ __forceinline__ unsigned cluster_count_x() {
  unsigned r;
  asm volatile("mov.u32 %0, %%nclusterid.x;\n" : "=r"(r));
  return r;
}
// All non-exited threads of the cluster meet (release/acquire: shared-memory state, barriers
// included, is visible across the cluster afterwards).
__device__ __forceinline__ void cluster_sync() {
  asm volatile("barrier.cluster.arrive.release;\nbarrier.cluster.wait.acquire;\n" ::: "memory");
}
// Arrive on the mbarrier at the same shared-memory offset as `bar` in CTA `cta` of the cluster.
__device__ __forceinline__ void mbar_arrive_cluster(std::uint64_t* bar, unsigned cta) {
  asm volatile(
      "{\n.reg .b32 remote;\n"
      "mapa.shared::cluster.u32 remote, %0, %1;\n"
      "mbarrier.arrive.release.cluster.shared::cluster.b64 _, [remote];\n}\n"
      ::"r"(smem_u32(bar)), "r"(cta)
      : "memory");
}

// Arrive on the mbarrier at the same shared-memory offset as `bar` in CTA `cta` of the cluster, with
// the default .release.cta semantics (as CUTLASS's ClusterBarrier::arrive does). For releasing a slot
// that was read only by wgmma (async proxy, already complete at wgmma.wait_group) no cluster-scope
// ordering of this thread's generic memory operations is needed; .release.cluster (above) is much
// slower in a k-loop (figures: results/hopper/README.md#step-7).
__device__ __forceinline__ void mbar_arrive_remote(std::uint64_t* bar, unsigned cta) {
  asm volatile(
      "{\n.reg .b32 remote;\n"
      "mapa.shared::cluster.u32 remote, %0, %1;\n"
      "mbarrier.arrive.shared::cluster.b64 _, [remote];\n}\n"
      ::"r"(smem_u32(bar)), "r"(cta)
      : "memory");
}

// setmaxnreg: hand registers from the producer warpgroup to the consumers (needs a register cap at
// entry: __launch_bounds__(threads, 1)).
template <int R>
__device__ __forceinline__ void setmaxnreg_dec() {
  asm volatile("setmaxnreg.dec.sync.aligned.u32 %0;\n" ::"n"(R));
}
template <int R>
__device__ __forceinline__ void setmaxnreg_inc() {
  asm volatile("setmaxnreg.inc.sync.aligned.u32 %0;\n" ::"n"(R));
}

// wgmma.mma_async wrappers: D(64, N) (+)= A(64, K) * B(K, N), A and B from shared memory through
// descriptors, both K-major (transpose immediates 0). scale_d = 0 gives D = A*B (the accumulator is
// not read), 1 gives D = A*B + D. The f32 accumulator fragment of thread t (warp w = t/32 of the
// warpgroup, lane l): d[4j + 2h + e] holds D(16w + l/4 + 8h, 8j + 2(l%4) + e).
// The accumulator operands of the wrappers below: "%0, ..., %N-1" in the instruction and "+f"(d[i])
// constraints, 64 (n128) or 128 (n256) of them.
#define GEMMLAB_WGMMA_REGS64 "%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15, %16, %17, %18, %19, %20, %21, %22, %23, %24, %25, %26, %27, %28, %29, %30, %31, %32, %33, %34, %35, %36, %37, %38, %39, %40, %41, %42, %43, %44, %45, %46, %47, %48, %49, %50, %51, %52, %53, %54, %55, %56, %57, %58, %59, %60, %61, %62, %63"
#define GEMMLAB_WGMMA_REGS128 GEMMLAB_WGMMA_REGS64 ", %64, %65, %66, %67, %68, %69, %70, %71, %72, %73, %74, %75, %76, %77, %78, %79, %80, %81, %82, %83, %84, %85, %86, %87, %88, %89, %90, %91, %92, %93, %94, %95, %96, %97, %98, %99, %100, %101, %102, %103, %104, %105, %106, %107, %108, %109, %110, %111, %112, %113, %114, %115, %116, %117, %118, %119, %120, %121, %122, %123, %124, %125, %126, %127"
#define GEMMLAB_WGMMA_D8(o) "+f"(d[o]), "+f"(d[o + 1]), "+f"(d[o + 2]), "+f"(d[o + 3]), "+f"(d[o + 4]), "+f"(d[o + 5]), "+f"(d[o + 6]), "+f"(d[o + 7])
#define GEMMLAB_WGMMA_D64 GEMMLAB_WGMMA_D8(0), GEMMLAB_WGMMA_D8(8), GEMMLAB_WGMMA_D8(16), GEMMLAB_WGMMA_D8(24), GEMMLAB_WGMMA_D8(32), GEMMLAB_WGMMA_D8(40), GEMMLAB_WGMMA_D8(48), GEMMLAB_WGMMA_D8(56)
#define GEMMLAB_WGMMA_D128 GEMMLAB_WGMMA_D64, GEMMLAB_WGMMA_D8(64), GEMMLAB_WGMMA_D8(72), GEMMLAB_WGMMA_D8(80), GEMMLAB_WGMMA_D8(88), GEMMLAB_WGMMA_D8(96), GEMMLAB_WGMMA_D8(104), GEMMLAB_WGMMA_D8(112), GEMMLAB_WGMMA_D8(120)
// One wrapper: NAME(d, desc_a, desc_b, scale_d) for `SHAPE_TYPES` (e.g. m64n128k16.f32.f16.f16), R
// accumulator registers; A_B_S are the operand numbers of desc_a, desc_b and scale_d; TAIL the
// immediates after the scale flags (the transpose flags 0, 0 of 16-bit inputs; none for fp8).
#define GEMMLAB_WGMMA_WRAPPER(NAME, R, SHAPE_TYPES, REGS, OPS, IA, IB, IS, TAIL)                             \
  __device__ __forceinline__ void NAME(float (&d)[R], std::uint64_t desc_a, std::uint64_t desc_b, int scale_d) { \
    asm volatile("{\n.reg .pred p;\nsetp.ne.b32 p, %" IS ", 0;\n"                                           \
                 "wgmma.mma_async.sync.aligned." SHAPE_TYPES " "                                              \
                 "{" REGS "}, %" IA ", %" IB ", p, 1, 1" TAIL ";\n}\n"                                         \
                 : OPS                                                                                        \
                 : "l"(desc_a), "l"(desc_b), "r"(scale_d));                                                   \
  }
GEMMLAB_WGMMA_WRAPPER(wgmma_m64n128k16_f16, 64, "m64n128k16.f32.f16.f16", GEMMLAB_WGMMA_REGS64, GEMMLAB_WGMMA_D64, "64", "65", "66", ", 0, 0")
GEMMLAB_WGMMA_WRAPPER(wgmma_m64n128k16_bf16, 64, "m64n128k16.f32.bf16.bf16", GEMMLAB_WGMMA_REGS64, GEMMLAB_WGMMA_D64, "64", "65", "66", ", 0, 0")
GEMMLAB_WGMMA_WRAPPER(wgmma_m64n128k32_e4m3, 64, "m64n128k32.f32.e4m3.e4m3", GEMMLAB_WGMMA_REGS64, GEMMLAB_WGMMA_D64, "64", "65", "66", "")
GEMMLAB_WGMMA_WRAPPER(wgmma_m64n128k32_e5m2, 64, "m64n128k32.f32.e5m2.e5m2", GEMMLAB_WGMMA_REGS64, GEMMLAB_WGMMA_D64, "64", "65", "66", "")
GEMMLAB_WGMMA_WRAPPER(wgmma_m64n256k16_f16, 128, "m64n256k16.f32.f16.f16", GEMMLAB_WGMMA_REGS128, GEMMLAB_WGMMA_D128, "128", "129", "130", ", 0, 0")
GEMMLAB_WGMMA_WRAPPER(wgmma_m64n256k16_bf16, 128, "m64n256k16.f32.bf16.bf16", GEMMLAB_WGMMA_REGS128, GEMMLAB_WGMMA_D128, "128", "129", "130", ", 0, 0")
GEMMLAB_WGMMA_WRAPPER(wgmma_m64n256k32_e4m3, 128, "m64n256k32.f32.e4m3.e4m3", GEMMLAB_WGMMA_REGS128, GEMMLAB_WGMMA_D128, "128", "129", "130", "")
GEMMLAB_WGMMA_WRAPPER(wgmma_m64n256k32_e5m2, 128, "m64n256k32.f32.e5m2.e5m2", GEMMLAB_WGMMA_REGS128, GEMMLAB_WGMMA_D128, "128", "129", "130", "")
#undef GEMMLAB_WGMMA_WRAPPER

// Dispatch by element type and N, so kernels stay generic.
template <class T, int N> struct Wgmma;
template <> struct Wgmma<__half, 128> { static constexpr int k = 16; __device__ static void run(float (&d)[64], std::uint64_t a, std::uint64_t b, int s) { wgmma_m64n128k16_f16(d, a, b, s); } };
template <> struct Wgmma<__half, 256> { static constexpr int k = 16; __device__ static void run(float (&d)[128], std::uint64_t a, std::uint64_t b, int s) { wgmma_m64n256k16_f16(d, a, b, s); } };
template <> struct Wgmma<__nv_bfloat16, 128> { static constexpr int k = 16; __device__ static void run(float (&d)[64], std::uint64_t a, std::uint64_t b, int s) { wgmma_m64n128k16_bf16(d, a, b, s); } };
template <> struct Wgmma<__nv_bfloat16, 256> { static constexpr int k = 16; __device__ static void run(float (&d)[128], std::uint64_t a, std::uint64_t b, int s) { wgmma_m64n256k16_bf16(d, a, b, s); } };
template <> struct Wgmma<__nv_fp8_e4m3, 128> { static constexpr int k = 32; __device__ static void run(float (&d)[64], std::uint64_t a, std::uint64_t b, int s) { wgmma_m64n128k32_e4m3(d, a, b, s); } };
template <> struct Wgmma<__nv_fp8_e4m3, 256> { static constexpr int k = 32; __device__ static void run(float (&d)[128], std::uint64_t a, std::uint64_t b, int s) { wgmma_m64n256k32_e4m3(d, a, b, s); } };
template <> struct Wgmma<__nv_fp8_e5m2, 128> { static constexpr int k = 32; __device__ static void run(float (&d)[64], std::uint64_t a, std::uint64_t b, int s) { wgmma_m64n128k32_e5m2(d, a, b, s); } };
template <> struct Wgmma<__nv_fp8_e5m2, 256> { static constexpr int k = 32; __device__ static void run(float (&d)[128], std::uint64_t a, std::uint64_t b, int s) { wgmma_m64n256k32_e5m2(d, a, b, s); } };

// Global flags between blocks (stream-K fix-up, hgemm_wgmma_08_streamk) --------------------------
// Release store / acquire load at GPU scope: a block's earlier global writes (ordered before the
// release by a barrier of its writers) are visible to a block that has acquired the value.
__device__ __forceinline__ void st_release_gpu_u64(std::uint64_t* p, std::uint64_t v) {
  asm volatile("st.release.gpu.global.u64 [%0], %1;\n" ::"l"(p), "l"(v) : "memory");
}
__device__ __forceinline__ std::uint64_t ld_acquire_gpu_u64(const std::uint64_t* p) {
  std::uint64_t v;
  asm volatile("ld.acquire.gpu.global.u64 %0, [%1];\n" : "=l"(v) : "l"(p) : "memory");
  return v;
}

#endif  // GEMMLAB_SM90A_DEVICE

}  // namespace gemmlab::hopper
