// Bit-exact tensor-core model; see tc_model.hpp for the numerics.
#include "reference/tc_model.hpp"

#include <bit>
#include <cmath>
#include <cstring>
#include <cfloat>
#include <limits>
#include <sstream>
#include <stdexcept>

#include "reference/long_accumulator.hpp"
#include "reference/tc_arith.hpp"

namespace gemmlab::tc {

// The rare decompositions and the error of tc_arith.hpp's decompose (host only).
namespace arith {

[[noreturn, gnu::noinline]] void not_representable() {
  throw std::logic_error("tc_model: value not representable in the format's precision");
}

// A double that is zero, subnormal, infinite or NaN (decompose's rare path, kept out of line).
[[gnu::noinline]] Decomposed decompose_rare(double x, int p, int emin) {
  Decomposed d{std::signbit(x), 0, 0, 0};
  double ax = std::fabs(x);
  int e = std::ilogb(ax);
  if (e < emin) e = emin;
  d.exponent = e;
  d.lsb = e - (p - 1);
  double m = std::ldexp(ax, -d.lsb);
  d.m = (std::uint64_t)m;
  if ((double)d.m != m) not_representable();
  return d;
}

}  // namespace arith

namespace {

using arith::add;
using arith::bit_length;
using arith::Decomposed;
using arith::Exact;
using arith::i128;
using arith::shift_right;
using arith::u128;
using arith::uabs;

// The host's decomposition: tc_arith.hpp's, raising where the device marks a fault.
[[gnu::always_inline]] inline Decomposed decompose(double x, int p, int emin) {
  arith::Fault f;
  return arith::decompose(x, p, emin, f);
}

}  // namespace

const char* to_string(AlignReference r) {
  return r == AlignReference::exponent_sum ? "exponent_sum" : "value_exponent";
}

const char* to_string(CEntry c) { return c == CEntry::first_block ? "first_block" : "final_add"; }

const char* to_string(NanEncoding n) {
  switch (n) {
    case NanEncoding::all_ones: return "all_ones";
    case NanEncoding::ieee_quiet: return "ieee_quiet";
    case NanEncoding::propagate: return "propagate";
  }
  return "?";
}

const char* to_string(Overflow o) {
  switch (o) {
    case Overflow::by_rounding: return "by_rounding";
    case Overflow::infinity: return "infinity";
    case Overflow::saturate: return "saturate";
  }
  return "?";
}

const char* to_string(ZeroSign z) {
  switch (z) {
    case ZeroSign::ieee: return "ieee";
    case ZeroSign::plus: return "plus";
    case ZeroSign::c_sign: return "c_sign";
  }
  return "?";
}

const char* to_string(ZeroOperandExponent z) {
  switch (z) {
    case ZeroOperandExponent::none: return "none";
    case ZeroOperandExponent::input_emin: return "input_emin";
    case ZeroOperandExponent::fp32_emin: return "fp32_emin";
  }
  return "?";
}

const char* to_string(Arithmetic a) {
  switch (a) {
    case Arithmetic::block_fused: return "block_fused";
    case Arithmetic::fma_chain: return "fma_chain";
    case Arithmetic::fused_sum: return "fused_sum";
  }
  return "?";
}

const char* to_string(ChainOrder o) { return o == ChainOrder::increasing ? "increasing" : "decreasing"; }

int TcParams::fraction_bits() const { return gemmlab::info(output).precision - 1 + neab; }

std::string TcParams::describe() const {
  std::ostringstream s;
  if (arithmetic != Arithmetic::block_fused) {  // the block parameters take no part
    s << "arithmetic=" << to_string(arithmetic) << " step=" << block_size;
    if (arithmetic == Arithmetic::fma_chain) s << " order=" << to_string(chain_order);
    s << " subnormal_in=" << (subnormal_inputs ? "kept" : "flushed")
      << " subnormal_out=" << (subnormal_output ? "kept" : "flushed") << " nan=" << to_string(nan_encoding)
      << " overflow=" << to_string(overflow) << " zero_sign=" << to_string(zero_sign);
    return s.str();
  }
  s << "block=" << block_size << " neab=" << neab << " (F=" << fraction_bits() << ")"
    << " align=" << to_string(align_rounding) << " out=" << to_string(output_rounding)
    << " ref=" << to_string(align_reference) << " c_in_alignment=" << (c_in_alignment ? "yes" : "no")
    << " subnormal_in=" << (subnormal_inputs ? "kept" : "flushed")
    << " subnormal_out=" << (subnormal_output ? "kept" : "flushed") << " result_cut=";
  if (result_fraction_bits < 0) s << "none";
  else s << result_fraction_bits;
  s << " zero_c=";
  if (zero_c_offset < 0) s << "absent";
  else s << "emin-" << zero_c_offset;
  s << " split=";
  if (step_interleave == 0) s << "contiguous";
  else s << "interleave" << step_interleave;
  s << " c_entry=" << to_string(c_entry)
    << " operands=" << (operand_conversion ? gemmlab::info(*operand_conversion).name : "as_is");
  if (input_b) s << " b=" << gemmlab::info(*input_b).name;
  s << " nan=" << to_string(nan_encoding) << " overflow=" << to_string(overflow) << " zero_sign=" << to_string(zero_sign)
    << " zero_operand=" << to_string(zero_operand_exponent);
  if (input == Format::tf32) s << " tf32_low_bits=" << to_string(tf32_low_bits);
  return s.str();
}

namespace {

double round_exact(Format f, Exact x, Rounding mode, bool subnormals, int fraction_bits = -1,
                   Overflow overflow = Overflow::by_rounding) {
  return arith::round_exact(gemmlab::info(f), x, mode, subnormals, fraction_bits, overflow);
}

Exact exact_of(double x) {
  arith::Fault f;
  return arith::exact_of(x, f);
}

}  // namespace

double round_to_format(Format f, double x, Rounding mode, bool subnormals) {
  if (std::isnan(x) || std::isinf(x)) {
    if (std::isinf(x) && !gemmlab::info(f).has_infinity) return std::copysign(gemmlab::info(f).max_finite, x);
    return x;
  }
  if (x == 0) return x;
  return round_exact(f, exact_of(x), mode, subnormals);
}

bool representable(Format f, double x) {
  if (std::isnan(x)) return true;
  if (std::isinf(x)) return gemmlab::info(f).has_infinity;
  return round_to_format(f, x, Rounding::nearest_even) == x;
}

namespace {

struct Term {
  Exact value;
  int ref;  // alignment exponent
  int k;    // product index (for the trace)
};

double exact_value(Exact x) { return std::ldexp((double)x.v, x.e); }  // exact for <= 53-bit values

std::string product_name(int k) { return "a" + std::to_string(k) + "*b" + std::to_string(k); }

double zero_result(const TcParams& p, double c, bool all_minus_zero) { return arith::zero_result(p, c, all_minus_zero); }

// A product's operands as the instruction reads them: subnormals flushed to zero where it does not keep them.
[[gnu::always_inline]] inline void flush_subnormal_inputs(const TcParams& p, double& x, double& y) {
  if (p.subnormal_inputs) return;
  arith::flush_subnormal_inputs(p, gemmlab::info(p.input).emin, gemmlab::info(p.format_b()).emin, x, y);
}

[[gnu::always_inline]] inline int zero_operand_ref(const TcParams& p, const FormatInfo& fa, const FormatInfo& fb,
                                                   double x, double y) {
  arith::Fault f;
  return arith::zero_operand_ref(p, fa, fb, x, y, f);
}


// One fused block: c + sum of `n` products (`ks`: their indices in the instruction, for the trace).
double block(const TcParams& p, const double* a, const double* b, int n, double c, const int* ks,
             TcTrace::Block* tr) {
  // Products and their alignment exponents are those of the operands as the multiplier sees them
  // (after an exact conversion, e.g. e4m3 -> fp16, subnormal e4m3 values become normal fp16 ones).
  const FormatInfo &fa = gemmlab::info(p.operand_conversion ? *p.operand_conversion : p.input),
                   &fb = gemmlab::info(p.operand_conversion ? *p.operand_conversion : p.format_b()),
                   &fo = gemmlab::info(p.output);
  const int F = p.fraction_bits();
  if (!tr && arith::narrow_fits(fa, fb, fo, F, n)) {
    arith::Fault f;
    return arith::block_narrow(p, fa, fb, fo, F, gemmlab::info(p.input).emin, gemmlab::info(p.format_b()).emin, a, b,
                               n, c, f);
  }
  Term terms[64];
  int nt = 0;
  bool all_minus_zero = std::signbit(c);  // C and every product -0 (IEEE's condition for a -0 sum)
  // A product with a zero operand may still take part in the alignment (ZeroOperandExponent).
  int zero_ref = std::numeric_limits<int>::min(), zero_k = -1;
  for (int i = 0; i < n; ++i) {
    double x = a[i], y = b[i];
    flush_subnormal_inputs(p, x, y);
    if (x == 0 || y == 0) {
      all_minus_zero = all_minus_zero && std::signbit(x) != std::signbit(y);
      if (p.zero_operand_exponent != ZeroOperandExponent::none)
        if (const int ref = zero_operand_ref(p, fa, fb, x, y); ref > zero_ref) {
          zero_ref = ref;
          zero_k = ks[i];
        }
      continue;
    }
    all_minus_zero = false;
    Decomposed dx = decompose(x, fa.precision, fa.emin), dy = decompose(y, fb.precision, fb.emin);
    i128 m = (i128)dx.m * (i128)dy.m;
    Exact v{(dx.neg != dy.neg) ? -m : m, dx.lsb + dy.lsb};
    int ref = p.align_reference == AlignReference::exponent_sum ? dx.exponent + dy.exponent
                                                                : v.e + bit_length(uabs(v.v)) - 1;
    terms[nt++] = {v, ref, ks[i]};
  }
  if (!p.subnormal_output && std::fabs(c) < std::ldexp(1.0, fo.emin)) c = std::copysign(0.0, c);
  Exact ce{};
  int cref = 0;
  if (c != 0) {
    Decomposed dc = decompose(c, fo.precision, fo.emin);
    ce = {dc.neg ? -(i128)dc.m : (i128)dc.m, dc.lsb};
    cref = p.align_reference == AlignReference::exponent_sum ? dc.exponent : ce.e + bit_length(uabs(ce.v)) - 1;
  }
  if (tr) tr->c = c;
  // The result, with a note for a trace: `note` is called only when there is one (the notes are strings,
  // and most blocks of explain's sparse probes are all zeros).
  const auto done = [&](double r, const auto& note) {
    if (tr) {
      tr->result = r;
      const std::string n = note();
      if (!n.empty()) tr->note += (tr->note.empty() ? "" : "; ") + n;
    }
    return r;
  };
  if (nt == 0 && c == 0)  // every term zero: nothing to align
    return done(zero_result(p, c, all_minus_zero), [&] {
      return std::string("every term is zero: the sign of zero (rule ") + to_string(p.zero_sign) + ")";
    });
  if (nt == 0 && !p.c_in_alignment && zero_ref == std::numeric_limits<int>::min())
    // C passes through, re-rounded only by flushing and the cut
    return done(round_exact(p.output, ce, p.output_rounding, p.subnormal_output, p.result_fraction_bits, p.overflow),
                [] { return std::string("C alone passes through"); });
  // Where the largest exponent came from is named only for a trace (a string per product would cost
  // more than the arithmetic: explain's composition runs this on hundreds of millions of products).
  enum class From { none, product, c, zero_c, zero_operand } from = From::none;
  int emax = std::numeric_limits<int>::min(), from_k = -1;
  for (int i = 0; i < nt; ++i)
    if (terms[i].ref > emax) {
      emax = terms[i].ref;
      from = From::product;
      from_k = terms[i].k;
    }
  bool c_joins = p.c_in_alignment && c != 0;
  if (c_joins && cref > emax) {
    emax = cref;
    from = From::c;
  }
  // A zero C enters the datapath with a fixed small exponent: the aligned sum's quantum has a floor.
  if (p.zero_c_offset >= 0 && p.c_in_alignment && c == 0 && fo.emin - p.zero_c_offset > emax) {
    emax = fo.emin - p.zero_c_offset;
    from = From::zero_c;
  }
  if (zero_ref > emax) {
    emax = zero_ref;
    from = From::zero_operand;
  }
  const int q = emax - F;  // exponent of the quantum of the aligned sum
  i128 sum = 0;
  auto aligned = [&](Exact v) -> i128 {
    int s = v.e - q;
    if (s >= 0) return v.v << s;
    return shift_right<i128, u128>(v.v, -s, p.align_rounding);
  };
  for (int i = 0; i < nt; ++i) {
    const i128 t = aligned(terms[i].value);
    sum += t;
    if (tr) tr->terms.push_back({terms[i].k, exact_value(terms[i].value), terms[i].ref, std::ldexp((double)t, q)});
  }
  Exact total{sum, q};
  if (c_joins) {
    const i128 t = aligned(ce);
    total.v += t;
    if (tr) tr->terms.push_back({-1, c, cref, std::ldexp((double)t, q)});
  } else if (c != 0) {
    total = add(total, ce);
    if (tr) tr->terms.push_back({-1, c, cref, c});
  }
  if (tr) {
    tr->max_exponent = emax;
    switch (from) {
      case From::product: tr->max_from = product_name(from_k); break;
      case From::c: tr->max_from = "c"; break;
      case From::zero_c: tr->max_from = "zero C (emin_out - " + std::to_string(p.zero_c_offset) + ")"; break;
      case From::zero_operand:
        tr->max_from = "zero operand " + product_name(zero_k) + " (rule zero_operand " +
                       to_string(p.zero_operand_exponent) + ")";
        break;
      case From::none: tr->max_from.clear(); break;
    }
    tr->quantum_exponent = q;
    tr->aligned_sum = exact_value(total);
    tr->leading_exponent = total.v == 0 ? 0 : total.e + bit_length(uabs(total.v)) - 1;
  }
  if (total.v == 0)
    return done(zero_result(p, c, false), [&] {
      return std::string("the aligned terms cancel exactly: the sign of zero (rule ") + to_string(p.zero_sign) + ")";
    });
  const double r = round_exact(p.output, total, p.output_rounding, p.subnormal_output, p.result_fraction_bits, p.overflow);
  return done(r, [&] {
    std::string note;
    if (std::fabs(r) >= gemmlab::info(p.output).max_finite &&
        std::fabs(exact_value(total)) > gemmlab::info(p.output).max_finite)
      note = std::string("beyond the output's range: ") + (std::isinf(r) ? "infinity" : "largest finite") +
             " (rule overflow " + to_string(p.overflow) + ")";
    return note;
  });
}

bool special(double x) { return std::isnan(x) || std::isinf(x); }

// NanEncoding::propagate: a NaN operand passes through quieted (bit 51 set; sign and payload kept),
// an invalid operation writes kGeneratedNan. Bits are set explicitly: std::fma's choice among NaN
// operands is the host's (x86's vfmadd and NVIDIA's DFMA differ), not the GPU's.
double quieted(double x) {
  return std::bit_cast<double>(std::bit_cast<std::uint64_t>(x) | (std::uint64_t(1) << 51));
}
double generated_nan() { return std::bit_cast<double>(kGeneratedNan); }

// One FMA of the chain, RN(x y + acc). Under propagate, the NaN rules are applied here: the
// accumulator's NaN first, then a_i's, then b_i's, so the first NaN the chain meets reaches D; the
// other encodings never see a NaN (dot's special rules decide first).
double chain_fma(const TcParams& p, double x, double y, double acc) {
  if (p.nan_encoding == NanEncoding::propagate) {
    for (double v : {acc, x, y})
      if (std::isnan(v)) return quieted(v);
    const bool inf_product = std::isinf(x) || std::isinf(y);
    if ((std::isinf(x) && y == 0) || (std::isinf(y) && x == 0) ||
        (inf_product && std::isinf(acc) && (std::signbit(x) != std::signbit(y)) != std::signbit(acc)))
      return generated_nan();
  }
  return std::fma(x, y, acc);
}

// The binary64 candidates (arithmetic fma_chain and fused_sum) on finite operands. Subnormal
// flushing, overflow and the sign of a zero result follow the special-rule parameters.
double binary64_dot(const TcParams& p, const double* a, const double* b, int k, double c, TcTrace* tr) {
  if (p.input != Format::fp64 || p.format_b() != Format::fp64 || p.output != Format::fp64 || p.operand_conversion)
    throw std::invalid_argument(std::string("tc_model: arithmetic ") + to_string(p.arithmetic) +
                                " models binary64 instructions only (fp64 A, B, C and D)");
  if (p.block_size <= 0 || k % p.block_size != 0)
    throw std::invalid_argument("tc_model: the step (block_size " + std::to_string(p.block_size) + ") must divide k = " +
                                std::to_string(k));
  const auto flush = [](double x, bool keep) { return keep || std::fabs(x) >= DBL_MIN ? x : std::copysign(0.0, x); };
  const auto saturate = [&](double x) {
    return p.overflow == Overflow::saturate && std::isinf(x) ? std::copysign(DBL_MAX, x) : x;
  };
  double acc = flush(c, p.subnormal_output);
  const double c_read = acc;
  if (tr) tr->rule = "arithmetic";
  if (p.arithmetic == Arithmetic::fma_chain) {
    // acc = RN(a_i b_i + acc), one correctly rounded binary64 FMA per product (std::fma); steps of
    // block_size in increasing k, each in chain_order
    for (int s = 0; s < k; ++s) {
      const int step = s / p.block_size * p.block_size, j = s % p.block_size;
      const int i = step + (p.chain_order == ChainOrder::increasing ? j : p.block_size - 1 - j);
      const double x = flush(a[i], p.subnormal_inputs), y = flush(b[i], p.subnormal_inputs);
      const double before = acc;
      acc = saturate(flush(chain_fma(p, x, y, acc), p.subnormal_output));
      if (tr) {
        TcTrace::Block blk;
        blk.ks = {i};
        blk.c = before;
        blk.result = acc;
        blk.note = "fma: RN(" + product_name(i) + " + c), binary64";
        tr->blocks.push_back(blk);
      }
    }
  } else {
    // Per step, one exact sum of C and the step's products (a Kulisch accumulator from 2^-2148, the
    // smallest product's last place, up to beyond 2^2048 with carry and sign bits), rounded once to
    // nearest even; the result is the next step's C.
    constexpr long kBase = -2148;
    constexpr int kLimbs = (2048 + 2148 + 8 + 63) / 64 + 3;
    for (int step = 0; step < k; step += p.block_size) {
      std::uint64_t acc_limbs[kLimbs] = {};
      const double step_c = acc;
      bool all_minus_zero = std::signbit(acc) && acc == 0;  // C and every product -0 (IEEE's -0 sum)
      if (acc != 0) {
        const detail::Decomposed dc = detail::decompose(acc);
        detail::kulisch_add(acc_limbs, kLimbs, dc.lsb - kBase, dc.m, dc.neg);
      }
      for (int i = step; i < step + p.block_size; ++i) {
        const double x = flush(a[i], p.subnormal_inputs), y = flush(b[i], p.subnormal_inputs);
        if (x == 0 || y == 0) {
          all_minus_zero = all_minus_zero && std::signbit(x) != std::signbit(y);
          continue;
        }
        all_minus_zero = false;
        const detail::Decomposed dx = detail::decompose(x), dy = detail::decompose(y);
        detail::kulisch_add(acc_limbs, kLimbs, (long)dx.lsb + dy.lsb - kBase, (unsigned __int128)dx.m * dy.m,
                            dx.neg != dy.neg);
      }
      const bool neg = detail::kulisch_to_magnitude(acc_limbs, kLimbs);
      bool zero = true;
      for (std::uint64_t w : acc_limbs) zero = zero && w == 0;
      acc = zero ? (all_minus_zero ? -0.0 : 0.0)
                 : saturate(flush(detail::round_bigint(acc_limbs, kLimbs, kBase, neg, false), p.subnormal_output));
      if (tr) {
        TcTrace::Block blk;
        for (int i = step; i < step + p.block_size; ++i) blk.ks.push_back(i);
        blk.c = step_c;
        blk.result = acc;
        blk.note = "exact sum of C and the step's products, rounded once to nearest even (binary64)";
        tr->blocks.push_back(blk);
      }
    }
  }
  if (acc == 0 && p.zero_sign != ZeroSign::ieee) {
    acc = p.zero_sign == ZeroSign::plus || !std::signbit(c_read) ? 0.0 : -0.0;
    if (tr) tr->blocks.back().note += std::string("; zero result: sign by rule ") + to_string(p.zero_sign);
  }
  if (tr && !tr->blocks.empty()) tr->blocks.back().result = acc;
  return acc;
}

}  // namespace

double dot(const TcParams& p, const double* a, const double* b, int k, double c, TcTrace* trace) {
  if (trace) *trace = TcTrace{};
  // Under propagate, an FMA chain meets NaN and infinity operands one FMA at a time, as IEEE 754 has
  // it: which NaN reaches D depends on where it stands in the chain (chain_fma).
  if (p.arithmetic == Arithmetic::fma_chain && p.nan_encoding == NanEncoding::propagate) {
    const double d = binary64_dot(p, a, b, k, c, trace);
    if (trace && std::isnan(d))
      trace->rule = "nan_inf: the first NaN the chain meets (C, a_0, b_0, a_1, ...), quieted, or 0xfff8000000000000 "
                    "from inf * 0 or inf - inf (encoding propagate)";
    return d;
  }
  // With C added last (c_entry final_add), C meets the blocks' result only in that addition, an
  // FADD / HADD2 of its own, so an infinite or NaN C is that addition's operand, not the blocks'.
  const bool c_last = p.c_entry == CEntry::final_add && p.arithmetic == Arithmetic::block_fused;
  double acc = c_last ? 0.0 : c;  // the blocks' running C
  bool blocks_infinite = false;   // an infinite product decided the blocks' result
  bool any_special = !c_last && special(c);
  for (int i = 0; i < k && !any_special; ++i) any_special = special(a[i]) || special(b[i]);
  if (any_special) {
    // NaN and infinity operands decide D before any arithmetic (probes nan_inf/*, H100 and H200):
    // any NaN, inf*0 or inf-inf gives NaN; otherwise the infinity.
    bool nan = !c_last && std::isnan(c);
    int pos = !c_last && std::isinf(c) && c > 0, neg = !c_last && std::isinf(c) && c < 0;
    for (int i = 0; i < k; ++i) {
      double x = a[i], y = b[i];
      if (std::isnan(x) || std::isnan(y)) nan = true;
      else if ((std::isinf(x) && y == 0) || (std::isinf(y) && x == 0)) nan = true;
      else if (std::isinf(x) || std::isinf(y)) ((std::signbit(x) != std::signbit(y)) ? neg : pos) = 1;
    }
    if (nan || (pos && neg)) {
      if (trace) trace->rule = "nan_inf: a NaN operand, inf * 0 or inf - inf gives NaN (encoding " +
                               std::string(to_string(p.nan_encoding)) + ")";
      if (p.nan_encoding == NanEncoding::propagate) {  // the first NaN of C, a_0, b_0, a_1, ..., else generated
        if (!c_last && std::isnan(c)) return quieted(c);
        for (int i = 0; i < k; ++i)
          for (double v : {a[i], b[i]})
            if (std::isnan(v)) return quieted(v);
        return generated_nan();
      }
      return std::numeric_limits<double>::quiet_NaN();
    }
    if (pos || neg) {
      if (trace) trace->rule = "nan_inf: an infinite operand or C, with no NaN and no inf - inf, gives that infinity";
      acc = pos ? std::numeric_limits<double>::infinity() : -std::numeric_limits<double>::infinity();
      if (!c_last) return acc;
      blocks_infinite = true;  // C still comes: the final addition below
    }
  }
  if (p.arithmetic != Arithmetic::block_fused) return binary64_dot(p, a, b, k, c, trace);
  if (p.block_size <= 0 || k % p.block_size != 0) throw std::invalid_argument("tc_model: block size must divide k");
  if (p.fraction_bits() < 0 || p.fraction_bits() > 96) throw std::invalid_argument("tc_model: F out of range");
  if (p.step_interleave < 0 || p.block_size > 64) throw std::invalid_argument("tc_model: bad block split");
  const int nblocks = k / p.block_size;
  if (!trace && !any_special && (p.step_interleave == 0 || nblocks == 1)) {
    // finite operands in contiguous blocks: tc_arith.hpp's chain, the code explain's GPU composition runs
    const FormatInfo &fa = gemmlab::info(p.operand_conversion ? *p.operand_conversion : p.input),
                     &fb = gemmlab::info(p.operand_conversion ? *p.operand_conversion : p.format_b()),
                     &fo = gemmlab::info(p.output);
    if (const int F = p.fraction_bits(); arith::narrow_fits(fa, fb, fo, F, p.block_size)) {
      arith::Fault f;
      return arith::chain_blocks(p, fa, fb, fo, F, gemmlab::info(p.input).emin, gemmlab::info(p.format_b()).emin, a,
                                 b, k, c, f);
    }
  }
  double ga[64], gb[64];
  int gk[64];
  for (int j = 0; j < nblocks && std::isfinite(acc); ++j) {
    const double *pa = a + j * p.block_size, *pb = b + j * p.block_size;
    for (int i = 0; i < p.block_size; ++i) gk[i] = j * p.block_size + i;
    if (p.step_interleave > 0 && nblocks > 1) {  // groups of g indices dealt round robin
      int n = 0;
      for (int i = 0; i < k; ++i)
        if ((i / p.step_interleave) % nblocks == j) {
          ga[n] = a[i];
          gb[n] = b[i];
          gk[n] = i;
          ++n;
        }
      if (n != p.block_size) throw std::invalid_argument("tc_model: interleave does not deal equal blocks");
      pa = ga;
      pb = gb;
    }
    TcTrace::Block* tb = nullptr;
    if (trace) {
      trace->blocks.emplace_back();
      tb = &trace->blocks.back();
      tb->ks.assign(gk, gk + p.block_size);
    }
    acc = block(p, pa, pb, p.block_size, acc, gk, tb);
  }
  if (trace && !blocks_infinite) trace->rule = "arithmetic";
  // an overflowed block result stays infinite: the remaining products are finite
  if (c_last) {
    if (trace) {
      trace->final_add = true;
      trace->final_sum = acc;
    }
    if (!std::isfinite(acc) || special(c)) {
      // IEEE 754 on infinities and NaN: inf + finite = inf, inf - inf and NaN give NaN. H100 and
      // H200, mma_m16n8k32_e4m3_f16 probe random/seed=20260514/296: the fp16 steps overflow to
      // +inf, C = -inf, D = NaN (0x7fff), where an infinite C deciding first would give -inf.
      if (trace)
        trace->rule = std::string(blocks_infinite ? "nan_inf: an infinite product makes the blocks' result infinite"
                                                  : "final_add: the blocks' result or C is infinite or NaN") +
                      "; C is added last by IEEE 754 (inf - inf gives NaN)";
    }
    arith::Fault f;
    return arith::final_add(gemmlab::info(p.output), acc, c, f);
  }
  return acc;
}

std::uint64_t encode_output(const TcParams& p, double d) {
  if (!std::isnan(d)) return to_bits(p.output, d);
  // propagate: the NaN the model chose, bit for bit (to_bits would write the canonical NaN)
  if (p.nan_encoding == NanEncoding::propagate && p.output == Format::fp64) return std::bit_cast<std::uint64_t>(d);
  const FormatInfo& fo = gemmlab::info(p.output);
  if (p.nan_encoding == NanEncoding::ieee_quiet || !fo.has_infinity) return to_bits(p.output, d);
  // all ones below the sign bit: 0x7fffffff (fp32), 0x7fff (fp16, bf16)
  const int bits = p.output == Format::tf32 ? 32 : fo.storage_bits;
  return (std::uint64_t(1) << (bits - 1)) - 1;
}

double decode_operand(const TcParams& p, Format f, std::uint64_t bits) {
  if (f != Format::tf32) return from_bits(f, bits);
  // toward_zero: the low 13 bits are dropped before the bits are read, so a NaN whose payload lies
  // only there is an infinity (H100 and H200, corpus tf32_low_bits, every case i % 50 == 7 of the
  // three tf32 instructions: 0x7f800001..0x7f801fff came back +-inf, 38 of 38; MMA-Sim masks too).
  if (p.tf32_low_bits == Rounding::toward_zero) return from_bits(f, bits & ~std::uint64_t(0x1fff));
  const double x = from_bits(Format::fp32, bits);  // the container as an fp32 value
  return round_to_format(Format::tf32, x, p.tf32_low_bits);
}

const std::vector<Instruction>& all_instructions() {
  static const std::vector<Instruction> v = {
      Instruction::mma_m16n8k16_f16_f32, Instruction::mma_m16n8k16_f16_f16, Instruction::mma_m16n8k16_bf16_f32,
      Instruction::mma_m16n8k8_tf32_f32, Instruction::mma_m16n8k32_e4m3_f32, Instruction::mma_m16n8k32_e5m2_f32,
      Instruction::wgmma_m64n8k16_f16_f32, Instruction::wgmma_m64n8k16_bf16_f32, Instruction::wgmma_m64n8k8_tf32_f32,
      Instruction::wgmma_m64n8k32_e4m3_f32, Instruction::wgmma_m64n8k32_e5m2_f32, Instruction::wmma_m16n16k16_f16_f32,
      Instruction::wgmma_m64n8k16_f16_f16, Instruction::wgmma_m64n8k32_e4m3_f16, Instruction::wgmma_m64n8k32_e5m2_f16,
      Instruction::wgmma_m64n8k32_e4m3_e5m2_f32, Instruction::mma_m16n8k32_e4m3_f16, Instruction::mma_m16n8k32_e5m2_f16,
      Instruction::mma_m16n8k32_e4m3_e5m2_f32, Instruction::mma_m16n8k8_f16_f32, Instruction::mma_m16n8k8_bf16_f32,
      Instruction::mma_m16n8k4_tf32_f32, Instruction::wgmma_m64n16k16_f16_f32, Instruction::mma_m8n8k4_f64,
      Instruction::mma_m16n8k4_f64, Instruction::mma_m16n8k8_f64, Instruction::mma_m16n8k16_f64,
      Instruction::wmma_m16n16k16_f16_f16};
  return v;
}

const std::vector<Instruction>& literature_instructions() {
  static const std::vector<Instruction> v = {
      Instruction::tcgen05_m128n8k16_f16_f32, Instruction::tcgen05_m128n8k16_bf16_f32,
      Instruction::tcgen05_m128n8k8_tf32_f32, Instruction::tcgen05_m128n8k32_e4m3_f32,
      Instruction::tcgen05_m128n8k32_e5m2_f32, Instruction::tcgen05_m128n8k16_f16_f16,
      Instruction::mma_m8n8k4_f16_f32,         Instruction::mma_m8n8k4_f16_f16};
  return v;
}

const std::vector<Instruction>& every_instruction() {
  static const std::vector<Instruction> v = [] {
    std::vector<Instruction> all = all_instructions();
    all.insert(all.end(), literature_instructions().begin(), literature_instructions().end());
    return all;
  }();
  return v;
}

const InstructionInfo& info(Instruction i) {
  static const InstructionInfo table[] = {
      {Instruction::mma_m16n8k16_f16_f32, "mma_m16n8k16_f16_f32", Format::fp16, Format::fp32, 16, 8, 16, 80},
      {Instruction::mma_m16n8k16_f16_f16, "mma_m16n8k16_f16_f16", Format::fp16, Format::fp16, 16, 8, 16, 80},
      {Instruction::mma_m16n8k16_bf16_f32, "mma_m16n8k16_bf16_f32", Format::bf16, Format::fp32, 16, 8, 16, 80},
      {Instruction::mma_m16n8k8_tf32_f32, "mma_m16n8k8_tf32_f32", Format::tf32, Format::fp32, 16, 8, 8, 80},
      {Instruction::mma_m16n8k32_e4m3_f32, "mma_m16n8k32_e4m3_f32", Format::e4m3, Format::fp32, 16, 8, 32, 89},
      {Instruction::mma_m16n8k32_e5m2_f32, "mma_m16n8k32_e5m2_f32", Format::e5m2, Format::fp32, 16, 8, 32, 89},
      {Instruction::wgmma_m64n8k16_f16_f32, "wgmma_m64n8k16_f16_f32", Format::fp16, Format::fp32, 64, 8, 16, 90},
      {Instruction::wgmma_m64n8k16_bf16_f32, "wgmma_m64n8k16_bf16_f32", Format::bf16, Format::fp32, 64, 8, 16, 90},
      {Instruction::wgmma_m64n8k8_tf32_f32, "wgmma_m64n8k8_tf32_f32", Format::tf32, Format::fp32, 64, 8, 8, 90},
      {Instruction::wgmma_m64n8k32_e4m3_f32, "wgmma_m64n8k32_e4m3_f32", Format::e4m3, Format::fp32, 64, 8, 32, 90},
      {Instruction::wgmma_m64n8k32_e5m2_f32, "wgmma_m64n8k32_e5m2_f32", Format::e5m2, Format::fp32, 64, 8, 32, 90},
      {Instruction::wmma_m16n16k16_f16_f32, "wmma_m16n16k16_f16_f32", Format::fp16, Format::fp32, 16, 16, 16, 70},
      {Instruction::wgmma_m64n8k16_f16_f16, "wgmma_m64n8k16_f16_f16", Format::fp16, Format::fp16, 64, 8, 16, 90},
      {Instruction::wgmma_m64n8k32_e4m3_f16, "wgmma_m64n8k32_e4m3_f16", Format::e4m3, Format::fp16, 64, 8, 32, 90},
      {Instruction::wgmma_m64n8k32_e5m2_f16, "wgmma_m64n8k32_e5m2_f16", Format::e5m2, Format::fp16, 64, 8, 32, 90},
      {Instruction::wgmma_m64n8k32_e4m3_e5m2_f32, "wgmma_m64n8k32_e4m3_e5m2_f32", Format::e4m3, Format::fp32, 64, 8, 32, 90,
       Format::e5m2},
      {Instruction::mma_m16n8k32_e4m3_f16, "mma_m16n8k32_e4m3_f16", Format::e4m3, Format::fp16, 16, 8, 32, 89},
      {Instruction::mma_m16n8k32_e5m2_f16, "mma_m16n8k32_e5m2_f16", Format::e5m2, Format::fp16, 16, 8, 32, 89},
      {Instruction::mma_m16n8k32_e4m3_e5m2_f32, "mma_m16n8k32_e4m3_e5m2_f32", Format::e4m3, Format::fp32, 16, 8, 32, 89,
       Format::e5m2},
      {Instruction::mma_m16n8k8_f16_f32, "mma_m16n8k8_f16_f32", Format::fp16, Format::fp32, 16, 8, 8, 75},
      {Instruction::mma_m16n8k8_bf16_f32, "mma_m16n8k8_bf16_f32", Format::bf16, Format::fp32, 16, 8, 8, 80},
      {Instruction::mma_m16n8k4_tf32_f32, "mma_m16n8k4_tf32_f32", Format::tf32, Format::fp32, 16, 8, 4, 80},
      {Instruction::wgmma_m64n16k16_f16_f32, "wgmma_m64n16k16_f16_f32", Format::fp16, Format::fp32, 64, 16, 16, 90},
      {Instruction::mma_m8n8k4_f64, "mma_m8n8k4_f64", Format::fp64, Format::fp64, 8, 8, 4, 80},
      {Instruction::mma_m16n8k4_f64, "mma_m16n8k4_f64", Format::fp64, Format::fp64, 16, 8, 4, 90},
      {Instruction::mma_m16n8k8_f64, "mma_m16n8k8_f64", Format::fp64, Format::fp64, 16, 8, 8, 90},
      {Instruction::mma_m16n8k16_f64, "mma_m16n8k16_f64", Format::fp64, Format::fp64, 16, 8, 16, 90},
      {Instruction::wmma_m16n16k16_f16_f16, "wmma_m16n16k16_f16_f16", Format::fp16, Format::fp16, 16, 16, 16, 70},
      {Instruction::tcgen05_m128n8k16_f16_f32, "tcgen05_m128n8k16_f16_f32", Format::fp16, Format::fp32, 128, 8, 16, 100},
      {Instruction::tcgen05_m128n8k16_bf16_f32, "tcgen05_m128n8k16_bf16_f32", Format::bf16, Format::fp32, 128, 8, 16, 100},
      {Instruction::tcgen05_m128n8k8_tf32_f32, "tcgen05_m128n8k8_tf32_f32", Format::tf32, Format::fp32, 128, 8, 8, 100},
      {Instruction::tcgen05_m128n8k32_e4m3_f32, "tcgen05_m128n8k32_e4m3_f32", Format::e4m3, Format::fp32, 128, 8, 32, 100},
      {Instruction::tcgen05_m128n8k32_e5m2_f32, "tcgen05_m128n8k32_e5m2_f32", Format::e5m2, Format::fp32, 128, 8, 32, 100},
      {Instruction::tcgen05_m128n8k16_f16_f16, "tcgen05_m128n8k16_f16_f16", Format::fp16, Format::fp16, 128, 8, 16, 100},
      {Instruction::mma_m8n8k4_f16_f32, "mma_m8n8k4_f16_f32", Format::fp16, Format::fp32, 8, 8, 4, 70},
      {Instruction::mma_m8n8k4_f16_f16, "mma_m8n8k4_f16_f16", Format::fp16, Format::fp16, 8, 8, 4, 70},
  };
  return table[(int)i];
}

std::optional<Instruction> parse_instruction(const std::string& name) {
  for (Instruction i : every_instruction())
    if (name == info(i).name) return i;
  return std::nullopt;
}

std::vector<double> mma_tile(const TcParams& p, const InstructionInfo& ins, const std::vector<double>& A,
                             const std::vector<double>& B, const std::vector<double>& C) {
  const int m = ins.m, n = ins.n, k = ins.k;
  if ((int)A.size() != m * k || (int)B.size() != k * n || (int)C.size() != m * n)
    throw std::invalid_argument(std::string("mma_tile: tile sizes do not match ") + ins.name);
  std::vector<double> D(m * n), a(k), b(k);
  for (int i = 0; i < m; ++i)
    for (int j = 0; j < n; ++j) {
      for (int t = 0; t < k; ++t) {
        a[t] = A[i * k + t];
        b[t] = B[t * n + j];
      }
      D[i * n + j] = dot(p, a.data(), b.data(), k, C[i * n + j]);
    }
  return D;
}

std::optional<TcParams> measured_hopper_params(Instruction ins) {
  TcParams p;
  p.input = info(ins).input;
  p.input_b = info(ins).input_b;
  p.output = info(ins).output;
  p.block_size = 16;
  p.neab = 2;
  p.align_rounding = Rounding::toward_zero;
  p.output_rounding = Rounding::toward_zero;
  p.align_reference = AlignReference::exponent_sum;
  p.c_in_alignment = true;
  p.subnormal_inputs = true;
  p.subnormal_output = true;
  // The special rules, inferred from the adversarial corpus on the H100 and the H200 (2026-11-24,
  // results/probes/h100_tc_corpus_20261124.csv; both GPUs gave the same bits for all 256,000 cases):
  // - an exact zero is +0, whatever the signs of C and the products (exact_cancellation: measured on
  //   every instruction but fp8 mma.sync, whose fp16 steps and final FADD give +0 either way);
  // - a sum beyond fp32's range is infinite, even though fp32 outputs are truncated (bf16 and tf32:
  //   overflow_before_alignment/0, exponent_gap; fp16 and fp8 products cannot leave fp32's range, so
  //   there no input tells, and the one rule is kept); fp16 outputs round to nearest, and a sum
  //   that rounds beyond 65504 is infinite (by_rounding; probe output_rounding/two/j=8/f=1/pos/X=2^16:
  //   2^16 + 2^8 -> inf, not saturated);
  // - zero operands take no part in the alignment (zero_operands, c_alone: bf16, tf32);
  // - NaN results all ones, tf32 low bits ignored (the TcParams defaults).
  p.zero_sign = ZeroSign::plus;
  p.overflow = p.output == Format::fp32 ? Overflow::infinity : Overflow::by_rounding;
  switch (ins) {
    // A zero C joins the alignment with exponent emin_out - 7 (H100, probes zero_c/rz/s=8/j=25):
    // inferred for bf16, tf32 and fp16 -> fp16, where products reach below it; fp16 and fp8
    // products never fall below fp32's emin - 12, so there it cannot be seen and stays absent.
    case Instruction::mma_m16n8k16_f16_f32:
    case Instruction::wgmma_m64n8k16_f16_f32:
    case Instruction::wmma_m16n16k16_f16_f32:
      return p;
    case Instruction::mma_m16n8k16_bf16_f32:
    case Instruction::wgmma_m64n8k16_bf16_f32:
      p.zero_c_offset = 7;
      return p;
    case Instruction::mma_m16n8k16_f16_f16:
      p.neab = 15;
      p.output_rounding = Rounding::nearest_even;
      p.zero_c_offset = 7;
      return p;
    case Instruction::mma_m16n8k8_tf32_f32:
    case Instruction::wgmma_m64n8k8_tf32_f32:
      p.block_size = 8;
      p.zero_c_offset = 7;
      return p;
    case Instruction::mma_m16n8k32_e4m3_f32:
    case Instruction::mma_m16n8k32_e5m2_f32:
      // sm_90 runs fp8 mma.sync as nvcc's SASS shows (results/probes/sm90a_fp8_mma_sync_sass.txt):
      // operands converted to fp16 (F2FP), HMMA.16816 on k = {0,1,4,5,...,28,29} from C = 0,
      // HMMA.16816 on k = {2,3,6,7,...,30,31} with the first result as C (the fp16 mma numerics
      // above), then FADD with the instruction's C. The probes infer the split and the final add;
      // the fp16 conversion changes no output (no fp8 product with a subnormal operand can set a
      // 25-bit alignment), so the inferred model, without it, is kept.
      p.step_interleave = 2;
      p.c_entry = CEntry::final_add;
      return p;
    case Instruction::wgmma_m64n8k32_e4m3_f32:
    case Instruction::wgmma_m64n8k32_e5m2_f32:
      // one block of 32 products and C aligned with 13 fraction bits by the fp8 exponents (no fp16
      // conversion: probe operand_conversion/m=1/s=8/j=11), the normalised result cut to 13
      // fraction bits toward zero (an "e8m13" fp32 result)
      p.block_size = 32;
      p.neab = -10;
      p.result_fraction_bits = 13;
      return p;
    // The instructions of issue 21, probed on the H100 and the H200 (2026-11-24: every probe and
    // corpus case reproduced, 0 mismatches on 10^6 random tiles each; results/probes/README.md).
    // Each came out as the measured instruction it shares a datapath with, as predicted.
    case Instruction::wgmma_m64n8k16_f16_f16:  // as mma.sync f16 -> f16
    case Instruction::wmma_m16n16k16_f16_f16:  // as mma.sync f16 -> f16 (wmma f16 -> f32 is mma.sync's too)
      p.neab = 15;
      p.output_rounding = Rounding::nearest_even;
      p.zero_c_offset = 7;
      return p;
    case Instruction::wgmma_m64n8k32_e4m3_f16:  // fp8 wgmma's 13-bit block, then to nearest fp16
    case Instruction::wgmma_m64n8k32_e5m2_f16:
      p.block_size = 32;
      p.neab = 3;  // F = 13 below fp16's 11-bit significand
      p.output_rounding = Rounding::nearest_even;
      return p;
    case Instruction::wgmma_m64n8k32_e4m3_e5m2_f32:  // as wgmma e4m3
      p.block_size = 32;
      p.neab = -10;
      p.result_fraction_bits = 13;
      return p;
    case Instruction::mma_m16n8k32_e4m3_f16:  // as fp8 mma.sync, through fp16 -> fp16 HMMA steps
    case Instruction::mma_m16n8k32_e5m2_f16:
      // zero_c_offset 7 as for f16 -> f16 (the HMMA steps start from +0 C, so no probe sees it)
      p.neab = 15;
      p.output_rounding = Rounding::nearest_even;
      p.zero_c_offset = 7;
      p.step_interleave = 2;
      p.c_entry = CEntry::final_add;
      return p;
    case Instruction::mma_m16n8k32_e4m3_e5m2_f32:  // as fp8 mma.sync
      // Mixed formats make the fp16 conversion visible (F2FP.F16.E4M3 / .E5M2 in the SASS): probe
      // operand_conversion/m=1/s=12/j=23/pos rules out the product aligned at the fp8 exponents.
      p.step_interleave = 2;
      p.c_entry = CEntry::final_add;
      p.operand_conversion = Format::fp16;
      return p;
    case Instruction::mma_m16n8k8_f16_f32:  // one block of 8 (MMA-Sim: Hopper mma is not split)
      p.block_size = 8;
      return p;
    case Instruction::mma_m16n8k8_bf16_f32:
      p.block_size = 8;
      p.zero_c_offset = 7;
      return p;
    case Instruction::mma_m16n8k4_tf32_f32:
      p.block_size = 4;
      p.zero_c_offset = 7;
      return p;
    case Instruction::wgmma_m64n16k16_f16_f32:  // as wgmma m64n8k16
      return p;
    case Instruction::tcgen05_m128n8k16_f16_f32:  // Blackwell's: Hopper has no tcgen05 (tc_gpus.hpp models it)
    case Instruction::tcgen05_m128n8k16_bf16_f32:
    case Instruction::tcgen05_m128n8k8_tf32_f32:
    case Instruction::tcgen05_m128n8k32_e4m3_f32:
    case Instruction::tcgen05_m128n8k32_e5m2_f32:
    case Instruction::tcgen05_m128n8k16_f16_f16:
    case Instruction::mma_m8n8k4_f16_f32:  // Volta's (tc_gpus.hpp models it on Volta only)
    case Instruction::mma_m8n8k4_f16_f16:
      return std::nullopt;
    case Instruction::mma_m8n8k4_f64:
    case Instruction::mma_m16n8k4_f64:
    case Instruction::mma_m16n8k8_f64:
    case Instruction::mma_m16n8k16_f64: {
      // Probed on the H100 and the H200 (2026-11-24, scripts/lab/gpu_tc_f64.sh; results/probes/README.md,
      // "The fp64 tensor core"): one chain of correctly rounded binary64 FMAs from C in increasing k
      // over all k (m16n8k8 and m16n8k16 too: the probes at the k4 step boundaries rule the steps
      // out), subnormals kept, overflow by rounding (to infinity), the sign of zero as IEEE 754 gives
      // it, and NaN propagated FMA by FMA: a NaN operand's bits, quieted (corpus nan_inf_*: e.g.
      // 0xfffe5676225943fc passes as it is, a NaN * 0 gives the NaN), inf * 0 and inf - inf
      // 0xfff8000000000000 (probes nan_inf/inf_times_0, inf_minus_inf, c_inf_minus_product_inf).
      TcParams q;
      q.arithmetic = Arithmetic::fma_chain;
      q.chain_order = ChainOrder::increasing;
      q.block_size = info(ins).k;
      q.input = q.output = Format::fp64;
      q.output_rounding = Rounding::nearest_even;
      q.nan_encoding = NanEncoding::propagate;
      return q;
    }
  }
  return std::nullopt;
}

std::string model_evidence(Instruction ins) {
  // The instructions of issue 21: "probed" like the others, with what the 2026-11-24 runs measured.
  const std::string issue21 =
      "probed: inferred from H100 and H200 probes and the adversarial corpus (2026-11-24), 0 mismatches on 10^6 random "
      "tiles on each GPU (results/probes); ";
  switch (ins) {
    case Instruction::wgmma_m64n8k16_f16_f16: return issue21 + "the numerics of mma.sync f16 -> f16";
    case Instruction::wgmma_m64n8k32_e4m3_f16:
    case Instruction::wgmma_m64n8k32_e5m2_f16:
      return issue21 + "fp8 wgmma's block of 32 at 13 fraction bits, rounded to nearest fp16";
    case Instruction::wgmma_m64n8k32_e4m3_e5m2_f32: return issue21 + "the numerics of wgmma e4m3 -> fp32";
    case Instruction::mma_m16n8k32_e4m3_f16:
    case Instruction::mma_m16n8k32_e5m2_f16:
      return issue21 + "two interleaved f16 -> f16 steps, C added last to nearest (the fp16 HMMA pair of the SASS)";
    case Instruction::mma_m16n8k32_e4m3_e5m2_f32:
      return issue21 + "fp8 mma.sync's two interleaved fp16 steps, operands converted to fp16 first";
    case Instruction::mma_m16n8k8_f16_f32:
    case Instruction::mma_m16n8k8_bf16_f32: return issue21 + "m16n8k16's numerics in one block of 8";
    case Instruction::mma_m16n8k4_tf32_f32: return issue21 + "m16n8k8 tf32's numerics in one block of 4";
    case Instruction::wgmma_m64n16k16_f16_f32: return issue21 + "the numerics of wgmma m64n8k16 (N = 16 changes nothing)";
    case Instruction::tcgen05_m128n8k16_f16_f32:
    case Instruction::tcgen05_m128n8k16_bf16_f32:
    case Instruction::tcgen05_m128n8k8_tf32_f32:
    case Instruction::tcgen05_m128n8k32_e4m3_f32:
    case Instruction::tcgen05_m128n8k32_e5m2_f32:
    case Instruction::tcgen05_m128n8k16_f16_f16:
      return "not on Hopper: Blackwell's tcgen05, a model from the literature (reference/tc_gpus.hpp)";
    case Instruction::mma_m8n8k4_f16_f32:
    case Instruction::mma_m8n8k4_f16_f16:
      return "not modelled on Hopper: Volta's mma.m8n8k4, modelled on Volta only (reference/tc_gpus.hpp)";
    case Instruction::wmma_m16n16k16_f16_f16:
      return "probed on the H200 (2026-11-29, `gemmlab probe --instructions wmma_m16n16k16_f16_f16`): the numerics of "
             "mma.sync f16 -> f16, as wmma f16 -> f32 has mma.sync's";
    case Instruction::mma_m8n8k4_f64:
    case Instruction::mma_m16n8k4_f64:
    case Instruction::mma_m16n8k8_f64:
    case Instruction::mma_m16n8k16_f64:
      return std::string("probed on the H100 and H200 (2026-11-24): one chain of binary64 FMAs from C in increasing k, "
                         "NaN operands propagated quieted, inf * 0 and inf - inf 0xfff8000000000000; every probe and corpus case "
                         "reproduced (identical bits on both GPUs), 0 mismatches on 10^6 random tiles each (results/probes); "
                         "probed as `gemmlab probe --corpus --instructions ") +
             info(ins).name + "`";
    default: return "probed: inferred from H100 and H200 probes, 0 mismatches on 10^6 random tiles (results/probes)";
  }
}

}  // namespace gemmlab::tc
