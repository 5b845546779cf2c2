// Summation trees and FPRev reconstruction; see summation_tree.hpp.
#include "reference/summation_tree.hpp"

#include <algorithm>
#include <map>
#include <sstream>
#include <stdexcept>
#include <unordered_map>
#include <unordered_set>

namespace gemmlab {

SummationTree::SummationTree(int leaves) : leaves_(leaves) {
  if (leaves < 1) throw std::invalid_argument("SummationTree: needs at least one leaf");
  children_.resize(leaves);
  size_.assign(leaves, 1);
  min_leaf_.resize(leaves);
  parent_.assign(leaves, -1);
  for (int k = 0; k < leaves; ++k) min_leaf_[k] = k;
}

int SummationTree::add_node(std::vector<int> children) {
  if (children.size() < 2) throw std::invalid_argument("SummationTree: an addition has at least two inputs");
  int id = node_count(), sz = 0, mn = leaves_;
  for (int c : children) {
    if (c < 0 || c >= id) throw std::invalid_argument("SummationTree: child " + std::to_string(c) + " does not exist");
    if (parent_[c] != -1) throw std::invalid_argument("SummationTree: node " + name(c) + " already has a parent");
    parent_[c] = id;
    sz += size_[c];
    mn = std::min(mn, min_leaf_[c]);
  }
  std::sort(children.begin(), children.end(), [&](int a, int b) { return min_leaf_[a] < min_leaf_[b]; });
  children_.push_back(std::move(children));
  size_.push_back(sz);
  min_leaf_.push_back(mn);
  parent_.push_back(-1);
  return id;
}

std::vector<int> SummationTree::leaves_under(int id) const {
  std::vector<int> out, stack{id};
  while (!stack.empty()) {
    int n = stack.back();
    stack.pop_back();
    if (is_leaf(n)) out.push_back(n);
    else stack.insert(stack.end(), children_[n].begin(), children_[n].end());
  }
  std::sort(out.begin(), out.end());
  return out;
}

const char* SummationTree::kind(int id) const {
  if (is_leaf(id)) return "leaf";
  return children_[id].size() == 2 ? "binary" : "fused";
}

std::string SummationTree::name(int id) const {
  return is_leaf(id) ? "k" + std::to_string(id) : "n" + std::to_string(id - leaves_);
}

std::vector<int> SummationTree::lca_sizes() const {
  const int K = leaves_;
  std::vector<int> m(static_cast<std::size_t>(K) * K, 0);
  for (int k = 0; k < K; ++k) m[static_cast<std::size_t>(k) * K + k] = 1;
  for (int id = K; id < node_count(); ++id) {
    const auto& ch = children_[id];
    std::vector<std::vector<int>> sets;
    for (int c : ch) sets.push_back(leaves_under(c));
    for (std::size_t a = 0; a < sets.size(); ++a)
      for (std::size_t b = a + 1; b < sets.size(); ++b)
        for (int p : sets[a])
          for (int q : sets[b]) {
            m[static_cast<std::size_t>(p) * K + q] = size_[id];
            m[static_cast<std::size_t>(q) * K + p] = size_[id];
          }
  }
  return m;
}

namespace {

void canonical_into(const SummationTree& t, int id, bool labels, std::string& out) {
  if (t.is_leaf(id)) {
    out += labels ? t.name(id) : "x";
    return;
  }
  out += '(';
  bool first = true;
  for (int c : t.children(id)) {
    if (!first) out += ' ';
    first = false;
    canonical_into(t, c, labels, out);
  }
  out += ')';
}

}  // namespace

std::string SummationTree::canonical() const {
  std::string s;
  canonical_into(*this, root(), true, s);
  return s;
}

std::string SummationTree::shape(int id) const {
  std::string s;
  canonical_into(*this, id, false, s);
  return s;
}

// ---------------------------------------------------------------------------------------------
// Reconstruction (FPRev). build(S) gets the leaf set S of one subtree. With r = min S, the sizes
// lca(r, j) for j in S take the distinct values s_1 < ... < s_m = |S|: the sizes of the nodes on
// the path from r up to the subtree's root. The leaves with lca(r, j) = s_t are the union G_t of
// the other children of the path node at level t; two of them lie in the same child iff their
// lca is below that node (size < s_t).
namespace {

class Rebuilder {
 public:
  Rebuilder(int K, const std::function<int(int, int)>& q, const LcaBatch* batch = nullptr)
      : K_(K), query_(q), batch_(batch), tree_(K) {}

  // Asks the batch oracle, in one call, for every pair of `pairs` not known yet (none: no-op).
  void prefetch(const std::vector<std::pair<int, int>>& pairs) {
    if (!batch_) return;
    std::vector<std::pair<int, int>> ask;
    for (auto [p, q] : pairs) {
      if (p > q) std::swap(p, q);
      const long long key = static_cast<long long>(p) * K_ + q;
      if (memo_.count(key) || !asked_.insert(key).second) continue;
      ask.emplace_back(p, q);
    }
    asked_.clear();
    if (ask.empty()) return;
    const std::vector<int> sizes = (*batch_)(ask);
    if (sizes.size() != ask.size()) throw std::logic_error("FPRev: the batch oracle answered the wrong number of pairs");
    for (std::size_t t = 0; t < ask.size(); ++t) {
      const int s = sizes[t];
      if (s < 2 || s > K_)
        throw std::runtime_error("FPRev: lca size " + std::to_string(s) + " of leaves " + std::to_string(ask[t].first) +
                                 " and " + std::to_string(ask[t].second) + " is outside [2, " + std::to_string(K_) + "]");
      memo_.emplace(static_cast<long long>(ask[t].first) * K_ + ask[t].second, s);
    }
  }

  int lca(int p, int q) {
    if (p > q) std::swap(p, q);
    long long key = static_cast<long long>(p) * K_ + q;
    auto it = memo_.find(key);
    if (it != memo_.end()) return it->second;
    int s = query_(p, q);
    if (s < 2 || s > K_)
      throw std::runtime_error("FPRev: lca size " + std::to_string(s) + " of leaves " + std::to_string(p) + " and " +
                               std::to_string(q) + " is outside [2, " + std::to_string(K_) + "]");
    memo_.emplace(key, s);
    return s;
  }

  int build(const std::vector<int>& S) {
    if (S.size() == 1) return S[0];
    const int r = S[0], n = static_cast<int>(S.size());
    std::vector<std::pair<int, int>> row;
    for (int i = 1; i < n; ++i) row.emplace_back(r, S[i]);
    prefetch(row);
    std::map<int, std::vector<int>> groups;  // size -> leaves
    for (int i = 1; i < n; ++i) {
      int s = lca(r, S[i]);
      if (s > n) throw inconsistent(r, S[i], s, "exceeds the " + std::to_string(n) + " leaves of its subtree");
      groups[s].push_back(S[i]);
    }
    // Every pair inside each group at once, while that stays small (a chain of fused blocks needs
    // them all); otherwise one batch per round of the partition below.
    std::vector<std::pair<int, int>> inside;
    for (auto& [s, G] : groups)
      if (inside.size() + G.size() * G.size() / 2 <= kPrefetchPairs)
        for (std::size_t x = 0; x < G.size(); ++x)
          for (std::size_t y = x + 1; y < G.size(); ++y) inside.emplace_back(G[x], G[y]);
    prefetch(inside);
    int cur = r, count = 1;
    for (auto& [s, G] : groups) {
      std::vector<int> children{cur};
      std::vector<int> rest = G;
      while (!rest.empty()) {
        const int x = rest[0];
        std::vector<std::pair<int, int>> round;
        for (std::size_t i = 1; i < rest.size(); ++i) round.emplace_back(x, rest[i]);
        prefetch(round);
        std::vector<int> mine{x}, others;
        for (std::size_t i = 1; i < rest.size(); ++i) {
          int sxy = lca(x, rest[i]);
          if (sxy < s) mine.push_back(rest[i]);
          else if (sxy == s) others.push_back(rest[i]);
          else throw inconsistent(x, rest[i], sxy, "but both meet leaf " + std::to_string(r) + " at size " + std::to_string(s));
        }
        children.push_back(build(mine));
        rest = std::move(others);
      }
      count += static_cast<int>(G.size());
      if (count != s)
        throw std::runtime_error("FPRev: the node joining leaf " + std::to_string(r) + " at size " + std::to_string(s) +
                                 " gathers " + std::to_string(count) + " leaves: the counts are not those of a tree");
      cur = tree_.add_node(std::move(children));
    }
    return cur;
  }

  SummationTree take() { return std::move(tree_); }

 private:
  std::runtime_error inconsistent(int p, int q, int s, const std::string& why) {
    return std::runtime_error("FPRev: lca size " + std::to_string(s) + " of leaves " + std::to_string(p) + " and " +
                              std::to_string(q) + " " + why + ": the counts are not those of a tree");
  }
  static constexpr std::size_t kPrefetchPairs = 1 << 20;
  int K_;
  const std::function<int(int, int)>& query_;
  const LcaBatch* batch_;
  SummationTree tree_;
  std::unordered_map<long long, int> memo_;
  std::unordered_set<long long> asked_;
};

}  // namespace

namespace {

// The whole tree over leaves 0 .. K-1, checked to end at its last node.
SummationTree rebuild_all(Rebuilder& rb, int K) {
  std::vector<int> all(K);
  for (int k = 0; k < K; ++k) all[k] = k;
  const int root = rb.build(all);
  SummationTree t = rb.take();
  if (root != t.root()) throw std::logic_error("FPRev: root is not the last node");
  return t;
}

}  // namespace

SummationTree reconstruct(int K, const std::function<int(int, int)>& lca_size) {
  Rebuilder rb(K, lca_size);
  return rebuild_all(rb, K);
}

SummationTree reconstruct_batched(int K, const LcaBatch& lca_sizes) {
  const std::function<int(int, int)> one = [&](int p, int q) {
    const std::vector<int> s = lca_sizes({{p, q}});
    if (s.size() != 1) throw std::logic_error("FPRev: the batch oracle answered the wrong number of pairs");
    return s[0];
  };
  Rebuilder rb(K, one, &lca_sizes);
  return rebuild_all(rb, K);
}

SummationTree reconstruct_from_matrix(int K, const std::vector<int>& sizes) {
  if (sizes.size() != static_cast<std::size_t>(K) * K)
    throw std::invalid_argument("reconstruct_from_matrix: expected a (K, K) matrix");
  return reconstruct(K, [&](int p, int q) { return sizes[static_cast<std::size_t>(p) * K + q]; });
}

// ---------------------------------------------------------------------------------------------
// Description.

std::string describe_leaves(const std::vector<int>& v) {
  if (v.empty()) return "no terms";
  std::vector<std::pair<int, int>> r;  // [lo, hi)
  for (int k : v) {
    if (!r.empty() && r.back().second == k) ++r.back().second;
    else r.push_back({k, k + 1});
  }
  auto range = [](std::pair<int, int> x) {
    return "[" + std::to_string(x.first) + "," + std::to_string(x.second) + ")";
  };
  std::ostringstream s;
  s << "k in ";
  if (r.size() == 1) {
    s << range(r[0]);
    return s.str();
  }
  const int len = r[0].second - r[0].first, stride = r[1].first - r[0].first;
  bool regular = true;
  for (std::size_t i = 0; i < r.size() && regular; ++i)
    regular = r[i].second - r[i].first == len && r[i].first == r[0].first + static_cast<int>(i) * stride;
  if (regular) {
    s << range(r[0]) << " + " << stride << "j, j < " << r.size();
    return s.str();
  }
  for (std::size_t i = 0; i < r.size() && i < 4; ++i) s << (i ? " " : "") << range(r[i]);
  if (r.size() > 4) s << " ... (" << r.size() << " ranges)";
  return s.str();
}

namespace {

class Describer {
 public:
  explicit Describer(const SummationTree& t) : t_(t) {}

  const std::string& shape(int id) {
    auto it = shapes_.find(id);
    if (it != shapes_.end()) return it->second;
    return shapes_.emplace(id, t_.shape(id)).first->second;
  }

  // What one node adds besides its first child (the child holding its smallest leaf).
  std::vector<std::string> step_shapes(int id) {
    std::vector<std::string> out;
    const auto& ch = t_.children(id);
    for (std::size_t i = 1; i < ch.size(); ++i) out.push_back(shape(ch[i]));
    return out;
  }

  // A chain: node -> first child -> ..., as long as each adds the same kind of step.
  struct Chain {
    std::vector<int> nodes;  // top first
    int bottom;              // first child of the last chain node
  };
  Chain chain(int id) {
    Chain c{{id}, -1};
    const std::vector<std::string> step = step_shapes(id);
    int x = id;
    while (true) {
      int first = t_.children(x)[0];
      if (t_.is_leaf(first) || step_shapes(first) != step) {
        c.bottom = first;
        break;
      }
      c.nodes.push_back(first);
      x = first;
    }
    return c;
  }

  // Items of a chain in order of addition: the bottom, then each step's added children.
  bool increasing(const std::vector<int>& items) {
    for (std::size_t i = 0; i + 1 < items.size(); ++i) {
      auto a = t_.leaves_under(items[i]);
      if (a.back() >= t_.min_leaf(items[i + 1])) return false;
    }
    return true;
  }

  // A perfectly balanced binary tree over consecutive leaves.
  bool is_pairwise(int id) {
    if (t_.is_leaf(id)) return true;
    const auto& ch = t_.children(id);
    if (ch.size() != 2 || shape(ch[0]) != shape(ch[1])) return false;
    const auto leaves = t_.leaves_under(id);
    if (leaves.back() - leaves.front() + 1 != static_cast<int>(leaves.size())) return false;
    return is_pairwise(ch[0]) && is_pairwise(ch[1]);
  }

  static std::string plural(int n, const std::string& what) {
    return std::to_string(n) + " " + what + (n == 1 ? "" : "s");
  }

  // Description of a subtree with all its leaves consecutive or not (the caller names them).
  std::string of(int id) {
    if (t_.is_leaf(id)) return "term " + std::to_string(id);
    const auto& ch = t_.children(id);
    bool all_leaves = std::all_of(ch.begin(), ch.end(), [&](int c) { return t_.is_leaf(c); });
    if (all_leaves) {
      if (ch.size() == 2) return "a binary add of 2 terms";
      return "a fused " + std::to_string(ch.size()) + "-term sum";
    }
    Chain c = chain(id);
    const int steps = static_cast<int>(c.nodes.size());
    const auto& top_step = t_.children(id);
    const int per_step = static_cast<int>(top_step.size()) - 1;
    // Items in order of addition.
    std::vector<int> items;
    for (int i = steps - 1; i >= 0; --i) {
      const auto& cc = t_.children(c.nodes[i]);
      for (std::size_t j = 1; j < cc.size(); ++j) items.push_back(cc[j]);
    }
    bool leaf_steps = true;
    for (int i : items) leaf_steps = leaf_steps && t_.is_leaf(i);
    if (is_pairwise(id))
      return "pairwise (recursive halving) over " + std::to_string(t_.size(id)) + " terms";
    if (steps >= 2 || (per_step >= 2 && leaf_steps)) {
      std::ostringstream s;
      std::vector<int> ordered{c.bottom};
      ordered.insert(ordered.end(), items.begin(), items.end());
      const bool incr = increasing(ordered);
      const std::string order = incr ? " in increasing k" : " (not in increasing k)";
      if (per_step == 1) {
        const std::string& item = shape(top_step[1]);
        if (shape(c.bottom) == item) {
          const int n = steps + 1;
          if (t_.is_leaf(top_step[1])) {
            s << "sequential over " << n << " terms" << order << ", one binary add each";
            return s.str();
          }
          s << "sequential over " << n << " parts" << order << " (binary adds)";
          bool contiguous = true;
          for (int item : ordered) {
            auto lv = t_.leaves_under(item);
            contiguous = contiguous && lv.back() - lv.front() + 1 == static_cast<int>(lv.size());
          }
          if (!contiguous && n <= 8) {
            s << " (in order of addition: ";
            for (std::size_t i = 0; i < ordered.size(); ++i)
              s << (i ? "; " : "") << describe_leaves(t_.leaves_under(ordered[i]));
            s << ")";
          }
          s << ", each part " << of(top_step[1]);
          return s.str();
        }
        s << "sequential: " << of(c.bottom) << ", then " << plural(steps, "binary add") << order << " of parts, each "
          << of(top_step[1]);
        return s.str();
      }
      // Several children per step: one fused node of the running sum and the step's inputs.
      if (leaf_steps) {
        const bool first_is_block = !t_.is_leaf(c.bottom) && t_.children(c.bottom).size() == static_cast<std::size_t>(per_step) &&
                                    t_.size(c.bottom) == per_step;
        s << "sequential over " << (steps + (first_is_block ? 1 : 0)) << " blocks of " << per_step << " terms" << order
          << ", each block one fused node of the running sum and its " << per_step << " terms";
        if (first_is_block) s << " (the first block a fused " << per_step << "-term sum)";
        else s << " (first: " << of(c.bottom) << ")";
        return s.str();
      }
      s << "sequential over " << plural(steps, "step") << order << ", each one fused node of the running sum and "
        << per_step << " parts, each " << of(top_step[1]) << "; first: " << of(c.bottom);
      return s.str();
    }
    // Not a chain: one node joining parts.
    std::ostringstream s;
    bool same = true;
    for (int x : ch) same = same && shape(x) == shape(ch[0]);
    const std::string joiner = ch.size() == 2 ? "one binary add" : "one fused " + std::to_string(ch.size()) + "-input add";
    if (same) {
      s << ch.size() << " parts of the same shape, added at the end by " << joiner << " (";
      for (std::size_t i = 0; i < ch.size(); ++i) s << (i ? "; " : "") << describe_leaves(t_.leaves_under(ch[i]));
      s << "); each part " << of(ch[0]);
      return s.str();
    }
    s << joiner << " of: ";
    for (std::size_t i = 0; i < ch.size(); ++i)
      s << (i ? "; " : "") << "{" << describe_leaves(t_.leaves_under(ch[i])) << ": " << of(ch[i]) << "}";
    return s.str();
  }

 private:
  const SummationTree& t_;
  std::unordered_map<int, std::string> shapes_;
};

// Adds a chain over `blocks` (each a list of leaves) to t: in_mma (carry) or external.
int chain_blocks(SummationTree& t, const std::vector<std::vector<int>>& blocks, bool carry) {
  auto block_node = [&](const std::vector<int>& b) { return b.size() == 1 ? b[0] : t.add_node(b); };
  int cur = block_node(blocks[0]);
  for (std::size_t i = 1; i < blocks.size(); ++i) {
    if (carry) {
      std::vector<int> ch{cur};
      ch.insert(ch.end(), blocks[i].begin(), blocks[i].end());
      cur = t.add_node(ch);
    } else {
      cur = t.add_node({cur, block_node(blocks[i])});
    }
  }
  return cur;
}

std::vector<std::vector<int>> consecutive_blocks(int lo, int hi, int block) {
  std::vector<std::vector<int>> out;
  for (int k0 = lo; k0 < hi; k0 += block) {
    out.emplace_back();
    for (int k = k0; k < std::min(hi, k0 + block); ++k) out.back().push_back(k);
  }
  return out;
}

int pairwise(SummationTree& t, int lo, int hi) {
  if (hi - lo == 1) return lo;
  int mid = lo + (hi - lo) / 2;
  int a = pairwise(t, lo, mid), b = pairwise(t, mid, hi);
  return t.add_node({a, b});
}

}  // namespace

std::string describe(const SummationTree& t) {
  Describer d(t);
  return d.of(t.root());
}

SummationTree sequential_tree(int K) { return blocked_tree(K, 1, true); }

SummationTree pairwise_tree(int K) {
  SummationTree t(K);
  if (K > 1) pairwise(t, 0, K);
  return t;
}

SummationTree blocked_tree(int K, int block, bool carry_in_block) {
  SummationTree t(K);
  if (K > 1) chain_blocks(t, consecutive_blocks(0, K, block), carry_in_block);
  return t;
}

SummationTree split_blocked_tree(int K, int block, int parts, bool carry_in_block) {
  SummationTree t(K);
  auto blocks = consecutive_blocks(0, K, block);
  int cur = -1;
  for (int p = 0; p < parts; ++p) {
    std::vector<std::vector<int>> mine;
    for (std::size_t b = p; b < blocks.size(); b += parts) mine.push_back(blocks[b]);
    if (mine.empty()) continue;
    int part = chain_blocks(t, mine, carry_in_block);
    cur = cur < 0 ? part : t.add_node({cur, part});
  }
  return t;
}

SummationTree promoted_tree(int K, int block, int group) {
  SummationTree t(K);
  int cur = -1;
  for (int g0 = 0; g0 < K; g0 += group) {
    int part = chain_blocks(t, consecutive_blocks(g0, std::min(K, g0 + group), block), true);
    cur = cur < 0 ? part : t.add_node({cur, part});
  }
  return t;
}

}  // namespace gemmlab
