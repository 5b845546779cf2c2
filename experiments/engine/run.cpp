// `gemmlab run`: the experiment loop (see run.hpp).
#include "experiments/engine/run.hpp"

#include "experiments/engine/evaluate.hpp"

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <set>
#include <thread>
#include <utility>
#include <sys/resource.h>
#include <unistd.h>

#include "experiments/engine/engine.hpp"
#include "experiments/engine/form_rows.hpp"
#include "experiments/engine/merge.hpp"
#include "experiments/engine/plugin.hpp"
#include "experiments/engine/shard.hpp"
#include "experiments/engine/watchdog.hpp"
#include "experiments/engine/worker_process.hpp"
#include "experiments/engine/evaluate.hpp"
#include "experiments/report/files.hpp"
#include "experiments/report/metadata.hpp"
#include "kernels/registry.hpp"
#include "reference/error_stats.hpp"
#include "reference/mpfr_gemm.hpp"
#include "reference/parallel.hpp"
#include "reference/rng.hpp"
#include "reference/scaled_fp8.hpp"

namespace fs = std::filesystem;

namespace gemmlab {

namespace {

// What has become of a stopped worker process, for the message of a run that cannot go on after it:
// gone, or still there in state D (the driver has not finished ending its GPU context) or another.
std::string stopped_process_words(pid_t pid) {
  if (pid <= 0) return "";
  std::FILE* f = std::fopen(("/proc/" + std::to_string(pid) + "/stat").c_str(), "r");
  if (!f) return "; the stopped worker process (pid " + std::to_string(pid) + ") has ended";
  char buf[512] = {0};
  const size_t n = std::fread(buf, 1, sizeof buf - 1, f);
  std::fclose(f);
  // pid (comm) STATE ...: the state follows the last ')' (a comm may hold one).
  const std::string s(buf, n);
  const size_t close = s.rfind(')');
  const char state = close != std::string::npos && close + 2 < s.size() ? s[close + 2] : '?';
  const std::string what = state == 'D'   ? "in uninterruptible wait (D): the driver is still ending its GPU context"
                           : state == 'Z' ? "a zombie"
                                          : std::string("in state ") + state;
  return "; the stopped worker process (pid " + std::to_string(pid) + ") is still there, " + what;
}

// The kernels one entry of a plan's `kernels` or `exclude` list selects: a kernel's name, or
// family:<family> (every kernel of the family, those `all` leaves out included). `list` names the
// list in messages ("kernels" or "exclude").
std::vector<const Kernel*> kernels_named(const std::string& name, const std::string& list) {
  std::vector<const Kernel*> out;
  const std::string where = list == "kernels" ? "" : " in " + list;
  if (name.rfind("family:", 0) == 0) {
    const std::string fam = name.substr(7);
    for (auto* k : all_kernels())
      if (fam == k->family) out.push_back(k);
    if (out.empty())
      throw UsageError("no kernel of family '" + fam + "' is registered" + where + " (`gemmlab list` shows them)");
  } else if (const Kernel* k = find_kernel(name)) {
    out.push_back(k);
  } else {
    std::string near;
    for (auto* c : all_kernels())
      if (std::string(c->name).find(name) != std::string::npos) near += std::string(near.empty() ? "" : ", ") + c->name;
    throw UsageError("unknown kernel '" + name + "'" + where + (near.empty() ? "" : " (did you mean: " + near + "?)") +
                     "; `gemmlab list` shows the " + std::to_string(all_kernels().size()) +
                     " registered kernels (a plugin's kernels are there once it is loaded with --plugin PATH "
                     "or a suite's plugins)");
  }
  return out;
}

}  // namespace

ResolvedPlan resolve(const RunPlan& p) {
  ResolvedPlan r;
  // Every exclude entry is checked (an unknown name is refused) before the selection.
  std::set<std::string> excluded;
  for (const auto& name : p.exclude) {
    if (name == "all") throw UsageError("exclude: 'all' would leave no kernel; name kernels or family:<family>");
    for (const Kernel* k : kernels_named(name, "exclude")) excluded.insert(k->name);
  }
  std::set<std::string> seen;
  auto add = [&](const Kernel* k) {
    if (!excluded.count(k->name) && seen.insert(k->name).second) r.kernels.push_back(k);
  };
  for (const auto& name : p.kernels) {
    if (name == "all") {
      // Every kernel but those that declare why `all` leaves them out (host kernels: Kernel::left_out_of_all).
      for (auto* k : all_kernels())
        if (!k->left_out_of_all) add(k);
    } else {
      for (const Kernel* k : kernels_named(name, "kernels")) add(k);
    }
  }
  if (r.kernels.empty() && !p.kernels.empty()) {
    std::string asked;
    for (const auto& name : p.kernels) asked += (asked.empty() ? "" : ", ") + name;
    throw UsageError("kernels [" + asked + "] select no kernel once exclude and what `all` leaves out are taken away "
                     "(`gemmlab list` shows the kernels `all` leaves out): name a kernel to run");
  }
  for (const auto& name : p.distributions) {
    if (name == "all") {
      for (const auto& d : default_distributions()) r.distributions.push_back(d);
      continue;
    }
    try {
      r.distributions.push_back(parse_distribution(name));
    } catch (const std::invalid_argument& e) {
      throw UsageError(e.what());
    }
  }
  return r;
}

engine::PlanSpec plan_spec(const RunPlan& p, const ResolvedPlan& r) {
  engine::PlanSpec s;
  for (auto* k : r.kernels) s.kernels.push_back({k->name, info(k->numerics.input).name, form_key(k->form ? k->form : "")});
  if (p.forms != std::vector<std::string>{"default"})
    for (const auto& f : p.forms) s.forms.push_back(f == "default" ? f : form_key(f));
  for (const auto& d : r.distributions) s.distributions.push_back(d.name());
  for (const auto& z : p.sizes) s.sizes.push_back({z.M, z.N, z.K});
  s.seeds = p.seeds;
  s.reps = p.reps;
  s.warmup = p.warmup;
  if (p.reps == 0) {  // the noise rule decides the launches only without a fixed count
    s.max_noise = p.max_noise;
    s.min_samples = p.min_samples;
    s.min_time_ms = p.min_time_ms;
    s.max_time_ms = p.max_time_ms;
  }
  s.reference = p.reference;
  s.spot_checks = p.spot_checks;
  for (auto* k : r.kernels)
    if (const LoadedPlugin* pl = plugin_of(k->name)) {
      const engine::PlanPlugin used{pl->path, pl->sha256};
      if (std::find(s.plugins.begin(), s.plugins.end(), used) == s.plugins.end()) s.plugins.push_back(used);
    }
  return s;
}

std::vector<int> parse_gpus(const std::string& text, int count) {
  const std::string have = count == 0 ? "this host has no usable GPU"
                                      : "this host has " + std::to_string(count) + " GPU" + (count == 1 ? "" : "s") +
                                            " (0" + (count > 1 ? ".." + std::to_string(count - 1) : "") + ")";
  std::vector<int> out;
  if (text == "all") {
    if (count == 0) throw UsageError("--gpus all: " + have);
    for (int i = 0; i < count; ++i) out.push_back(i);
    return out;
  }
  // The whole list is read first, so that a malformed entry is named before any missing GPU.
  std::vector<int> asked;
  std::size_t start = 0;
  while (start <= text.size()) {
    std::size_t end = text.find(',', start);
    if (end == std::string::npos) end = text.size();
    const std::string tok = text.substr(start, end - start);
    if (tok.empty() || tok.size() > 4 || tok.find_first_not_of("0123456789") != std::string::npos)
      throw UsageError("--gpus '" + text + "' is not understood: give 'all' or GPU indices such as 0,1");
    asked.push_back(std::stoi(tok));
    start = end + 1;
  }
  for (int i : asked) {
    if (i >= count)
      throw UsageError("--gpus names GPU " + std::to_string(i) + ", but " + have +
                       (count ? ": use --gpus all or indices below " + std::to_string(count) : ""));
    if (std::find(out.begin(), out.end(), i) != out.end())
      throw UsageError("--gpus names GPU " + std::to_string(i) + " twice: list each GPU once");
    out.push_back(i);
  }
  return out;
}

GemmReference compute_reference(const RunPlan& plan, const Matrix& A, const Matrix& B, Format out, int threads,
                                std::uint64_t seed, std::string& label) {
  ReferenceOptions o{plan.reference == "gpu" ? "cpu" : plan.reference, plan.spot_checks, seed, threads};
  auto ref = cpu_reference(A, B, o);
  label = ref->label;
  GemmReference r = ref->host();
  r.c_out = output_reference(r, out);
  r.out = out;
  return r;
}

namespace {

Format narrowest(Format a, Format b) { return info(a).precision <= info(b).precision ? a : b; }

std::string file_tag(const Distribution& d, const Size& z, std::uint64_t seed, Format in) {
  return d.name() + "_" + z.str() + "_s" + std::to_string(seed) + "_" + info(in).name;
}

double seconds_since(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

// The input formats of the plan's kernels.
std::map<std::string, Format> formats_of(const ResolvedPlan& rp) {
  std::map<std::string, Format> f;
  for (const Kernel* k : rp.kernels) f.emplace(info(k->numerics.input).name, k->numerics.input);
  return f;
}

// Everything a run needs to know before the first row: checked plan, its rows, output paths.
struct Prepared {
  ResolvedPlan rp;
  engine::PlanSpec spec;
  std::vector<engine::RowKey> rows;  // this run's: the plan's, or one shard's
  std::string out;
  engine::OutputPaths paths;
};

Prepared prepare(const RunRequest& req, const std::vector<Device*>& devices) {
  const RunPlan& plan = req.plan;
  validate_numbers(plan);
  Prepared p;
  load_plugins(plan.plugins);  // before the kernel names are resolved: theirs are among them
  p.rp = resolve(plan);
  // Every (kernel, size) pair must fit before anything runs.
  std::string unfit;
  for (const auto& z : plan.sizes)
    for (auto* k : p.rp.kernels)
      if (std::string why = check_size(*k, z.M, z.N, z.K); !why.empty()) unfit += "\n  " + why;
  if (!unfit.empty())
    throw UsageError("some kernels cannot take the requested sizes:" + unfit +
                     "\nchoose sizes that fit or leave those kernels out");
  p.spec = plan_spec(plan, p.rp);
  p.rows = engine::plan_rows(p.spec);
  if (!req.shard.empty()) p.rows = engine::shard_rows(p.rows, engine::parse_shard(req.shard));

  p.out = req.out_csv.empty() ? "results/" + plan.name + "-" + utc_now("%Y%m%dT%H%M%SZ") + ".csv" : req.out_csv;
  p.paths = engine::OutputPaths::for_csv(p.out);
  check_writable(p.out);
  if (!req.save_matrices.empty()) {
    if (req.dry_run) throw UsageError("--dry-run computes no matrix: leave out --save-matrices");
    std::error_code ec;
    if (!fs::is_directory(req.save_matrices, ec))
      throw UsageError("--save-matrices folder '" + req.save_matrices + "' does not exist: create it first");
    check_writable((fs::path(req.save_matrices) / "probe.npy").string());
  }
  if (req.dry_run) return p;

  if (devices.empty()) throw std::logic_error("run_experiment: no device for a run that is not a dry run");
  for (Device* device : devices) {
    const DeviceInfo& dev = device->info();
    if (!dev.present)
      throw UsageError("gemmlab run needs a CUDA GPU, and none is usable here: " + dev.why_absent +
                       ". `gemmlab list` and `gemmlab run --dry-run` work without one.");
    for (const auto& z : plan.sizes)
      for (const auto& [name, in] : formats_of(p.rp))
        if (std::string why = device->check_memory(z.M, z.N, z.K, in); !why.empty()) throw UsageError(why);
  }
  return p;
}

// What must match for a journal to be resumed: the plan, this binary, the GPUs (none for a dry run).
engine::JournalIdentity identity(const RunRequest& req, const Prepared& p, const std::vector<Device*>& devices) {
  engine::JournalIdentity id;
  id.plan_hash = engine::plan_hash(p.spec);
  id.git_commit = git_commit();
  id.gemmlab_version = gemmlab_version();
  if (!req.dry_run) {
    std::vector<std::string> names;
    for (Device* d : devices) {
      if (std::find(names.begin(), names.end(), d->info().name) == names.end()) names.push_back(d->info().name);
      id.gpu_uuid += (id.gpu_uuid.empty() ? "" : ",") + d->info().uuid;
    }
    for (const auto& n : names) id.gpu_name += (id.gpu_name.empty() ? "" : ",") + n;
  }
  id.shard = req.shard.empty() ? "" : engine::parse_shard(req.shard).str();
  id.columns = result_columns();
  for (const auto& pl : p.spec.plugins) id.plugins += (id.plugins.empty() ? "" : ", ") + pl.path + " sha256:" + pl.sha256;
  return id;
}

nlohmann::json plan_metadata(const RunRequest& req, const Prepared& p, const std::vector<Device*>& devices) {
  const RunPlan& plan = req.plan;
  nlohmann::json meta = base_metadata("run", req.command_line, p.out);
  meta["plan"] = {{"name", plan.name},           {"kernels", plan.kernels}, {"distributions", plan.distributions},
                  {"seeds", plan.seeds},         {"reps", plan.reps},       {"warmup", plan.warmup},
                  {"reference", plan.reference}, {"spot_checks", plan.spot_checks}, {"forms", plan.forms}};
  if (plan.reps == 0)
    meta["plan"]["stopping"] = {{"max_noise", plan.max_noise},
                                {"min_samples", plan.min_samples},
                                {"min_time_ms", plan.min_time_ms},
                                {"max_time_ms", plan.max_time_ms}};
  for (const auto& z : plan.sizes) meta["plan"]["sizes"].push_back({z.M, z.N, z.K});
  if (!plan.plugins.empty()) meta["plan"]["plugins"] = plan.plugins;
  if (!plan.exclude.empty()) meta["plan"]["exclude"] = plan.exclude;
  std::vector<std::string> kernel_names;
  for (const Kernel* k : p.rp.kernels) kernel_names.push_back(k->name);
  if (nlohmann::json plugins = plugins_metadata(kernel_names); !plugins.empty()) meta["plugins"] = plugins;
  if (req.dry_run) {
    meta["dry_run"] = true;
    meta["gpu"] = {{"name", "none"}, {"why_absent", "--dry-run: nothing ran"}};
  } else {
    Device& first = *devices.front();
    add_device_metadata(meta, first.info(), first.software(), first.sm_clock_mhz());
    if (devices.size() > 1) {
      meta["gpus"] = nlohmann::json::array();
      for (Device* d : devices)
        meta["gpus"].push_back({{"index", d->info().device}, {"name", d->info().name}, {"uuid", d->info().uuid}});
    }
  }
  meta["cpu_threads"] = req.threads ? req.threads : static_cast<int>(std::thread::hardware_concurrency());
  if (!req.caller_metadata.is_null()) meta["caller"] = req.caller_metadata;
  return meta;
}

// Seconds spent in each part of the work, summed over the workers (so with several GPUs they can
// add up to more than the run's wall time), and per row: each part a worker spends is also the row's it
// is working on (a problem's inputs and reference are the first row's that needs them, a row's journal
// write its own), taken when the row is emitted.
struct TimeSplit {
  std::mutex mu;
  double kernels = 0;       // the launches themselves: warm-up and timed, with their L2 flushes and NaN poisons
  double kernel_setup = 0;  // around them: operands packed for the kernel, checks of C and of the inputs
  double reference = 0, statistics = 0, inputs = 0, io = 0;
  long long stats_reused = 0;  // rows whose statistics were an earlier row's of the same bits (Measurement)
  std::chrono::steady_clock::time_point start = std::chrono::steady_clock::now();
  double startup = -1;  // from the run's start to its first problem (plan, GPU context, journal); -1: none yet
  // Per row: key, status, then the parts below and the row's wall time (since the worker's previous row).
  static constexpr const char* kRowColumns[] = {"key", "status", "kernels", "kernel_setup", "statistics",
                                                "reference", "inputs", "io", "wall"};
  std::vector<nlohmann::json> rows;
  struct Parts {
    double kernels = 0, kernel_setup = 0, statistics = 0, reference = 0, inputs = 0, io = 0;
  };
  // Each worker's parts of the row under way, and when its previous row ended (the run's start at first).
  struct Worker {
    Parts parts;
    std::chrono::steady_clock::time_point last;
  };
  std::map<std::thread::id, Worker> workers;
  Worker& worker() {  // under mu
    auto [it, added] = workers.try_emplace(std::this_thread::get_id());
    if (added) it->second.last = start;
    return it->second;
  }
  void add(double TimeSplit::*part, double s) {
    std::lock_guard<std::mutex> lock(mu);
    this->*part += s;
    Parts& r = worker().parts;
    (part == &TimeSplit::kernels        ? r.kernels
     : part == &TimeSplit::kernel_setup ? r.kernel_setup
     : part == &TimeSplit::statistics   ? r.statistics
     : part == &TimeSplit::reference    ? r.reference
     : part == &TimeSplit::inputs       ? r.inputs
                                        : r.io) += s;
  }
  // A worker begins a problem: the first one ends the start-up.
  void problem_begins() {
    std::lock_guard<std::mutex> lock(mu);
    if (startup < 0) startup = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  }
  // The row this worker just emitted: its parts since its previous row.
  void row_done(const ResultRow& row) {
    std::lock_guard<std::mutex> lock(mu);
    Worker& w = worker();
    const Parts p = w.parts;
    w.parts = Parts{};
    const auto now = std::chrono::steady_clock::now();
    const double wall = std::chrono::duration<double>(now - w.last).count();
    w.last = now;
    rows.push_back(nlohmann::json::array(
        {row.key(), to_string(row.status), p.kernels, p.kernel_setup, p.statistics, p.reference, p.inputs, p.io, wall}));
  }
};

// The rows that left a GPU's GPU path (Measurement::host_path), by reason: the metadata's
// `gpu_path`, so that no fallback is silent.
struct HostPaths {
  std::mutex mu;
  std::map<std::string, long long> rows_by_reason;
  long long rows = 0;
  // Notes the row (its note begins "host path: <why>; ") and counts it; nothing for a row that stayed.
  void record(ResultRow& row, const Measurement& m) {
    if (m.host_path.empty()) return;
    row.note = "host path: " + m.host_path + "; " + row.note;
    std::lock_guard<std::mutex> lock(mu);
    ++rows;
    ++rows_by_reason[m.host_path];
  }
};

// The exact reference of one problem, computed by the device when a kernel first needs it, once for
// every output format.
class ReferenceCache {
 public:
  ReferenceCache(const RunRequest& req, int threads, ProblemInputs& in, const Size& z, std::uint64_t seed,
                 std::string tag, engine::WorkerContext& ctx, const std::string& who, TimeSplit& time, Device& device)
      : req_(req), threads_(threads), in_(in), z_(z), seed_(seed), tag_(std::move(tag)), ctx_(ctx), who_(who),
        time_(time), device_(device) {}

  ProblemReference& get() {
    if (ref_) return *ref_;
    const auto t0 = std::chrono::steady_clock::now();
    // The one place a reference is computed: the device's engine (GPU, with a CPU fallback).
    ref_ = device_.reference(in_, ReferenceOptions{req_.plan.reference, req_.plan.spot_checks, seed_, threads_});
    time_.add(&TimeSplit::reference, seconds_since(t0));
    char line[256];
    std::snprintf(line, sizeof line, "%s   reference (%s): %.3f s", who_.c_str(), ref_->label.c_str(), ref_->seconds);
    ctx_.log(line);
    return *ref_;
  }

  // --save-matrices: the binary64 reference and its rounding to `out`, once per format.
  void save(Format out) {
    if (req_.save_matrices.empty() || !saved_.insert(out).second) return;
    const auto t1 = std::chrono::steady_clock::now();
    const GemmReference& r = get().host();
    const std::string base = (fs::path(req_.save_matrices) / tag_).string();
    if (saved_.size() == 1) write_npy(base + "_ref_fp64.npy", r.c, z_.M, z_.N);
    write_npy(base + "_ref_rn_" + info(out).name + ".npy", output_reference(r, out), z_.M, z_.N);
    time_.add(&TimeSplit::io, seconds_since(t1));
  }

 private:
  const RunRequest& req_;
  int threads_;
  ProblemInputs& in_;
  Size z_;
  std::uint64_t seed_;
  std::string tag_;
  engine::WorkerContext& ctx_;
  const std::string& who_;
  TimeSplit& time_;
  Device& device_;
  std::unique_ptr<ProblemReference> ref_;
  std::set<Format> saved_;
};

// One problem's rows (every kernel of one distribution x size x seed x input format), computed on
// one device and handed to the engine one by one as they finish.
class ProblemRunner {
 public:
  ProblemRunner(const RunRequest& req, const Prepared& p, const std::vector<Device*>& devices, TimeSplit& time,
                std::atomic<int>& errors, HostPaths& host_paths)
      : req_(req), devices_(devices), time_(time), errors_(errors), host_paths_(host_paths) {
    for (auto* k : p.rp.kernels) kernels_[k->name] = k, formats_[info(k->numerics.input).name] = k->numerics.input;
    for (const auto& d : p.rp.distributions) dists_.emplace(d.name(), d);
    const int workers = static_cast<int>(std::max<std::size_t>(1, devices.size()));
    // The CPU threads are shared among the workers; the statistics do not depend on the count.
    threads_ = workers == 1 ? req.threads : std::max(1, resolve_threads(req.threads) / workers);
    topt_ = req.timing;
    topt_.reps = req.plan.reps;
    topt_.warmup = req.plan.warmup;
    topt_.max_noise = req.plan.max_noise;
    topt_.min_samples = req.plan.min_samples;
    topt_.min_time_ms = req.plan.min_time_ms;
    topt_.max_time_ms = req.plan.max_time_ms;
  }

  void operator()(const engine::Problem& prob, engine::WorkerContext& ctx) {
    const Distribution& d = dists_.at(prob.key.distribution);
    const Size z{prob.key.size.M, prob.key.size.N, prob.key.size.K};
    const std::uint64_t seed = prob.key.seed;
    const Format in = formats_.at(prob.key.input_format);
    const std::string who = devices_.size() > 1 ? "[gemmlab gpu" + std::to_string(devices_[ctx.worker]->info().device) + "]"
                                                : std::string("[gemmlab]");
    std::vector<const Kernel*> kernels;
    for (const auto& r : prob.rows) kernels.push_back(kernels_.at(r.kernel));
    time_.problem_begins();
    auto emit = [&](const ResultRow& row) {
      if (retried_by_retry_failed(row.status)) ++errors_;
      const auto t0 = std::chrono::steady_clock::now();
      ctx.emit(to_fields(row));  // journaled (on disk) when it returns
      time_.add(&TimeSplit::io, seconds_since(t0));
      time_.row_done(row);
    };

    if (req_.dry_run) {
      const GemmForm form = parse_form(prob.key.form);
      for (const Kernel* k : kernels) {
        if (ctx.should_stop()) return;
        ResultRow row = describe_form(*k, d.name(), z.M, z.N, z.K, seed, form);
        row.status = Status::planned;
        emit(row);
      }
      return;
    }
    char line[512];
    std::snprintf(line, sizeof line, "%s %s %s seed %llu, %s inputs", who.c_str(), d.name().c_str(), z.str().c_str(),
                  static_cast<unsigned long long>(seed), info(in).name);
    ctx.log(line);
    // A quantized distribution: its kernels take it (before unusable_reason, which gives the others their reason).
    if (d.quant && prob.key.form.empty()) {
      run_quantized_problem(d, z, seed, kernels, ctx, who, emit);
      return;
    }
    if (std::string why = unusable_reason(d, in); !why.empty()) {
      // This distribution cannot be expressed in this input format: say so in every row.
      const GemmForm form = parse_form(prob.key.form);
      for (const Kernel* k : kernels) {
        if (ctx.should_stop()) return;
        ResultRow row = describe_form(*k, d.name(), z.M, z.N, z.K, seed, form);
        row.status = Status::not_applicable;
        row.note = why;
        emit(row);
      }
      return;
    }
    if (!prob.key.form.empty()) {  // the problem beyond C = A B (engine/form_rows.hpp)
      FormRowsContext fc;
      fc.plan = &req_.plan;
      fc.device = devices_[ctx.worker];
      fc.threads = threads_;
      fc.timing = topt_;
      fc.who = who;
      fc.should_stop = [&] { return ctx.should_stop(); };
      fc.log = [&](const std::string& l) { ctx.log(l); };
      fc.emit = emit;
      fc.spent = [&](const char* part, double sec) {
        const std::string p = part;
        time_.add(p == "inputs" ? &TimeSplit::inputs : p == "reference" ? &TimeSplit::reference
                  : p == "kernels" ? &TimeSplit::kernels : p == "statistics" ? &TimeSplit::statistics
                                                             : &TimeSplit::kernel_setup, sec);
      };
      fc.host_path = [&](ResultRow& row, const Measurement& m) { host_paths_.record(row, m); };
      run_form_rows(fc, d, z.M, z.N, z.K, seed, in, prob.key.form, kernels);
      return;
    }
    if (d.recipe) {
      run_scaled_problem(d, z, seed, kernels, ctx, who, emit);
      return;
    }
    Device& device = *devices_[ctx.worker];
    auto t0 = std::chrono::steady_clock::now();
    // Made where the kernels read them (a GPU generates them in its memory, bit for bit generate()).
    const std::unique_ptr<ProblemInputs> inputs = device.inputs(d, z.M, z.N, z.K, in, seed, threads_);
    time_.add(&TimeSplit::inputs, seconds_since(t0));
    const std::string tag = file_tag(d, z, seed, in);
    if (!req_.save_matrices.empty()) {
      t0 = std::chrono::steady_clock::now();
      const Matrix& A = inputs->A();
      const Matrix& B = inputs->B();
      write_npy((fs::path(req_.save_matrices) / (tag + "_A.npy")).string(), A.v, A.rows, A.cols);
      write_npy((fs::path(req_.save_matrices) / (tag + "_B.npy")).string(), B.v, B.rows, B.cols);
      time_.add(&TimeSplit::io, seconds_since(t0));
    }
    ReferenceCache refs(req_, threads_, *inputs, z, seed, tag, ctx, who, time_, device);
    for (const Kernel* k : kernels) {
      if (ctx.should_stop()) return;
      emit(run_row(*k, d, z, seed, *inputs, tag, refs, device, ctx, who));
      if (lost_) std::rethrow_exception(std::exchange(lost_, nullptr));
    }
  }

 private:
  // The row of kernel k on this problem: not_supported, not_applicable (exact result beyond the
  // output format's range), error (the kernel raised one), or measured and judged.
  ResultRow run_row(const Kernel& k, const Distribution& d, const Size& z, std::uint64_t seed, ProblemInputs& inputs,
                    const std::string& tag, ReferenceCache& refs, Device& device,
                    engine::WorkerContext& ctx, const std::string& who) {
    ResultRow row = describe(k, d.name(), z.M, z.N, z.K, seed);
    if (k.quantized) {
      row.status = Status::not_applicable;
      row.note = std::string(k.name) + " is a quantized kernel: it reads " + k.quantized +
                 " operands; give it a distribution with that recipe, e.g. " + d.name() + "@" + k.quantized;
      return row;
    }
    if (k.scale_a != ScaleGranularity::none || k.scale_b != ScaleGranularity::none) {
      row.status = Status::not_applicable;
      row.note = std::string(k.name) + " is a scaled fp8 kernel (" + to_string(k.scale_a) + " x " + to_string(k.scale_b) +
                 " scales): give it a distribution with a recipe, e.g. " + d.name() + "@e4m3_" +
                 (k.scale_a == ScaleGranularity::tensor ? "tensor" : k.scale_a == ScaleGranularity::outer ? "rowwise"
                  : k.scale_b == ScaleGranularity::blk128 ? "1x128_128x128" : "1x128_1x128");
      return row;
    }
    if (req_.plan.reps > 0) row.reps = req_.plan.reps;
    if (std::string why = device.hardware_support(k); !why.empty()) {
      row.status = Status::not_supported;
      row.note = why;
      return row;
    }
    ProblemReference& ref = refs.get();
    refs.save(k.numerics.output);
    row.reference = ref.label;
    // An exact result beyond the output format's range cannot be computed by any kernel.
    if (const long long over = ref.count_beyond(info(k.numerics.output).max_finite)) {
      ref.wait_verified();
      row.status = Status::not_applicable;
      row.note = over_range_note(over, k.numerics.output);
      return row;
    }
    const auto t0 = std::chrono::steady_clock::now();
    try {
      const bool keep = !req_.save_matrices.empty();
      Measurement m = device.measure(k, inputs, ref, topt_, bound_model(k.numerics, z.K), keep, threads_);
      const KernelRun& run = m.run;
      add_times(m);
      if (m.stats_reused) {
        std::lock_guard<std::mutex> lock(time_.mu);
        ++time_.stats_reused;
      }
      record(row, run, m.stats, k, d, device);
      host_paths_.record(row, m);
      if (!req_.save_matrices.empty()) {
        const auto t2 = std::chrono::steady_clock::now();
        write_npy((fs::path(req_.save_matrices) / (tag + "_" + k.name + "_C.npy")).string(), run.c, z.M, z.N);
        time_.add(&TimeSplit::io, seconds_since(t2));
      }
      log_row(row, run, k, ctx, who);
    } catch (const KernelNotSupported& e) {  // the library refused the kernel's setting: not an error
      time_.add(&TimeSplit::kernel_setup, seconds_since(t0));
      row.status = Status::not_supported;
      row.note = e.what();
      ctx.log(who + "   " + k.name + ": not supported: " + e.what());
    } catch (const CudaContextLost& e) {
      // The row is a result (timeout or faulted). Where nothing more can run on this GPU in this process,
      // operator() stops after emitting it: in a worker the parent starts another, in-process the run
      // stops with the rows before it and this one in the journal (the engine says how to resume).
      time_.add(&TimeSplit::kernel_setup, seconds_since(t0));
      if (!record_lost(row, e)) lost_ = std::current_exception();
      ctx.log(who + "   " + k.name + ": " + to_string(row.status) + ": " + row.note);
      if (lost_) return row;  // the reference's checks need the GPU; the row is no judgement against it
    } catch (const std::exception& e) {
      time_.add(&TimeSplit::kernel_setup, seconds_since(t0));
      row.status = Status::error;
      row.note = e.what();
      ctx.log(who + "   " + k.name + ": error: " + e.what());
    }
    // No row is written against a reference whose MPFR spot checks have not passed (a GPU reference
    // runs them while the problem's first kernel runs); a failed check stops the run as before.
    ref.wait_verified();
    return row;
  }

  // A measured row's timing, statistics and verdict (judge, plus what a kernel of unknown
  // accumulation and a nondeterministic one add to it).
  static void record(ResultRow& row, const KernelRun& run, const ErrorStats& stats, const Kernel& k,
                     const Distribution& d, Device& device) {
    record_measured(row, run, stats, k.numerics, d, device.sm_clock_mhz());
    // A host kernel says where and how it ran (its SIMD path and threads: kernels/cpu/eigen_gemm.cpp).
    if (k.row_note) row.note = k.row_note + row.note;
  }

  static void log_row(const ResultRow& row, const KernelRun& run, const Kernel& k, engine::WorkerContext& ctx,
                      const std::string& who) {
    char line[512];
    std::snprintf(line, sizeof line, "%s   %-44s %9.3f ms %8.2f TFLOP/s  bias %+.3e  spread %.3e  %s", who.c_str(), k.name,
                  run.time_ms_median, run.tflops, row.stats->rel_mean, row.stats->rel_std,
                  row.status == Status::failed_bound ? "FAILED_BOUND" : to_string(row.status));
    ctx.log(line);
  }

  // SOURCE@RECIPE: the kernels that take the recipe's scales read the quantized operands and their
  // scale grids; each row is judged against the exact product of the dequantized operands (the
  // GEMM's own error, under its bound) and measured against the exact product of the fp32 sources
  // A0 B0 (the total error, quantization included: ResultRow::total). Kernels that cannot take the
  // recipe, and data the recipe refuses (an all-zero block, ...), get not_applicable rows saying why.
  void run_scaled_problem(const Distribution& d, const Size& z, std::uint64_t seed,
                          const std::vector<const Kernel*>& kernels, engine::WorkerContext& ctx, const std::string& who,
                          const std::function<void(const ResultRow&)>& emit) {
    const ScaleRecipe& r = *d.recipe;
    auto not_applicable = [&](const Kernel& k, const std::string& why) {
      ResultRow row = describe(k, d.name(), z.M, z.N, z.K, seed);
      row.status = Status::not_applicable;
      row.note = why;
      return row;
    };
    std::vector<const Kernel*> takers;
    for (const Kernel* k : kernels) {
      if (k->scale_a == r.a && k->scale_b == r.b) {
        takers.push_back(k);
        continue;
      }
      const bool unscaled = k->scale_a == ScaleGranularity::none && k->scale_b == ScaleGranularity::none;
      emit(not_applicable(*k, std::string(k->name) +
                                  (unscaled ? " takes no scales"
                                            : std::string(" takes ") + to_string(k->scale_a) + " x " + to_string(k->scale_b) +
                                                  " scales") +
                                  "; recipe " + r.name() + " gives " + to_string(r.a) + " x " + to_string(r.b) +
                                  ": choose a kernel of this recipe (gemmlab list) or another recipe"));
    }
    if (takers.empty()) return;
    Device& device = *devices_[ctx.worker];
    auto t0 = std::chrono::steady_clock::now();
    // Made where the kernels read them (a GPU quantizes in its memory, bit for bit make_scaled_problem).
    std::unique_ptr<ScaledInputs> sp;
    try {
      sp = device.scaled_inputs(d, z.M, z.N, z.K, seed, threads_);
    } catch (const std::invalid_argument& e) {
      for (const Kernel* k : takers) emit(not_applicable(*k, e.what()));
      return;
    }
    time_.add(&TimeSplit::inputs, seconds_since(t0));
    const std::string tag = file_tag(d, z, seed, r.fp8);
    ReferenceCache gemm_refs(req_, threads_, sp->dequantized(), z, seed, tag, ctx, who, time_, device);
    ReferenceCache total_refs(req_, threads_, sp->sources(), z, seed, tag + "_source", ctx, who, time_, device);
    judge_against_two_references(
        takers, d, z, seed, gemm_refs, total_refs, device, ctx, who, emit,
        [&](const Kernel& k, ProblemReference& ref, ProblemReference& total, BoundModel& model) {
          model = bound_model(k.numerics, z.K);
          return device.measure_scaled(k, *sp, ref, total, topt_, model, threads_);
        },
        [&](const Kernel& k, const Measurement& m, ResultRow& row) {
          record(row, m.run, m.stats, k, d, device);
          host_paths_.record(row, m);
        });
  }

  // SOURCE@RECIPE with a quantized recipe (reference/quantized.hpp): the kernels of that recipe read the
  // quantized operands (elements, scales, zeros in the layouts of reference/quantized_layout.hpp); each row is
  // judged against the exact product of the dequantized operands (the kernel's own error, under the bound of
  // where it applies the scales: quantized_bound_model), measured against the exact product of the fp32 sources
  // (total, quantization included), and carries the problem's quantization error (the exact dequantized
  // product against the sources'). Other kernels, and data the recipe refuses, get not_applicable rows.
  void run_quantized_problem(const Distribution& d, const Size& z, std::uint64_t seed,
                             const std::vector<const Kernel*>& kernels, engine::WorkerContext& ctx, const std::string& who,
                             const std::function<void(const ResultRow&)>& emit) {
    const QuantRecipe& r = *d.quant;
    auto not_applicable = [&](const Kernel& k, const std::string& why) {
      ResultRow row = describe(k, d.name(), z.M, z.N, z.K, seed);
      row.status = Status::not_applicable;
      row.note = why;
      return row;
    };
    std::vector<const Kernel*> takers;
    for (const Kernel* k : kernels) {
      if (k->quantized && k->quantized == r.name()) {
        takers.push_back(k);
        continue;
      }
      emit(not_applicable(*k, k->quantized ? std::string(k->name) + " reads " + k->quantized + " operands; " + d.name() +
                                                 " gives " + r.name() + ": choose a distribution SOURCE@" + k->quantized
                                           : unusable_reason(d, k->numerics.input)));
    }
    if (takers.empty()) return;
    // Integer elements summed exactly in int32 (QuantScales::output): |q| <= 127, so K 127^2 must stay below 2^31.
    if (z.K > 133143) {
      for (auto it = takers.begin(); it != takers.end();) {
        if ((*it)->quantized_scales == QuantScales::output) {
          emit(not_applicable(**it, "K = " + std::to_string(z.K) + " above 133,143: an int32 sum of K int8 products may "
                                    "overflow, and the bound of scales on the output assumes the sum exact"));
          it = takers.erase(it);
        } else {
          ++it;
        }
      }
    }
    if (takers.empty()) return;
    Device& device = *devices_[ctx.worker];
    auto t0 = std::chrono::steady_clock::now();
    std::unique_ptr<QuantizedInputs> qp;
    try {
      qp = device.quantized_inputs(d, z.M, z.N, z.K, seed, threads_);
    } catch (const std::invalid_argument& e) {
      for (const Kernel* k : takers) emit(not_applicable(*k, e.what()));
      return;
    }
    time_.add(&TimeSplit::inputs, seconds_since(t0));
    const std::string tag = file_tag(d, z, seed, Format::fp64);
    ReferenceCache gemm_refs(req_, threads_, qp->dequantized(), z, seed, tag, ctx, who, time_, device);
    ReferenceCache total_refs(req_, threads_, qp->sources(), z, seed, tag + "_source", ctx, who, time_, device);
    judge_against_two_references(
        takers, d, z, seed, gemm_refs, total_refs, device, ctx, who, emit,
        [&](const Kernel& k, ProblemReference& ref, ProblemReference& total, BoundModel& model) {
          const bool exact = k.quantized_scales == QuantScales::operands && qp->exact_in(k.numerics.compute);
          model = quantized_bound_model(k.numerics, k.quantized_scales, k.quantized_scale_roundings, z.K, exact);
          return device.measure_quantized(k, *qp, ref, total, topt_, model, threads_);
        },
        [&](const Kernel& k, const Measurement& m, ResultRow& row) {
          const bool exact = k.quantized_scales == QuantScales::operands && qp->exact_in(k.numerics.compute);
          // Scales on the output: the integer products are summed exactly, so the bound is the epilogue's
          // whatever the kernel's accumulation order (quantized_bound_model): an undeclared accumulation
          // (a callable's "unknown") claims no less.
          Numerics judged = k.numerics;
          if (k.quantized_scales == QuantScales::output && judged.accumulation == Accumulation::unknown)
            judged.accumulation = Accumulation::fma;
          record_measured(row, m.run, m.stats, judged, d, device.sm_clock_mhz());
          if (k.row_note) row.note = k.row_note + row.note;
          if (k.quantized_scales == QuantScales::unknown && row.status != Status::nondeterministic &&
              row.stats->unwritten == 0 && row.stats->nonfinite == 0) {
            row.status = Status::no_bound;
            row.note = "where the scales are applied is not declared (quantized scales unknown): no bound is claimed; " +
                       row.note;
          }
          row.note = std::string("scales on the ") + to_string(k.quantized_scales) +
                     (k.quantized_scales == QuantScales::operands
                          ? std::string(exact ? ", every dequantized value exact in " : ", dequantized values rounded to ") +
                                info(k.numerics.compute).name
                          : k.quantized_scales == QuantScales::output
                                ? ", " + std::to_string(k.quantized_scale_roundings) + " fp32 roundings before the output's"
                                : std::string()) +
                     "; " + (m.note.empty() ? std::string() : m.note + "; ") + row.note;
          host_paths_.record(row, m);
        });
  }

  // The rows of a scaled-fp8 or quantized problem: each kernel of `takers` judged against the exact product of
  // the operands it reads (gemm_refs) and measured against that of the fp32 sources (total_refs, its total
  // error), with the problem's quantization error (computed once: the same for every kernel). `measure` runs a
  // kernel and sets the bound model it is judged by; `record` fills its row from the measurement. A kernel
  // that hangs or loses the GPU is a timeout or faulted row, as in run_row: emitted, then, where nothing more
  // can run in this process, the run stops (in a worker, the parent starts another).
  template <class Measure, class Record>
  void judge_against_two_references(const std::vector<const Kernel*>& takers, const Distribution& d, const Size& z,
                                    std::uint64_t seed, ReferenceCache& gemm_refs, ReferenceCache& total_refs,
                                    Device& device, engine::WorkerContext& ctx, const std::string& who,
                                    const std::function<void(const ResultRow&)>& emit, Measure measure, Record record) {
    std::optional<TotalError> quantization;
    for (const Kernel* k : takers) {
      if (ctx.should_stop()) return;
      ResultRow row = describe(*k, d.name(), z.M, z.N, z.K, seed);
      if (req_.plan.reps > 0) row.reps = req_.plan.reps;
      if (std::string why = device.hardware_support(*k); !why.empty()) {
        row.status = Status::not_supported;
        row.note = why;
        emit(row);
        continue;
      }
      ProblemReference& ref = gemm_refs.get();
      ProblemReference& total = total_refs.get();
      row.reference = ref.label;
      if (const long long over = ref.count_beyond(info(k->numerics.output).max_finite)) {
        row.status = Status::not_applicable;
        row.note = over_range_note(over, k->numerics.output);
      } else {
        const auto t0 = std::chrono::steady_clock::now();
        try {
          BoundModel model;
          const Measurement m = measure(*k, ref, total, model);
          add_times(m);
          if (!m.total) throw std::logic_error(std::string("the device judged ") + k->name + " without its total error");
          row.total = TotalError::of(*m.total);
          if (!quantization)
            quantization = TotalError::of(device.quantization_error(ref, total, k->numerics.output, model, threads_));
          row.quantization = quantization;
          record(*k, m, row);
          log_row(row, m.run, *k, ctx, who);
        } catch (const CudaContextLost& e) {
          time_.add(&TimeSplit::kernel_setup, seconds_since(t0));
          const bool go_on = record_lost(row, e);
          ctx.log(who + "   " + k->name + ": " + to_string(row.status) + ": " + row.note);
          if (!go_on) {
            emit(row);
            throw;
          }
        } catch (const std::exception& e) {
          time_.add(&TimeSplit::kernel_setup, seconds_since(t0));
          row.status = Status::error;
          row.note = e.what();
          ctx.log(who + "   " + k->name + ": error: " + e.what());
        }
      }
      ref.wait_verified();
      total.wait_verified();
      emit(row);
    }
  }

  // A measurement's parts of the time split: the launches, their set-up around them, the statistics.
  void add_times(const Measurement& m) {
    time_.add(&TimeSplit::kernels, m.run.launch_seconds);
    time_.add(&TimeSplit::kernel_setup, m.run.wall_seconds - m.run.launch_seconds);
    time_.add(&TimeSplit::statistics, m.stats_seconds);
  }

  const RunRequest& req_;
  const std::vector<Device*>& devices_;
  TimeSplit& time_;
  std::atomic<int>& errors_;
  HostPaths& host_paths_;
  std::map<std::string, const Kernel*> kernels_;
  std::map<std::string, Format> formats_;
  std::map<std::string, Distribution> dists_;
  int threads_ = 0;
  TimingOptions topt_;
  std::exception_ptr lost_;  // run_row's row lost the GPU: operator() emits it, then rethrows this
};

// --- isolation: the rows computed in worker processes ---------------------------------------------------
//
// The messages of `gemmlab run`'s workers (engine/worker_process.hpp carries them):
//   parent -> worker: {"problem": [row keys]}: one problem's rows still to compute; {"stop": true}: finish
//                     the row in progress and say done; the end of its input: exit.
//   worker -> parent: {"ready": {...}}; {"log": line}; {"row": [fields]}: a finished row; {"done": {"time":
//                     {part: seconds}, "host_paths": {reason: rows}, "timing_rows": [each row's parts]}}: the problem's
//                     rows are sent; {"lost": why}:
//                     nothing more runs on its GPU (it exits); {"failed": why}: gemmlab's own error (the run
//                     stops with it); and the watchdog's arm / beat / disarm (engine/watchdog.hpp).

// The parent's side: one worker per GPU, started before the first row and again after each one that a
// kernel's timeout or fault ended, each handed the rows of one problem at a time.
class IsolatedRunner {
 public:
  IsolatedRunner(const RunRequest& req, const Prepared& p, const std::vector<Device*>& devices, TimeSplit& time,
                 std::atomic<int>& errors, HostPaths& host_paths)
      : req_(req), devices_(devices), time_(time), errors_(errors), host_paths_(host_paths), workers_(devices.size()) {
    for (auto* k : p.rp.kernels) kernels_[k->name] = k;
    status_column_ = static_cast<std::size_t>(
        std::find(result_columns().begin(), result_columns().end(), "status") - result_columns().begin());
  }

  // Starts every GPU's worker, then waits until each is ready. Throw engine::WorkerStartFailed.
  void spawn() {
    for (std::size_t w = 0; w < workers_.size(); ++w) workers_[w] = spawn(static_cast<int>(w));
  }
  void wait_ready(const std::function<void(const std::string&)>& log) {
    for (auto& w : workers_) w->wait_ready(kStartSeconds, log);
    // The standby workers start once the first ones are ready (their imports do not slow the first start).
    if (req_.standby_worker) {
      standby_.resize(workers_.size());
      for (std::size_t w = 0; w < workers_.size(); ++w) standby_[w] = spawn_standby(static_cast<int>(w));
    }
  }

  void operator()(const engine::Problem& prob, engine::WorkerContext& ctx) {
    std::vector<engine::RowKey> left = prob.rows;
    int idle_deaths = 0;  // this problem's workers that died with no kernel running
    while (!left.empty()) {
      if (ctx.should_stop()) return;
      if (!workers_[ctx.worker]) {
        // A worker after one that was stopped: on the H200 (2026-11-29) a kernel spinning forever kept the
        // GPU after its worker was killed, and the next worker's CUDA start waited behind it. A bounded
        // wait turns that into a clear stop (the rows before kept, --resume to go on) instead of a hang.
        // The standby worker, started while the stopped one worked, takes over; a new standby starts beside it.
        const bool from_standby = ctx.worker < static_cast<int>(standby_.size()) && standby_[ctx.worker];
        workers_[ctx.worker] = from_standby ? std::move(standby_[ctx.worker]) : spawn(ctx.worker);
        try {
          workers_[ctx.worker]->wait_ready(kRestartSeconds, ctx.log);
        } catch (const engine::WorkerStartFailed& e) {
          {  // the stopped workers, given a moment to be reaped: the message says what became of the last
            std::lock_guard<std::mutex> lock(dying_mu_);
            for (auto& d : dying_) d->process().reap_within(5.0);
          }
          throw CudaContextLost(std::string("a new worker process for the rows after ") + last_stopped_ + " could not "
                                "start (" + e.what() + "): the GPU is most likely still held by that kernel, whose "
                                "process was stopped but whose launch the driver has not ended" +
                                stopped_process_words(last_stopped_pid_) +
                                ". The rows finished are kept; once the GPU is free (nvidia-smi shows no gemmlab "
                                "process), --resume goes on from the next row");
        }
        if (from_standby) standby_[ctx.worker] = spawn_standby(ctx.worker);
      }
      engine::WatchedWorker& w = *workers_[ctx.worker];
      nlohmann::json keys = nlohmann::json::array();
      for (const auto& k : left) keys.push_back(k.str());
      time_.problem_begins();  // the first ends the run's start-up (the plan, the workers' start)
      w.process().send({{"problem", keys}});
      bool stop_sent = false;
      long long arms_seen = w.arms();
      std::string running, lost;  // the kernel armed last whose row has not come; the worker's "lost" words
      // When a timeout or faulted row came: its worker says it is lost and ends right after (serve_run_worker's emit),
      // or is stopped kLostSeconds later (a worker that waits for the launch that never ends, on its way out).
      std::optional<std::chrono::steady_clock::time_point> lost_row_at;
      for (;;) {
        if (!stop_sent && ctx.should_stop()) {
          w.process().send({{"stop", true}});
          stop_sent = true;
        }
        const engine::WatchedWorker::Event e = w.next(0.25);
        if (w.arms() != arms_seen) arms_seen = w.arms(), running = w.kernel();
        if (e.kind == engine::WatchedWorker::Event::quiet) {
          if (!lost_row_at || seconds_since(*lost_row_at) < kLostSeconds) continue;
          w.process().kill();
          if (lost.empty()) lost = "it wrote a timeout or faulted row, then neither went on nor ended within " +
                                   std::to_string(static_cast<int>(kLostSeconds)) + " s, and was stopped";
        }
        if (e.kind == engine::WatchedWorker::Event::message) {
          const nlohmann::json& m = e.msg;
          if (m.contains("row")) {
            const auto fields = m["row"].get<std::vector<std::string>>();
            const engine::RowKey key = engine::key_of_row(result_columns(), fields);
            if (key.kernel == running) running.clear();
            if (const auto st = parse_status(fields.at(status_column_)); st && (*st == Status::timeout || *st == Status::faulted))
              lost_row_at = std::chrono::steady_clock::now();
            take(left, key.str());
            emit(fields, ctx);
          } else if (m.contains("log")) {
            ctx.log(m["log"].get<std::string>());
          } else if (m.contains("done")) {
            add_times(m["done"]);
            if (stop_sent) return;
            if (!left.empty())
              throw std::logic_error("the worker said done with " + std::to_string(left.size()) + " rows not sent");
            break;
          } else if (m.contains("lost")) {
            lost = m["lost"].get<std::string>();
          } else if (m.contains("failed")) {
            throw std::runtime_error(m["failed"].get<std::string>());
          }
          // A lost worker ends right after saying so (_exit): its end is not waited for (below).
          if (lost.empty()) continue;
        }
        // The worker must go: a launch overran (the parent's watchdog), it said it is lost, or it ended (died).
        std::optional<Unfinished> row;
        const std::string who = devices_.size() > 1 ? "[gemmlab gpu" + std::to_string(devices_[ctx.worker]->info().device) + "]"
                                                     : std::string("[gemmlab]");
        if (e.kind == engine::WatchedWorker::Event::timed_out) {
          w.process().kill_without_waiting();
          row = unfinished(left, w.kernel(), Status::timeout,
                           w.overran_words() + ": its host call never came back, or the GPU never finished it; the "
                           "worker process running it was stopped and a new one went on (--launch-timeout sets the "
                           "limit's floor)");
        } else {
          // A lost worker's row came before, with why: its end is not waited for (it may take seconds, the driver
          // tearing down a context whose launch never ended).
          const std::string how = lost.empty() ? w.process().how_it_ended() : std::string();
          if (!lost.empty()) {
            // Its row came before: nothing to add.
          } else if (!running.empty()) {
            row = unfinished(left, running, Status::faulted,
                             "the worker process running " + running + " at " + w.size() +
                                 (w.last_beat().empty() ? "" : " (" + w.last_beat() + ")") + " " + how +
                                 "; a new one went on");
          } else if (++idle_deaths >= 2) {
            throw std::runtime_error("the worker process " + how + " twice while no kernel under test was running "
                                     "(making the inputs or the exact reference of " + prob.key.str() +
                                     "): gemmlab's own failure, not a kernel's; its messages are above");
          }
          if (!row && lost.empty()) ctx.log(who + " the worker process " + how + " with no kernel running; starting another");
        }
        last_stopped_ = row ? row->kernel : (running.empty() ? std::string("a lost worker") : running);
        last_stopped_pid_ = w.process().pid();
        if (row) {
          ctx.log(who + "   " + row->kernel + ": " + to_string(row->status) + ": " + row->note);
          take(left, row->key_of_plan);
          emit(to_fields(row->row), ctx);
        }
        w.process().kill_without_waiting();  // one already reaped: nothing
        {
          std::lock_guard<std::mutex> lock(dying_mu_);
          dying_.push_back(std::move(workers_[ctx.worker]));  // reaped by finish(), while the next worker starts
        }
        ++restarts_;
        break;
      }
    }
  }

  // Ends every worker (each exits at the end of its input).
  void finish() {
    for (auto& w : workers_)
      if (w) w->process().finish(10.0);
    workers_.clear();
    // A standby worker did no work, and may still be starting (importing a framework, creating its CUDA
    // context): stopped, and reaped by a thread of its own, so that the run does not wait for a teardown
    // half way through the driver's start.
    for (auto& w : standby_) {
      if (!w) continue;
      w->process().kill_without_waiting();
      std::thread([dead = std::shared_ptr<engine::WatchedWorker>(std::move(w))] { dead->process().reap_within(600); })
          .detach();
    }
    standby_.clear();
    std::lock_guard<std::mutex> lock(dying_mu_);
    dying_.clear();  // each killed before: reaped here
  }
  int restarts() const { return restarts_.load(); }

 private:
  static constexpr double kStartSeconds = 600;  // a Python worker imports its framework and the callable
  static constexpr double kRestartSeconds = 180;  // the same again, its imports now in the page cache
  static constexpr double kLostSeconds = 20;  // a worker's end after its timeout or faulted row (see lost_row_at)
  std::mutex dying_mu_;
  std::vector<std::unique_ptr<engine::WatchedWorker>> dying_;  // workers stopped (SIGKILL sent), not yet reaped
  std::string last_stopped_;  // the kernel whose worker was stopped last (for the restart's message)
  pid_t last_stopped_pid_ = -1;  // its process

  struct Unfinished {
    std::string kernel, key_of_plan;
    Status status;
    std::string note;
    ResultRow row;
  };

  std::unique_ptr<engine::WatchedWorker> spawn(int w) {
    const int device = devices_[w]->info().device;
    return std::make_unique<engine::WatchedWorker>(req_.worker_command(device, static_cast<int>(devices_.size())),
                                                   req_.worker_grace_seconds);
  }

  // A standby worker at a lower CPU priority (nice 10), so that its start (a framework's imports) does not
  // slow the rows that the worker at work measures meanwhile; it keeps that priority once it takes over.
  std::unique_ptr<engine::WatchedWorker> spawn_standby(int w) {
    auto s = spawn(w);
    ::setpriority(PRIO_PROCESS, static_cast<id_t>(s->process().pid()), 10);  // best effort: a failure costs nothing
    return s;
  }

  // The row of `kernel` among `left` (one problem's: kernels differ), with status and note.
  std::optional<Unfinished> unfinished(const std::vector<engine::RowKey>& left, const std::string& kernel, Status st,
                                       const std::string& note) {
    for (const auto& key : left) {
      if (key.kernel != kernel) continue;
      const Kernel& k = *kernels_.at(key.kernel);
      ResultRow row = key.form.empty()
                          ? describe(k, key.distribution, key.size.M, key.size.N, key.size.K, key.seed)
                          : describe_form(k, key.distribution, key.size.M, key.size.N, key.size.K, key.seed,
                                          parse_form(key.form));
      row.reps = req_.plan.reps;
      row.status = st;
      row.note = note;
      return Unfinished{kernel, key.str(), st, note, row};
    }
    return std::nullopt;  // its row came before
  }

  static void take(std::vector<engine::RowKey>& left, const std::string& key) {
    left.erase(std::remove_if(left.begin(), left.end(), [&](const engine::RowKey& k) { return k.str() == key; }),
               left.end());
  }

  void emit(const std::vector<std::string>& fields, engine::WorkerContext& ctx) {
    if (const auto st = parse_status(fields.at(status_column_)); st && retried_by_retry_failed(*st)) ++errors_;
    const auto t0 = std::chrono::steady_clock::now();
    ctx.emit(fields);
    time_.add(&TimeSplit::io, seconds_since(t0));
  }

  void add_times(const nlohmann::json& done) {
    const nlohmann::json& t = done.at("time");
    for (auto [name, part] : {std::pair{"kernels", &TimeSplit::kernels}, {"kernel_setup", &TimeSplit::kernel_setup},
                              {"reference", &TimeSplit::reference}, {"statistics", &TimeSplit::statistics},
                              {"inputs", &TimeSplit::inputs}, {"io", &TimeSplit::io}})
      time_.add(part, t.value(name, 0.0));
    {  // the worker's rows' own parts (timing_rows) and its rows that reused statistics
      std::lock_guard<std::mutex> lock(time_.mu);
      time_.stats_reused += t.value("stats_reused", 0LL);
      if (done.contains("timing_rows"))
        for (const auto& r : done.at("timing_rows")) time_.rows.push_back(r);
    }
    std::lock_guard<std::mutex> lock(host_paths_.mu);
    for (const auto& [reason, rows] : done.at("host_paths").items()) {
      host_paths_.rows += rows.get<long long>();
      host_paths_.rows_by_reason[reason] += rows.get<long long>();
    }
  }

  const RunRequest& req_;
  const std::vector<Device*>& devices_;
  TimeSplit& time_;
  std::atomic<int>& errors_;
  HostPaths& host_paths_;
  std::map<std::string, const Kernel*> kernels_;
  std::size_t status_column_ = 0;
  std::vector<std::unique_ptr<engine::WatchedWorker>> workers_;
  std::vector<std::unique_ptr<engine::WatchedWorker>> standby_;  // RunRequest::standby_worker: one per GPU, idle
  std::atomic<int> restarts_{0};
};

}  // namespace

namespace {
// In a worker process: why its GPU was lost with the row being recorded (serve_run_worker's emit ends the worker
// once that row is sent).
std::optional<std::string> the_lost_gpu;
}  // namespace

bool record_lost(ResultRow& row, const CudaContextLost& e) {
  const auto* t = dynamic_cast<const LaunchTimeout*>(&e);
  row.status = t ? Status::timeout : Status::faulted;
  row.note = e.what();
  const bool go_on = t && !t->gpu_held;
  // In a worker process (an isolated run) the parent starts another: the run goes on.
  if (!go_on && launch_reporter()) {
    row.note += " [in a worker process of the run: it ended here, and a new one went on]";
    the_lost_gpu = e.what();
  }
  return go_on;
}

void record_measured(ResultRow& row, const KernelRun& run, const ErrorStats& stats, const Numerics& n,
                     const Distribution& d, int sm_clock_mhz) {
  row.timing = Timing{.time_ms_median = run.time_ms_median, .time_ms_min = run.time_ms_min, .time_ms_max = run.time_ms_max,
                      .time_ms_iqr = run.time_ms_iqr,
                      .time_ms_ci95_rel = std::isfinite(run.time_ms_ci95_rel) ? std::optional(run.time_ms_ci95_rel)
                                                                                : std::nullopt,
                      .stopped_by = run.times_ms.empty() ? std::nullopt : std::optional(run.stopped_by), .tflops = run.tflops, .sm_clock_mhz = sm_clock_mhz};
  // The repetitions the median is taken over (a fixed count, or as many as the noise rule asked).
  if (!run.times_ms.empty()) row.reps = static_cast<int>(run.times_ms.size());
  row.stats = stats;
  judge(row, *row.stats, d, n);
  if (n.accumulation == Accumulation::unknown && row.stats->unwritten == 0 && row.stats->nonfinite == 0) {
    // A kernel declared only by its formats (a callable judged with accumulation "unknown") claims
    // no bound, as `gemmlab evaluate` says of it: gamma_bound shows the weakest model's (u_eff = 2u).
    row.status = Status::no_bound;
    row.note = "accumulation unknown: no bound is claimed (gamma_bound is the weakest model's, u_eff = 2u" +
               (row.stats->bound_violations ? ", and " + std::to_string(row.stats->bound_violations) +
                                                  " entries are above it)" : std::string(")")) + "; " + row.note;
  }
  if (run.nondeterministic) {
    // Two launches on the same inputs gave different bits: the statistics describe only the last
    // output, so the row says so instead of passing judgement on it.
    row.status = Status::nondeterministic;
    row.note = std::to_string(run.nondeterministic) + " of " + std::to_string(stats.entries) +
               " entries differ bit for bit between the first and the last launch on the same inputs; the "
               "statistics are those of the last launch; " + row.note;
  }
  if (!run.perturbation.empty()) {
    // TimingOptions::perturbation: one more launch with the schedule disturbed.
    if (!run.perturbation_not_applied.empty()) {
      row.note = "determinism under " + run.perturbation + " not checked: " + run.perturbation_not_applied + "; " +
                 row.note;
    } else if (run.perturbed_differences) {
      row.status = Status::nondeterministic;
      row.note = std::to_string(run.perturbed_differences) + " of " + std::to_string(stats.entries) +
                 " entries differ bit for bit between the last launch and one under " + run.perturbation +
                 " (the schedule disturbed): its order of summation depends on scheduling; the statistics are "
                 "those of the last undisturbed launch; " + row.note;
    }
  }
}

void judge(ResultRow& row, const ErrorStats& s, const Distribution& d, const Numerics& n) {
  const bool ok = s.within_bound && s.unwritten == 0;
  // With K u_eff >= 1 there is no deterministic bound: "within" it would be vacuous.
  const bool bounded = std::isfinite(s.gamma_bound);
  row.status = !ok ? Status::failed_bound : bounded ? Status::passed : Status::no_bound;
  std::string note;
  if (ok && !bounded)
    note += n.tree.empty() ? "K u_eff >= 1: no deterministic bound applies; judge by the statistics; "
                           : "the revealed tree's path roundoff S >= 1: no deterministic bound applies; judge by the "
                             "statistics; ";
  if (s.unwritten) note += std::to_string(s.unwritten) + " entries left unwritten (NaN poison); ";
  if (s.bound_violations)
    note += std::to_string(s.bound_violations) +
            (n.fixed_point_bits > 0
                 ? " entries above the bound of " + std::to_string(n.fixed_point_bits) +
                       "-bit fixed-point operands, gamma |A||B| + h alpha_i beta_j + underflow term; "
                 : std::string(" entries above the bound gamma_K |A||B| + underflow term; "));
  if (s.subnormal_reference)
    note += std::to_string(s.subnormal_reference) +
            " exact entries below the output's normal range, left out of the relative errors; ";
  if (d.kind == DistKind::exactint)
    if (std::string why = exact_in(d, n.compute, narrowest(n.accumulator, n.output), row.K); !why.empty())
      note += "exactint not exact here: " + why;
  row.note = note;
}

int run_experiment(const RunRequest& req, const std::vector<Device*>& devices) {
  const auto start = std::chrono::steady_clock::now();
  const Prepared p = prepare(req, devices);
  // Isolated, the kernels run in worker processes (one per GPU): started now, so that their start overlaps
  // the metadata's queries, and waited for before the session takes the output (a worker that cannot start
  // costs nothing written).
  const bool isolated = !req.dry_run && static_cast<bool>(req.worker_command);
  std::atomic<int> errors{0};
  TimeSplit time;
  time.start = start;
  HostPaths host_paths;
  std::unique_ptr<IsolatedRunner> workers;
  if (isolated) {
    workers = std::make_unique<IsolatedRunner>(req, p, devices, time, errors, host_paths);
    workers->spawn();
  }
  nlohmann::json meta = plan_metadata(req, p, devices);

  engine::EngineRequest er;
  er.paths = p.paths;
  er.identity = identity(req, p, devices);
  er.rows = p.rows;
  er.session = {req.resume, req.force, req.command_line, req.retry_failed};
  er.argv = req.argv;
  // Without -o the output's name has the start time in it: the resume command must name it.
  if (req.out_csv.empty() && !er.argv.empty()) er.argv.insert(er.argv.end(), {"-o", p.out});
  er.workers = req.dry_run ? 1 : static_cast<int>(devices.size());
  if (!req.dry_run && !isolated) er.worker_start = [&](int w) { devices[w]->bind_thread(); };
  er.log = req.log;
  er.live_progress = req.live_progress;
  er.on_resumed_row = [&](const std::vector<std::string>& fields) {
    if (retried_by_retry_failed(from_fields(result_columns(), fields).status)) ++errors;
  };

  ProblemRunner runner(req, p, devices, time, errors, host_paths);
  if (workers) workers->wait_ready([&](const std::string& line) { std::fprintf(req.log, "%s\n", line.c_str()); });
  const LaunchLimit limit = launch_limit();
  meta["isolation"] = {{"kernels_run_in", isolated ? "worker processes" : "this process"},
                       {"launch_limit", {{"enabled", limit.enabled},
                                         {"floor_seconds", limit.floor_seconds},
                                         {"rate_flops", limit.rate_flops},
                                         {"first_call_seconds", limit.first_call_seconds}}}};
  auto metadata = [&] {
    if (workers) meta["isolation"]["worker_restarts"] = workers->restarts();
    if (!req.dry_run) meta["gpu"]["sm_clock_mhz_end"] = devices.front()->sm_clock_mhz();
    meta["rows"] = p.rows.size();
    meta["kernel_errors"] = errors.load();
    meta["reference_seconds"] = time.reference;
    meta["columns"] = result_columns();
    meta["engine"] = engine::engine_metadata(p.spec, er.identity.shard);
    meta["workers"] = er.workers;
    // Wall time of this process, and the parts of the work summed over its workers. Rows resumed
    // from a journal took their time in an earlier process and are not counted here.
    // non_kernel: everything but the launches (the total less `kernels`; with one worker the parts
    // below and `startup` add up to it, less the engine's own bookkeeping, which is `other`).
    const double total = seconds_since(start);
    const double parts = time.kernel_setup + time.reference + time.statistics + time.inputs + time.io;
    meta["timing_seconds"] = {{"total", total},
                              {"kernels", time.kernels},
                              {"non_kernel", total - time.kernels},
                              {"non_kernel_fraction_of_kernels", time.kernels > 0 ? (total - time.kernels) / time.kernels : 0.0},
                              {"kernel_setup", time.kernel_setup},
                              {"reference", time.reference},
                              {"statistics", time.statistics},
                              {"inputs", time.inputs},
                              {"io", time.io},
                              {"startup", std::max(0.0, time.startup)},
                              {"other", total - time.kernels - parts - std::max(0.0, time.startup)}};
    // Where each row's time went (TimeSplit::rows), in the order the rows finished.
    {
      std::lock_guard<std::mutex> lock(time.mu);
      meta["timing_rows"] = {
          {"columns", std::vector<std::string>(std::begin(TimeSplit::kRowColumns), std::end(TimeSplit::kRowColumns))},
          {"rows", time.rows}};
    }
    // Rows judged on the host instead of a GPU's GPU path (experiments/device/gpu_path.hpp), by reason
    // (each such row's note says it too); 0 when every row stayed on the GPU, and on devices without one.
    {
      std::lock_guard<std::mutex> lock(host_paths.mu);
      meta["gpu_path"] = {{"host_path_rows", host_paths.rows},
                          {"host_path_reasons", nlohmann::json(host_paths.rows_by_reason)},
                          {"stats_reused_rows", time.stats_reused}};
    }
    return meta;
  };
  const engine::EngineResult r = engine::run_rows(
      er,
      [&](const engine::Problem& prob, engine::WorkerContext& ctx) {
        if (workers) (*workers)(prob, ctx);
        else runner(prob, ctx);
      },
      metadata);
  if (workers) workers->finish();
  if (!r.complete) return r.exit_status;
  std::printf("%s\n", p.out.c_str());
  return errors.load() ? 3 : 0;
}

int run_experiment(const RunRequest& req, Device& device) { return run_experiment(req, std::vector<Device*>{&device}); }

int serve_run_worker(const RunRequest& req_in, Device& device, int workers) {
  engine::WorkerChannel ch;
  engine::ChannelReporter reporter(ch);
  set_launch_reporter(&reporter);
  RunRequest req = req_in;
  // The CPU threads are shared among the GPUs' workers, as among the threads of one process.
  if (workers > 1) req.threads = std::max(1, resolve_threads(req.threads) / workers);
  req.worker_command = nullptr;
  const std::vector<Device*> devices{&device};
  std::optional<Prepared> p;
  try {
    p.emplace(prepare(req, devices));
  } catch (const std::exception& e) {
    ch.send({{"failed", e.what()}});
    return 2;
  }
  std::map<std::string, engine::RowKey> by_key;
  for (const auto& k : p->rows) by_key.emplace(k.str(), k);
  TimeSplit time;
  HostPaths host_paths;
  std::atomic<int> errors{0};
  ProblemRunner runner(req, *p, devices, time, errors, host_paths);
  device.bind_thread();
  ch.send({{"ready", {{"rows", p->rows.size()}}}});
  while (const auto m = ch.receive()) {
    if (!m->contains("problem")) continue;  // a stop that came after the problem's last row
    engine::Problem prob;
    for (const auto& key : (*m)["problem"]) {
      const auto it = by_key.find(key.get<std::string>());
      if (it == by_key.end()) {
        ch.send({{"failed", "the worker's plan has no row " + key.get<std::string>() + " (its command differs from the run's)"}});
        return 2;
      }
      prob.rows.push_back(it->second);
    }
    if (prob.rows.empty()) continue;
    prob.key = engine::problem_of(prob.rows.front());
    engine::WorkerContext ctx;
    ctx.emit = [&](const std::vector<std::string>& fields) {
      ch.send({{"row", fields}});
      // The row of a launch that lost this process's GPU (record_lost): nothing more runs here, and the way back
      // up (a cudaFree in a destructor) could wait forever for a launch that never ends. End here.
      if (the_lost_gpu) reporter.lost(*the_lost_gpu);
    };
    ctx.should_stop = [&] { return ch.stop_requested(); };
    ctx.log = [&](const std::string& line) { ch.send({{"log", line}}); };
    try {
      runner(prob, ctx);
    } catch (const CudaContextLost& e) {
      // Nothing more runs on this GPU in this process (the row is sent): the parent starts another.
      ch.send({{"lost", e.what()}});
      std::fflush(nullptr);
      ::_exit(3);  // no teardown: the context's state is the kernel's
    } catch (const std::exception& e) {
      ch.send({{"failed", e.what()}});
      std::fflush(nullptr);
      ::_exit(1);
    }
    nlohmann::json parts, paths = nlohmann::json::object(), rows_json = nlohmann::json::array();
    {
      std::lock_guard<std::mutex> lock(time.mu);
      parts = {{"kernels", time.kernels}, {"kernel_setup", time.kernel_setup}, {"reference", time.reference},
               {"statistics", time.statistics}, {"inputs", time.inputs}, {"io", time.io},
               {"stats_reused", time.stats_reused}};
      time.kernels = time.kernel_setup = time.reference = time.statistics = time.inputs = time.io = 0;
      time.stats_reused = 0;
      rows_json = nlohmann::json(time.rows);
      time.rows.clear();
    }
    {
      std::lock_guard<std::mutex> lock(host_paths.mu);
      for (const auto& [reason, rows] : host_paths.rows_by_reason) paths[reason] = rows;
      host_paths.rows_by_reason.clear();
      host_paths.rows = 0;
    }
    ch.send({{"done", {{"time", parts}, {"host_paths", paths}, {"timing_rows", rows_json}}}});
  }
  set_launch_reporter(nullptr);
  return 0;
}

}  // namespace gemmlab
