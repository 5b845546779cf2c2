// Kernel emulation: the tensor-core model composed in a kernel's order; see kernel_emulation.hpp.
#include "reference/kernel_emulation.hpp"

#include "reference/tc_gpus.hpp"

#include "reference/parallel.hpp"
#include "reference/tree_form.hpp"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <sstream>
#include <stdexcept>

namespace gemmlab::emulation {

namespace {

float fadd_rn(float x, float y) { return x + y; }  // IEEE binary32 add, round to nearest even

// Rounds an fp32 value carried as a double; the model's fp32 outputs are exact floats.
float as_float(double x) { return static_cast<float>(x); }

}  // namespace

double emulate_dot(const Numerics& o, const double* a, const double* b, int K, const tc::TcParams& p) {
  if (o.accumulation == Accumulation::fma) {
    if (o.split_k != 1) throw std::invalid_argument("emulate: split_k is only modelled for tensor-core orders");
    if (o.accumulator == Format::fp64) {  // DFMA chain: binary64 inputs, one rounding per k
      double acc = 0.0;
      for (int k = 0; k < K; ++k) acc = std::fma(a[k], b[k], acc);
      return acc;
    }
    float acc = 0.0f;
    for (int k = 0; k < K; ++k) acc = std::fmaf(static_cast<float>(a[k]), static_cast<float>(b[k]), acc);
    return acc;
  }
  const bool chain = o.accumulation == Accumulation::in_mma || o.accumulation == Accumulation::in_wgmma;
  const int ks = o.k_step, splits = o.split_k;
  const bool fp32_acc = o.output == Format::fp32;
  if (!chain && !fp32_acc)
    throw std::invalid_argument("emulate: external and promoted accumulation add into fp32 registers");
  if (splits > 1 && !fp32_acc) throw std::invalid_argument("emulate: split-K partial sums are added in fp32");
  const int steps = K / ks;
  float total = 0.0f;
  for (int w = 0; w < splits; ++w) {
    // Partial sum w over k-steps w, w + splits, ...
    double d = 0.0;     // in_mma running sum / promoted partial (the mma's C), in the output format
    float acc = 0.0f;   // external / promoted fp32 register sum
    int since = 0;
    const int per_promotion = o.accumulation == Accumulation::promoted ? o.promotion_interval_k / ks : 0;
    for (int s = w; s < steps; s += splits) {
      const int k0 = s * ks;
      switch (o.accumulation) {
        case Accumulation::in_mma:
        case Accumulation::in_wgmma:
          d = tc::dot(p, a + k0, b + k0, ks, d);
          break;
        case Accumulation::external:
          acc = fadd_rn(acc, as_float(tc::dot(p, a + k0, b + k0, ks, 0.0)));
          break;
        case Accumulation::promoted:
          d = tc::dot(p, a + k0, b + k0, ks, d);
          if (++since == per_promotion) {
            acc = fadd_rn(acc, as_float(d));
            d = 0.0;
            since = 0;
          }
          break;
        case Accumulation::fma:
        case Accumulation::library:
        case Accumulation::unknown:
        case Accumulation::tree:
          break;
      }
    }
    if (o.accumulation == Accumulation::promoted) acc = fadd_rn(acc, as_float(d));  // the kernel's final add
    if (chain) {
      if (splits == 1) return d;  // fp16 or fp32, exactly as the instruction wrote it
      acc = as_float(d);
    }
    total = w == 0 ? acc : fadd_rn(total, acc);
  }
  return total;
}

namespace {

// The checks emulate() makes on an order and one K range of it.
void check_range(const Numerics& o, int K) {
  if (o.split_k < 1)  // before any K % (k_step split_k): 0 was a division by zero (SIGFPE), -1 an empty sum
    throw std::invalid_argument("emulate: split_k is " + std::to_string(o.split_k) +
                                ": the partial sums number at least 1 (1: no split)");
  if (o.accumulation == Accumulation::fma) return;
  if (o.k_step <= 0 || K % (o.k_step * o.split_k) != 0)
    throw std::invalid_argument("emulate: K = " + std::to_string(K) + " must be a multiple of the k-step (" +
                                std::to_string(o.k_step) + ") times split_k (" + std::to_string(o.split_k) + ")");
  if (o.accumulation == Accumulation::promoted && (o.promotion_interval_k <= 0 || o.promotion_interval_k % o.k_step != 0))
    throw std::invalid_argument("emulate: promotion_interval_k must be a positive multiple of the k-step");
}

// The chunk boundaries must run 0 = b_0 < b_1 < ... < b_n = K, each chunk a whole number of k-steps.
void check_cuts(const Numerics& o, const std::vector<int>& cuts, int K) {
  if (cuts.size() < 2 || cuts.front() != 0 || cuts.back() != K)
    throw std::invalid_argument("emulate: chunk boundaries must run from 0 to K = " + std::to_string(K));
  for (std::size_t c = 0; c + 1 < cuts.size(); ++c) {
    if (cuts[c + 1] <= cuts[c]) throw std::invalid_argument("emulate: chunk boundaries must increase");
    check_range(o, cuts[c + 1] - cuts[c]);
  }
}

// One entry summed in chunks: each chunk from +0 in the order, the chunk sums added in k order.
double emulate_chunked_dot(const Numerics& o, const double* a, const double* b, const std::vector<int>& cuts,
                           const tc::TcParams& p) {
  if (cuts.size() == 2) return emulate_dot(o, a, b, cuts[1], p);
  float total = 0.0f;
  for (std::size_t c = 0; c + 1 < cuts.size(); ++c) {
    const float part = as_float(emulate_dot(o, a + cuts[c], b + cuts[c], cuts[c + 1] - cuts[c], p));
    total = c == 0 ? part : fadd_rn(total, part);
  }
  return total;
}

// B^T (N, K): each output's column of B contiguous.
std::vector<double> transposed(const Matrix& B) {
  const int K = B.rows, N = B.cols;
  std::vector<double> bt(static_cast<std::size_t>(N) * K);
  for (int k = 0; k < K; ++k)
    for (int j = 0; j < N; ++j) bt[static_cast<std::size_t>(j) * K + k] = B(k, j);
  return bt;
}

}  // namespace

std::vector<double> emulate(const Numerics& o, const Matrix& A, const Matrix& B, const tc::TcParams& params,
                            int threads, const KChunkMap* chunks) {
  const int M = A.rows, K = A.cols, N = B.cols;
  if (B.rows != K) throw std::invalid_argument("emulate: A is (M, K) and B must be (K, N)");
  if (!o.predictable())
    throw std::invalid_argument("emulate: gemmlab has no bit-exact model of this order (" + o.describe() + ")");
  if (o.k_chunked && !chunks)
    throw std::invalid_argument("emulate: this order cuts K into chunks per entry; the kernel's chunk map is needed");
  if (o.k_chunked && o.output != Format::fp32)
    throw std::invalid_argument("emulate: chunk sums are added in fp32");
  if (o.accumulation != Accumulation::fma && tc::info(*o.instruction).k != o.k_step)
    throw std::invalid_argument("emulate: k_step differs from the instruction's k");
  if (o.k_chunked) {
    if (chunks->tile_m <= 0 || chunks->tile_n <= 0 ||
        chunks->bounds.size() != static_cast<std::size_t>((M + chunks->tile_m - 1) / chunks->tile_m) * chunks->tiles_n ||
        chunks->tiles_n != (N + chunks->tile_n - 1) / chunks->tile_n)
      throw std::invalid_argument("emulate: the chunk map does not cover the (M, N) output");
    for (const std::vector<int>& cuts : chunks->bounds) check_cuts(o, cuts, K);
  } else {
    check_range(o, K);
  }
  const std::vector<double> bt = transposed(B);
  const std::vector<int> whole = {0, K};
  std::vector<double> C(static_cast<std::size_t>(M) * N);
  parallel_for(M, threads, [&](long i) {
    const double* a = &A.v[static_cast<std::size_t>(i) * K];
    for (int j = 0; j < N; ++j) {
      const double* b = &bt[static_cast<std::size_t>(j) * K];
      C[static_cast<std::size_t>(i) * N + j] =
          o.k_chunked ? emulate_chunked_dot(o, a, b, chunks->of(static_cast<int>(i), j), params)
                      : emulate_dot(o, a, b, K, params);
    }
  });
  return C;
}

namespace {

SummationTree one_chunk_tree(const Numerics& o, int K) {
  switch (o.accumulation) {
    case Accumulation::fma: return sequential_tree(K);
    case Accumulation::in_mma:
    case Accumulation::in_wgmma:
    case Accumulation::external: {
      const bool carry = o.accumulation != Accumulation::external;
      return o.split_k > 1 ? split_blocked_tree(K, o.k_step, o.split_k, carry) : blocked_tree(K, o.k_step, carry);
    }
    case Accumulation::promoted:
      if (o.split_k > 1) throw std::invalid_argument("expected_tree: promoted split-K is not modelled");
      return promoted_tree(K, o.k_step, o.promotion_interval_k);
    case Accumulation::tree:
      if (o.tree.empty()) throw std::invalid_argument("expected_tree: accumulation tree without its tree");
      return parse_compact_form(o.tree, K);
    case Accumulation::library:
    case Accumulation::unknown:
      break;
  }
  throw std::invalid_argument("expected_tree: a library's order is not known; `gemmlab order` reveals it");
}

// Copies `src` into `dst` with its leaves shifted by `offset`; returns the id of src's root in dst.
int append_shifted(SummationTree& dst, const SummationTree& src, int offset) {
  std::vector<int> id(src.node_count());
  for (int n = 0; n < src.node_count(); ++n) {
    if (src.is_leaf(n)) {
      id[n] = offset + n;
      continue;
    }
    std::vector<int> children;
    for (int c : src.children(n)) children.push_back(id[c]);
    id[n] = dst.add_node(std::move(children));
  }
  return id[src.root()];
}

}  // namespace

SummationTree expected_tree(const Numerics& o, int K, const std::vector<int>& cuts) {
  if (cuts.size() <= 2) return one_chunk_tree(o, K);
  check_cuts(o, cuts, K);
  SummationTree t(K);
  int sum = -1;
  for (std::size_t c = 0; c + 1 < cuts.size(); ++c) {
    const int part = append_shifted(t, one_chunk_tree(o, cuts[c + 1] - cuts[c]), cuts[c]);
    sum = c == 0 ? part : t.add_node({sum, part});
  }
  return t;
}

std::optional<tc::TcParams> tree_node_params(Format input, int leaves) {
  using tc::Instruction;
  if (tc::active_generation() != tc::Generation::hopper) {
    // Another generation: the first instruction it has whose fused block of `input` products (fp32
    // out, one contiguous block, C in the block) has that many leaves; fp8 values are exact in fp16,
    // so an fp8 node of 16 may be one HMMA step of fp8 mma.sync run through fp16 (as on Hopper).
    for (Format f : {input, Format::fp16}) {
      if (f != input && input != Format::e4m3 && input != Format::e5m2) continue;
      for (Instruction i : tc::instructions_of(tc::active_generation())) {
        const tc::InstructionInfo& ii = tc::info(i);
        if (ii.input != f || ii.format_b() != f || ii.output != Format::fp32) continue;
        const std::optional<tc::TcParams> p = tc::model_params(i);
        if (p && p->arithmetic == tc::Arithmetic::block_fused && p->block_size == leaves && p->step_interleave == 0 &&
            p->c_entry == tc::CEntry::first_block)
          return p;
      }
    }
    return std::nullopt;
  }
  std::optional<Instruction> ins;
  switch (input) {
    case Format::fp16: if (leaves == 16) ins = Instruction::mma_m16n8k16_f16_f32; break;
    case Format::bf16: if (leaves == 16) ins = Instruction::mma_m16n8k16_bf16_f32; break;
    case Format::tf32: if (leaves == 8) ins = Instruction::mma_m16n8k8_tf32_f32; break;
    case Format::e4m3:
    case Format::e5m2:
      if (leaves == 32)
        ins = input == Format::e4m3 ? Instruction::wgmma_m64n8k32_e4m3_f32 : Instruction::wgmma_m64n8k32_e5m2_f32;
      else if (leaves == 16)
        ins = Instruction::mma_m16n8k16_f16_f32;  // fp8 values are exact in fp16: one HMMA step
      break;
    default: break;
  }
  if (!ins) return std::nullopt;
  return tc::model_params(*ins);
}

std::string tree_gap(const SummationTree& t, const NodeModel& model, const std::string& input_name,
                     const SplitScheme* split) {
  for (int n = t.leaves(); n < t.node_count(); ++n) {
    const std::vector<int>& ch = t.children(n);
    int leaves = 0;
    for (int c : ch) leaves += t.is_leaf(c);
    const int adds = static_cast<int>(ch.size()) - leaves;
    if (ch.size() == 2 && split && leaves > 0)
      return "node " + t.name(n) + " adds a product by an FMA: split operands are modelled only in fused "
             "tensor-core nodes";
    if (ch.size() == 2) continue;
    std::ostringstream why;
    if (adds > 1) {
      why << "node " << t.name(n) << " fuses " << adds << " partial sums with " << leaves
          << " products: no instruction takes more than one C";
      return why.str();
    }
    if (!model(leaves)) {
      why << "node " << t.name(n) << " fuses " << leaves << " products of " << input_name
          << ": no modelled tensor-core instruction has a block of that size";
      return why.str();
    }
  }
  return "";
}

std::string tree_gap(const SummationTree& t, Format input) {
  return tree_gap(t, [input](int leaves) { return tree_node_params(input, leaves); }, info(input).name);
}

namespace {

// A tree checked once against tree_gap, with each fused node's model looked up once (nullopt for
// binary nodes and leaves): what every entry's evaluation needs.
// With a split scheme, also the chains of fused nodes: chain_at[n] (n the chain's last node, the one
// whose value the rest of the tree reads) indexes `chains`, each listed from its first node.
struct TreePlan {
  const SummationTree& t;
  std::vector<std::optional<tc::TcParams>> params;
  const SplitScheme* split = nullptr;
  std::vector<std::vector<int>> chains;
  std::vector<int> chain_at;
  TreePlan(const SummationTree& tree, const NodeModel& model, const SplitScheme* s = nullptr)
      : t(tree), params(tree.node_count()), split(s) {
    if (std::string gap = tree_gap(tree, model, "the compute format", split); !gap.empty())
      throw std::invalid_argument("emulate_tree: " + gap);
    for (int n = t.leaves(); n < t.node_count(); ++n) {
      if (t.children(n).size() == 2) continue;
      int leaves = 0;
      for (int c : t.children(n)) leaves += t.is_leaf(c);
      params[n] = model(leaves);
    }
    if (!split) return;
    if (t.node_count() == t.leaves()) throw std::invalid_argument("emulate_tree: split operands need a fused node");
    if (split->passes.empty()) throw std::invalid_argument("emulate_tree: a split scheme needs at least one pass");
    chains = fused_chains(t);
    if (split->pieces < 2 || split->pieces > max_split_pieces ||
        (split->format == SplitScheme::PieceFormat::tf32 && split->pieces != 2))
      throw std::invalid_argument("emulate_tree: a split scheme has 2 tf32 pieces or 2 or 3 bf16 pieces, not " +
                                  std::to_string(split->pieces));
    for (const auto& [pa, pb] : split->passes)
      if (pa >= split->pieces || pb >= split->pieces)
        throw std::invalid_argument("emulate_tree: a pass of the split scheme names a piece it does not have");
    // The pieces are split once per row and column, so every fused node must read tf32 containers alike.
    for (int n = t.leaves(); n < t.node_count(); ++n)
      if (split->format == SplitScheme::PieceFormat::tf32 && params[n] &&
          params[n]->tf32_low_bits != params[chains[0][0]]->tf32_low_bits)
        throw std::invalid_argument("emulate_tree: split operands need one tf32_low_bits rule for every fused node");
    chain_at.assign(t.node_count(), -1);
    for (std::size_t c = 0; c < chains.size(); ++c) chain_at[chains[c].back()] = static_cast<int>(c);
  }
};

NodeModel format_model(Format input) {
  return [input](int leaves) { return tree_node_params(input, leaves); };
}

// One entry; `value` (node_count floats) is scratch space reused across entries.
double tree_dot(const TreePlan& plan, const double* a, const double* b, std::vector<float>& value) {
  const SummationTree& t = plan.t;
  const int K = t.leaves();
  if (K == 1) return as_float(a[0] * b[0]);
  value.resize(t.node_count());
  double ga[64], gb[64];
  const auto fma = [&](int k, float c) { return std::fmaf(static_cast<float>(a[k]), static_cast<float>(b[k]), c); };
  for (int n = K; n < t.node_count(); ++n) {
    const std::vector<int>& ch = t.children(n);
    if (ch.size() == 2) {
      const int x = ch[0], y = ch[1];
      const bool lx = t.is_leaf(x), ly = t.is_leaf(y);
      if (!lx && !ly) value[n] = fadd_rn(value[x], value[y]);
      else if (lx && ly) value[n] = fma(std::max(x, y), fma(std::min(x, y), 0.0f));
      else value[n] = lx ? fma(x, value[y]) : fma(y, value[x]);
      continue;
    }
    // A fused node: tree_gap allowed at most one addition among its children and a modelled block
    // size (at most 32 products).
    int m = 0, c_node = -1;
    for (int c : ch) {
      if (!t.is_leaf(c)) {
        c_node = c;
        continue;
      }
      ga[m] = a[c];
      gb[m] = b[c];
      ++m;
    }
    value[n] = as_float(tc::dot(*plan.params[n], ga, gb, m, c_node >= 0 ? value[c_node] : 0.0));
  }
  return value[t.root()];
}

// The pieces of K values as the instruction with model `read` reads them: out[np k + piece].
constexpr int np = max_split_pieces;
void split_line(const SplitScheme& s, const tc::TcParams& read, const double* x, int K, std::vector<double>& out) {
  out.resize(static_cast<std::size_t>(np) * K);
  for (int k = 0; k < K; ++k) {
    const std::array<double, np> pk = split_pieces(s, read, x[k]);
    std::copy(pk.begin(), pk.end(), &out[static_cast<std::size_t>(np) * k]);
  }
}

// The model that reads every fused node's pieces (TreePlan checked that they all read tf32 alike).
const tc::TcParams& piece_reader(const TreePlan& plan) { return *plan.params[plan.chains[0][0]]; }

// One entry with split operands (SplitScheme), from the pieces of its row of A and column of B
// (split_line): binary nodes add partial sums (tree_gap allowed no product there); each chain of fused
// nodes is evaluated at its last node, pass by pass.
double split_tree_dot(const TreePlan& plan, const double* a_pieces, const double* b_pieces, std::vector<float>& value) {
  const SummationTree& t = plan.t;
  const SplitScheme& s = *plan.split;
  value.resize(t.node_count());
  double ga[64], gb[64];
  const std::size_t last_pass = s.passes.size() - 1;
  for (int n = t.leaves(); n < t.node_count(); ++n) {
    const std::vector<int>& ch = t.children(n);
    if (ch.size() == 2) {
      value[n] = fadd_rn(value[ch[0]], value[ch[1]]);
      continue;
    }
    if (plan.chain_at[n] < 0) continue;  // inside a chain: run with its last node
    const std::vector<int>& chain = plan.chains[plan.chain_at[n]];
    double d = 0.0;
    for (int c : t.children(chain.front()))
      if (!t.is_leaf(c)) d = value[c];
    const std::size_t group = s.nodes_per_pass > 0 ? static_cast<std::size_t>(s.nodes_per_pass) : chain.size();
    for (std::size_t first = 0; first < chain.size(); first += group) {
      for (std::size_t pass = 0; pass < s.passes.size(); ++pass) {
        if (s.nan_to_zero_before_last && pass == last_pass && pass > 0 && std::isnan(d)) d = 0.0;
        for (std::size_t x = first; x < std::min(chain.size(), first + group); ++x) {
          const int node = chain[x];
          const tc::TcParams& p = *plan.params[node];
          int m = 0;
          for (int c : t.children(node)) {
            if (!t.is_leaf(c)) continue;
            ga[m] = a_pieces[np * c + s.passes[pass].first];
            gb[m] = b_pieces[np * c + s.passes[pass].second];
            ++m;
          }
          d = as_float(tc::dot(p, ga, gb, m, d));
        }
      }
    }
    value[n] = static_cast<float>(d);
  }
  return value[t.root()];
}

}  // namespace

FlatTree flatten_tree(const SummationTree& t, const NodeModel& model, const SplitScheme* split) {
  const TreePlan plan(t, model, split);
  FlatTree f;
  f.leaves = t.leaves();
  f.nodes = t.node_count();
  f.pieces = split ? np : 1;
  f.first_child.push_back(0);
  for (int n = f.leaves; n < f.nodes; ++n) {
    const std::vector<int>& ch = t.children(n);
    f.children.insert(f.children.end(), ch.begin(), ch.end());
    f.first_child.push_back(static_cast<int>(f.children.size()));
    int m = -1;
    if (plan.params[n]) {
      for (std::size_t i = 0; i < f.params.size() && m < 0; ++i)
        if (f.params[i] == *plan.params[n]) m = static_cast<int>(i);
      if (m < 0) {
        m = static_cast<int>(f.params.size());
        f.params.push_back(*plan.params[n]);
      }
    }
    f.model.push_back(m);
  }
  if (!split) return f;
  f.chain_of.assign(plan.chain_at.begin() + f.leaves, plan.chain_at.end());
  f.chain_first.push_back(0);
  for (const std::vector<int>& c : plan.chains) {
    f.chain_nodes.insert(f.chain_nodes.end(), c.begin(), c.end());
    f.chain_first.push_back(static_cast<int>(f.chain_nodes.size()));
  }
  return f;
}

void split_line(const SplitScheme& s, const FlatTree& flat, const double* x, int K, std::vector<double>& out) {
  if (flat.pieces != np || flat.chain_nodes.empty())
    throw std::invalid_argument("split_line: the tree was flattened without split operands");
  split_line(s, flat.params[static_cast<std::size_t>(flat.model[flat.chain_nodes[0] - flat.leaves])], x, K, out);
}

std::vector<std::vector<int>> fused_chains(const SummationTree& t) {
  // A fused node continues the chain of its non-leaf child when that child is fused too.
  auto fused = [&](int n) { return !t.is_leaf(n) && t.children(n).size() > 2; };
  std::vector<char> continued(t.node_count(), 0);
  for (int n = t.leaves(); n < t.node_count(); ++n)
    if (fused(n))
      for (int c : t.children(n))
        if (fused(c)) continued[c] = 1;
  std::vector<std::vector<int>> chains;
  for (int n = t.leaves(); n < t.node_count(); ++n) {
    if (!fused(n) || continued[n]) continue;
    std::vector<int> chain{n};
    for (bool more = true; more;) {
      more = false;
      for (int c : t.children(chain.back()))
        if (fused(c)) {
          chain.push_back(c);
          more = true;
          break;
        }
    }
    std::reverse(chain.begin(), chain.end());
    chains.push_back(std::move(chain));
  }
  return chains;
}

double round_low_bits(double x, int low_bits, LowBits r) {
  const float f = static_cast<float>(x);
  if (std::isnan(f) || std::isinf(f)) return x;
  std::uint32_t u;
  std::memcpy(&u, &f, 4);
  const std::uint32_t half = 1u << (low_bits - 1), mask = (1u << low_bits) - 1, low = u & mask;
  std::uint32_t out = u & ~mask;
  // The sign is the top bit: adding to the magnitude's bits carries into the exponent as rounding up
  // a significand does (to infinity past the largest finite value).
  if (r != LowBits::toward_zero &&
      (low > half || (low == half && (r == LowBits::nearest_away || ((out >> low_bits) & 1u)))))
    out += 1u << low_bits;
  float y;
  std::memcpy(&y, &out, 4);
  return y;
}

std::string SplitScheme::describe() const {
  const bool tf32 = format == PieceFormat::tf32;
  static const char* const tf32_piece[] = {"big", "small"};
  static const char* const bf16_piece[] = {"hi", "mid", "lo"};
  const char* const* piece = tf32 ? tf32_piece : bf16_piece;
  const char* rounded = big_rounding == LowBits::nearest_even   ? "to nearest even"
                        : big_rounding == LowBits::nearest_away ? "to nearest, ties away from zero (cvt.rna)"
                                                                : "toward zero";
  std::ostringstream s;
  if (tf32)
    s << "fp32 operands split into two tf32 pieces (big rounded " << rounded
      << ", small = x - big as the instruction reads it); ";
  else
    s << "fp32 operands split into " << pieces << " bf16 pieces (hi = x rounded to bf16 " << rounded
      << ", mid = the fp32 residual x - hi so rounded" << (pieces == 3 ? ", lo = the residual's residual so rounded" : "")
      << "); ";
  s << (nodes_per_pass == 0   ? std::string("each chain of fused nodes")
        : nodes_per_pass == 1 ? std::string("each fused node")
                              : "each group of " + std::to_string(nodes_per_pass) + " fused nodes")
    << " run " << passes.size() << " times: ";
  for (std::size_t i = 0; i < passes.size(); ++i)
    s << (i ? ", then " : "") << "A " << piece[passes[i].first] << " x B " << piece[passes[i].second];
  s << ", chained through the running sum";
  if (nan_to_zero_before_last) s << " (a NaN running sum set to +0 before the last pass)";
  return s.str();
}

std::array<double, max_split_pieces> split_pieces(const SplitScheme& s, const tc::TcParams& p, double x) {
  std::array<double, max_split_pieces> out{};
  if (s.format == SplitScheme::PieceFormat::bf16) {
    // Each piece an explicit bf16 rounding of the fp32 residual (exact bf16 values the instruction
    // reads as they are); the residuals are fp32 subtractions (exact for finite x).
    float r = static_cast<float>(x);
    for (int i = 0; i < s.pieces; ++i) {
      const float piece = static_cast<float>(round_low_bits(r, 16, s.big_rounding));
      out[i] = piece;
      r -= piece;
    }
    return out;
  }
  const float big = static_cast<float>(round_low_bits(x, 13, s.big_rounding));
  const float small = static_cast<float>(x) - big;  // fp32 subtraction: exact for finite x and big
  // The instruction reads each piece's fp32 container as it reads every tf32 operand (tc's model).
  out[0] = tc::decode_operand(p, Format::tf32, to_bits(Format::fp32, big));
  out[1] = tc::decode_operand(p, Format::tf32, to_bits(Format::fp32, small));
  return out;
}

double emulate_tree_dot(const SummationTree& t, const NodeModel& model, const double* a, const double* b) {
  if (std::string gap = tree_gap(t, model, "the compute format"); !gap.empty())
    throw std::invalid_argument("emulate_tree: " + gap);
  const TreePlan plan(t, model);
  std::vector<float> value;
  return tree_dot(plan, a, b, value);
}

double emulate_tree_dot(const SummationTree& t, Format input, const double* a, const double* b) {
  if (std::string gap = tree_gap(t, input); !gap.empty()) throw std::invalid_argument("emulate_tree: " + gap);
  return emulate_tree_dot(t, format_model(input), a, b);
}

std::vector<double> emulate_tree_at(const SummationTree& t, const NodeModel& model, const Matrix& A, const Matrix& B,
                                    const std::vector<std::pair<int, int>>& entries, int threads,
                                    const SplitScheme* split) {
  const int K = A.cols;
  if (B.rows != K || t.leaves() != K)
    throw std::invalid_argument("emulate_tree: A (M, K), B (K, N) and a tree of K = " + std::to_string(t.leaves()) +
                                " products must agree");
  const TreePlan plan(t, model, split);
  std::vector<double> C(entries.size());
  // The entries column by column: each column of B is gathered (and, with split operands, split into
  // pieces) once for all its entries, and each row of A split once (explain compares whole rows: every
  // column serves as many entries as there are rows). The values are those of one entry at a time.
  std::vector<int> columns;
  std::vector<std::vector<std::size_t>> at_column(B.cols);
  for (std::size_t e = 0; e < entries.size(); ++e) {
    const int j = entries[e].second;
    if (j < 0 || j >= B.cols || entries[e].first < 0 || entries[e].first >= A.rows)
      throw std::invalid_argument("emulate_tree: entry (" + std::to_string(entries[e].first) + ", " + std::to_string(j) +
                                  ") is outside C");
    if (at_column[j].empty()) columns.push_back(j);
    at_column[j].push_back(e);
  }
  std::vector<std::vector<double>> row_pieces;  // split operands: each row of A's pieces, by row
  if (split) {
    std::vector<int> rows;
    for (const auto& [i, j] : entries) rows.push_back(i);
    std::sort(rows.begin(), rows.end());
    rows.erase(std::unique(rows.begin(), rows.end()), rows.end());
    row_pieces.resize(A.rows);
    parallel_for(static_cast<long>(rows.size()), threads, [&](long r) {
      split_line(*split, piece_reader(plan), &A.v[static_cast<std::size_t>(rows[r]) * K], K, row_pieces[rows[r]]);
    });
  }
  parallel_for(static_cast<long>(columns.size()), threads, [&](long c) {
    const int j = columns[c];
    std::vector<double> b(K), b_pieces;
    std::vector<float> value;
    for (int k = 0; k < K; ++k) b[k] = B.v[static_cast<std::size_t>(k) * B.cols + j];
    if (split) split_line(*split, piece_reader(plan), b.data(), K, b_pieces);
    for (std::size_t e : at_column[j]) {
      const int i = entries[e].first;
      C[e] = split ? split_tree_dot(plan, row_pieces[i].data(), b_pieces.data(), value)
                   : tree_dot(plan, &A.v[static_cast<std::size_t>(i) * K], b.data(), value);
    }
  });
  return C;
}

std::vector<double> emulate_tree(const SummationTree& t, const NodeModel& model, const Matrix& A, const Matrix& B,
                                 int threads) {
  const int M = A.rows, K = A.cols, N = B.cols;
  if (B.rows != K || t.leaves() != K)
    throw std::invalid_argument("emulate_tree: A (M, K), B (K, N) and a tree of K = " + std::to_string(t.leaves()) +
                                " products must agree");
  const TreePlan plan(t, model);
  const std::vector<double> bt = transposed(B);
  std::vector<double> C(static_cast<std::size_t>(M) * N);
  parallel_for(M, threads, [&](long i) {
    const double* a = &A.v[static_cast<std::size_t>(i) * K];
    std::vector<float> value;
    for (int j = 0; j < N; ++j)
      C[static_cast<std::size_t>(i) * N + j] = tree_dot(plan, a, &bt[static_cast<std::size_t>(j) * K], value);
  });
  return C;
}

std::vector<double> emulate_tree(const SummationTree& t, Format input, const Matrix& A, const Matrix& B, int threads) {
  if (std::string gap = tree_gap(t, input); !gap.empty()) throw std::invalid_argument("emulate_tree: " + gap);
  return emulate_tree(t, format_model(input), A, B, threads);
}

std::vector<double> emulate_scaled(const Numerics& o, const ScaledOperand& A, const ScaledOperand& B,
                                   const tc::TcParams& params, int threads) {
  const ScaleApplication app = o.scale_application;
  if (app == ScaleApplication::none) throw std::invalid_argument("emulate_scaled: the order applies no scales");
  if (!o.predictable()) throw std::invalid_argument("emulate_scaled: gemmlab has no bit-exact model of " + o.describe());
  const bool per_block = applies_per_block(app);
  const int blk = o.promotion_interval_k > 0 ? o.promotion_interval_k : 128;
  if (blk % o.k_step != 0) throw std::invalid_argument("emulate_scaled: the scale block is not a whole number of k-steps");
  const int M = A.q.rows, K = A.q.cols, N = B.q.cols;
  const int blocks = (K + blk - 1) / blk, padded = blocks * blk;
  std::vector<double> out(static_cast<std::size_t>(M) * N);
  Numerics block_order = o;  // one block: the instruction chained from +0
  block_order.accumulation = Accumulation::in_wgmma;
  block_order.promotion_interval_k = 0;
  parallel_for_range(out.size(), threads, 256, [&](std::size_t lo, std::size_t hi) {
    std::vector<double> a(padded, 0.0), b(padded, 0.0);
    int row = -1;
    for (std::size_t e = lo; e < hi; ++e) {
      const int i = static_cast<int>(e / N), j = static_cast<int>(e % N);
      if (i != row) {
        for (int k = 0; k < K; ++k) a[k] = A.q(i, k);
        row = i;
      }
      for (int k = 0; k < K; ++k) b[k] = B.q(k, j);
      float p = 0.0f;
      if (per_block) {
        for (int kb = 0; kb < blocks; ++kb) {
          const float d = as_float(emulate_dot(block_order, a.data() + kb * blk, b.data() + kb * blk, blk, params));
          const float sa = static_cast<float>(A.scale_of(i, kb * blk)), sb = static_cast<float>(B.scale_of(kb * blk, j));
          switch (app) {
            case ScaleApplication::block_fma: p = std::fmaf(d, sa * sb, p); break;
            case ScaleApplication::block_mul_mul: p = fadd_rn(p, (d * sa) * sb); break;
            case ScaleApplication::block_mul_mul_ba: p = fadd_rn(p, (d * sb) * sa); break;
            case ScaleApplication::block_mul_fma_a: p = std::fmaf(d * sa, sb, p); break;
            default: p = std::fmaf(d * sb, sa, p); break;  // block_mul_fma_b
          }
        }
      } else {
        p = as_float(emulate_dot(o, a.data(), b.data(), padded, params));
        const float sa = static_cast<float>(A.scale_of(i, 0)), sb = static_cast<float>(B.scale_of(0, j));
        p = app == ScaleApplication::epilogue           ? p * (sa * sb)
            : app == ScaleApplication::epilogue_mul_mul ? (p * sa) * sb
                                                        : (p * sb) * sa;  // epilogue_mul_mul_ba
      }
      out[e] = p;
    }
  });
  return out;
}

}  // namespace gemmlab::emulation
