// A deterministic error bound for any summation tree, from the roundings on each product's path to the
// root (Higham, Accuracy and Stability of Numerical Algorithms, 2nd ed., §3.1 and §4.1), with the fused
// tensor-core nodes bounded as block FMAs of their measured model (Blanchard, Higham, Lopez, Mary &
// Pranesh, "Mixed precision block fused multiply-add: error analysis and application to GPU tensor
// cores", SIAM J. Sci. Comput. 42(3), 2020; the truncation measured by Fasi, Higham, Mikaitis & Pranesh,
// PeerJ Comput. Sci. 7:e330, 2021).
//
// The derivation. Node by node, the tree computes
//   s^ = sum_k a_k b_k prod_{nodes on k's path} (1 + e_{node,k}),   |e_{node,k}| <= u_node(k),
// where u_node(k) is what that node's roundings can do to an input (below). With S_k the sum of the
// u_node(k) on k's path and S = max_k S_k (the path roundoff),
//   |s^ - s| <= sum_k |a_k b_k| |prod (1 + e) - 1| <= gamma(S) sum_k |a_k b_k|,   gamma(S) = S / (1 - S),
// because prod (1 + u_j) <= exp(sum u_j) <= 1 / (1 - sum u_j) and prod (1 - u_j) >= 1 - sum u_j (Higham's
// Lemma 3.1, with unequal u_j), for S < 1; S >= 1 gives no bound. Where every u_j = u and the worst path
// holds h roundings, gamma(S) is Higham's gamma_h(u): a chain of K FMAs gives exactly gamma_K(u).
//
// What one node can do to each input (kernel_emulation.hpp says how the nodes compute):
//  * a binary node: one add or FMA rounded to nearest in fp32 (binary64 for an fp64 accumulator), u
//    for each input; a binary node of two products p < q starts an FMA chain, fma(a_q, b_q, fma(a_p,
//    b_p, 0)): product p is rounded twice (2u), q once.
//  * a fused node with a block-fused model (tc_model.hpp): its products go in blocks of block_size, each
//    block a sum of at most b = block_size + 1 terms t_i (its products and C). Every term is aligned to
//    the block's largest exponent e and cut to F = fraction_bits() bits below it, so each loses less than
//    2^(e - F) (at most half that where the alignment rounds to nearest); the term that sets e is at least
//    2^e (its operands normal), so the block's loss eta has |eta| <= b 2^-F sum |t_i|, which spreads over
//    the terms as t_i (1 + theta_i) with |theta_i| <= alpha = b 2^-F. The exact sum of the aligned terms
//    is then normalised and rounded to p significant bits (the output's, or result_fraction_bits + 1):
//    |delta| <= beta = 2^(1 - p) toward zero, 2^-p to nearest. So a block is sum t_i (1 + theta_i)(1 +
//    delta), each term within eps = alpha + beta + alpha beta. The blocks of one instruction chain (each
//    result the next block's C), and a C entering at the end adds one rounding to nearest of the output:
//    u_node = blocks eps (+ u_out for c_entry final_add), for every input alike.
//  * a fused node with fma_chain arithmetic (the fp64 tensor core): one binary64 FMA per product, u_node
//    = products u; fused_sum: one rounding per step of block_size, u_node = steps u.
// Assumed, as gamma_K's model in error_stats.hpp assumes it: operands normal in their format. A
// product with a subnormal operand lies below the exponent it is aligned by (its significand is
// below 1): where such a product sets a block's alignment, the cut can exceed alpha by up to a factor
// 2^(p_in - 1) (p_in the input's precision: 8 for e4m3, 1024 for fp16). Data with subnormal operands
// (e4m3 from logunif_-8_8) is judged as if it had none.
// A node that splits its operands into pieces (OperandSplit, `passes` products per product) runs each
// fused node once per pass, chained through the running sum: its u_node counts `passes` times.
//
// Underflow (Higham §2.1, model (2.8); Demmel 1984): each rounding also commits an absolute error up to
// eta (half the subnormal spacing of its format to nearest, the whole spacing toward zero, the smallest
// normal where results are flushed), and an alignment cut at a zero C's floor (zero_c_offset) loses
// terms below 2^(emin_out - offset - F); the bound's absolute term counts every rounding of the tree
// once with the largest such eta (error_stats.hpp underflow_term).
//
// Plain C++ (no CUDA header).
#pragma once
#include <functional>
#include <optional>

#include "reference/formats.hpp"
#include "reference/summation_tree.hpp"
#include "reference/tc_model.hpp"

namespace gemmlab {

struct TreeRoundoff {
  double path = 0;               // S: the largest sum of unit roundoffs on one product's path
  int worst_product = 0;         // a product on such a path
  int roundings = 0;             // the roundings on that path (h, where all u are equal)
  long long total_roundings = 0; // the roundings of the whole tree
  double eta = 0;                // the largest absolute error one of them commits at underflow
  Format root = Format::fp32;    // the format of the root's value (an fp16 node writes fp16)
};

// The model of a fused node of `products` products; nullopt: gemmlab has none (tree_roundoff throws).
using FusedNodeModel = std::function<std::optional<tc::TcParams>(int products)>;

// What a fused node of `products` products with model p can do to each input (u_node above), and the
// roundings an input meets in it.
double fused_node_roundoff(const tc::TcParams& p, int products);
int fused_node_roundings(const tc::TcParams& p, int products);

// The path roundoff of t. binary: the format of binary nodes (fp32, or fp64); passes: the fused nodes'
// passes (OperandSplit::passes(), 1 when not split). Throws std::invalid_argument naming a fused node
// that has no model.
TreeRoundoff tree_roundoff(const SummationTree& t, const FusedNodeModel& fused, Format binary = Format::fp32,
                           int passes = 1);

}  // namespace gemmlab
