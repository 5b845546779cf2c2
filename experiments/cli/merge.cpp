// `gemmlab merge SHARD.csv... -o OUT.csv [--force]`: the CSVs of a plan's shards (`gemmlab run
// --shard i/n`) into one CSV in plan order. The arguments go to engine::merge_command as given, so
// its own parser (tested on the CPU) is the only one; it returns 2 with a message for bad input.
#include "experiments/cli/commands.hpp"
#include "experiments/engine/merge.hpp"

namespace gemmlab::cli {

Command add_merge(CLI::App& app) {
  auto* merge = app.add_subcommand("merge", "merge the CSVs of a plan's shards (run --shard i/n) into one CSV in plan order "
                                            "(`gemmlab merge --help` for its arguments)");
  merge->prefix_command();  // every argument after `merge`, --help included, is merge_command's
  merge->set_help_flag();
  return {merge, [merge] { return engine::merge_command(merge->remaining()); }};
}

}  // namespace gemmlab::cli
