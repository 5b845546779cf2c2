// The generator cases that tests/cpu/test_distribution_digests.cpp pins by golden digests and
// tests/gpu/test_inputs_gpu.cpp replays on the GPU: every distribution of default_distributions()
// plus expspread_0.5, expspread_4, logunif_-140_-120, cancel_-3 and exactint_16, operand A (37, 53)
// and B (53, 29), seed 20261121. The odd sizes give cancel an odd K (its zero column/row) and a half
// that is not a power of two.
#pragma once
#include <cstdint>
#include <vector>

#include "reference/distributions.hpp"

namespace gemmlab::testing {

constexpr std::uint64_t kCaseSeed = 20261121;
constexpr int kCaseM = 37, kCaseK = 53, kCaseN = 29;

inline std::vector<Distribution> case_distributions() {
  std::vector<Distribution> ds = default_distributions();
  for (const char* n : {"expspread_0.5", "expspread_4", "logunif_-140_-120", "cancel_-3", "exactint_16"})
    ds.push_back(parse_distribution(n));
  return ds;
}

}  // namespace gemmlab::testing
