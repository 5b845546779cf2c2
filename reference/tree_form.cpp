// The compact form of a summation tree and the tree in words; see tree_form.hpp.
#include "reference/tree_form.hpp"

#include <algorithm>
#include <climits>
#include <cstdlib>
#include <sstream>
#include <stdexcept>

namespace gemmlab {

namespace {

// The compact form as a syntax tree. Leaf numbers are k; a repeat's units are its first copy.
struct Unit;
struct Elem {
  enum Kind { leaf, range, group, chain, pairwise } kind = leaf;
  int lo = 0, hi = 0;       // leaf: lo; range and pairwise: the products lo .. hi
  std::vector<Elem> list;   // group: its elements; chain: list[0] is the chain's first item
  std::vector<Unit> steps;  // chain: its steps
  int base = 0;             // the smallest k under it
  int size = 0;             // the products under it
  std::size_t at = 0;       // parsed: the character it starts at
};
struct Unit {
  bool repeat = false;
  std::vector<Elem> items;  // a step: what it adds to the running sum
  std::vector<Unit> body;   // a repeat: the units of its first copy ...
  int count = 0, shift = 0;  // ... taken `count` times, every k shifted by `shift` more each time
  int base = 0, size = 0;
  std::size_t at = 0;
};

// ---- rendering (leaf numbers minus `origin`: 0 for the form, an element's base to compare shapes)

void render(const Elem& e, long origin, std::string& out);

void render_list(const std::vector<Elem>& l, long origin, std::string& out) {
  for (std::size_t i = 0; i < l.size(); ++i) {
    if (i) out += ' ';
    render(l[i], origin, out);
  }
}

void render_unit(const Unit& u, long origin, std::string& out) {
  if (!u.repeat) {
    render_list(u.items, origin, out);
    return;
  }
  out += '{';
  for (std::size_t i = 0; i < u.body.size(); ++i) {
    if (i) out += ';';
    render_unit(u.body[i], origin, out);
  }
  out += "}*" + std::to_string(u.count) + (u.shift > 0 ? "+" : "-") + std::to_string(std::labs(u.shift));
}

void render(const Elem& e, long origin, std::string& out) {
  switch (e.kind) {
    case Elem::leaf: out += std::to_string(e.lo - origin); return;
    case Elem::range: out += std::to_string(e.lo - origin) + ':' + std::to_string(e.hi - origin); return;
    case Elem::pairwise: out += '<' + std::to_string(e.lo - origin) + ':' + std::to_string(e.hi - origin) + '>'; return;
    case Elem::group:
      out += '(';
      render_list(e.list, origin, out);
      out += ')';
      return;
    case Elem::chain:
      out += '[';
      render(e.list[0], origin, out);
      for (const Unit& u : e.steps) {
        out += ';';
        render_unit(u, origin, out);
      }
      out += ']';
      return;
  }
}

// The shape of units i .. i+L-1 with their leaves relative to the first one's smallest k.
std::string tuple_shape(const std::vector<Unit>& U, std::size_t i, std::size_t L) {
  std::string s;
  for (std::size_t j = i; j < i + L; ++j) {
    if (j > i) s += ';';
    render_unit(U[j], U[i].base, s);
  }
  return s;
}

// Runs of copies of 1 to 4 units, each the one before shifted by the same d, become repeats: shortest
// unit first, the scan from the left; after any change again from units of one, until none is left.
void compress(std::vector<Unit>& U) {
  for (bool changed = true; changed;) {
    changed = false;
    for (std::size_t L = 1; L <= 4 && !changed; ++L) {
      std::vector<Unit> out;
      std::size_t i = 0;
      while (i < U.size()) {
        std::size_t count = 1;
        if (i + 2 * L <= U.size()) {
          const long d = static_cast<long>(U[i + L].base) - U[i].base;
          const std::string shape = tuple_shape(U, i, L);
          while (d != 0 && i + (count + 1) * L <= U.size() &&
                 static_cast<long>(U[i + count * L].base) - U[i + (count - 1) * L].base == d &&
                 tuple_shape(U, i + count * L, L) == shape)
            ++count;
          if (count >= 2) {
            Unit r;
            r.repeat = true;
            r.body.assign(U.begin() + static_cast<long>(i), U.begin() + static_cast<long>(i + L));
            r.count = static_cast<int>(count);
            r.shift = static_cast<int>(d);
            // Its base is its first copy's smallest k (what its rendering is relative to).
            r.base = U[i].base;
            for (std::size_t j = i; j < i + L; ++j) r.base = std::min(r.base, U[j].base);
            for (std::size_t j = i; j < i + count * L; ++j) r.size += U[j].size;
            out.push_back(std::move(r));
            i += count * L;
            changed = true;
            continue;
          }
        }
        out.push_back(std::move(U[i]));
        ++i;
      }
      U = std::move(out);
    }
  }
}

// ---- the encoder

class Encoder {
 public:
  explicit Encoder(const SummationTree& t) : t_(t), max_leaf_(t.node_count()), pairwise_(t.node_count(), 0) {
    for (int n = 0; n < t.node_count(); ++n) {
      if (t.is_leaf(n)) {
        max_leaf_[n] = n;
        pairwise_[n] = 1;
        continue;
      }
      const std::vector<int>& ch = t.children(n);
      max_leaf_[n] = 0;
      for (int c : ch) max_leaf_[n] = std::max(max_leaf_[n], max_leaf_[c]);
      // pairwise_tree's shape: two halves of consecutive products, the left one floor(n / 2) of them
      pairwise_[n] = ch.size() == 2 && pairwise_[ch[0]] && pairwise_[ch[1]] && consecutive(n) &&
                     t.size(ch[0]) == t.size(n) / 2 && max_leaf_[ch[0]] + 1 == t.min_leaf(ch[1]);
    }
  }

  Elem item(int n) {
    Elem e;
    e.base = t_.min_leaf(n);
    e.size = t_.size(n);
    if (t_.is_leaf(n)) {
      e.kind = Elem::leaf;
      e.lo = n;
      return e;
    }
    if (is_pairwise(n)) {
      e.kind = Elem::pairwise;
      e.lo = t_.min_leaf(n);
      e.hi = max_leaf_[n];
      return e;
    }
    const int r = running(n);
    if (r < 0) {
      e.kind = Elem::group;
      e.list = list_of(n, -1);
      return e;
    }
    // A chain: down through the running child to a node of products only, or a pairwise one. A chain
    // whose top step adds one part (no product) runs only through steps that do so too, so that its
    // first part stays whole (promoted and split-K trees read as parts of the same shape).
    std::vector<int> path{n};
    int x = r;
    const bool of_parts = adds_one_part(n);
    while (!is_pairwise(x) && running(x) >= 0 && (!of_parts || adds_one_part(x))) {
      path.push_back(x);
      x = running(x);
    }
    e.kind = Elem::chain;
    e.list.push_back(item(x));
    for (std::size_t i = path.size(); i-- > 0;) {
      Unit u;
      u.items = list_of(path[i], i + 1 < path.size() ? path[i + 1] : x);
      u.base = u.items[0].base;
      for (const Elem& it : u.items) u.size += it.size;
      e.steps.push_back(std::move(u));
    }
    compress(e.steps);
    return e;
  }

 private:
  bool consecutive(int n) const { return max_leaf_[n] - t_.min_leaf(n) + 1 == t_.size(n); }
  bool is_pairwise(int n) const { return pairwise_[n] && t_.size(n) >= 4; }

  // The internal child with the most products (the first, in increasing smallest k, among equals).
  int running(int n) const {
    int best = -1;
    for (int c : t_.children(n))
      if (!t_.is_leaf(c) && (best < 0 || t_.size(c) > t_.size(best))) best = c;
    return best;
  }

  // Whether n adds one internal input to its running child, and nothing else.
  bool adds_one_part(int n) const {
    const std::vector<int>& ch = t_.children(n);
    const int r = running(n);
    return r >= 0 && ch.size() == 2 && !t_.is_leaf(ch[0] == r ? ch[1] : ch[0]);
  }

  // n's children but `skip`, in increasing smallest k, runs of 3 or more consecutive products as ranges.
  std::vector<Elem> list_of(int n, int skip) {
    std::vector<Elem> out;
    int run_lo = -1, run_hi = -1;
    auto flush = [&] {
      if (run_lo < 0) return;
      if (run_hi - run_lo >= 2) {
        Elem r;
        r.kind = Elem::range;
        r.lo = r.base = run_lo;
        r.hi = run_hi;
        r.size = run_hi - run_lo + 1;
        out.push_back(r);
      } else {
        for (int k = run_lo; k <= run_hi; ++k) out.push_back(item(k));
      }
      run_lo = run_hi = -1;
    };
    for (int c : t_.children(n)) {
      if (c == skip) continue;
      if (t_.is_leaf(c)) {
        if (run_lo >= 0 && c == run_hi + 1) {
          run_hi = c;
          continue;
        }
        flush();
        run_lo = run_hi = c;
        continue;
      }
      flush();
      out.push_back(item(c));
    }
    flush();
    return out;
  }

  const SummationTree& t_;
  std::vector<int> max_leaf_;
  std::vector<char> pairwise_;
};

// ---- the parser

class Parser {
 public:
  Parser(const std::string& s, int K) : s_(s), K_(K) {}

  SummationTree parse() {
    if (K_ < 1) throw std::invalid_argument("tree form: a tree has at least one product, not K = " + std::to_string(K_));
    const Elem top = item();
    if (p_ != s_.size()) fail("expected the end of the tree");
    SummationTree t(K_);
    used_.assign(K_, 0);
    build(t, top, 0);
    for (int k = 0; k < K_; ++k)
      if (!used_[k]) {
        p_ = s_.size();
        fail("product " + std::to_string(k) + " of K = " + std::to_string(K_) + " is in no node");
      }
    return t;
  }

 private:
  [[noreturn]] void fail(const std::string& what) const {
    std::string near = s_.substr(p_ > 20 ? p_ - 20 : 0, 40);
    throw std::invalid_argument("tree form: at character " + std::to_string(p_) + " (near \"" + near + "\"): " + what);
  }
  char peek() const { return p_ < s_.size() ? s_[p_] : '\0'; }
  void expect(char c, const std::string& what) {
    if (peek() != c) fail("expected '" + std::string(1, c) + "' " + what);
    ++p_;
  }
  long number(const std::string& what) {
    const std::size_t from = p_;
    long v = 0;
    while (p_ < s_.size() && s_[p_] >= '0' && s_[p_] <= '9') {
      v = v * 10 + (s_[p_] - '0');
      if (v > INT_MAX) fail(what + " is too large");
      ++p_;
    }
    if (p_ == from) fail("expected " + what);
    return v;
  }

  Elem item() {
    Elem e;
    e.at = p_;
    const char c = peek();
    if (c >= '0' && c <= '9') {
      e.kind = Elem::leaf;
      e.lo = static_cast<int>(number("a product"));
      if (peek() == ':') fail("a range a:b stands only among the inputs of a node or a step");
      return e;
    }
    if (c == '(') {
      ++p_;
      e.kind = Elem::group;
      e.list = list();
      expect(')', "to close the node");
      return e;
    }
    if (c == '<') {
      ++p_;
      e.kind = Elem::pairwise;
      e.lo = static_cast<int>(number("the first product of a pairwise sum"));
      expect(':', "between a pairwise sum's first and last product");
      e.hi = static_cast<int>(number("the last product of a pairwise sum"));
      if (e.hi <= e.lo) fail("a pairwise sum runs over at least two products, a < b");
      expect('>', "to close the pairwise sum");
      return e;
    }
    if (c == '[') {
      ++p_;
      e.kind = Elem::chain;
      e.list.push_back(item());
      expect(';', "after a chain's first item (a chain has at least one step)");
      e.steps = steps();
      expect(']', "to close the chain");
      return e;
    }
    fail(c == '\0' ? "the tree ends early" : "expected a product, '(', '[' or '<'");
  }

  std::vector<Elem> list() {
    std::vector<Elem> out;
    for (;;) {
      const char c = peek();
      if (c >= '0' && c <= '9') {
        Elem e;
        e.at = p_;
        e.lo = static_cast<int>(number("a product"));
        e.kind = Elem::leaf;
        if (peek() == ':') {
          ++p_;
          e.kind = Elem::range;
          e.hi = static_cast<int>(number("the last product of a range"));
          if (e.hi <= e.lo) fail("a range a:b runs over at least two products, a < b");
        }
        out.push_back(e);
      } else {
        out.push_back(item());
      }
      if (peek() != ' ') return out;
      ++p_;
    }
  }

  std::vector<Unit> steps() {
    std::vector<Unit> out;
    for (;;) {
      Unit u;
      u.at = p_;
      if (peek() == '{') {
        ++p_;
        u.repeat = true;
        u.body = steps();
        expect('}', "to close the repeat");
        expect('*', "after a repeat's '}'");
        u.count = static_cast<int>(number("a repeat's count"));
        if (u.count < 1) fail("a repeat is taken at least once");
        const char sign = peek();
        if (sign != '+' && sign != '-') fail("expected '+' or '-' and the shift of a repeat");
        ++p_;
        const long d = number("a repeat's shift");
        u.shift = static_cast<int>(sign == '+' ? d : -d);
      } else {
        u.items = list();
      }
      out.push_back(std::move(u));
      if (peek() != ';') return out;
      ++p_;
    }
  }

  // ---- building

  int leaf(long k, std::size_t at) {
    if (k < 0 || k >= K_) {
      p_ = at;
      fail("product " + std::to_string(k) + " is outside 0 .. K - 1 = " + std::to_string(K_ - 1));
    }
    if (used_[k]) {
      p_ = at;
      fail("product " + std::to_string(k) + " is in the tree twice");
    }
    used_[k] = 1;
    return static_cast<int>(k);
  }

  int pairwise(SummationTree& t, long lo, long hi, std::size_t at) {  // products lo .. hi - 1
    if (hi - lo == 1) return leaf(lo, at);
    const long mid = lo + (hi - lo) / 2;
    const int a = pairwise(t, lo, mid, at), b = pairwise(t, mid, hi, at);
    return t.add_node({a, b});
  }

  void add_list(SummationTree& t, const std::vector<Elem>& l, long shift, std::vector<int>& ids) {
    for (const Elem& e : l) {
      if (e.kind == Elem::range) {
        for (long k = e.lo; k <= e.hi; ++k) ids.push_back(leaf(k + shift, e.at));
      } else {
        ids.push_back(build(t, e, shift));
      }
    }
  }

  void apply(SummationTree& t, const std::vector<Unit>& units, long shift, int& cur) {
    for (const Unit& u : units) {
      if (u.repeat) {
        for (int r = 0; r < u.count; ++r) apply(t, u.body, shift + static_cast<long>(r) * u.shift, cur);
        continue;
      }
      std::vector<int> ids{cur};
      add_list(t, u.items, shift, ids);
      cur = t.add_node(std::move(ids));
    }
  }

  int build(SummationTree& t, const Elem& e, long shift) {
    switch (e.kind) {
      case Elem::leaf: return leaf(e.lo + shift, e.at);
      case Elem::range: break;  // only in lists
      case Elem::pairwise: return pairwise(t, e.lo + shift, e.hi + shift + 1, e.at);
      case Elem::group: {
        std::vector<int> ids;
        add_list(t, e.list, shift, ids);
        if (ids.size() < 2) {
          p_ = e.at;
          fail("a node adds at least two inputs");
        }
        return t.add_node(std::move(ids));
      }
      case Elem::chain: {
        int cur = build(t, e.list[0], shift);
        apply(t, e.steps, shift, cur);
        return cur;
      }
    }
    p_ = e.at;
    fail("a range a:b stands only among the inputs of a node or a step");
  }

  const std::string& s_;
  int K_;
  std::size_t p_ = 0;
  std::vector<char> used_;
};

// ---- words

// A step of a chain with its repeats taken apart: the products it adds and its other inputs (each an
// element of the form, its products shifted by `shift`).
struct Part {
  const Elem* e;
  long shift;
  long base() const { return e->base + shift; }
};
struct FlatStep {
  std::vector<long> products;
  std::vector<Part> parts;
};

void flatten(const std::vector<Unit>& units, long shift, std::vector<FlatStep>& out) {
  for (const Unit& u : units) {
    if (u.repeat) {
      for (int r = 0; r < u.count; ++r) flatten(u.body, shift + static_cast<long>(r) * u.shift, out);
      continue;
    }
    FlatStep s;
    for (const Elem& e : u.items) {
      if (e.kind == Elem::leaf) s.products.push_back(e.lo + shift);
      else if (e.kind == Elem::range)
        for (long k = e.lo; k <= e.hi; ++k) s.products.push_back(k + shift);
      else s.parts.push_back({&e, shift});
    }
    out.push_back(std::move(s));
  }
}

std::string shape_of(const Elem& e) {
  std::string s;
  render(e, e.base, s);
  return s;
}

// The products of a group (leaves and ranges only), shifted.
std::vector<long> group_products(const Elem& e, long shift) {
  std::vector<long> out;
  for (const Elem& x : e.list) {
    if (x.kind == Elem::leaf) out.push_back(x.lo + shift);
    else if (x.kind == Elem::range)
      for (long k = x.lo; k <= x.hi; ++k) out.push_back(k + shift);
  }
  return out;
}

bool all_products(const Elem& e) {
  return e.kind == Elem::group &&
         std::all_of(e.list.begin(), e.list.end(), [](const Elem& x) { return x.kind == Elem::leaf || x.kind == Elem::range; });
}

std::string plural(long n, const std::string& one, const std::string& many) {
  return std::to_string(n) + " " + (n == 1 ? one : many);
}

// " in increasing k", " in decreasing k", or how the units (each `unit` products, their smallest k in
// the order of addition `bases`) are ordered otherwise. For single products (unit 1), runs of
// consecutive k are read as blocks.
std::string order_words(const std::vector<long>& bases, long unit) {
  bool inc = true, dec = true;
  for (std::size_t i = 0; i + 1 < bases.size(); ++i) {
    inc = inc && bases[i + 1] > bases[i];
    dec = dec && bases[i + 1] < bases[i];
  }
  if (inc) return " in increasing k";
  if (dec) return " in decreasing k";
  // Runs of +1 (or -1) steps.
  std::vector<std::pair<long, long>> runs;  // (first, length)
  long step = bases.size() > 1 ? bases[1] - bases[0] : 1;
  if (unit == 1 && (step == 1 || step == -1)) {
    for (long b : bases) {
      if (!runs.empty() && b == runs.back().first + step * runs.back().second) ++runs.back().second;
      else runs.push_back({b, 1});
    }
    const long R = runs[0].second;
    bool equal = R >= 2;
    for (const auto& r : runs) equal = equal && r.second == R;
    bool blocks_inc = true, blocks_dec = true;
    for (std::size_t i = 0; i + 1 < runs.size(); ++i) {
      blocks_inc = blocks_inc && runs[i + 1].first > runs[i].first;
      blocks_dec = blocks_dec && runs[i + 1].first < runs[i].first;
    }
    if (equal && (blocks_inc || blocks_dec))
      return ": " + std::to_string(runs.size()) + " blocks of " + std::to_string(R) + " in " +
             (blocks_dec ? "decreasing" : "increasing") + " block order, " + (step == 1 ? "increasing" : "decreasing") +
             " k within a block";
  }
  // Otherwise the order itself, as runs of units one after the other.
  runs.clear();
  for (long b : bases) {
    if (!runs.empty() && b == runs.back().first + unit * runs.back().second) ++runs.back().second;
    else runs.push_back({b, 1});
  }
  std::ostringstream s;
  s << " in the order";
  for (std::size_t i = 0; i < runs.size() && i < 4; ++i)
    s << (i ? "," : "") << " k in [" << runs[i].first << "," << runs[i].first + unit * runs[i].second << ")";
  if (runs.size() > 4) s << ", ... (" << runs.size() << " runs of consecutive k)";
  return s.str();
}

std::string words(const Elem& e, long shift);

// order_words of a chain's items, whose first two meet in one node (an add or FMA of the two, which the
// tree does not order): read in whichever order says it plainly.
std::string chain_order_words(std::vector<long> bases, long unit) {
  std::string w = order_words(bases, unit);
  if (bases.size() < 2 || w.rfind(" in the order", 0) != 0) return w;
  std::swap(bases[0], bases[1]);
  const std::string swapped = order_words(bases, unit);
  return swapped.rfind(" in the order", 0) != 0 ? swapped : w;
}

// The products under a part, in increasing k.
std::vector<int> part_leaves(const Part& p) {
  std::vector<int> leaves;
  std::vector<std::pair<const Elem*, long>> stack{{p.e, p.shift}};
  while (!stack.empty()) {
    auto [e, sh] = stack.back();
    stack.pop_back();
    switch (e->kind) {
      case Elem::leaf: leaves.push_back(static_cast<int>(e->lo + sh)); break;
      case Elem::range:
      case Elem::pairwise:
        for (long k = e->lo; k <= e->hi; ++k) leaves.push_back(static_cast<int>(k + sh));
        break;
      case Elem::group:
        for (const Elem& x : e->list) stack.push_back({&x, sh});
        break;
      case Elem::chain: {
        stack.push_back({&e->list[0], sh});
        std::vector<FlatStep> steps;
        flatten(e->steps, sh, steps);
        for (const FlatStep& s : steps) {
          for (long k : s.products) leaves.push_back(static_cast<int>(k));
          for (const Part& q : s.parts) stack.push_back({q.e, q.shift});
        }
        break;
      }
    }
  }
  std::sort(leaves.begin(), leaves.end());
  return leaves;
}

std::string chain_words(const Elem& c, long shift) {
  std::vector<FlatStep> steps;
  flatten(c.steps, shift, steps);
  const Elem& first = c.list[0];
  const long n = c.size > 0 ? c.size : 0;
  std::ostringstream s;
  const bool single_products =
      std::all_of(steps.begin(), steps.end(), [](const FlatStep& x) { return x.parts.empty() && x.products.size() == 1; });
  // An FMA chain: two products, then one more per step.
  if (all_products(first) && first.size == 2 && single_products) {
    std::vector<long> order = group_products(first, shift);
    for (const FlatStep& x : steps) order.push_back(x.products[0]);
    s << "an FMA chain over " << order.size() << " products" << chain_order_words(order, 1);
    return s.str();
  }
  // A chain of fused nodes: a node of products, then the same number of products per step.
  const std::size_t g = steps.empty() ? 0 : steps[0].products.size();
  const bool fused_steps = g >= 2 && std::all_of(steps.begin(), steps.end(), [g](const FlatStep& x) {
    return x.parts.empty() && x.products.size() == g;
  });
  if (all_products(first) && fused_steps) {
    std::vector<long> bases{first.base + shift};
    const std::vector<long> first_products = group_products(first, shift);
    bool contiguous = first_products.back() - first_products.front() + 1 == first.size;
    for (const FlatStep& x : steps) {
      const auto [lo, hi] = std::minmax_element(x.products.begin(), x.products.end());
      bases.push_back(*lo);
      contiguous = contiguous && *hi - *lo + 1 == static_cast<long>(g);
    }
    s << "a chain of " << steps.size() + 1 << " fused nodes of " << g << " products (each also adds the running sum";
    if (first.size != static_cast<int>(g)) s << "; the first node " << first.size << " products";
    s << "), the blocks" << order_words(bases, static_cast<long>(g));
    if (!contiguous) s << " (not each a run of consecutive k)";
    return s.str();
  }
  // Parts added one by one: one input per step, the first item a part too.
  const bool part_steps =
      std::all_of(steps.begin(), steps.end(), [](const FlatStep& x) { return x.products.empty() && x.parts.size() == 1; });
  if (part_steps && first.kind != Elem::leaf) {
    std::vector<Part> parts{{&first, shift}};
    for (const FlatStep& x : steps) parts.push_back(x.parts[0]);
    const std::string shape = shape_of(first);
    const bool same = std::all_of(parts.begin(), parts.end(), [&](const Part& p) { return shape_of(*p.e) == shape; });
    std::vector<long> bases;
    std::vector<std::vector<int>> leaves;
    bool contiguous = true;
    for (const Part& p : parts) {
      bases.push_back(p.base());
      leaves.push_back(part_leaves(p));
      contiguous = contiguous && leaves.back().back() - leaves.back().front() + 1 == p.e->size;
    }
    if (same) {
      s << parts.size() << " parts of " << first.size << " products added one by one" << chain_order_words(bases, first.size);
      if (!contiguous && parts.size() <= 4) {
        s << " (";
        for (std::size_t i = 0; i < parts.size(); ++i) s << (i ? "; " : "") << describe_leaves(leaves[i]);
        s << ")";
      } else if (!contiguous) {
        s << " (the first part " << describe_leaves(leaves[0]) << ")";
      }
      s << "; each part " << words(first, shift);
      return s.str();
    }
    s << parts.size() << " parts added one by one (";
    for (std::size_t i = 0; i < parts.size() && i < 4; ++i) s << (i ? ", " : "") << parts[i].e->size;
    s << (parts.size() > 4 ? ", ..." : "") << " products)" << chain_order_words(bases, 1) << "; the first " << words(first, shift);
    return s.str();
  }
  // Anything else: the chain's steps as its form groups them.
  s << "a chain of " << plural(static_cast<long>(steps.size()), "step", "steps") << " over " << n
    << " products: first " << words(first, shift) << ", then";
  std::size_t shown = 0;
  for (const Unit& u : c.steps) {
    if (shown++ == 4) {
      s << "; ... (" << c.steps.size() - 4 << " more groups of steps)";
      break;
    }
    std::vector<FlatStep> one;
    flatten({u}, shift, one);
    std::size_t products = 0, parts = 0;
    for (const FlatStep& x : one) {
      products += x.products.size();
      parts += x.parts.size();
    }
    s << (shown > 1 ? ";" : "") << " " << plural(static_cast<long>(one.size()), "step", "steps") << " adding "
      << products << " products" << (parts ? " and " + plural(static_cast<long>(parts), "part", "parts") : "");
  }
  return s.str();
}

std::string words(const Elem& e, long shift) {
  switch (e.kind) {
    case Elem::leaf: return "product " + std::to_string(e.lo + shift);
    case Elem::range: break;
    case Elem::pairwise: return "a pairwise sum (recursive halving) of " + std::to_string(e.size) + " products";
    case Elem::group:
      if (e.size == 2) return "one add of 2 products";
      return "one fused sum of " + std::to_string(e.size) + " products";
    case Elem::chain: return chain_words(e, shift);
  }
  return "?";
}

}  // namespace

std::string compact_form(const SummationTree& t) {
  Encoder enc(t);
  std::string s;
  render(enc.item(t.root()), 0, s);
  return s;
}

SummationTree parse_compact_form(const std::string& text, int K) { return Parser(text, K).parse(); }

std::string tree_in_words(const SummationTree& t) {
  if (t.leaves() == 1) return "one product";
  Encoder enc(t);
  return words(enc.item(t.root()), 0);
}

}  // namespace gemmlab
