// Bit-for-bit equality of two result arrays (so -0 != +0, and NaNs compare by their bits), for the
// CPU and GPU tests alike: how many entries differ and the first one, as (row, column) of an
// (M, N) row-major array, with both values in hex-float.
#pragma once
#include <gtest/gtest.h>

#include <bit>
#include <cstdint>
#include <cstdio>
#include <string>
#include <vector>

namespace gemmlab::testing {

inline std::string hex(double x) {
  char buf[64];
  std::snprintf(buf, sizeof buf, "%a", x);
  return buf;
}

inline ::testing::AssertionResult same_bits(const std::vector<double>& got, const std::vector<double>& want, int N) {
  if (got.size() != want.size())
    return ::testing::AssertionFailure() << "sizes differ: " << got.size() << " vs " << want.size();
  std::size_t bad = 0, first = 0;
  for (std::size_t i = 0; i < got.size(); ++i)
    if (std::bit_cast<std::uint64_t>(got[i]) != std::bit_cast<std::uint64_t>(want[i]))
      if (bad++ == 0) first = i;
  if (bad == 0) return ::testing::AssertionSuccess();
  return ::testing::AssertionFailure() << bad << " entries differ; first (" << first / N << ", " << first % N
                                       << "): " << hex(got[first]) << " vs " << hex(want[first]);
}

}  // namespace gemmlab::testing
