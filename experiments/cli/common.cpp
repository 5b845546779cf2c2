#include <cstdint>
#include <cstdio>

#include "experiments/cli/commands.hpp"
#include "experiments/engine/watchdog.hpp"
#include "experiments/plan/plan.hpp"

namespace gemmlab::cli {

std::vector<std::string> split_commas(const std::vector<std::string>& in) {
  std::vector<std::string> out;
  for (const auto& s : in) {
    std::size_t start = 0;
    while (start <= s.size()) {
      std::size_t end = s.find(',', start);
      if (end == std::string::npos) end = s.size();
      if (end > start) out.push_back(s.substr(start, end - start));
      start = end + 1;
    }
  }
  return out;
}

std::vector<std::uint64_t> parse_seeds(const std::vector<std::string>& in) {
  std::vector<std::uint64_t> seeds;
  for (const auto& s : split_commas(in)) {
    if (s.empty() || s.find_first_not_of("0123456789") != std::string::npos || s.size() > 19)
      throw UsageError("seed '" + s + "' is not a non-negative integer");
    seeds.push_back(std::stoull(s));
  }
  return seeds;
}

void require_csv(const std::string& path) {
  if (path.size() < 5 || path.substr(path.size() - 4) != ".csv") throw UsageError("--out must name a .csv file");
}

void require_threads(const CLI::Option* option, int threads) {
  if (option->count() && threads < 1)
    throw UsageError("--threads " + std::to_string(threads) +
                     ": give at least 1 CPU thread, or leave --threads out to use all of them");
}

void add_plugin_option(CLI::App* command, std::vector<std::string>& paths) {
  command->add_option("--plugin", paths,
                      "shared library of kernels built against kernels/plugin/gemmlab_plugin.h (repeatable); its "
                      "kernels join the registry, `all` and family:<name>");
}

void add_launch_timeout_option(CLI::App* command) {
  command->add_option_function<double>(
      "--launch-timeout",
      [](const double& seconds) {
        if (!(seconds >= 0) || seconds > 1e6)
        {
          char given[32];
          std::snprintf(given, sizeof given, "%g", seconds);
          throw CLI::ValidationError("--launch-timeout " + std::string(given) +
                                     ": give the floor of a launch's limit in seconds (e.g. 10), or 0 to turn the "
                                     "watchdog off");
        }
        LaunchLimit l = launch_limit();
        l.enabled = seconds > 0;
        if (l.enabled) l.floor_seconds = seconds;
        set_launch_limit(l);
      },
      "the floor of every launch's time limit, in seconds (default 10; 0: no limit): a launch of a kernel under test "
      "may take this + 2MNK at 10 GFLOP/s; one that takes longer is stopped and its row has status `timeout`");
}

}  // namespace gemmlab::cli
