// `gemmlab order`: reveals the tree in which one kernel sums the K products of one output entry,
// by FPRev's masking (Xie et al., USENIX ATC 2025; shared/NUMERICS.md).
//
// For output C(i, j) and a pair of products p < q, the inputs are zero except row i of A and
// column j of B, chosen so that product p is +M, product q is -M and every other product is a unit
// u (all powers of two, exact in the kernel's input and compute formats): M is so large that any
// partial sum holding one of p, q absorbs every unit, and M - M = 0 exactly, so C(i, j) = u times
// the number of units added after p and q met. K minus that count is the number of leaves under
// the node where p and q meet; reference/summation_tree.hpp rebuilds the tree from these sizes,
// asking only for the pairs it needs (one kernel launch each). A node with more than two children
// is a fused multi-term addition (a tensor-core block).
#pragma once
#include <string>

#include "experiments/engine/reveal.hpp"
#include "kernels/kernel.hpp"
#include "reference/summation_tree.hpp"

namespace gemmlab {

// The tree of output (i, j) of kernel k at (M, N, K), as the masking experiment reveals it on the
// GPU (experiments/engine/reveal.hpp), one launch per query with the operands kept on the GPU. The
// caller has checked the size, the entry and the GPU (run_order shows how). Throws as
// reveal_tree_with does.
RevealedTree reveal_tree(const Kernel& k, int M, int N, int K, int i, int j);

// Runs the experiment on registered kernel `kernel_name` at (M, N, K) for entry (i, j), prints the
// tree compactly (and whether it is the order gemmlab's emulation assumes for this kernel, where
// there is one), and writes `out_csv` atomically with columns kernel, K, node, children, size,
// kind: one row per addition (children are node names: k<index> for products, n<id> for
// additions; the root is the last row). Returns 0 on success; otherwise prints what went wrong
// on stderr and returns 2 (a request that cannot be served: unknown kernel, size the kernel cannot
// take, entry out of range, no usable GPU or the kernel not supported here, as for `gemmlab run`)
// or 4 (the outputs do not form a tree, e.g. a non-deterministic order, or a count that is not an
// integer).
// declared: no GPU and nothing run; the tree the kernel's numerics record declares (the order gemmlab's
// emulation assumes, reference/kernel_emulation.hpp expected_tree), printed and written alike; exit 2
// when the record declares no order (a library kernel, numerics `unknown`).
int run_order(const std::string& kernel_name, int M, int N, int K, int i, int j, const std::string& out_csv,
              const std::string& command_line = "", bool declared = false);

}  // namespace gemmlab
