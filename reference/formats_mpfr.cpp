// Correct rounding of an MPFR value into a gemmlab format.
//
// Numerics: one rounding, straight from the MPFR value. With t = floor(log2 |x|), the target grid
// near x has quantum 2^(max(t, emin) - p + 1), so on that grid x has t - max(t, emin) + p
// significant bits (p when x is normal in the format, fewer in the subnormal range). mpfr_set into
// a variable of exactly that precision with MPFR_RNDN (ties to even) is therefore the correct
// rounding, subnormals included. This does not touch MPFR's
// exponent range (no mpfr_set_emin / mpfr_subnormalize), so it is thread-safe and leaves the
// caller's MPFR state alone; it assumes MPFR's current exponent range is at least binary64's
// (MPFR's default range is far wider). Overflow is decided on the rounded value, as in
// round_to(Format, double): |rounded| > max_finite goes to +-inf, or saturates to +-448 for e4m3; the
// quantized formats' saturation and ranges are finish_rounding's, shared with the binary64 path.
// The temporary uses stack limbs (mpfr_custom interface): no allocation per call.
#include "reference/formats_mpfr.hpp"

#include <cmath>
#include <limits>

namespace gemmlab {

double round_to(Format f, mpfr_srcptr x) {
  const FormatInfo& fi = info(f);
  if (mpfr_nan_p(x)) return std::numeric_limits<double>::quiet_NaN();
  const bool neg = mpfr_signbit(x) != 0;
  constexpr double overflow = std::numeric_limits<double>::infinity();  // finish_rounding saturates
  if (mpfr_inf_p(x)) return finish_rounding(f, neg, overflow);
  if (mpfr_zero_p(x)) return finish_rounding(f, neg, 0.0);

  const mpfr_exp_t t = mpfr_get_exp(x) - 1;  // |x| in [2^t, 2^(t+1))
  const mpfr_exp_t top = t > fi.emin ? t : fi.emin;
  const mpfr_exp_t quantum = top - (fi.precision - 1);
  const mpfr_exp_t prec = t - quantum + 1;  // significant bits x keeps on the target grid

  double r;
  if (prec <= 0) {
    // |x| < 2^quantum: the candidates are 0 and 2^quantum (the smallest subnormal).
    // Above half of it rounds up; exactly half is a tie that goes to the even one, 0.
    if (prec < 0) {
      r = 0.0;
    } else {
      const int cmp = neg ? -mpfr_cmp_si_2exp(x, -1, quantum - 1) : mpfr_cmp_ui_2exp(x, 1, quantum - 1);
      r = cmp > 0 ? std::ldexp(1.0, static_cast<int>(quantum)) : 0.0;
    }
  } else {
    // prec <= 53 for every format: one 64-bit limb holds the significand.
    static_assert(sizeof(mp_limb_t) * 8 >= 53, "one limb must hold a binary64 significand");
    mp_limb_t limb[1];
    mpfr_t tmp;
    mpfr_custom_init(limb, prec);
    mpfr_custom_init_set(tmp, MPFR_ZERO_KIND, 0, prec, limb);
    mpfr_set(tmp, x, MPFR_RNDN);
    mpfr_abs(tmp, tmp, MPFR_RNDN);
    if (mpfr_inf_p(tmp) || mpfr_get_exp(tmp) - 1 > fi.emax) {
      r = overflow;
    } else {
      r = mpfr_get_d(tmp, MPFR_RNDN);  // exact: at most 53 bits, exponent within binary64's range
    }
  }
  return finish_rounding(f, neg, r);
}

}  // namespace gemmlab
