// `gemmlab merge`: the CSVs of a plan's shards (from `gemmlab run --shard i/n` on several machines)
// into one CSV with the rows in plan order, as a single run would have written it.
//
// Each shard's metadata carries the resolved plan and its hash (engine_metadata()), the gemmlab
// version and the git commit. Merge refuses shards of different plans or binaries, and shards that
// do not cover the plan exactly once (every missing, duplicated or foreign row is named).
#pragma once
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "experiments/engine/plan_rows.hpp"

namespace gemmlab::engine {

// The block a run writes under "engine" in its metadata: {"plan_hash", "resolved_plan", "shard"}.
nlohmann::json engine_metadata(const PlanSpec& plan, const std::string& shard);

struct ShardFiles {
  std::string csv;
  std::string meta;  // default: the CSV's x.meta.json
  static ShardFiles for_csv(const std::string& csv);
};

struct Merged {
  std::vector<std::string> columns;
  std::vector<std::vector<std::string>> rows;  // in plan order
  nlohmann::json meta;                         // the merged metadata ("merged_from": each shard's)
};

// Reads and checks the shards. Throws UsageError naming every problem found: unreadable files,
// different plans, versions or commits, different columns, and rows missing, duplicated or not in
// the plan (by key, "kernel|distribution|MxNxK|seed").
Merged merge_shards(const std::vector<ShardFiles>& shards);

// Writes the merged CSV and metadata atomically; refuses to replace existing ones unless force.
void write_merged(const Merged& m, const std::string& out_csv, bool force);

// `gemmlab merge SHARD.csv... -o OUT.csv [--force]`: args without the program and subcommand
// names. Returns the exit status (0, or 2 with a message on stderr for bad input).
int merge_command(const std::vector<std::string>& args);

}  // namespace gemmlab::engine
