// The gemmlab subcommands. Each file in experiments/cli/ registers one subcommand's options on the
// CLI11 app and returns the action that runs it; main.cpp runs the one the user named. An action
// returns the process exit code and throws UsageError for a mistake in what the user asked for.
#pragma once
#include <CLI/CLI.hpp>

#include <functional>
#include <string>
#include <vector>

namespace gemmlab {
struct RunRequest;
}

namespace gemmlab::cli {

using Action = std::function<int()>;

struct Command {
  CLI::App* app;
  Action run;
};

Command add_list(CLI::App& app);
Command add_run(CLI::App& app, const std::vector<std::string>& argv);
Command add_merge(CLI::App& app);
Command add_compare(CLI::App& app);
Command add_bench_reference(CLI::App& app, const std::string& command_line);
Command add_tune(CLI::App& app);
Command add_probe(CLI::App& app, const std::string& command_line);
Command add_order(CLI::App& app, const std::string& command_line);
Command add_explain(CLI::App& app, const std::string& command_line);
Command add_predict(CLI::App& app, const std::string& command_line);
Command add_bench_mma_ceiling(CLI::App& app, const std::string& command_line);
Command add_inputs(CLI::App& app, const std::string& command_line);
Command add_evaluate(CLI::App& app, const std::string& command_line);
Command add_tc_eval(CLI::App& app, const std::string& command_line);
Command add_port(CLI::App& app, const std::string& command_line);
Command add_invariance(CLI::App& app, const std::vector<std::string>& argv);
Command add_plugin_header(CLI::App& app);
Command add_plot(CLI::App& app);

// `gemmlab run` of a suite with an [invariance] table (experiments/cli/invariance.cpp).
int run_invariance_suite(const RunRequest& req);

// Helpers shared by the commands.
std::vector<std::string> split_commas(const std::vector<std::string>& in);
std::vector<std::uint64_t> parse_seeds(const std::vector<std::string>& in);
// Throws UsageError unless path ends in .csv.
void require_csv(const std::string& path);
// `--threads N` as every command takes it: at least 1 when given (`option` counts whether it was);
// left out, all of the CPU's threads. Throws UsageError naming the value otherwise.
void require_threads(const CLI::Option* option, int threads);
// `--plugin PATH` (repeatable) on a subcommand: shared libraries whose kernels join the registry
// (experiments/engine/plugin.hpp). The action loads them before it resolves a kernel name.
void add_plugin_option(CLI::App* command, std::vector<std::string>& paths);
// `--launch-timeout SECONDS` on a subcommand that launches kernels under test: the floor of each launch's time
// limit (experiments/engine/watchdog.hpp), set for the process as the option is parsed.
void add_launch_timeout_option(CLI::App* command);

}  // namespace gemmlab::cli
