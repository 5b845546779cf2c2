// The subcommands about gemmlab's installation rather than a GPU: `plugin-header` (where the C header
// that plugins are built against is) and `plot` (the figures of a run, drawn by the Python package).
#include <cstdio>
#include <filesystem>
#include <memory>
#include <string>

#include "experiments/cli/commands.hpp"
#include "experiments/plan/plan.hpp"

namespace fs = std::filesystem;

namespace gemmlab::cli {

namespace {

// kernels/plugin/gemmlab_plugin.h as installed beside this executable (the Python package's command,
// gemmlab/_bin/gemmlab, has it in gemmlab/include/), else in the source tree this was built from.
std::string plugin_header_path() {
  std::error_code ec;
  const fs::path exe = fs::read_symlink("/proc/self/exe", ec);
  std::vector<fs::path> candidates;
  if (!ec) candidates.push_back(exe.parent_path().parent_path() / "include" / "gemmlab_plugin.h");
#ifdef GEMMLAB_SOURCE_DIR
  candidates.push_back(fs::path(GEMMLAB_SOURCE_DIR) / "kernels" / "plugin" / "gemmlab_plugin.h");
#endif
  for (const fs::path& p : candidates)
    if (fs::is_regular_file(p, ec)) return fs::canonical(p, ec).string();
  std::string looked;
  for (const fs::path& p : candidates) looked += (looked.empty() ? "" : ", ") + p.string();
  throw UsageError("the plugin header gemmlab_plugin.h is not installed with this gemmlab (looked at " + looked +
                   "): reinstall gemmlab, or take kernels/plugin/gemmlab_plugin.h from its source tree");
}

}  // namespace

Command add_plugin_header(CLI::App& app) {
  auto* cmd = app.add_subcommand(
      "plugin-header",
      "print the path of gemmlab_plugin.h, the C header a plugin is built against (its folder goes to -I)");
  cmd->footer("A plugin: nvcc -O3 -shared -Xcompiler -fPIC -I\"$(dirname \"$(gemmlab plugin-header)\")\" mine.cu -o "
              "libmine.so; then gemmlab run --plugin ./libmine.so ...");
  return {cmd, [] {
            std::printf("%s\n", plugin_header_path().c_str());
            return 0;
          }};
}

Command add_plot(CLI::App& app) {
  auto* cmd = app.add_subcommand(
      "plot",
      "draw every figure that applies to a gemmlab run CSV (bias and spread, heatmap, accuracy against speed, one "
      "series per kernel family) as <RUN>-<figure>.png; needs matplotlib (pip install \"gemmlab[plots]\")");
  auto csv = std::make_shared<std::string>();
  auto out = std::make_shared<std::string>();
  cmd->add_option("csv", *csv, "the CSV of a gemmlab run (gemmlab run -o RUN.csv)")->required();
  cmd->add_option("-o,--out", *out, "folder of the figures (default: beside the CSV; made if missing)");
  cmd->footer("Drawn by the Python package (gemmlab.plot, python/gemmlab/figures.py) with the scripts of plots/.");
  // The options live as long as the action (CLI11 writes into them while parsing).
  return {cmd, [csv, out] () -> int {
            // The Python package's `gemmlab` command draws the figures before this executable is reached.
            throw UsageError("the figures are drawn by the gemmlab Python package: run `gemmlab plot` as the package "
                             "installs it (pip install \"gemmlab[plots]\"), or scripts/plots.sh RUN.csv in the "
                             "repository");
          }};
}

}  // namespace gemmlab::cli
