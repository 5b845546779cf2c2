// `gemmlab run`: resolves a plan against the registry, validates it before touching the GPU, then
// runs every kernel x distribution x size x seed, checks each output against the exact reference and
// writes one typed result row each (report/result.hpp) into a tidy CSV plus metadata.
//
// The loop reaches the GPU only through the Device interface (device/runner.hpp), so it is plain
// C++: gpu_device() is the CUDA implementation, and tests drive the loop with a fake.
#pragma once
#include <string>
#include <vector>

#include "experiments/device/runner.hpp"
#include "experiments/plan/plan.hpp"
#include "experiments/report/result.hpp"
#include "kernels/kernel.hpp"
#include "reference/distributions.hpp"
#include "reference/exact_gemm.hpp"

namespace gemmlab {

struct RunRequest {
  RunPlan plan;
  std::string out_csv;          // empty: results/<plan.name>-<UTC time>.csv
  std::string save_matrices;    // folder for .npy files, empty: none
  int threads = 0;              // CPU threads for reference and statistics (0: all)
  std::string command_line;     // recorded in the metadata
};

struct ResolvedPlan {
  std::vector<const Kernel*> kernels;
  std::vector<Distribution> distributions;
};

// Throws UsageError naming the unknown kernel/distribution.
ResolvedPlan resolve(const RunPlan& p);

// The exact reference of one problem with the self-check the plan asks for (MPFR spot checks on
// entries chosen by the seed); `label` gets the engine name as the CSV's `reference` column says it.
GemmReference compute_reference(const RunPlan& plan, const Matrix& A, const Matrix& B, Format out, int threads,
                                std::uint64_t seed, std::string& label);

// Status and note of a row whose kernel ran: failed_bound when above the bound or with entries
// unwritten, no_bound when K u_eff >= 1, else passed; the note says why, and whether an exactint
// distribution is exact in this kernel's formats.
void judge(ResultRow& row, const ErrorStats& s, const Distribution& d, const Numerics& n);

// Returns the process exit code: 0 when every row was produced (passed, failed_bound, no_bound,
// not_supported, not_applicable), 3 when some kernel raised an error (its row says so).
int run_experiment(const RunRequest& req, Device& device);

}  // namespace gemmlab
