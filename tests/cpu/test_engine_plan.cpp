// The engine's plan rows, plan identity and shards (experiments/engine/plan_rows, shard).
#include <gtest/gtest.h>

#include <map>
#include <set>

#include "engine_test_util.hpp"
#include "experiments/engine/shard.hpp"
#include "experiments/plan/plan.hpp"

using namespace engine_test;
using gemmlab::UsageError;

TEST(EnginePlan, RowsComeInRunOrder) {
  auto rows = plan_rows(small_plan());
  ASSERT_EQ(rows.size(), 4u * 3 * 2 * 2);
  // Size varies slowest, then distribution, seed, input format (first appearance), kernel.
  std::vector<std::string> first6;
  for (int i = 0; i < 6; ++i) first6.push_back(rows[i].str());
  EXPECT_EQ(first6, (std::vector<std::string>{
                        "sgemm_01_naive|uniform_0_1|64x64x64|1", "sgemm_10_warptiling|uniform_0_1|64x64x64|1",
                        "hgemm_a|uniform_0_1|64x64x64|1", "hgemm_b|uniform_0_1|64x64x64|1",
                        "sgemm_01_naive|uniform_0_1|64x64x64|2", "sgemm_10_warptiling|uniform_0_1|64x64x64|2"}));
  EXPECT_EQ(rows.back().str(), "hgemm_b|cancel_-10|128x32x256|2");
  EXPECT_EQ(rows[2].input_format, "fp16");
}

TEST(EnginePlan, ProblemsAreContiguousAndShareInputs) {
  auto problems = group_by_problem(plan_rows(small_plan()));
  ASSERT_EQ(problems.size(), 2u * 3 * 2 * 2);  // sizes x distributions x seeds x input formats
  std::set<std::string> seen;
  for (const auto& p : problems) {
    EXPECT_TRUE(seen.insert(p.key.str()).second) << p.key.str() << " split in two";
    EXPECT_EQ(p.rows.size(), 2u);
    for (const auto& r : p.rows) EXPECT_EQ(problem_of(r).str(), p.key.str());
  }
}

TEST(EnginePlan, DuplicateRowsAreRefused) {
  PlanSpec p = small_plan();
  p.seeds = {1, 1};
  try {
    plan_rows(p);
    FAIL() << "a seed listed twice was accepted";
  } catch (const UsageError& e) {
    EXPECT_NE(std::string(e.what()).find("twice"), std::string::npos) << e.what();
  }
}

TEST(EnginePlan, HashCoversEveryFieldAndNothingElse) {
  const PlanSpec p = small_plan();
  const std::string h = plan_hash(p);
  EXPECT_EQ(h.size(), 7u + 64u);
  EXPECT_EQ(h.rfind("sha256:", 0), 0u);
  EXPECT_EQ(plan_hash(small_plan()), h) << "equal plans must hash equally";
  // The canonical form reads back to the same plan, and so to the same hash (merge relies on it).
  EXPECT_EQ(plan_from_json(nlohmann::json::parse(canonical_plan(p))), p);
  EXPECT_EQ(plan_hash(plan_from_json(plan_to_json(p))), h);

  std::vector<std::pair<const char*, std::function<void(PlanSpec&)>>> changes = {
      {"kernel", [](PlanSpec& q) { q.kernels.pop_back(); }},
      {"kernel order", [](PlanSpec& q) { std::swap(q.kernels[0], q.kernels[2]); }},
      {"input format", [](PlanSpec& q) { q.kernels[0].input_format = "tf32"; }},
      {"distribution", [](PlanSpec& q) { q.distributions[2] = "cancel_-20"; }},
      {"size", [](PlanSpec& q) { q.sizes[1].K = 512; }},
      {"seed", [](PlanSpec& q) { q.seeds.push_back(3); }},
      {"reps", [](PlanSpec& q) { q.reps = 6; }},
      {"warmup", [](PlanSpec& q) { q.warmup = 0; }},
      {"reference", [](PlanSpec& q) { q.reference = "mpfr"; }},
      {"spot checks", [](PlanSpec& q) { q.spot_checks = 0; }},
  };
  std::set<std::string> hashes = {h};
  for (auto& [what, change] : changes) {
    PlanSpec q = small_plan();
    change(q);
    EXPECT_TRUE(hashes.insert(plan_hash(q)).second) << "changing the " << what << " left the hash unchanged";
  }
  // A known value: the hash is part of journals and metadata on disk, so it must not drift.
  EXPECT_EQ(sha256_hex("abc"), "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
}

TEST(EnginePlan, KeyOfRowReadsTheKeyColumns) {
  const RowKey k = plan_rows(small_plan())[7];
  EXPECT_EQ(key_of_row(columns(), fake_row(k)).str(), k.str());
  EXPECT_EQ(key_of_row(columns(), fake_row(k)).input_format, k.input_format);
  auto bad = fake_row(k);
  bad[3] = "64.5";
  EXPECT_THROW(key_of_row(columns(), bad), UsageError);
  EXPECT_THROW(key_of_row({"kernel", "M"}, {"x", "1"}), UsageError);
}

TEST(EngineShard, ParsesOneBasedAndExplainsMistakes) {
  Shard s = parse_shard("2/4");
  EXPECT_EQ(s.index, 2);
  EXPECT_EQ(s.count, 4);
  EXPECT_EQ(s.str(), "2/4");
  EXPECT_EQ(parse_shard("1/1").str(), "1/1");
  for (const char* bad : {"", "2", "/4", "2/", "5/4", "-1/4", "1/0", "a/b", "1/4x", "1.5/4", " 1/4"})
    EXPECT_THROW(parse_shard(bad), UsageError) << bad;
  try {
    parse_shard("0/4");
    FAIL();
  } catch (const UsageError& e) {
    EXPECT_NE(std::string(e.what()).find("use 1/4 for the first"), std::string::npos) << e.what();
  }
}

TEST(EngineShard, ShardsCoverEveryRowExactlyOnce) {
  const auto rows = plan_rows(small_plan());
  for (int n = 1; n <= 8; ++n) {
    std::map<std::string, int> count;
    std::map<std::string, int> problem_shard;
    for (int i = 1; i <= n; ++i) {
      auto part = shard_rows(rows, {i, n});
      for (const auto& r : part) {
        ++count[r.str()];
        // A problem's rows stay on one shard, so its reference is computed once.
        auto [it, fresh] = problem_shard.emplace(problem_of(r).str(), i);
        EXPECT_EQ(it->second, i) << "problem " << problem_of(r).str() << " split over shards, n=" << n;
      }
      // Each shard keeps plan order.
      auto order = [&](const RowKey& r) { return std::find(rows.begin(), rows.end(), r) - rows.begin(); };
      for (std::size_t j = 1; j < part.size(); ++j) EXPECT_LT(order(part[j - 1]), order(part[j]));
    }
    ASSERT_EQ(count.size(), rows.size()) << "n=" << n;
    for (auto& [k, c] : count) EXPECT_EQ(c, 1) << k << " n=" << n;
  }
}

TEST(EngineShard, RoundRobinBalancesProblems) {
  const auto rows = plan_rows(small_plan());  // 24 problems
  for (int n = 1; n <= 8; ++n) {
    std::size_t lo = SIZE_MAX, hi = 0;
    for (int i = 1; i <= n; ++i) {
      const std::size_t problems = group_by_problem(shard_rows(rows, {i, n})).size();
      lo = std::min(lo, problems), hi = std::max(hi, problems);
    }
    EXPECT_LE(hi - lo, 1u) << "n=" << n;
  }
}
