// Predicting a whole kernel's output bit for bit on the CPU: the tensor-core model (tc_model.hpp)
// composed in the kernel's order of accumulation, or fp32 FMA in the CUDA-core kernels' order.
//
// The kernel's numerics record (reference/numerics.hpp) says its order of accumulation:
//  * fma       acc = fma(a_k, b_k, acc) from +0, one k at a time in increasing k (CUDA cores), in the
//              accumulator's format: fmaf for fp32, binary64 fma for fp64 (DFMA);
//  * in_mma, in_wgmma
//              D = mma(A, B, D): k-steps of `k_step` products in increasing k, the running sum
//              is the C of every instruction (it joins each block's alignment);
//  * external  T = mma(A, B, +0) per k-step, acc = fp32 RN(acc + T) (__fadd_rn);
//  * promoted  part = +0; in the instruction for `promotion_interval_k` elements of K into part,
//              then acc = fp32 RN(acc + part) and part = +0 again; one more acc + part at the end.
// Split-K inside a block (`split_k` > 1): k-step s goes to partial sum s % split_k (the WMMA v4
// kernel's two warps take alternate k16 halves of each k-tile); every partial runs the mode above
// on its own k-steps and the partials are added at the end left to right with fp32 RN adds.
//
// Plain C++ (no CUDA header): built and tested on CPU-only machines.
#pragma once
#include <array>
#include <functional>
#include <optional>
#include <utility>
#include <string>
#include <vector>

#include "reference/formats.hpp"
#include "reference/matrix.hpp"
#include "reference/numerics.hpp"
#include "reference/scaled_fp8.hpp"
#include "reference/summation_tree.hpp"
#include "reference/tc_model.hpp"

namespace gemmlab::emulation {

// Predicts C = A B (A (M, K), B (K, N), values exact in the instruction's input format, or fp32
// for fma) as the kernel computes it; returns (M, N) row-major. `params` is the tensor-core model
// of order.instruction (unused for fma). threads <= 0: hardware concurrency. For a k_chunked order
// `chunks` says where each entry's K is cut (Kernel::k_chunks): every chunk is emulated in the
// order from +0 and the chunk sums are added in increasing k with fp32 round-to-nearest adds.
// Throws std::invalid_argument when the order is not predictable (Numerics::predictable), K is not
// a multiple of the k-step (times split_k) or of promotion_interval_k, or a k_chunked order comes
// without its chunk map.
std::vector<double> emulate(const Numerics& order, const Matrix& A, const Matrix& B,
                            const tc::TcParams& params, int threads = 0, const KChunkMap* chunks = nullptr);

// A scaled fp8 kernel's output C = (s_a q_a)(s_b q_b) (A, B quantized operands) in order `o`, whose
// scale_application says where the scales enter (numerics.hpp). block_*: K is cut into blocks of
// o.promotion_interval_k (the scale block, 128), each block's partial sum d is o's instruction
// chained over the block from +0 (the last block zero-padded to full length, as TMA fills it) and
// the scales join per block; epilogue*: the sum over all of K in o's accumulation (in_wgmma or
// promoted; K zero-padded to a multiple of the interval), then the scales once. Scales are read per
// (entry, block) through ScaledOperand::scale_of. Throws std::invalid_argument for
// scale_application none or an order that is not predictable.
std::vector<double> emulate_scaled(const Numerics& o, const ScaledOperand& A, const ScaledOperand& B,
                                   const tc::TcParams& params, int threads = 0);

// One output entry: a (K) and b (K) the row of A and the column of B.
double emulate_dot(const Numerics& order, const double* a, const double* b, int K,
                   const tc::TcParams& params);

// The summation tree this order implies for K products (leaves 0 .. K-1), to compare with the
// tree `gemmlab order` measures on the hardware. `cuts` (k_chunked orders): the entry's chunk
// boundaries {0, ..., K}; empty: one chunk.
SummationTree expected_tree(const Numerics& order, int K, const std::vector<int>& cuts = {});

// A measured order: the tree `gemmlab order` revealed for one output entry of a kernel whose
// internals gemmlab does not know (a library), composed with the tensor-core model node by node.
// Inputs are exact in fp32 (every input format is); the running sums are fp32:
//  * a binary node of two additions: fp32 round-to-nearest add;
//  * a binary node of an addition and a product: one fp32 FMA (the product exact, one rounding);
//  * a binary node of two products p < q: the start of an FMA chain, fma(a_q, b_q, fma(a_p, b_p, 0));
//  * a fused node (more than two children) of n products and at most one addition: one
//    tensor-core instruction over the n products, its C the addition (+0 when there is none), with
//    the model tree_node_params gives for (input, n).
// The tree fixes which terms meet where, not which operand of an FMA was the product, nor how a
// tensor core deals a fused node's products to its steps: these are the rules above.
// The model of a fused node of `leaves` products of format `input` with fp32 accumulation: the
// instruction whose fused block has that many products (fp16/bf16: 16, tf32: 8, fp8: 32, the
// wgmma block; fp8 with 16: one fp16 HMMA step of fp8 mma.sync on sm_90), nullopt when there is
// none.
std::optional<tc::TcParams> tree_node_params(Format input, int leaves);
// Empty when every node of `tree` follows one of the rules above for `input`; else what does not.
std::string tree_gap(const SummationTree& tree, Format input);

// Split operands (Triton's input_precision="tf32x3", CUTLASS's 3xTF32): each fp32 operand x reaches the
// tensor core as two tf32 pieces, big = x with its low 13 bits rounded off (`big_rounding`) and small = x - big
// (an fp32 subtraction, exact for finite x), which the instruction reads as it reads any tf32
// operand's fp32 container (tf32_low_bits of the node's model: the low 13 bits dropped, so a small
// piece of 12 or 13 significant bits loses its last ones). Every fused node of the tree is then run
// once per pass, a pass being the products (piece of a) * (piece of b) over the node's leaves, and
// the passes chain through the running sum:
//  * nodes_per_pass 0: a chain of fused nodes (its first node takes no running sum from another fused
//    node; each next one takes the previous as its C) is run whole for the first pass, then whole
//    again for the next pass from that result, ...: Triton's three tl.dot calls over one k-tile;
//  * nodes_per_pass n > 0: the chain in groups of n consecutive nodes from its first, each group run
//    for every pass before the next group (1: each fused node is its passes in a row).
// The first pass starts from the chain's own C (the first node's non-fused child, else +0).
// nan_to_zero_before_last: a NaN running sum becomes +0 before the last pass (Triton masks the NaN
// that inf * 0 or inf - inf gives in the small pieces, so that an infinite operand gives infinity).
// bf16 pieces (Triton's "bf16x3", "bf16x6"): `pieces` (2 or 3) bf16 values hi, mid[, lo], each the fp32
// residual of the ones before it (r = x - hi, then r - mid, fp32 subtractions) rounded to bf16 as
// `big_rounding` says (Triton: nearest even); the instruction reads them exactly. The passes pick
// pieces by index (hi 0, mid 1, lo 2; big and small are hi and mid).
enum class LowBits { nearest_even, nearest_away, toward_zero };
// x (an fp32 value) with its low `low_bits` fraction bits rounded off as `r` says, on the bits of its
// fp32 pattern: a carry runs into the exponent as a significand rounding up does (to infinity past the
// largest finite value). NaN and infinity come back unchanged. tf32: 13, bf16: 16.
double round_low_bits(double x, int low_bits, LowBits r);

struct SplitScheme {
  enum Piece { big = 0, small = 1, hi = 0, mid = 1, lo = 2 };
  enum class PieceFormat { tf32, bf16 };
  LowBits big_rounding = LowBits::nearest_away;  // tf32: the big piece's; bf16: every piece's
  std::vector<std::pair<Piece, Piece>> passes;  // (piece of a, piece of b), in the order run
  int nodes_per_pass = 0;
  bool nan_to_zero_before_last = false;
  PieceFormat format = PieceFormat::tf32;
  int pieces = 2;  // tf32: 2; bf16: 2 or 3
  std::string describe() const;  // in words
  bool operator==(const SplitScheme&) const = default;
};
// The largest number of pieces a scheme may have.
constexpr int max_split_pieces = 3;
// The chains of fused nodes of `tree` (nodes with more than two children), each listed from its first
// node (the one whose running sum, if any, comes from no fused node) to its last.
std::vector<std::vector<int>> fused_chains(const SummationTree& tree);
// The pieces of x (fp32) as an instruction with model `p` reads them (tf32: big, small; bf16: hi, mid,
// lo, lo 0 with two pieces).
std::array<double, max_split_pieces> split_pieces(const SplitScheme& s, const tc::TcParams& p, double x);

// The same rules with another model of the fused nodes (a kernel's nodes as `gemmlab explain` inferred
// them): the model of a fused node of `leaves` products, nullopt where there is none.
using NodeModel = std::function<std::optional<tc::TcParams>(int leaves)>;
std::string tree_gap(const SummationTree& tree, const NodeModel& model, const std::string& input_name,
                     const SplitScheme* split = nullptr);
double emulate_tree_dot(const SummationTree& tree, const NodeModel& model, const double* a, const double* b);
std::vector<double> emulate_tree(const SummationTree& tree, const NodeModel& model, const Matrix& A, const Matrix& B,
                                 int threads = 0);
// Only the listed entries (i, j) of C = A B, in the order given.
// With `split`: the operands split into pieces and each fused node run once per pass (SplitScheme);
// every product must then be in a fused node (tree_gap says where one is not).
std::vector<double> emulate_tree_at(const SummationTree& tree, const NodeModel& model, const Matrix& A,
                                    const Matrix& B, const std::vector<std::pair<int, int>>& entries, int threads = 0,
                                    const SplitScheme* split = nullptr);
// One entry: a (K), b (K) in k order. Throws std::invalid_argument where tree_gap is not empty.
double emulate_tree_dot(const SummationTree& tree, Format input, const double* a, const double* b);
// emulate_tree_at's work laid out for another processor (explain's composition on the GPU,
// experiments/device/emulate_gpu.hpp): the tree's internal nodes n = leaves .. nodes - 1 in evaluation
// order, each node's children (first_child[n - leaves] .. first_child[n - leaves + 1] in `children`, the
// order emulate_tree_at reads them), its model (`model[n - leaves]` indexes `params`; -1 for a binary node)
// and, with split operands, the chain each fused node ends (`chain_of`, -1 inside a chain or elsewhere;
// chain c is chain_nodes[chain_first[c] .. chain_first[c + 1]], from its first node). `pieces`: the values
// per operand element the fused nodes read (1, or max_split_pieces, split_line's layout). Built by the same
// checks as emulate_tree_at, which throws what this throws.
struct FlatTree {
  int leaves = 0, nodes = 0, pieces = 1;
  std::vector<int> first_child, children, model;
  std::vector<tc::TcParams> params;
  std::vector<int> chain_of, chain_first, chain_nodes;
};
FlatTree flatten_tree(const SummationTree& tree, const NodeModel& model, const SplitScheme* split = nullptr);
// The pieces of K values x as the fused nodes of `flat` read them under `split`: out[max_split_pieces k + piece].
void split_line(const SplitScheme& split, const FlatTree& flat, const double* x, int K, std::vector<double>& out);

// Another way to compute emulate_tree_at's outputs (same arguments, the same bits): explain's composition
// takes one (explain::Options::emulate); nullopt where it does not take the tree, its models or the data,
// which the caller then emulates with emulate_tree_at.
using TreeEmulator = std::function<std::optional<std::vector<double>>(
    const SummationTree& tree, const NodeModel& model, const Matrix& A, const Matrix& B,
    const std::vector<std::pair<int, int>>& entries, int threads, const SplitScheme* split)>;

// Every entry of C = A B summed in `tree` (K leaves); (M, N) row-major.
std::vector<double> emulate_tree(const SummationTree& tree, Format input, const Matrix& A, const Matrix& B,
                                 int threads = 0);

}  // namespace gemmlab::emulation
