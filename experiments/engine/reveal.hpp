// FPRev's masking experiment (Xie et al., USENIX ATC 2025) over any way of computing one output
// entry: `gemmlab order` runs it on the GPU (experiments/device/order.hpp, one EntryRunner launch per
// query), `gemmlab invariance` on whatever Device runs its kernels (a CPU fake in the tests).
//
// For output C(i, j) and a pair of products p < q, row i of A and column j of B are chosen so that
// product p is +M, product q is -M and every other product is a unit u (all powers of two, exact in
// the kernel's input and compute formats): M is so large that any partial sum holding one of p, q
// absorbs every unit, and M - M = 0 exactly, so C(i, j) = u times the number of units added after p
// and q met. K minus that count is the number of leaves under the node where p and q meet;
// reference/summation_tree.hpp rebuilds the tree from these sizes.
//
// Plain C++ (no CUDA).
#pragma once
#include <functional>
#include <string>
#include <vector>

#include "kernels/kernel.hpp"
#include "reference/fprev.hpp"
#include "reference/summation_tree.hpp"

namespace gemmlab {

// The masks: product p = a_big * b_big = +M, product q = a_big * (-b_big) = -M, every other
// product a_unit * b_unit = u; all powers of two.
using Masks = FprevMasks;  // reference/fprev.hpp

// M as large as the input/compute formats and (a quarter of) the accumulator/output range allow
// (at most 2^40); u small enough that K units stay 2^48 below M where possible. Throws
// std::invalid_argument when counts up to K cannot be exact in the output format.
Masks choose_masks(const Kernel& k, int K);

// The tree of one output entry, as the masking experiment reveals it, and what it took.
struct RevealedTree {
  SummationTree tree{1};
  long long runs = 0;    // kernel launches
  double seconds = 0;
  std::string masks;     // the masks' description
};

// C(i, j) for row i of A = a_row and column j of B = b_col (every other input zero), both of K
// values exact in the kernel's input format. May throw std::runtime_error (a CUDA error).
using EntryOracle = std::function<double(const std::vector<double>& a_row, const std::vector<double>& b_col)>;

// The tree in which kernel k sums the K products of the entry `entry` computes. Throws
// std::invalid_argument when no masks fit the kernel's formats at this K, std::runtime_error when
// the outputs do not form a tree (a non-deterministic order, a count that is not an integer).
RevealedTree reveal_tree_with(const Kernel& k, int K, const EntryOracle& entry);

}  // namespace gemmlab
