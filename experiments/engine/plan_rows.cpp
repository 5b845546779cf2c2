#include "experiments/engine/plan_rows.hpp"

#include <openssl/evp.h>

#include <algorithm>
#include <charconv>
#include <stdexcept>
#include <unordered_map>
#include <unordered_set>

#include "experiments/plan/plan.hpp"
#include "reference/gemm_form.hpp"

namespace gemmlab::engine {

std::string PlanSize::str() const { return std::to_string(M) + "x" + std::to_string(N) + "x" + std::to_string(K); }

std::string RowKey::str() const {
  return kernel + "|" + distribution + "|" + size.str() + "|" + std::to_string(seed) + (form.empty() ? "" : "|" + form);
}

std::string ProblemKey::str() const {
  return distribution + "|" + size.str() + "|" + std::to_string(seed) + "|" + input_format +
         (form.empty() ? "" : "|" + form);
}

ProblemKey problem_of(const RowKey& r) { return {r.distribution, r.size, r.seed, r.input_format, r.form}; }

std::vector<RowKey> plan_rows(const PlanSpec& p) {
  std::vector<std::string> formats;
  for (const auto& k : p.kernels)
    if (std::find(formats.begin(), formats.end(), k.input_format) == formats.end()) formats.push_back(k.input_format);
  const std::vector<std::string> forms = p.forms.empty() ? std::vector<std::string>{"default"} : p.forms;
  std::vector<RowKey> rows;
  for (const auto& z : p.sizes)
    for (const auto& d : p.distributions)
      for (std::uint64_t seed : p.seeds)
        for (const auto& f : formats)
          for (const auto& form : forms) {
            if (form != "default") {
              for (const auto& k : p.kernels)
                if (k.input_format == f) rows.push_back({k.name, d, z, seed, f, form});
              continue;
            }
            // Each kernel's own form, the kernels of one form together (one problem).
            std::vector<std::string> own;
            for (const auto& k : p.kernels)
              if (k.input_format == f && std::find(own.begin(), own.end(), k.form) == own.end()) own.push_back(k.form);
            for (const auto& o : own)
              for (const auto& k : p.kernels)
                if (k.input_format == f && k.form == o) rows.push_back({k.name, d, z, seed, f, o});
          }
  // A row is found by its key in the journal, the shards and the merge: two rows with one key
  // (a seed, size, distribution or form listed twice) would be indistinguishable.
  std::unordered_set<std::string> seen;
  for (const auto& r : rows)
    if (!seen.insert(r.str()).second)
      throw UsageError("the plan has the row " + r.str() +
                       " twice: list each kernel, distribution, size, seed and form once (the form \"default\" runs "
                       "each kernel's own form, plain for most)");
  return rows;
}

std::vector<Problem> group_by_problem(const std::vector<RowKey>& rows) {
  std::vector<Problem> out;
  for (const auto& r : rows) {
    ProblemKey pk = problem_of(r);
    if (out.empty() || out.back().key.str() != pk.str()) out.push_back({pk, {}});
    out.back().rows.push_back(r);
  }
  return out;
}

nlohmann::json plan_to_json(const PlanSpec& p) {
  nlohmann::json j;
  j["format"] = "gemmlab-plan-1";
  j["kernels"] = nlohmann::json::array();
  for (const auto& k : p.kernels) {
    // A kernel's own form only where it has one, so a plan of plain kernels hashes as before forms.
    if (k.form.empty()) j["kernels"].push_back({k.name, k.input_format});
    else j["kernels"].push_back({k.name, k.input_format, k.form});
  }
  j["distributions"] = p.distributions;
  j["sizes"] = nlohmann::json::array();
  for (const auto& z : p.sizes) j["sizes"].push_back({z.M, z.N, z.K});
  j["seeds"] = p.seeds;
  j["reps"] = p.reps;
  j["warmup"] = p.warmup;
  // The noise rule only where it decides the launches (reps 0): a plan of a fixed count hashes as
  // before it existed.
  if (p.reps == 0)
    j["stopping"] = {{"max_noise", p.max_noise},
                     {"min_samples", p.min_samples},
                     {"min_time_ms", p.min_time_ms},
                     {"max_time_ms", p.max_time_ms}};
  j["reference"] = p.reference;
  j["spot_checks"] = p.spot_checks;
  if (!p.plugins.empty()) {
    j["plugins"] = nlohmann::json::array();
    for (const auto& pl : p.plugins) j["plugins"].push_back({pl.path, pl.sha256});
  }
  if (!p.forms.empty() && p.forms != std::vector<std::string>{"default"}) j["forms"] = p.forms;
  return j;
}

PlanSpec plan_from_json(const nlohmann::json& j) {
  try {
    if (j.at("format") != "gemmlab-plan-1")
      throw UsageError("plan format '" + j.at("format").dump() + "' is not gemmlab-plan-1: written by another gemmlab version");
    PlanSpec p;
    for (const auto& k : j.at("kernels"))
      p.kernels.push_back({k.at(0).get<std::string>(), k.at(1).get<std::string>(),
                           k.size() > 2 ? k.at(2).get<std::string>() : std::string()});
    p.distributions = j.at("distributions").get<std::vector<std::string>>();
    for (const auto& z : j.at("sizes")) p.sizes.push_back({z.at(0).get<int>(), z.at(1).get<int>(), z.at(2).get<int>()});
    p.seeds = j.at("seeds").get<std::vector<std::uint64_t>>();
    p.reps = j.at("reps").get<int>();
    p.warmup = j.at("warmup").get<int>();
    if (j.contains("stopping")) {
      const auto& st = j.at("stopping");
      p.max_noise = st.at("max_noise").get<double>();
      p.min_samples = st.at("min_samples").get<int>();
      p.min_time_ms = st.at("min_time_ms").get<double>();
      p.max_time_ms = st.at("max_time_ms").get<double>();
    }
    p.reference = j.at("reference").get<std::string>();
    p.spot_checks = j.at("spot_checks").get<int>();
    if (j.contains("plugins"))
      for (const auto& pl : j.at("plugins")) p.plugins.push_back({pl.at(0).get<std::string>(), pl.at(1).get<std::string>()});
    if (j.contains("forms")) p.forms = j.at("forms").get<std::vector<std::string>>();
    return p;
  } catch (const nlohmann::json::exception& e) {
    throw UsageError(std::string("the resolved plan in the metadata is malformed (") + e.what() +
                     "): it was not written by this gemmlab; re-run the shard");
  }
}

// nlohmann::json keeps object keys sorted and dump() without indent writes no whitespace, so the
// text depends only on the values.
std::string canonical_plan(const PlanSpec& p) { return plan_to_json(p).dump(); }

std::string sha256_hex(const std::string& bytes) {
  unsigned char md[EVP_MAX_MD_SIZE];
  unsigned int len = 0;
  if (EVP_Digest(bytes.data(), bytes.size(), md, &len, EVP_sha256(), nullptr) != 1)
    throw std::runtime_error("OpenSSL's SHA-256 failed");
  static const char* hex = "0123456789abcdef";
  std::string out;
  for (unsigned int i = 0; i < len; ++i) out += hex[md[i] >> 4], out += hex[md[i] & 15];
  return out;
}

std::string plan_hash(const PlanSpec& p) { return "sha256:" + sha256_hex(canonical_plan(p)); }

namespace {

template <class T>
T parse_number(const std::string& s, const char* column) {
  T v{};
  auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
  if (ec != std::errc() || end != s.data() + s.size())
    throw UsageError(std::string("column '") + column + "' holds '" + s + "', not an integer: the CSV was not written by gemmlab");
  return v;
}

}  // namespace

RowKey key_of_row(const std::vector<std::string>& columns, const std::vector<std::string>& fields) {
  auto get = [&](const char* name) -> const std::string& {
    auto it = std::find(columns.begin(), columns.end(), name);
    if (it == columns.end()) throw UsageError(std::string("the CSV has no '") + name + "' column: it was not written by gemmlab");
    const auto i = static_cast<std::size_t>(it - columns.begin());
    if (i >= fields.size()) throw UsageError("a CSV row has fewer fields than the header");
    return fields[i];
  };
  RowKey k;
  k.kernel = get("kernel");
  k.distribution = get("distribution");
  k.size = {parse_number<int>(get("M"), "M"), parse_number<int>(get("N"), "N"), parse_number<int>(get("K"), "K")};
  k.seed = parse_number<std::uint64_t>(get("seed"), "seed");
  k.input_format = get("input_format");
  if (std::find(columns.begin(), columns.end(), "form") != columns.end()) {
    try {
      k.form = form_key(get("form"));
    } catch (const std::invalid_argument& e) {
      throw UsageError(std::string("column 'form': ") + e.what() + ": the CSV was not written by gemmlab");
    }
  }
  return k;
}

}  // namespace gemmlab::engine

namespace gemmlab::engine {

OrderedRows order_rows(const std::vector<RowKey>& plan, const std::vector<std::string>& columns,
                       const std::vector<std::vector<std::string>>& rows) {
  std::unordered_map<std::string, std::size_t> first;  // key -> index into rows
  std::unordered_set<std::string> in_plan, dup;
  for (const auto& k : plan) in_plan.insert(k.str());
  OrderedRows out;
  for (std::size_t i = 0; i < rows.size(); ++i) {
    const std::string k = key_of_row(columns, rows[i]).str();
    if (!in_plan.count(k)) {
      out.unexpected.push_back(k);
      continue;
    }
    if (!first.emplace(k, i).second && dup.insert(k).second) out.duplicated.push_back(k);
  }
  for (const auto& k : plan) {
    auto it = first.find(k.str());
    if (it == first.end()) out.missing.push_back(k.str());
    else out.ordered.push_back(rows[it->second]);
  }
  return out;
}

}  // namespace gemmlab::engine
