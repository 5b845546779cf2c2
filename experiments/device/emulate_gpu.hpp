// explain's composition on the GPU: emulation::emulate_tree_at's outputs (a kernel's revealed tree with
// its tensor-core nodes, split operands included) computed by a CUDA kernel, one thread per output, with
// the tensor-core model's own block arithmetic (reference/tc_arith.hpp, the code the CPU runs).
//
// It takes trees whose fused nodes are block_fused models of narrow blocks (tc_arith.hpp narrow_fits:
// fp16, bf16, tf32, fp8 and fp32 operands into fp32, fp16 or bf16) in contiguous blocks, and operands exact
// in fp32. An output whose inputs hold a NaN or an infinity, whose running sum becomes one at a fused node,
// or that meets anything else the host's model raises on, is marked by the GPU and computed on the host
// with emulate_tree_at: every output is emulate_tree_at's, bit for bit (tests/gpu/test_emulate_gpu.cpp).
//
// Set GEMMLAB_EMULATE=cpu to keep the composition on the host (gpu, or unset: on the GPU).
#pragma once
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "reference/kernel_emulation.hpp"

namespace gemmlab {

// What the GPU did with the last call on this thread: outputs computed there, outputs left to the host.
struct GpuEmulationCounts {
  long long on_gpu = 0, on_host = 0;
  std::string not_taken;  // why the GPU did not take the call ("" when it did)
  // Where the call's time went: the operands laid out and copied up, the GPU's kernel and the copy back, the
  // marked outputs on the host.
  double prepare_seconds = 0, gpu_seconds = 0, host_seconds = 0;
};

// emulate_tree_at on the current device: nullopt, with `counts->not_taken` saying why, where the GPU does
// not take the tree or its models, or would need more than half of the GPU memory free. Throws
// std::runtime_error on a CUDA error.
std::optional<std::vector<double>> emulate_tree_at_gpu(const SummationTree& tree, const emulation::NodeModel& model,
                                                       const Matrix& A, const Matrix& B,
                                                       const std::vector<std::pair<int, int>>& entries, int threads,
                                                       const emulation::SplitScheme* split,
                                                       GpuEmulationCounts* counts = nullptr);

// For explain::Options::emulate: emulate_tree_at_gpu on the device current when it is called, or nothing
// (an empty function) under GEMMLAB_EMULATE=cpu. Throws std::invalid_argument, naming the values it takes, for
// any other GEMMLAB_EMULATE than cpu, gpu or empty.
emulation::TreeEmulator gpu_tree_emulator();

}  // namespace gemmlab
