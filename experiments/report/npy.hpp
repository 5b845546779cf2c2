// Reading NumPy .npy files (the writer, write_npy, is in report/files.hpp): what `gemmlab evaluate`
// reads a user's C, and A and B of a `gemmlab inputs` folder, from. Only what those need: 2-D
// little-endian float16, float32 or float64 arrays, C or Fortran order, format versions 1-3.
#pragma once
#include <string>
#include <vector>

namespace gemmlab {

struct NpyArray {
  std::string dtype;       // numpy's name: "float16", "float32" or "float64"
  int rows = 0, cols = 0;  // shape (rows, cols)
  std::vector<double> v;   // row-major values, converted exactly to double
};

// Throws UsageError (experiments/plan/plan.hpp) naming the file and what is wrong with it: missing,
// not an .npy file, not 2-D, an element type other than float16/32/64, or truncated.
NpyArray read_npy(const std::string& path);

}  // namespace gemmlab
