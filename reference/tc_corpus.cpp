// The adversarial corpus; see tc_corpus.hpp for the classes.
#include "reference/tc_corpus.hpp"

#include <algorithm>
#include <cmath>
#include <functional>

#include "reference/rng.hpp"

namespace gemmlab::tc {

namespace {

std::uint64_t name_hash(const std::string& s) {  // FNV-1a: a stable stream per (class, instruction)
  std::uint64_t h = 0xcbf29ce484222325ull;
  for (unsigned char ch : s) h = (h ^ ch) * 0x100000001b3ull;
  return h;
}

// Builds one case: values and the bits the hardware is fed, entry by entry.
struct Case {
  const InstructionInfo& ins;
  Probe p;
  RawBits raw;
  Case(const InstructionInfo& i, const std::string& id, const std::string& cls) : ins(i) {
    p.id = id;
    p.feature = cls;
    p.a.assign(ins.k, 0.0);
    p.b.assign(ins.k, 0.0);
    raw.a.assign(ins.k, 0);
    raw.b.assign(ins.k, 0);
  }
  void a(int k, double x) { raw.a[k] = to_bits(ins.input, x); p.a[k] = x; }
  void b(int k, double x) { raw.b[k] = to_bits(ins.format_b(), x); p.b[k] = x; }
  void c(double x) { raw.c = to_bits(ins.output, x); p.c = x; }
  void a_bits(int k, std::uint64_t bits) { raw.a[k] = bits; p.a[k] = from_bits(ins.input, bits); }
  void b_bits(int k, std::uint64_t bits) { raw.b[k] = bits; p.b[k] = from_bits(ins.format_b(), bits); }
  void c_bits(std::uint64_t bits) { raw.c = bits; p.c = from_bits(ins.output, bits); }
  Probe done() {
    p.raw = raw;
    return std::move(p);
  }
};

struct Gen {
  const InstructionInfo& ins;
  SplitMix r;
  const FormatInfo &fa, &fb, &fo;
  const int K;

  Gen(const InstructionInfo& i, std::uint64_t seed)
      : ins(i), r{seed}, fa(gemmlab::info(i.input)), fb(gemmlab::info(i.format_b())), fo(gemmlab::info(i.output)), K(i.k) {}

  std::uint64_t u(std::uint64_t n) { return n ? r.next() % n : 0; }
  int irange(int lo, int hi) { return hi < lo ? lo : lo + (int)u((std::uint64_t)(hi - lo + 1)); }  // inclusive
  bool coin() { return r.next() & 1; }
  double sign() { return coin() ? -1.0 : 1.0; }

  // A value of format f with exponent e (clamped into the normal range) and a random significand;
  // full = true: all significand bits set (the largest significand of the binade).
  double normal(const FormatInfo& f, int e, bool full = false) {
    e = std::clamp(e, f.emin, f.emax);
    const std::uint64_t top = std::uint64_t(1) << (f.precision - 1);
    const std::uint64_t m = top + (full ? top - 1 : u(top));
    double x = std::ldexp((double)m, e - (f.precision - 1));
    if (x > f.max_finite) x = f.max_finite;  // e4m3's S.1111.111 is NaN
    return x;
  }
  double subnormal(const FormatInfo& f) {
    const std::uint64_t top = std::uint64_t(1) << (f.precision - 1);
    return std::ldexp((double)(1 + u(top - 1)), f.emin - (f.precision - 1));
  }
  // Any finite non-zero value of f, exponent uniform over its range (subnormals included).
  double any(const FormatInfo& f) {
    const int e = irange(f.emin - 1, f.emax);
    return sign() * (e < f.emin ? subnormal(f) : normal(f, e));
  }
  // A moderate value: exponent in [-s, s].
  double moderate(const FormatInfo& f, int s = 3) { return sign() * normal(f, irange(-s, s)); }
  // A NaN pattern of format f with a random payload and sign.
  std::uint64_t nan_bits(const FormatInfo& f) {
    const int bits = f.storage_bits, frac = f.precision - 1;
    const std::uint64_t sign_bit = coin() ? std::uint64_t(1) << (bits - 1) : 0;
    if (!f.has_infinity) return sign_bit | ((std::uint64_t(1) << (bits - 1)) - 1);  // e4m3: S.1111.111
    const std::uint64_t exp = ((std::uint64_t(1) << (bits - 1 - frac)) - 1) << frac;
    std::uint64_t payload = 0;
    while (payload == 0) payload = r.next() & ((std::uint64_t(1) << frac) - 1);
    if (coin()) payload |= std::uint64_t(1) << (frac - 1);  // quiet
    return sign_bit | exp | payload;
  }
  // Product exponents reachable by this instruction's operands.
  int product_emax() const { return fa.emax + fb.emax; }
  int product_emin() const { return (fa.emin - fa.precision + 1) + (fb.emin - fb.precision + 1); }
  // A (normal x normal) product with exponent sum E: the two operands, or false when no split exists.
  bool product(int E, double& x, double& y, bool full = false) {
    const int lo = std::max(fa.emin, E - fb.emax), hi = std::min(fa.emax, E - fb.emin);
    if (lo > hi) return false;
    const int ea = irange(lo, hi);
    x = sign() * normal(fa, ea, full);
    y = normal(fb, E - ea, full);
    return true;
  }
  int pos() { return (int)u((std::uint64_t)K); }
  // Distinct random positions.
  std::vector<int> positions(int n) {
    std::vector<int> v(K);
    for (int k = 0; k < K; ++k) v[k] = k;
    for (int k = 0; k < K; ++k) std::swap(v[k], v[k + (int)u((std::uint64_t)(K - k))]);
    v.resize(std::min(n, K));
    return v;
  }
  // Fills the free positions of a case with zeros of random sign (a = +-0 or b = +-0, the other random).
  void signed_zeros(Case& c, const std::vector<int>& used, bool extreme_partners = false) {
    for (int k = 0; k < K; ++k) {
      if (std::find(used.begin(), used.end(), k) != used.end()) continue;
      const double partner_a = extreme_partners && coin() ? sign() * normal(fa, coin() ? fa.emax : fa.emin) : moderate(fa);
      const double partner_b = extreme_partners && coin() ? sign() * normal(fb, coin() ? fb.emax : fb.emin) : moderate(fb);
      switch (u(3)) {
        case 0: c.a(k, sign() * 0.0); c.b(k, partner_b); break;
        case 1: c.a(k, partner_a); c.b(k, sign() * 0.0); break;
        default: c.a(k, sign() * 0.0); c.b(k, sign() * 0.0); break;
      }
    }
  }
  double output_or_zero(double x) { return representable(ins.output, x) ? x : 0.0; }
};

using ClassFn = std::function<void(Gen&, Case&, int)>;

void nan_inf(Gen& g, Case& c, int i, int which) {  // which: 0 A, 1 B, 2 C
  const FormatInfo& f = which == 0 ? g.fa : which == 1 ? g.fb : g.fo;
  for (int k = 0; k < g.K; ++k)
    if (g.u(3) != 0) {
      c.a(k, g.moderate(g.fa));
      c.b(k, g.moderate(g.fb));
    }
  if (g.coin()) c.c(g.moderate(g.fo));
  const double inf = std::numeric_limits<double>::infinity();
  const int j = g.pos();
  const int variant = f.has_infinity ? i % 6 : 0;  // e4m3 has NaN only
  auto set = [&](int k, double x) {
    if (which == 0) c.a(k, x);
    else if (which == 1) c.b(k, x);
    else c.c(x);
  };
  auto set_bits = [&](int k, std::uint64_t bits) {
    if (which == 0) c.a_bits(k, bits);
    else if (which == 1) c.b_bits(k, bits);
    else c.c_bits(bits);
  };
  auto partner = [&](int k, double x) {  // the other operand at position k
    if (which == 0) c.b(k, x);
    else if (which == 1) c.a(k, x);
  };
  switch (variant) {
    case 0: set_bits(j, g.nan_bits(f)); break;                    // NaN, random payload and sign
    case 1: set(j, g.sign() * inf); break;                        // +-inf times a finite partner
    case 2: set(j, g.sign() * inf); partner(j, g.sign() * 0.0); break;  // inf * 0 (C: inf alone)
    case 3: {                                                     // inf - inf: two positions, or C against a product
      set(j, inf);
      if (which == 2) {  // C = +inf against a -inf product where an operand format has infinities
        if (g.fa.has_infinity) c.a(j, -inf), c.b(j, g.normal(g.fb, 0));
        else if (g.fb.has_infinity) c.b(j, -inf), c.a(j, g.normal(g.fa, 0));
      } else {
        const int m = (j + 1 + (int)g.u(g.K - 1)) % g.K;
        set(m, -inf);
        partner(m, g.normal(which == 0 ? g.fb : g.fa, 0));
        partner(j, g.normal(which == 0 ? g.fb : g.fa, 0));
      }
      break;
    }
    case 4: set_bits(j, g.nan_bits(f)); partner(j, g.sign() * 0.0); break;  // NaN * 0, or NaN C with zero products
    default: {                                                    // an infinity against the opposite infinite C
      const double s = g.sign();
      set(j, s * inf);
      if (which != 2) c.c(g.fo.has_infinity ? -s * inf : g.moderate(g.fo));
      else {
        if (g.fa.has_infinity) c.a(j, -s * inf), c.b(j, g.normal(g.fb, 0));
        else if (g.fb.has_infinity) c.b(j, -s * inf), c.a(j, g.normal(g.fa, 0));
      }
      break;
    }
  }
}

void overflow_before(Gen& g, Case& c, int i) {
  const int top = g.product_emax();
  const std::vector<int> at = g.positions(4);
  double x, y;
  if (top > g.fo.emax) {  // products can exceed the output's range on their own
    const int E = g.irange(g.fo.emax + 1, top);
    switch (i % 4) {
      case 0:  // one product beyond the range, others moderate
        if (g.product(E, x, y)) c.a(at[0], x), c.b(at[0], y);
        if (g.K > 1) c.a(at[1], g.moderate(g.fa)), c.b(at[1], g.moderate(g.fb));
        break;
      case 1:  // +P - P beyond the range, cancelling exactly, and a small product the alignment cuts
        if (g.product(E, x, y)) {
          c.a(at[0], x), c.b(at[0], y);
          if (g.K > 1) c.a(at[1], -x), c.b(at[1], y);
        }
        if (g.K > 2 && g.product(g.irange(-4, 4), x, y)) c.a(at[2], x), c.b(at[2], y);
        break;
      case 2:  // a product beyond the range against C in the top binade (partial cancellation)
        if (g.product(E, x, y)) c.a(at[0], x), c.b(at[0], y);
        c.c((x < 0 ? 1 : -1) * g.normal(g.fo, g.fo.emax, g.coin()));
        break;
      default:  // several beyond the range, mixed signs
        for (int t = 0; t < (int)at.size(); ++t)
          if (g.product(g.irange(g.fo.emax - 2, top), x, y)) c.a(at[t], x), c.b(at[t], y);
        break;
    }
  } else {  // the products stay in range: C in the top binade with the largest products
    c.c(g.sign() * g.normal(g.fo, g.fo.emax, g.coin()));
    for (int t = 0; t < (int)at.size(); ++t)
      if (g.product(top - (int)g.u(3), x, y, g.coin())) {
        c.a(at[t], (i % 2 == 0) == (c.p.c > 0) ? std::fabs(x) : -std::fabs(x));
        c.b(at[t], y);
      }
  }
}

void overflow_after(Gen& g, Case& c, int i) {
  const double max = g.fo.max_finite;
  const int F = (g.fo.precision - 1) + 2;  // the ~F places an alignment keeps below the largest term
  const int top = std::min(g.product_emax(), g.fo.emax);
  double x, y;
  const double s = g.sign();
  switch (i % 4) {
    case 0: {  // C = +-max and same-sign products from just below its last place to the top
      c.c(s * max);
      for (int t : g.positions(g.irange(1, 3)))
        if (g.product(std::min(top, g.fo.emax - g.irange(g.fo.precision - 2, F + 3)), x, y, g.coin()))
          c.a(t, s * std::fabs(x)), c.b(t, y);
      break;
    }
    case 1: {  // products in the top binade the output reaches, same sign: a carry over the top
      for (int t : g.positions(g.irange(2, std::min(g.K, 8))))
        if (g.product(top, x, y, g.coin())) c.a(t, s * std::fabs(x)), c.b(t, y);
      if (g.coin()) c.c(s * g.normal(g.fo, g.fo.emax - (int)g.u(2)));
      break;
    }
    case 2: {  // C = +-max and an opposite product bringing it just back in range (or not)
      c.c(s * max);
      for (int t : g.positions(g.irange(1, 2)))
        if (g.product(std::min(top, g.fo.emax - g.irange(g.fo.precision - 3, F + 2)), x, y))
          c.a(t, (g.coin() ? -s : s) * std::fabs(x)), c.b(t, y);
      break;
    }
    default: {  // C a few last places below max, and products adding about that many
      const double ulp = std::ldexp(1.0, g.fo.emax - (g.fo.precision - 1));
      c.c(s * (max - ulp * (double)g.u(4)));
      for (int t : g.positions(g.irange(1, 4)))
        if (g.product(std::min(top, g.fo.emax - (g.fo.precision - 1) + g.irange(-3, 1)), x, y))
          c.a(t, s * std::fabs(x)), c.b(t, y);
      break;
    }
  }
}

void exact_cancellation(Gen& g, Case& c, int i) {
  std::vector<int> used;
  const int variant = i % 4;
  if (variant != 0) {  // variant 0: every product +-0; otherwise pairs +P, -P, and P against C
    const int pairs = g.irange(1, std::max(1, g.K / 4));
    std::vector<int> at = g.positions(2 * pairs);
    const int spread = std::min(g.product_emax(), 20);
    double x, y;
    for (int t = 0; t + 1 < (int)at.size(); t += 2)
      if (g.product(g.irange(-spread, spread), x, y)) {
        c.a(at[t], x), c.b(at[t], y);
        if (g.coin()) c.a(at[t + 1], -x), c.b(at[t + 1], y);
        else c.a(at[t + 1], x), c.b(at[t + 1], -y);
        used.push_back(at[t]), used.push_back(at[t + 1]);
      }
    if (variant == 3 && at.size() >= 1 && g.product(g.irange(-spread, spread), x, y)) {  // P cancelled by C
      const double cp = g.output_or_zero(-x * y);
      if (cp != 0) {
        const int k = used.empty() ? at[0] : used.back();
        c.a(k, x), c.b(k, y);
        c.c(cp);
      }
    }
  }
  if (c.p.c == 0) c.c(g.coin() ? -0.0 : 0.0);  // C = +0 and -0
  if (variant == 0 && g.coin()) {  // every product -0: the one case where IEEE 754 would give -0
    for (int k = 0; k < g.K; ++k) switch (g.u(3)) {
        case 0: c.a(k, -0.0), c.b(k, g.coin() ? 0.0 : std::fabs(g.moderate(g.fb))); break;
        case 1: c.a(k, std::fabs(g.moderate(g.fa))), c.b(k, -0.0); break;
        default: c.a(k, 0.0), c.b(k, -std::fabs(g.moderate(g.fb))); break;
      }
    return;
  }
  g.signed_zeros(c, used);
}

void zero_operands(Gen& g, Case& c, int i) {
  // zeros opposite extreme exponents
  std::vector<int> at = g.positions(std::min(g.K, g.irange(2, 5)));
  const int nz = std::max(1, (int)at.size() - g.irange(1, 2));
  int zero_ref = std::numeric_limits<int>::min();
  for (int t = 0; t < nz; ++t) {
    const bool zero_in_a = g.coin();
    const bool big = i % 3 != 2;  // mostly the largest exponent: it is the one that can set an alignment
    const FormatInfo& other = zero_in_a ? g.fb : g.fa;
    const double partner = g.sign() * (big ? g.normal(other, other.emax - (int)g.u(2)) : g.normal(other, other.emin));
    if (zero_in_a) c.a(at[t], g.sign() * 0.0), c.b(at[t], partner);
    else c.a(at[t], partner), c.b(at[t], g.sign() * 0.0);
    zero_ref = std::max(zero_ref, (zero_in_a ? g.fa.emin : g.fb.emin) + std::ilogb(partner));
  }
  // small non-zero products below the zero's exponent sum, whose low bits its alignment would cut
  double x, y;
  for (int t = nz; t < (int)at.size(); ++t) {
    const int E = std::max(g.product_emin() + g.fa.precision + g.fb.precision, zero_ref - g.irange(1, 40));
    if (g.product(E, x, y, g.coin())) c.a(at[t], x), c.b(at[t], y);
  }
  if (i % 4 == 1) c.c(g.sign() * g.normal(g.fo, std::max(g.fo.emin, zero_ref - g.irange(1, 30))));
  if (i % 4 == 3) c.c(g.coin() ? -0.0 : 0.0);
  g.signed_zeros(c, at, true);
}

void subnormal(Gen& g, Case& c, int i) {
  double x, y;
  std::vector<int> at = g.positions(g.irange(1, 4));
  for (int t : at) switch ((i + t) % 4) {
      case 0: c.a(t, g.sign() * g.subnormal(g.fa)), c.b(t, g.sign() * g.normal(g.fb, g.irange(g.fb.emin, g.fb.emax))); break;
      case 1: c.a(t, g.sign() * g.normal(g.fa, g.irange(g.fa.emin, g.fa.emax))), c.b(t, g.sign() * g.subnormal(g.fb)); break;
      case 2: c.a(t, g.sign() * g.subnormal(g.fa)), c.b(t, g.sign() * g.subnormal(g.fb)); break;
      default:  // a product just below (or around) the output's smallest normal
        if (g.product(std::max(g.product_emin() + 4, g.fo.emin - g.irange(-2, 30)), x, y)) c.a(t, x), c.b(t, y);
        break;
    }
  switch (i % 3) {
    case 0: c.c(g.sign() * g.subnormal(g.fo)); break;
    case 1: c.c(g.sign() * g.normal(g.fo, g.fo.emin + (int)g.u(3))); break;  // a sum that may fall below
    default: break;
  }
}

void top_carry(Gen& g, Case& c, int i) {
  const int E = g.irange(std::max(g.product_emin() + 8, -20), std::min(g.product_emax(), 20));
  const double s = g.sign();
  double x, y;
  for (int t : g.positions(g.irange(2, g.K)))
    if (g.product(E, x, y, true)) c.a(t, s * std::fabs(x)), c.b(t, y);
  if (i % 2 == 0) c.c(s * g.normal(g.fo, E + (int)g.u(2), true));
  if (i % 3 == 0) {  // and one small term below, as the carry shifts the last place
    const int t = g.pos();
    if (c.p.a[t] == 0 && g.product(E - g.irange(10, 30), x, y)) c.a(t, x), c.b(t, y);
  }
}

void c_alone(Gen& g, Case& c, int i) {
  switch (i % 5) {
    case 0: c.c(g.any(g.fo)); break;
    case 1: c.c(g.sign() * g.normal(g.fo, g.irange(g.fo.emin, g.fo.emax), true)); break;
    case 2: c.c(g.sign() * g.subnormal(g.fo)); break;
    case 3: c.c(g.sign() * g.fo.max_finite); break;
    default: c.c(g.sign() * g.normal(g.fo, g.irange(-4, 4))); break;
  }
  g.signed_zeros(c, {}, i % 2 == 0);
}

void exponent_gap(Gen& g, Case& c, int i) {
  const int F = (g.fo.precision - 1) + 2;
  double x, y;
  const int pmax = std::min(g.product_emax(), g.fo.emax), pmin = g.product_emin() + g.fa.precision + g.fb.precision - 2;
  int Ep, Ec;
  switch (i % 4) {
    case 0: Ep = g.irange(pmin, pmin + 4), Ec = g.fo.emax - (int)g.u(3); break;         // C far above the products
    case 1: Ep = pmax - (int)g.u(3), Ec = g.fo.emin - (int)g.u(g.fo.precision - 1); break;  // C far below (subnormal)
    case 2: Ep = g.irange(-8, 8), Ec = Ep + (g.coin() ? 1 : -1) * g.irange(F - 3, F + 3); break;  // around F apart
    default: Ep = g.irange(-8, 8), Ec = Ep + g.irange(-2, 2); break;                    // no gap
  }
  for (int t : g.positions(g.irange(1, 3)))
    if (g.product(std::clamp(Ep, g.product_emin(), g.product_emax()), x, y, g.coin())) c.a(t, x), c.b(t, y);
  const double cv = Ec < g.fo.emin ? g.subnormal(g.fo) : g.normal(g.fo, Ec, g.coin());
  c.c(g.sign() * cv);
}

void tf32_low_bits(Gen& g, Case& c, int i) {
  // fp32 containers with random low 13 bits (a tie, bit 12 alone, now and then)
  auto container = [&](bool subnormal_value) {
    std::uint64_t bits = subnormal_value ? g.u(1u << 23) : ((std::uint64_t)g.irange(120, 134) << 23) | g.u(1u << 23);
    if (g.coin()) bits |= std::uint64_t(1) << 31;
    const std::uint64_t low = g.u(8) == 0 ? (1u << 12) : 1 + g.u((1u << 13) - 1);
    return (bits & ~std::uint64_t(0x1fff)) | low;
  };
  for (int t : g.positions(g.irange(1, g.K))) {
    c.a_bits(t, container(i % 16 == 5));
    c.b_bits(t, g.coin() ? container(false) : to_bits(Format::tf32, g.moderate(g.fb)));
  }
  // NaN whose payload lies only in the low bits (truncating it would make an infinity)
  if (i % 50 == 7) c.a_bits(g.pos(), 0x7f800000u | (1 + g.u(0x1fff)));
  if (g.coin()) c.c(g.moderate(g.fo));
}

// binary64 instructions only: sums whose roundings differ between one rounding per product (an FMA
// chain, in either order) and one rounding of the whole sum. C has a short significand (its last
// bit even); the products are half-ulp ties of C's binade (mostly of C's sign), far smaller terms
// that leave a sticky bit, terms of C's size that cancel it, and full 106-bit products.
void step_rounding(Gen& g, Case& c, int i) {
  const int p = g.fo.precision, e = g.irange(-30, 30);
  const auto short_value = [&](int ex) { return std::ldexp(1.0 + (double)g.u(4) / 4, ex); };  // <= 3 bits
  const double cs = g.sign();
  c.c(cs * short_value(e));
  for (int k = 0; k < g.K; ++k) {
    double x, y;
    const auto put = [&](int E, double sign) {  // a short product of exponent E: a * 2^eb
      const int eb = g.irange(-8, 8);
      c.a(k, sign * short_value(E - eb));
      c.b(k, std::ldexp(1.0, eb));
    };
    switch (g.u(6)) {
      case 0:
      case 1:
      case 2: put(e - p, g.u(4) ? cs : -cs); break;          // a tie (or beyond) of C's last place
      case 3: put(e - p - g.irange(1, 200), g.sign()); break;  // a sticky bit far below
      case 4: put(e, -cs); break;                              // C's size: cancels it
      default:
        if (g.product(e - g.irange(0, 110), x, y, i % 7 == 0)) c.a(k, x), c.b(k, y);  // 106 bits
        break;
    }
  }
}

const std::vector<std::pair<std::string, ClassFn>>& class_table() {
  static const std::vector<std::pair<std::string, ClassFn>> t = {
      {"nan_inf_a", [](Gen& g, Case& c, int i) { nan_inf(g, c, i, 0); }},
      {"nan_inf_b", [](Gen& g, Case& c, int i) { nan_inf(g, c, i, 1); }},
      {"nan_inf_c", [](Gen& g, Case& c, int i) { nan_inf(g, c, i, 2); }},
      {"overflow_before_alignment", overflow_before},
      {"overflow_after_alignment", overflow_after},
      {"exact_cancellation", exact_cancellation},
      {"zero_operands", zero_operands},
      {"subnormal", subnormal},
      {"top_carry", top_carry},
      {"c_alone", c_alone},
      {"exponent_gap", exponent_gap},
      {"tf32_low_bits", tf32_low_bits},
      {"step_rounding", step_rounding},
  };
  return t;
}

}  // namespace

const std::vector<std::string>& corpus_classes() {
  static const std::vector<std::string> v = [] {
    std::vector<std::string> n;
    for (const auto& [name, fn] : class_table()) n.push_back(name);
    return n;
  }();
  return v;
}

std::vector<std::string> corpus_classes(const InstructionInfo& ins) {
  std::vector<std::string> v;
  for (const std::string& c : corpus_classes())
    if ((c != "tf32_low_bits" || ins.input == Format::tf32) && (c != "step_rounding" || ins.output == Format::fp64))
      v.push_back(c);
  return v;
}

std::vector<Probe> make_corpus(const InstructionInfo& ins, std::uint64_t seed, int per_class) {
  std::vector<Probe> out;
  const std::vector<std::string> applies = corpus_classes(ins);
  for (const auto& [name, fn] : class_table()) {
    if (std::find(applies.begin(), applies.end(), name) == applies.end()) continue;
    // one stream per (seed, class, instruction): a class's cases do not move when another changes
    Gen g(ins, seed ^ name_hash(name) ^ (name_hash(ins.name) << 1));
    for (int i = 0; i < per_class; ++i) {
      Case c(ins, "corpus/" + name + "/" + std::to_string(seed) + "/" + std::to_string(i), name);
      fn(g, c, i);
      out.push_back(c.done());
    }
  }
  return out;
}

bool is_corpus_case(const Probe& p) { return p.id.rfind("corpus/", 0) == 0; }

}  // namespace gemmlab::tc
