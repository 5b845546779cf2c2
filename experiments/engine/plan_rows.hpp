// The rows a plan produces, each named by a key, and the plan's identity (a hash of its resolved
// form). Everything the engine does (journal, resume, shards, merge) is keyed on these, so a row
// has exactly one key and a plan exactly one hash, whichever process or machine computes them.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "experiments/report/stopping.hpp"

namespace gemmlab::engine {

struct PlanSize {
  int M = 0, N = 0, K = 0;
  std::string str() const;  // "MxNxK"
  bool operator==(const PlanSize&) const = default;
};

struct PlanKernel {
  std::string name;          // registry name, as in the CSV's `kernel` column
  std::string input_format;  // as in the CSV's `input_format` column: kernels sharing it share inputs
  std::string form;          // the kernel's own form (Kernel::form, canonical; "" plain): what "default" runs
  bool operator==(const PlanKernel&) const = default;
};

// A shared library whose kernels the plan runs (experiments/engine/plugin.hpp): its bytes decide
// those rows' numbers, so a rebuilt plugin is another plan.
struct PlanPlugin {
  std::string path;    // canonical path
  std::string sha256;  // of the file's bytes
  bool operator==(const PlanPlugin&) const = default;
};

// A plan after resolution: "all" and "family:" expanded to kernel names, distributions named.
// Everything that changes a row's numbers or the set of rows is here, so it is what the hash covers.
struct PlanSpec {
  std::vector<PlanKernel> kernels;
  std::vector<std::string> distributions;
  std::vector<PlanSize> sizes;
  std::vector<std::uint64_t> seeds;
  int reps = 20;
  int warmup = 3;
  // The noise rule of the timed launches (experiments/report/stopping.hpp), used where reps is 0.
  double max_noise = StoppingRule{}.max_noise;
  int min_samples = StoppingRule{}.min_samples;
  double min_time_ms = StoppingRule{}.min_time_ms;
  double max_time_ms = StoppingRule{}.max_time_ms;
  std::string reference = "auto";
  int spot_checks = 16;
  std::vector<PlanPlugin> plugins;  // of the kernels above, in order of first use; empty: all built-in
  // The forms each kernel runs (reference/gemm_form.hpp): canonical texts ("" plain) or "default" (each kernel's
  // own form). Empty: {"default"}, the suites' default, which a plan of built-in kernels always was.
  std::vector<std::string> forms;
  bool operator==(const PlanSpec&) const = default;
};

// One row of the results: kernel x distribution x size x seed. input_format follows from the
// kernel; it is kept so that rows group into problems without a registry.
struct RowKey {
  std::string kernel;
  std::string distribution;
  PlanSize size;
  std::uint64_t seed = 0;
  std::string input_format;
  std::string form;  // canonical (reference/gemm_form.hpp form_key); "" for C = A B
  // "kernel|distribution|MxNxK|seed" (+ "|form" for a form that is not plain): the key's identity, used in maps
  // and in messages.
  std::string str() const;
  bool operator==(const RowKey& o) const { return str() == o.str(); }
};

// One problem: the inputs (and so the exact references) that several rows share.
struct ProblemKey {
  std::string distribution;
  PlanSize size;
  std::uint64_t seed = 0;
  std::string input_format;
  std::string form;         // "" for C = A B
  std::string str() const;  // "distribution|MxNxK|seed|input_format" (+ "|form")
};
ProblemKey problem_of(const RowKey& r);

// The plan's rows in the order gemmlab runs them: for each size, each distribution, each seed,
// each input format (in order of first appearance in the kernel list), each form of the plan ("default": each
// kernel's own, grouped by form in order of first appearance), the kernels of that input format in kernel-list
// order. Rows of one problem are therefore contiguous. This order is the order of every final CSV, whoever
// computed the rows. Throws UsageError if two rows would have the same key (a seed, size, distribution or
// form listed twice).
std::vector<RowKey> plan_rows(const PlanSpec& p);

// Contiguous runs of plan_rows() that share a problem, in plan order.
struct Problem {
  ProblemKey key;
  std::vector<RowKey> rows;
};
std::vector<Problem> group_by_problem(const std::vector<RowKey>& rows);

// The canonical serialization: JSON with fixed key order and no whitespace, so equal plans give
// equal bytes. plan_from_json() reads it back (merge rebuilds the plan from a shard's metadata).
// "plugins" is written only when there are some, so a plan of built-in kernels hashes as before.
nlohmann::json plan_to_json(const PlanSpec& p);
PlanSpec plan_from_json(const nlohmann::json& j);  // throws UsageError naming the missing/bad field
std::string canonical_plan(const PlanSpec& p);

// "sha256:<64 hex digits>" of canonical_plan(p), computed with OpenSSL.
std::string plan_hash(const PlanSpec& p);
std::string sha256_hex(const std::string& bytes);

// The key of a CSV row, read from the columns kernel, distribution, M, N, K, seed, input_format, and form
// where the CSV has it (a CSV written before forms: every row plain). Throws UsageError if a column is missing
// or a value is malformed (a CSV gemmlab did not write).
RowKey key_of_row(const std::vector<std::string>& columns, const std::vector<std::string>& fields);

}  // namespace gemmlab::engine

namespace gemmlab::engine {

// Rows put into plan order, with what does not fit the plan: keys of `plan` with no row
// (missing), keys with more than one row (duplicated), rows whose key is not in `plan`
// (unexpected). `ordered` holds one row per key found, in plan order (for a duplicated key, the
// first seen).
struct OrderedRows {
  std::vector<std::vector<std::string>> ordered;
  std::vector<std::string> missing, duplicated, unexpected;  // RowKey::str() of each
  bool exact() const { return missing.empty() && duplicated.empty() && unexpected.empty(); }
};
OrderedRows order_rows(const std::vector<RowKey>& plan, const std::vector<std::string>& columns,
                       const std::vector<std::vector<std::string>>& rows);

}  // namespace gemmlab::engine
