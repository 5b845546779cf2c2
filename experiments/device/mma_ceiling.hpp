// The mma.sync ceiling on this GPU (`gemmlab bench-mma-ceiling`): a register-only loop of
// mma.sync.m16n8k16 (f16 in, f32 accumulate), no shared or global memory in the loop, in the two
// accumulation modes of the mma family: in_mma (D = A*B + D) and external (T = A*B + 0, acc = acc +
// T with four fp32 adds per mma and thread). Each warp holds a (WM, WN) tile of accumulators as the
// kernels do; blocks of `warps` warps, one block per SM. Its TFLOP/s over cuBLAS fp16->fp32 at
// 4096^3 (same process) is the upper bound any mma.sync GEMM can reach here, and its
// external/in_mma time ratio the lowest cost of external accumulation that loading operands from
// shared memory cannot improve on.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "reference/numerics.hpp"

namespace gemmlab {

struct MmaCeilingConfig {
  const char* name;
  Accumulation mode;  // in_mma or external
  int warps, wm, wn;
  void (*kernel)(int, std::uint32_t, float*);
};
const std::vector<MmaCeilingConfig>& mma_ceiling_configs();

// Runs config c with `blocks` blocks of `iters` loop iterations; returns the median time of `reps`
// launches in ms (after two warm-ups). `sums`, if given, gets each thread's sum of its accumulators:
// with fragments a in {1, 2}, b = 1 every mode gives the same exact value (tests/gpu).
double time_mma_ceiling(const MmaCeilingConfig& c, int blocks, int iters, int reps, std::vector<float>* sums);

// Times every config on all SMs beside cuBLAS fp16->fp32 at 4096^3 and writes the table (config,
// mode, warps_per_sm, warp_tile, iters, time_ms_median, tflops, ratio_cublas, cublas_tflops, gpu)
// with metadata. Returns the exit code (2 when no GPU of sm_80 or newer is usable).
int bench_mma_ceiling(const std::string& out_csv, const std::string& command_line);

}  // namespace gemmlab
