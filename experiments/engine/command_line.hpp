// The subcommands whose arguments the engine parses itself (`merge`, `compare`: their CLI11 app is
// built in the engine, so their parsing is tested on the CPU without the gemmlab binary).
#pragma once
#include <CLI/CLI.hpp>

#include <optional>
#include <string>
#include <vector>

namespace gemmlab::engine {

// Parses `args` (everything after the subcommand's name, as CLI11's remaining() gives them) with
// `app`. Returns the exit status where parsing ends the command (--help: 0; a mistake: 2, after
// CLI11 printed it), nullopt where the command goes on.
inline std::optional<int> parse_subcommand(CLI::App& app, const std::vector<std::string>& args) {
  try {
    std::vector<std::string> rev(args.rbegin(), args.rend());  // CLI11 takes a reversed vector
    app.parse(rev);
  } catch (const CLI::ParseError& e) {
    return app.exit(e) == 0 ? 0 : 2;
  }
  return std::nullopt;
}

}  // namespace gemmlab::engine
