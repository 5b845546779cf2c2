#include <cstdint>

#include "experiments/cli/commands.hpp"
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

}  // namespace gemmlab::cli
