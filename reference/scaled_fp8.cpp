// Scaled fp8 recipes and their quantization on the CPU (see scaled_fp8.hpp). The per-block scale and
// the per-entry rounding are scaled_fp8_entry.hpp's, the GPU quantizer's too.
#include "reference/scaled_fp8.hpp"

#include <algorithm>
#include <cmath>
#include <stdexcept>

#include "reference/parallel.hpp"

namespace gemmlab {
namespace {

constexpr int kBlockK = 128;  // the K extent of k128 and blk128 blocks (DeepSeek's N_C)

constexpr const char* kValidRecipes =
    "valid recipes: FMT_GRAN or FMT_GRAN_ue8m0 with FMT e4m3 or e5m2 and GRAN tensor, rowwise, 1x128_128x128 "
    "(A 1x128, B 128x128 blocks) or 1x128_1x128, e.g. normal_0_1@e4m3_1x128_128x128";

struct Gran {
  const char* name;
  ScaleGranularity a, b;
};
constexpr Gran kGrans[] = {
    {"tensor", ScaleGranularity::tensor, ScaleGranularity::tensor},
    {"rowwise", ScaleGranularity::outer, ScaleGranularity::outer},
    {"1x128_128x128", ScaleGranularity::k128, ScaleGranularity::blk128},
    {"1x128_1x128", ScaleGranularity::k128, ScaleGranularity::k128},
};

const char* operand_name(Operand w) { return w == Operand::A ? "A" : "B"; }

}  // namespace

const char* to_string(ScaleGranularity g) {
  switch (g) {
    case ScaleGranularity::none: return "none";
    case ScaleGranularity::tensor: return "tensor";
    case ScaleGranularity::outer: return "outer";
    case ScaleGranularity::k128: return "k128";
    case ScaleGranularity::blk128: return "blk128";
  }
  return "unknown";
}

std::string ScaleRecipe::name() const {
  std::string s = std::string(info(fp8).name) + "_";
  const Gran* g = nullptr;
  for (const Gran& c : kGrans)
    if (c.a == a && c.b == b) g = &c;
  s += g ? g->name : std::string(to_string(a)) + "_" + to_string(b);
  if (ue8m0) s += "_ue8m0";
  return s;
}

ScaleRecipe parse_recipe(std::string_view name) {
  auto reject = [&](const std::string& why) -> ScaleRecipe {
    throw std::invalid_argument("bad scaled-fp8 recipe '" + std::string(name) + "': " + why + "; " + kValidRecipes);
  };
  ScaleRecipe r;
  std::string_view rest = name;
  if (rest.substr(0, 5) == "e4m3_") r.fp8 = Format::e4m3;
  else if (rest.substr(0, 5) == "e5m2_") r.fp8 = Format::e5m2;
  else return reject("it must start with the fp8 format, e4m3_ or e5m2_");
  rest.remove_prefix(5);
  constexpr std::string_view kPow2 = "_ue8m0";
  if (rest.size() > kPow2.size() && rest.substr(rest.size() - kPow2.size()) == kPow2) {
    r.ue8m0 = true;
    rest.remove_suffix(kPow2.size());
  }
  for (const Gran& g : kGrans)
    if (rest == g.name) {
      r.a = g.a, r.b = g.b;
      return r;
    }
  return reject("unknown granularity '" + std::string(rest) + "'");
}

std::vector<ScaleRecipe> all_recipes(Format fp8) {
  std::vector<ScaleRecipe> v;
  for (bool pow2 : {false, true})
    for (const Gran& g : kGrans) v.push_back(ScaleRecipe{fp8, g.a, g.b, pow2});
  return v;
}

scaled_detail::QuantPlan quant_plan(Operand which, ScaleGranularity g, Format fp8, bool ue8m0, int rows, int cols) {
  if (fp8 != Format::e4m3 && fp8 != Format::e5m2)
    throw std::invalid_argument(std::string("scaled quantization targets e4m3 or e5m2, not ") + info(fp8).name);
  if (rows <= 0 || cols <= 0)
    throw std::invalid_argument("scaled quantization of a (" + std::to_string(rows) + ", " + std::to_string(cols) +
                                ") operand: the shape must be positive");
  scaled_detail::QuantPlan p;
  p.fp8 = format_params(fp8);
  p.fp32 = format_params(Format::fp32);
  p.fmax = info(fp8).max_finite;
  p.pow2 = ue8m0;
  const bool a = which == Operand::A;  // A (M, K): K along columns; B (K, N): K along rows
  switch (g) {
    case ScaleGranularity::none:
      throw std::invalid_argument("scaled quantization needs a granularity other than none");
    case ScaleGranularity::tensor: p.block_rows = rows, p.block_cols = cols; break;
    case ScaleGranularity::outer: a ? (p.block_rows = 1, p.block_cols = cols) : (p.block_rows = rows, p.block_cols = 1); break;
    case ScaleGranularity::k128: a ? (p.block_rows = 1, p.block_cols = kBlockK) : (p.block_rows = kBlockK, p.block_cols = 1); break;
    case ScaleGranularity::blk128: p.block_rows = kBlockK, p.block_cols = kBlockK; break;
  }
  p.grid_cols = (cols + p.block_cols - 1) / p.block_cols;
  return p;
}

Matrix ScaledOperand::dequantized() const {
  Matrix d(q.rows, q.cols);
  for (int i = 0; i < q.rows; ++i)
    for (int j = 0; j < q.cols; ++j) d(i, j) = q(i, j) * scale_of(i, j);  // 4 x 24 bits: exact
  return d;
}

std::string scale_problem_message(int problem, Operand which, ScaleGranularity g, int gi, int gj, double amax) {
  const std::string block = std::string("block (") + std::to_string(gi) + ", " + std::to_string(gj) + ") of " +
                            operand_name(which) + "'s " + to_string(g) + " scale grid";
  switch (problem) {
    case scaled_detail::scale_amax_zero:
      return block + " is all zero (amax 0): its scale would be 0, and gemmlab refuses to invent one; choose a "
                     "distribution or size without all-zero blocks";
    case scaled_detail::scale_amax_nonfinite:
      return block + " holds a non-finite value (amax " + std::to_string(amax) +
             "): no finite scale exists; choose a distribution whose values are finite in fp32";
    case scaled_detail::scale_underflow:
      return block + " has amax " + std::to_string(amax) +
             ", so small that its fp32 scale amax / fmax is 0; choose a distribution of larger magnitudes";
    case scaled_detail::scale_ue8m0_range:
      return block + " has amax " + std::to_string(amax) +
             ": its power-of-two scale is outside UE8M0's range 2^-127 .. 2^127; use fp32 scales (drop _ue8m0) or "
             "another distribution";
    default: return block + " has no usable scale";
  }
}

ScaledOperand quantize(const Matrix& source, Operand which, ScaleGranularity g, Format fp8, bool ue8m0) {
  ScaledOperand r;
  r.plan = quant_plan(which, g, fp8, ue8m0, source.rows, source.cols);
  r.grid_rows = grid_rows(r.plan, source.rows);
  r.grid_cols = r.plan.grid_cols;
  std::vector<double> amax(static_cast<std::size_t>(r.grid_rows) * r.grid_cols, 0.0);
  for (int i = 0; i < source.rows; ++i)
    for (int j = 0; j < source.cols; ++j) {
      double& m = amax[static_cast<std::size_t>(scaled_detail::scale_index(r.plan, i, j))];
      const double a = std::fabs(source(i, j));
      if (!std::isnan(m) && !(a <= m)) m = a;  // a NaN sticks: it makes the block non-finite
    }
  r.scales.resize(amax.size());
  for (std::size_t b = 0; b < amax.size(); ++b) {
    int problem = 0;
    const double s = scaled_detail::block_scale(amax[b], r.plan, &problem);
    if (problem)
      throw std::invalid_argument(scale_problem_message(problem, which, g, static_cast<int>(b / r.grid_cols),
                                                        static_cast<int>(b % r.grid_cols), amax[b]));
    r.scales[b] = static_cast<float>(s);  // exact: s is an fp32 value
  }
  r.q = Matrix(source.rows, source.cols);
  parallel_for_range(source.size(), 0, std::size_t{1} << 16, [&](std::size_t lo, std::size_t hi) {
    for (std::size_t idx = lo; idx < hi; ++idx) {
      const int i = static_cast<int>(idx / source.cols), j = static_cast<int>(idx % source.cols);
      r.q.v[idx] = scaled_detail::quantize_entry(source.v[idx], r.scale_of(i, j), r.plan);
    }
  });
  return r;
}

std::vector<float> kernel_scales(const ScaledOperand& op, Operand which, ScaleGranularity g) {
  const std::size_t rows = static_cast<std::size_t>(op.grid_rows), cols = static_cast<std::size_t>(op.grid_cols);
  auto at = [&](std::size_t r, std::size_t c) { return op.scales[r * cols + c]; };
  switch (g) {
    case ScaleGranularity::tensor:
    case ScaleGranularity::outer: return op.scales;  // (1, 1), (M, 1) or (1, N): already a vector
    case ScaleGranularity::k128: {
      if (which == Operand::B) return op.scales;  // (KB, N) row-major: (kb, n) at kb N + n
      std::vector<float> v(rows * cols);          // A (M, KB) -> (i, kb) at kb M + i
      for (std::size_t i = 0; i < rows; ++i)
        for (std::size_t kb = 0; kb < cols; ++kb) v[kb * rows + i] = at(i, kb);
      return v;
    }
    case ScaleGranularity::blk128: {
      // B (KB, NB) -> (kb, nb) at nb L4 + kb; A (MB, KB) -> (mb, kb) at mb L4 + kb.
      const std::size_t kb_count = which == Operand::B ? rows : cols, other = which == Operand::B ? cols : rows;
      const std::size_t l4 = (kb_count + 3) / 4 * 4;
      std::vector<float> v(other * l4, 0.0f);
      for (std::size_t o = 0; o < other; ++o)
        for (std::size_t kb = 0; kb < kb_count; ++kb) v[o * l4 + kb] = which == Operand::B ? at(kb, o) : at(o, kb);
      return v;
    }
    case ScaleGranularity::none: break;
  }
  throw std::invalid_argument("kernel_scales: granularity none has no scales");
}

std::size_t kernel_scales_count(Operand which, ScaleGranularity g, int rows, int cols) {
  const scaled_detail::QuantPlan p = quant_plan(which, g, Format::e4m3, false, rows, cols);
  const std::size_t gr = static_cast<std::size_t>(grid_rows(p, rows)), gc = static_cast<std::size_t>(p.grid_cols);
  if (g != ScaleGranularity::blk128) return gr * gc;
  const std::size_t kb = which == Operand::B ? gr : gc, other = which == Operand::B ? gc : gr;
  return other * ((kb + 3) / 4 * 4);
}

ScaledProblem make_scaled_problem(const Distribution& d, int M, int N, int K, std::uint64_t seed, int threads) {
  if (!d.recipe) throw std::invalid_argument("make_scaled_problem: " + d.name() + " has no scaled fp8 recipe (SOURCE@RECIPE)");
  const ScaleRecipe& r = *d.recipe;
  ScaledProblem p;
  p.A0 = generate(d.source(), Operand::A, M, K, Format::fp32, seed, threads);
  p.B0 = generate(d.source(), Operand::B, K, N, Format::fp32, seed, threads);
  p.A = quantize(p.A0, Operand::A, r.a, r.fp8, r.ue8m0);
  p.B = quantize(p.B0, Operand::B, r.b, r.fp8, r.ue8m0);
  return p;
}

}  // namespace gemmlab
