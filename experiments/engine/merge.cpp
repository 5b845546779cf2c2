#include "experiments/engine/merge.hpp"

#include <CLI/CLI.hpp>
#include <cstdio>
#include <ctime>
#include <filesystem>

#include "experiments/engine/command_line.hpp"
#include "experiments/engine/files.hpp"
#include "experiments/engine/session.hpp"
#include "experiments/report/files.hpp"
#include "experiments/plan/plan.hpp"

namespace fs = std::filesystem;

namespace gemmlab::engine {

nlohmann::json engine_metadata(const PlanSpec& plan, const std::string& shard) {
  return {{"plan_hash", plan_hash(plan)}, {"resolved_plan", plan_to_json(plan)}, {"shard", shard}};
}

ShardFiles ShardFiles::for_csv(const std::string& csv) {
  try {
    return {csv, OutputPaths::for_csv(csv).meta};
  } catch (const UsageError&) {  // its words are --out's: here the file is a shard
    throw UsageError("shard '" + csv + "' is not a .csv file: give the CSVs `gemmlab run --shard I/N -o X.csv` wrote");
  }
}

namespace {

// At most this many keys per kind of problem in a message; the count says how many there are.
constexpr std::size_t kListed = 10;

std::string list_keys(const char* what, const std::vector<std::string>& keys) {
  if (keys.empty()) return "";
  std::string s = "\n  " + std::to_string(keys.size()) + " " + what + ":";
  for (std::size_t i = 0; i < keys.size() && i < kListed; ++i) s += "\n    " + keys[i];
  if (keys.size() > kListed) s += "\n    ... and " + std::to_string(keys.size() - kListed) + " more";
  return s;
}

std::string str_at(const nlohmann::json& j, const char* a, const char* b = nullptr) {
  const nlohmann::json* p = &j;
  if (!p->contains(a)) return "";
  p = &(*p)[a];
  if (b) {
    if (!p->is_object() || !p->contains(b)) return "";
    p = &(*p)[b];
  }
  return p->is_string() ? p->get<std::string>() : "";
}

}  // namespace

Merged merge_shards(const std::vector<ShardFiles>& shards) {
  if (shards.empty()) throw UsageError("merge needs at least one shard CSV");
  std::vector<nlohmann::json> metas;
  std::string problems;
  for (const auto& s : shards) {
    std::error_code ec;
    if (!fs::exists(s.meta, ec))
      throw UsageError("shard '" + s.csv + "' has no '" + s.meta + "' beside it: merge reads each shard's plan there; keep "
                       "the .meta.json `gemmlab run` wrote with the CSV, or re-run that shard");
    try {
      metas.push_back(nlohmann::json::parse(read_file(s.meta)));
    } catch (const nlohmann::json::exception& e) {
      throw UsageError("'" + s.meta + "' is not valid JSON (" + e.what() + "): re-run that shard");
    }
    if (str_at(metas.back(), "engine", "plan_hash").empty())
      throw UsageError("'" + s.meta + "' has no engine.plan_hash: it was not written by `gemmlab run` with shards; re-run that shard");
  }

  // Same plan, same binary: otherwise rows of different experiments would be mixed.
  const nlohmann::json& m0 = metas[0];
  for (const char* field : {"plan_hash", "git_commit", "gemmlab_version"}) {
    auto get = [&](const nlohmann::json& m) {
      return std::string(field) == "plan_hash" ? str_at(m, "engine", "plan_hash") : str_at(m, field);
    };
    for (std::size_t i = 1; i < metas.size(); ++i)
      if (get(metas[i]) != get(m0))
        problems += "\n  " + std::string(field) + " differs: '" + get(m0) + "' in " + shards[0].meta + ", '" + get(metas[i]) +
                    "' in " + shards[i].meta;
  }
  if (!problems.empty())
    throw UsageError("these shards are not of one plan and one binary, so their rows cannot be merged:" + problems +
                     "\nmerge only the shards of one `gemmlab run` plan, built from one commit");

  const PlanSpec plan = plan_from_json(m0.at("engine").at("resolved_plan"));
  if (plan_hash(plan) != str_at(m0, "engine", "plan_hash"))
    throw UsageError("'" + shards[0].meta + "': the resolved plan does not hash to its plan_hash: the file was edited; re-run that shard");

  Merged out;
  std::vector<std::vector<std::string>> all;
  for (const auto& s : shards) {
    CsvRecords recs = parse_csv(read_file(s.csv));
    if (recs.torn_tail || recs.records.empty())
      throw UsageError("'" + s.csv + "' is " + (recs.records.empty() ? "empty" : "cut short") + ": re-run that shard");
    if (out.columns.empty()) out.columns = recs.records[0];
    else if (recs.records[0] != out.columns)
      throw UsageError("'" + s.csv + "' has other columns than '" + shards[0].csv + "': it was written by another gemmlab");
    for (std::size_t i = 1; i < recs.records.size(); ++i) {
      if (recs.records[i].size() != out.columns.size())
        throw UsageError("'" + s.csv + "' row " + std::to_string(i) + " has " + std::to_string(recs.records[i].size()) +
                         " fields, the header " + std::to_string(out.columns.size()) + ": re-run that shard");
      all.push_back(std::move(recs.records[i]));
    }
  }

  OrderedRows ordered = order_rows(plan_rows(plan), out.columns, all);
  if (!ordered.exact())
    throw UsageError("the shards do not cover the plan exactly once:" + list_keys("rows missing", ordered.missing) +
                     list_keys("rows duplicated", ordered.duplicated) + list_keys("rows not in the plan", ordered.unexpected) +
                     (ordered.missing.empty() ? "" : "\nrun the shards that are not here (`gemmlab run ... --shard i/n`)") +
                     (ordered.duplicated.empty() ? "" : "\ngive each shard once, all from one --shard i/n split") +
                     (ordered.unexpected.empty() ? "" : "\nremove the rows that are not gemmlab's, or re-run that shard"));
  out.rows = std::move(ordered.ordered);

  out.meta = {{"gemmlab_version", m0.value("gemmlab_version", "")},
              {"git_commit", m0.value("git_commit", "")},
              {"engine", engine_metadata(plan, "")},
              {"columns", out.columns},
              {"rows", out.rows.size()},
              {"merged_from", nlohmann::json::array()}};
  if (m0.contains("plan")) out.meta["plan"] = m0["plan"];
  if (m0.contains("plugins")) out.meta["plugins"] = m0["plugins"];  // one plan hash: the same plugins
  for (std::size_t i = 0; i < shards.size(); ++i) {
    nlohmann::json one = metas[i];
    one["csv"] = shards[i].csv;
    out.meta["merged_from"].push_back(one);
  }
  return out;
}

void write_merged(const Merged& m, const std::string& out_csv, bool force) {
  const OutputPaths paths = OutputPaths::for_csv(out_csv);
  check_writable(out_csv);
  check_no_overwrite(paths, force);
  nlohmann::json meta = m.meta;
  meta["csv"] = fs::path(out_csv).filename().string();
  std::time_t t = std::time(nullptr);
  char buf[32];
  std::strftime(buf, sizeof buf, "%Y-%m-%dT%H:%M:%SZ", std::gmtime(&t));
  meta["date_utc"] = buf;
  std::string csv = csv_line(m.columns);
  for (const auto& r : m.rows) csv += csv_line(r);
  write_durably(paths.meta, meta.dump(2) + "\n");
  write_durably(paths.csv, csv);
}

int merge_command(const std::vector<std::string>& args) {
  CLI::App app("merge the CSVs of a plan's shards into one CSV in plan order", "gemmlab merge");
  std::vector<std::string> inputs;
  std::string out;
  bool force = false;
  app.add_option("shards", inputs, "shard CSVs (each with its .meta.json beside it)")->required();
  app.add_option("-o,--out", out, "merged CSV (its .meta.json is written beside it)")->required();
  app.add_flag("--force", force, "replace an existing merged CSV");
  if (auto done = parse_subcommand(app, args)) return *done;
  try {
    std::vector<ShardFiles> shards;
    for (const auto& csv : inputs) shards.push_back(ShardFiles::for_csv(csv));
    Merged m = merge_shards(shards);
    write_merged(m, out, force);
    std::fprintf(stderr, "[gemmlab] merged %zu shards into %s (%zu rows, plan order)\n", shards.size(), out.c_str(), m.rows.size());
    std::printf("%s\n", out.c_str());
    return 0;
  } catch (const UsageError& e) {
    std::fprintf(stderr, "gemmlab merge: %s\n", e.what());
    return 2;
  }
}

}  // namespace gemmlab::engine
