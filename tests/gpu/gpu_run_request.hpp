// A run request for GPU tests that run the engine end to end (run_experiment on gpu_device): its own plan of
// kernels x distributions x sizes (none of RunPlan's defaults beside them), 2 timed launches after 1 warm-up,
// into dir/out.csv made afresh, its log discarded. The caller closes req.log after the run.
#pragma once
#include <cstdint>
#include <cstdio>
#include <filesystem>
#include <string>
#include <vector>

#include "experiments/engine/run.hpp"

namespace gemmlab::gpu_test {

inline RunRequest quiet_run_request(const std::string& name, const std::string& dir, std::vector<std::string> kernels,
                                    std::vector<std::string> distributions, std::vector<Size> sizes, std::uint64_t seed) {
  std::filesystem::create_directories(dir);
  RunRequest req;
  req.plan.name = name;
  req.plan.kernels = std::move(kernels);
  req.plan.distributions = std::move(distributions);
  req.plan.sizes = std::move(sizes);
  req.plan.seeds = {seed};
  req.plan.reps = 2;
  req.plan.warmup = 1;
  req.out_csv = dir + "/out.csv";
  req.force = true;
  req.command_line = "test";
  req.log = std::fopen("/dev/null", "w");
  req.live_progress = false;
  return req;
}

}  // namespace gemmlab::gpu_test
