// The registry: every kernel variant, in the order of the family lists.
#pragma once
#include <string>
#include <string_view>
#include <vector>
#include "kernels/kernel.hpp"

namespace gemmlab {

const std::vector<const Kernel*>& all_kernels();
const Kernel* find_kernel(std::string_view name);  // nullptr if unknown

// Empty if the kernel can take (M, N, K); otherwise a message naming the kernel, the size and what
// it needs ("hgemm_mma_03 needs M, N multiples of 128 and K a multiple of 32; got 100x128x64").
std::string check_size(const Kernel& k, int M, int N, int K);

}  // namespace gemmlab
