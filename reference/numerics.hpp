// The one record of a kernel's numerics: what its multiplier sees, where its running sum lives, in
// which order and with which rounding it accumulates, and what it writes. Every consumer reads this
// record and nothing else: the error bounds (bound_model), the CPU emulation that predicts a
// kernel's output bit for bit (kernel_emulation.hpp), `gemmlab order`'s expected tree, and the CSV
// columns. No consumer recovers numerics from a kernel's name.
//
// Plain C++ (no CUDA header): the Kernel descriptor (kernels/kernel.hpp) carries one of these.
#pragma once
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "reference/error_stats.hpp"
#include "reference/formats.hpp"
#include "reference/tc_model.hpp"

namespace gemmlab {

// Where the running sum lives (one word per concept, used in code, CLI flags and the CSV):
//  fma        CUDA-core FMA chain in the accumulator's format (fp32 FFMA, fp64 DFMA):
//             acc = fma(a_k, b_k, acc) from +0, one k at a time
//  in_mma     D = A*B + D inside mma.sync / wmma: the running sum is every instruction's C
//  in_wgmma   D = A*B + D inside wgmma (the same chain through a warpgroup instruction)
//  external   T = A*B + 0 per instruction, then acc = fp32 RN(acc + T) in registers
//  promoted   in the instruction for `promotion_interval_k` elements of K, then added into fp32
//             registers with round-to-nearest (DeepSeek-V3's N_C; CUTLASS's mma_promotion_interval)
//  library    a library call (cuBLAS) whose internals are not known
//  unknown    not declared: a kernel gemmlab did not build (`gemmlab evaluate --accumulation
//             unknown`); no bound is claimed for it (status no_bound), it is judged by the statistics
//  tree       the order is the record's `tree`, a summation tree `gemmlab explain` revealed that none of
//             the words above names (its K blocks in decreasing order, ...): binary nodes are fp32
//             adds and FMAs rounded to nearest, fused nodes the record's instruction. Only a record
//             that holds its tree can say it; the bound is the tree's (reference/tree_bound.hpp)
enum class Accumulation { fma, in_mma, in_wgmma, external, promoted, library, unknown, tree };
const char* to_string(Accumulation a);
std::optional<Accumulation> parse_accumulation(std::string_view name);
const std::vector<Accumulation>& all_accumulations();

// How a declared accumulation rounds its additions, for a kernel that states only its accumulation
// (`gemmlab evaluate`, gemmlab.evaluate): fma rounds to nearest even; the tensor-core modes
// truncate in alignment (toward_zero), external and promoted too inside each k-step; library and
// unknown are judged by the weaker model (unknown: u_eff = 2u); tree (never declared: its record
// carries its bound) unknown too. The registered kernels set Numerics::accumulation_rounding
// themselves and agree with this table.
Rounding default_accumulation_rounding(Accumulation a);
// Why a kernel cannot declare accumulation `a` by its name alone ("" when it can): tree is the order
// of a record that holds its revealed tree, which only `gemmlab explain` makes. For the declarations
// of `gemmlab evaluate`, plugins and gemmlab.judge.
std::string undeclarable(Accumulation a);

// How a scaled fp8 kernel applies its fp32 dequantization scales (reference/scaled_fp8.hpp), with d
// a K block's partial sum (promotion_interval_k = the scale block, 128) or the whole fp32 sum p:
//  none            no scales, or a library's undisclosed order
//  block_fma       per K block: p = fma(d, RN(s_a s_b), p) (DeepGEMM: the scale product first, one FFMA)
//  block_mul_mul   per K block: p = RN(p + RN(RN(d s_a) s_b)) (DeepSeek-V3's Triton reference, vLLM:
//                  acc += dot(a, b) * a_s * b_s)
//  block_mul_mul_ba  per K block: p = RN(p + RN(RN(d s_b) s_a)) (B's scale first)
//  block_mul_fma_a per K block: p = fma(RN(d s_a), s_b, p)
//  block_mul_fma_b per K block: p = fma(RN(d s_b), s_a, p)
//  epilogue        once: C = RN(p RN(s_a s_b)) (scales constant along K: tensor, rowwise)
//  epilogue_mul_mul  once: C = RN(RN(p s_a) s_b)
//  epilogue_mul_mul_ba  once: C = RN(RN(p s_b) s_a)
// All roundings fp32 round-to-nearest. The _ba / _b variants exist because a library's operand
// roles may be swapped (cuBLASLt's A is gemmlab's B as PyTorch calls it): which scale comes first
// is a question the candidates answer, not an assumption.
enum class ScaleApplication {
  none, block_fma, block_mul_mul, block_mul_mul_ba, block_mul_fma_a, block_mul_fma_b,
  epilogue, epilogue_mul_mul, epilogue_mul_mul_ba
};
// Whether the scales enter per K block (block_*) or once at the end (epilogue*).
bool applies_per_block(ScaleApplication a);
const char* to_string(ScaleApplication a);

struct Numerics {
  Format input = Format::fp32;        // format of A and B in memory
  Format compute = Format::fp32;      // format the multiplier sees (fp32 inputs under TF32: tf32)
  Format accumulator = Format::fp32;  // format of the running sum
  Format output = Format::fp32;       // format written to C
  Accumulation accumulation = Accumulation::fma;
  // The tensor-core instruction whose products one k-step forms (none for fma and library).
  std::optional<tc::Instruction> instruction;
  int k_step = 1;                // products per instruction along K (1 for fma; 0: not known)
  int promotion_interval_k = 0;    // promoted: elements of K summed in the instruction per promotion
  int split_k = 1;               // partial sums that take alternate k-steps, added at the end in
                                 // fp32 round-to-nearest (the WMMA v4 kernel's two warps)
  // true where some entries' K range is split into chunks (a stream-K tail splits tiles' K across
  // blocks): each chunk is summed in the order above from +0, and the chunk sums are added in
  // increasing k by fp32 round-to-nearest adds. Which entries and where they are cut depends on the
  // GPU (co-resident blocks), so the kernel descriptor says it (Kernel::k_chunks).
  bool k_chunked = false;
  Rounding accumulation_rounding = Rounding::nearest_even;  // see BoundModel::rounding
  double acc_unit_roundoff = 0;  // 0: from `accumulator`; set where the hardware keeps fewer bits
                                 // (fp8 wgmma keeps about 13 fraction bits: 2^-13)
  bool subnormals_flushed = false;  // results below the normal range are written as 0 (fp8 wgmma)
  ScaleApplication scale_application = ScaleApplication::none;  // scaled fp8 kernels
  // Operands split into pieces of `compute` (fp32 operands as tf32 or bf16 pieces: Triton's tf32x3,
  // bf16x3, bf16x6), each formed product one pass of the order above; pieces 1: not split. Found by
  // `gemmlab explain` (its report says the pass order and the pieces' roundings in words); no built-in
  // kernel splits. gemmlab's emulation from this record alone does not predict such a kernel.
  OperandSplit split;
  // The summation tree `gemmlab explain` revealed, in its canonical compact form (tree_form.hpp); ""
  // for a record that has none (the built-in kernels: their accumulation implies their tree). Where
  // it is set, the bound is the tree's (tree_bound.hpp); accumulation tree needs it.
  std::string tree;
  // Operands in fixed point (cuBLAS's fp64 emulation, CUBLAS_COMPUTE_64F_EMULATED_FIXEDPOINT): the
  // mantissa bits kept per entry on a power-of-two scale shared by each row of A and each column of
  // B, in (bits + 1) / 8 int8 slices; judged by the bound of error_stats.hpp (fixed_point_term),
  // relative to max |a_ik| max |b_kj| per entry. 0: floating-point operands.
  int fixed_point_bits = 0;

  // Whether gemmlab's emulation can compute this kernel's output bit for bit (a known instruction
  // chained in a known order, or the fp32 FMA chain).
  bool predictable() const;
  // One line, e.g. "in_mma, mma_m16n8k16_f16_f32, k-steps of 16 in increasing k, output fp32".
  std::string describe() const;
  bool operator==(const Numerics&) const = default;
};

// Where a k_chunked kernel cuts the K range of its outputs on one GPU at one size: output tiles of
// (tile_m, tile_n) entries, tiles_n per row of tiles; bounds[r * tiles_n + c] = {0 = b_0 < b_1 <
// ... < b_n = K} for tile (r, c) (one chunk: {0, K}). Made by Kernel::k_chunks.
struct KChunkMap {
  int tile_m = 0, tile_n = 0, tiles_n = 0;
  std::vector<std::vector<int>> bounds;
  const std::vector<int>& of(int i, int j) const {
    return bounds[static_cast<std::size_t>(i / tile_m) * tiles_n + j / tile_n];
  }
};

// The CUDA-core SGEMM numerics: fp32 throughout, each accumulator starts at +0 and gets one
// round-to-nearest fmaf per k in increasing k.
constexpr Numerics cuda_core_fp32_fma() {
  return Numerics{.input = Format::fp32, .compute = Format::fp32, .accumulator = Format::fp32,
                  .output = Format::fp32, .accumulation = Accumulation::fma, .instruction = std::nullopt, .k_step = 1,
                  .accumulation_rounding = Rounding::nearest_even, .split = {}, .tree = {}};
}

// The CUDA-core DGEMM numerics: binary64 throughout, each accumulator starts at +0 and gets one
// round-to-nearest fma (DFMA) per k in increasing k.
constexpr Numerics cuda_core_fp64_fma() {
  return Numerics{.input = Format::fp64, .compute = Format::fp64, .accumulator = Format::fp64,
                  .output = Format::fp64, .accumulation = Accumulation::fma, .instruction = std::nullopt, .k_step = 1,
                  .accumulation_rounding = Rounding::nearest_even, .split = {}, .tree = {}};
}

// A library GEMM in one format throughout (cuBLAS DGEMM and its emulations, Eigen's products): its
// order of summation and rounding are not known, so bounds use the weaker truncating model.
constexpr Numerics library_numerics(Format f) {
  return Numerics{.input = f, .compute = f, .accumulator = f, .output = f, .accumulation = Accumulation::library,
                  .instruction = std::nullopt, .k_step = 0, .promotion_interval_k = 0, .split_k = 1,
                  .k_chunked = false, .accumulation_rounding = Rounding::unknown, .split = {}, .tree = {}};
}

// The mantissa bits cuBLAS's fixed-point emulation keeps when asked for `requested`
// (cublasSetFixedPointEmulationMaxMantissaBitCount): rounded up to fill its last int8 slice, so
// 8 ceildiv(requested + 1, 8) - 1 (the cuBLAS documentation, "Fixed-Point", representation and
// mappings: 16 -> 23, 72 and 79 -> 79; the measured rows of 72 and 79 bits are bit-identical).
constexpr int cublas_fixed_point_bits(int requested) { return 8 * ((requested + 1 + 7) / 8) - 1; }

// cuBLAS's fp64 emulation with fixed mantissa control keeping `bits` mantissa bits (after
// cublas_fixed_point_bits): binary64 in and out, the slices' products exact, their sum in binary64
// in the library's order.
constexpr Numerics fixed_point_fp64_numerics(int bits) {
  Numerics n = library_numerics(Format::fp64);
  n.fixed_point_bits = bits;
  return n;
}

// cuBLAS's BF16x9 fp32 emulation (CUBLAS_COMPUTE_32F_EMULATED_16BFX9): each fp32 operand is three
// bf16 pieces a_0 + a_1 + a_2 (exact, the cuBLAS documentation's "BF16x9"), all nine products of
// pieces are formed on bf16 tensor cores and summed in fp32 in the library's order. How the pieces
// are cut is not documented: judged as the weaker rounding (Rounding::unknown: |x - pieces| as for
// truncation, though the split is exact). Its precision is fp32's 24 bits; its bound counts 9 K
// terms.
constexpr Numerics bf16x9_numerics() {
  Numerics n = library_numerics(Format::fp32);
  n.compute = Format::bf16;
  n.split.pieces = 3;
  for (int i = 0; i < 3; ++i)
    for (int j = 0; j < 3; ++j) n.split.products |= OperandSplit::bit(i, j);
  n.split.rounding = Rounding::unknown;
  return n;
}

// fp16 / bf16 / e4m3 / e5m2 in, fp32 accumulate and out through wgmma (k-steps of 16, 32 for fp8)
// in increasing k, the tensor core's truncating alignment: in_wgmma when promotion_interval_k is 0,
// else promoted into fp32 registers every promotion_interval_k elements of K. fp8 wgmma keeps about
// 13 fraction bits when aligning terms and flushes subnormal results (results/probes), so its honest
// unit roundoff is 2^-13.
constexpr Numerics wgmma_f32_numerics(Format in, int promotion_interval_k) {
  const bool fp8 = in == Format::e4m3 || in == Format::e5m2;
  return Numerics{.input = in, .compute = in, .accumulator = Format::fp32, .output = Format::fp32,
                  .accumulation = promotion_interval_k == 0 ? Accumulation::in_wgmma : Accumulation::promoted,
                  .instruction = in == Format::bf16   ? tc::Instruction::wgmma_m64n8k16_bf16_f32
                                 : in == Format::e4m3 ? tc::Instruction::wgmma_m64n8k32_e4m3_f32
                                 : in == Format::e5m2 ? tc::Instruction::wgmma_m64n8k32_e5m2_f32
                                                      : tc::Instruction::wgmma_m64n8k16_f16_f32,
                  .k_step = fp8 ? 32 : 16, .promotion_interval_k = promotion_interval_k,
                  .accumulation_rounding = Rounding::toward_zero, .acc_unit_roundoff = fp8 ? 0x1p-13 : 0.0,
                  .subnormals_flushed = fp8, .split = {}, .tree = {}};
}

// The analytic error model this kernel's output is judged by at depth K. A record that holds a tree
// is bounded by that tree (its fused nodes the instruction's measured model, its binary nodes fp32, or
// binary64 for an fp64 accumulator; BoundModel::tree_path). Throws std::invalid_argument where the tree
// is not one of K products, has fused nodes without an instruction, or accumulation tree comes
// without a tree.
BoundModel bound_model(const Numerics& n, int K);

}  // namespace gemmlab
