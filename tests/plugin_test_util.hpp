// The plan the plugin tests run (CPU with a fake device, GPU with the real one): kernels from plugins
// beside built-ins, on two distributions, one small non-square size, and the rows of a CSV.
#pragma once
#include <cstdio>
#include <string>
#include <vector>

#include "experiments/engine/files.hpp"
#include "experiments/engine/run.hpp"

namespace plugin_test {

inline gemmlab::RunRequest plugin_request(const std::string& out_csv, std::vector<std::string> plugins,
                                          std::vector<std::string> kernels, gemmlab::Size size, int reps) {
  gemmlab::RunRequest r;
  r.plan.name = "plugins";
  r.plan.plugins = std::move(plugins);
  r.plan.kernels = std::move(kernels);
  r.plan.distributions = {"uniform_0_1", "normal_0_1"};
  r.plan.sizes = {size};
  r.plan.reps = reps;
  r.plan.warmup = reps > 1 ? 1 : 0;
  r.plan.spot_checks = 4;
  r.out_csv = out_csv;
  r.argv = {"gemmlab", "run", "-o", out_csv};
  r.log = std::fopen("/dev/null", "w");
  r.live_progress = false;
  return r;
}

// Header first, then the rows.
inline std::vector<std::vector<std::string>> csv_records(const std::string& path) {
  return gemmlab::engine::parse_csv(gemmlab::engine::read_file(path)).records;
}

// Index of a column in the header (header.size() if absent, which no test expects).
inline std::size_t column(const std::vector<std::string>& header, const std::string& name) {
  std::size_t i = 0;
  while (i < header.size() && header[i] != name) ++i;
  return i;
}

}  // namespace plugin_test
