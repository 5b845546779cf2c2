// hgemm_wgmma_02_tma: step 2 of the Hopper series. Tiles arrive by TMA (cp.async.bulk.tensor with a
// tensor map, 128-byte swizzle, the same layout the wgmma descriptors read) into a ring of STAGES
// shared-memory slots; each slot's mbarrier is armed with the expected transaction bytes and completes
// when both tiles have landed. Two warpgroups (256 threads) share a (128, 128) block tile, each
// computing its (64, 128) half with wgmma m64n128k16. One thread issues the copies STAGES slices
// ahead; after a slice is consumed all threads meet at a barrier and that slot is refilled. No warp
// specialisation yet: the math warps also wait on the barrier, so refills are not fully overlapped.
//
// Numerics: as hgemm_wgmma_01_basic (fp16/bf16 in, products exact, fp32 out; in_wgmma truncates
// inside the tensor core; promoted_every_N adds each N-element partial sum into fp32 registers
// with round-to-nearest). Judged with Rounding::toward_zero.
// Layouts: A row-major (M, K), B column-major (K, N): both K-major for TMA and wgmma.
#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include "kernels/common/cuda_check.cuh"
#include "kernels/common/per_device.cuh"
#include "kernels/common/hopper_ptx.cuh"
#include "kernels/kernel.hpp"

namespace gemmlab::kernels {
namespace {

constexpr int BM = 128, BN = 128, BK = 64;  // block tile; BK fp16 elements = one 128-byte row
constexpr int STAGES = 4;
constexpr int THREADS = 256;                 // two warpgroups, one (64, 128) half each
constexpr int A_BYTES = BM * BK * 2, B_BYTES = BN * BK * 2, STAGE_BYTES = A_BYTES + B_BYTES;
constexpr int SMEM_BYTES = STAGES * STAGE_BYTES + 1024 /* alignment slack */ + 1024 /* barriers */;
static_assert(BK * 2 == 128, "one K-slice row must be exactly the 128-byte swizzle width");
static_assert(A_BYTES % 1024 == 0 && B_BYTES % 1024 == 0, "tiles must stay 1024-byte aligned");
static_assert(SMEM_BYTES <= 227 * 1024, "shared memory per block on Hopper is 227 KB");

template <class T, int PROMOTE>
__global__ void __launch_bounds__(THREADS, 1)
    hgemm_wgmma_tma(int M, int N, int K, const __grid_constant__ CUtensorMap mapA,
                    const __grid_constant__ CUtensorMap mapB, float* __restrict__ C) {
#ifdef GEMMLAB_SM90A_DEVICE
  using namespace gemmlab::hopper;
  constexpr int KW = Wgmma<T, BN>::k;
  constexpr int STEPS = BK / KW;
  static_assert(PROMOTE == 0 || PROMOTE % KW == 0, "promotion interval must be a multiple of the wgmma K");
  constexpr int PSTEPS = PROMOTE == 0 ? 1 : PROMOTE / KW;

  extern __shared__ unsigned char smem_raw[];
  // Slot s: (BM, BK) tile of A then (BN, BK) tile of B^T, both K-major and swizzled, 1024-aligned.
  unsigned char* smem = reinterpret_cast<unsigned char*>((reinterpret_cast<std::uintptr_t>(smem_raw) + 1023) & ~std::uintptr_t(1023));
  std::uint64_t* full = reinterpret_cast<std::uint64_t*>(smem + STAGES * STAGE_BYTES);

  const int tid = threadIdx.x, wg = tid / 128;
  const int m0 = blockIdx.y * BM, n0 = blockIdx.x * BN;
  const int slices = K / BK;

  if (tid == 0) {
    prefetch_tensor_map(&mapA);
    prefetch_tensor_map(&mapB);
    for (int s = 0; s < STAGES; ++s) mbar_init(&full[s], 1);
    mbar_fence_init();
  }
  __syncthreads();
  auto issue = [&](int kt) {
    const int s = kt % STAGES;
    unsigned char* slot = smem + s * STAGE_BYTES;
    mbar_arrive_expect_tx(&full[s], STAGE_BYTES);
    tma_load_2d(slot, &mapA, &full[s], kt * BK, m0);
    tma_load_2d(slot + A_BYTES, &mapB, &full[s], kt * BK, n0);
  };
  if (tid == 0)
    for (int kt = 0; kt < STAGES && kt < slices; ++kt) issue(kt);

  float d[BN / 2];       // this warpgroup's (64, 128) accumulator fragment
  float p[BN / 2] = {};  // promoted fp32 sums (unused for in_wgmma)
  for (int kt = 0; kt < slices; ++kt) {
    const int s = kt % STAGES;
    mbar_wait(&full[s], (kt / STAGES) & 1);
    const unsigned char* sA = smem + s * STAGE_BYTES + wg * 64 * 128;  // this warpgroup's 64 rows of A
    const unsigned char* sB = smem + s * STAGE_BYTES + A_BYTES;
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
    wgmma_wait<0>();
    fence_regs(d);
    __syncthreads();  // both warpgroups are done reading slot s
    if (tid == 0 && kt + STAGES < slices) issue(kt + STAGES);
  }
  float* c = C + std::size_t(m0 + wg * 64) * N + n0;
  if constexpr (PROMOTE == 0) {
    store_fragment(c, N, d);
  } else {
    if ((slices * STEPS) % PSTEPS != 0) promote_add(p, d);
    store_fragment(c, N, p);
  }
#else
  __trap();  // built without sm_90a: the descriptor says requires_sm90a, so this never launches
#endif
}

template <class T, int PROMOTE>
void launch(const GemmArgs& a) {
  static PerDevice<bool> attr_set;  // once per GPU: the attribute belongs to the current device
  attr_set.get([] {
    GEMMLAB_CUDA_CHECK(cudaFuncSetAttribute(hgemm_wgmma_tma<T, PROMOTE>,
                                            cudaFuncAttributeMaxDynamicSharedMemorySize, SMEM_BYTES));
    return true;
  });
  const CUtensorMap mapA = hopper::make_kmajor_tensor_map(a.A, a.M, a.K, 2, BM);
  const CUtensorMap mapB = hopper::make_kmajor_tensor_map(a.B, a.N, a.K, 2, BN);
  dim3 grid(a.N / BN, a.M / BM);
  hgemm_wgmma_tma<T, PROMOTE><<<grid, THREADS, SMEM_BYTES, as_stream(a.stream)>>>(a.M, a.N, a.K, mapA, mapB,
                                                                                 static_cast<float*>(a.C));
  GEMMLAB_LAUNCH_CHECK("hgemm_wgmma_02_tma");
}

constexpr Kernel base(const char* name, const char* desc, Format in, int interval,
                      void (*fn)(const GemmArgs&)) {
  return Kernel{
      .name = name, .family = "hopper", .description = desc,
      .numerics = wgmma_f32_numerics(in, interval),
      .layout_a = Layout::row_major, .layout_b = Layout::col_major,
      .m_multiple = BM, .n_multiple = BN, .k_multiple = BK,
      .min_cc = 90, .requires_sm90a = true, .workspace_bytes = 0,
      .launch = fn,
  };
}

}  // namespace

#define GEMMLAB_WGMMA02_VARIANT(id, desc, fmt, T, interval)                                      \
  const Kernel& id() {                                                                               \
    static const Kernel k = base(#id, desc, Format::fmt, interval, launch<T, interval>); \
    return k;                                                                                        \
  }

GEMMLAB_WGMMA02_VARIANT(hgemm_wgmma_02_tma_fp16_in_wgmma,
                        "TMA (128B swizzle) into a 4-stage mbarrier ring, 2 warpgroups, 128x128 tile, fp32 acc in wgmma",
                        fp16, __half, 0)
GEMMLAB_WGMMA02_VARIANT(hgemm_wgmma_02_tma_bf16_in_wgmma,
                        "TMA (128B swizzle) into a 4-stage mbarrier ring, 2 warpgroups, 128x128 tile, fp32 acc in wgmma",
                        bf16, __nv_bfloat16, 0)
GEMMLAB_WGMMA02_VARIANT(hgemm_wgmma_02_tma_fp16_promoted_every_128k,
                        "TMA 4-stage ring, 2 warpgroups, 128x128 tile, promoted to fp32 registers every 128 of K",
                        fp16, __half, 128)

}  // namespace gemmlab::kernels
