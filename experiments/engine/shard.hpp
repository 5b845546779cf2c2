// `--shard i/n`: one of n disjoint parts of a plan, for many machines (or a Slurm job array).
//
// Shards are numbered 1..n ("--shard 1/4" is the first of four), as `sbatch --array=1-n` numbers
// its tasks. Rows are assigned whole problems at a time (all kernels of one distribution x size x
// seed x input format), so one exact reference serves all of a problem's kernels on one shard.
// Problems go round-robin in plan order (problem p to shard p mod n + 1): sizes vary slowest in
// the plan, so round-robin spreads each size, and with it the cost, over all shards.
#pragma once
#include <string>
#include <vector>

#include "experiments/engine/plan_rows.hpp"

namespace gemmlab::engine {

struct Shard {
  int index = 1;  // 1-based
  int count = 1;
  std::string str() const;  // "i/n"
};

// Parses "i/n" with 1 <= i <= n; throws UsageError saying what is expected.
Shard parse_shard(const std::string& text);

// The rows of `rows` (a plan's rows, in plan order) that belong to shard s, in plan order.
std::vector<RowKey> shard_rows(const std::vector<RowKey>& rows, const Shard& s);

}  // namespace gemmlab::engine
