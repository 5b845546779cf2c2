// Quantized recipes and their quantization on the CPU (see quantized.hpp and quantized_recipe.hpp). The
// per-block scales and the per-entry roundings are quantized_entry.hpp's, the GPU quantizer's too.
#include "reference/quantized.hpp"

#include <algorithm>
#include <atomic>
#include <cmath>
#include <stdexcept>

#include "reference/parallel.hpp"

namespace gemmlab {
namespace {

constexpr const char* kValidSpecs =
    "valid recipes: SPEC (both operands) or SPEC_x_SPEC (A's, then B's), SPEC one of mxfp8_e4m3, mxfp8_e5m2, "
    "mxfp6_e2m3, mxfp6_e3m2, mxfp4, nvfp4, int8_rowwise, int4_gG, uint4_gG (G = 32, 64, 128 or 256), bf16, fp16; "
    "e.g. normal_0_1@mxfp4, normal_0_1@mxfp4_x_bf16, normal_0_1@bf16_x_uint4_g128";

struct MxName {
  const char* name;
  Format element;
};
constexpr MxName kMx[] = {{"mxfp8_e4m3", Format::e4m3}, {"mxfp8_e5m2", Format::e5m2}, {"mxfp6_e2m3", Format::e2m3},
                          {"mxfp6_e3m2", Format::e3m2}, {"mxfp4", Format::e2m1}};
constexpr int kGroups[] = {32, 64, 128, 256};

const char* operand_name(Operand w) { return w == Operand::A ? "A" : "B"; }

}  // namespace

const char* to_string(QuantScheme s) {
  switch (s) {
    case QuantScheme::plain: return "plain";
    case QuantScheme::mx: return "mx";
    case QuantScheme::nvfp4: return "nvfp4";
    case QuantScheme::channel: return "channel";
    case QuantScheme::group: return "group";
  }
  return "unknown";
}

std::string QuantSpec::name() const {
  switch (scheme) {
    case QuantScheme::plain: return info(element).name;
    case QuantScheme::mx:
      for (const MxName& m : kMx)
        if (m.element == element) return m.name;
      break;
    case QuantScheme::nvfp4: return "nvfp4";
    case QuantScheme::channel: return "int8_rowwise";
    case QuantScheme::group: return std::string(info(element).name) + "_g" + std::to_string(block);
  }
  return "unknown";
}

Format QuantSpec::scale_format() const {
  switch (scheme) {
    case QuantScheme::plain: return element;
    case QuantScheme::mx: return Format::ue8m0;
    case QuantScheme::nvfp4: return Format::ue4m3;
    case QuantScheme::channel: return Format::fp32;
    case QuantScheme::group: return Format::bf16;
  }
  return Format::fp32;
}

std::string QuantRecipe::name() const { return a == b ? a.name() : a.name() + "_x_" + b.name(); }

QuantSpec parse_quant_spec(std::string_view name) {
  auto reject = [&](const std::string& why) -> QuantSpec {
    throw std::invalid_argument("bad quantized spec '" + std::string(name) + "': " + why + "; " + kValidSpecs);
  };
  QuantSpec s;
  for (const MxName& m : kMx)
    if (name == m.name) return QuantSpec{QuantScheme::mx, m.element, 32};
  if (name == "nvfp4") return QuantSpec{QuantScheme::nvfp4, Format::e2m1, 16};
  if (name == "int8_rowwise") return QuantSpec{QuantScheme::channel, Format::int8, 0};
  if (name == "bf16") return QuantSpec{QuantScheme::plain, Format::bf16, 0};
  if (name == "fp16") return QuantSpec{QuantScheme::plain, Format::fp16, 0};
  for (Format f : {Format::int4, Format::uint4}) {
    const std::string prefix = std::string(info(f).name) + "_g";
    if (name.substr(0, prefix.size()) == prefix) {
      const std::string_view g = name.substr(prefix.size());
      for (int G : kGroups)
        if (g == std::to_string(G)) return QuantSpec{QuantScheme::group, f, G};
      return reject("the group size must be 32, 64, 128 or 256");
    }
  }
  return reject("unknown spec");
}

QuantRecipe parse_quant_recipe(std::string_view name) {
  QuantRecipe r;
  constexpr std::string_view kX = "_x_";
  if (const auto x = name.find(kX); x != std::string_view::npos) {
    r.a = parse_quant_spec(name.substr(0, x));
    r.b = parse_quant_spec(name.substr(x + kX.size()));
  } else {
    r.a = r.b = parse_quant_spec(name);
  }
  if (r.a.scheme == QuantScheme::plain && r.b.scheme == QuantScheme::plain)
    throw std::invalid_argument("bad quantized recipe '" + std::string(name) +
                                "': neither operand is quantized; give a plain distribution and an input format instead");
  return r;
}

bool is_quant_recipe_name(std::string_view name) {
  for (std::string_view p : {"mx", "nv", "int", "uint"})
    if (name.substr(0, p.size()) == p) return true;
  return name.find("_x_") != std::string_view::npos;
}

quant_detail::QuantPlan quant_plan(Operand which, const QuantSpec& spec, int rows, int cols) {
  if (rows <= 0 || cols <= 0)
    throw std::invalid_argument("quantizing a (" + std::to_string(rows) + ", " + std::to_string(cols) +
                                ") operand: the shape must be positive");
  const bool a = which == Operand::A;  // A (M, K): K along columns; B (K, N): K along rows
  const int K = a ? cols : rows;
  if (spec.block > 0 && K % spec.block != 0)
    throw std::invalid_argument(std::string(operand_name(which)) + " under " + spec.name() + ": K = " + std::to_string(K) +
                                " is not a multiple of its block of " + std::to_string(spec.block) +
                                " along K; choose K a multiple of " + std::to_string(spec.block));
  quant_detail::QuantPlan p;
  p.scheme = static_cast<int>(spec.scheme);
  p.zero = spec.has_zero();
  p.element = format_params(spec.element);
  p.element_max = info(spec.element).max_finite;
  p.element_emax = info(spec.element).emax;
  if (spec.scheme == QuantScheme::group && spec.element == Format::int4) p.element_max = 7;  // symmetric
  if (spec.scheme == QuantScheme::channel) p.element_max = 127;                               // symmetric
  p.scale = format_params(spec.scale_format());
  const int extent = spec.scheme == QuantScheme::plain ? 1 : spec.block > 0 ? spec.block : K;
  if (spec.scheme == QuantScheme::plain) {
    p.block_rows = rows, p.block_cols = cols;  // one (unused) grid cell
  } else if (a) {
    p.block_rows = 1, p.block_cols = extent;
  } else {
    p.block_rows = extent, p.block_cols = 1;
  }
  p.grid_cols = (cols + p.block_cols - 1) / p.block_cols;
  return p;
}

double QuantizedOperand::scale_of(int i, int j) const {
  return scales[static_cast<std::size_t>(quant_detail::scale_index(plan, i, j))];
}
double QuantizedOperand::zero_of(int i, int j) const {
  return zeros.empty() ? 0.0 : zeros[static_cast<std::size_t>(quant_detail::scale_index(plan, i, j))];
}
double QuantizedOperand::dequantized_at(int i, int j) const {
  bool inexact = false;
  return quant_detail::dequantize(q(i, j), scale_of(i, j), zero_of(i, j), tensor_scale, plan, &inexact);
}
Matrix QuantizedOperand::dequantized() const {
  Matrix d(q.rows, q.cols);
  for (int i = 0; i < q.rows; ++i)
    for (int j = 0; j < q.cols; ++j) d(i, j) = dequantized_at(i, j);
  return d;
}

std::string quant_problem_message(int problem, Operand which, const QuantSpec& spec, int gi, int gj) {
  const std::string block = gi < 0 ? std::string(operand_name(which)) + " (its " + spec.name() + " tensor scale)"
                                   : "block (" + std::to_string(gi) + ", " + std::to_string(gj) + ") of " +
                                         operand_name(which) + "'s " + spec.name() + " scale grid";
  switch (problem) {
    case quant_detail::quant_amax_zero:
      return block + " is all zero (amax 0): its scale would be 0, and gemmlab refuses to invent one; choose a "
                     "distribution or size without all-zero blocks";
    case quant_detail::quant_nonfinite:
      return block + " holds a non-finite value: no finite scale exists; choose a distribution whose values are "
                     "finite in fp32";
    case quant_detail::quant_scale_range:
      return block + ": its scale is outside " + info(spec.scale_format()).name +
             "'s range (0 after rounding, or an E8M0 exponent beyond -127 .. 127); choose a distribution of "
             "magnitudes nearer 1 (or, for NVFP4, without blocks far below the operand's largest value)";
    case quant_detail::quant_constant_group:
      return block + " holds one value only (max = min): its scale (max - min) / 15 would be 0; choose a "
                     "distribution with distinct values in every group";
    case quant_detail::quant_inexact:
      return block + ": (q - 8) s + z of its values is not exact in binary64 (s and z too far apart); choose a "
                     "distribution of magnitudes nearer 1";
    default: return block + " has no usable scale";
  }
}

QuantizedOperand quantize(const Matrix& source, Operand which, const QuantSpec& spec) {
  using namespace quant_detail;
  QuantizedOperand r;
  r.spec = spec;
  r.which = which;
  r.plan = quant_plan(which, spec, source.rows, source.cols);
  const QuantPlan& p = r.plan;
  r.grid_rows = (source.rows + p.block_rows - 1) / p.block_rows;
  r.grid_cols = p.grid_cols;
  const std::size_t cells = static_cast<std::size_t>(r.grid_rows) * r.grid_cols;
  r.q = Matrix(source.rows, source.cols);
  auto fail = [&](int problem, long long cell) {
    throw std::invalid_argument(quant_problem_message(problem, which, spec, cell < 0 ? -1 : static_cast<int>(cell / r.grid_cols),
                                                      cell < 0 ? -1 : static_cast<int>(cell % r.grid_cols)));
  };
  if (spec.scheme == QuantScheme::plain) {
    r.scales.assign(cells, 1.0);
    for (std::size_t t = 0; t < source.size(); ++t) r.q.v[t] = pfp::round_format(source.v[t], p.element);
    return r;
  }
  // Per block: amax, and min and max (uint4). A NaN sticks (it makes the block non-finite).
  std::vector<double> amax(cells, 0.0), mn(cells, INFINITY), mx(cells, -INFINITY);
  std::vector<char> nonfinite(cells, 0);
  double tensor_amax = 0.0;
  bool tensor_nonfinite = false;
  for (int i = 0; i < source.rows; ++i)
    for (int j = 0; j < source.cols; ++j) {
      const std::size_t c = static_cast<std::size_t>(scale_index(p, i, j));
      const double x = source(i, j);
      if (!std::isfinite(x)) {
        nonfinite[c] = 1;
        tensor_nonfinite = true;
        continue;
      }
      amax[c] = std::max(amax[c], std::fabs(x));
      mn[c] = std::min(mn[c], x);
      mx[c] = std::max(mx[c], x);
      tensor_amax = std::max(tensor_amax, std::fabs(x));
    }
  if (spec.scheme == QuantScheme::nvfp4) {
    int problem = 0;
    r.tensor_scale = tensor_nonfinite ? (problem = quant_nonfinite, 0.0)
                                      : ratio_scale(tensor_amax, 448.0 * 6.0, format_params(Format::fp32), &problem);
    if (problem) fail(problem, -1);
  }
  r.scales.resize(cells);
  if (p.zero) r.zeros.resize(cells);
  for (std::size_t c = 0; c < cells; ++c) {
    int problem = 0;
    double s = 0.0;
    if (nonfinite[c]) {
      problem = quant_nonfinite;
    } else {
      switch (spec.scheme) {
        case QuantScheme::mx: s = mx_scale(amax[c], p, &problem); break;
        case QuantScheme::nvfp4: s = ratio_scale(amax[c], pfp::mul(6.0, r.tensor_scale), p.scale, &problem); break;
        case QuantScheme::channel: s = ratio_scale(amax[c], 127.0, p.scale, &problem); break;
        case QuantScheme::group:
          if (p.zero) {
            s = uint4_scale(mn[c], mx[c], p, &problem);
            if (!problem) r.zeros[c] = uint4_zero(mn[c], s, p);
          } else {
            s = ratio_scale(amax[c], 7.0, p.scale, &problem);
          }
          break;
        case QuantScheme::plain: break;
      }
    }
    if (problem) fail(problem, static_cast<long long>(c));
    r.scales[c] = s;
  }
  // The elements, and uint4's exactness check (its first inexact block in grid order is refused).
  std::vector<char> inexact(p.zero ? cells : 0, 0);
  parallel_for_range(source.size(), 0, std::size_t{1} << 16, [&](std::size_t lo, std::size_t hi) {
    for (std::size_t idx = lo; idx < hi; ++idx) {
      const int i = static_cast<int>(idx / source.cols), j = static_cast<int>(idx % source.cols);
      const std::size_t c = static_cast<std::size_t>(scale_index(p, i, j));
      const double s = r.scales[c];
      if (p.zero) {
        const double q = quantize_uint4(source.v[idx], s, r.zeros[c], p);
        r.q.v[idx] = q;
        bool bad = false;
        dequantize(q, s, r.zeros[c], 1.0, p, &bad);
        if (bad) inexact[c] = 1;  // several threads may write 1: the same byte value
      } else {
        r.q.v[idx] = quantize_element(source.v[idx], spec.scheme == QuantScheme::nvfp4 ? pfp::mul(s, r.tensor_scale) : s, p);
      }
    }
  });
  for (std::size_t c = 0; c < inexact.size(); ++c)
    if (inexact[c]) fail(quant_inexact, static_cast<long long>(c));
  return r;
}

bool all_representable(const Matrix& m, Format f, int threads) {
  const pfp::FormatParams p = format_params(f);
  std::atomic<bool> all{true};
  parallel_for_range(m.v.size(), threads, std::size_t{1} << 18, [&](std::size_t lo, std::size_t hi) {
    for (std::size_t t = lo; t < hi && all.load(std::memory_order_relaxed); ++t)
      if (pfp::round_format(m.v[t], p) != m.v[t]) all.store(false, std::memory_order_relaxed);
  });
  return all.load();
}

std::vector<double> unit_scale_values(const QuantSpec& spec) {
  if (spec.scheme == QuantScheme::plain) return {};
  const quant_detail::QuantPlan p = quant_plan(Operand::A, spec, 1, 256);  // any K the blocks divide
  const FormatInfo& e = info(spec.element);
  std::vector<double> candidates;
  if (e.format == Format::int8 || e.format == Format::int4 || e.format == Format::uint4) {
    for (int v = -(1 << (e.storage_bits)); v <= (1 << e.storage_bits); ++v) candidates.push_back(v);
  } else {
    for (std::uint64_t bits = 0; bits < (std::uint64_t{1} << e.storage_bits); ++bits) candidates.push_back(from_bits(spec.element, bits));
  }
  std::vector<double> out;
  for (double v : candidates) {
    double q = 0;
    if (quant_detail::unit_scale_element(v, p, &q)) out.push_back(v == 0 ? 0.0 : v);  // -0 as +0
  }
  std::sort(out.begin(), out.end());
  out.erase(std::unique(out.begin(), out.end()), out.end());
  return out;
}

std::optional<Format> explain_input_format(const QuantRecipe& r, std::string* why) {
  const bool plain_a = r.a.scheme == QuantScheme::plain, plain_b = r.b.scheme == QuantScheme::plain;
  auto refuse = [&](const std::string& w) -> std::optional<Format> {
    if (why) *why = w;
    return std::nullopt;
  };
  if (!plain_a && !plain_b)
    return refuse("both operands of " + r.name() + " are quantized (A " + r.a.name() + ", B " + r.b.name() +
                  "): explain's tree stage needs one operand that holds any value of its format (FPRev's large and "
                  "small values), and a quantized operand of unit scale holds only its elements' values; judge it "
                  "with gemmlab.judge (or `gemmlab run -d SOURCE@" + r.name() + "` for a built-in kernel), which bounds "
                  "it by where it applies the scales (and finds an int8 kernel's epilogue)");
  if (plain_a && plain_b) {
    if (r.a.element != r.b.element)
      return refuse(r.name() + " holds two plain formats (" + std::string(info(r.a.element).name) + ", " +
                    info(r.b.element).name + "): explain takes one input format");
    return r.a.element;
  }
  const Format f = plain_a ? r.a.element : r.b.element;
  const QuantSpec& q = plain_a ? r.b : r.a;
  for (double v : unit_scale_values(q))
    if (pfp::round_format(v, format_params(f)) != v)
      return refuse(std::string("the ") + info(f).name + " operand of " + r.name() + " cannot hold the value " +
                    std::to_string(v) + " of the " + q.name() + " operand's elements");
  return f;
}

const char* to_string(QuantScales s) {
  switch (s) {
    case QuantScales::operands: return "operands";
    case QuantScales::output: return "output";
    case QuantScales::unknown: return "unknown";
  }
  return "?";
}

std::optional<QuantScales> parse_quant_scales(std::string_view name) {
  for (QuantScales s : {QuantScales::operands, QuantScales::output, QuantScales::unknown})
    if (name == to_string(s)) return s;
  return std::nullopt;
}

BoundModel quantized_bound_model(const Numerics& n, QuantScales where, int roundings, int K, bool operands_exact) {
  Numerics m = n;
  switch (where) {
    case QuantScales::operands:
      m.input = operands_exact ? m.compute : Format::fp64;
      return bound_model(m, K);
    case QuantScales::output: {
      if (roundings < 0) throw std::invalid_argument("quantized_bound_model: a negative number of roundings");
      m.input = m.compute = m.accumulator = Format::fp64;
      m.accumulation = Accumulation::fma;
      m.accumulation_rounding = Rounding::nearest_even;
      m.acc_unit_roundoff = 0;
      m.instruction.reset();
      m.tree.clear();
      BoundModel b = bound_model(m, K);
      b.epilogue_roundings = roundings;
      b.epilogue = Format::fp32;
      return b;
    }
    case QuantScales::unknown: break;
  }
  m.accumulation = Accumulation::unknown;
  m.accumulation_rounding = Rounding::unknown;
  return bound_model(m, K);
}

const char* epilogue_candidate_name(int candidate) {
  static const char* const names[quant_detail::kEpilogueCandidates] = {
      "epilogue_mul_mul: RN(RN(RN(S) a_scale) b_scale)", "epilogue_mul_mul_ba: RN(RN(RN(S) b_scale) a_scale)",
      "epilogue: RN(RN(S) RN(a_scale b_scale))", "once: RN(S a_scale b_scale)"};
  return candidate >= 0 && candidate < quant_detail::kEpilogueCandidates ? names[candidate] : "?";
}

std::string epilogue_explanation(const long long* differ, long long entries) {
  int best = 0;
  for (int k = 1; k < quant_detail::kEpilogueCandidates; ++k)
    if (differ[k] < differ[best]) best = k;
  std::string others;
  for (int k = 0; k < quant_detail::kEpilogueCandidates; ++k)
    if (k != best)
      others += std::string(others.empty() ? "" : ", ") + std::string(epilogue_candidate_name(k)).substr(
                    0, std::string(epilogue_candidate_name(k)).find(':')) + " " + std::to_string(differ[k]);
  const std::string what = std::string(epilogue_candidate_name(best)) + " from the exact int32 sum S: " +
                           std::to_string(differ[best]) + " of " + std::to_string(entries) +
                           " outputs differ from its prediction (the other candidates: " + others + ")";
  return differ[best] == 0 ? "explained: the scales enter after the exact sum as " + what
                           : "no candidate epilogue predicts every output; the closest is " + what;
}

QuantizedProblem make_quantized_problem(const Distribution& d, int M, int N, int K, std::uint64_t seed, int threads) {
  if (!d.quant)
    throw std::invalid_argument("make_quantized_problem: " + d.name() + " has no quantized recipe (SOURCE@RECIPE)");
  QuantizedProblem p;
  p.A0 = generate(d.source(), Operand::A, M, K, Format::fp32, seed, threads);
  p.B0 = generate(d.source(), Operand::B, K, N, Format::fp32, seed, threads);
  p.A = quantize(p.A0, Operand::A, d.quant->a);
  p.B = quantize(p.B0, Operand::B, d.quant->b);
  return p;
}

}  // namespace gemmlab
