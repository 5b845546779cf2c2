// Correct rounding of an MPFR value into a gemmlab format (one rounding, no double rounding).
#pragma once
#include <mpfr.h>
#include "reference/formats.hpp"

namespace gemmlab {

// Round-to-nearest-even of x into f, with subnormals and the same overflow rule as round_to.
// The result is returned as the (exactly representable) double.
double round_to(Format f, mpfr_srcptr x);

}  // namespace gemmlab
