// gemmlab: run GEMM kernels on controlled inputs, compare every entry with an exact reference, and
// record error statistics beside the runtime. The subcommands live in experiments/cli/.
//
// Exit codes: 0 success; 1 internal error; 2 bad input (the message says what and what to do);
// 3 the run (or `gemmlab invariance`) finished but some kernel raised an error, timed out or faulted (its CSV row says
// which), or `gemmlab compare` found a statistic or a status changed, or a kernel hit a GPU error that loses the CUDA
// context or a launch that never ends in this process (`gemmlab run --isolation none` stops, its journal keeping the rows
// before and that kernel's row; `gemmlab explain` writes its CSV row, which says at which call); 4 `gemmlab order` (or `predict` for a library kernel) found
// outputs that do not form a summation tree, or a tree gemmlab cannot compose, or `gemmlab compare`
// found a row slower beyond the noise; 5 `gemmlab predict` / `tc-eval` found outputs that
// differ from the model, or `gemmlab explain` could not identify the kernel; 128 + signal: `gemmlab run` stopped by SIGINT or
// SIGTERM after the row in progress (the journal keeps every finished row; the log says how to resume).
#include <CLI/CLI.hpp>

#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include "experiments/cli/commands.hpp"
#include "experiments/device/runner.hpp"
#include "experiments/engine/watchdog.hpp"
#include "experiments/plan/plan.hpp"
#include "experiments/report/metadata.hpp"

using namespace gemmlab;

int main(int argc, char** argv) {
  const std::vector<std::string> args(argv, argv + argc);
  std::string command_line;
  for (int i = 0; i < argc; ++i) command_line += (i ? " " : "") + std::string(argv[i]);

  CLI::App app{"gemmlab: accuracy and speed of GPU GEMM kernels against an exact (MPFR-checked) reference"};
  app.require_subcommand(1);
  // `gemmlab --version`: pyproject.toml's version and the git commit built (both compiled in).
  app.set_version_flag("--version", std::string("gemmlab ") + gemmlab_version() + " (git " + git_commit() + ")",
                       "print gemmlab's version and git commit, and exit");
  const std::vector<cli::Command> commands = {
      cli::add_list(app),  cli::add_run(app, args), cli::add_merge(app), cli::add_bench_reference(app, command_line),
      cli::add_tune(app),  cli::add_probe(app, command_line), cli::add_order(app, command_line),
      cli::add_explain(app, command_line),
      cli::add_predict(app, command_line),                  cli::add_bench_mma_ceiling(app, command_line),
      cli::add_inputs(app, command_line),                   cli::add_evaluate(app, command_line),
      cli::add_tc_eval(app, command_line),                  cli::add_compare(app),
      cli::add_invariance(app, args),                       cli::add_plot(app),
      cli::add_plugin_header(app),                          cli::add_port(app, command_line),
  };
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    return app.exit(e) == 0 ? 0 : 2;
  }
  try {
    for (const auto& c : commands)
      if (c.app->parsed()) {
        const int rc = c.run();
        // A launch that never ended holds this process's GPU (gemmlab explain reports it and returns): no
        // teardown, which would wait for it.
        if (gpu_held_by_a_kernel()) {
          std::fflush(nullptr);
          std::_Exit(rc);
        }
        return rc;
      }
  } catch (const UsageError& e) {
    std::fprintf(stderr, "gemmlab: %s\n", e.what());
    return 2;
  } catch (const CudaContextLost& e) {  // a kernel's fault, not gemmlab's: the message says what to do
    std::fprintf(stderr, "gemmlab: %s\n", e.what());
    // No teardown: the GPU context is the kernel's now (a launch that never ends would hold the exit).
    std::fflush(nullptr);
    std::_Exit(3);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "gemmlab: internal error: %s\n", e.what());
    return 1;
  }
  return 0;
}
