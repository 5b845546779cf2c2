// The composition of `gemmlab explain`: tree + conversion + node models predict C (kernel_emulation.hpp),
// compared bit for bit with the kernel's C on several distributions at full size; the Numerics record
// the identified numerics have in gemmlab's vocabulary, and the known kernels that behave exactly
// alike (reference/explain.hpp).
#include <algorithm>
#include <cmath>
#include <sstream>
#include <stdexcept>

#include "reference/distributions.hpp"
#include "reference/explain/internal.hpp"
#include "reference/rng.hpp"
#include "reference/tc_infer.hpp"

namespace gemmlab::explain {

namespace detail {

namespace {


// The entries compared at full size: every entry when that is affordable, else whole rows (first,
// last, middle and the tile edges, then seeded ones) up to `budget` outputs.
std::vector<Entry> compared_entries(int M, int N, long long budget, std::uint64_t seed) {
  std::vector<Entry> out;
  if (budget <= 0 || static_cast<long long>(M) * N <= budget) {
    for (int i = 0; i < M; ++i)
      for (int j = 0; j < N; ++j) out.emplace_back(i, j);
    return out;
  }
  std::vector<int> rows;
  for (int i : {0, 1, M / 2, M - 2, M - 1, 63, 64, 127, 128, 255, 256})
    if (i >= 0 && i < M && std::find(rows.begin(), rows.end(), i) == rows.end()) rows.push_back(i);
  SplitMix rng{seed ^ 0xc0ull};
  const long long want_rows = std::max<long long>(1, budget / N);
  while (static_cast<long long>(rows.size()) < std::min<long long>(want_rows, M)) {
    int i = static_cast<int>(rng.next() % M);
    if (std::find(rows.begin(), rows.end(), i) == rows.end()) rows.push_back(i);
  }
  for (int i : rows)
    for (int j = 0; j < N; ++j) out.emplace_back(i, j);
  return out;
}

}  // namespace

std::string compose(Oracle& o, const Options& opt, Report& r, long long& total_mismatches) {
  const emulation::NodeModel model = node_model(r.nodes.kinds);
  const emulation::SplitScheme* split = r.nodes.split ? &*r.nodes.split : nullptr;
  if (std::string gap = emulation::tree_gap(r.tree.tree, model, info(o.input()).name, split); !gap.empty())
    return gap;
  // A NaN result is written as the nodes' model encodes it (binary nodes pass NaN on as the tensor
  // cores and CUDA cores of Hopper write it: all ones).
  const std::uint64_t nan_bits =
      r.nodes.kinds.empty() || r.nodes.kinds.back().params.nan_encoding == tc::NanEncoding::all_ones
          ? all_ones_nan(o.output())
          : to_bits(o.output(), std::nan(""));
  const std::vector<Entry> cmp = compared_entries(o.M(), o.N(), opt.compare_outputs, opt.seed);
  total_mismatches = 0;
  for (const std::string& dn : opt.distributions) {
    const Distribution d = parse_distribution(dn);
    Matrix A = generate(d, Operand::A, o.M(), o.K(), o.input(), opt.seed, opt.threads);
    Matrix B = generate(d, Operand::B, o.K(), o.N(), o.input(), opt.seed, opt.threads);
    const std::vector<std::uint64_t> got = o.run_full(A, B, cmp);
    for (double& v : A.v) v = convert(r.conversion.a, v);
    for (double& v : B.v) v = convert(r.conversion.b, v);
    const std::vector<double> want = emulation::emulate_tree_at(r.tree.tree, model, A, B, cmp, opt.threads, split);
    Comparison c{d.name(), static_cast<long long>(cmp.size()), 0, ""};
    for (std::size_t e = 0; e < cmp.size(); ++e) {
      const std::uint64_t w = output_bits(o.output(), want[e], nan_bits);
      if (w == got[e]) continue;
      if (c.mismatches++ == 0)
        c.first_mismatch = entry_text(cmp[e]) + ": predicted " + tc::hex_bits(w, o.output()) + " kernel " +
                           tc::hex_bits(got[e], o.output());
    }
    total_mismatches += c.mismatches;
    r.comparisons.push_back(c);
  }
  // The identified numerics in gemmlab's vocabulary, and the known kernels that have them (no built-in
  // kernel splits its operands).
  r.numerics = numerics_for(r.tree.tree, o.input(), o.output(), r.conversion.a, r.nodes.kinds, split);
  {
    std::ostringstream s;
    if (split)
      s << split->describe() << ", each pass of a node one " << r.nodes.kinds[0].instruction << "; the tree of the "
        << (split->format == emulation::SplitScheme::PieceFormat::tf32 ? "big x big" : "hi x hi") << " products: ";
    else
      s << "operands " << in_words(r.conversion.a) << "; ";
    s << r.tree.text;
    if (r.numerics) s << " = " << r.numerics->describe();
    r.numerics_text = s.str();
  }
  const std::string canon = r.tree.tree.canonical();
  const std::vector<KnownKernel> none;
  for (const KnownKernel& k : split ? none : opt.known) {
    if (k.numerics.input != o.input() || k.numerics.output != o.output()) continue;
    if (k.numerics.compute != compute_format(r.conversion.a, o.input())) continue;
    try {
      if (emulation::expected_tree(k.numerics, o.K()).canonical() != canon) continue;
    } catch (const std::invalid_argument&) {
      continue;
    }
    bool same_nodes = true;
    for (const NodeKind& nk : r.nodes.kinds) same_nodes = same_nodes && *model(nk.leaves) == k.params;
    if (same_nodes) r.behaves_like.push_back(k.name);
  }
  return "";
}

}  // namespace detail

std::optional<Numerics> numerics_for(const SummationTree& tree, Format input, Format output, Conversion conv,
                                     const std::vector<NodeKind>& kinds, const emulation::SplitScheme* split) {
  const int K = tree.leaves();
  const bool tf32_pieces = split && split->format == emulation::SplitScheme::PieceFormat::tf32;
  const Format compute = !split ? compute_format(conv, input) : tf32_pieces ? Format::tf32 : Format::bf16;
  if (split && kinds.empty()) return std::nullopt;  // pieces reach a multiplier: fused nodes
  const std::string want = tree.canonical();
  std::vector<Numerics> cands;
  if (kinds.empty()) {
    if (compute == Format::fp32 && input == Format::fp32) {
      Numerics n = cuda_core_fp32_fma();
      n.output = output;
      cands.push_back(n);
    }
  } else {
    const int g = kinds[0].leaves;
    for (const NodeKind& k : kinds)
      if (k.leaves != g) return std::nullopt;
    std::optional<tc::Instruction> ins;
    const bool have_carry = std::any_of(kinds.begin(), kinds.end(), [](const NodeKind& k) { return k.carry; });
    for (const NodeKind& k : kinds) {
      if (have_carry && !k.carry) continue;  // a first block's C = 0 probes leave C's rules open
      std::istringstream s(k.same_as);
      std::string first;
      if (s >> first) {
        if (auto i = tc::parse_instruction(first)) ins = i;
      } else {
        return std::nullopt;  // a node model no instruction of gemmlab's has
      }
    }
    if (!ins) return std::nullopt;
    const bool fp8 = compute == Format::e4m3 || compute == Format::e5m2;
    Numerics base{.input = input, .compute = compute, .accumulator = Format::fp32, .output = output,
                  .accumulation = Accumulation::in_mma, .instruction = ins, .k_step = g,
                  .accumulation_rounding = Rounding::toward_zero, .acc_unit_roundoff = fp8 ? 0x1p-13 : 0.0,
                  .subnormals_flushed = fp8 && tc::info(*ins).name[0] == 'w', .split = {}};
    const bool wgmma = std::string(tc::info(*ins).name).rfind("wgmma", 0) == 0;
    for (int split : {1, 2}) {
      for (Accumulation a : {wgmma ? Accumulation::in_wgmma : Accumulation::in_mma, Accumulation::external}) {
        Numerics n = base;
        n.accumulation = a;
        n.split_k = split;
        cands.push_back(n);
      }
      for (int P = 2 * g; P < K; P += g) {
        if (K % P) continue;
        Numerics n = base;
        n.accumulation = Accumulation::promoted;
        n.promotion_interval_k = P;
        n.split_k = split;
        cands.push_back(n);
      }
    }
  }
  for (Numerics& n : cands) {
    try {
      if (!expected_tree_matches(n, K, want)) continue;
    } catch (const std::invalid_argument&) {
      continue;
    }
    if (split) {
      n.split.pieces = split->pieces;
      for (const auto& [i, j] : split->passes) n.split.products |= OperandSplit::bit(i, j);
      // tf32: the instruction reads the last piece's fp32 container as any tf32 operand (at worst cut
      // toward zero); bf16 pieces are rounded as the scheme says and read exactly.
      n.split.rounding = tf32_pieces || split->big_rounding == emulation::LowBits::toward_zero ? Rounding::toward_zero
                                                                                                : Rounding::nearest_even;
    }
    return n;
  }
  return std::nullopt;
}

bool expected_tree_matches(const Numerics& n, int K, const std::string& canonical) {
  return emulation::expected_tree(n, K).canonical() == canonical;
}

}  // namespace gemmlab::explain
