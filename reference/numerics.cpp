// The numerics record (numerics.hpp): names, description, and the bound model it implies.
#include "reference/numerics.hpp"

#include <iterator>
#include <sstream>
#include <stdexcept>

#include "reference/tree_bound.hpp"
#include "reference/tree_form.hpp"
#include "reference/tc_gpus.hpp"

namespace gemmlab {

namespace {
constexpr Accumulation kAll[] = {Accumulation::fma,      Accumulation::in_mma,   Accumulation::in_wgmma,
                                 Accumulation::external, Accumulation::promoted, Accumulation::library,
                                 Accumulation::unknown,  Accumulation::tree};
}

const std::vector<Accumulation>& all_accumulations() {
  static const std::vector<Accumulation> v(std::begin(kAll), std::end(kAll));
  return v;
}

Rounding default_accumulation_rounding(Accumulation a) {
  switch (a) {
    case Accumulation::fma: return Rounding::nearest_even;
    case Accumulation::in_mma:
    case Accumulation::in_wgmma:
    case Accumulation::external:
    case Accumulation::promoted: return Rounding::toward_zero;
    case Accumulation::library:
    case Accumulation::unknown:
    case Accumulation::tree: return Rounding::unknown;
  }
  return Rounding::unknown;
}

std::string undeclarable(Accumulation a) {
  if (a == Accumulation::tree)
    return "accumulation tree is the order of a revealed summation tree, which only a `gemmlab explain` record "
           "holds (pass the explained record, e.g. gemmlab.judge(..., numerics=explanation.numerics)); declare "
           "fma, in_mma, in_wgmma, external, promoted, library or unknown";
  return "";
}

const char* to_string(Accumulation a) {
  switch (a) {
    case Accumulation::fma: return "fma";
    case Accumulation::in_mma: return "in_mma";
    case Accumulation::in_wgmma: return "in_wgmma";
    case Accumulation::external: return "external";
    case Accumulation::promoted: return "promoted";
    case Accumulation::library: return "library";
    case Accumulation::unknown: return "unknown";
    case Accumulation::tree: return "tree";
  }
  return "?";
}

std::optional<Accumulation> parse_accumulation(std::string_view name) {
  for (Accumulation a : kAll)
    if (name == to_string(a)) return a;
  return std::nullopt;
}

const char* to_string(ScaleApplication a) {
  switch (a) {
    case ScaleApplication::none: return "none";
    case ScaleApplication::block_fma: return "block_fma";
    case ScaleApplication::block_mul_mul: return "block_mul_mul";
    case ScaleApplication::epilogue: return "epilogue";
    case ScaleApplication::epilogue_mul_mul: return "epilogue_mul_mul";
    case ScaleApplication::epilogue_mul_mul_ba: return "epilogue_mul_mul_ba";
    case ScaleApplication::block_mul_mul_ba: return "block_mul_mul_ba";
    case ScaleApplication::block_mul_fma_a: return "block_mul_fma_a";
    case ScaleApplication::block_mul_fma_b: return "block_mul_fma_b";
  }
  return "?";
}

bool applies_per_block(ScaleApplication a) {
  switch (a) {
    case ScaleApplication::block_fma:
    case ScaleApplication::block_mul_mul:
    case ScaleApplication::block_mul_mul_ba:
    case ScaleApplication::block_mul_fma_a:
    case ScaleApplication::block_mul_fma_b: return true;
    default: return false;
  }
}

bool Numerics::predictable() const {
  if (split.pieces > 1) return false;  // the pass order is the explain report's, not the record's
  switch (accumulation) {
    case Accumulation::fma: return split_k == 1;
    case Accumulation::library:
    case Accumulation::unknown:
    case Accumulation::tree: return false;  // the record's tree: explain's composition predicts it
    case Accumulation::in_mma:
    case Accumulation::in_wgmma:
    case Accumulation::external:
    case Accumulation::promoted:
      return instruction.has_value() && k_step > 0 && tc::info(*instruction).k == k_step;
  }
  return false;
}

std::string Numerics::describe() const {
  std::ostringstream s;
  s << to_string(accumulation);
  if (accumulation == Accumulation::fma) {
    s << ", " << info(accumulator).name << " FMA one k at a time in increasing k";
  } else if (accumulation == Accumulation::tree) {
    s << " (the revealed order in the record's tree)";
    if (instruction) s << ", fused nodes " << tc::info(*instruction).name;
  } else if (instruction) {
    s << ", " << tc::info(*instruction).name << ", k-steps of " << k_step << " in increasing k";
    if (accumulation == Accumulation::promoted)
      s << ", promoted to fp32 every " << promotion_interval_k << " elements of K";
  } else if (k_step > 1) {
    s << ", k-steps of " << k_step << " in increasing k (instruction not modelled)";
  }
  if (scale_application != ScaleApplication::none) s << ", scales applied " << to_string(scale_application);
  if (split.pieces > 1)
    s << ", operands split into " << split.pieces << " " << info(compute).name << " pieces, products of pieces "
      << products_text(split) << " (A's piece, B's piece; 0 the largest)";
  if (fixed_point_bits > 0)
    s << ", operands in fixed point: " << fixed_point_bits << " mantissa bits per entry (" << fixed_point_slices(fixed_point_bits)
      << " int8 slices) on a power-of-two scale per row of A and column of B";
  if (split_k > 1) s << ", k-steps dealt to " << split_k << " partial sums added at the end (fp32, nearest)";
  if (k_chunked) s << ", some entries' K cut into chunks summed apart and added in k order (fp32, nearest)";
  s << ", output " << info(output).name;
  return s.str();
}

BoundModel bound_model(const Numerics& n, int K) {
  BoundModel m;
  m.K = K;
  m.input = n.input;
  m.compute = n.compute;
  m.accumulator = n.accumulator;
  m.output = n.output;
  m.rounding = n.accumulation_rounding;
  m.acc_unit_roundoff = n.acc_unit_roundoff;
  m.subnormals_flushed = n.subnormals_flushed;
  m.split = n.split;
  m.fixed_point_bits = n.fixed_point_bits;
  if (n.tree.empty()) {
    if (n.accumulation == Accumulation::tree)
      throw std::invalid_argument("bound: accumulation tree needs the record's tree (a `gemmlab explain` record holds it)");
    return m;
  }
  // The revealed tree (tree_bound.hpp): fused nodes the instruction's measured model, binary nodes fp32
  // (binary64 for an fp64 accumulator), each fused node run once per pass of split operands.
  SummationTree t(1);
  try {
    t = parse_compact_form(n.tree, K);
  } catch (const std::invalid_argument& e) {
    throw std::invalid_argument("bound: the record's tree is not a tree of K = " + std::to_string(K) +
                                " products (a record holds the tree of the size it was explained at: explain the "
                                "kernel at this size, or judge by the named order without the tree): " + e.what());
  }
  const std::optional<tc::TcParams> model = n.instruction ? tc::model_params(*n.instruction) : std::nullopt;
  const TreeRoundoff r = tree_roundoff(t, [&](int) { return model; }, n.accumulator == Format::fp64 ? Format::fp64 : Format::fp32,
                                       n.split.pieces > 1 ? n.split.passes() : 1);
  m.tree_path = r.path;
  m.tree_roundings = r.total_roundings;
  m.tree_eta = r.eta;
  m.accumulator = r.root;
  return m;
}

}  // namespace gemmlab
