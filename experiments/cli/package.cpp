// The subcommands about gemmlab's installation rather than a GPU: `plugin-header` (where the C header
// that plugins are built against is) and `plot` (the figures of a run, drawn by the Python package).
#include <fcntl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <memory>
#include <string>
#include <vector>

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

// Runs `PYTHON args...` and returns its exit status (127 when it cannot be started); quiet: its output
// to /dev/null.
int run_python(const std::string& python, const std::vector<std::string>& args, bool quiet = false) {
  std::vector<char*> argv;
  std::vector<std::string> all = {python};
  all.insert(all.end(), args.begin(), args.end());
  for (std::string& a : all) argv.push_back(a.data());
  argv.push_back(nullptr);
  std::fflush(stdout);
  std::fflush(stderr);
  const pid_t pid = fork();
  if (pid == 0) {
    if (const int null = quiet ? open("/dev/null", O_WRONLY) : -1; null >= 0) {
      dup2(null, STDOUT_FILENO);
      dup2(null, STDERR_FILENO);
    }
    execvp(argv[0], argv.data());
    _exit(127);
  }
  int status = 0;
  if (pid < 0 || waitpid(pid, &status, 0) < 0) return 127;
  return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
}

// A Python that imports the gemmlab package (whose gemmlab.plot draws the figures): GEMMLAB_PYTHON, the
// source tree's .venv (scripts/setup.sh makes it), then python3. "" when none does.
std::string python_with_gemmlab() {
  std::vector<std::string> candidates;
  if (const char* env = std::getenv("GEMMLAB_PYTHON"); env && *env) candidates.emplace_back(env);
#ifdef GEMMLAB_SOURCE_DIR
  candidates.push_back(std::string(GEMMLAB_SOURCE_DIR) + "/.venv/bin/python");
#endif
  candidates.emplace_back("python3");
  for (const std::string& py : candidates)
    if (run_python(py, {"-c", "import gemmlab.figures"}, true) == 0) return py;
  return "";
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
  cmd->footer("Drawn by the Python package (gemmlab.plot, python/gemmlab/figures.py) with the scripts of plots/; a "
              "gemmlab built from the sources runs it with the first Python that has the package: GEMMLAB_PYTHON, "
              "the tree's .venv, python3.");
  // The options live as long as the action (CLI11 writes into them while parsing).
  return {cmd, [csv, out] () -> int {
            // The Python package's `gemmlab` command draws the figures before this executable is reached; a
            // gemmlab built from the sources hands them to a Python that has the package, with this tree's
            // plots/ (as scripts/plots.sh does).
            const std::string py = python_with_gemmlab();
            if (py.empty())
              throw UsageError("the figures are drawn by the gemmlab Python package, which no Python here imports "
                               "(GEMMLAB_PYTHON, .venv, python3): pip install \"gemmlab[plots]\", or run "
                               "scripts/setup.sh in the repository");
#ifdef GEMMLAB_SOURCE_DIR
            const std::string plots = std::string(GEMMLAB_SOURCE_DIR) + "/plots";
            if (fs::is_directory(plots)) setenv("GEMMLAB_PLOTS_DIR", plots.c_str(), 0);
#endif
            std::vector<std::string> args = {"-m", "gemmlab", "plot", *csv};
            if (!out->empty()) args.insert(args.end(), {"-o", *out});
            return run_python(py, args);
          }};
}

}  // namespace gemmlab::cli
