// FPRev's masks (Xie et al., USENIX ATC 2025): the inputs of the masking experiment that reveals a
// kernel's summation tree, chosen for the kernel's formats. Used by `gemmlab order`
// (experiments/device/order.cpp) and `gemmlab explain` (reference/explain.hpp).
//
// Product p = a_big * b_big = +M, product q = a_big * (-b_big) = -M, every other product a_unit *
// b_unit = u; all powers of two, exact in every input and compute format named.
//
// Plain C++: tested on CPU.
#pragma once
#include <string>

#include "reference/formats.hpp"

namespace gemmlab {

struct FprevMasks {
  int e_a_big = 0, e_b_big = 0, e_a_unit = 0, e_b_unit = 0;
  int margin_bits = 0;  // log2(M / (K u)): how far below M's last kept bit all units together lie
  double a_big() const;
  double b_big() const;
  double a_unit() const;
  double b_unit() const;
  double unit() const;
  std::string describe() const;
};

// M as large as the input/compute formats and (a quarter of) the accumulator/output range allow
// (at most 2^40); u small enough that K units stay 2^48 below M where possible, preferring units
// made of normal numbers while the margin stays >= 2^30 (a tensor core keeps 25 fraction bits,
// fp32 24), and never below what the output can hold exactly as n u for every n <= K. Throws
// std::invalid_argument when K units cannot be counted exactly in the output or accumulator.
FprevMasks choose_fprev_masks(Format input, Format compute, Format accumulator, Format output, int K);

}  // namespace gemmlab
