// `gemmlab explain` on the GPU; see explain_gpu.hpp.
#include "experiments/device/explain_gpu.hpp"

#include "experiments/device/callable.hpp"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdlib>
#include <cstdio>
#include <functional>
#include <set>
#include <sstream>
#include <stdexcept>

#include "experiments/report/files.hpp"
#include "reference/kernel_emulation.hpp"
#include "reference/tc_gpus.hpp"

namespace gemmlab {

namespace {
Format explained_input(const Kernel& k) {
  if (!k.quantized) return k.numerics.input;
  std::string why;
  const std::optional<Format> f = explain_input_format(parse_quant_recipe(k.quantized), &why);
  if (!f) throw std::invalid_argument(std::string(k.name) + ": " + why);
  return *f;
}
}  // namespace

KernelOracle::KernelOracle(const Kernel& k, int M, int N, int K, int device, void* stream, bool foreign_streams)
    : k_(k), M_(M), N_(N), K_(K), input_(explained_input(k)), device_(device), foreign_streams_(foreign_streams),
      runner_(std::make_unique<EntryRunner>(k, Matrix(M, K), Matrix(K, N), device, stream, foreign_streams)) {
  profile_.on = std::getenv("GEMMLAB_PROFILE_ORACLE") != nullptr;
}

KernelOracle::~KernelOracle() {
  if (profile_.on && profile_.calls) profile_.print(k_.name, "at the end");
}

void KernelOracle::Profile::enter() {
  if (calls) between += std::chrono::duration<double>(std::chrono::steady_clock::now() - last).count();
}

void KernelOracle::Profile::leave(std::chrono::steady_clock::time_point start,
                                  std::chrono::steady_clock::time_point launched) {
  last = std::chrono::steady_clock::now();
  ++calls;
  lines += std::chrono::duration<double>(launched - start).count();
  launch += std::chrono::duration<double>(last - launched).count();
}

void KernelOracle::Profile::print(const char* kernel, const std::string& when) const {
  std::fprintf(stderr,
               "[oracle] %s %s: %lld calls: lines %.3f s, launch and entries %.3f s, the caller between calls %.3f s "
               "(%.3f ms a call in all); %lld lines written, %lld values listed\n",
               kernel, when.c_str(), calls, lines, launch, between,
               calls ? 1e3 * (lines + launch + between) / static_cast<double>(calls) : 0.0, lines_written, values_listed);
}

std::vector<std::uint64_t> KernelOracle::run_entries_since(std::chrono::steady_clock::time_point t0,
                                                           const std::vector<explain::Entry>& entries) {
  const auto t1 = std::chrono::steady_clock::now();
  std::vector<std::uint64_t> out = guarded([&] { return runner_->run_entries(entries); });
  if (profile_.on) profile_.leave(t0, t1);
  return out;
}

template <class F>
auto KernelOracle::guarded(F&& f) -> decltype(f()) {
  try {
    return f();
  } catch (const CudaContextLost& e) {
    // Every launch is waited for (EntryRunner): the error is this one's.
    throw explain::OracleLost("call " + std::to_string(launches) + " of " + k_.name + ": " + e.what());
  } catch (const CallableOutputError& e) {
    throw explain::BadOutput(e.what());
  } catch (const std::exception& e) {
    throw explain::KernelFailed(e.what());
  }
}

std::vector<explain::Perturbation> KernelOracle::perturbations() {
  if (!perturber_) {
    perturber_ = std::make_unique<Perturber>(device_);
    offered_ = default_perturbations(perturber_->sm_count());
  }
  std::vector<explain::Perturbation> out;
  for (const Perturbation& p : offered_) out.push_back({p.name(), p.words(perturber_->sm_count())});
  return out;
}

std::string KernelOracle::perturb(int i) {
  if (profile_.on) profile_.print(k_.name, "before perturb(" + std::to_string(i) + ")");
  if (i < 0) {
    guarded([&] { runner_->perturb(nullptr, nullptr); });
    return "";
  }
  if (!perturber_) perturbations();
  if (i >= static_cast<int>(offered_.size())) throw std::out_of_range("KernelOracle::perturb: no perturbation " + std::to_string(i));
  const Perturbation& p = offered_[i];
  if (p.kind == Perturbation::Kind::fewer_sms && foreign_streams_)
    return "the kernel launches on streams of its own (JAX: XLA's), which gemmlab cannot move into a green context";
  if (p.kind == Perturbation::Kind::fewer_sms && k_.numerics.k_chunked)
    return std::string(k_.name) + " cuts K by blocks co-resident on the whole GPU (stream-K): in a green context of "
                                  "fewer SMs its blocks could wait for each other forever";
  if (std::string why = perturber_->available(p); !why.empty()) return why;
  guarded([&] { runner_->perturb(&p, perturber_.get()); });
  return "";
}

std::vector<std::uint64_t> KernelOracle::run_sparse(const explain::SparseInputs& in,
                                                    const std::vector<explain::Entry>& entries) {
  ++launches;
  if (profile_.on) profile_.enter();
  const auto t0 = std::chrono::steady_clock::now();
  // Thousands of lines a launch: marks by index instead of sets (the host's share of a launch, with
  // FPRev's items, was most of an fp8 kernel's 256-launch trial).
  std::vector<EntryRunner::Line> a, b;
  a.reserve(in.a_rows.size());
  b.reserve(in.b_cols.size());
  row_mark_.resize(M_, 0);
  col_mark_.resize(N_, 0);
  std::vector<int> rows, cols;
  for (const explain::SparseVector& v : in.a_rows) {
    a.push_back({v.index, v.fill, &v.at, v.fill_from, v.fill_to});
    if (v.index >= 0 && v.index < M_ && !row_mark_[v.index]++) rows.push_back(v.index);
  }
  if (profile_.on) {
    profile_.lines_written += static_cast<long long>(in.a_rows.size() + in.b_cols.size());
    for (const auto* lines : {&in.a_rows, &in.b_cols})
      for (const explain::SparseVector& v : *lines) profile_.values_listed += static_cast<long long>(v.at.size());
  }
  for (const explain::SparseVector& v : in.b_cols) {
    b.push_back({v.index, v.fill, &v.at, v.fill_from, v.fill_to});
    if (v.index >= 0 && v.index < N_ && !col_mark_[v.index]++) cols.push_back(v.index);
  }
  // The lines the previous call set and this one does not go back to zero (all of them after run_full).
  std::vector<int> zero_rows, zero_cols;
  for (int i : rows_set_)
    if (!row_mark_[i]) zero_rows.push_back(i);
  for (int j : cols_set_)
    if (!col_mark_[j]) zero_cols.push_back(j);
  for (int i : rows) row_mark_[i] = 0;
  for (int j : cols) col_mark_[j] = 0;
  guarded([&] { runner_->set_lines(a, b, zero_rows, zero_cols, dense_); });
  dense_ = false;
  rows_set_ = std::move(rows);  // in any order: only which lines are set matters
  cols_set_ = std::move(cols);
  return run_entries_since(t0, entries);
}

std::vector<std::uint64_t> KernelOracle::run_full(const Matrix& A, const Matrix& B,
                                                  const std::vector<explain::Entry>& entries) {
  ++launches;
  if (profile_.on) profile_.enter();
  const auto t0 = std::chrono::steady_clock::now();
  guarded([&] { runner_->set_operands(A, B); });
  dense_ = true;
  return run_entries_since(t0, entries);
}

std::vector<std::uint64_t> KernelOracle::run_generated(const Distribution& d, std::uint64_t seed, int,
                                                       const std::vector<explain::Entry>& entries, Matrix& A, Matrix& B) {
  ++launches;
  std::vector<int> rows;
  for (const explain::Entry& e : entries) rows.push_back(e.first);
  std::sort(rows.begin(), rows.end());
  rows.erase(std::unique(rows.begin(), rows.end()), rows.end());
  guarded([&] { runner_->generate_operands(d, seed, rows, A, B); });
  dense_ = true;
  return guarded([&] { return runner_->run_entries(entries); });
}

std::vector<explain::KnownKernel> known_kernels(const std::vector<const Kernel*>& kernels) {
  std::vector<explain::KnownKernel> out;
  for (const Kernel* k : kernels) {
    if (!k->numerics.predictable() || k->numerics.k_chunked) continue;
    // A kernel that takes scales computes another function of A and B than C = A B.
    if (k->scale_a != ScaleGranularity::none || k->scale_b != ScaleGranularity::none) continue;
    explain::KnownKernel kk{k->name, k->numerics, {}};
    if (k->numerics.instruction) {
      auto p = tc::model_params(*k->numerics.instruction);
      if (!p) continue;
      kk.params = *p;
    }
    out.push_back(std::move(kk));
  }
  return out;
}

std::vector<explain::KnownKernel> known_kernels_from_json(const nlohmann::json& j) {
  std::vector<explain::KnownKernel> out;
  for (const auto& [name, nj] : j.items()) {
    explain::KnownKernel kk{name, numerics_from_json(nj), {}};
    if (kk.numerics.instruction) {
      auto p = tc::model_params(*kk.numerics.instruction);
      if (!p) continue;
      kk.params = *p;
    }
    out.push_back(std::move(kk));
  }
  return out;
}

std::string numerics_signature(const explain::Report& r) {
  if (!r.identified) return "";
  std::ostringstream s;
  s << explain::to_string(r.conversion.a) << "|" << explain::to_string(r.conversion.b) << "|"
    << std::hash<std::string>{}(r.tree.tree.canonical());
  for (const explain::NodeKind& k : r.nodes.kinds) s << "|" << k.leaves << (k.carry ? "c" : "") << ":" << k.params.describe();
  // Split operands: the scheme in words (every field of it), so that two schemes never share a signature.
  if (r.nodes.split) s << "|split:" << r.nodes.split->describe();
  if (!r.dequantization.operands.empty()) s << "|dequantized " << r.dequantization.operands << ":" << r.dequantization.chosen;
  // An order that depends on scheduling: the orders seen are part of what decides the bits.
  if (r.schedule.verdict == "depends") {
    s << "|schedule";
    for (const explain::ScheduleVariant& v : r.schedule.variants)
      s << ":" << (v.revealed ? std::to_string(std::hash<std::string>{}(v.tree.canonical())) : "unrevealed");
  }
  return std::to_string(std::hash<std::string>{}(s.str()));
}

nlohmann::json report_to_json(const explain::Report& r) {
  nlohmann::json j;
  j["identified"] = r.identified;
  // The generation whose tensor-core models explained the nodes (reference/tc_gpus.hpp): the GPU's own,
  // or --gpu's; gemmlab port starts from it.
  j["tc_generation"] = tc::to_string(tc::active_generation());
  j["failed_stage"] = r.failed_stage;
  j["reason"] = r.reason;
  j["gemm_check"] = r.gemm_check;
  // The whole tree too, for plots/explain_tree.py: node K + i adds the inputs nodes[i] (products < K).
  nlohmann::json nodes = nlohmann::json::array();
  if (!r.tree.form.empty())
    for (int n = r.tree.tree.leaves(); n < r.tree.tree.node_count(); ++n) nodes.push_back(r.tree.tree.children(n));
  j["tree"] = {{"ok", r.tree.ok},
               {"text", r.tree.text},
               {"words", r.tree.text},
               {"form", r.tree.form},
               {"products", r.tree.form.empty() ? 0 : r.tree.tree.leaves()},
               {"nodes", nodes},
               {"why", r.tree.why},
               {"entries_used", r.tree.entries_used},
               {"entries_verified", r.tree.entries_verified},
               {"entries_differing", r.tree.entries_differing},
               {"differing", r.tree.differing},
               {"deterministic", r.tree.deterministic},
               {"masks", r.tree.masks},
               {"seconds", r.tree.seconds}};
  nlohmann::json trials = nlohmann::json::array(), variants = nlohmann::json::array();
  for (const explain::ScheduleTrial& t : r.schedule.trials)
    trials.push_back({{"perturbation", t.perturbation},
                      {"words", t.words},
                      {"not_applied", t.not_applied},
                      {"entries", t.entries},
                      {"following", t.following},
                      {"variant_entries", t.variant_entries},
                      {"unexplained", t.unexplained},
                      {"launches", t.launches},
                      {"seconds", t.seconds}});
  for (const explain::ScheduleVariant& v : r.schedule.variants)
    variants.push_back({{"revealed", v.revealed},
                        {"text", v.text},
                        {"canonical", v.revealed ? v.tree.canonical() : std::string()},
                        {"why", v.why},
                        {"first_seen", v.first_seen},
                        {"entries", v.entries}});
  j["schedule"] = {{"ran", r.schedule.ran},
                   {"verdict", r.schedule.verdict},
                   {"why", r.schedule.why},
                   {"exposed_by", r.schedule.exposed_by},
                   {"bound_note", r.schedule.bound_note},
                   {"text", r.schedule.text},
                   {"trials", trials},
                   {"variants", variants},
                   {"seconds", r.schedule.seconds}};
  j["oracle_lost"] = r.oracle_lost;
  j["conversion"] = {{"ok", r.conversion.ok},
                     {"a", explain::to_string(r.conversion.a)},
                     {"b", explain::to_string(r.conversion.b)},
                     {"a_words", explain::in_words(r.conversion.a)},
                     {"split", r.conversion.split},
                     {"why", r.conversion.why}};
  nlohmann::json kinds = nlohmann::json::array();
  for (const explain::NodeKind& k : r.nodes.kinds) {
    nlohmann::json cands = nlohmann::json::array();
    for (const explain::NodeKind::Candidate& c : k.candidates)
      cands.push_back({{"instruction", c.instruction}, {"probes", c.probes}, {"mismatching", c.mismatching},
                       {"ruled_out", c.mismatching > 0}});
    kinds.push_back({{"leaves", k.leaves},
                     {"carry", k.carry},
                     {"instruction", k.instruction},
                     {"probes", k.probes},
                     {"skipped", k.skipped},
                     {"mismatching", k.mismatching},
                     {"model", k.params.describe()},
                     {"ambiguous", k.ambiguous},
                     {"same_as", k.same_as},
                     {"checked_through", k.checked_through},
                     {"candidates", cands},
                     {"ruled_out", k.ruled_out()},
                     {"inferred_from", k.inferred_from},
                     {"inferred_mismatching", k.inferred_mismatching}});
  }
  j["nodes"] = {{"ok", r.nodes.ok},
                {"why", r.nodes.why},
                {"kinds", kinds},
                {"split", r.nodes.split ? nlohmann::json(r.nodes.split->describe()) : nlohmann::json(nullptr)},
                {"split_candidates", r.nodes.split_candidates},
                {"split_probes", r.nodes.split_probes},
                {"seconds", r.nodes.seconds}};
  nlohmann::json cmp = nlohmann::json::array();
  for (const explain::Comparison& c : r.comparisons)
    cmp.push_back({{"distribution", c.distribution},
                   {"outputs", c.outputs},
                   {"mismatches", c.mismatches},
                   {"by_variant", c.by_variant},
                   {"first_mismatch", c.first_mismatch},
                   {"run_seconds", c.run_seconds},
                   {"prediction_seconds", c.prediction_seconds}});
  j["comparisons"] = cmp;
  // Where the time went, stage by stage (reference/explain.hpp Report::stage_times).
  nlohmann::json stages = nlohmann::json::array();
  for (const explain::Report::StageTime& t : r.stage_times)
    stages.push_back({{"stage", t.stage}, {"seconds", t.seconds}, {"launches", t.launches}});
  j["stages"] = stages;
  j["numerics"] = r.numerics ? numerics_to_json(*r.numerics) : nlohmann::json(nullptr);
  j["numerics_text"] = r.numerics_text;
  // The bound of the record (NaN, written as null, without one; +inf as the string "inf").
  auto number = [](double x) {
    if (std::isnan(x)) return nlohmann::json(nullptr);
    if (std::isinf(x)) return nlohmann::json("inf");
    return nlohmann::json(x);
  };
  j["bound"] = {{"factor", number(r.bound)},
                {"underflow", number(r.numerics ? r.underflow_bound : std::nan(""))},
                {"path_roundoff", r.path_roundoff},
                {"path_roundings", r.path_roundings},
                {"worst_product", r.worst_product},
                {"named_order_gamma_k", number(r.named_bound)}};
  j["behaves_like"] = r.behaves_like;
  // A quantized problem: its scales on the operands in the prediction, and how the kernel rounds dequantized
  // operands the input format cannot hold (reference/explain.hpp Report::Dequantization; null: none rounded).
  j["quantized"] = r.quantized;
  if (r.dequantization.operands.empty()) {
    j["dequantization"] = nullptr;
  } else {
    nlohmann::json tried = nlohmann::json::object();
    for (const auto& [name, miss] : r.dequantization.tried) tried[name] = miss;
    j["dequantization"] = {{"operands", r.dequantization.operands},
                           {"chosen", r.dequantization.chosen},
                           {"trial_outputs", r.dequantization.trial_outputs},
                           {"mismatches", tried}};
  }
  j["signature"] = numerics_signature(r);
  j["launches"] = r.launches;
  j["seconds"] = r.seconds;
  j["first_call_seconds"] = r.first_call_seconds;  // before the clock (Options::first_call)
  j["predicted_on_gpu"] = r.predicted_on_gpu;  // the composition's outputs predicted on the GPU (Options::emulate)
  j["summary"] = r.summary();
  return j;
}

const std::vector<std::string>& explain_columns() {
  static const std::vector<std::string> c{
      "kernel",          "M",           "N",          "K",           "seed",         "distribution",
      "identified",      "failed_stage", "reason",    "tree",        "tree_entries", "tree_entries_verified",
      "tree_entries_differing", "scheduling", "scheduling_trials", "conversion_a", "conversion_b", "node_models",
      "node_probes",     "numerics",    "signature",  "behaves_like", "compared_outputs", "mismatches",
      "predicted_by_variant", "first_mismatch", "launches", "explain_seconds", "node_ruled_out", "tree_form", "bound"};
  return c;
}

std::vector<std::vector<std::string>> explain_rows(const std::string& kernel, const explain::Report& r, int M, int N,
                                                   int K, std::uint64_t seed) {
  std::string models = r.nodes.split ? "split: " + r.nodes.split->describe() : "", probes, like, ruled_out;
  for (const explain::NodeKind& k : r.nodes.kinds) {
    if (const std::string out = k.ruled_out(); !out.empty())
      ruled_out += std::string(ruled_out.empty() ? "" : "; ") + std::to_string(k.leaves) + (k.carry ? "+C" : "") + ": " + out;
    models += std::string(models.empty() ? "" : "; ") + std::to_string(k.leaves) + (k.carry ? "+C" : "") + ": " +
              k.params.describe() + (k.same_as.empty() ? "" : " (= " + k.same_as + ")") +
              (k.checked_through.empty() ? "" : " (checked through the " + k.checked_through + " output)");
    probes += std::string(probes.empty() ? "" : " ") + std::to_string(k.probes - k.mismatching) + "/" +
              std::to_string(k.probes);
  }
  for (const std::string& b : r.behaves_like) like += (like.empty() ? "" : " ") + b;
  // Each trial of the scheduling stage: "name following/entries", "+v<i>:<n>" per variant, or why not.
  std::string trials;
  for (const explain::ScheduleTrial& t : r.schedule.trials) {
    trials += (trials.empty() ? "" : "; ") + t.perturbation + " ";
    if (!t.not_applied.empty()) {
      trials += "not applied: " + t.not_applied;
      continue;
    }
    trials += std::to_string(t.following) + "/" + std::to_string(t.entries);
    for (std::size_t v = 0; v < t.variant_entries.size(); ++v)
      if (t.variant_entries[v]) trials += " v" + std::to_string(v + 1) + ":" + std::to_string(t.variant_entries[v]);
  }
  auto row = [&](const std::string& dist, long long outputs, long long mism, long long by_variant,
                 const std::string& first) {
    char secs[32];
    std::snprintf(secs, sizeof secs, "%.3f", r.seconds);
    return std::vector<std::string>{kernel,
                                    std::to_string(M),
                                    std::to_string(N),
                                    std::to_string(K),
                                    std::to_string(seed),
                                    dist,
                                    r.identified ? "yes" : "no",
                                    r.failed_stage,
                                    r.reason,
                                    r.tree.text,
                                    std::to_string(r.tree.entries_used),
                                    std::to_string(r.tree.entries_verified),
                                    std::to_string(r.tree.entries_differing),
                                    r.schedule.verdict,
                                    trials,
                                    !r.conversion.ok ? "" : r.conversion.split ? "split" : explain::to_string(r.conversion.a),
                                    !r.conversion.ok ? "" : r.conversion.split ? "split" : explain::to_string(r.conversion.b),
                                    models,
                                    probes,
                                    r.numerics ? r.numerics->describe() : "",
                                    numerics_signature(r),
                                    like,
                                    outputs < 0 ? "" : std::to_string(outputs),
                                    mism < 0 ? "" : std::to_string(mism),
                                    by_variant < 0 ? "" : std::to_string(by_variant),
                                    first,
                                    std::to_string(r.launches),
                                    secs,
                                    ruled_out,
                                    r.tree.form,
                                    !r.numerics ? "" : std::isinf(r.bound) ? "inf" : fmt_double(r.bound)};
  };
  std::vector<std::vector<std::string>> rows;
  for (const explain::Comparison& c : r.comparisons)
    rows.push_back(row(c.distribution, c.outputs, c.mismatches, c.by_variant, c.first_mismatch));
  if (rows.empty()) rows.push_back(row("", -1, -1, -1, ""));
  return rows;
}

}  // namespace gemmlab
