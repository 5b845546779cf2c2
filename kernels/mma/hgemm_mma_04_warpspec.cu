// hgemm_mma_04_warpspec: step 4 of the mma.sync series, warp specialisation (sm_90a). Step 3b's
// mma.sync.m16n8k16 + ldmatrix consumer loop, with the global->shared copies taken off the compute
// warps: warpgroup 0 is the producer (one thread issues TMA, cp.async.bulk.tensor with the 128-byte
// swizzle, into a STAGES-deep ring of shared-memory slots, each with a `full` mbarrier armed with the
// expected bytes and an `empty` mbarrier that every consumer warp arrives on once its last ldmatrix
// of the slot is done); the other warpgroups are consumers that only wait, ldmatrix and mma.
// setmaxnreg gives the producer's registers to the consumers (24 vs up to 240 per thread).
// No __syncthreads in the loop: warps drift against each other, held together only by the ring.
//
// The instruction budget behind the shapes (per SMSP, i.e. per scheduler; one HMMA.16816 every
// ~6.3 cycles at the register-only mma.sync ceiling): a (64, 64) warp tile issues per k16 step
// 32 HMMA + 8 ldmatrix.x4 (128 bytes of shared memory per HMMA, plus 48 bytes of TMA fill per
// HMMA for a 128x256 block: ~70% of the 128 B/clk shared-memory bandwidth at 0.70x cuBLAS);
// external mode adds 4 FADD per HMMA, so 2 warps per scheduler need ~5.3 issue slots per HMMA
// out of ~8 at 0.70x: it only fits if the FADDs of one warp overlap the HMMAs of another.
//
// Variants (name = block tile, warp tile, accumulation):
//  * 128x256_w64x64: 8 consumer warps (2x4) of (64, 64), 4 stages of 48 KB; in_mma with fragments
//    double-buffered across k-steps (no spill), external single-buffered (double-buffered it
//    spilled 96 bytes even at 240 registers: ptxas keeps several HMMA results T in flight).
//  * 128x128_w64x32_promoted_every_128k: 8 consumer warps of (64, 32), 6 stages; a second set of
//    fp32 registers for the promoted sum does not fit beside a (64, 64) warp tile.
// SASS (cuobjdump, sm_90a): HMMA.16816.F32 with .reuse of the A fragment, LDSM, SYNCS for the
// mbarriers, USETMAXREG; no local memory in these three kernels; no C7508.
// Also registered:
//  * tmastore_128x256_w64x64_in_mma: the in_mma kernel made persistent (PERSISTENT: one block per SM,
//    tiles strided, the producer filling the next tile's ring while the consumers store) with an
//    asynchronous TMA-store epilogue (EPI_TMA: each warp stages its (64, 64) fp32 tile in (8, 32)
//    boxes, four 1 KB boxes in flight per warp, 32 KB after the ring).
//
// NOTES: external mode costs its 4 FADD per HMMA in full: they do not overlap the HMMA stream, even
// with the copies off the compute warps and no spill (Hopper has no packed fp32 add). A register-only
// mma.sync loop with these warp tiles and no memory at all shows the same gap; more consumer warps per
// scheduler, a persistent grid and register-bank placement of the FADDs did not hide it.
// Measurements, the mma.sync ceiling and the variants tried and removed: results/mma/README.md#step-4.
// Numerics (per output entry, K/16 k-steps of 16 products each, in increasing k; see mma_ptx.cuh):
//  * in_mma:   D = A*B + D: the fp32 accumulator goes through the tensor core's truncating
//              aligned 16-term addition at every k-step.
//  * external: T = A*B + 0 (16 exact products summed and truncated in the tensor core), then
//              acc = acc + T with __fadd_rn (round to nearest, never contracted).
//  * promoted_every_128k: in_mma for 8 k-steps into a zeroed partial, then acc = acc + partial
//              with __fadd_rn.
// Descriptors say Rounding::toward_zero for all modes (as 03b: the bound model's conservative knob).
#include <cuda_fp16.h>

#include <algorithm>
#include <cstdint>

#include "kernels/common/cuda_check.cuh"
#include "kernels/common/per_device.cuh"
#include "kernels/common/hopper_ptx.cuh"
#include "kernels/common/mma_ptx.cuh"
#include "kernels/kernel.hpp"

namespace gemmlab::kernels {
namespace {


constexpr int BK = 64;           // halves per 128-byte swizzled smem row
constexpr int KSTEPS = BK / 16;  // k16 steps per k-tile
constexpr int PRODUCER_REGS = 24;
constexpr int EPI_BUFS = 4;                       // TMA-store epilogue: 1 KB boxes in flight per warp
constexpr int EPI_WARP_BYTES = EPI_BUFS * 1024;

template <int BM_, int BN_, int WM_, int WN_, int STAGES_>
struct Cfg {
  static constexpr int BM = BM_, BN = BN_, WM = WM_, WN = WN_, STAGES = STAGES_;
  static constexpr int WARPS_M = BM / WM, WARPS_N = BN / WN, CWARPS = WARPS_M * WARPS_N;
  static constexpr int CWG = CWARPS / 4;              // consumer warpgroups
  static constexpr int THREADS = 128 * (CWG + 1);     // + the producer warpgroup
  static constexpr int MT = WM / 16, NT = WN / 8;     // m16 / n8 tiles per warp
  static constexpr int A_BYTES = BM * 128, B_BYTES = BN * 128, STAGE_BYTES = A_BYTES + B_BYTES;
  static constexpr int SMEM_BYTES = STAGES * STAGE_BYTES + 1024 /* alignment */ + 256 /* barriers */;
  // Registers: the block is launched with the __launch_bounds__ cap (65536 / THREADS, down to a
  // multiple of 8) per thread; setmaxnreg can only redistribute that pool.
  static constexpr int ENTRY_REGS = (65536 / THREADS) / 8 * 8;
  static constexpr int CONSUMER_REGS_RAW = (ENTRY_REGS * THREADS - PRODUCER_REGS * 128) / (CWG * 128) / 8 * 8;
  static constexpr int CONSUMER_REGS = CONSUMER_REGS_RAW > 240 ? 240 : CONSUMER_REGS_RAW;
  static_assert(CWARPS % 4 == 0, "consumers come in whole warpgroups (setmaxnreg acts per warpgroup)");
  static_assert(WM % 16 == 0 && WN % 16 == 0, "warp tile: m16 tiles by pairs of n8 tiles");
  static_assert(BM <= 256 && BN <= 256, "a TMA box has at most 256 rows");
  static_assert(SMEM_BYTES <= 227 * 1024, "shared memory per block on Hopper is 227 KB");
  static_assert(STAGE_BYTES % 1024 == 0, "each tile must start 1024-byte aligned for the 128B swizzle");
};

// DBUF: fragments of the next k-step loaded before this k-step's mma (double-buffered); otherwise
// each k-step's fragments are loaded just before use and other warps hide the latency.
template <class C, Accumulation MODE, bool DBUF, int PROMOTE_KSTEPS, bool PERSISTENT, bool EPI_TMA>
__global__ void __launch_bounds__(C::THREADS, 1)
    hgemm_mma_warpspec(int M, int N, int K, const __grid_constant__ CUtensorMap mapA,
                       const __grid_constant__ CUtensorMap mapB, const __grid_constant__ CUtensorMap mapC,
                       float* __restrict__ Cout) {
#ifdef GEMMLAB_SM90A_DEVICE
  using namespace gemmlab::hopper;
  constexpr int MT = C::MT, NT = C::NT, STAGES = C::STAGES;
  static_assert(MODE != Accumulation::promoted || PROMOTE_KSTEPS % KSTEPS == 0, "promotion at k-tile boundaries");
  constexpr int PROMOTE_KT = MODE == Accumulation::promoted ? PROMOTE_KSTEPS / KSTEPS : 1;

  extern __shared__ unsigned char smem_raw[];
  // Slot s: (BM, BK) tile of A then (BN, BK) tile of B^T, k-major, 128B-swizzled, 1024-aligned.
  unsigned char* smem =
      reinterpret_cast<unsigned char*>((reinterpret_cast<std::uintptr_t>(smem_raw) + 1023) & ~std::uintptr_t(1023));
  // EPI_TMA: each consumer warp's four 1 KB (8, 32) fp32 staging boxes follow the ring.
  unsigned char* staging = smem + STAGES * C::STAGE_BYTES;
  std::uint64_t* full = reinterpret_cast<std::uint64_t*>(staging + (EPI_TMA ? C::CWARPS * EPI_WARP_BYTES : 0));
  std::uint64_t* empty = full + STAGES;

  const int tid = threadIdx.x, warp = tid / 32, lane = tid % 32;
  const int KT = K / BK;
  // Tiles in row-major order (N fastest). Persistent: one block per SM strides over them, the
  // producer filling the ring for the next tile while the consumers store this one; otherwise one
  // tile per block.
  const int tiles_n = N / C::BN, tiles = (M / C::BM) * tiles_n;
  const int first_tile = PERSISTENT ? int(blockIdx.x) : int(blockIdx.y) * tiles_n + int(blockIdx.x);
  const int tile_step = PERSISTENT ? int(gridDim.x) : tiles;

  if (tid == 0) {
    prefetch_tensor_map(&mapA);
    prefetch_tensor_map(&mapB);
    for (int s = 0; s < STAGES; ++s) {
      mbar_init(&full[s], 1);           // the producer's arrive.expect_tx, then the TMA bytes
      mbar_init(&empty[s], C::CWARPS);  // one arrive per consumer warp
    }
    mbar_fence_init();
  }
  __syncthreads();

  if (warp < 4) {
    // Producer warpgroup: one thread issues every copy.
    setmaxnreg_dec<PRODUCER_REGS>();
    if (tid == 0) {
      int it = 0;  // position in the ring, counted across tiles
      for (int tile = first_tile; tile < tiles; tile += tile_step) {
        const int m0 = (tile / tiles_n) * C::BM, n0 = (tile % tiles_n) * C::BN;
        for (int kt = 0; kt < KT; ++kt, ++it) {
          const int s = it % STAGES;
          if (it >= STAGES) mbar_wait(&empty[s], ((it / STAGES) - 1) & 1);  // every consumer warp is done
          unsigned char* slot = smem + s * C::STAGE_BYTES;
          mbar_arrive_expect_tx(&full[s], C::STAGE_BYTES);
          tma_load_2d(slot, &mapA, &full[s], kt * BK, m0);
          tma_load_2d(slot + C::A_BYTES, &mapB, &full[s], kt * BK, n0);
        }
      }
    }
    return;
  }

  setmaxnreg_inc<C::CONSUMER_REGS>();
  const int cw = warp - 4;
  const int wm = cw / C::WARPS_N, wn = cw % C::WARPS_N;
  const std::uint32_t s_base = smem_u32(smem);

  float acc[MT][NT][4];
  float part[MODE == Accumulation::promoted ? MT : 1][MODE == Accumulation::promoted ? NT : 1][4];
  int it0 = 0;  // ring position of this tile's first k-tile
  for (int tile = first_tile; tile < tiles; tile += tile_step, it0 += KT) {
  const int m0 = (tile / tiles_n) * C::BM, n0 = (tile % tiles_n) * C::BN;
#pragma unroll
  for (int i = 0; i < MT; ++i)
#pragma unroll
    for (int j = 0; j < NT; ++j)
#pragma unroll
      for (int e = 0; e < 4; ++e) {
        acc[i][j][e] = 0.0f;
        if constexpr (MODE == Accumulation::promoted) part[i][j][e] = 0.0f;
      }

  // ldmatrix row addresses of this lane (matrix order as in 03b / mma_ptx.cuh): A x4 of an m16k16
  // tile: rows lane % 16, chunk +lane / 16; B x4 of two n8k16 tiles: rows (lane % 8) + 8 (lane / 16),
  // chunk +(lane / 8) % 2. Every row has r % 8 == lane % 8, the swizzle phase of the 128B atom.
  const int phase = lane & 7;
  const std::uint32_t a_off = (wm * C::WM + (lane & 15)) * 128;
  const std::uint32_t b_off = C::A_BYTES + (wn * C::WN + (lane & 7) + ((lane >> 4) << 3)) * 128;
  const int a_ch = lane >> 4, b_ch = (lane >> 3) & 1;

  auto load_a = [&](std::uint32_t (&a)[4], int stage, int ks, int i) {
    ptx::ldmatrix_x4(a, s_base + stage * C::STAGE_BYTES + a_off + i * 16 * 128 + (((ks * 2 + a_ch) ^ phase) << 4));
  };
  auto load_b = [&](std::uint32_t (&bf)[NT][2], int stage, int ks) {
    const std::uint32_t base = s_base + stage * C::STAGE_BYTES + b_off + (((ks * 2 + b_ch) ^ phase) << 4);
#pragma unroll
    for (int j = 0; j < NT / 2; ++j) {
      std::uint32_t r[4];
      ptx::ldmatrix_x4(r, base + j * 16 * 128);
      bf[2 * j][0] = r[0];
      bf[2 * j][1] = r[1];
      bf[2 * j + 1][0] = r[2];
      bf[2 * j + 1][1] = r[3];
    }
  };
  auto load_frags = [&](std::uint32_t (&af)[MT][4], std::uint32_t (&bf)[NT][2], int stage, int ks) {
#pragma unroll
    for (int i = 0; i < MT; ++i) load_a(af[i], stage, ks, i);
    load_b(bf, stage, ks);
  };
  auto mma_all = [&](const std::uint32_t (&af)[MT][4], const std::uint32_t (&bf)[NT][2]) {
#pragma unroll
    for (int i = 0; i < MT; ++i)
#pragma unroll
      for (int j = 0; j < NT; ++j) {
        if constexpr (MODE == Accumulation::in_mma) {
          ptx::mma_m16n8k16_f32_f16(acc[i][j], af[i], bf[j], acc[i][j]);
        } else if constexpr (MODE == Accumulation::external) {
          ptx::mma_accumulate<Accumulation::external>(acc[i][j], af[i], bf[j]);
        } else {
          ptx::mma_m16n8k16_f32_f16(part[i][j], af[i], bf[j], part[i][j]);
        }
      }
  };
  auto wait_full = [&](int kt) { mbar_wait(&full[(it0 + kt) % STAGES], ((it0 + kt) / STAGES) & 1); };
  // The slot of k-tile kt is free once every lane's ldmatrix of it has returned (they are
  // synchronous: the registers are written); one arrive per warp, release-ordered after them.
  auto release = [&](int kt) {
    __syncwarp();
    if (lane == 0) mbar_arrive(&empty[(it0 + kt) % STAGES]);
  };
  auto promote = [&](int kt) {
    if constexpr (MODE == Accumulation::promoted) {
      if (kt % PROMOTE_KT == PROMOTE_KT - 1) {
#pragma unroll
        for (int i = 0; i < MT; ++i)
#pragma unroll
          for (int j = 0; j < NT; ++j)
#pragma unroll
            for (int e = 0; e < 4; ++e) {
              acc[i][j][e] = __fadd_rn(acc[i][j][e], part[i][j][e]);
              part[i][j][e] = 0.0f;
            }
      }
    }
  };

  if constexpr (DBUF) {
    // Fragments of k-step ks+1 are loaded before the mma of k-step ks; across a k-tile boundary
    // that means waiting for tile kt+1 before tile kt's last mma, and tile kt's slot is released
    // as soon as its last fragments (k-step KSTEPS-1, loaded during k-step KSTEPS-2) are in.
    std::uint32_t af[2][MT][4], bf[2][NT][2];
    wait_full(0);
    load_frags(af[0], bf[0], 0, 0);
    for (int kt = 0; kt < KT; ++kt) {
      const int stage = (it0 + kt) % STAGES;
#pragma unroll
      for (int ks = 0; ks < KSTEPS; ++ks) {
        if (ks + 1 < KSTEPS) {
          load_frags(af[(ks + 1) & 1], bf[(ks + 1) & 1], stage, ks + 1);
          if (ks + 1 == KSTEPS - 1) release(kt);
        } else if (kt + 1 < KT) {
          wait_full(kt + 1);
          load_frags(af[(ks + 1) & 1], bf[(ks + 1) & 1], (it0 + kt + 1) % STAGES, 0);
        }
        mma_all(af[ks & 1], bf[ks & 1]);
      }
      promote(kt);
    }
  } else {
    std::uint32_t af[MT][4], bf[NT][2];
    for (int kt = 0; kt < KT; ++kt) {
      const int stage = (it0 + kt) % STAGES;
      wait_full(kt);
#pragma unroll
      for (int ks = 0; ks < KSTEPS; ++ks) {
        load_frags(af, bf, stage, ks);
        if (ks == KSTEPS - 1) release(kt);
        mma_all(af, bf);
      }
      promote(kt);
    }
  }
  if constexpr (MODE == Accumulation::promoted) {
    if (KT % PROMOTE_KT != 0) {  // a last, shorter interval
#pragma unroll
      for (int i = 0; i < MT; ++i)
#pragma unroll
        for (int j = 0; j < NT; ++j)
#pragma unroll
          for (int e = 0; e < 4; ++e) acc[i][j][e] = __fadd_rn(acc[i][j][e], part[i][j][e]);
    }
  }

  if constexpr (EPI_TMA) {
    // Epilogue through shared memory and the TMA engine: (8, 32) boxes (one 128B-swizzle atom),
    // up to four in flight per warp; the warp waits only until the box written four boxes earlier
    // has been read out, never for the global writes, and (persistent) goes on to the next tile.
    // Box (i, h, q): rows m16-tile i, half h (rows g + 8h), columns n8-tiles 4q .. 4q+3.
    unsigned char* wst = staging + cw * EPI_WARP_BYTES;
    int box = 0;
#pragma unroll
    for (int i = 0; i < MT; ++i)
#pragma unroll
      for (int h = 0; h < 2; ++h)
#pragma unroll
        for (int q = 0; q < NT / 4; ++q, ++box) {
          unsigned char* buf = wst + (box % EPI_BUFS) * 1024;
          if (lane == 0) bulk_wait_group_read<EPI_BUFS - 1>();
          __syncwarp();
#pragma unroll
          for (int jj = 0; jj < 4; ++jj) {
            const int r = lane / 4, chunk = 2 * jj + (lane % 4) / 2;
            const std::uint32_t off = std::uint32_t(r) * 128u + (std::uint32_t(chunk ^ r) << 4) + (lane % 2) * 8u;
            *reinterpret_cast<float2*>(buf + off) = make_float2(acc[i][4 * q + jj][2 * h], acc[i][4 * q + jj][2 * h + 1]);
          }
          fence_proxy_async_smem();  // this lane's writes -> visible to the TMA engine
          __syncwarp();
          if (lane == 0) {
            tma_store_2d(&mapC, buf, n0 + wn * C::WN + 32 * q, m0 + wm * C::WM + 16 * i + 8 * h);
            bulk_commit_group();
          }
        }
  } else {
  // Epilogue: (16, 8) fragment (i, j) holds C(g, 2t..2t+1) and C(g+8, 2t..2t+1).
  ptx::store_acc_f32(Cout, N, m0 + wm * C::WM, n0 + wn * C::WN, lane, acc);
  }
    if constexpr (!PERSISTENT) break;  // one tile: lets the compiler drop the loop state
  }  // tile
  if constexpr (EPI_TMA) {
    if (lane == 0) bulk_wait_group<0>();  // the staging boxes must outlive the last stores
  }
#else
  __trap();  // built without sm_90a: the descriptor says requires_sm90a, so this never launches
#endif
}

template <class C, Accumulation MODE, bool DBUF, int PROMOTE_KSTEPS, bool PERSISTENT, bool EPI_TMA>
void launch(const GemmArgs& a) {
  auto* kern = hgemm_mma_warpspec<C, MODE, DBUF, PROMOTE_KSTEPS, PERSISTENT, EPI_TMA>;
  constexpr int SMEM = C::SMEM_BYTES + (EPI_TMA ? C::CWARPS * EPI_WARP_BYTES : 0);
  static_assert(SMEM <= 227 * 1024, "shared memory per block on Hopper is 227 KB");
  static PerDevice<bool> attr_set;  // once per GPU: the attribute belongs to the current device
  attr_set.get([kern] {
    GEMMLAB_CUDA_CHECK(cudaFuncSetAttribute(kern, cudaFuncAttributeMaxDynamicSharedMemorySize, SMEM));
    return true;
  });
  const CUtensorMap mapA = hopper::make_kmajor_tensor_map(a.A, a.M, a.K, 2, C::BM);
  const CUtensorMap mapB = hopper::make_kmajor_tensor_map(a.B, a.N, a.K, 2, C::BN);
  const CUtensorMap mapC = EPI_TMA ? hopper::make_f32_store_tensor_map(a.C, a.M, a.N, 8) : mapB;  // unused without EPI_TMA
  const int tiles = (a.M / C::BM) * (a.N / C::BN);
  const dim3 grid = PERSISTENT ? dim3(std::min(tiles, hopper::sm_count())) : dim3(a.N / C::BN, a.M / C::BM);
  kern<<<grid, C::THREADS, SMEM, as_stream(a.stream)>>>(a.M, a.N, a.K, mapA, mapB, mapC,
                                                        static_cast<float*>(a.C));
  GEMMLAB_LAUNCH_CHECK("hgemm_mma_04_warpspec");
}

template <class C, Accumulation MODE, bool DBUF, int PROMOTE_KSTEPS = 0, bool PERSISTENT = false, bool EPI_TMA = false>
constexpr Kernel make(const char* name, const char* desc) {
  return Kernel{
      .name = name, .family = "mma", .description = desc,
      .numerics = {.input = Format::fp16, .compute = Format::fp16, .accumulator = Format::fp32,
                   .output = Format::fp32, .accumulation = MODE,
                   .instruction = tc::Instruction::mma_m16n8k16_f16_f32, .k_step = 16,
                   .promotion_interval_k = MODE == Accumulation::promoted ? 16 * PROMOTE_KSTEPS : 0,
                   .accumulation_rounding = Rounding::toward_zero},
      .layout_a = Layout::row_major, .layout_b = Layout::col_major,
      .m_multiple = C::BM, .n_multiple = C::BN, .k_multiple = BK,
      .min_cc = 90, .requires_sm90a = true, .workspace_bytes = 0,
      .launch = launch<C, MODE, DBUF, PROMOTE_KSTEPS, PERSISTENT, EPI_TMA>,
  };
}

using W64x64 = Cfg<128, 256, 64, 64, 4>;  // 8 consumer warps, 4 x 48 KB stages
using W64x32 = Cfg<128, 128, 64, 32, 6>;  // 8 consumer warps, 6 x 32 KB stages

}  // namespace

#define GEMMLAB_MMA04(id, desc, ...)                    \
  const Kernel& id() {                                  \
    static const Kernel k = make<__VA_ARGS__>(#id, desc); \
    return k;                                           \
  }

GEMMLAB_MMA04(hgemm_mma_04_warpspec_128x256_w64x64_in_mma,
              "mma.sync 128x256x64, TMA producer warp + 8 consumer warps of 64x64, 4-stage mbarrier ring, D = A*B + D",
              W64x64, Accumulation::in_mma, true)
GEMMLAB_MMA04(hgemm_mma_04_warpspec_128x256_w64x64_external,
              "mma.sync 128x256x64, TMA producer + 8 consumer warps of 64x64, T = A*B + 0 then acc += T (fp32, nearest)",
              W64x64, Accumulation::external, false)
GEMMLAB_MMA04(hgemm_mma_04_warpspec_tmastore_128x256_w64x64_in_mma,
              "mma.sync 128x256x64, TMA producer + 8 consumer warps of 64x64, persistent, TMA-store epilogue, D = A*B + D",
              W64x64, Accumulation::in_mma, true, 0, true, true)
GEMMLAB_MMA04(hgemm_mma_04_warpspec_128x128_w64x32_promoted_every_128k,
              "mma.sync 128x128x64, TMA producer + 8 consumer warps of 64x32, in-mma for 8 k-steps then promoted to fp32",
              W64x32, Accumulation::promoted, true, 8)

}  // namespace gemmlab::kernels
