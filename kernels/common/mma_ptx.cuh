// Inline-PTX wrappers for the mma.sync kernels (sm_80 and later): the tensor-core instruction
// mma.sync.m16n8k16 in three type combinations, ldmatrix (x4 / x2, plain and .trans) and the
// asynchronous global->shared copy cp.async.cg with its group bookkeeping.
//
// Fragment layouts of mma.m16n8k16 (PTX ISA, "Matrix Fragments for mma.m16n8k16 with floating
// point type"), with g = lane / 4 (groupID) and t = lane % 4 (threadID_in_group):
//   A (16, 16), row:  a[0] = A(g,   2t..2t+1)   a[1] = A(g+8, 2t..2t+1)
//                     a[2] = A(g,   2t+8..+9)   a[3] = A(g+8, 2t+8..+9)        (each a 16x2 pair)
//   B (16, 8),  col:  b[0] = B(2t..2t+1, g)     b[1] = B(2t+8..2t+9, g)
//   C/D (16, 8) f32:  c[0..1] = C(g, 2t..2t+1)  c[2..3] = C(g+8, 2t..2t+1)
//   C/D (16, 8) f16:  c[0] = half2 C(g, 2t..2t+1)  c[1] = half2 C(g+8, 2t..2t+1)
// ldmatrix hands lane l the pair (row l/4, cols 2(l%4)..+1) of each 8x8 b16 matrix, which is the
// layout above for A (rows = m) and for B stored n-major (rows = n, i.e. B^T row-major / B col-major).
//
// Numerics of mma.sync f32 accumulation (Fasi et al. 2021; Khattak & Mikaitis 2025, leads to be
// measured): the 16 products of one k16 block are exact, aligned to the largest exponent among them
// and C with a few extra bits, the bits shifted out truncated, summed, and the fp32 result rounded
// toward zero. `D = A*B + C` therefore truncates once per k16 block, with C inside the block.
#pragma once
#include <cstdint>

#include "kernels/kernel.hpp"

namespace gemmlab::ptx {

// All wrappers are volatile asm, so they keep their source order (ptxas still schedules the SASS);
// cp.async and its group operations also clobber memory, so they never move across a barrier.
//
// D (16x8 f32) = A (16x16 f16, row) * B (16x8 f16, col) + C (16x8 f32). d may alias c.
__device__ __forceinline__ void mma_m16n8k16_f32_f16(float (&d)[4], const uint32_t (&a)[4], const uint32_t (&b)[2],
                                                     const float (&c)[4]) {
  asm volatile(
      "mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, "
      "{%10,%11,%12,%13};\n"
      : "=f"(d[0]), "=f"(d[1]), "=f"(d[2]), "=f"(d[3])
      : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b[0]), "r"(b[1]), "f"(c[0]), "f"(c[1]), "f"(c[2]),
        "f"(c[3]));
}

// Same with bf16 inputs.
__device__ __forceinline__ void mma_m16n8k16_f32_bf16(float (&d)[4], const uint32_t (&a)[4], const uint32_t (&b)[2],
                                                      const float (&c)[4]) {
  asm volatile(
      "mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, "
      "{%10,%11,%12,%13};\n"
      : "=f"(d[0]), "=f"(d[1]), "=f"(d[2]), "=f"(d[3])
      : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b[0]), "r"(b[1]), "f"(c[0]), "f"(c[1]), "f"(c[2]),
        "f"(c[3]));
}

// fp16 accumulator: D (16x8 f16, two half2 registers) = A * B + C, C and D f16.
__device__ __forceinline__ void mma_m16n8k16_f16_f16(uint32_t (&d)[2], const uint32_t (&a)[4], const uint32_t (&b)[2],
                                                     const uint32_t (&c)[2]) {
  asm volatile(
      "mma.sync.aligned.m16n8k16.row.col.f16.f16.f16.f16 {%0,%1}, {%2,%3,%4,%5}, {%6,%7}, {%8,%9};\n"
      : "=r"(d[0]), "=r"(d[1])
      : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b[0]), "r"(b[1]), "r"(c[0]), "r"(c[1]));
}

// Input-type dispatch for kernels templated on the element type (__half or __nv_bfloat16).
template <bool kBf16>
__device__ __forceinline__ void mma_m16n8k16_f32(float (&d)[4], const uint32_t (&a)[4], const uint32_t (&b)[2],
                                                 const float (&c)[4]) {
  if constexpr (kBf16)
    mma_m16n8k16_f32_bf16(d, a, b, c);
  else
    mma_m16n8k16_f32_f16(d, a, b, c);
}

// One k-step of an fp16 -> fp32 accumulation in either mode:
//  in_mma:   acc = A*B + acc inside the tensor core;
//  external: t = A*B + 0 in the tensor core, then acc = acc + t with __fadd_rn
//                               (round to nearest, never contracted into an FMA).
template <Accumulation MODE, bool kBf16 = false>
__device__ __forceinline__ void mma_accumulate(float (&acc)[4], const uint32_t (&a)[4], const uint32_t (&b)[2]) {
  static_assert(MODE == Accumulation::in_mma || MODE == Accumulation::external, "mma_accumulate: in_mma or external");
  if constexpr (MODE == Accumulation::external) {
    const float zero[4] = {0.0f, 0.0f, 0.0f, 0.0f};
    float t[4];
    mma_m16n8k16_f32<kBf16>(t, a, b, zero);
#pragma unroll
    for (int e = 0; e < 4; ++e) acc[e] = __fadd_rn(acc[e], t[e]);
  } else {
    mma_m16n8k16_f32<kBf16>(acc, a, b, acc);
  }
}

// Two consecutive b16 values (lower index in the low half), as mma fragments hold them.
__device__ __forceinline__ uint32_t pack_b16(uint16_t lo, uint16_t hi) { return uint32_t(lo) | (uint32_t(hi) << 16); }

__device__ __forceinline__ uint32_t smem_u32(const void* p) {
  return static_cast<uint32_t>(__cvta_generic_to_shared(p));
}

// Four 8x8 b16 matrices; lanes 8i..8i+7 give the row addresses (16 B each) of matrix i.
__device__ __forceinline__ void ldmatrix_x4(uint32_t (&r)[4], uint32_t addr) {
  asm volatile("ldmatrix.sync.aligned.m8n8.x4.shared.b16 {%0,%1,%2,%3}, [%4];\n"
               : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3])
               : "r"(addr));
}
// Two 8x8 b16 matrices; lanes 0..15 give the row addresses (the others are ignored but must be valid).
__device__ __forceinline__ void ldmatrix_x2(uint32_t (&r)[2], uint32_t addr) {
  asm volatile("ldmatrix.sync.aligned.m8n8.x2.shared.b16 {%0,%1}, [%2];\n" : "=r"(r[0]), "=r"(r[1]) : "r"(addr));
}
// Transposed variants: lane l receives the pair (rows 2(l%4)..+1, col l/4) of each matrix.
__device__ __forceinline__ void ldmatrix_x4_trans(uint32_t (&r)[4], uint32_t addr) {
  asm volatile("ldmatrix.sync.aligned.m8n8.x4.trans.shared.b16 {%0,%1,%2,%3}, [%4];\n"
               : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3])
               : "r"(addr));
}
__device__ __forceinline__ void ldmatrix_x2_trans(uint32_t (&r)[2], uint32_t addr) {
  asm volatile("ldmatrix.sync.aligned.m8n8.x2.trans.shared.b16 {%0,%1}, [%2];\n"
               : "=r"(r[0]), "=r"(r[1])
               : "r"(addr));
}

// 16-byte asynchronous copy global -> shared, bypassing L1 (.cg). Both addresses 16-byte aligned.
__device__ __forceinline__ void cp_async_cg16(uint32_t smem_addr, const void* gmem) {
  asm volatile("cp.async.cg.shared.global [%0], [%1], 16;\n" ::"r"(smem_addr), "l"(gmem) : "memory");
}
__device__ __forceinline__ void cp_async_commit() { asm volatile("cp.async.commit_group;\n" ::: "memory"); }
// Wait until at most N committed groups of this thread are still in flight.
template <int N>
__device__ __forceinline__ void cp_async_wait() {
  asm volatile("cp.async.wait_group %0;\n" ::"n"(N) : "memory");
}

// Epilogue of a warp's (16 MT, 8 NT) tile of fp32 accumulators, fragment (i, j) in the C/D layout
// above, to row-major C (leading dimension ldc) at rows row0 + 16 i .., columns col0 + 8 j ..: two
// 8-byte stores per fragment and lane.
template <int MT, int NT>
__device__ __forceinline__ void store_acc_f32(float* C, int ldc, int row0, int col0, int lane,
                                              const float (&acc)[MT][NT][4]) {
  const int g = lane / 4, t = lane % 4;
#pragma unroll
  for (int i = 0; i < MT; ++i)
#pragma unroll
    for (int j = 0; j < NT; ++j) {
      const int r = row0 + i * 16 + g, c = col0 + j * 8 + 2 * t;
      *reinterpret_cast<float2*>(&C[(size_t)r * ldc + c]) = make_float2(acc[i][j][0], acc[i][j][1]);
      *reinterpret_cast<float2*>(&C[(size_t)(r + 8) * ldc + c]) = make_float2(acc[i][j][2], acc[i][j][3]);
    }
}

// fp16 in, fp32 accumulate and out through mma.sync.m16n8k16 in k-steps of 16 in increasing k, in_mma
// or external, the tensor core's truncating alignment (also the WMMA kernels, which run as
// m16n8k16 on sm_80 and later).
constexpr Numerics fp16_f32_mma_numerics(Accumulation mode, int split_k = 1) {
  return Numerics{.input = Format::fp16, .compute = Format::fp16, .accumulator = Format::fp32,
                  .output = Format::fp32, .accumulation = mode,
                  .instruction = tc::Instruction::mma_m16n8k16_f16_f32, .k_step = 16, .split_k = split_k,
                  .accumulation_rounding = Rounding::toward_zero, .split = {}, .tree = {}};
}

// Descriptor of an fp16-in, fp32-accumulate, fp32-out mma.sync kernel (steps 1-3 of the series):
// A row-major, B column-major, accumulation `mode` (in_mma or external), the tensor core's truncating
// alignment, sm_80 or newer; (m, n, k) multiples = the block tile.
constexpr Kernel mma_f16_f32_kernel(const char* name, const char* desc, Accumulation mode, int bm, int bn, int bk,
                                    void (*launch)(const GemmArgs&)) {
  return Kernel{
      .name = name, .family = "mma", .description = desc,
      .numerics = fp16_f32_mma_numerics(mode),
      .layout_a = Layout::row_major, .layout_b = Layout::col_major,
      .m_multiple = bm, .n_multiple = bn, .k_multiple = bk,
      .min_cc = 80, .requires_sm90a = false, .workspace_bytes = 0,
      .launch = launch,
  };
}

}  // namespace gemmlab::ptx
