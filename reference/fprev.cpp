#include "reference/fprev.hpp"

#include <algorithm>
#include <cmath>
#include <sstream>
#include <stdexcept>
#include <utility>

namespace gemmlab {
namespace {

int ceil_log2(int n) {
  int e = 0;
  while ((1 << e) < n) ++e;
  return e;
}

int min_subnormal_exponent(Format f) {
  const FormatInfo& ff = info(f);
  return ff.emin - (ff.precision - 1);
}

}  // namespace

double FprevMasks::a_big() const { return std::ldexp(1.0, e_a_big); }
double FprevMasks::b_big() const { return std::ldexp(1.0, e_b_big); }
double FprevMasks::a_unit() const { return std::ldexp(1.0, e_a_unit); }
double FprevMasks::b_unit() const { return std::ldexp(1.0, e_b_unit); }
double FprevMasks::unit() const { return std::ldexp(1.0, e_a_unit + e_b_unit); }
int FprevMasks::groups(int units) const { return std::max(1, (units + group - 1) / group); }

std::string FprevMasks::describe() const {
  std::ostringstream s;
  s << "M = 2^" << e_a_big + e_b_big << " (2^" << e_a_big << " * 2^" << e_b_big << "), u = 2^" << e_a_unit + e_b_unit
    << " (2^" << e_a_unit << " * 2^" << e_b_unit << "), margin 2^" << margin_bits;
  if (group >= K) s << " = M / (K u)";
  else
    s << " = M / (G u): units counted in groups of G = " << group << " (" << groups(K - 2)
      << " items per pair, their counts added)";
  return s.str();
}

FprevMasks choose_fprev_masks(Format input, Format compute, Format accumulator, Format output, int K, FprevUnits units,
                              FprevCarrier carrier) {
  int e_in_max = 1 << 20, e_in_min_norm = -(1 << 20), e_in_min_sub = -(1 << 20);
  for (Format f : {input, compute}) {
    const FormatInfo& ff = info(f);
    e_in_max = std::min(e_in_max, static_cast<int>(std::floor(std::log2(ff.max_finite))));
    e_in_min_norm = std::max(e_in_min_norm, ff.emin);
    e_in_min_sub = std::max(e_in_min_sub, min_subnormal_exponent(f));
  }
  int e_sum_max = 1 << 20, e_sum_min = -(1 << 20), p_sum = 1 << 20;
  for (Format f : {accumulator, output}) {
    const FormatInfo& ff = info(f);
    e_sum_max = std::min(e_sum_max, static_cast<int>(std::floor(std::log2(ff.max_finite))) - 2);
    e_sum_min = std::max(e_sum_min, min_subnormal_exponent(f));
    p_sum = std::min(p_sum, ff.precision);
  }
  if (units == FprevUnits::one_group && K > (1 << p_sum))
    throw std::invalid_argument("K = " + std::to_string(K) + " is too large: counts up to K must be exact in " +
                                info(output).name + " (K <= " + std::to_string(1 << p_sum) + ")");
  // The most units one item counts, for choosing u: K, or as many as the output holds exactly.
  const int n = std::min(K, 1 << std::min(p_sum, 30));
  FprevMasks m;
  m.K = K;
  const bool one = carrier != FprevCarrier::both;  // one operand holds M and u, the other 1
  const int e_M = std::min({one ? e_in_max : 2 * e_in_max, e_sum_max, 40});
  m.e_a_big = one ? 0 : (e_M + 1) / 2;
  m.e_b_big = e_M - m.e_a_big;
  const int lk = ceil_log2(n), target = e_M - lk - 48;
  int e_u = std::max({target, e_in_min_norm, e_sum_min});
  if (e_M - e_u - lk < 30) e_u = std::max({target, one ? e_in_min_sub : 2 * e_in_min_sub, e_sum_min});
  if (e_u >= e_in_min_sub) {
    m.e_a_unit = 0;
    m.e_b_unit = e_u;
  } else {
    m.e_b_unit = e_in_min_sub;
    m.e_a_unit = e_u - e_in_min_sub;
  }
  if (carrier == FprevCarrier::a) {
    std::swap(m.e_a_big, m.e_b_big);
    std::swap(m.e_a_unit, m.e_b_unit);
  }
  m.group = K;
  if (units == FprevUnits::grouped) {
    // (a) and (b) of the header: log2 G <= p_sum and e_M - e_u - log2 G >= 26.
    const int lg = std::min(p_sum, e_M - e_u - 26);
    if (lg < 0)
      throw std::invalid_argument("FPRev masks for " + std::string(info(input).name) + " products: M = 2^" +
                                  std::to_string(e_M) + " lies only 2^" + std::to_string(e_M - e_u) +
                                  " above the smallest unit u, less than the 2^26 that one unit needs to be absorbed");
    if (lg < 30 && (1 << lg) < K) m.group = 1 << lg;
  }
  m.margin_bits = e_M - e_u - ceil_log2(m.group);
  return m;
}

}  // namespace gemmlab
