// The row grids of the GPU exact reference's splits (reference/int8_split.hpp, reference/crt_split.hpp), as
// the CPU tests of both compute them: per row of X (rows, cols), read as X(r, k) = at(r, k), the grid (the
// smallest lsb of its non-zero entries; INT_MAX for an all-zero row) and the widest spread of any row (top
// bit minus grid).
#pragma once
#include <algorithm>
#include <bit>
#include <climits>
#include <vector>

#include "reference/long_accumulator.hpp"

namespace gemmlab::testing {

template <class At>
void row_grids(int rows, int cols, At at, std::vector<int>& e, int& spread) {
  e.assign(rows, INT_MAX);
  spread = 0;
  for (int r = 0; r < rows; ++r) {
    int top = INT_MIN;
    for (int k = 0; k < cols; ++k) {
      const double x = at(r, k);
      if (x == 0) continue;
      const detail::Decomposed d = detail::decompose(x);
      e[r] = std::min(e[r], d.lsb);
      top = std::max(top, d.lsb + static_cast<int>(std::bit_width(d.m)));
    }
    if (e[r] != INT_MAX) spread = std::max(spread, top - e[r]);
  }
}

}  // namespace gemmlab::testing
