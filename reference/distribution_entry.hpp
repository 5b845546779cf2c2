// One entry of a generated operand, as a function of (plan, i, j): the arithmetic of every
// distribution kind and the rounding to the input format, written once for the CPU generator
// (reference/distributions.cpp's generate) and the GPU generator (experiments/device/inputs_gpu.cu),
// which therefore agree bit for bit. Every floating-point operation is a pfp:: call
// (reference/portable_fp.hpp: unfused binary64 on the host, __dadd_rn & co. on the device), the
// elementary functions are rng.hpp's hand-written ones, the rounding is pfp::round_format (equal to
// round_to), and everything else is integer arithmetic, exact on both.
//
// Entry (i, j) depends only on (seed, operand, distribution, i, j), and for cancel also on K (the
// pairing), never on another entry's computed value: cancel's second half of B,
// B(h+k, j) = -RN(B(k, j) (1 + 2^E d)), recomputes its partner B(k, j) from the partner's Philox
// block (the block of (k, j) carries both the base value and d), so one pass with one thread per
// entry reproduces the coupling; no second pass over the first half is needed.
//
// Plain C++: no CUDA header. Under nvcc the functions are __host__ __device__.
#pragma once
#include <cstdint>

#include "reference/distributions.hpp"
#include "reference/formats.hpp"
#include "reference/portable_fp.hpp"
#include "reference/rng.hpp"

namespace gemmlab::dist_detail {

// Philox stream id: distribution kind and operand (and nothing else, so a distribution's A and
// B never share values, and two kinds never share a stream). expspread's uniform U uses the stream
// with bit 16 set.
constexpr std::uint32_t stream_of(DistKind k, Operand op) {
  return (static_cast<std::uint32_t>(k) << 8) | static_cast<std::uint32_t>(op);
}

// What every entry of one operand needs, as plain data (a GPU kernel takes it by value).
struct EntryPlan {
  DistKind kind = DistKind::uniform01;
  bool operand_a = true;    // cancel: A repeats its first half, B negates and perturbs it
  std::uint64_t seed = 0;
  std::uint32_t stream = 0;
  int L = 0, span = 1;      // logunif: binades L .. L + span - 1
  double pert = 0;          // cancel: 2^E
  int h = 0;                // cancel: K / 2, K = cols of A (M, K) or rows of B (K, N)
  std::uint64_t R = 0;      // exactint
  double phi = 0;           // expspread
  pfp::FormatParams fmt;    // the input format
};

// The plan of operand `which` (rows, cols) of d in fmt. Throws std::invalid_argument exactly where
// generate() does (negative shape; unusable_reason not empty). Host code (distributions.cpp).
EntryPlan entry_plan(const Distribution& d, Operand which, int rows, int cols, Format fmt, std::uint64_t seed);

// 2u - 1 with u a 53-bit uniform: multiples of 2^-52 in [-1, 1).
GEMMLAB_HD double uniform_pm1(std::uint64_t x) { return pfp::sub(pfp::mul(2.0, rng::uniform53(x)), 1.0); }

GEMMLAB_HD rng::Block block(const EntryPlan& p, int i, int j) {
  return rng::bits(p.seed, p.stream, static_cast<std::uint32_t>(i), static_cast<std::uint32_t>(j));
}

// Entry (i, j) in binary64, before the final rounding to the input format (distributions.hpp
// says what each kind is).
GEMMLAB_HD double raw_entry(const EntryPlan& p, int i, int j) {
  using namespace pfp;
  switch (p.kind) {
    case DistKind::uniform01: return rng::uniform53(rng::word64(block(p, i, j), 0));
    case DistKind::uniform_pm1: return uniform_pm1(rng::word64(block(p, i, j), 0));
    case DistKind::normal: {
      const rng::Block b = block(p, i, j);
      return rng::normal(rng::word64(b, 0), rng::word64(b, 1));
    }
    case DistKind::logunif: {
      const rng::Block b = block(p, i, j);
      const std::uint64_t x1 = rng::word64(b, 1);
      const int binade = p.L + static_cast<int>(rng::below(rng::word64(b, 0), static_cast<std::uint64_t>(p.span)));
      const double mag = pfp::ldexp(rng::exp2_frac(rng::uniform53(x1)), binade);
      return (x1 & 1) ? -mag : mag;  // low bit: unused by uniform53
    }
    case DistKind::exactint:
      return static_cast<double>(static_cast<std::int64_t>(rng::below(rng::word64(block(p, i, j), 0), 2 * p.R + 1)) -
                                 static_cast<std::int64_t>(p.R));
    case DistKind::expspread: {
      const rng::Block b = block(p, i, j);  // the normal's two words
      const rng::Block u = rng::bits(p.seed, p.stream | 0x10000u, static_cast<std::uint32_t>(i),
                                     static_cast<std::uint32_t>(j));
      const double z = rng::normal(rng::word64(b, 0), rng::word64(b, 1));
      return mul(sub(rng::uniform53(rng::word64(u, 0)), 0.5), rng::exp(mul(p.phi, z)));
    }
    case DistKind::cancel: {
      // Base entries live at (row, k) of A and (k, col) of B with k < h.
      const int h = p.h;
      if (p.operand_a) {
        if (j >= 2 * h) return 0.0;
        return uniform_pm1(rng::word64(block(p, i, j < h ? j : j - h), 0));
      }
      if (i >= 2 * h) return 0.0;
      const rng::Block b = block(p, i < h ? i : i - h, j);
      const double base = round_format(uniform_pm1(rng::word64(b, 0)), p.fmt);
      if (i < h) return base;
      const double delta = uniform_pm1(rng::word64(b, 1));
      return -round_format(mul(base, add(1.0, mul(p.pert, delta))), p.fmt);
    }
  }
  return 0.0;
}

// Entry (i, j) rounded to the input format: the value generate() returns.
GEMMLAB_HD double entry(const EntryPlan& p, int i, int j) { return pfp::round_format(raw_entry(p, i, j), p.fmt); }

}  // namespace gemmlab::dist_detail
