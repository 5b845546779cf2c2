// Probe set and parameter inference for the tensor-core model; see tc_infer.hpp.
#include "reference/tc_infer.hpp"
#include "reference/tc_gpus.hpp"

#include <cmath>
#include <cstdio>
#include <algorithm>
#include <functional>
#include <limits>
#include <optional>
#include <random>
#include <set>
#include <sstream>
#include <thread>

namespace gemmlab::tc {

namespace {

std::string num(double x) {
  if (std::isnan(x)) return "nan";
  if (std::isinf(x)) return x > 0 ? "inf" : "-inf";
  if (x == 0) return std::signbit(x) ? "-0" : "0";
  // m * 2^e with m an odd integer: exact and short
  int e = std::ilogb(x) - 60;
  double m = std::ldexp(x, -e);
  long long mi = (long long)m;
  while (mi % 2 == 0) {
    mi /= 2;
    ++e;
  }
  std::ostringstream s;
  if (e == 0) s << mi;
  else if (mi == 1) s << "2^" << e;
  else if (mi == -1) s << "-2^" << e;
  else s << mi << "*2^" << e;
  return s.str();
}

// Probe set builder: every value is checked to be representable; a probe that cannot be built in
// this instruction's formats is skipped.
struct Builder {
  const InstructionInfo& ins;
  std::vector<Probe> out;
  std::set<std::string> ids;

  bool add(const std::string& id, const std::string& feature, const std::vector<std::pair<double, double>>& ab,
           const std::vector<int>& pos, double c) {
    Probe p{id, feature, std::vector<double>(ins.k, 0.0), std::vector<double>(ins.k, 0.0), c};
    if (!representable(ins.output, c)) return false;
    for (size_t t = 0; t < ab.size(); ++t) {
      if (pos[t] >= ins.k) return false;
      if (!representable(ins.input, ab[t].first) || !representable(ins.format_b(), ab[t].second)) return false;
      p.a[pos[t]] = ab[t].first;
      p.b[pos[t]] = ab[t].second;
    }
    if (!ids.insert(id).second) return false;
    out.push_back(std::move(p));
    return true;
  }
  // Split a product value t into a*b with both representable (b a power of two), both normal; with
  // allow_subnormal, a subnormal factor is accepted when no normal split exists.
  bool split(double t, std::pair<double, double>& ab, bool allow_subnormal = false) const {
    if (t == 0) {
      ab = {0.0, 0.0};
      return true;
    }
    for (int s = 0; s <= 300; ++s)
      for (int j : {s, -s}) {
        double b = std::ldexp(1.0, j), a = std::ldexp(t, -j);
        const FormatInfo &f = gemmlab::info(ins.input), &fb = gemmlab::info(ins.format_b());
        bool normal = std::fabs(a) >= std::ldexp(1.0, f.emin) && std::fabs(b) >= std::ldexp(1.0, fb.emin);
        if (normal && representable(ins.input, a) && representable(ins.format_b(), b)) {
          ab = {a, b};
          return true;
        }
      }
    if (allow_subnormal)
      for (int s = 0; s <= 300; ++s)
        for (int j : {s, -s}) {
          double b = std::ldexp(1.0, j), a = std::ldexp(t, -j);
          if (a != 0 && representable(ins.input, a) && representable(ins.format_b(), b)) {
            ab = {a, b};
            return true;
          }
        }
    return false;
  }
  bool add_terms(const std::string& id, const std::string& feature, const std::vector<double>& terms,
                 const std::vector<int>& pos, double c, bool allow_subnormal = false) {
    std::vector<std::pair<double, double>> ab(terms.size());
    for (size_t t = 0; t < terms.size(); ++t)
      if (!split(terms[t], ab[t], allow_subnormal)) return false;
    return add(id, feature, ab, pos, c);
  }
};

std::string xs(int e) { return "X=2^" + std::to_string(e); }

}  // namespace

std::string exact_text(double x) { return num(x); }

std::string hex_bits(std::uint64_t bits, Format f) {
  char buf[32];
  int digits = (gemmlab::info(f).storage_bits + 3) / 4;
  std::snprintf(buf, sizeof buf, "0x%0*llx", digits, (unsigned long long)bits);
  return buf;
}

std::string describe_inputs(const Probe& p) {
  std::ostringstream s;
  bool first = true;
  for (size_t i = 0; i < p.a.size(); ++i) {
    if (p.a[i] == 0 && p.b[i] == 0 && !std::signbit(p.a[i])) continue;
    if (p.a[i] == 0 && !std::isnan(p.b[i]) && !std::isinf(p.b[i]) && p.b[i] == 0) continue;
    s << (first ? "" : "; ") << "a" << i << "*b" << i << "=" << num(p.a[i]) << "*" << num(p.b[i]);
    first = false;
  }
  s << (first ? "" : "; ") << "c=" << num(p.c);
  return s.str();
}

std::vector<Probe> make_probes(const InstructionInfo& ins) {
  Builder B{ins, {}, {}};
  const FormatInfo &fi = gemmlab::info(ins.input), &fo = gemmlab::info(ins.output);
  const int pin = fi.precision, pout = fo.precision;
  const int K = ins.k;
  // Scales of the big terms: products of fp8 span few binades, so several are tried.
  const std::vector<int> scales = {0, 8, -8, 16};

  // Exact products: (1 - 2^-p)^2 = 1 - 2^-(p-1) + 2^-2p needs 2p bits.
  {
    double x = 1 - std::ldexp(1.0, -pin);
    B.add("exact_products/square", "exact_products", {{x, x}}, {0}, 0.0);
    B.add("exact_products/square_minus_1", "exact_products", {{x, x}}, {0}, -1.0);
    B.add("exact_products/square_minus_1_b", "exact_products", {{x, x}, {-1.0, 1.0}}, {0, 1}, 0.0);
    double y = 1 + std::ldexp(1.0, 1 - pin);
    B.add("exact_products/mixed", "exact_products", {{x, y}, {-1.0, 1.0}}, {0, 1}, 0.0);
  }
  // Alignment: X - X + s*f*X*2^-j. The pair cancels exactly; what is left is the small term as the
  // alignment to X's exponent kept it (F fraction bits, shifted-out bits rounded some way).
  for (int e : scales)
    for (int j = 1; j <= 64; ++j)
      for (double f : {1.0, 0.75, 0.625})
        for (int sg : {1, -1}) {
          double X = std::ldexp(1.0, e);
          std::string id = "alignment/j=" + std::to_string(j) + "/f=" + num(f) + (sg > 0 ? "/pos/" : "/neg/") + xs(e);
          B.add_terms(id, "alignment", {X, -X, sg * f * X * std::ldexp(1.0, -j)}, {0, 1, 2}, 0.0);
        }
  // The same with C as the big term: C joins the alignment or not.
  for (int e : scales)
    for (int j = 1; j <= 64; ++j)
      for (int sg : {1, -1}) {
        double X = std::ldexp(1.0, e);
        std::string id = "c_alignment/j=" + std::to_string(j) + (sg > 0 ? "/pos/" : "/neg/") + xs(e);
        B.add_terms(id, "c_in_alignment", {-X, sg * 0.75 * X * std::ldexp(1.0, -j)}, {0, 1}, X);
      }
  // A small C under a cancelling pair: lost iff C is aligned with the pair.
  for (int e : scales)
    for (int j = 1; j <= 64; ++j)
      for (double f : {1.0, 0.75})
        for (int sg : {1, -1}) {
          double X = std::ldexp(1.0, e);
          std::string id = "c_small/j=" + std::to_string(j) + "/f=" + num(f) + (sg > 0 ? "/pos/" : "/neg/") + xs(e);
          B.add_terms(id, "c_in_alignment", {X, -X}, {0, 1}, sg * f * X * std::ldexp(1.0, -j));
        }
  // Alignment exponent: 1.5*1.5 = 2.25 has exponent sum 0 but value exponent 1.
  for (int e : scales)
    for (int j = 1; j <= 64; ++j) {
      double X = std::ldexp(1.0, e), h = std::ldexp(1.5, e / 2);
      std::pair<double, double> small;
      if (!B.split(std::ldexp(1.0, -j) * X * 2.25, small)) continue;
      std::string id = "align_reference/j=" + std::to_string(j) + "/" + xs(e);
      B.add(id, "align_reference", {{h, 1.5}, {-h, 1.5}, small}, {0, 1, 2}, 0.0);
    }
  // Block size: a cancelling pair at (p, p+1) and a tiny term at t. The tiny term survives exactly
  // iff it is not in the same block as the pair (the pair would fix the alignment exponent).
  for (int e : scales) {
    double X = std::ldexp(1.0, e);
    for (int G : {60, 40, 30, 20}) {
      double tiny = X * std::ldexp(1.0, -G);
      std::pair<double, double> tp;
      if (!B.split(tiny, tp)) continue;
      for (int p = 0; p + 1 < K; p += 2)
        for (int t = 0; t < K; ++t) {
          if (t == p || t == p + 1) continue;
          std::string id = "block_size/pair=" + std::to_string(p) + "/tiny=" + std::to_string(t) + "/" + xs(e);
          std::pair<double, double> x1, x2;
          if (!B.split(X, x1) || !B.split(-X, x2)) continue;
          B.add(id, "block_size", {x1, x2, tp}, {p, p + 1, t}, 0.0);
        }
      // C as the big term: C - X at position p.
      for (int p = 0; p < K; ++p) {
        std::pair<double, double> x2;
        if (!B.split(-X, x2)) continue;
        int t = p == 0 ? 1 : 0;
        B.add("block_size/c_pair=" + std::to_string(p) + "/tiny=" + std::to_string(t) + "/" + xs(e), "block_size",
              {x2, tp}, {p, t}, X);
      }
      break;  // the largest G that fits is enough
    }
  }
  // Output rounding (and carries): a sum with more bits than the output holds.
  for (int e : scales)
    for (int j = pout - 3; j <= pout + 4; ++j)
      for (double f : {1.0, 1.5, 1.25, 1.75, 0.75})
        for (int sg : {1, -1}) {
          double X = std::ldexp(1.0, e), small = sg * f * X * std::ldexp(1.0, -j);
          std::string tail = "/j=" + std::to_string(j) + "/f=" + num(f) + (sg > 0 ? "/pos/" : "/neg/") + xs(e);
          B.add_terms("output_rounding/two" + tail, "output_rounding", {X, small}, {0, 1}, 0.0);
          B.add_terms("output_rounding/carry" + tail, "output_rounding", {1.5 * X, 1.5 * X, small}, {0, 1, 2}, 0.0);
          B.add_terms("output_rounding/c" + tail, "output_rounding", {small}, {0}, X);
          B.add_terms("output_rounding/c_neg" + tail, "output_rounding", {-X, small}, {0, 1}, 2 * X);
        }
  // The normalised result cut narrower than the output: a carry lifts the sum's leading bit above
  // the alignment exponent (1.5 X + 1.5 X = 3 X, 4 X), and C alone passes through the cut.
  for (int e : scales)
    for (int j = 2; j <= pout + 1; ++j)
      for (int sg : {1, -1}) {
        double X = std::ldexp(1.0, e), small = sg * X * std::ldexp(1.0, -j);
        std::string tail = "/j=" + std::to_string(j) + (sg > 0 ? "/pos/" : "/neg/") + xs(e);
        B.add_terms("result_cut/carry1" + tail, "result_cut", {1.5 * X, 1.5 * X, small}, {0, 1, 2}, 0.0);
        for (int n : {4, 8, 16}) {  // n equal terms: the sum's leading bit is log2(n) above X
          if (n >= K) continue;
          std::vector<double> terms(n, X);
          std::vector<int> pos(n + 1);
          for (int t = 0; t <= n; ++t) pos[t] = t;
          terms.push_back(small);
          B.add_terms("result_cut/carry_n=" + std::to_string(n) + tail, "result_cut", terms, pos, 0.0);
        }
        B.add_terms("result_cut/c_alone" + tail, "result_cut", {}, {}, X + small);
        B.add_terms("result_cut/c_plus_one" + tail, "result_cut", {X}, {0}, X + small);
      }
  // A zero C joining the alignment with exponent emin_out - d: below it, the aligned sum's quantum
  // stops following the products' own largest exponent. A base term 2^(emin_out - s) and a tiny
  // negative one 2^(emin_out - s - j): the tiny term is lost once j exceeds F (s <= d) or
  // F - (s - d) (s > d). Two variants: one visible under truncation, one a tie under round to
  // nearest once the tiny term is lost.
  for (int s = 0; s <= 14; s += 2)
    for (int j = 1; j <= 40; ++j) {
      const double base = std::ldexp(1.0, fo.emin - s), tiny = -std::ldexp(1.0, fo.emin - s - j);
      const std::string tail = "/s=" + std::to_string(s) + "/j=" + std::to_string(j);
      B.add_terms("zero_c/rz" + tail, "zero_c_alignment", {base, tiny}, {0, 1}, 0.0, true);
      B.add_terms("zero_c/rn" + tail, "zero_c_alignment", {base, 3 * std::ldexp(1.0, fo.emin - pout), tiny}, {0, 1, 2},
                  0.0, true);
      if (s == 4) B.add_terms("zero_c/c_neg_zero" + tail, "zero_c_alignment", {base, tiny}, {0, 1}, -0.0, true);
    }
  // Alignment of a product with a subnormal operand: its exponent sum is the input format's emin
  // plus the other exponent, unless the operands are first converted to a wider format (fp8 ->
  // fp16), where the same value is normal with a smaller exponent, so more of a small term survives.
  {
    const double smin_in = std::ldexp(1.0, fi.emin - (pin - 1));
    for (int s : {0, 4, 8, 12, 15})
      for (double m : {1.0, 3.0})
        for (int j = 1; j <= 40; ++j)
          for (int sg : {1, -1}) {
            double big_a = m * smin_in, big_b = std::ldexp(1.0, s);
            if (big_a >= std::ldexp(1.0, fi.emin)) continue;  // must be subnormal in the input format
            std::pair<double, double> small;
            if (!B.split(sg * big_a * big_b * std::ldexp(1.0, -j), small)) continue;
            std::string id = "operand_conversion/m=" + num(m) + "/s=" + std::to_string(s) + "/j=" + std::to_string(j) +
                             (sg > 0 ? "/pos" : "/neg");
            B.add(id, "operand_conversion", {{big_a, big_b}, small}, {0, 1}, 0.0);
          }
  }
  // Subnormals: inputs, products, C and outputs.
  {
    double smin_in = std::ldexp(1.0, fi.emin - (pin - 1)), nmin_in = std::ldexp(1.0, fi.emin);
    double smin_out = std::ldexp(1.0, fo.emin - (pout - 1)), nmin_out = std::ldexp(1.0, fo.emin);
    for (int j = 0; j <= 40; ++j) {
      double b = std::ldexp(1.0, j);
      B.add("subnormal/input_times_2^" + std::to_string(j), "subnormal_inputs", {{smin_in, b}}, {0}, 0.0);
      B.add("subnormal/input_3_times_2^" + std::to_string(j), "subnormal_inputs", {{3 * smin_in, b}}, {0}, 0.0);
    }
    B.add("subnormal/input_pair", "subnormal_inputs", {{smin_in, smin_in}}, {0}, 0.0);
    B.add("subnormal/c_min", "subnormal_output", {}, {}, smin_out);
    B.add("subnormal/c_min_neg", "subnormal_output", {}, {}, -smin_out);
    B.add("subnormal/c_3min", "subnormal_output", {}, {}, 3 * smin_out);
    B.add("subnormal/c_half_normal", "subnormal_output", {}, {}, nmin_out / 2);
    B.add("subnormal/c_min_plus_product", "subnormal_output", {{1.0, 1.0}, {-1.0, 1.0}}, {0, 1}, smin_out);
    for (int j = 1; j <= 30; ++j) {
      // products just below the output's normal range
      double t = nmin_out * std::ldexp(1.0, -j);
      B.add_terms("subnormal/product_2^-" + std::to_string(j) + "_of_normal_min", "subnormal_output", {t}, {0}, 0.0);
      std::pair<double, double> ab{nmin_in, t / nmin_in};
      B.add("subnormal/product_normal_min_times_2^-" + std::to_string(j), "subnormal_output", {ab}, {0}, 0.0);
      B.add_terms("subnormal/result_normal_min_minus_2^-" + std::to_string(j), "subnormal_output",
                  {nmin_out, -t}, {0, 1}, 0.0);
    }
  }
  // NaN and infinity.
  {
    const double inf = std::numeric_limits<double>::infinity(), nan = std::numeric_limits<double>::quiet_NaN();
    if (fi.has_infinity) {
      B.add("nan_inf/inf_times_1", "nan_inf", {{inf, 1.0}}, {0}, 0.0);
      B.add("nan_inf/inf_times_0", "nan_inf", {{inf, 0.0}}, {0}, 0.0);
      B.add("nan_inf/inf_minus_inf", "nan_inf", {{inf, 1.0}, {-inf, 1.0}}, {0, 1}, 0.0);
    }
    B.add("nan_inf/nan_times_1", "nan_inf", {{nan, 1.0}}, {0}, 0.0);
    B.add("nan_inf/c_inf", "nan_inf", {{1.0, 1.0}}, {0}, inf);
    B.add("nan_inf/c_nan", "nan_inf", {{1.0, 1.0}}, {0}, nan);
    B.add("nan_inf/c_inf_minus_product_inf", "nan_inf", fi.has_infinity ? std::vector<std::pair<double, double>>{{-inf, 1.0}}
                                                                        : std::vector<std::pair<double, double>>{},
          fi.has_infinity ? std::vector<int>{0} : std::vector<int>{}, inf);
  }
  // Per-step rounding (the binary64 candidates, tc_model.hpp): one rounding per product (an FMA
  // chain, in which order) or one for the whole sum, and what a block-fused alignment cuts. u is
  // half an ulp of 1 in the output format; the terms are placed at every pair of positions.
  if (ins.output == Format::fp64 && K >= 2) {
    const double u = std::ldexp(1.0, -pout);
    // every position for k = 4; for longer k the ends and both sides of each step boundary of 4
    std::vector<int> at_k;
    for (int i = 0; i < K; ++i)
      if (K <= 4 || i % 4 == 0 || i % 4 == 3 || i == 1) at_k.push_back(i);
    for (int i : at_k)
      for (int j : at_k) {
        if (i == j) continue;
        const std::string at = "/i=" + std::to_string(i) + "/j=" + std::to_string(j);
        for (double s : {1.0, -1.0}) {
          const std::string sg = s > 0 ? "/pos" : "/neg";
          // C = 1 and two half-ulp ties: per-step rounding to even loses both (1), one rounding
          // keeps their sum (1 + 2u)
          B.add_terms("step_rounding/ties" + at + sg, "step_rounding", {s * u, s * u}, {i, j}, s * 1.0);
          // 1 at i, -1 at j, ties between: the chain's order decides whether the ties meet 1 (lost)
          // or -1 (kept exactly, 1 - u is representable): 0 one way, 2u the other
          for (int m : at_k) {
            if (m == i || m == j) continue;
            B.add_terms("step_rounding/order" + at + "/m=" + std::to_string(m) + sg, "step_rounding",
                        {s * 1.0, -s * 1.0, s * u}, {i, j, m}, 0.0);
          }
          // a tie broken by a far smaller term: one exact rounding sees the sticky bit (1 + 2u);
          // a chain rounds the tie first (1); an alignment that cuts the small term rounds the tie
          for (int e : {60, 100, 200, 900}) {
            B.add_terms("step_rounding/sticky" + at + "/e=" + std::to_string(e) + sg, "step_rounding",
                        {s * u, s * std::ldexp(1.0, -e)}, {i, j}, s * 1.0);
            B.add_terms("step_rounding/sticky_minus" + at + "/e=" + std::to_string(e) + sg, "step_rounding",
                        {s * u, -s * std::ldexp(1.0, -e)}, {i, j}, s * 1.0);
          }
          // a product of two full significands (106 bits) beside C: the low product bits decide the
          // rounding in a fused sum; a chain rounds C + product exactly once too
          const double f = 1 + std::ldexp(1.0, 1 - pin), g2 = 1 - std::ldexp(1.0, -pin);
          B.add("step_rounding/full_products" + at + sg, "step_rounding", {{s * f, f}, {s * g2, g2}}, {i, j}, -s * 2.0);
        }
      }
  }
  // Random tiles: wide exponents, cancellation, every position used.
  {
    std::mt19937_64 rng(kRandomProbeSeed);
    const int prange = std::min(fi.emax, 12);
    for (int r = 0; r < 300; ++r) {
      Probe p{"random/seed=" + std::to_string(kRandomProbeSeed) + "/" + std::to_string(r), "random",
              std::vector<double>(K), std::vector<double>(K), 0.0};
      int spread = (r % 3 == 0) ? 2 : (r % 3 == 1 ? prange : 2 * prange);
      for (int i = 0; i < K; ++i) {
        for (double* v : {&p.a[i], &p.b[i]}) {
          std::uint64_t m = rng();
          double sig = 1 + std::ldexp((double)(m >> (64 - (pin - 1))), -(pin - 1));
          int e = (int)(rng() % (2 * spread + 1)) - spread;
          if (e < fi.emin) e = fi.emin;
          // B in its own format (mixed e4m3 x e5m2); the same draw as A's otherwise
          *v = round_to_format(v == &p.a[i] ? ins.input : ins.format_b(), ((m & 1) ? -1 : 1) * std::ldexp(sig, e),
                               Rounding::nearest_even);
        }
      }
      if (r % 4 == 1 && K >= 2) {  // cancellation: the second half repeats the first with the sign flipped
        for (int i = K / 2; i < K; ++i) {
          p.a[i] = -p.a[i - K / 2];
          p.b[i] = p.b[i - K / 2] * (rng() % 4 == 0 ? 1.0 : 1.0);
        }
        p.a[K - 1] = round_to_format(ins.input, p.a[K - 1] * 0.75, Rounding::nearest_even);
      }
      if (r % 2 == 0) {
        std::uint64_t m = rng();
        double sig = 1 + std::ldexp((double)(m >> 40), -24);
        int e = (int)(rng() % (2 * spread + 1)) - spread;
        p.c = round_to_format(ins.output, ((m & 1) ? -1 : 1) * std::ldexp(sig, e), Rounding::nearest_even);
      }
      B.ids.insert(p.id);
      B.out.push_back(std::move(p));
    }
  }
  return std::move(B.out);
}

RawBits probe_bits(const InstructionInfo& ins, const Probe& p) {
  if (p.raw) return *p.raw;
  RawBits r;
  for (size_t k = 0; k < p.a.size(); ++k) {
    r.a.push_back(to_bits(ins.input, p.a[k]));
    r.b.push_back(to_bits(ins.format_b(), p.b[k]));
  }
  r.c = to_bits(ins.output, p.c);
  return r;
}

double predict(const TcParams& p, const Probe& pr, TcTrace* trace) {
  if (!pr.raw) return dot(p, pr.a.data(), pr.b.data(), (int)pr.a.size(), pr.c, trace);
  // the operands as the instruction reads their bits (tf32: tf32_low_bits)
  std::vector<double> a(pr.raw->a.size()), b(pr.raw->b.size());
  for (size_t k = 0; k < a.size(); ++k) {
    a[k] = decode_operand(p, p.input, pr.raw->a[k]);
    b[k] = decode_operand(p, p.format_b(), pr.raw->b[k]);
  }
  return dot(p, a.data(), b.data(), (int)a.size(), from_bits(p.output, pr.raw->c), trace);
}

std::uint64_t predict_bits(const TcParams& p, const Probe& pr) { return encode_output(p, predict(p, pr)); }

namespace {

// The ways the k products can be dealt to blocks of bs: contiguous (0), or groups of g < bs indices
// round robin; and where C enters.
std::vector<std::pair<int, CEntry>> splits(int bs, int k) {
  std::vector<std::pair<int, CEntry>> v;
  for (CEntry ce : {CEntry::first_block, CEntry::final_add}) {
    v.push_back({0, ce});
    if (bs < k)
      for (int g = 1; g < bs; g *= 2) v.push_back({g, ce});
  }
  return v;
}

// Widths the normalised result may be cut to: none (-1), or within 2 bits of F when that is
// narrower than the output's own fraction.
std::vector<int> result_cuts(int F, int pout) {
  std::vector<int> v{-1};
  for (int c = std::max(1, F - 2); c <= std::min(F + 2, pout - 2); ++c) v.push_back(c);
  return v;
}

// Exponents a zero C may join the alignment with, emin_out - offset (-1: it takes no part). Only
// offered where products can reach below emin_out - 12 (tf32, bf16 -> fp32; fp16 -> fp16): fp16
// and fp8 products never fall that far below fp32's emin, so there it could not be seen.
std::vector<int> zero_c_offsets(const InstructionInfo& ins) {
  const FormatInfo &fi = gemmlab::info(ins.input), &fo = gemmlab::info(ins.output);
  const int min_product_exponent = 2 * (fi.emin - (fi.precision - 1));
  if (min_product_exponent > fo.emin - 12) return {-1};
  // beyond this offset the floor 2^(emin_out - d - 25) would lie below every product of fp16 -> fp16
  const int d_max = std::min(10, fo.emin - 25 - min_product_exponent - 2);
  std::vector<int> v{-1};
  for (int d = 0; d <= d_max; ++d) v.push_back(d);
  return v;
}

// Exact conversions of the operands a datapath may make before multiplying: fp8 through fp16. Only
// e4m3 is listed: e5m2 has fp16's exponent range, so its conversion to fp16 changes no exponent.
std::vector<std::optional<Format>> conversions(Format in) {
  if (in == Format::e4m3) return {std::nullopt, Format::fp16};
  return {std::nullopt};
}

// The binary64 candidates other than the block-fused datapath (tc_model.hpp: arithmetic), first in
// canonical order: the FMA chain in increasing k (MMA-Sim's DMMA model; the same for every step),
// in decreasing k within steps of 2, 4, ..., k, then fused sums over steps of 2, 4, ..., k (a step
// of 1 is the increasing chain); each with subnormals kept or flushed. The other block parameters
// keep their defaults.
std::vector<TcParams> binary64_candidates(const InstructionInfo& ins) {
  std::vector<TcParams> v;
  if (ins.input != Format::fp64 || ins.format_b() != Format::fp64 || ins.output != Format::fp64) return v;
  struct Kind {
    Arithmetic a;
    ChainOrder order;
    int step;
  };
  std::vector<Kind> kinds = {{Arithmetic::fma_chain, ChainOrder::increasing, ins.k}};
  for (int b = 2; b <= ins.k; b *= 2) kinds.push_back({Arithmetic::fma_chain, ChainOrder::decreasing, b});
  for (int b = 2; b <= ins.k; b *= 2) kinds.push_back({Arithmetic::fused_sum, ChainOrder::increasing, b});
  for (auto [a, order, step] : kinds)
    for (bool si : {true, false})
      for (bool so : {true, false}) {
        TcParams p;
        p.arithmetic = a;
        p.chain_order = order;
        p.block_size = step;
        p.input = ins.input;
        p.output = ins.output;
        p.output_rounding = Rounding::nearest_even;
        p.subnormal_inputs = si;
        p.subnormal_output = so;
        v.push_back(p);
      }
  return v;
}

std::vector<TcParams> candidate_grid(const InstructionInfo& ins) {
  std::vector<TcParams> v = binary64_candidates(ins);
  const int pout = gemmlab::info(ins.output).precision;
  // binary64 blocks: C joins the alignment (C added apart from it is summed exactly only for terms
  // of <= 60 bits, tc_model.cpp add()), 52 <= F <= 96 (no fewer fraction bits than the output
  // keeps, which would change a C passing alone; F <= 96: the model's __int128 sums), and no zero-C
  // floor (it would show only on sums below 2^-1100; such a datapath leaves the corpus's subnormal
  // cases unexplained instead). This keeps the grid small enough that a search which finds no
  // candidate (pass 2 below) still takes seconds.
  const bool fp64 = ins.output == Format::fp64;
  const std::vector<int> zero_cs = fp64 ? std::vector<int>{-1} : zero_c_offsets(ins);
  for (int bs = 1; bs <= ins.k; bs *= 2)
    for (auto [g, centry] : splits(bs, ins.k))
      for (auto conv : conversions(ins.input))
        for (int neab = -16; neab <= (fp64 ? 44 : 40); ++neab) {
          if (pout - 1 + neab < 1 || pout - 1 + neab > 96 || (fp64 && neab < 0)) continue;
          for (int cut : result_cuts(pout - 1 + neab, pout))
            for (auto ar : {Rounding::toward_zero, Rounding::floor, Rounding::nearest_even})
              for (auto orr : {Rounding::toward_zero, Rounding::nearest_even})
                for (auto ref : {AlignReference::exponent_sum, AlignReference::value_exponent})
                  for (bool cin : {true, false})
                    for (int zc : zero_cs) {
                      if (zc >= 0 && !cin) continue;  // a zero C can only align where C joins the alignment
                      if (fp64 && (!cin || centry == CEntry::final_add)) continue;
                      for (bool si : {true, false})
                        for (bool so : {true, false}) {
                          TcParams p;
                          p.input = ins.input;
                          p.output = ins.output;
                          p.block_size = bs;
                          p.neab = neab;
                          p.align_rounding = ar;
                          p.output_rounding = orr;
                          p.align_reference = ref;
                          p.c_in_alignment = cin;
                          p.subnormal_inputs = si;
                          p.subnormal_output = so;
                          p.result_fraction_bits = cut;
                          p.zero_c_offset = zc;
                          p.step_interleave = g;
                          p.c_entry = centry;
                          p.operand_conversion = conv;
                          p.input_b = ins.input_b;
                          v.push_back(p);
                        }
                    }
        }
  return v;
}

struct FeatureDef {
  const char* name;
  std::function<std::string(const TcParams&)> value;
  std::function<std::vector<TcParams>(const TcParams&, const InstructionInfo&)> alternatives;
};

// A zero's exponent: fp32_emin (2^-126) differs from input_emin only where an operand format's emin
// is not -126 (bf16 and tf32 have fp32's): elsewhere the two are one model and only one is offered.
// Only the block-fused datapath aligns: the other arithmetics have `none` alone.
std::vector<ZeroOperandExponent> zero_operand_values(const InstructionInfo& ins, const TcParams& p) {
  if (p.arithmetic != Arithmetic::block_fused) return {ZeroOperandExponent::none};
  std::vector<ZeroOperandExponent> v = {ZeroOperandExponent::none, ZeroOperandExponent::input_emin};
  if (gemmlab::info(ins.input).emin != -126 || gemmlab::info(ins.format_b()).emin != -126)
    v.push_back(ZeroOperandExponent::fp32_emin);
  return v;
}

// NaN encodings: propagate (a NaN operand's bits pass, quieted) only for the binary64 arithmetics,
// whose output can carry a payload; the block-fused instructions keep the two fixed patterns.
std::vector<NanEncoding> nan_encoding_values(const TcParams& p) {
  if (p.arithmetic == Arithmetic::block_fused) return {NanEncoding::all_ones, NanEncoding::ieee_quiet};
  return {NanEncoding::all_ones, NanEncoding::ieee_quiet, NanEncoding::propagate};
}

// Overflow: by_rounding is saturate under a toward_zero output and infinity under nearest_even, so
// only the other one is offered beside it.
std::vector<Overflow> overflow_values(const TcParams& p) {
  return {Overflow::by_rounding, p.output_rounding == Rounding::toward_zero ? Overflow::infinity : Overflow::saturate};
}

// The special rules' candidate values (tc_model.hpp): every combination is tried with the inferred
// arithmetic. Canonical order: the model's behaviour before these were parameters comes first.
std::vector<TcParams> special_candidates(const TcParams& base, const InstructionInfo& ins) {
  std::vector<TcParams> v;
  std::vector<Rounding> low = {Rounding::toward_zero};
  if (ins.input == Format::tf32) low.push_back(Rounding::nearest_even);
  for (NanEncoding n : nan_encoding_values(base))
    for (Overflow o : overflow_values(base))
      for (ZeroSign z : {ZeroSign::ieee, ZeroSign::plus, ZeroSign::c_sign})
        for (ZeroOperandExponent ze : zero_operand_values(ins, base))
          for (Rounding lb : low) {
            TcParams q = base;
            q.nan_encoding = n;
            q.overflow = o;
            q.zero_sign = z;
            q.zero_operand_exponent = ze;
            q.tf32_low_bits = lb;
            v.push_back(q);
          }
  return v;
}

// A probe that the special rules decide (its output changes with them under the instruction's
// measured or hypothesised arithmetic), or that carries raw bits: left out of the search of the
// arithmetic's parameters (which would otherwise all fail where the hardware's rule is not the
// default, e.g. an fp16 overflow saturated) and used after it.
bool rule_probe(const Probe& p, const std::vector<TcParams>& special_variants) {
  if (p.feature == "nan_inf" || p.raw.has_value()) return true;
  const std::uint64_t first = predict_bits(special_variants.front(), p);
  for (size_t i = 1; i < special_variants.size(); ++i)
    if (predict_bits(special_variants[i], p) != first) return true;
  return false;
}

// The features of the block-fused datapath alone (the binary64 arithmetics have none of them).
bool block_feature(const std::string& name) {
  return name != "arithmetic" && name != "chain_order" && name != "subnormal_inputs" && name != "subnormal_output" &&
         name != "nan_encoding" && name != "overflow" && name != "zero_sign";
}

std::vector<FeatureDef> feature_defs() {
  std::vector<FeatureDef> f;
  // How products and C are combined (offered for binary64 instructions: binary64_candidates).
  f.push_back({"arithmetic",
               [](const TcParams& p) {
                 const std::string steps = " in steps of " + std::to_string(p.block_size) + " products";
                 switch (p.arithmetic) {
                   case Arithmetic::block_fused: return std::string("block_fused (aligned to the largest exponent, F fraction bits)");
                   case Arithmetic::fma_chain: return "fma_chain (one binary64 FMA per product, from C)" + steps;
                   case Arithmetic::fused_sum:
                     return "fused_sum (C and the step's exact products, rounded once to nearest)" + steps;
                 }
                 return std::string("?");
               },
               [](const TcParams& p, const InstructionInfo& ins) {
                 std::vector<TcParams> v;
                 for (const TcParams& q0 : binary64_candidates(ins))
                   if (q0.arithmetic != p.arithmetic || q0.block_size != p.block_size) {
                     TcParams q = q0;  // the same special rules and subnormal handling as p
                     q.subnormal_inputs = p.subnormal_inputs, q.subnormal_output = p.subnormal_output;
                     q.nan_encoding = p.nan_encoding, q.overflow = p.overflow, q.zero_sign = p.zero_sign;
                     if (!(q == p) && std::find(v.begin(), v.end(), q) == v.end()) v.push_back(q);
                   }
                 return v;
               }});
  f.push_back({"chain_order",
               [](const TcParams& p) {
                 return std::string(to_string(p.chain_order)) + " k (the order of the FMA chain over the products)";
               },
               [](const TcParams& p, const InstructionInfo&) {
                 TcParams q = p;
                 q.chain_order = p.chain_order == ChainOrder::increasing ? ChainOrder::decreasing : ChainOrder::increasing;
                 return std::vector<TcParams>{q};
               }});
  f.push_back({"block_size",
               [](const TcParams& p) { return std::to_string(p.block_size) + " products per fused addition"; },
               [](const TcParams& p, const InstructionInfo& ins) {
                 std::vector<TcParams> v;
                 for (int b = 1; b <= ins.k; b *= 2)
                   if (b != p.block_size) {
                     TcParams q = p;
                     q.block_size = b;
                     if (q.step_interleave >= b) q.step_interleave = 0;
                     v.push_back(q);
                   }
                 return v;
               }});
  f.push_back({"extra_alignment_bits",
               [](const TcParams& p) {
                 return "neab=" + std::to_string(p.neab) + " (" + std::to_string(p.fraction_bits()) +
                        " fraction bits kept below the block's largest exponent)";
               },
               [](const TcParams& p, const InstructionInfo&) {
                 TcParams a = p, b = p;
                 a.neab -= 1;
                 b.neab += 1;
                 return std::vector<TcParams>{a, b};
               }});
  f.push_back({"align_rounding",
               [](const TcParams& p) { return std::string(to_string(p.align_rounding)) + " (bits shifted out in alignment)"; },
               [](const TcParams& p, const InstructionInfo&) {
                 std::vector<TcParams> v;
                 for (auto r : {Rounding::toward_zero, Rounding::floor, Rounding::nearest_even})
                   if (r != p.align_rounding) {
                     TcParams q = p;
                     q.align_rounding = r;
                     v.push_back(q);
                   }
                 return v;
               }});
  f.push_back({"negative_truncation",
               [](const TcParams& p) {
                 switch (p.align_rounding) {
                   case Rounding::toward_zero: return std::string("magnitude (sign-magnitude: toward zero)");
                   case Rounding::floor: return std::string("two's complement (toward -infinity)");
                   default: return std::string("not truncated (rounded to nearest)");
                 }
               },
               [](const TcParams& p, const InstructionInfo&) {
                 TcParams q = p;
                 if (p.align_rounding == Rounding::toward_zero) q.align_rounding = Rounding::floor;
                 else if (p.align_rounding == Rounding::floor) q.align_rounding = Rounding::toward_zero;
                 else return std::vector<TcParams>{};
                 return std::vector<TcParams>{q};
               }});
  f.push_back({"output_rounding",
               [](const TcParams& p) { return std::string(to_string(p.output_rounding)); },
               [](const TcParams& p, const InstructionInfo&) {
                 TcParams q = p;
                 q.output_rounding = p.output_rounding == Rounding::toward_zero ? Rounding::nearest_even
                                                                                     : Rounding::toward_zero;
                 return std::vector<TcParams>{q};
               }});
  f.push_back({"align_reference",
               [](const TcParams& p) { return std::string(to_string(p.align_reference)) + " (exponent a product is aligned by)"; },
               [](const TcParams& p, const InstructionInfo&) {
                 TcParams q = p;
                 q.align_reference = p.align_reference == AlignReference::exponent_sum ? AlignReference::value_exponent
                                                                                      : AlignReference::exponent_sum;
                 return std::vector<TcParams>{q};
               }});
  f.push_back({"c_in_alignment",
               [](const TcParams& p) {
                 return std::string(p.c_in_alignment ? "yes: C is aligned and truncated with the products"
                                                     : "no: C is added exactly");
               },
               [](const TcParams& p, const InstructionInfo&) {
                 TcParams q = p;
                 q.c_in_alignment = !p.c_in_alignment;
                 return std::vector<TcParams>{q};
               }});
  f.push_back({"subnormal_inputs",
               [](const TcParams& p) { return std::string(p.subnormal_inputs ? "kept" : "flushed to zero"); },
               [](const TcParams& p, const InstructionInfo&) {
                 TcParams q = p;
                 q.subnormal_inputs = !p.subnormal_inputs;
                 return std::vector<TcParams>{q};
               }});
  f.push_back({"subnormal_output",
               [](const TcParams& p) { return std::string(p.subnormal_output ? "kept (C and results)" : "flushed to zero"); },
               [](const TcParams& p, const InstructionInfo&) {
                 TcParams q = p;
                 q.subnormal_output = !p.subnormal_output;
                 return std::vector<TcParams>{q};
               }});
  f.push_back({"result_cut",
               [](const TcParams& p) {
                 return p.result_fraction_bits < 0
                            ? std::string("none (the normalised result keeps the output's fraction bits)")
                            : "the normalised result is cut to " + std::to_string(p.result_fraction_bits) +
                                  " fraction bits (" + to_string(p.output_rounding) + ")";
               },
               [](const TcParams& p, const InstructionInfo& ins) {
                 std::vector<TcParams> v;
                 for (int c : result_cuts(p.fraction_bits(), gemmlab::info(ins.output).precision))
                   if (c != p.result_fraction_bits) {
                     TcParams q = p;
                     q.result_fraction_bits = c;
                     v.push_back(q);
                   }
                 return v;
               }});
  f.push_back({"zero_c_alignment",
               [](const TcParams& p) {
                 return p.zero_c_offset < 0
                            ? std::string("a zero C takes no part in the alignment")
                            : "a zero C aligns with exponent emin_out - " + std::to_string(p.zero_c_offset) +
                                  " (the aligned sum's quantum is at least 2^(emin_out - " +
                                  std::to_string(p.zero_c_offset) + " - F))";
               },
               [](const TcParams& p, const InstructionInfo& ins) {
                 std::vector<TcParams> v;
                 for (int d : zero_c_offsets(ins))
                   if (d != p.zero_c_offset && (d < 0 || p.c_in_alignment) &&
                       (p.zero_c_offset < 0 ? d <= 1 : std::abs(d - p.zero_c_offset) == 1 || d < 0)) {
                     TcParams q = p;
                     q.zero_c_offset = d;
                     v.push_back(q);
                   }
                 return v;
               }});
  f.push_back({"block_split",
               [](const TcParams& p) {
                 if (p.step_interleave == 0) return std::string("contiguous blocks of k");
                 return "groups of " + std::to_string(p.step_interleave) + " consecutive k dealt round robin to the " +
                        "blocks";
               },
               [](const TcParams& p, const InstructionInfo& ins) {
                 std::vector<TcParams> v;
                 for (auto [g, ce] : splits(p.block_size, ins.k))
                   if (ce == p.c_entry && g != p.step_interleave) {
                     TcParams q = p;
                     q.step_interleave = g;
                     v.push_back(q);
                   }
                 return v;
               }});
  f.push_back({"c_entry",
               [](const TcParams& p) {
                 return std::string(p.c_entry == CEntry::first_block
                                        ? "first_block (C is the first block's C)"
                                        : "final_add (the blocks start from +0; C is added last, rounded to nearest even)");
               },
               [](const TcParams& p, const InstructionInfo&) {
                 TcParams q = p;
                 q.c_entry = p.c_entry == CEntry::first_block ? CEntry::final_add : CEntry::first_block;
                 return std::vector<TcParams>{q};
               }});
  // The special rules: each alternative differs from p in that rule alone.
  const auto special = [&](const char* name, auto get, auto set, auto values, auto describe) {
    f.push_back({name, [=](const TcParams& p) { return describe(get(p)); },
                 [=](const TcParams& p, const InstructionInfo& ins) {
                   std::vector<TcParams> v;
                   for (auto x : values(p, ins))
                     if (x != get(p)) {
                       TcParams q = p;
                       set(q, x);
                       v.push_back(q);
                     }
                   return v;
                 }});
  };
  special(
      "nan_encoding", [](const TcParams& p) { return p.nan_encoding; },
      [](TcParams& p, NanEncoding x) { p.nan_encoding = x; },
      [](const TcParams& p, const InstructionInfo&) { return nan_encoding_values(p); },
      [](NanEncoding x) {
        switch (x) {
          case NanEncoding::all_ones: return std::string("all_ones (a NaN result is 0x7fffffff / 0x7fff)");
          case NanEncoding::ieee_quiet: return std::string("ieee_quiet (0x7fc00000 / 0x7e00)");
          case NanEncoding::propagate:
            return std::string("propagate (a NaN operand's bits, quieted, sign and payload kept; inf * 0 and inf - inf "
                               "give 0xfff8000000000000)");
        }
        return std::string("?");
      });
  special(
      "overflow", [](const TcParams& p) { return p.overflow; }, [](TcParams& p, Overflow x) { p.overflow = x; },
      [](const TcParams& p, const InstructionInfo&) { return overflow_values(p); },
      [](Overflow x) {
        return std::string(to_string(x)) + (x == Overflow::by_rounding ? " (toward zero: largest finite; nearest: infinity)"
                                            : x == Overflow::infinity  ? " (a sum beyond the range is infinite)"
                                                                       : " (a sum beyond the range is the largest finite)");
      });
  special(
      "zero_sign", [](const TcParams& p) { return p.zero_sign; }, [](TcParams& p, ZeroSign x) { p.zero_sign = x; },
      [](const TcParams&, const InstructionInfo&) {
        return std::vector<ZeroSign>{ZeroSign::ieee, ZeroSign::plus, ZeroSign::c_sign};
      },
      [](ZeroSign x) {
        return std::string(to_string(x)) + (x == ZeroSign::ieee   ? " (-0 only when C and every product are -0)"
                                            : x == ZeroSign::plus ? " (an exact zero is +0)"
                                                                  : " (an exact zero takes C's sign)");
      });
  special(
      "zero_operand_alignment", [](const TcParams& p) { return p.zero_operand_exponent; },
      [](TcParams& p, ZeroOperandExponent x) { p.zero_operand_exponent = x; },
      [](const TcParams& p, const InstructionInfo& ins) { return zero_operand_values(ins, p); },
      [](ZeroOperandExponent x) {
        return std::string(to_string(x)) +
               (x == ZeroOperandExponent::none         ? " (a product with a zero operand takes no part in the alignment)"
                : x == ZeroOperandExponent::input_emin ? " (it aligns at its exponent sum, the zero at its format's emin)"
                                                       : " (it aligns at its exponent sum, the zero at 2^-126)");
      });
  special(
      "tf32_low_bits", [](const TcParams& p) { return p.tf32_low_bits; },
      [](TcParams& p, Rounding x) { p.tf32_low_bits = x; },
      [](const TcParams&, const InstructionInfo& ins) {
        return ins.input == Format::tf32 ? std::vector<Rounding>{Rounding::toward_zero, Rounding::nearest_even}
                                         : std::vector<Rounding>{Rounding::toward_zero};
      },
      [](Rounding x) {
        return std::string(to_string(x)) + (x == Rounding::toward_zero ? " (the low 13 bits of the fp32 container are ignored)"
                                                                       : " (the fp32 container is rounded to nearest tf32)");
      });
  f.push_back({"operand_conversion",
               [](const TcParams& p) {
                 return p.operand_conversion ? std::string("operands converted to ") + gemmlab::info(*p.operand_conversion).name +
                                                   " before the multiply (alignment exponents of that format)"
                                             : std::string("none (alignment exponents of the input format)");
               },
               [](const TcParams& p, const InstructionInfo& ins) {
                 std::vector<TcParams> v;
                 for (auto c : conversions(ins.input))
                   if (c != p.operand_conversion) {
                     TcParams q = p;
                     q.operand_conversion = c;
                     v.push_back(q);
                   }
                 return v;
               }});
  return f;
}

}  // namespace

bool reproduces(const TcParams& p, const ProbeOutcome& o) { return predict_bits(p, o.probe) == o.output_bits; }

Inference infer(const InstructionInfo& ins, const std::vector<ProbeOutcome>& outcomes) {
  Inference r;
  std::vector<TcParams> grid = candidate_grid(ins);
  r.candidates_tried = (long long)grid.size();
  // Order probes so that the most discriminating fail first (random tiles, then targeted ones).
  // The outcomes that the special rules decide are left out of the search (rule_probe).
  std::vector<char> by_rule(outcomes.size());
  {
    // The special rules' starting point: the active generation's model, else Hopper's measured one,
    // else the first generation that models the instruction (Volta's mma.m8n8k4, Blackwell's tcgen05).
    std::optional<TcParams> known = model_params(ins.id);
    if (!known) known = measured_hopper_params(ins.id);
    for (Generation g : all_generations())
      if (!known) known = generation_params(g, ins.id);
    TcParams base = known.value_or(TcParams{});
    if (base.block_size > ins.k) base.block_size = ins.k;
    base.input = ins.input, base.input_b = ins.input_b, base.output = ins.output;
    const std::vector<TcParams> variants = special_candidates(base, ins);
    for (size_t i = 0; i < outcomes.size(); ++i) by_rule[i] = rule_probe(outcomes[i].probe, variants);
  }
  std::vector<int> order, all_order;
  for (int i = 0; i < (int)outcomes.size(); ++i)
    if (outcomes[i].probe.feature == "random" && !by_rule[i]) order.push_back(i);
  for (int i = 0; i < (int)outcomes.size(); ++i)
    if (outcomes[i].probe.feature != "random" && !by_rule[i]) order.push_back(i);
  all_order = order;
  for (int i = 0; i < (int)outcomes.size(); ++i)
    if (by_rule[i]) all_order.push_back(i);

  // Pass 1: candidates that reproduce every probe. Most candidates fail on one of a few probes:
  // the probe that rejected the last candidate moves to the front (order affects speed only).
  int best = 0;
  std::vector<TcParams> best_set;
  const unsigned n_threads = std::max(1u, std::min(16u, std::thread::hardware_concurrency()));
  {
    std::vector<char> ok(grid.size(), 0);
    std::vector<std::thread> threads;
    for (unsigned w = 0; w < n_threads; ++w)
      threads.emplace_back([&, w] {
        std::vector<int> fast = order;
        for (size_t g = w; g < grid.size(); g += n_threads) {
          bool good = true;
          for (size_t t = 0; t < fast.size(); ++t)
            if (!reproduces(grid[g], outcomes[fast[t]])) {
              std::rotate(fast.begin(), fast.begin() + t, fast.begin() + t + 1);
              good = false;
              break;
            }
          ok[g] = good;
        }
      });
    for (auto& t : threads) t.join();
    for (size_t g = 0; g < grid.size(); ++g)
      if (ok[g]) best_set.push_back(grid[g]);
  }
  // Pass 2 (the hardware does something the model does not): fewest unexplained probes, in
  // parallel over slices of the grid.
  if (best_set.empty()) {
    const unsigned nt = n_threads;
    std::vector<int> slice_best(nt, std::numeric_limits<int>::max());
    std::vector<std::vector<TcParams>> slice_set(nt);
    std::vector<std::thread> threads;
    for (unsigned w = 0; w < nt; ++w)
      threads.emplace_back([&, w] {
        std::vector<int> fast = order;
        int& b = slice_best[w];
        for (size_t g = w; g < grid.size(); g += nt) {
          const TcParams& p = grid[g];
          int miss = 0;
          for (size_t t = 0; t < fast.size(); ++t)
            if (!reproduces(p, outcomes[fast[t]]) && ++miss > b) {
              std::rotate(fast.begin(), fast.begin() + t, fast.begin() + t + 1);
              break;
            }
          if (miss < b) {
            b = miss;
            slice_set[w].clear();
          }
          if (miss == b) slice_set[w].push_back(p);
        }
      });
    for (auto& t : threads) t.join();
    best = *std::min_element(slice_best.begin(), slice_best.end());
    for (const TcParams& p : grid)  // canonical (grid) order among the winners
      for (unsigned w = 0; w < nt; ++w)
        if (slice_best[w] == best && std::find(slice_set[w].begin(), slice_set[w].end(), p) != slice_set[w].end())
          best_set.push_back(p);
  }
  r.params = best_set.front();
  r.mismatching_probes = best;
  r.best_candidates = (int)best_set.size();

  // The special rules, with the arithmetic's best candidates: every candidate with every combination
  // of the rules' values on every outcome (the corpus's cases and the probes the rules decide
  // included). Those that explain the most tie; a feature on which they disagree is reported
  // ambiguous (not decided by these outcomes).
  {
    // the outcomes the rules decide first: a wrong combination fails there, at once
    std::vector<int> rules_first(all_order.begin() + (long)order.size(), all_order.end());
    rules_first.insert(rules_first.end(), order.begin(), order.end());
    int sbest = std::numeric_limits<int>::max();
    std::vector<TcParams> joint;
    for (const TcParams& base : best_set)
      for (const TcParams& q : special_candidates(base, ins)) {
        int miss = 0;
        for (int i : rules_first)
          if (!reproduces(q, outcomes[i]) && ++miss > sbest) break;
        if (miss < sbest) {
          sbest = miss;
          joint.clear();
        }
        if (miss == sbest) joint.push_back(q);
      }
    best_set = joint;
    r.params = best_set.front();
    r.mismatching_probes = sbest;
    r.best_candidates = (int)best_set.size();
  }

  auto evidence_for = [&](const std::vector<TcParams>& alts, std::string& why) -> const ProbeOutcome* {
    // the first probe that the chosen params reproduce and an alternative does not
    for (const TcParams& alt : alts)
      for (int i : all_order) {
        const ProbeOutcome& o = outcomes[i];
        if (o.probe.feature == "random") continue;
        if (reproduces(r.params, o) && !reproduces(alt, o)) {
          double pa = predict(alt, o.probe);
          why = "; rules out " + alt.describe() + " (it predicts " + num(pa) + " = " +
                hex_bits(encode_output(alt, pa), ins.output) + ")";
          return &o;
        }
      }
    for (const TcParams& alt : alts)
      for (int i : all_order) {
        const ProbeOutcome& o = outcomes[i];
        if (reproduces(r.params, o) && !reproduces(alt, o)) {
          why = "; rules out " + alt.describe();
          return &o;
        }
      }
    return nullptr;
  };

  auto obs_of = [&](const ProbeOutcome& o) {
    return hex_bits(o.output_bits, ins.output) + " = " + num(from_bits(ins.output, o.output_bits));
  };

  // Exact products: the probes' exact answers.
  for (const ProbeOutcome& o : outcomes)
    if (o.probe.feature == "exact_products" && ins.output != Format::fp64) {  // fp64: step_rounding says it
      double exact = 0;
      // exact in double: k * 22-bit products with small spread
      for (size_t i = 0; i < o.probe.a.size(); ++i) exact += o.probe.a[i] * o.probe.b[i];
      exact += o.probe.c;
      double obs = from_bits(ins.output, o.output_bits);
      // the output format may not hold the exact value (fp16 output): then any faithful rounding of it
      double rz = round_to_format(ins.output, exact, Rounding::toward_zero);
      double rn = round_to_format(ins.output, exact, Rounding::nearest_even);
      bool ok = obs == exact || (exact != rz && (obs == rz || obs == rn));
      r.findings.push_back({"exact_products",
                            std::string(ok ? "yes" : "no") + ": " + o.probe.id + " exact " + num(exact) +
                                (exact != rz ? " (not representable in the output; rounds to " + num(rz) + " or " + num(rn) + ")" : "") +
                                ", observed " + num(obs),
                            describe_inputs(o.probe), obs_of(o)});
      if (ok) break;
    }

  const bool binary64 = !binary64_candidates(ins).empty();
  for (const FeatureDef& fd : feature_defs()) {
    // arithmetic and chain_order are offered only for binary64 instructions (their other rows stay
    // as before); a block feature means nothing for another arithmetic, nor chain_order for a block
    if (!binary64 && (std::string(fd.name) == "arithmetic" || std::string(fd.name) == "chain_order")) continue;
    if (r.params.arithmetic != Arithmetic::block_fused && block_feature(fd.name)) continue;
    if (std::string(fd.name) == "chain_order" && r.params.arithmetic != Arithmetic::fma_chain) continue;
    std::set<std::string> vals;
    for (const TcParams& p : best_set) vals.insert(fd.value(p));
    std::string observed = fd.value(r.params);
    if (vals.size() > 1) {
      r.ambiguous.push_back(fd.name);
      observed = "ambiguous:";
      for (const std::string& v : vals) observed += " [" + v + "]";
    }
    std::string why;
    const ProbeOutcome* ev = evidence_for(fd.alternatives(r.params, ins), why);
    if (ev) r.findings.push_back({fd.name, observed, describe_inputs(ev->probe), obs_of(*ev)});
    else r.findings.push_back({fd.name, observed + " (no probe distinguishes it)", "", ""});
    if (ev) r.findings.back().observed += " [evidence " + ev->probe.id + why + "]";
  }

  if (r.params.arithmetic != Arithmetic::block_fused) {
    r.findings.push_back({"model_family",
                          r.params.arithmetic == Arithmetic::fma_chain
                              ? std::string("one correctly rounded binary64 FMA per product, from C, ") +
                                    to_string(r.params.chain_order) + " k within steps of " +
                                    std::to_string(r.params.block_size) + " products taken in increasing k"
                              : "one exact sum of C and the products of each step of " +
                                    std::to_string(r.params.block_size) +
                                    " (one rounding to nearest even per step, the steps chained in increasing k)",
                          "", ""});
  } else {
    r.findings.push_back({"normalisation",
                          r.mismatching_probes == 0
                              ? "once per block, after the exact sum of the aligned terms (carries kept): all " +
                                    std::to_string(outcomes.size()) + " probes consistent"
                              : "model with one normalisation per block leaves " + std::to_string(r.mismatching_probes) +
                                    " probes unexplained",
                          "", ""});
    r.findings.push_back({"accumulator_bits",
                          std::to_string(r.params.fraction_bits() + 1) + " significant bits per aligned term at the block's largest exponent, plus carry bits",
                          "", ""});
    r.findings.push_back(
        {"monotonicity",
         r.params.align_rounding == Rounding::nearest_even
             ? "not established (derived from the model)"
             : "not monotone (derived from the model): raising the largest term's exponent shifts every other term's bits out",
         "", ""});
  }
  // NaN / inf: observed directly.
  for (const ProbeOutcome& o : outcomes)
    if (o.probe.feature == "nan_inf")
      r.findings.push_back({"nan_inf", o.probe.id + ": " + num(from_bits(ins.output, o.output_bits)) +
                                           (reproduces(r.params, o) ? " (the model reproduces it)" : " (the model does not reproduce it)"),
                            describe_inputs(o.probe), obs_of(o)});
  // Model fit: every unexplained probe, for the record.
  int shown = 0;
  for (int i : all_order) {
    const ProbeOutcome& o = outcomes[i];
    if (reproduces(r.params, o) || shown >= 20) continue;
    ++shown;
    double pr = predict(r.params, o.probe);
    r.findings.push_back({"model_mismatch", o.probe.id + ": model predicts " + num(pr) + " = " + hex_bits(encode_output(r.params, pr), ins.output),
                          describe_inputs(o.probe), obs_of(o)});
  }
  r.findings.push_back({"model_fit",
                        std::to_string(outcomes.size() - r.mismatching_probes) + "/" + std::to_string(outcomes.size()) +
                            " probes reproduced by " + r.params.describe() + "; " + std::to_string(r.best_candidates) +
                            " of " + std::to_string(r.candidates_tried) + " candidates tie",
                        "", ""});
  return r;
}

}  // namespace gemmlab::tc
