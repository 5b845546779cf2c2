// The diff of two kernels' numerics as JSON and CSV rows; see explain_diff.hpp.
#include "experiments/device/explain_diff.hpp"

#include <cstdio>

#include "experiments/device/explain_gpu.hpp"
#include "reference/tc_infer.hpp"

namespace gemmlab {

namespace {

nlohmann::json line_json(const explain::SparseVector& v) {
  nlohmann::json at = nlohmann::json::array();
  for (const auto& [k, x] : v.at) at.push_back({k, x});
  return {{"index", v.index}, {"fill", v.fill}, {"fill_from", v.fill_from}, {"fill_to", v.fill_to}, {"at", at}};
}

nlohmann::json seen_json(const explain::DiffComparison::Seen& s, Format fa, Format fb) {
  if (s.at.first < 0) return nullptr;
  return {{"i", s.at.first}, {"j", s.at.second}, {"bits_a", tc::hex_bits(s.a, fa)}, {"bits_b", tc::hex_bits(s.b, fb)}};
}

}  // namespace

nlohmann::json diff_to_json(const explain::DiffReport& d) {
  nlohmann::json j;
  j["kernel_a"] = d.a_name;
  j["kernel_b"] = d.b_name;
  j["M"] = d.M;
  j["N"] = d.N;
  j["K"] = d.K;
  j["input_format"] = info(d.input).name;
  j["output_format_a"] = info(d.a_output).name;
  j["output_format_b"] = info(d.b_output).name;
  j["verdict"] = d.verdict;
  j["summary"] = d.summary();
  nlohmann::json diffs = nlohmann::json::array();
  for (const explain::Difference& x : d.differences) {
    nlohmann::json e{{"aspect", x.aspect}, {"a_does", x.a_does}, {"b_does", x.b_does}, {"confirmed", x.confirmed},
                     {"inputs", x.inputs}, {"note", x.note}};
    e["entry"] = x.entry.first >= 0 ? nlohmann::json{x.entry.first, x.entry.second} : nlohmann::json(nullptr);
    e["bits_a"] = x.confirmed ? nlohmann::json(tc::hex_bits(x.a_bits, d.a_output)) : nlohmann::json(nullptr);
    e["bits_b"] = x.confirmed ? nlohmann::json(tc::hex_bits(x.b_bits, d.b_output)) : nlohmann::json(nullptr);
    e["predicted_a"] = x.a_predicted ? nlohmann::json(tc::hex_bits(*x.a_predicted, d.a_output)) : nlohmann::json(nullptr);
    e["predicted_b"] = x.b_predicted ? nlohmann::json(tc::hex_bits(*x.b_predicted, d.b_output)) : nlohmann::json(nullptr);
    // The witness as inputs (the rest of A and B zero); none where it is a distribution's full inputs.
    const bool lines = x.confirmed && (!x.a_row.at.empty() || x.a_row.fill != 0);
    e["a_row"] = lines ? line_json(x.a_row) : nlohmann::json(nullptr);
    e["b_col"] = lines ? line_json(x.b_col) : nlohmann::json(nullptr);
    diffs.push_back(e);
  }
  j["differences"] = diffs;
  j["same"] = d.same;
  j["not_compared"] = d.not_compared;
  nlohmann::json cmp = nlohmann::json::array();
  for (const explain::DiffComparison& c : d.comparisons)
    cmp.push_back({{"distribution", c.distribution},
                   {"outputs", c.outputs},
                   {"differing", c.differing},
                   {"a_unstable", c.a_unstable},
                   {"b_unstable", c.b_unstable},
                   {"first_differing", seen_json(c.first_differing, d.a_output, d.b_output)},
                   {"a_first_unstable", seen_json(c.a_first_unstable, d.a_output, d.b_output)},
                   {"b_first_unstable", seen_json(c.b_first_unstable, d.a_output, d.b_output)}});
  j["comparisons"] = cmp;
  j["a"] = report_to_json(d.a);
  j["b"] = report_to_json(d.b);
  j["launches"] = d.launches;
  j["seconds"] = d.seconds;
  return j;
}

const std::vector<std::string>& explain_diff_columns() {
  static const std::vector<std::string> c{
      "kernel_a",      "kernel_b",      "M",          "N",           "K",           "seed",
      "verdict",       "aspect",        "kernel_a_does", "kernel_b_does", "confirmed", "i",
      "j",             "witness",       "bits_a",     "bits_b",      "predicted_a", "predicted_b",
      "note",          "identified_a",  "identified_b", "compared_outputs", "differing_outputs", "launches",
      "diff_seconds"};
  return c;
}

std::vector<std::vector<std::string>> explain_diff_rows(const explain::DiffReport& d, std::uint64_t seed) {
  long long outputs = 0, differing = 0;
  for (const explain::DiffComparison& c : d.comparisons) {
    outputs += c.outputs;
    differing += c.differing;
  }
  char secs[32];
  std::snprintf(secs, sizeof secs, "%.3f", d.seconds);
  auto row = [&](const explain::Difference* x) {
    const bool at = x && x->confirmed && x->entry.first >= 0;
    auto hex = [](const std::optional<std::uint64_t>& b, Format f) { return b ? tc::hex_bits(*b, f) : std::string(); };
    return std::vector<std::string>{d.a_name,
                                    d.b_name,
                                    std::to_string(d.M),
                                    std::to_string(d.N),
                                    std::to_string(d.K),
                                    std::to_string(seed),
                                    d.verdict,
                                    x ? x->aspect : "none",
                                    x ? x->a_does : "",
                                    x ? x->b_does : "",
                                    x ? (x->confirmed ? "yes" : "no") : "",
                                    at ? std::to_string(x->entry.first) : "",
                                    at ? std::to_string(x->entry.second) : "",
                                    x ? x->inputs : "",
                                    x && x->confirmed ? tc::hex_bits(x->a_bits, d.a_output) : "",
                                    x && x->confirmed ? tc::hex_bits(x->b_bits, d.b_output) : "",
                                    x ? hex(x->a_predicted, d.a_output) : "",
                                    x ? hex(x->b_predicted, d.b_output) : "",
                                    x ? x->note : "",
                                    d.a.identified ? "yes" : "no",
                                    d.b.identified ? "yes" : "no",
                                    std::to_string(outputs),
                                    std::to_string(differing),
                                    std::to_string(d.launches),
                                    secs};
  };
  std::vector<std::vector<std::string>> rows;
  for (const explain::Difference& x : d.differences) rows.push_back(row(&x));
  if (rows.empty()) rows.push_back(row(nullptr));
  return rows;
}

}  // namespace gemmlab
