// Tile sizes of sgemm_09_autotuned. NOT YET TUNED: Boehm's starting point (his kernel 6 shape),
// to be overwritten by `gemmlab tune`, which writes the GPU, date and command here.
#pragma once

namespace gemmlab::kernels::sgemm09::tuned {
constexpr int BM = 128, BN = 128, BK = 8, TM = 8, TN = 8;
}  // namespace gemmlab::kernels::sgemm09::tuned
