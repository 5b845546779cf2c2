// The one thread-pool helper: parallel loops over independent tasks on std::threads. Every caller's
// result must not depend on the thread count (tasks write disjoint outputs, or reduce in a fixed
// order afterwards).
#pragma once
#include <cstddef>
#include <functional>

namespace gemmlab {

// threads <= 0: std::thread::hardware_concurrency() (at least 1).
int resolve_threads(int threads);

// Runs fn(task) for task in [0, tasks) on `threads` threads, handing tasks out dynamically. An
// exception in fn stops the loop and is rethrown in the caller.
void parallel_for(long tasks, int threads, const std::function<void(long)>& fn);

// Runs fn(lo, hi) over [0, n) in contiguous chunks of at least min_chunk elements: for loops whose
// per-element work is too small for one task each.
void parallel_for_range(std::size_t n, int threads, std::size_t min_chunk,
                        const std::function<void(std::size_t, std::size_t)>& fn);

}  // namespace gemmlab
