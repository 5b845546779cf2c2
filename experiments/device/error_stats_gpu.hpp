// compute_error_stats (reference/error_stats.hpp) on the GPU: every ErrorStats field bit for bit
// equal to the CPU function's, deterministic on any GPU and any run.
//
// How: the per-entry quantities and the double-double arithmetic are the same source as the CPU's
// (reference/portable_fp.hpp, stats_detail::entry, compiled with __dadd_rn & co., never fused);
// each thread block reduces one aligned block of kLeafBlock leaves with the tree's pairing, the
// block results are reduced on the host by stats_detail::tree_reduce, and stats_detail::assemble
// derives the statistics, exactly as the CPU path does. Counts are integer atomics and maxima
// atomicMax on the bit patterns of non-negative doubles (order-independent). The order statistics
// come from a full radix sort of the relative errors (CUB), so they are exact.
//
// Plain C++ header: device data is passed as raw pointers to device memory.
#pragma once
#include <vector>

#include "experiments/device/exact_reference_gpu.hpp"
#include "reference/error_stats.hpp"

namespace gemmlab::device {

// Timing of one call, seconds.
struct GpuStatsTiming {
  double total = 0;
};

// computed: device pointer to the (M, N) row-major output as doubles. ref: the GPU reference of the
// same problem. out: the output format judged (c_out = round_to(out, c_odd) on the device).
ErrorStats compute_error_stats_gpu(const double* device_computed, const GpuReference& ref, Format out,
                                   const BoundModel& model, GpuStatsTiming* timing = nullptr);

// The same from host arrays: uploads computed (and, for the GemmReference form, c, c_odd, abs_ab).
ErrorStats compute_error_stats_gpu(const std::vector<double>& computed, const GpuReference& ref, Format out,
                                   const BoundModel& model, GpuStatsTiming* timing = nullptr);
ErrorStats compute_error_stats_gpu(const std::vector<double>& computed, const GemmReference& ref, Format out,
                                   const BoundModel& model, GpuStatsTiming* timing = nullptr);

}  // namespace gemmlab::device
