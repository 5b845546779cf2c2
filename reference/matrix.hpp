// Host matrices as the reference sees them: row-major, values stored as double (every input format
// is a subset of binary64, so the values the GPU receives are held exactly).
#pragma once
#include <cstddef>
#include <vector>

namespace gemmlab {

struct Matrix {
  int rows = 0, cols = 0;
  std::vector<double> v;  // row-major: element (i, j) at v[i * cols + j]
  Matrix() = default;
  Matrix(int r, int c) : rows(r), cols(c), v(static_cast<std::size_t>(r) * c, 0.0) {}
  double& operator()(int i, int j) { return v[static_cast<std::size_t>(i) * cols + j]; }
  double operator()(int i, int j) const { return v[static_cast<std::size_t>(i) * cols + j]; }
  std::size_t size() const { return v.size(); }
};

}  // namespace gemmlab
