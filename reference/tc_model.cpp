// Bit-exact tensor-core model; see tc_model.hpp for the numerics.
#include "reference/tc_model.hpp"

#include <cmath>
#include <cstring>
#include <limits>
#include <sstream>
#include <stdexcept>

namespace gemmlab::tc {

namespace {

using i128 = __int128;
using u128 = unsigned __int128;

int bit_length(u128 v) {
  const std::uint64_t hi = (std::uint64_t)(v >> 64), lo = (std::uint64_t)v;
  if (hi) return 128 - __builtin_clzll(hi);
  return lo ? 64 - __builtin_clzll(lo) : 0;
}

u128 uabs(i128 v) { return v < 0 ? (u128)(-v) : (u128)v; }

// An exact dyadic number sign * mag * 2^exp.
struct Exact {
  i128 v = 0;  // signed significand
  int e = 0;   // exponent of its least significant bit
};

// Decompose a finite double x (exactly representable in a format of precision p and minimum
// normal exponent emin) as m * 2^lsb with m an integer of at most p bits, and the exponent the
// format gives it (emin for subnormals).
struct Decomposed {
  bool neg;
  std::uint64_t m;
  int lsb;
  int exponent;  // format exponent: floor(log2|x|) for normals, emin for subnormals
};

Decomposed decompose(double x, int p, int emin) {
  Decomposed d{std::signbit(x), 0, 0, 0};
  std::uint64_t bits;
  std::memcpy(&bits, &x, sizeof bits);
  const int be = (int)((bits >> 52) & 0x7ff);
  if (be != 0 && be != 0x7ff) {  // a normal double (every value the model sees): read the bits
    const int e = be - 1023;
    const std::uint64_t m53 = (bits & ((std::uint64_t(1) << 52) - 1)) | (std::uint64_t(1) << 52);
    d.exponent = std::max(e, emin);
    d.lsb = d.exponent - (p - 1);
    const int shift = d.lsb - (e - 52);  // bits of m53 below the format's last place
    if (shift <= 0) {
      d.m = m53 << -shift;
    } else {
      d.m = shift >= 64 ? 0 : m53 >> shift;
      if (shift >= 64 || (d.m << shift) != m53)
        throw std::logic_error("tc_model: value not representable in the format's precision");
    }
    return d;
  }
  double ax = std::fabs(x);
  int e = std::ilogb(ax);
  if (e < emin) e = emin;
  d.exponent = e;
  d.lsb = e - (p - 1);
  double m = std::ldexp(ax, -d.lsb);
  d.m = (std::uint64_t)m;
  if ((double)d.m != m) throw std::logic_error("tc_model: value not representable in the format's precision");
  return d;
}

// Right-shift a signed value by s > 0 bits with the alignment rounding mode.
i128 shift_right(i128 v, int s, Rounding mode) {
  bool neg = v < 0;
  u128 mag = uabs(v);
  u128 t, rem;
  if (s >= 127) {
    t = 0;
    rem = mag;
  } else {
    t = mag >> s;
    rem = mag - (t << s);
  }
  switch (mode) {
    case Rounding::toward_zero:
      break;
    case Rounding::floor:
      if (neg && rem != 0) t += 1;
      break;
    case Rounding::nearest_even:
      if (s < 127 && rem != 0) {
        u128 half = (u128)1 << (s - 1);
        if (rem > half || (rem == half && (t & 1))) t += 1;
      }
      break;
  }
  return neg ? -(i128)t : (i128)t;
}

// Exact sum of two dyadic numbers of at most ~60 significant bits each (the model's sums). When
// the exponent gap is too wide for the 126-bit window, the bits of the lower number below the
// window are folded into a sticky bit at the window's last place: with >= 60 bits of window below
// the higher number, no rounding to <= 53 bits can tell the difference.
Exact add(Exact a, Exact b) {
  if (a.v == 0) return b;
  if (b.v == 0) return a;
  if (a.e < b.e) std::swap(a, b);  // a has the higher lsb
  int gap = a.e - b.e;
  int room = 122 - bit_length(uabs(a.v));
  if (gap > room) {
    int d = gap - room;
    bool neg = b.v < 0;
    u128 mag = uabs(b.v);
    u128 t = d >= 127 ? 0 : mag >> d;
    bool sticky = d >= 127 ? mag != 0 : (mag - (t << d)) != 0;
    t = (t << 1) | (sticky ? 1 : 0);  // one extra place, so the sticky sits below every kept bit
    b = {neg ? -(i128)t : (i128)t, b.e + d - 1};
    gap = room + 1;
  }
  return {(a.v << gap) + b.v, b.e};
}

}  // namespace

const char* to_string(AlignReference r) {
  return r == AlignReference::exponent_sum ? "exponent_sum" : "value_exponent";
}

const char* to_string(CEntry c) { return c == CEntry::first_block ? "first_block" : "final_add"; }

int TcParams::fraction_bits() const { return gemmlab::info(output).precision - 1 + neab; }

std::string TcParams::describe() const {
  std::ostringstream s;
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
  return s.str();
}

namespace {

// Round an exact number into format f, keeping `fraction_bits` below the leading bit (-1: the
// format's p - 1) within f's exponent range.
double round_exact(Format f, Exact x, Rounding mode, bool subnormals, int fraction_bits = -1) {
  if (x.v == 0) return 0.0;
  const FormatInfo& ff = gemmlab::info(f);
  const int fb = fraction_bits < 0 ? ff.precision - 1 : std::min(fraction_bits, ff.precision - 1);
  bool neg = x.v < 0;
  u128 mag = uabs(x.v);
  int nb = bit_length(mag);
  int E = x.e + nb - 1;  // exponent of the exact value
  int lsb = std::max(E, ff.emin) - fb;
  int s = lsb - x.e;
  u128 t = mag;
  if (s > 0) {
    u128 rem;
    if (s >= 127) {
      t = 0;
      rem = mag;
    } else {
      t = mag >> s;
      rem = mag - (t << s);
    }
    if (mode == Rounding::nearest_even && rem != 0 && s < 127) {
      u128 half = (u128)1 << (s - 1);
      if (rem > half || (rem == half && (t & 1))) t += 1;
    }
  } else {
    lsb = x.e;
  }
  double r = std::ldexp((double)t, lsb);  // t has at most p+1 bits: exact
  if (r > ff.max_finite) {
    if (mode == Rounding::toward_zero || !ff.has_infinity) r = ff.max_finite;
    else r = std::numeric_limits<double>::infinity();
  }
  if (!subnormals && r < std::ldexp(1.0, ff.emin)) r = 0.0;
  // A non-zero sum that rounds to zero gives +0 (measured on H200: mma.sync writes 0x00000000, not
  // the IEEE -0, for a negative sum below the smallest subnormal).
  if (r == 0) return 0.0;
  return neg ? -r : r;
}

Exact exact_of(double x) {
  if (x == 0) return {};
  Decomposed d = decompose(x, 53, -1074);
  return {d.neg ? -(i128)d.m : (i128)d.m, d.lsb};
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
};

// One fused block: c + sum of `n` products.
double block(const TcParams& p, const double* a, const double* b, int n, double c) {
  // Products and their alignment exponents are those of the operands as the multiplier sees them
  // (after an exact conversion, e.g. e4m3 -> fp16, subnormal e4m3 values become normal fp16 ones).
  const FormatInfo &fi = gemmlab::info(p.operand_conversion ? *p.operand_conversion : p.input),
                   &fo = gemmlab::info(p.output);
  const int F = p.fraction_bits();
  Term terms[64];
  int nt = 0;
  for (int i = 0; i < n; ++i) {
    double x = a[i], y = b[i];
    if (!p.subnormal_inputs) {  // subnormal in the instruction's input format
      const double nmin = std::ldexp(1.0, gemmlab::info(p.input).emin);
      if (std::fabs(x) < nmin) x = 0;
      if (std::fabs(y) < nmin) y = 0;
    }
    if (x == 0 || y == 0) continue;
    Decomposed dx = decompose(x, fi.precision, fi.emin), dy = decompose(y, fi.precision, fi.emin);
    i128 m = (i128)dx.m * (i128)dy.m;
    Exact v{(dx.neg != dy.neg) ? -m : m, dx.lsb + dy.lsb};
    int ref = p.align_reference == AlignReference::exponent_sum ? dx.exponent + dy.exponent
                                                                : v.e + bit_length(uabs(v.v)) - 1;
    terms[nt++] = {v, ref};
  }
  if (!p.subnormal_output && std::fabs(c) < std::ldexp(1.0, fo.emin)) c = std::copysign(0.0, c);
  Exact ce{};
  int cref = 0;
  if (c != 0) {
    Decomposed dc = decompose(c, fo.precision, fo.emin);
    ce = {dc.neg ? -(i128)dc.m : (i128)dc.m, dc.lsb};
    cref = p.align_reference == AlignReference::exponent_sum ? dc.exponent : ce.e + bit_length(uabs(ce.v)) - 1;
  }
  if (nt == 0 && c == 0) {
    // sign of an all-zero sum: IEEE semantics of c + (+-0 products)
    double z = c;
    for (int i = 0; i < n; ++i) z = z + a[i] * b[i] * 0.0;
    return z == 0 ? z : 0.0;
  }
  if (nt == 0 && !p.c_in_alignment)  // C passes through, re-rounded only by flushing and the cut
    return round_exact(p.output, ce, p.output_rounding, p.subnormal_output, p.result_fraction_bits);
  int emax = std::numeric_limits<int>::min();
  for (int i = 0; i < nt; ++i) emax = std::max(emax, terms[i].ref);
  bool c_joins = p.c_in_alignment && c != 0;
  if (c_joins) emax = std::max(emax, cref);
  // A zero C enters the datapath with a fixed small exponent: the aligned sum's quantum has a floor.
  if (p.zero_c_offset >= 0 && p.c_in_alignment && c == 0) emax = std::max(emax, fo.emin - p.zero_c_offset);
  const int q = emax - F;  // exponent of the quantum of the aligned sum
  i128 sum = 0;
  auto aligned = [&](Exact v) -> i128 {
    int s = v.e - q;
    if (s >= 0) return v.v << s;
    return shift_right(v.v, -s, p.align_rounding);
  };
  for (int i = 0; i < nt; ++i) sum += aligned(terms[i].value);
  Exact total{sum, q};
  if (c_joins) total.v += aligned(ce);
  else if (c != 0) total = add(total, ce);
  if (total.v == 0) return 0.0;
  return round_exact(p.output, total, p.output_rounding, p.subnormal_output, p.result_fraction_bits);
}

bool special(double x) { return std::isnan(x) || std::isinf(x); }

}  // namespace

double dot(const TcParams& p, const double* a, const double* b, int k, double c) {
  bool any_special = special(c);
  for (int i = 0; i < k && !any_special; ++i) any_special = special(a[i]) || special(b[i]);
  if (any_special) {
    // NaN and infinity follow IEEE: any NaN, inf*0 or inf-inf gives NaN; otherwise the infinity.
    bool nan = std::isnan(c);
    int pos = std::isinf(c) && c > 0, neg = std::isinf(c) && c < 0;
    for (int i = 0; i < k; ++i) {
      double x = a[i], y = b[i];
      if (std::isnan(x) || std::isnan(y)) nan = true;
      else if ((std::isinf(x) && y == 0) || (std::isinf(y) && x == 0)) nan = true;
      else if (std::isinf(x) || std::isinf(y)) ((std::signbit(x) != std::signbit(y)) ? neg : pos) = 1;
    }
    if (nan || (pos && neg)) return std::numeric_limits<double>::quiet_NaN();
    if (pos || neg) return pos ? std::numeric_limits<double>::infinity() : -std::numeric_limits<double>::infinity();
  }
  if (p.block_size <= 0 || k % p.block_size != 0) throw std::invalid_argument("tc_model: block size must divide k");
  if (p.fraction_bits() < 0 || p.fraction_bits() > 96) throw std::invalid_argument("tc_model: F out of range");
  if (p.step_interleave < 0 || p.block_size > 64) throw std::invalid_argument("tc_model: bad block split");
  const int nblocks = k / p.block_size;
  double acc = p.c_entry == CEntry::first_block ? c : 0.0;
  double ga[64], gb[64];
  for (int j = 0; j < nblocks && std::isfinite(acc); ++j) {
    const double *pa = a + j * p.block_size, *pb = b + j * p.block_size;
    if (p.step_interleave > 0 && nblocks > 1) {  // groups of g indices dealt round robin
      int n = 0;
      for (int i = 0; i < k; ++i)
        if ((i / p.step_interleave) % nblocks == j) {
          ga[n] = a[i];
          gb[n] = b[i];
          ++n;
        }
      if (n != p.block_size) throw std::invalid_argument("tc_model: interleave does not deal equal blocks");
      pa = ga;
      pb = gb;
    }
    acc = block(p, pa, pb, p.block_size, acc);
  }
  // an overflowed block result stays infinite: the remaining inputs are finite
  if (p.c_entry == CEntry::final_add && std::isfinite(acc)) {
    // one addition C + acc rounded to nearest even in the output format (an FADD: no flush)
    if (c == 0 && acc == 0) return c + acc;  // IEEE sign of a zero sum
    Exact s = add(exact_of(acc), exact_of(c));
    if (s.v == 0) return 0.0;
    return round_exact(p.output, s, Rounding::nearest_even, true);
  }
  return acc;
}

const std::vector<Instruction>& all_instructions() {
  static const std::vector<Instruction> v = {
      Instruction::mma_m16n8k16_f16_f32, Instruction::mma_m16n8k16_f16_f16, Instruction::mma_m16n8k16_bf16_f32,
      Instruction::mma_m16n8k8_tf32_f32, Instruction::mma_m16n8k32_e4m3_f32, Instruction::mma_m16n8k32_e5m2_f32,
      Instruction::wgmma_m64n8k16_f16_f32, Instruction::wgmma_m64n8k16_bf16_f32, Instruction::wgmma_m64n8k8_tf32_f32,
      Instruction::wgmma_m64n8k32_e4m3_f32, Instruction::wgmma_m64n8k32_e5m2_f32, Instruction::wmma_m16n16k16_f16_f32};
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
  };
  return table[(int)i];
}

std::optional<Instruction> parse_instruction(const std::string& name) {
  for (Instruction i : all_instructions())
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
  p.output = info(ins).output;
  p.block_size = 16;
  p.neab = 2;
  p.align_rounding = Rounding::toward_zero;
  p.output_rounding = Rounding::toward_zero;
  p.align_reference = AlignReference::exponent_sum;
  p.c_in_alignment = true;
  p.subnormal_inputs = true;
  p.subnormal_output = true;
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
  }
  return std::nullopt;
}

}  // namespace gemmlab::tc
