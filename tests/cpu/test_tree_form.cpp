// A summation tree written down (reference/tree_form.hpp): the compact form parses back to the same tree
// and is the same string for the same tree; bad text is refused naming the character; the words read
// the orders gemmlab knows and the ones it found on hardware (a Triton kernel looping over its K blocks
// in decreasing order printed as ~130 nested levels before) in a line.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "reference/rng.hpp"
#include "reference/summation_tree.hpp"
#include "reference/tree_form.hpp"

using namespace gemmlab;

namespace {

bool contains(const std::string& s, const std::string& part) { return s.find(part) != std::string::npos; }

// One FMA chain over K products taken in blocks of B, the blocks in decreasing order, increasing k
// within a block: Triton's fp32 (ieee) kernel whose K loop runs backwards.
SummationTree decreasing_blocks_fma(int K, int B) {
  SummationTree t(K);
  int cur = -1;
  for (int b = K / B - 1; b >= 0; --b)
    for (int k = b * B; k < (b + 1) * B; ++k) cur = cur < 0 ? k : t.add_node({cur, k});
  return t;
}

// An in-mma chain of fused nodes of B products, the blocks in decreasing order.
SummationTree reversed_blocks(int K, int B) {
  SummationTree t(K);
  int cur = -1;
  for (int b = K / B - 1; b >= 0; --b) {
    std::vector<int> ch;
    if (cur >= 0) ch.push_back(cur);
    for (int k = b * B; k < (b + 1) * B; ++k) ch.push_back(k);
    cur = t.add_node(ch);
  }
  return t;
}

// A random tree: random nodes of 2 to 4 inputs over the remaining roots, seeded.
SummationTree random_tree(int K, std::uint64_t seed) {
  SplitMix rng{seed};
  SummationTree t(K);
  std::vector<int> roots(K);
  for (int k = 0; k < K; ++k) roots[k] = k;
  while (roots.size() > 1) {
    const std::size_t n = std::min<std::size_t>(roots.size(), 2 + rng.next() % 3);
    std::vector<int> ch;
    for (std::size_t i = 0; i < n; ++i) {
      const std::size_t at = rng.next() % roots.size();
      ch.push_back(roots[at]);
      roots.erase(roots.begin() + static_cast<long>(at));
    }
    roots.push_back(t.add_node(ch));
  }
  return t;
}

void expect_round_trip(const SummationTree& t) {
  const std::string form = compact_form(t);
  const SummationTree back = parse_compact_form(form, t.leaves());
  EXPECT_EQ(back.canonical(), t.canonical()) << form;
  EXPECT_EQ(compact_form(back), form);
}

}  // namespace

TEST(TreeForm, CompactFormsOfTheOrdersGemmlabKnows) {
  EXPECT_EQ(compact_form(sequential_tree(4096)), "[(0 1);{2}*4094+1]");
  EXPECT_EQ(compact_form(blocked_tree(4096, 16, true)), "[(0:15);{16:31}*255+16]");
  EXPECT_EQ(compact_form(blocked_tree(4096, 16, false)), "[(0:15);{(16:31)}*255+16]");
  EXPECT_EQ(compact_form(pairwise_tree(4096)), "<0:4095>");
  EXPECT_EQ(compact_form(promoted_tree(4096, 16, 512)), "[[(0:15);{16:31}*31+16];{[(512:527);{528:543}*31+16]}*7+512]");
  EXPECT_EQ(compact_form(split_blocked_tree(128, 8, 2, true)), "[[(0:7);{16:23}*7+16];[(8:15);{24:31}*7+16]]");
  EXPECT_EQ(compact_form(decreasing_blocks_fma(4096, 32)), "[(4064 4065);{4066}*30+1;{{4032}*32+1}*127-32]");
  EXPECT_EQ(compact_form(reversed_blocks(64, 16)), "[(48:63);{32:47}*3-16]");
  EXPECT_EQ(compact_form(SummationTree(1)), "0");
  EXPECT_EQ(compact_form(sequential_tree(2)), "(0 1)");
  // 4096 products in a few dozen characters: the form of the decreasing-block tree above, whose words
  // were ~130 nested levels.
  EXPECT_LT(compact_form(decreasing_blocks_fma(4096, 32)).size(), 60u);
}

TEST(TreeForm, ParsesBackToTheSameTreeAndTheSameString) {
  for (const SummationTree& t :
       {sequential_tree(64), pairwise_tree(64), pairwise_tree(37), blocked_tree(256, 16, true), blocked_tree(256, 8, false),
        split_blocked_tree(256, 16, 4, true), split_blocked_tree(96, 16, 3, false), promoted_tree(1024, 32, 128),
        decreasing_blocks_fma(512, 32), reversed_blocks(256, 16), SummationTree(1), sequential_tree(2), sequential_tree(3)})
    expect_round_trip(t);
  for (std::uint64_t seed = 1; seed <= 40; ++seed) {
    SCOPED_TRACE(seed);
    expect_round_trip(random_tree(static_cast<int>(2 + seed * 7 % 200), seed));
  }
}

TEST(TreeForm, EqualTreesGiveEqualStrings) {
  // The same tree built with its nodes in another order (ids differ, the tree does not).
  SummationTree a(4), b(4);
  a.add_node({a.add_node({0, 1}), a.add_node({2, 3})});
  const int n23 = b.add_node({3, 2});
  b.add_node({n23, b.add_node({1, 0})});
  EXPECT_EQ(compact_form(a), compact_form(b));
  EXPECT_EQ(compact_form(a), "<0:3>");
  EXPECT_NE(compact_form(sequential_tree(4)), compact_form(a));
}

TEST(TreeForm, RefusesTextThatIsNoTreeOfKProducts) {
  auto why = [](const std::string& text, int K) {
    try {
      parse_compact_form(text, K);
    } catch (const std::invalid_argument& e) {
      return std::string(e.what());
    }
    return std::string("accepted");
  };
  EXPECT_TRUE(contains(why("[(0 1);{2}*6+1]", 7), "product 7 is outside 0 .. K - 1 = 6")) << why("[(0 1);{2}*6+1]", 7);
  EXPECT_TRUE(contains(why("[(0 1);{1}*6+1]", 7), "product 1 is in the tree twice"));
  EXPECT_TRUE(contains(why("[(0 1);2", 3), "expected ']'"));
  EXPECT_TRUE(contains(why("(0 1)", 3), "product 2 of K = 3 is in no node"));
  EXPECT_TRUE(contains(why("(0)", 1), "at least two inputs"));
  EXPECT_TRUE(contains(why("0:3", 4), "a range a:b stands only among"));
  EXPECT_TRUE(contains(why("(3:1)", 4), "at least two products, a < b"));
  EXPECT_TRUE(contains(why("[(0 1)]", 3), "a chain has at least one step"));
  EXPECT_TRUE(contains(why("(0 1) ", 2), "expected the end of the tree"));
  EXPECT_TRUE(contains(why("[(0 1);{2}*2x1]", 4), "expected '+' or '-'"));
  EXPECT_TRUE(contains(why("", 1), "the tree ends early"));
  EXPECT_TRUE(contains(why("(0 1)", 0), "at least one product"));
  EXPECT_TRUE(contains(why("[(0 1);{2}*99999999999+1]", 4), "too large"));
  EXPECT_TRUE(contains(why("(0 x)", 2), "at character 3"));
}

TEST(TreeWords, TheOrdersInALine) {
  EXPECT_EQ(tree_in_words(sequential_tree(4096)), "an FMA chain over 4096 products in increasing k");
  EXPECT_EQ(tree_in_words(pairwise_tree(4096)), "a pairwise sum (recursive halving) of 4096 products");
  EXPECT_EQ(tree_in_words(blocked_tree(4096, 16, true)),
            "a chain of 256 fused nodes of 16 products (each also adds the running sum), the blocks in increasing k");
  EXPECT_EQ(tree_in_words(blocked_tree(4096, 16, false)),
            "256 parts of 16 products added one by one in increasing k; each part one fused sum of 16 products");
  // Triton's decreasing K loop: ~130 nested levels in the old words, one line here.
  EXPECT_EQ(tree_in_words(decreasing_blocks_fma(4096, 32)),
            "an FMA chain over 4096 products: 128 blocks of 32 in decreasing block order, increasing k within a block");
  EXPECT_EQ(tree_in_words(reversed_blocks(4096, 16)),
            "a chain of 256 fused nodes of 16 products (each also adds the running sum), the blocks in decreasing k");
  // Split parts: 8 parts of 512 (promoted every 512, or an 8-way split-K added in k order).
  EXPECT_EQ(tree_in_words(promoted_tree(4096, 16, 512)),
            "8 parts of 512 products added one by one in increasing k; each part a chain of 32 fused nodes of 16 "
            "products (each also adds the running sum), the blocks in increasing k");
  const std::string split = tree_in_words(split_blocked_tree(128, 8, 2, true));
  EXPECT_TRUE(contains(split, "2 parts of 64 products added one by one in increasing k")) << split;
  EXPECT_TRUE(contains(split, "k in [0,8) + 16j, j < 8; k in [8,16) + 16j, j < 8")) << split;
  EXPECT_TRUE(contains(tree_in_words(split_blocked_tree(4096, 16, 8, true)), "the first part k in [0,16) + 128j, j < 32"))
      << tree_in_words(split_blocked_tree(4096, 16, 8, true));
  // Reversed: an FMA chain from k = K - 1 down (its first node adds the two last products, in no order the
  // tree shows), and Triton's decreasing K loop adding each block's own FMA chain to the accumulator.
  std::vector<int> down(64);
  for (int k = 0; k < 64; ++k) down[k] = 63 - k;
  SummationTree reversed(64);
  int cur = down[0];
  for (int k = 1; k < 64; ++k) cur = reversed.add_node({cur, down[k]});
  EXPECT_EQ(tree_in_words(reversed), "an FMA chain over 64 products in decreasing k");
  SummationTree parts(4096);
  int acc = -1;
  for (int b = 127; b >= 0; --b) {
    int part = 32 * b;
    for (int k = 32 * b + 1; k < 32 * (b + 1); ++k) part = parts.add_node({part, k});
    acc = acc < 0 ? part : parts.add_node({acc, part});
  }
  EXPECT_EQ(tree_in_words(parts),
            "128 parts of 32 products added one by one in decreasing k; each part an FMA chain over 32 products in "
            "increasing k");
  expect_round_trip(parts);
  EXPECT_EQ(tree_in_words(SummationTree(1)), "one product");
  // Whatever the tree, the words stay short: they are a line or a few, never the tree itself.
  for (std::uint64_t seed = 1; seed <= 20; ++seed) EXPECT_LT(tree_in_words(random_tree(2000, seed)).size(), 600u);
}

TEST(TreeWords, PartsAddedOutOfOrderSayTheOrder) {
  // Four parts of 16 (each a fused sum), added in the order 2, 0, 3, 1: an atomic split-K under one schedule.
  SummationTree t(64);
  std::vector<int> part(4);
  for (int p = 0; p < 4; ++p) {
    std::vector<int> ch;
    for (int k = 16 * p; k < 16 * (p + 1); ++k) ch.push_back(k);
    part[p] = t.add_node(ch);
  }
  int cur = t.add_node({part[2], part[0]});
  cur = t.add_node({cur, part[3]});
  t.add_node({cur, part[1]});
  const std::string w = tree_in_words(t);
  EXPECT_TRUE(contains(w, "4 parts of 16 products added one by one in the order")) << w;
  expect_round_trip(t);
}
