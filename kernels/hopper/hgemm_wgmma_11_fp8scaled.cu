// hgemm_wgmma_11_fp8scaled: scaled fp8 on step 4 of the Hopper series (persistent blocks, TMA ring,
// producer warpgroup + two consumer warpgroups, super_M 8 tile order, 128 x 128 tiles; the bm256
// schedule of the block-scaled kernel: 256 x 128, each consumer two m64 waves per K block), the kernels
// of the scaled fp8 recipes (reference/scaled_fp8.hpp):
//  * _1x128_128x128: DeepSeek-V3's block scaling, A with one fp32 scale per row and 128 elements of K,
//    B with one per 128 x 128 block. One k-slice of the ring is exactly one 128-element block of K
//    (BK = 128 bytes of e4m3), so each slice is summed by four wgmma m64n128k32 from zero, and then
//    promoted in DeepGEMM's order (deepseek-ai/DeepGEMM, sm90_fp8_gemm_1d2d): the two scales are
//    multiplied first, s = RN_fp32(s_a(row, kb) s_b(kb, nb)), then one FFMA per accumulator,
//    p = RN_fp32(d s + p), with p from +0 and the K blocks in increasing order.
//  * _rowwise: one scale per row of A and per column of B: K blocks of 128 promoted with fp32 adds
//    (p = RN(p + d)) as hgemm_wgmma_04's promoted_every_128k, then the epilogue writes
//    RN_fp32(p RN_fp32(s_a(row) s_b(col))) (the scales multiplied first, as above).
// The scales arrive in kernel_scales' layouts (cuBLASLt's): A's 1 x 128 grid M-contiguous, (row, kb)
// at kb M + row; B's 128 x 128 grid K-contiguous with the K blocks padded to L4 = a multiple of 4,
// (kb, nb) at nb L4 + kb. The producer brings each slice's scales into shared memory with the slice
// itself (two TMA bulk copies on the slot's full barrier: the tile's 128 scales of A at that K block,
// and the 16-byte group of B's grid holding its scale), so a consumer reads them from shared memory
// after the slot's barrier (rows r and r + 8 of its warpgroup's 64: the wgmma fragment layout).
// NOTES (H100, 2026-11-24, TFLOP/s at 4096^3 / 8192x8192x7168, cuBLASLt VEC128 x BLK128x128 at
// 1,163 / 1,283 in the same runs): scales read with __ldg from L2 every K block, even one block
// ahead: 810-833 / 806-909; from shared memory as here: 974 / 1,044-1,048. Slower, measured and
// dropped: two wgmma fragments per consumer, block i + 1 issued before block i is promoted (865 /
// 964); clusters of 2 with B multicast as step 7 (882 / 969-996); the two consumers issuing each
// block's wgmmas in turn through named barriers (931 / 1,004). The rowwise kernel reaches 0.95x /
// 0.98x of cuBLASLt's rowwise mode; the block-scaled one 0.84x / 0.82x (issue 22's target is 1.0x).
// Reading: each consumer waits for all of its block's wgmmas before promoting, and both wait on the
// same full barrier, so their promotions (64 FFMAs a thread) coincide and the tensor cores idle
// meanwhile. The Schedule variants below (registered under temporary hgemm_wgmma_11x_* names at commit
// 8b8f934 and measured there by scripts/lab/gpu_fp8speed.sh) offset the two consumers by half a block: the turn passes when
// only `handover` wgmmas of the giver's block are left, so the taker's block is queued behind them and
// runs while the giver promotes. Round 1 (one run, cuBLASLt 1,161 / 1,270): the offset turns at
// BM = 128 were slower than `together` (980 / 1,033): handed over with one wgmma left 911 / 992, two
// 922 / 1,006, one with the TMA store 939 / 995 (dropped); the 256 x 128 tile was faster: offset turns
// 998 / 1,104, with the TMA store (3 stages) 1,037 / 1,123 (0.89x / 0.88x). Round 2 (one run, H100
// 2026-11-24, cuBLASLt 1,172 / 1,306): the 256-row tile with `together` 1,042 / 1,160, + TMA store (3
// stages) 1,048 / 1,165, + a fourth stage (one staging buffer per consumer) 1,040 / 1,150, + wave 0's
// early store 1,078 / 1,196 (0.92x / 0.92x: the kernel's schedule, `Fastest`); early store without the
// TMA store 1,020 / 1,137; offset turns with the fourth stage 1,047 / 1,148, with the early store
// 995 / 1,124. The other schedules stay selectable through Variant (register one beside the kernel
// and run scripts/lab/gpu_fp8speed.sh to measure it); issue 22's 1.0x is not reached. Round 3 (one run, H100
// 2026-11-24, cuBLASLt 1,166 / 1,296; round 2's schedule 1,079 / 1,188 in it; each round 2 with one
// knob of Variant changed, registered under temporary hgemm_wgmma_11x_* names at commit e22e6de;
// results/scaled_fp8/schedules_round3_h100.csv): the shared-memory base kept in the shared state space
// (round 2's SASS read the scales with generic LD.E and wrote the staging buffers with ST.E, the base
// having gone through an integer cast) 1,090 / 1,201, and with each wave's scales read after its
// wgmmas are issued 1,091 / 1,216 (0.94x / 0.94x: the kernel's schedule, `Fastest`); the late read
// alone (generic loads) 973 / 1,136; super_M 16 1,070 / 1,172; N-major groups of 8 / 16 tile columns
// 1,067 / 1,167, 1,073 / 1,174; clusters of 2 along N with A multicast 1,033 / 1,148, along M with B
// multicast 1,029 / 1,129; setmaxnreg 24 / 240 1,001 / 1,108. Every schedule predicted bit for bit.
// The losing knobs went after the round (their code is at e22e6de); the kernel as it is now, one H100
// run: 1,103 / 1,221 against cuBLASLt's 1,159 / 1,299 (0.95x / 0.94x; results/scaled_fp8/after_review_*).
// DeepGEMM's 1d2d kernel promotes in the same order as this one (scales read before the wgmmas, one
// commit per 64-row wave, wait 0, the slot released after the last wave, then the FFMAs), and its
// 256-row tile is two such waves too. Two fragments per consumer (block i + 1 issued before block i
// is promoted, measured at 865 / 964 above) make ptxas serialize every wgmma of the kernel (C7514,
// "non wgmma instructions reading accumulator registers") whenever a wgmma is still in flight across
// a loop's back edge while the other fragment is read; issuing two K blocks together and waiting for
// both within one iteration compiles clean (round 4's `pipe`).
// Round 4 (three H100 runs, 2026-11-24, each against cuBLASLt in the same run; code on branch
// fp8speed4 at 903f29b, 567993d and cada655; results/scaled_fp8/schedules_round4{a,b,c}_h100.csv):
// 4a (cuBLASLt 1,166 / 1,286): 128 x 128 tiles with K blocks issued in pairs into two fragments, the
// first promoted under the second's wgmmas, 837 / 912 (5 slots, two staging buffers: 846 / 914);
// 192 x 128 tiles with three consumers (setmaxnreg 24 / 160) 828 / 1,027, storing from registers
// with 5 slots 839 / 1,053; the kernel itself 1,006 / 1,100 there, its consumer loop then written for
// three consumers too (an idle-consumer test per K block). 4b (cuBLASLt 1,150 / 1,273), the kernel's loop as
// here again: the kernel 1,091 / 1,185; consumer 1 starting once consumer 0's first wave is done
// (a named barrier, once) 1,057 / 1,165; 128 x 128 tiles with 6 slots and scales read late 924 / 981,
// staggered 897 / 970. 4c (cuBLASLt 1,169 / 1,280): the kernel 1,102 / 1,199 (0.94x / 0.94x); wave 1
// stored under the next tile's first wgmmas 1,033 / 1,128, with 3 slots and two staging buffers
// 1,080 / 1,143, storing from registers 1,022 / 1,106; 3 slots and two staging buffers alone
// 1,002 / 1,146. Every schedule predicted bit for bit; all lost, so the knobs went again. ncu
// (4096^3, round 4a; results/scaled_fp8/ncu_round4_h100/): cuBLASLt runs
// nvjet_sm90_qqsss_128x128_128x6_1x2_h_bz_coopA_algo2_Ablk128_Bvec128_TNN (128 x 128 x 128 tiles, 6
// stages, clusters of 2, 384 threads, 168 registers) at 67.7% SM (tensor) busy, 189,042 cycles; this
// kernel 55.0%, 232,674 cycles; its top stall per issued instruction is `barrier` (1.85; ncu's text
// does not say which barriers: the TMA-store boxes' named barriers are the only bar.sync), then
// `selected` 1.00, `wait` 0.88.
// The SASS of ptxas 13.0 already alternates the yield-hint bit over the promotion FFMAs (set on 64 of
// 128, the ones carrying .reuse): the interleaving DeepGEMM found in NVCC 12.3's output. DeepGEMM's
// patch on top (.reuse cleared and that bit flipped on the reused FFMAs of a run's first 9/16,
// scripts/lab/patch_ffma_yield.py on the built binary, 35 FFMAs) made the kernel slower: 0.913 / 0.907
// and 0.920 / 0.906 of cuBLASLt against 0.947 / 0.931 and 0.944 / 0.933 unpatched in alternating
// runs, and clearing the bit on all 128 FFMAs 0.913 / 0.903, 0.912 / 0.902 (H100, 2026-11-24,
// results/scaled_fp8/ffma_yield_h100/). Where the time goes (same day, kscan_h100.csv): the ratio
// falls as K grows, 0.976 at 4096 x 4096 x 1024, 0.955 at K 4096, 0.939 at K 16384, so the K loop
// itself, not the tile's epilogue or start, is what runs slower than cuBLASLt's. Round 5 (one H100
// run, same day, code at 693135e, results/scaled_fp8/schedules_round5_h100.csv; cuBLASLt 1,157 /
// 1,273): the producer thread in warp 3 and the consumers' leaders in warps 1 and 2 instead of all
// in warp 0 (so no scheduler carries every role) 1,092 / 1,195 against the kernel's 1,090 / 1,187:
// within the runs' noise, not adopted.
// K: any multiple of 16 (a TMA row must be a multiple of 16 bytes). The last K block may be partial:
// TMA fills the part beyond K with zeros, which add nothing, and the block has its own scale.
//
// Numerics: e4m3 products exact; within a K block the wgmma accumulator keeps about 13 fraction
// bits (wgmma_f32_numerics(e4m3, 128): promoted every 128, Rounding::toward_zero, u = 2^-13); the
// promotion is one fp32 round-to-nearest FFMA per block (one fp32 add for _rowwise) after one fp32
// product of the scales. Judged against the exact product of the dequantized operands.
// Layouts: A row-major (M, K), B column-major (K, N): both K-major, which fp8 wgmma requires.
#include <cuda_fp8.h>

#include "kernels/common/cuda_check.cuh"
#include "kernels/common/hopper_ptx.cuh"
#include "kernels/common/hopper_tile.cuh"
#include "kernels/common/per_device.cuh"
#include "kernels/kernel.hpp"

namespace gemmlab::kernels {
namespace {

using T = __nv_fp8_e4m3;
constexpr int BN = 128, BK = 128;  // BK: one 128-byte swizzled row of e4m3 = one scale block of K
constexpr int SUPER_M = 8;
constexpr int THREADS = 384;  // producer warpgroup + two consumer warpgroups
constexpr int SB_BYTES = 16;  // per slot: the 16 bytes of B's scale grid holding the slice's scale
static_assert(BN == 128, "one 128 x 128 scale block of B per tile column: the scale of B is one value per slice");

enum class Scaling { block_1x128_128x128, rowwise };

// How the two consumer warpgroups share the tensor cores around the promotions (issue 22's speed
// target; the variants are compared in one run by scripts/lab/gpu_fp8speed.sh).
enum class Schedule {
  // Each consumer waits for the slot, issues its block's four wgmmas, waits for them, promotes.
  together,
  // The consumers take turns per block (named barriers 3: 0 -> 1, 4: 1 -> 0): the giver hands the
  // turn over once only `handover` of its wgmmas (each its own commit group) are still running, then
  // waits for the rest and promotes while the taker's wgmmas keep the tensor cores busy. Handing over
  // right after issuing (wgmma issue is asynchronous) did not offset the two: see NOTES above.
  offset,
};

// A schedule and its shape (a type, so that the kernel's host stub can name its template arguments).
// Round 3's knobs are members with round 2's values; a schedule changes one by deriving from a Variant,
// as Fastest does. (Round 3's other knobs, clusters of two with multicast, tile orders and setmaxnreg
// splits, lost and went; they are at commit e22e6de.)
template <Schedule SCHEDULE, int WAVES = 1, bool TMA_STORE = false, int STAGES = 6, int HANDOVER = 0,
          int STAGING = 2, bool EARLY_STORE = false>
struct Variant {
  static constexpr Schedule schedule = SCHEDULE;
  static constexpr int waves = WAVES;           // m64 waves per consumer and K block: block tile BM = 128 * waves rows
  static constexpr bool tma_store = TMA_STORE;  // epilogue through shared memory and TMA stores (step 6's store_tile_tma)
  static constexpr int stages = STAGES;         // ring slots
  static constexpr int handover = HANDOVER;     // offset: the giver's wgmmas still running when the turn passes
  // tma_store: 8 KB staging buffers per consumer (2: boxes alternate; 1: each box waits until the TMA
  // engine has read the previous one, which leaves room for a fourth 48 KB slot at BM = 256).
  static constexpr int staging = STAGING;
  // waves 2: wave 0 of a tile is stored while the wgmmas of wave 1's last block run, not after them.
  static constexpr bool early_store = EARLY_STORE;
  // Read the slice's scales from shared memory after issuing the wave's wgmmas, not before, so the
  // load latency hides behind the asynchronous wgmmas (the slot stays held until the promotion).
  static constexpr bool late_scales = false;
  // The 1024-aligned base as smem_raw plus an offset, not through an integer cast: the compiler then
  // knows every pointer into it is shared memory and reads the scales with LDS and writes the staging
  // buffers with STS; through the cast they are generic LD.E / ST.E (SASS of round 2). DeepGEMM reads
  // its scales with ld.shared.
  static constexpr bool shared_base = false;
};

template <class V>
struct Shape {
  static constexpr int BM = 128 * V::waves;
  static constexpr int A_BYTES = BM * BK, B_BYTES = BN * BK, STAGE_BYTES = A_BYTES + B_BYTES;
  // Per slot, beside the ring: the slice's scales of A (BM floats: the tile's rows at its K block) and
  // the 16 bytes of B's scale grid that hold its scale (4 K blocks of the tile column).
  static constexpr int SA_BYTES = BM * 4, SCALE_SLOT = SA_BYTES + 128;
  static constexpr int RING_BYTES = V::stages * STAGE_BYTES;
  static constexpr int STAGING_BYTES = V::tma_store ? 2 /* consumers */ * V::staging * hopper::CBOX_BYTES : 0;
  static constexpr int SMEM_BYTES =
      RING_BYTES + STAGING_BYTES + V::stages * SCALE_SLOT + 1024 /* alignment */ + 1024 /* barriers */;
  static_assert(V::waves == 1 || V::waves == 2, "one or two m64 waves per consumer");
  static_assert(V::staging == 1 || V::staging == 2, "one or two staging buffers per consumer");
  static_assert(!V::early_store || V::waves == 2, "early_store: wave 0 stored under wave 1's last wgmmas");
  static_assert(V::schedule != Schedule::offset || (V::handover >= 1 && V::handover < BK / 32),
                "offset: hand over while 1 to 3 of the block's 4 wgmmas run");
  static_assert(SB_BYTES <= SCALE_SLOT - SA_BYTES && SCALE_SLOT % 128 == 0, "a slot's scales: A's, then B's 16 bytes");
  static_assert(STAGE_BYTES % 1024 == 0, "slots and staging buffers stay 1024-aligned for the 128B swizzle");
  static_assert(SMEM_BYTES <= 227 * 1024, "shared memory per block on Hopper is 227 KB");
};

// The kernel as first written (NOTES: 974 / 1,048 TFLOP/s): the rowwise kernel's schedule.
using Together = Variant<Schedule::together>;
// Round 2's schedule (NOTES: 1,078 / 1,196 TFLOP/s): 256 x 128 tiles (two m64 waves per consumer), the
// consumers together, 4 ring slots, the TMA-store epilogue through one 8 KB staging buffer per
// consumer, wave 0 stored under wave 1's last wgmmas.
using Round2 = Variant<Schedule::together, 2, true, 4, 0, 1, true>;
// The block-scaled kernel's schedule, the fastest of the rounds in the NOTES (round 3: 1,091 / 1,216
// TFLOP/s): round 2's, with the shared-memory base kept in the shared state space and each wave's
// scales read (LDS) after its wgmmas are issued.
struct Fastest : Round2 {
  static constexpr bool late_scales = true;
  static constexpr bool shared_base = true;
};

template <Scaling SC, class V>
__global__ void __launch_bounds__(THREADS, 1)
    hgemm_wgmma_fp8scaled(int M, int N, int K, const __grid_constant__ CUtensorMap mapA,
                          const __grid_constant__ CUtensorMap mapB, const __grid_constant__ CUtensorMap mapC,
                          const float* __restrict__ scale_a, const float* __restrict__ scale_b,
                          float* __restrict__ C) {
#ifdef GEMMLAB_SM90A_DEVICE
  using namespace gemmlab::hopper;
  using S = Shape<V>;
  constexpr int STAGES = V::stages, WAVES = V::waves, BM = S::BM;
  constexpr int KW = Wgmma<T, BN>::k;  // 32
  constexpr int STEPS = BK / KW;       // 4 wgmmas per K block
  constexpr bool BLOCK = SC == Scaling::block_1x128_128x128;
  constexpr bool OFFSET = V::schedule == Schedule::offset;

  extern __shared__ unsigned char smem_raw[];
  // Slot s: (BM, BK) tile of A then (BN, BK) tile of B^T, K-major, 128B-swizzled, 1024-aligned;
  // then the TMA-store staging buffers (tma_store); then the slots' scales; then the barriers.
  unsigned char* smem =
      V::shared_base
          ? smem_raw + ((1024u - (smem_u32(smem_raw) & 1023u)) & 1023u)
          : reinterpret_cast<unsigned char*>((reinterpret_cast<std::uintptr_t>(smem_raw) + 1023) & ~std::uintptr_t(1023));
  unsigned char* staging = smem + S::RING_BYTES;
  unsigned char* scales = staging + S::STAGING_BYTES;
  std::uint64_t* full = reinterpret_cast<std::uint64_t*>(scales + STAGES * S::SCALE_SLOT);
  std::uint64_t* empty = full + STAGES;

  const int tid = threadIdx.x, wg = tid / 128;
  const int slices = (K + BK - 1) / BK;  // the last one partial when K % 128 != 0
  const int l4 = (slices + 3) / 4 * 4;   // B's padded K-block stride
  // BM = 256: M is a multiple of 128 only, so the last tile row may hold just its first wave's rows
  // (TMA fills the rows beyond M with zeros; that wave is neither computed nor stored).
  const int tiles_m = (M + BM - 1) / BM, tiles_n = N / BN;
  const int items = tiles_m * tiles_n;
  auto coords = [&](int item, int& tr, int& tc) { tile_coords<SUPER_M>(item, tiles_m, tiles_n, tr, tc); };
  auto waves_in = [&](int tr) { return WAVES == 1 || tr * BM + 128 < M ? WAVES : 1; };

  if (tid == 0) {
    prefetch_tensor_map(&mapA);
    prefetch_tensor_map(&mapB);
    if constexpr (V::tma_store) prefetch_tensor_map(&mapC);
    for (int s = 0; s < STAGES; ++s) {
      mbar_init(&full[s], 1);              // the producer's arrive.expect_tx, then the TMA bytes
      mbar_init(&empty[s], 2);   // one arrive per consumer warpgroup
    }
    mbar_fence_init();
  }
  __syncthreads();

  if (wg == 0) {
    setmaxnreg_dec<40>();
    if (tid == 0) {
      int it = 0;  // slices issued so far, over all tiles: the ring's position and phase
      for (int item = int(blockIdx.x); item < items; item += gridDim.x) {
        int tr, tc;
        coords(item, tr, tc);
        const int sa_bytes = waves_in(tr) * 128 * 4;  // the scales of the tile's rows inside M
        const int tx_bytes = S::STAGE_BYTES + (BLOCK ? sa_bytes + SB_BYTES : 0);  // TMA counts whole boxes
        for (int kt = 0; kt < slices; ++kt, ++it) {
          const int s = it % STAGES;
          if (it >= STAGES) mbar_wait(&empty[s], ((it / STAGES) - 1) & 1);  // consumers freed the slot
          unsigned char* slot = smem + s * S::STAGE_BYTES;
          mbar_arrive_expect_tx(&full[s], tx_bytes);
          tma_load_2d(slot, &mapA, &full[s], kt * BK, tr * BM);
          tma_load_2d(slot + S::A_BYTES, &mapB, &full[s], kt * BK, tc * BN);
          if constexpr (BLOCK) {
            unsigned char* sc = scales + s * S::SCALE_SLOT;
            bulk_load_1d(sc, scale_a + std::size_t(kt) * M + std::size_t(tr) * BM, sa_bytes, &full[s]);
            bulk_load_1d(sc + S::SA_BYTES, scale_b + std::size_t(tc) * l4 + (kt & ~3), SB_BYTES, &full[s]);
          }
        }
      }
    }
  } else {
    setmaxnreg_inc<232>();
    const int c = wg - 1;
    const bool leader = tid % 128 == 0;
    const int t = tid % 128, w = t / 32, l = t % 32;
    const int r_in = c * 64 + 16 * w + l / 4;  // this thread's first row in a wave of 128 (the second: + 8)
    float p[WAVES][BN / 2];  // fp32 sums of the scaled blocks of the current tile, per wave
#pragma unroll
    for (int v = 0; v < WAVES; ++v)
#pragma unroll
      for (int i = 0; i < BN / 2; ++i) p[v][i] = 0.0f;
    // Slice `it` (K block kt of the tile) is in slot it % STAGES once its full barrier flips.
    auto wait_slot = [&](int it) { mbar_wait(&full[it % STAGES], (it / STAGES) & 1); };
    auto slice_scales = [&](int it, int kt, int wave, float& sa0, float& sa1, float& sb) {
      if constexpr (BLOCK) {
        const float* sc = reinterpret_cast<const float*>(scales + (it % STAGES) * S::SCALE_SLOT);
        sa0 = sc[wave * 128 + r_in];
        sa1 = sc[wave * 128 + r_in + 8];
        sb = sc[S::SA_BYTES / 4 + (kt & 3)];
      }
    };
    auto issue = [&](float(&d)[BN / 2], int it, int wave) {
      const unsigned char* slot = smem + (it % STAGES) * S::STAGE_BYTES;
      wgmma_slice<T, BN, STEPS, OFFSET>(d, slot + (wave * 128 + c * 64) * BK, slot + S::A_BYTES, false);
    };
    // Block in fragment d is done (its wgmma groups waited for): the slot is free once `last` (the
    // slice's last wave); then the block is promoted into pw.
    auto promote = [&](float(&pw)[BN / 2], float(&d)[BN / 2], int it, bool last, float sa0, float sa1, float sb) {
      fence_regs(d);
      if (last && leader) mbar_arrive(&empty[it % STAGES]);  // the slot is read: the producer may refill it
      if constexpr (BLOCK) {
        // NOTES: DeepGEMM's order: the scale product rounded first, then one FFMA per entry.
        const float s0 = __fmul_rn(sa0, sb), s1 = __fmul_rn(sa1, sb);
#pragma unroll
        for (int j = 0; j < BN / 8; ++j) {
          pw[4 * j + 0] = __fmaf_rn(d[4 * j + 0], s0, pw[4 * j + 0]);
          pw[4 * j + 1] = __fmaf_rn(d[4 * j + 1], s0, pw[4 * j + 1]);
          pw[4 * j + 2] = __fmaf_rn(d[4 * j + 2], s1, pw[4 * j + 2]);
          pw[4 * j + 3] = __fmaf_rn(d[4 * j + 3], s1, pw[4 * j + 3]);
        }
      } else {
        promote_add(pw, d);
      }
    };
    // After a tile's last block: wave v's rowwise scales, then its store; p[v] restarts.
    auto store_wave = [&](float(&pv)[BN / 2], int v, int tr, int tc) {
      const int row0 = tr * BM + v * 128 + r_in;
      if constexpr (SC == Scaling::rowwise) {
        const float ra0 = __ldg(scale_a + row0), ra1 = __ldg(scale_a + row0 + 8);
#pragma unroll
        for (int j = 0; j < BN / 8; ++j) {
          const int col = tc * BN + 8 * j + 2 * (l % 4);
          const float sb0 = __ldg(scale_b + col), sb1 = __ldg(scale_b + col + 1);
          pv[4 * j + 0] = __fmul_rn(pv[4 * j + 0], __fmul_rn(ra0, sb0));
          pv[4 * j + 1] = __fmul_rn(pv[4 * j + 1], __fmul_rn(ra0, sb1));
          pv[4 * j + 2] = __fmul_rn(pv[4 * j + 2], __fmul_rn(ra1, sb0));
          pv[4 * j + 3] = __fmul_rn(pv[4 * j + 3], __fmul_rn(ra1, sb1));
        }
      }
      const int frag_row = tr * BM + v * 128 + c * 64;
      if constexpr (V::tma_store)
        store_tile_tma<V::staging>(pv, staging + c * V::staging * CBOX_BYTES, &mapC, frag_row, tc * BN, 1 + c,
                                   leader);
      else
        store_fragment(C + std::size_t(frag_row) * N + std::size_t(tc) * BN, N, pv);
#pragma unroll
      for (int i = 0; i < BN / 2; ++i) pv[i] = 0.0f;
    };
    // The waves from `from` on (early_store stored wave 0 already).
    auto finish_tile = [&](int tr, int tc, int from) {
      const int waves = waves_in(tr);
#pragma unroll
      for (int v = 0; v < WAVES; ++v)
        if (v >= from && v < waves) store_wave(p[v], v, tr, tc);
    };

    float d[BN / 2];  // (64, BN) wgmma fragment: one K block of one wave, from zero
    bool first = true;
    int it = 0;
    for (int item = int(blockIdx.x); item < items; item += gridDim.x) {
      int tr, tc;
      coords(item, tr, tc);
      const int waves = waves_in(tr);
      const bool last_item = item + int(gridDim.x) >= items;
      for (int kt = 0; kt < slices; ++kt, ++it) {
        wait_slot(it);
#pragma unroll
        for (int v = 0; v < WAVES; ++v) {
          if (v >= waves) break;
          float sa0 = 1.0f, sa1 = 1.0f, sb = 1.0f;
          if constexpr (!V::late_scales) slice_scales(it, kt, v, sa0, sa1, sb);
          // offset: consumer 0 waits for its turn before every block but its first, consumer 1
          // before every block; consumer 1 gives none after the last block (0 has no next one).
          if (OFFSET && !(c == 0 && first)) named_bar_sync(3 + (c ^ 1), 256);
          first = false;
          issue(d, it, v);
          if constexpr (V::late_scales) slice_scales(it, kt, v, sa0, sa1, sb);  // under the wgmmas just issued
          if constexpr (OFFSET) {
            wgmma_wait<V::handover>();
            if (!(c == 1 && last_item && kt == slices - 1 && v == waves - 1)) named_bar_arrive(3 + c, 256);
          }
          // early_store: wave 0 is final; its store reads p[0] only, not the fragment d in flight.
          if (V::early_store && v == 1 && kt == slices - 1) store_wave(p[0], 0, tr, tc);
          wgmma_wait<0>();
          promote(p[v], d, it, v == waves - 1, sa0, sa1, sb);
        }
      }
      finish_tile(tr, tc, V::early_store && waves == 2 ? 1 : 0);
    }
    if constexpr (V::tma_store)
      if (leader) bulk_wait_group<0>();  // the staging buffers must outlive the last stores
  }
#else
  __trap();  // built without sm_90a: the descriptor says requires_sm90a, so this never launches
#endif
}

template <Scaling SC, class V>
void launch(const GemmArgs& a) {
  using S = Shape<V>;
  if (!a.scale_a || !a.scale_b) throw std::runtime_error("hgemm_wgmma_11_fp8scaled: the harness passed no scale grids");
  if (reinterpret_cast<std::uintptr_t>(a.scale_a) % 16 || reinterpret_cast<std::uintptr_t>(a.scale_b) % 16)
    throw std::runtime_error("hgemm_wgmma_11_fp8scaled: the scale grids must start on 16-byte boundaries (TMA bulk copies)");
  const CUtensorMap mapA = hopper::make_kmajor_tensor_map(a.A, a.M, a.K, 1, S::BM);
  const CUtensorMap mapB = hopper::make_kmajor_tensor_map(a.B, a.N, a.K, 1, BN);
  const CUtensorMap mapC = V::tma_store ? hopper::make_f32_store_tensor_map(a.C, a.M, a.N, 64) : CUtensorMap{};
  const int items = ((a.M + S::BM - 1) / S::BM) * (a.N / BN);
  hopper::launch_persistent<hgemm_wgmma_fp8scaled<SC, V>, 1>(
      "hgemm_wgmma_11_fp8scaled", THREADS, S::SMEM_BYTES, items, items, a.stream, a.M, a.N, a.K, mapA, mapB, mapC,
      a.scale_a, a.scale_b, static_cast<float*>(a.C));
}

template <Scaling SC, class V = Together>
constexpr Kernel make(const char* name, const char* desc) {
  return Kernel{
      .name = name, .family = "hopper", .description = desc,
      .numerics = [] {
        Numerics n = wgmma_f32_numerics(Format::e4m3, 128);
        n.scale_application = SC == Scaling::rowwise ? ScaleApplication::epilogue : ScaleApplication::block_fma;
        return n;
      }(),
      .layout_a = Layout::row_major, .layout_b = Layout::col_major,
      .m_multiple = 128, .n_multiple = BN, .k_multiple = 16,
      .min_cc = 90, .requires_sm90a = true, .workspace_bytes = 0,
      .launch = launch<SC, V>,
      .scale_a = SC == Scaling::rowwise ? ScaleGranularity::outer : ScaleGranularity::k128,
      .scale_b = SC == Scaling::rowwise ? ScaleGranularity::outer : ScaleGranularity::blk128,
  };
}

}  // namespace

const Kernel& hgemm_wgmma_11_fp8scaled_sm8_e4m3_1x128_128x128() {
  static const Kernel k = make<Scaling::block_1x128_128x128, Fastest>(
      "hgemm_wgmma_11_fp8scaled_sm8_e4m3_1x128_128x128",
      "fp8 e4m3, A 1x128 / B 128x128 fp32 scales, promoted every 128 of K by one FFMA with the scale product "
      "(DeepGEMM's order), persistent, 256x128 tile (two m64 waves per consumer), TMA-store epilogue");
  return k;
}
const Kernel& hgemm_wgmma_11_fp8scaled_sm8_e4m3_rowwise() {
  static const Kernel k = make<Scaling::rowwise>(
      "hgemm_wgmma_11_fp8scaled_sm8_e4m3_rowwise",
      "fp8 e4m3, rowwise A / columnwise B fp32 scales applied in the epilogue, promoted every 128 of K, persistent");
  return k;
}


}  // namespace gemmlab::kernels
