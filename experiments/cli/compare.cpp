// `gemmlab compare A.csv B.csv [--md FILE] [--ignore COLS] [--slowdown-threshold X]`: what changed
// between two result CSVs, as markdown for a pull request (experiments/engine/compare.hpp). The
// arguments go to engine::compare_command as given, so its own parser (tested on the CPU) is the only
// one; it returns 0, 3 (accuracy changed), 4 (slower beyond noise) or 2 (bad input).
#include "experiments/cli/commands.hpp"
#include "experiments/engine/compare.hpp"

namespace gemmlab::cli {

Command add_compare(CLI::App& app) {
  auto* compare = app.add_subcommand("compare", "compare two result CSVs row by row: statistics bit for bit, status, time "
                                                "against the noise; markdown report (`gemmlab compare --help`)");
  compare->prefix_command();  // every argument after `compare`, --help included, is compare_command's
  compare->set_help_flag();
  return {compare, [compare] { return engine::compare_command(compare->remaining()); }};
}

}  // namespace gemmlab::cli
