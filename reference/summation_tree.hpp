// Summation trees, and their reconstruction from FPRev counts (Xie et al., USENIX ATC 2025).
//
// A kernel sums the K products of one output entry in some tree: leaves are the products k, an
// internal node is one addition whose result is rounded (a binary add, an FMA, or a fused
// multi-term tensor-core addition, which shows as a node with more than two children). FPRev's
// masking experiment (experiments/order.hpp) measures, for two leaves p and q, how many leaves
// were added after p and q met; K minus that count is the number of leaves under the lowest
// common ancestor of p and q, `lca_size(p, q)`. The tree follows from these sizes; reconstruct()
// asks for them recursively (FPRev's algorithm: O(K * depth) queries for chains of binary adds,
// plus |G|^2 / 2 for each fused node of |G| leaves), so it does not need all K^2 / 2 pairs.
//
// Plain C++: tested on CPU with count matrices of known trees (tests/cpu/test_order.cpp).
#pragma once
#include <functional>
#include <string>
#include <utility>
#include <vector>

namespace gemmlab {

class SummationTree {
 public:
  // Node ids: leaves are 0 .. K-1 (product k is leaf k); internal nodes K, K+1, ... in the order
  // they were added; the root is the last node added (or leaf 0 when K == 1).
  explicit SummationTree(int leaves);
  int add_node(std::vector<int> children);  // children are existing, not yet parented node ids

  int leaves() const { return leaves_; }
  int node_count() const { return static_cast<int>(children_.size()); }
  int root() const { return node_count() - 1; }
  bool is_leaf(int id) const { return id < leaves_; }
  const std::vector<int>& children(int id) const { return children_[id]; }
  int size(int id) const { return size_[id]; }          // leaves under the node
  int min_leaf(int id) const { return min_leaf_[id]; }
  std::vector<int> leaves_under(int id) const;          // ascending
  const char* kind(int id) const;                       // "leaf", "binary" or "fused" (> 2 children)
  std::string name(int id) const;                       // "k12" for leaves, "n3" for internal nodes

  // Leaves under the lowest common ancestor of every pair: (K, K) row-major, diagonal 1.
  std::vector<int> lca_sizes() const;
  // Shape with leaf labels, children ordered by smallest leaf: "((k0 k1) k2)". Equal strings mean
  // equal trees.
  std::string canonical() const;
  // The same without leaf labels: "((x x) x)".
  std::string shape(int id) const;

 private:
  int leaves_;
  std::vector<std::vector<int>> children_;
  std::vector<int> size_, min_leaf_, parent_;
};

// Rebuilds the tree from the oracle lca_size(p, q) (p < q). Throws std::runtime_error naming the
// pair when the answers cannot come from one tree (a size out of range or contradicting others).
SummationTree reconstruct(int K, const std::function<int(int p, int q)>& lca_size);
// The same with an oracle that answers many pairs at once (a GPU launch can answer one pair at each
// of many output entries that share the tree: experiments/device/explain_gpu.cpp). The answers, and
// so the tree, are those of reconstruct(); the pairs are asked in a few large batches: each leaf's
// row of sizes, every pair inside the groups that row forms (up to 2^20 pairs), one round of a
// group's partition otherwise.
using LcaBatch = std::function<std::vector<int>(const std::vector<std::pair<int, int>>& pairs)>;
SummationTree reconstruct_batched(int K, const LcaBatch& lca_sizes);
// The same from a full (K, K) row-major matrix of sizes (only p < q entries are read).
SummationTree reconstruct_from_matrix(int K, const std::vector<int>& sizes);

// Compact readable description, e.g. "sequential over 16 blocks of 16 terms in increasing k, each
// block one fused node of the running sum and its 16 terms (the first block a fused 16-term sum)".
std::string describe(const SummationTree& t);
// Leaf set as ranges: "k in [0,16)", "k in [0,16) + 32j, j < 8", "k in [0,4) [8,9) ...".
std::string describe_leaves(const std::vector<int>& sorted_leaves);

// Trees of the orders gemmlab knows, for tests and for comparing a measured tree with a kernel.
SummationTree sequential_tree(int K);                    // ((k0 + k1) + k2) + ...
SummationTree pairwise_tree(int K);                      // recursive halving (K a power of two)
// Blocks of `block` consecutive terms in increasing k. in_mma (carry_in_block): each block is one
// fused node of the running sum and its terms; otherwise each block is a fused sum of its own
// terms and the block sums are added sequentially (external accumulation).
SummationTree blocked_tree(int K, int block, bool carry_in_block);
// Blocks of `block` dealt round-robin to `parts` partial sums (each a blocked_tree chain over its
// blocks), the partials added left to right at the end (the WMMA v4 split-K).
SummationTree split_blocked_tree(int K, int block, int parts, bool carry_in_block);
// Promotion: in_mma chains over `group` consecutive terms (blocks of `block`), the group sums added
// sequentially.
SummationTree promoted_tree(int K, int block, int group);

}  // namespace gemmlab
