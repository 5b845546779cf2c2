// Stage 3 of `gemmlab explain`: how an fp32 operand reaches the multiplier (as is, tf32 rounded to
// nearest even, to nearest away from zero or toward zero, bf16, fp16), from single products; and the
// Conversion vocabulary (reference/explain.hpp).
#include <algorithm>
#include <cmath>
#include <sstream>

#include "reference/explain/internal.hpp"

namespace gemmlab::explain {

const char* to_string(Conversion c) {
  switch (c) {
    case Conversion::as_is: return "as_is";
    case Conversion::tf32_rne: return "tf32_rne";
    case Conversion::tf32_rna: return "tf32_rna";
    case Conversion::tf32_rz: return "tf32_rz";
    case Conversion::bf16_rne: return "bf16_rne";
    case Conversion::fp16_rne: return "fp16_rne";
  }
  return "?";
}

const char* in_words(Conversion c) {
  switch (c) {
    case Conversion::as_is: return "reach the multiplier unchanged";
    case Conversion::tf32_rne: return "rounded to tf32, to nearest even";
    case Conversion::tf32_rna: return "rounded to tf32, to nearest with ties away from zero (cvt.rna.tf32.f32)";
    case Conversion::tf32_rz: return "cut to tf32 (the low 13 bits dropped, toward zero)";
    case Conversion::bf16_rne: return "rounded to bf16, to nearest even";
    case Conversion::fp16_rne: return "rounded to fp16, to nearest even";
  }
  return "?";
}

std::optional<Conversion> parse_conversion(const std::string& name) {
  for (Conversion c : {Conversion::as_is, Conversion::tf32_rne, Conversion::tf32_rna, Conversion::tf32_rz,
                       Conversion::bf16_rne, Conversion::fp16_rne})
    if (name == to_string(c)) return c;
  return std::nullopt;
}

Format compute_format(Conversion c, Format input) {
  switch (c) {
    case Conversion::as_is: return input;
    case Conversion::tf32_rne:
    case Conversion::tf32_rna:
    case Conversion::tf32_rz: return Format::tf32;
    case Conversion::bf16_rne: return Format::bf16;
    case Conversion::fp16_rne: return Format::fp16;
  }
  return input;
}

double convert(Conversion c, double v) {
  if (c == Conversion::as_is || std::isnan(v) || std::isinf(v)) return v;
  switch (c) {
    case Conversion::fp16_rne: return tc::round_to_format(Format::fp16, v, Rounding::nearest_even);
    case Conversion::tf32_rne: return emulation::round_low_bits(v, 13, emulation::LowBits::nearest_even);
    case Conversion::tf32_rna: return emulation::round_low_bits(v, 13, emulation::LowBits::nearest_away);
    case Conversion::tf32_rz: return emulation::round_low_bits(v, 13, emulation::LowBits::toward_zero);
    case Conversion::bf16_rne: return emulation::round_low_bits(v, 16, emulation::LowBits::nearest_even);
    case Conversion::as_is: break;
  }
  return v;
}

std::vector<Conversion> candidate_conversions(Format input) {
  if (input != Format::fp32) return {Conversion::as_is};
  return {Conversion::as_is, Conversion::tf32_rne, Conversion::tf32_rna, Conversion::tf32_rz, Conversion::bf16_rne,
          Conversion::fp16_rne};
}

namespace detail {

namespace {
// The probes of a restricted operand (Options::values_a / values_b): its values with the most significant bits
// (those a narrower conversion would change first), a negative one among them, at most four; none is 0.
std::vector<double> widest_values(const std::vector<double>& allowed) {
  auto bits = [](double x) {
    int e = 0;
    double m = std::frexp(std::fabs(x), &e);  // m in [0.5, 1)
    int n = 0;
    while (m != std::floor(m) && n < 60) m *= 2, ++n;
    return n;
  };
  std::vector<double> v;
  for (double x : allowed)
    if (x != 0 && std::isfinite(x)) v.push_back(x);
  std::stable_sort(v.begin(), v.end(), [&](double x, double y) {
    return bits(x) != bits(y) ? bits(x) > bits(y) : std::fabs(x) > std::fabs(y);
  });
  std::vector<double> out;
  for (double x : v)
    if (out.size() < 3 && x > 0) out.push_back(x);
  for (double x : v)
    if (x < 0) {
      out.push_back(x);
      break;
    }
  return out;
}
}  // namespace

ConversionStage infer_conversion(Oracle& o, const std::vector<Entry>& E, const std::vector<double>& values_a,
                                 const std::vector<double>& values_b) {
  ConversionStage st;
  const Format in = o.input();
  std::vector<double> values;
  if (in == Format::fp32) {
    const double u11 = 0x1p-11, u8 = 0x1p-8;
    values = {1 + u11,         1 + 2 * u11 + u11, 1 + u11 + 0x1p-22,      1 + 0x1p-22,  1 + u8,
              1 + 2 * u8 + u8, 1 + u8 + 0x1p-22,  -(1 + u11),             -(1 + 3 * u11), -(1 + u11 + 0x1p-22),
              1.5,             0x1p20 + 0x1p9,    3 * 0x1p-20 + 0x1p-40, 0x1.fffffep0};
  } else {
    const int p = info(in).precision;
    values = {1 + std::ldexp(1.0, 1 - p), -(1 + std::ldexp(1.0, 1 - p)), 1.5, 1 + std::ldexp(3.0, 1 - p)};
  }
  const std::vector<Conversion> cands = candidate_conversions(in);
  const std::vector<double> all_values = values;
  for (int side = 0; side < 2; ++side) {
    // An operand held to a few values (a quantized one at unit scale) is probed with its own; the conversions
    // that leave every one of them unchanged are one for it, as_is.
    const std::vector<double>& allowed = side == 0 ? values_a : values_b;
    values = allowed.empty() ? all_values : widest_values(allowed);
    std::vector<Item> items;
    for (std::size_t t = 0; t < values.size(); ++t) {
      const int k = static_cast<int>(t % o.K());
      Item it;
      (side == 0 ? it.a : it.b).at = {{k, values[t]}};
      (side == 0 ? it.b : it.a).at = {{k, 1.0}};
      items.push_back(it);
    }
    std::vector<std::uint64_t> bits = run_items(o, E, items);
    std::vector<Conversion> left;
    std::string against;
    for (Conversion c : cands) {
      bool all = true;
      for (std::size_t t = 0; t < values.size() && all; ++t) {
        const double want = convert(c, values[t]);
        all = to_bits(o.output(), tc::round_to_format(o.output(), want, Rounding::nearest_even)) == bits[t];
      }
      if (all) left.push_back(c);
    }
    st.tests += static_cast<int>(values.size());
    const char* which = side == 0 ? "A" : "B";
    // No conversion, but each single product is the sum of x's first two bf16 pieces (hi + mid, which
    // the fused node adds exactly): a split, for stage 4 to check.
    bool split = left.empty() && in == Format::fp32;
    for (std::size_t t = 0; t < values.size() && split; ++t) {
      const emulation::SplitScheme two{emulation::LowBits::nearest_even, {}, 0, false,
                                       emulation::SplitScheme::PieceFormat::bf16, 2};
      const auto pieces = emulation::split_pieces(two, tc::TcParams{}, values[t]);
      split = to_bits(o.output(), tc::round_to_format(o.output(), pieces[0] + pieces[1], Rounding::nearest_even)) == bits[t];
    }
    if (split) {
      if (side == 1 && !st.split) {
        st.why = "the single products of A are those of its fp32 value, B's those of fp32 operands split into "
                 "two bf16 pieces (hi + mid): A and B are not treated alike";
        return st;
      }
      st.split = true;
      continue;
    }
    if (side == 1 && st.split) {
      st.why = "the single products of A are those of fp32 operands split into two bf16 pieces (hi + mid), "
               "B's are not";
      return st;
    }
    if (!allowed.empty() && left.size() > 1 && std::find(left.begin(), left.end(), Conversion::as_is) != left.end() &&
        std::all_of(left.begin(), left.end(), [&](Conversion c) {
          return std::all_of(allowed.begin(), allowed.end(), [&](double x) { return convert(c, x) == x; });
        }))
      left = {Conversion::as_is};
    if (left.size() != 1) {
      std::ostringstream s;
      if (left.empty()) {
        s << "no candidate conversion of " << which << " (";
        for (std::size_t c = 0; c < cands.size(); ++c) s << (c ? ", " : "") << to_string(cands[c]);
        s << ") explains its single products: e.g. " << value_text(values[0]) << " * 1 = "
          << value_text(from_bits(o.output(), bits[0]));
      } else {
        s << "the single products of " << which << " do not tell apart";
        for (Conversion c : left) s << " " << to_string(c);
      }
      if (left.empty() && in == Format::fp32)
        s << " (nor fp32 operands split into two bf16 pieces, whose single products are hi + mid)";
      st.why = s.str();
      return st;
    }
    (side == 0 ? st.a : st.b) = left[0];
  }
  st.ok = true;
  return st;
}

}  // namespace detail

}  // namespace gemmlab::explain
