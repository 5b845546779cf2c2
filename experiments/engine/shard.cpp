#include "experiments/engine/shard.hpp"

#include <charconv>

#include "experiments/plan/plan.hpp"

namespace gemmlab::engine {

std::string Shard::str() const { return std::to_string(index) + "/" + std::to_string(count); }

Shard parse_shard(const std::string& text) {
  const std::string expected = "--shard takes i/n with 1 <= i <= n (the i-th of n shards, counted from 1), got '" + text + "'";
  const auto slash = text.find('/');
  if (slash == std::string::npos) throw UsageError(expected);
  auto number = [&](std::string_view s) {
    int v = 0;
    auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
    if (s.empty() || ec != std::errc() || end != s.data() + s.size()) throw UsageError(expected);
    return v;
  };
  Shard s{number(std::string_view(text).substr(0, slash)), number(std::string_view(text).substr(slash + 1))};
  if (s.count < 1 || s.index < 1 || s.index > s.count) {
    if (s.index == 0 && s.count >= 1)
      throw UsageError(expected + ": shards count from 1 (as sbatch --array=1-n does), so use 1/" + std::to_string(s.count) +
                       " for the first");
    throw UsageError(expected);
  }
  return s;
}

std::vector<RowKey> shard_rows(const std::vector<RowKey>& rows, const Shard& s) {
  std::vector<RowKey> out;
  std::size_t p = 0;
  for (const auto& problem : group_by_problem(rows)) {
    if (static_cast<int>(p++ % static_cast<std::size_t>(s.count)) + 1 == s.index)
      out.insert(out.end(), problem.rows.begin(), problem.rows.end());
  }
  return out;
}

}  // namespace gemmlab::engine
