// Freeing GPU memory when a kernel under test may hold the GPU forever.
//
// cudaFree waits until the device is idle. Once a launch of a kernel under test has not ended within its
// limit and may still run (engine/watchdog.hpp: a LaunchTimeout with gpu_held), the device never is: a
// destructor's cudaFree on the way out of the row (the problem's inputs, its reference, the statistics'
// scratch) would wait for it forever, and the run would hang after writing the timeout row (the H200,
// 2026-11-29). From then on this process frees nothing on the GPU; it ends soon after (a worker at once, a
// run after its row is journaled), and its memory goes with it.
#pragma once
#include <cuda_runtime.h>

#include "experiments/engine/watchdog.hpp"

namespace gemmlab {

inline void device_free(void* p) noexcept {
  if (p && !gpu_held_by_a_kernel()) cudaFree(p);
}

}  // namespace gemmlab
