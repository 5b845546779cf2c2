// hgemm_mma_03b_pipeline_tile4x: step 3b of the mma.sync series, the fastest of it. Step 3's
// cp.async pipeline with 4x register tiling: each warp holds a (64, WN) tile of C, 4 m16 tiles by
// WN/8 n8 tiles, and issues 4 * WN/8 mma.sync.m16n8k16 per k16 step from 4 + WN/16 ldmatrix.x4.
//  * 128x128 block (8 warps 2x4, warp tile 64x32): the post's step 3b; in_mma, external, promoted.
//  * 128x256 block (8 warps 2x4, warp tile 64x64): the larger tile, for Hopper;
//    in_mma, external, bf16 inputs, and an fp16 accumulator. Promotion is not offered on it: it
//    needs a second set of 128 accumulator registers per thread, which does not fit in 255.
// BK = 64 (128-byte smem rows, 16-byte chunk c of row r stored at chunk c ^ (r % 8): ldmatrix and
// cp.async are free of bank conflicts), 4-stage cp.async.cg pipeline, one barrier per k-tile (one k-step early),
// fragments double-buffered across the four k16 steps of a tile. A row-major (M, K), B col-major
// (stored as B^T (N, K) row-major) so both tiles are k-major and ldmatrix needs no .trans.
// External mode of the 64x64 warp tile single-buffers the A fragments (A_SINGLE below): with both
// fragment sets double-buffered it needed 255 registers and spilled 52 bytes in the loop;
// single-buffered it uses 255 registers with an 8-byte spill (one LDL.64 of a panel pointer per
// k-tile, in the cp.async branch, not between the mma).
//
// NOTES: the ldmatrix of the next k-step is issued before the k-tile's cp.async (ptxas cannot hoist an
// ldmatrix over a cp.async that may alias, so it would leave the next step's fragments until after all
// 32 mma of k-step 0): it costs nothing and removes an exposed latency.
// Measurements and variants tried (persistent grid, L2 rasterization): results/mma/README.md#step-3b.
//
// Numerics (per output entry, K = 16 k-steps of 16 products each; see kernels/common/mma_ptx.cuh):
//  * in_mma:   D = A*B + D: the fp32 accumulator goes through the tensor core's aligned,
//              truncating 16-term addition at every k-step, in increasing k.
//  * external: T = A*B + 0 (16 exact products summed and truncated inside the tensor core), then
//              acc = acc + T with __fadd_rn (round to nearest, never contracted), in increasing k.
//  * promoted_every_N: in_mma for N k-steps into a zeroed partial, then acc = acc + partial with
//              __fadd_rn (CUTLASS's / DeepSeek's promotion interval; promotion_interval_k = 16 N).
//  * f16acc:   mma.sync .f16.f16.f16.f16, the running sum is fp16 inside the tensor core, C fp16.
//  * bf16:     bf16 inputs, otherwise as fp16.
// Descriptors say Rounding::toward_zero for every mode: even in external mode each k-step's 16
// products are summed by the tensor core with truncation before the round-to-nearest add, and the
// bound model has one rounding knob, so truncate (2u per addition) is the valid, conservative choice.
#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include <cstdint>

#include "kernels/common/cuda_check.cuh"
#include "kernels/common/mma_ptx.cuh"
#include "kernels/kernel.hpp"

namespace gemmlab::kernels {
namespace {

constexpr int BM = 128, BK = 64, THREADS = 256;
constexpr int WARPS_M = 2, WARPS_N = 4;
constexpr int WM = BM / WARPS_M;  // 64 rows of C per warp
constexpr int MT = WM / 16;       // 4 m16 tiles per warp
constexpr int KSTEPS = BK / 16;   // 4 k16 steps per k-tile
constexpr int ROW_CHUNKS = BK / 8;  // 8 chunks of 16 B per smem row

static_assert(BK == 64, "the swizzle c ^ (r % 8) assumes 128-byte smem rows (BK = 64 halves)");
static_assert(THREADS == 32 * WARPS_M * WARPS_N, "one warp per warp tile");
static_assert(THREADS % ROW_CHUNKS == 0 && (THREADS / ROW_CHUNKS) % 8 == 0,
              "each thread's chunks must keep the same swizzle phase (rows step by a multiple of 8)");

// Offset in halves of chunk `ch` of row `r` in a k-major (rows, BK) tile.
__device__ __forceinline__ int swz(int r, int ch) { return r * BK + ((ch ^ (r & 7)) << 3); }

template <int BN, int STAGES>
struct Shape {
  static constexpr int WN = BN / WARPS_N;  // columns of C per warp
  static constexpr int NT = WN / 8;        // n8 tiles per warp
  static constexpr int A_TILE = BM * BK;   // halves per stage
  static constexpr int B_TILE = BN * BK;
  static constexpr int SMEM_BYTES = STAGES * (A_TILE + B_TILE) * 2;
  static_assert(NT % 2 == 0, "B fragments are loaded two n8 tiles per ldmatrix.x4");
  static_assert((BM * ROW_CHUNKS) % THREADS == 0 && (BN * ROW_CHUNKS) % THREADS == 0, "whole chunks per thread");
};

// (rows, BK) tile at gmem (k-major, leading dimension K) -> swizzled smem, 16 B per cp.async.
template <int ROWS>
__device__ __forceinline__ void load_tile_async(uint32_t smem, const uint16_t* __restrict__ g, int K, int tid) {
  constexpr int ROWS_PER_PASS = THREADS / ROW_CHUNKS;  // 32
  const int r = tid / ROW_CHUNKS, ch = tid % ROW_CHUNKS;
  const uint32_t s0 = smem + swz(r, ch) * 2;
  const uint16_t* g0 = g + (size_t)r * K + ch * 8;
#pragma unroll
  for (int i = 0; i < ROWS / ROWS_PER_PASS; ++i)
    ptx::cp_async_cg16(s0 + i * ROWS_PER_PASS * BK * 2, g0 + (size_t)i * ROWS_PER_PASS * K);
}

// A_SINGLE: A fragments single-buffered, each m16 fragment reloaded for the next k-step as soon as
// its last mma is issued (B stays double-buffered): 32 registers fewer, for the external mode of
// the 64x64 warp tile, which otherwise spills.
// IN: fp16 or bf16 inputs; ACC: fp32 (the mma's C/D are fp32) or fp16 (.f16.f16.f16.f16, in_mma only).
template <int BN, int STAGES, Accumulation MODE, Format IN, Format ACC>
__global__ void __launch_bounds__(THREADS, 1)
    hgemm_pipeline(int M, int N, int K, const uint16_t* __restrict__ A, const uint16_t* __restrict__ Bt,
                   void* __restrict__ Cout, int promote_ksteps) {
  using S = Shape<BN, STAGES>;
  constexpr int NT = S::NT, WN = S::WN;
  constexpr bool A_SINGLE = MODE == Accumulation::external && BN == 256;
  constexpr bool BF16 = IN == Format::bf16;
  static_assert(IN == Format::fp16 || IN == Format::bf16, "mma.sync m16n8k16 takes fp16 or bf16 inputs");
  static_assert(ACC == Format::fp32 || (ACC == Format::fp16 && MODE == Accumulation::in_mma && !BF16),
                "an fp16 accumulator is only the in_mma chain of fp16 inputs");
  extern __shared__ __align__(128) uint16_t smem[];
  // smem: STAGES x (BM, BK) tiles of A, then STAGES x (BN, BK) tiles of B^T, all swizzled.
  const uint32_t sA = ptx::smem_u32(smem);
  const uint32_t sB = sA + STAGES * S::A_TILE * 2;

  const int tid = threadIdx.x, lane = tid % 32, warp = tid / 32;
  const int wm = warp / WARPS_N, wn = warp % WARPS_N;
  const int row0 = blockIdx.y * BM, col0 = blockIdx.x * BN;
  const uint16_t* gA = A + (size_t)row0 * K;   // (BM, K) panel of A
  const uint16_t* gB = Bt + (size_t)col0 * K;  // (BN, K) panel of B^T
  const int KT = K / BK;

  // Accumulators: fp32 (16,8) fragments, or fp16 pairs for f16acc; `part` only for promoted.
  constexpr bool F16 = ACC == Format::fp16;
  constexpr bool PROMO = MODE == Accumulation::promoted;
  float acc[MT][NT][4];
  float part[PROMO ? MT : 1][PROMO ? NT : 1][4];
  uint32_t hacc[F16 ? MT : 1][F16 ? NT : 1][2];

  // ldmatrix row addresses of this lane (see mma_ptx.cuh for the matrix order):
  // A x4 of an m16k16 tile: rows lane % 16, chunk +lane / 16; B x4 of two n8k16 tiles:
  // rows (lane % 8) + 8 (lane / 16), chunk +(lane / 8) % 2. Every row has r % 8 == lane % 8.
  const int a_row = wm * WM + (lane & 15), a_ch = lane >> 4;
  const int b_row = wn * WN + (lane & 7) + ((lane >> 4) << 3), b_ch = (lane >> 3) & 1;
  const int phase = lane & 7;

  auto load_a = [&](uint32_t (&a)[4], int stage, int ks, int i) {
    ptx::ldmatrix_x4(a, sA + stage * S::A_TILE * 2 + ((a_row + i * 16) * BK + (((ks * 2 + a_ch) ^ phase) << 3)) * 2);
  };
  auto load_b = [&](uint32_t (&bf)[NT][2], int stage, int ks) {
    const uint32_t b_base = sB + stage * S::B_TILE * 2 + (b_row * BK + (((ks * 2 + b_ch) ^ phase) << 3)) * 2;
#pragma unroll
    for (int j = 0; j < NT / 2; ++j) {
      uint32_t r[4];
      ptx::ldmatrix_x4(r, b_base + j * 16 * BK * 2);
      bf[2 * j][0] = r[0];
      bf[2 * j][1] = r[1];
      bf[2 * j + 1][0] = r[2];
      bf[2 * j + 1][1] = r[3];
    }
  };
  auto load_frags = [&](uint32_t (&af)[MT][4], uint32_t (&bf)[NT][2], int stage, int ks) {
#pragma unroll
    for (int i = 0; i < MT; ++i) load_a(af[i], stage, ks, i);
    load_b(bf, stage, ks);
  };

  auto mma_one = [&](int i, int j, const uint32_t (&a)[4], const uint32_t (&b)[2]) {
    if constexpr (F16) {
      ptx::mma_m16n8k16_f16_f16(hacc[i][j], a, b, hacc[i][j]);
    } else if constexpr (MODE == Accumulation::in_mma) {
      ptx::mma_m16n8k16_f32<BF16>(acc[i][j], a, b, acc[i][j]);
    } else if constexpr (MODE == Accumulation::external) {
      const float zero[4] = {0.0f, 0.0f, 0.0f, 0.0f};
      float t[4];
      ptx::mma_m16n8k16_f32<BF16>(t, a, b, zero);
#pragma unroll
      for (int e = 0; e < 4; ++e) acc[i][j][e] = __fadd_rn(acc[i][j][e], t[e]);
    } else {
      static_assert(MODE == Accumulation::promoted, "mma 03b: in_mma, external or promoted");
      ptx::mma_m16n8k16_f32<BF16>(part[i][j], a, b, part[i][j]);
    }
  };
  int since_promotion = 0;
  auto promote = [&]() {
    if constexpr (PROMO) {
      if (++since_promotion == promote_ksteps) {
        since_promotion = 0;
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

  // Prologue: k-tiles 0 .. STAGES-2 in flight, one commit group each (empty groups keep the count).
#pragma unroll
  for (int s = 0; s < STAGES - 1; ++s) {
    if (s < KT) {
      load_tile_async<BM>(sA + s * S::A_TILE * 2, gA + s * BK, K, tid);
      load_tile_async<BN>(sB + s * S::B_TILE * 2, gB + s * BK, K, tid);
    }
    ptx::cp_async_commit();
  }
#pragma unroll
  for (int i = 0; i < MT; ++i)
#pragma unroll
    for (int j = 0; j < NT; ++j)
#pragma unroll
      for (int e = 0; e < 4; ++e) {
        acc[i][j][e] = 0.0f;
        if constexpr (PROMO) part[i][j][e] = 0.0f;
        if constexpr (F16) hacc[i][j][e & 1] = 0u;
      }
  {  // one (BM, BN) tile per block

    // Main loop. The barrier for k-tile kt+1 sits after the mma of k-step KSTEPS-2 of tile kt, so
    // the fragments of tile kt+1's first k-step are loaded before tile kt's last mma (no bubble at
    // the tile boundary), and the copy of tile kt+STAGES-1 (issued in k-step 0, after that step's
    // ldmatrix, which ptxas cannot move past a cp.async that may alias) refills the slot of tile
    // kt-1, which every warp finished reading before that barrier.
    uint32_t af[A_SINGLE ? 1 : 2][MT][4], bf[2][NT][2];
    ptx::cp_async_wait<STAGES - 2>();
    __syncthreads();
    if constexpr (A_SINGLE) {
#pragma unroll
      for (int i = 0; i < MT; ++i) load_a(af[0][i], 0, 0, i);
      load_b(bf[0], 0, 0);
    } else {
      load_frags(af[0], bf[0], 0, 0);
    }
    for (int kt = 0; kt < KT; ++kt) {
      const int stage = kt % STAGES;
#pragma unroll
      for (int ks = 0; ks < KSTEPS; ++ks) {
        const bool have_next = ks + 1 < KSTEPS || kt + 1 < KT;
        const int nstage = ks + 1 < KSTEPS ? stage : (kt + 1) % STAGES, nks = (ks + 1) % KSTEPS;
        if constexpr (A_SINGLE) {
          if (have_next) load_b(bf[(ks + 1) & 1], nstage, nks);
#pragma unroll
          for (int i = 0; i < MT; ++i) {
#pragma unroll
            for (int j = 0; j < NT; ++j) mma_one(i, j, af[0][i], bf[ks & 1][j]);
            if (have_next) load_a(af[0][i], nstage, nks, i);
          }
        } else {
          if (have_next) load_frags(af[(ks + 1) & 1], bf[(ks + 1) & 1], nstage, nks);
#pragma unroll
          for (int i = 0; i < MT; ++i)
#pragma unroll
            for (int j = 0; j < NT; ++j) mma_one(i, j, af[ks & 1][i], bf[ks & 1][j]);
        }
        promote();
        if (ks == 0) {
          const int next = kt + STAGES - 1;
          if (next < KT) {
            const int slot = next % STAGES;
            load_tile_async<BM>(sA + slot * S::A_TILE * 2, gA + (size_t)next * BK, K, tid);
            load_tile_async<BN>(sB + slot * S::B_TILE * 2, gB + (size_t)next * BK, K, tid);
          }
          ptx::cp_async_commit();  // possibly empty: one group per k-tile keeps the count
        }
        if (ks == KSTEPS - 2) {
          ptx::cp_async_wait<STAGES - 2>();  // k-tile kt+1 has landed (for this thread) ...
          __syncthreads();                   // ... for all threads
        }
      }
    }
    if constexpr (PROMO) {
#pragma unroll
      for (int i = 0; i < MT; ++i)
#pragma unroll
        for (int j = 0; j < NT; ++j)
#pragma unroll
          for (int e = 0; e < 4; ++e) acc[i][j][e] = __fadd_rn(acc[i][j][e], part[i][j][e]);
    }

    // Epilogue: (16, 8) fragment (i, j) holds C(g, 2t..2t+1) and C(g+8, 2t..2t+1).
    const int g = lane / 4, t = lane % 4;
#pragma unroll
    for (int i = 0; i < MT; ++i)
#pragma unroll
      for (int j = 0; j < NT; ++j) {
        const int r = row0 + wm * WM + i * 16 + g, c = col0 + wn * WN + j * 8 + 2 * t;
        if constexpr (F16) {
          __half* C = static_cast<__half*>(Cout);
          *reinterpret_cast<uint32_t*>(&C[(size_t)r * N + c]) = hacc[i][j][0];
          *reinterpret_cast<uint32_t*>(&C[(size_t)(r + 8) * N + c]) = hacc[i][j][1];
        } else {
          float* C = static_cast<float*>(Cout);
          *reinterpret_cast<float2*>(&C[(size_t)r * N + c]) = make_float2(acc[i][j][0], acc[i][j][1]);
          *reinterpret_cast<float2*>(&C[(size_t)(r + 8) * N + c]) = make_float2(acc[i][j][2], acc[i][j][3]);
        }
      }
  }
  ptx::cp_async_wait<0>();
}

template <int BN, int STAGES, Accumulation MODE, Format IN, Format ACC, int PROMOTE_KSTEPS>
void launch(const GemmArgs& a) {
  using S = Shape<BN, STAGES>;
  auto* kern = hgemm_pipeline<BN, STAGES, MODE, IN, ACC>;
  GEMMLAB_CUDA_CHECK(cudaFuncSetAttribute(kern, cudaFuncAttributeMaxDynamicSharedMemorySize, S::SMEM_BYTES));
  dim3 grid(a.N / BN, a.M / BM);
  kern<<<grid, THREADS, S::SMEM_BYTES, as_stream(a.stream)>>>(a.M, a.N, a.K, static_cast<const uint16_t*>(a.A),
                                                               static_cast<const uint16_t*>(a.B), a.C,
                                                               PROMOTE_KSTEPS);
  GEMMLAB_LAUNCH_CHECK("hgemm_mma_03b_pipeline_tile4x");
}

// The descriptor follows from the same template arguments as the launcher: one source of truth.
template <int BN, int STAGES, Accumulation MODE, Format IN, Format ACC, int PROMOTE_KSTEPS = 0>
constexpr Kernel make(const char* name, const char* desc) {
  return Kernel{
      .name = name, .family = "mma", .description = desc,
      .numerics = {.input = IN, .compute = IN, .accumulator = ACC, .output = ACC, .accumulation = MODE,
                   .instruction = ACC == Format::fp16 ? tc::Instruction::mma_m16n8k16_f16_f16
                                  : IN == Format::bf16 ? tc::Instruction::mma_m16n8k16_bf16_f32
                                                       : tc::Instruction::mma_m16n8k16_f16_f32,
                   .k_step = 16, .promotion_interval_k = 16 * PROMOTE_KSTEPS,
                   .accumulation_rounding = Rounding::toward_zero},
      .layout_a = Layout::row_major, .layout_b = Layout::col_major,
      .m_multiple = BM, .n_multiple = BN, .k_multiple = BK,
      .min_cc = 80, .requires_sm90a = false, .workspace_bytes = 0,
      .launch = launch<BN, STAGES, MODE, IN, ACC, PROMOTE_KSTEPS>,
  };
}

}  // namespace

#define GEMMLAB_MMA03B(id, desc, ...)                    \
  const Kernel& id() {                                  \
    static const Kernel k = make<__VA_ARGS__>(#id, desc); \
    return k;                                           \
  }

constexpr auto in_mma = Accumulation::in_mma, external = Accumulation::external, promoted = Accumulation::promoted;
constexpr auto fp16 = Format::fp16, bf16 = Format::bf16, fp32 = Format::fp32;

// 128x128 block tile (the post's step 3b).
GEMMLAB_MMA03B(hgemm_mma_03b_pipeline_tile4x_s4_in_mma, "mma.sync 128x128x64, 4-stage cp.async, D = A*B + D",
               128, 4, in_mma, fp16, fp32)
GEMMLAB_MMA03B(hgemm_mma_03b_pipeline_tile4x_s4_external,
               "mma.sync 128x128x64, 4-stage cp.async, T = A*B + 0 then acc += T (fp32, nearest)",
               128, 4, external, fp16, fp32)
GEMMLAB_MMA03B(hgemm_mma_03b_pipeline_tile4x_s4_promoted_every_32k,
               "mma.sync 128x128x64, in-mma for 2 k-steps then promoted to fp32 registers", 128, 4, promoted, fp16,
               fp32, 2)
GEMMLAB_MMA03B(hgemm_mma_03b_pipeline_tile4x_s4_promoted_every_64k,
               "mma.sync 128x128x64, in-mma for 4 k-steps then promoted to fp32 registers", 128, 4, promoted, fp16,
               fp32, 4)
GEMMLAB_MMA03B(hgemm_mma_03b_pipeline_tile4x_s4_promoted_every_128k,
               "mma.sync 128x128x64, in-mma for 8 k-steps then promoted to fp32 registers", 128, 4, promoted, fp16,
               fp32, 8)
GEMMLAB_MMA03B(hgemm_mma_03b_pipeline_tile4x_s4_promoted_every_512k,
               "mma.sync 128x128x64, in-mma for 32 k-steps then promoted to fp32 registers", 128, 4, promoted, fp16,
               fp32, 32)
// 128x256 block tile, 64x64 warp tiles: the fastest mma.sync kernel.
GEMMLAB_MMA03B(hgemm_mma_03b_pipeline_tile4x_128x256_s4_in_mma,
               "mma.sync 128x256x64, 64x64 warp tiles, 4-stage cp.async, D = A*B + D", 256, 4, in_mma, fp16, fp32)
GEMMLAB_MMA03B(hgemm_mma_03b_pipeline_tile4x_128x256_s4_external,
               "mma.sync 128x256x64, 64x64 warp tiles, 4-stage cp.async, T = A*B + 0 then acc += T (fp32, nearest)",
               256, 4, external, fp16, fp32)
GEMMLAB_MMA03B(hgemm_mma_03b_pipeline_tile4x_128x256_s4_bf16_in_mma,
               "mma.sync bf16 128x256x64, 4-stage cp.async, D = A*B + D", 256, 4, in_mma, bf16, fp32)
GEMMLAB_MMA03B(hgemm_mma_03b_pipeline_tile4x_128x256_s4_bf16_external,
               "mma.sync bf16 128x256x64, 4-stage cp.async, T = A*B + 0 then acc += T (fp32, nearest)", 256, 4,
               external, bf16, fp32)
GEMMLAB_MMA03B(hgemm_mma_03b_pipeline_tile4x_128x256_s4_f16acc_in_mma,
               "mma.sync .f16.f16.f16.f16 128x256x64: fp16 accumulator in the mma, fp16 C", 256, 4, in_mma, fp16,
               fp16)

}  // namespace gemmlab::kernels
