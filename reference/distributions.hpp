// Controlled input distributions. Each is generated deterministically from a seed by a
// counter-based generator (same values on every platform and thread count), then rounded to the
// kernel's input format; the reference is computed on exactly those rounded values.
//
// Canonical names carry their parameters, so the CSV's `distribution` column says everything:
//   uniform_0_1          U[0,1)
//   uniform_-1_1         U[-1,1)
//   normal_0_1           N(0,1)
//   logunif_L_H          magnitude 2^U[L,H) (log-uniform over binades L..H), random sign
//   cancel_E             cancellation-heavy: the second half of K repeats A's first half while B's
//                        second half negates B's first half up to a relative perturbation 2^E, so
//                        C is about 2^E |A||B|, reached through large partial sums
//   exactint_R           integers in [-R, R]; every product and partial sum is exact in the output
//                        format when K R^2 <= 2^p_out (checked: see exact_in), so the only correct
//                        error is zero
// The parser accepts these names and the aliases "uniform01", "uniform_pm1", "normal", "logunif",
// "cancel", "exactint" (default parameters), and rejects anything else with a message that lists
// the valid names.
#pragma once
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>
#include "reference/formats.hpp"
#include "reference/matrix.hpp"

namespace gemmlab {

enum class DistKind { uniform01, uniform_pm1, normal, logunif, cancel, exactint };

struct Distribution {
  DistKind kind = DistKind::uniform01;
  double p1 = 0, p2 = 0;  // logunif: L, H binades; cancel: E; exactint: R
  std::string name() const;  // canonical name, e.g. "logunif_-8_8"
};

// Throws std::invalid_argument with a message naming the bad input and listing valid names.
Distribution parse_distribution(std::string_view name);
// The default list ("all" in the CLI): one of each kind with default parameters.
const std::vector<Distribution>& default_distributions();

// Which operand: A and B of one problem get independent streams from one seed.
enum class Operand { A = 0, B = 1 };

// Generates the (rows, cols) operand, row-major, every value rounded to `fmt`. For cancel, the
// structure couples A and B: generate both with the same seed and K (A is (M,K), B is (K,N)).
Matrix generate(const Distribution& d, Operand which, int rows, int cols, Format fmt,
                std::uint64_t seed, int threads = 0);

// For exactint: whether the exact product is representable in `out` for this K (K R^2 <= 2^p and
// every input integer fits the input format). Empty string when fine, else the reason.
std::string exact_in(const Distribution& d, Format in, Format out, int K);

}  // namespace gemmlab
