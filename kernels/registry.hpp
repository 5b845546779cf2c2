// The registry: every kernel variant, in the order of the family lists, then the kernels
// registered at run time (plugins, experiments/engine/plugin.hpp) in the order they were added.
// `all` and `family:<name>` select from this one list, so a loaded plugin's kernels join them.
#pragma once
#include <string>
#include <string_view>
#include <vector>
#include "kernels/kernel.hpp"

namespace gemmlab {

// The built-in kernels, then those registered at run time (plugins, Python callables), in the order
// they were registered. Registration happens before a run starts; the list is not to be changed
// while a run reads it.
const std::vector<const Kernel*>& all_kernels();
const Kernel* find_kernel(std::string_view name);  // nullptr if unknown

// Adds a kernel after the built-ins and the kernels added before; `k` must live for the process.
// Call it before any run starts (registrations are serialised, but readers of all_kernels() are
// not locked against them). Throws std::invalid_argument if a kernel of that name is registered.
void register_kernel(const Kernel& k);
// Removes a kernel registered at run time by name (a Python callable once judged); built-in
// kernels stay. Like register_kernel, not while a run reads the list.
void unregister_kernel(std::string_view name);

// Empty if the kernel can take (M, N, K); otherwise a message naming the kernel, the size and what
// it needs ("hgemm_mma_03 needs M, N multiples of 128 and K a multiple of 32; got 100x128x64").
std::string check_size(const Kernel& k, int M, int N, int K);

}  // namespace gemmlab
