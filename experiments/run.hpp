// `gemmlab run`: resolves a plan against the registry, validates it before touching the GPU, then
// runs every kernel x distribution x size x seed, checks each against the exact reference and writes
// one tidy CSV row each, plus a metadata JSON.
#pragma once
#include <string>
#include <vector>

#include "experiments/plan.hpp"
#include "kernels/kernel.hpp"
#include "reference/distributions.hpp"

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

// Throws UsageError naming the unknown kernel/distribution or the (kernel, size) pairs that do not fit.
ResolvedPlan resolve(const RunPlan& p);

// The CSV's columns, in order (results/README.md documents each).
const std::vector<std::string>& csv_columns();

// Returns the process exit code: 0 when every row was produced (passed, failed_bound or
// not_supported), 3 when some kernel raised an error (its row says so).
int run_experiment(const RunRequest& req);

// `gemmlab list`
void print_list();

}  // namespace gemmlab
