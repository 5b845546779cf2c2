// FPRev's masks (Xie et al., USENIX ATC 2025): the inputs of the masking experiment that reveals a
// kernel's summation tree, chosen for the kernel's formats. Used by `gemmlab order`
// (experiments/device/order.cpp) and `gemmlab explain` (reference/explain.hpp).
//
// Product p = a_big * b_big = +M, product q = a_big * (-b_big) = -M, every other product a_unit *
// b_unit = u; all powers of two, exact in every input and compute format named. The entry then
// returns n u, n the units added after p and q met (the rest are absorbed by M or cancel with it),
// provided every count is exact in the output and every partial sum of units that meets M is absorbed.
//
// Unit groups: where K units are too many for that (e4m3's range leaves M / u = 2^34, and the units
// are subnormal: K = 4096 would leave them only 2^22 below M; a bf16 output holds n u exactly only for
// n <= 256), one query (p, q) becomes several items, item g with only the units of group g non-zero
// (p and q always +M and -M). A zero product changes no partial sum, so the counts of the groups add
// up to the count with every unit present, and each group's count is exact if its G units are.
//
// Plain C++: tested on CPU.
#pragma once
#include <string>

#include "reference/formats.hpp"

namespace gemmlab {

struct FprevMasks {
  int e_a_big = 0, e_b_big = 0, e_a_unit = 0, e_b_unit = 0;
  int K = 0;  // products per entry
  // Units counted by one item: K (one group: every unit in the item, as FPRev has it) or a power of
  // two; a query (p, q) takes groups(K - 2) items, the check with every product a unit groups(K).
  int group = 0;
  int margin_bits = 0;  // log2(M / (group u)): how far below M all of one item's units together lie
  int groups(int units) const;  // ceil(units / group), at least 1
  double a_big() const;
  double b_big() const;
  double a_unit() const;
  double b_unit() const;
  double unit() const;
  std::string describe() const;
};

// How FPRev may count units: all K in one item (`gemmlab order`: one entry, one launch per pair), or
// in groups (`gemmlab explain`).
enum class FprevUnits { one_group, grouped };
// Which operand carries M and u: both (M = a_big * b_big and u = a_unit * b_unit, each factor in its operand's
// range), or one of them alone, the other operand then 1 wherever it is not 0 (an operand that can hold 1 but
// not M or u: the quantized operand of an X x bf16 matmul, whose elements share a scale per block).
enum class FprevCarrier { both, a, b };

// M as large as the input/compute formats and (a quarter of) the accumulator/output range allow
// (at most 2^40); u small enough that n units stay 2^48 below M where possible, preferring units
// made of normal numbers while the margin stays >= 2^30 (a tensor core keeps 25 fraction bits,
// fp32 24), and never below what the output can hold exactly as i u for every i <= n; n = K, or
// with `grouped` at most 2^precision of the output and accumulator.
// one_group: group = K; throws std::invalid_argument when K units cannot be counted exactly in the
// output or accumulator. grouped: group = the largest power of two G with (a) G u exact in the output
// and accumulator (G <= 2^precision) and (b) M / (G u) >= 2^26 (an fp32 accumulator rounding to
// nearest absorbs x into M = 2^e only when |x| < 2^(e-24); two more bits for tensor cores that keep
// 25 fraction bits); group = K when G >= K (then nothing differs from one_group). Throws when not
// even one unit lies 2^26 below M.
// A carrier a or b takes M and u from that operand's range alone: M at most its largest power of two, u at
// least its smallest subnormal.
FprevMasks choose_fprev_masks(Format input, Format compute, Format accumulator, Format output, int K,
                              FprevUnits units = FprevUnits::one_group, FprevCarrier carrier = FprevCarrier::both);

}  // namespace gemmlab
