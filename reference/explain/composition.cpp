// The composition of `gemmlab explain`: tree + conversion + node models predict C (kernel_emulation.hpp),
// compared bit for bit with the kernel's C on several distributions at full size; the Numerics record
// the identified numerics have in gemmlab's vocabulary, and the known kernels that behave exactly
// alike (reference/explain.hpp).
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <future>
#include <optional>
#include <sstream>
#include <stdexcept>

#include "reference/distributions.hpp"
#include "reference/explain/internal.hpp"
#include "reference/quantized.hpp"
#include "reference/parallel.hpp"
#include "reference/error_stats.hpp"
#include "reference/rng.hpp"
#include "reference/tc_infer.hpp"
#include "reference/tree_bound.hpp"
#include "reference/tree_form.hpp"
#include "reference/tc_gpus.hpp"

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

// One distribution of the composition: its inputs (converted), the kernel's bits, the prediction.
struct Composition::State {
  emulation::NodeModel model;
  std::optional<emulation::SplitScheme> split;
  std::uint64_t nan_bits = 0;
  std::vector<Entry> cmp;
  struct Dist {
    std::string name;
    Matrix A{0, 0}, B{0, 0};
    std::vector<std::uint64_t> got;
    std::vector<double> want;
    double run_seconds = 0, prediction_seconds = 0;
    bool converted = false;  // the operands converted (by a try of opt.emulate)
    bool predicted = false;  // `want` made already (choose_dequantization's trial of the chosen way)
    // A quantized problem's dequantized operand that holds values the input format does not: the kernel
    // rounds it before it multiplies (Report::Dequantization).
    bool rounds_a = false, rounds_b = false;
  };
  std::vector<Dist> dists;
  std::future<void> predicting;  // the predictions of every distribution (begin's background)
  long long predicted_on_gpu = 0;  // outputs opt.emulate predicted
  Report::Dequantization dequantization;  // how the kernel rounds dequantized operands (Report's)
  bool quantized = false;
};

Composition::Composition() = default;
Composition::~Composition() {
  if (s_ && s_->predicting.valid()) s_->predicting.wait();  // the predictions read s_'s matrices
}

std::string Composition::begin(Oracle& o, const Options& opt, const Report& r, bool background) {
  s_ = std::make_unique<State>();
  State& st = *s_;
  st.model = node_model(r.nodes.kinds);
  if (r.nodes.split) st.split = *r.nodes.split;
  const emulation::SplitScheme* split = st.split ? &*st.split : nullptr;
  if (std::string gap = emulation::tree_gap(r.tree.tree, st.model, info(o.input()).name, split); !gap.empty())
    return gap;
  // A NaN result is written as the nodes' model encodes it (binary nodes pass NaN on as the tensor
  // cores and CUDA cores of Hopper write it: all ones).
  st.nan_bits = r.nodes.kinds.empty() || r.nodes.kinds.back().params.nan_encoding == tc::NanEncoding::all_ones
                    ? all_ones_nan(o.output())
                    : to_bits(o.output(), std::nan(""));
  st.cmp = compared_entries(o.M(), o.N(), opt.compare_outputs, opt.seed);
  // The inputs made where the kernel reads them (a GPU oracle: on the GPU, only what is predicted
  // coming back), the kernel run on them: every distribution's, here, before anything is predicted.
  for (const std::string& dn : opt.distributions) {
    const Distribution d = parse_distribution(dn);
    State::Dist x;
    x.name = d.name();
    const auto t0 = Clock::now();
    x.got = o.run_generated(d, opt.seed, opt.threads, st.cmp, x.A, x.B);
    x.run_seconds = since(t0);
    if (d.quant) {
      st.quantized = true;
      x.rounds_a = !all_representable(x.A, o.input(), opt.threads);
      x.rounds_b = !all_representable(x.B, o.input(), opt.threads);
    }
    st.dists.push_back(std::move(x));
  }
  if (std::string why = choose_dequantization(o, opt, r); !why.empty()) {
    refused_at_ = "composition";
    return why;
  }
  // The predictions: the operands converted as the conversion stage found, the tree emulated at the compared
  // entries: first by opt.emulate (a GPU's, here and now), then on this host where it took none; there, in
  // the background, they leave this thread to the scheduling stage's launches.
  const auto convert_operands = [conv_a = r.conversion.a, conv_b = r.conversion.b](State::Dist& x, int threads) {
    if (conv_a == Conversion::as_is && conv_b == Conversion::as_is) return;
    parallel_for_range(x.A.v.size(), threads, std::size_t{1} << 16, [&](std::size_t lo, std::size_t hi) {
      for (std::size_t i = lo; i < hi; ++i) x.A.v[i] = convert(conv_a, x.A.v[i]);
    });
    parallel_for_range(x.B.v.size(), threads, std::size_t{1} << 16, [&](std::size_t lo, std::size_t hi) {
      for (std::size_t i = lo; i < hi; ++i) x.B.v[i] = convert(conv_b, x.B.v[i]);
    });
  };
  std::vector<State::Dist*> left;  // the distributions the host predicts
  for (State::Dist& x : st.dists) {
    if (x.predicted) continue;
    if (!opt.emulate) {
      left.push_back(&x);
      continue;
    }
    const auto t0 = Clock::now();
    convert_operands(x, opt.threads);
    if (std::optional<std::vector<double>> want = opt.emulate(r.tree.tree, st.model, x.A, x.B, st.cmp, opt.threads, split)) {
      x.want = std::move(*want);
      x.prediction_seconds = since(t0);
      st.predicted_on_gpu += static_cast<long long>(x.want.size());
    } else {
      x.prediction_seconds = since(t0);
      x.converted = true;
      left.push_back(&x);
    }
  }
  if (left.empty()) return "";
  const int threads = background ? std::max(1, resolve_threads(opt.threads) - 1) : opt.threads;
  auto predict = [&st, left, threads, convert_operands, tree = &r.tree.tree] {
    const emulation::SplitScheme* sp = st.split ? &*st.split : nullptr;
    for (State::Dist* x : left) {
      const auto t0 = Clock::now();
      if (!x->converted) convert_operands(*x, threads);
      x->want = emulation::emulate_tree_at(*tree, st.model, x->A, x->B, st.cmp, threads, sp);
      x->prediction_seconds += since(t0);
    }
  };
  if (background) st.predicting = std::async(std::launch::async, predict);
  else predict();
  return "";
}

void Composition::finish(Oracle& o, const Options& opt, Report& r, long long& total_mismatches) {
  State& st = *s_;
  if (st.predicting.valid()) st.predicting.get();  // rethrows what the predictions threw
  r.predicted_on_gpu = st.predicted_on_gpu;
  r.quantized = st.quantized;
  r.dequantization = st.dequantization;
  const emulation::SplitScheme* split = st.split ? &*st.split : nullptr;
  const emulation::NodeModel& model = st.model;
  const std::vector<Entry>& cmp = st.cmp;
  const std::uint64_t nan_bits = st.nan_bits;
  total_mismatches = 0;
  std::FILE* predictions = nullptr;
  if (!opt.predictions_file.empty()) {
    predictions = std::fopen(opt.predictions_file.c_str(), "w");
    if (!predictions) throw std::runtime_error("cannot write the predictions to " + opt.predictions_file);
  }
  struct Closer {
    std::FILE* f;
    ~Closer() {
      if (f) std::fclose(f);
    }
  } closer{predictions};
  for (State::Dist& x : st.dists) {
    const auto t0 = Clock::now();
    const std::vector<double>& want = x.want;
    const std::vector<std::uint64_t>& got = x.got;
    const Matrix &A = x.A, &B = x.B;
    Comparison c{x.name, static_cast<long long>(cmp.size()), 0, x.run_seconds, 0, "", 0};
    std::vector<double> predicted = want;  // the values predicted, a variant's where it predicts the output
    std::vector<std::size_t> missed;       // outputs the tree's prediction misses
    for (std::size_t e = 0; e < cmp.size(); ++e)
      if (output_bits(o.output(), want[e], nan_bits) != got[e]) missed.push_back(e);
    // An order that depends on scheduling: an output that a revealed variant of the order predicts
    // is predicted (by_variant), the others are mismatches.
    for (const ScheduleVariant& v : r.schedule.variants) {
      if (!v.revealed || missed.empty()) continue;
      if (!emulation::tree_gap(v.tree, model, info(o.input()).name, split).empty()) continue;  // nodes not modelled
      std::vector<Entry> at;
      for (std::size_t e : missed) at.push_back(cmp[e]);
      std::optional<std::vector<double>> on_gpu;
      if (opt.emulate) on_gpu = opt.emulate(v.tree, model, A, B, at, opt.threads, split);
      const std::vector<double> alt =
          on_gpu ? std::move(*on_gpu) : emulation::emulate_tree_at(v.tree, model, A, B, at, opt.threads, split);
      std::vector<std::size_t> still;
      for (std::size_t t = 0; t < missed.size(); ++t)
        if (output_bits(o.output(), alt[t], nan_bits) == got[missed[t]]) {
          ++c.by_variant;
          predicted[missed[t]] = alt[t];
        } else {
          still.push_back(missed[t]);
        }
      missed.swap(still);
    }
    c.mismatches = static_cast<long long>(missed.size());
    c.prediction_seconds = x.prediction_seconds + since(t0);
    if (!missed.empty())
      c.first_mismatch = entry_text(cmp[missed[0]]) + ": predicted " +
                         tc::hex_bits(output_bits(o.output(), want[missed[0]], nan_bits), o.output()) + " kernel " +
                         tc::hex_bits(got[missed[0]], o.output());
    total_mismatches += c.mismatches;
    r.comparisons.push_back(c);
    for (std::size_t e = 0; predictions && e < cmp.size(); ++e)
      std::fprintf(predictions, "%s %d %d %a\n", c.distribution.c_str(), cmp[e].first, cmp[e].second, predicted[e]);
  }
  if (predictions && std::fflush(predictions) != 0) throw std::runtime_error("cannot write " + opt.predictions_file);
  // The identified numerics as a record holding the tree (in gemmlab's vocabulary where one fits), its
  // bound, and the known kernels that have them (no built-in kernel splits its operands).
  r.numerics = record_for(r.tree.tree, o.input(), o.output(), r.conversion.a, r.nodes.kinds, split);
  if (r.numerics) {
    const BoundModel m = bound_model(*r.numerics, o.K());
    r.bound = gamma_bound_factor(m);
    r.underflow_bound = underflow_term(m);
    r.path_roundoff = m.tree_path;
    // The roundings on the worst path, as tree_bound.hpp counts them for this record.
    const std::optional<tc::TcParams> p =
        r.numerics->instruction ? tc::model_params(*r.numerics->instruction) : std::nullopt;
    const TreeRoundoff t = tree_roundoff(r.tree.tree, [&](int) { return p; },
                                         r.numerics->accumulator == Format::fp64 ? Format::fp64 : Format::fp32,
                                         r.numerics->split.pieces > 1 ? r.numerics->split.passes() : 1);
    r.path_roundings = t.roundings;
    r.worst_product = t.worst_product;
    if (r.numerics->accumulation != Accumulation::tree) {
      Numerics named = *r.numerics;
      named.tree.clear();
      r.named_bound = gamma_bound_factor(bound_model(named, o.K()));
    }
  }
  {
    std::ostringstream s;
    if (split)
      s << split->describe() << ", each pass of a node one " << r.nodes.kinds[0].instruction << "; the tree of the "
        << (split->format == emulation::SplitScheme::PieceFormat::tf32 ? "big x big" : "hi x hi") << " products: ";
    else
      s << "operands " << in_words(r.conversion.a) << "; ";
    if (st.quantized) {
      s << "the quantized operands' scales applied to their elements before the multiply";
      if (!st.dequantization.operands.empty())
        for (const DequantizationCandidate& c : dequantization_candidates())
          if (st.dequantization.chosen == c.name)
            s << ", the dequantized " << st.dequantization.operands << " " << c.words << " "
              << info(o.input()).name;
      s << "; ";
    }
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
}

std::string Composition::choose_dequantization(Oracle& o, const Options& opt, const Report& r) {
  State& st = *s_;
  bool rounds_a = false, rounds_b = false;
  for (const State::Dist& x : st.dists) rounds_a |= x.rounds_a, rounds_b |= x.rounds_b;
  if (!rounds_a && !rounds_b) return "";
  Report::Dequantization& dq = st.dequantization;
  dq.operands = rounds_a && rounds_b ? "A and B" : rounds_a ? "A" : "B";
  const Format in = o.input();
  const emulation::SplitScheme* split = st.split ? &*st.split : nullptr;
  if (split) return "a quantized problem's dequantized operands that the kernel rounds, and operands split into pieces";
  auto round_all = [&](Matrix& m, const std::string& cand, Conversion conv) {
    parallel_for_range(m.v.size(), opt.threads, std::size_t{1} << 16, [&](std::size_t lo, std::size_t hi) {
      for (std::size_t t = lo; t < hi; ++t) m.v[t] = convert(conv, dequantize_as(cand, m.v[t], in));
    });
  };
  // Each candidate predicts every compared output of every distribution whose operands it rounds (the
  // conversion stage's conversion after it); the one with the fewest mismatches in all is taken, and its
  // operands and predictions are those distributions' (begin predicts them no more). Ways that round every
  // value alike here tie, and the first is taken: on these inputs they are the same.
  struct Trial {
    Matrix A{0, 0}, B{0, 0};
    std::vector<double> want;
    double seconds = 0;
    bool on_gpu = false;
  };
  std::vector<Trial> chosen;
  long long best = -1;
  for (const DequantizationCandidate& c : dequantization_candidates()) {
    std::vector<Trial> trials(st.dists.size());
    long long miss = 0, outputs = 0;
    for (std::size_t i = 0; i < st.dists.size(); ++i) {
      const State::Dist& x = st.dists[i];
      if (!x.rounds_a && !x.rounds_b) continue;
      Trial& t = trials[i];
      const auto t0 = Clock::now();
      t.A = x.A, t.B = x.B;
      round_all(t.A, x.rounds_a ? c.name : "exact", r.conversion.a);
      round_all(t.B, x.rounds_b ? c.name : "exact", r.conversion.b);
      std::optional<std::vector<double>> want;
      if (opt.emulate) want = opt.emulate(r.tree.tree, st.model, t.A, t.B, st.cmp, opt.threads, split);
      t.on_gpu = want.has_value();
      if (!want) want = emulation::emulate_tree_at(r.tree.tree, st.model, t.A, t.B, st.cmp, opt.threads, split);
      t.want = std::move(*want);
      t.seconds = since(t0);
      for (std::size_t e = 0; e < st.cmp.size(); ++e) miss += output_bits(o.output(), t.want[e], st.nan_bits) != x.got[e];
      outputs += static_cast<long long>(st.cmp.size());
    }
    dq.trial_outputs = outputs;
    dq.tried.emplace_back(c.name, miss);
    if (best < 0 || miss < best) best = miss, dq.chosen = c.name, chosen = std::move(trials);
  }
  for (std::size_t i = 0; i < st.dists.size(); ++i) {
    State::Dist& x = st.dists[i];
    if (!x.rounds_a && !x.rounds_b) continue;
    Trial& t = chosen[i];
    x.A = std::move(t.A), x.B = std::move(t.B), x.want = std::move(t.want);
    x.prediction_seconds = t.seconds;
    x.predicted = x.converted = true;
    if (t.on_gpu) st.predicted_on_gpu += static_cast<long long>(x.want.size());
  }
  return "";
}

std::string compose(Oracle& o, const Options& opt, Report& r, long long& total_mismatches) {
  Composition c;
  if (std::string gap = c.begin(o, opt, r, false); !gap.empty()) return gap;
  c.finish(o, opt, r, total_mismatches);
  return "";
}

}  // namespace detail

const std::vector<DequantizationCandidate>& dequantization_candidates() {
  static const std::vector<DequantizationCandidate> c{
      {"rn", "rounded once to nearest even into"},
      {"fp32_then_rn", "rounded to fp32 (fp32 arithmetic), then to nearest even into"}};
  return c;
}

double dequantize_as(const std::string& candidate, double v, Format input) {
  if (candidate == "exact" || std::isnan(v) || std::isinf(v)) return v;
  if (candidate == "rn") return tc::round_to_format(input, v, Rounding::nearest_even);
  if (candidate == "fp32_then_rn")
    return tc::round_to_format(input, tc::round_to_format(Format::fp32, v, Rounding::nearest_even), Rounding::nearest_even);
  throw std::invalid_argument("dequantize_as: no candidate '" + candidate + "'");
}

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
    // The running sum is the instruction's accumulator (fp16 for f16 -> f16 and fp8 -> f16); only an
    // fp32 one is added into fp32 registers (external, promoted, split-K) in gemmlab's vocabulary.
    const Format acc = tc::info(*ins).output;
    Numerics base{.input = input, .compute = compute, .accumulator = acc, .output = output,
                  .accumulation = Accumulation::in_mma, .instruction = ins, .k_step = g,
                  .accumulation_rounding = Rounding::toward_zero,
                  .acc_unit_roundoff = fp8 && acc == Format::fp32 ? 0x1p-13 : 0.0,
                  .subnormals_flushed = fp8 && tc::info(*ins).name[0] == 'w', .split = {}, .tree = {}};
    const bool wgmma = std::string(tc::info(*ins).name).rfind("wgmma", 0) == 0;
    for (int split : {1, 2}) {
      if (acc != Format::fp32) {
        if (split == 1) {
          Numerics n = base;
          n.accumulation = wgmma ? Accumulation::in_wgmma : Accumulation::in_mma;
          cands.push_back(n);
        }
        continue;
      }
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

std::optional<Numerics> record_for(const SummationTree& tree, Format input, Format output, Conversion conv,
                                   const std::vector<NodeKind>& kinds, const emulation::SplitScheme* split) {
  std::optional<Numerics> named = numerics_for(tree, input, output, conv, kinds, split);
  if (named) {
    named->tree = compact_form(tree);
    return named;
  }
  // accumulation tree: one instruction for every kind of fused node (the carry kinds' first, whose
  // probes saw C's rules), or none where the tree has no fused node.
  std::optional<tc::Instruction> ins;
  for (const NodeKind& k : kinds) {
    std::istringstream s(k.same_as);
    std::string first;
    if (!(s >> first)) return std::nullopt;  // a node model no instruction of gemmlab's has
    const std::optional<tc::Instruction> i = tc::parse_instruction(first);
    if (!i) return std::nullopt;
    if (ins && tc::model_params(*ins) != tc::model_params(*i)) return std::nullopt;
    if (!ins || k.carry) ins = i;
  }
  if (split && !ins) return std::nullopt;  // pieces reach a multiplier: fused nodes
  const bool tf32_pieces = split && split->format == emulation::SplitScheme::PieceFormat::tf32;
  const Format compute = !split ? compute_format(conv, input) : tf32_pieces ? Format::tf32 : Format::bf16;
  const bool fp8 = compute == Format::e4m3 || compute == Format::e5m2;
  Numerics n;
  n.input = input;
  n.compute = compute;
  n.accumulator = ins ? tc::info(*ins).output : Format::fp32;
  n.output = output;
  n.accumulation = Accumulation::tree;
  n.instruction = ins;
  n.k_step = ins ? tc::info(*ins).k : 1;
  n.accumulation_rounding = ins ? Rounding::toward_zero : Rounding::nearest_even;
  n.acc_unit_roundoff = ins && fp8 && n.accumulator == Format::fp32 ? 0x1p-13 : 0.0;
  n.subnormals_flushed = ins && fp8 && tc::info(*ins).name[0] == 'w';
  if (split) {
    n.split.pieces = split->pieces;
    for (const auto& [i, j] : split->passes) n.split.products |= OperandSplit::bit(i, j);
    n.split.rounding = tf32_pieces || split->big_rounding == emulation::LowBits::toward_zero ? Rounding::toward_zero
                                                                                              : Rounding::nearest_even;
  }
  n.tree = compact_form(tree);
  return n;
}

bool expected_tree_matches(const Numerics& n, int K, const std::string& canonical) {
  return emulation::expected_tree(n, K).canonical() == canonical;
}

}  // namespace gemmlab::explain
