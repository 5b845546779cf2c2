// `gemmlab merge` (experiments/engine/merge): shards of one plan into one CSV in plan order;
// missing, duplicated and mismatched shards refused with every problem named.
#include <gtest/gtest.h>

#include "engine_test_util.hpp"
#include "experiments/engine/files.hpp"
#include "experiments/engine/merge.hpp"
#include "experiments/engine/session.hpp"
#include "experiments/engine/shard.hpp"
#include "experiments/plan/plan.hpp"

using namespace engine_test;
using gemmlab::UsageError;

namespace {

// Runs shard i/n of `plan` through a session, as `gemmlab run --shard i/n` will, with fake rows.
std::string run_shard(const TempDir& d, const PlanSpec& plan, int i, int n, const std::string& commit = "abc123") {
  const std::string shard = Shard{i, n}.str();
  const std::string csv = d / ("shard" + std::to_string(i) + "of" + std::to_string(n) + ".csv");
  auto id = identity(plan, shard);
  id.git_commit = commit;
  RunSession s(OutputPaths::for_csv(csv), id, shard_rows(plan_rows(plan), {i, n}), {false, true, "test"});
  for (const auto& k : s.pending()) s.record(fake_row(k));
  s.finalise({{"gemmlab_version", "0.1"}, {"git_commit", commit}, {"engine", engine_metadata(plan, shard)}});
  return csv;
}

std::vector<ShardFiles> files(const std::vector<std::string>& csvs) {
  std::vector<ShardFiles> out;
  for (const auto& c : csvs) out.push_back(ShardFiles::for_csv(c));
  return out;
}

std::string whole_plan_csv(const PlanSpec& plan) {
  std::string s = csv_line(columns());
  for (const auto& k : plan_rows(plan)) s += csv_line(fake_row(k));
  return s;
}

std::string merge_error(const std::vector<std::string>& csvs) {
  try {
    merge_shards(files(csvs));
  } catch (const UsageError& e) {
    return e.what();
  }
  return "(merged without complaint)";
}

}  // namespace

TEST(EngineMerge, ShardsMergeIntoThePlanInPlanOrder) {
  TempDir d("merge");
  const PlanSpec plan = small_plan();
  for (int n = 1; n <= 5; ++n) {
    std::vector<std::string> csvs;
    for (int i = n; i >= 1; --i) csvs.push_back(run_shard(d, plan, i, n));  // any order of shards
    Merged m = merge_shards(files(csvs));
    const std::string out = d / ("merged" + std::to_string(n) + ".csv");
    write_merged(m, out, false);
    EXPECT_EQ(slurp(out), whole_plan_csv(plan)) << "n=" << n;
    auto meta = nlohmann::json::parse(slurp(d / ("merged" + std::to_string(n) + ".meta.json")));
    EXPECT_EQ(meta["engine"]["plan_hash"], plan_hash(plan));
    EXPECT_EQ(meta["merged_from"].size(), static_cast<std::size_t>(n));
    EXPECT_EQ(meta["rows"], plan_rows(plan).size());
    EXPECT_THROW(write_merged(m, out, false), UsageError) << "overwrote a merged CSV without --force";
  }
}

TEST(EngineMerge, MissingShardIsReportedByKey) {
  TempDir d("missing");
  const PlanSpec plan = small_plan();
  const std::string msg = merge_error({run_shard(d, plan, 1, 3), run_shard(d, plan, 3, 3)});
  const std::size_t missing = shard_rows(plan_rows(plan), {2, 3}).size();
  EXPECT_NE(msg.find(std::to_string(missing) + " rows missing"), std::string::npos) << msg;
  EXPECT_NE(msg.find(shard_rows(plan_rows(plan), {2, 3})[0].str()), std::string::npos) << msg;
  EXPECT_NE(msg.find("and " + std::to_string(missing - 10) + " more"), std::string::npos) << msg;
}

TEST(EngineMerge, DuplicatedRowsAreReportedByKey) {
  TempDir d("dup");
  const PlanSpec plan = small_plan();
  const auto a = run_shard(d, plan, 1, 2), b = run_shard(d, plan, 2, 2);
  // The same shard given twice (under two names).
  fs::copy_file(a, d / "copy.csv");
  fs::copy_file(d / "shard1of2.meta.json", d / "copy.meta.json");
  std::string msg = merge_error({a, b, d / "copy.csv"});
  EXPECT_NE(msg.find(std::to_string(shard_rows(plan_rows(plan), {1, 2}).size()) + " rows duplicated"), std::string::npos) << msg;
  EXPECT_EQ(msg.find("rows missing"), std::string::npos) << msg;
  // Shards of two different splits overlap: both missing and duplicated rows are named.
  msg = merge_error({run_shard(d, plan, 1, 2), run_shard(d, plan, 1, 3)});
  EXPECT_NE(msg.find("rows duplicated"), std::string::npos) << msg;
  EXPECT_NE(msg.find("rows missing"), std::string::npos) << msg;
}

TEST(EngineMerge, ShardsOfAnotherPlanOrBinaryAreRefused) {
  TempDir d("mismatch");
  const PlanSpec plan = small_plan();
  PlanSpec other = plan;
  other.reps = 9;
  std::string msg = merge_error({run_shard(d, plan, 1, 2), run_shard(d, other, 2, 2)});
  EXPECT_NE(msg.find("not of one plan and one binary"), std::string::npos) << msg;
  EXPECT_NE(msg.find("plan_hash differs"), std::string::npos) << msg;

  TempDir d2("mismatch2");
  msg = merge_error({run_shard(d2, plan, 1, 2), run_shard(d2, plan, 2, 2, "fff999")});
  EXPECT_NE(msg.find("git_commit differs: 'abc123'"), std::string::npos) << msg;
  EXPECT_NE(msg.find("'fff999'"), std::string::npos) << msg;

  // A CSV without gemmlab's metadata, or a row not in the plan.
  spit(d2 / "stray.csv", "a,b\n1,2\n");
  spit(d2 / "stray.meta.json", "{}");
  EXPECT_NE(merge_error({d2 / "stray.csv"}).find("no engine.plan_hash"), std::string::npos);
  const auto one = run_shard(d2, plan, 1, 1);
  RowKey foreign = plan_rows(plan)[0];
  foreign.seed = 99;
  std::ofstream(one, std::ios::app) << csv_line(fake_row(foreign));
  msg = merge_error({one});
  EXPECT_NE(msg.find("1 rows not in the plan"), std::string::npos) << msg;
  EXPECT_NE(msg.find(foreign.str()), std::string::npos) << msg;
}

TEST(EngineMerge, CommandRefusesBadInputWithExitTwoAndWritesNothing) {
  TempDir d("cmd");
  const PlanSpec plan = small_plan();
  const auto a = run_shard(d, plan, 1, 2), b = run_shard(d, plan, 2, 2);
  EXPECT_EQ(merge_command({a, "-o", d / "out.csv"}), 2);
  EXPECT_FALSE(fs::exists(d / "out.csv"));
  EXPECT_FALSE(fs::exists(d / "out.meta.json"));
  EXPECT_EQ(merge_command({a, b, "-o", d / "out.txt"}), 2);
  EXPECT_EQ(merge_command({a, b}), 2);
  EXPECT_EQ(merge_command({a, b, "-o", d / "out.csv"}), 0);
  EXPECT_EQ(slurp(d / "out.csv"), whole_plan_csv(plan));
  EXPECT_EQ(merge_command({a, b, "-o", d / "out.csv"}), 2) << "replaced a merged CSV without --force";
  EXPECT_EQ(merge_command({a, b, "-o", d / "out.csv", "--force"}), 0);
}
