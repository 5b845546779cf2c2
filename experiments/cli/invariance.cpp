// `gemmlab invariance`, and `gemmlab run` of a suite with an [invariance] table: determinism and
// batch invariance of kernels, bit for bit (experiments/engine/invariance.hpp), on GPU 0, with
// library kernels also run under other settings (experiments/device/library_variants.hpp).
#include <cstdio>
#include <cstdlib>
#include <memory>

#include "experiments/cli/commands.hpp"
#include "experiments/device/library_variants.hpp"
#include "experiments/device/order.hpp"
#include "experiments/device/runner.hpp"
#include "experiments/engine/invariance.hpp"
#include "experiments/engine/plugin.hpp"
#include "experiments/engine/run.hpp"
#include "experiments/report/files.hpp"
#include "experiments/report/metadata.hpp"
#include "kernels/cublas/cublaslt.hpp"
#include "kernels/registry.hpp"

namespace gemmlab::cli {
namespace {

// Everything a run of the invariance core needs from the command line or a suite.
struct InvarianceJob {
  std::vector<std::string> kernels, exclude, distributions, settings;
  std::vector<Size> sizes;
  std::vector<std::uint64_t> seeds;
  InvariancePlan sweeps;
  int reps = 3, warmup = 1, threads = 0;
  std::string out;
  bool resume = false, force = false;
  std::string command_line;
  std::vector<std::string> argv;
};

// Runs a job: kernels x library settings x sizes x distributions x seeds, journaled into job.out.
int run_job(const InvarianceJob& job) {
  require_csv(job.out);
  RunPlan plan;
  plan.kernels = job.kernels;
  plan.exclude = job.exclude;
  plan.distributions = job.distributions;
  const ResolvedPlan resolved = resolve(plan);
  std::vector<LibrarySetting> settings;
  for (const std::string& s : job.settings) settings.push_back(parse_library_setting(s));
  if (job.reps < 1 || job.warmup < 0) throw UsageError("reps must be at least 1 and warmup at least 0");
  std::vector<InvarianceSpec> specs;
  for (const Size& z : job.sizes)
    for (const Distribution& d : resolved.distributions)
      for (std::uint64_t seed : job.seeds) {
        InvarianceSpec spec;
        spec.M = z.M;
        spec.N = z.N;
        spec.K = z.K;
        spec.ms = parse_sweep(job.sweeps.m, z.M, "m");
        spec.ns = parse_sweep(job.sweeps.n, z.N, "n");
        spec.k_tails = parse_sweep(job.sweeps.k_tails, 0, "k_tails");
        spec.repeats = job.sweeps.repeats;
        spec.distribution = d;
        spec.seed = seed;
        spec.reveal_k_max = job.sweeps.reveal_k_max;
        spec.cost = job.sweeps.cost;
        spec.timing.reps = job.reps;
        spec.timing.warmup = job.warmup;
        spec.threads = job.threads;
        validate_invariance_spec(spec);  // a mistake in the options is named before the GPU or the output
        specs.push_back(spec);
      }
  check_writable(job.out);
  Device& dev = gpu_device(0);
  if (!dev.info().present)
    throw UsageError("gemmlab invariance needs a CUDA GPU, and none is usable here (" + dev.info().why_absent + ")");

  std::vector<std::unique_ptr<CallableKernel>> variants;  // alive until the rows are written
  std::vector<InvarianceTask> tasks;
  for (const Kernel* k : resolved.kernels) {
    const bool library = takes_library_settings(*k);
    for (const LibrarySetting& s : settings) {
      if (!library && s.label() != "default") continue;  // settings are the libraries' alone
      InvarianceTask t;
      t.kernel = k;
      t.config = s.label();
      if (s.label() != "default") {
        variants.push_back(library_variant(*k, s));
        t.kernel = &variants.back()->kernel;
      }
      t.probes.reveal = [](const Kernel& kk, int M, int N, int K, int i, int j) { return reveal_tree(kk, M, N, K, i, j); };
      if (is_cublaslt(*k))
        t.probes.algorithm = [base = k, ws = lt_workspace_bytes(*k, s)](const Kernel&, int M, int N, int K) {
          try {
            return cublaslt_algorithm(*base, M, N, K, ws);
          } catch (const std::exception& e) {
            return std::string("none: ") + e.what();
          }
        };
      tasks.push_back(std::move(t));
    }
  }
  InvarianceRunRequest req;
  for (const InvarianceSpec& spec : specs)
    for (const InvarianceTask& t : tasks) req.units.push_back({t, spec});
  req.out_csv = job.out;
  req.session = {job.resume, job.force, job.command_line};
  req.argv = job.argv;
  req.meta = base_metadata("invariance", job.command_line, job.out);
  add_device_metadata(req.meta, dev.info(), dev.software(), dev.sm_clock_mhz());
  req.meta["settings"] = job.settings;
  if (const char* env = std::getenv("CUBLAS_WORKSPACE_CONFIG")) req.meta["CUBLAS_WORKSPACE_CONFIG"] = env;
  std::vector<std::string> names;
  for (const Kernel* k : resolved.kernels) names.push_back(k->name);
  if (nlohmann::json plugins = plugins_metadata(names); !plugins.empty()) req.meta["plugins"] = plugins;
  std::vector<std::vector<std::string>> rows;
  const int rc = run_invariance(req, dev, &rows);
  if (!rows.empty()) std::printf("wrote %s (%zu rows)\n", job.out.c_str(), rows.size());
  return rc;
}

std::string joined(const std::vector<std::string>& v) {
  std::string s;
  for (const auto& x : v) s += (s.empty() ? "" : " ") + x;
  return s;
}

}  // namespace

int run_invariance_suite(const RunRequest& req) {
  if (req.dry_run || !req.shard.empty())
    throw UsageError("a suite with [invariance] runs as one journaled job on GPU 0: leave out --dry-run and --shard");
  InvarianceJob job;
  job.kernels = req.plan.kernels;
  job.exclude = req.plan.exclude;
  job.distributions = req.plan.distributions;
  job.sizes = req.plan.sizes;
  job.seeds = req.plan.seeds;
  job.sweeps = *req.plan.invariance;
  job.settings = job.sweeps.settings;
  if (req.plan.reps > 0) job.reps = req.plan.reps;  // invariance times a fixed count (its own 3 by default)
  job.warmup = req.plan.warmup;
  job.threads = req.threads;
  job.out = req.out_csv.empty() ? "results/" + req.plan.name + "-" + utc_now("%Y%m%dT%H%M%SZ") + ".csv" : req.out_csv;
  job.resume = req.resume;
  job.force = req.force;
  job.command_line = req.command_line;
  job.argv = req.argv;
  return run_job(job);
}

Command add_invariance(CLI::App& app, const std::vector<std::string>& argv) {
  auto* inv = app.add_subcommand(
      "invariance", "determinism and batch invariance, bit for bit: rows [0, m) at M = m vs the full M, columns, "
                    "K tails, repeated launches, library workspace settings; each difference explained");
  struct Options {
    InvarianceJob job;
    std::vector<std::string> kernels, ms = {"default"}, ns, k_tails, settings = {"default"}, plugins;
    std::string size = "1024x1024x1024", dist = "uniform_-1_1";
    std::uint64_t seed = 1;
    bool no_cost = false;
  };
  auto o = std::make_shared<Options>();
  o->job.argv = argv;
  o->job.command_line = joined(argv);
  inv->add_option("-k,--kernels", o->kernels, "kernels (comma-separated names, 'family:<name>', plugin kernels)")
      ->required();
  inv->add_option("-s,--size", o->size, "the full size, N or MxNxK");
  inv->add_option("--m", o->ms, "rows m to compare with the full M (comma-separated, 'default': 1..8, 2^p - 1, 2^p, "
                                "2^p + 1 below M)");
  inv->add_option("--n", o->ns, "columns n to compare with the full N (as --m; default none)");
  inv->add_option("--k-tails", o->k_tails, "zero products appended to K (comma-separated; default none)");
  inv->add_option("--repeats", o->job.sweeps.repeats, "launches on the same inputs compared run to run (1: none)");
  inv->add_option("--settings", o->settings,
                  "library kernels: settings to run besides each other, ';'-separated: 'default' (the harness's "
                  "handles: 64 MiB cuBLAS, 32 MiB cuBLASLt workspace) or e.g. 'ws=0', 'ws=large', "
                  "'cfg=:4096:8', 'ws=0,stream=own' (fresh handles for each)")
      ->delimiter(';');
  inv->add_option("-d,--dist", o->dist, "input distribution");
  inv->add_option("--seed", o->seed, "seed of the inputs");
  inv->add_option("--reveal-k-max", o->job.sweeps.reveal_k_max,
                  "reveal the summation order of a differing entry only where K is at most this (about K x depth "
                  "launches each)");
  inv->add_option("--reps", o->job.reps, "timed repetitions of every launch");
  inv->add_option("--warmup", o->job.warmup, "untimed launches first");
  inv->add_option("--threads", o->job.threads, "CPU threads for the cost rows' reference (0: all)");
  inv->add_flag("--no-cost", o->no_cost, "skip the cost rows (bias, spread and time at the full size)");
  inv->add_option("-o,--out", o->job.out, "CSV of one row per kernel x setting x check x size (metadata beside it)")
      ->required();
  inv->add_flag("--resume", o->job.resume, "continue the interrupted run writing --out from its journal");
  inv->add_flag("--force", o->job.force, "replace an existing --out, or discard the journal of an interrupted run");
  add_plugin_option(inv, o->plugins);
  add_launch_timeout_option(inv);
  return {inv, [o] {
            load_plugins(o->plugins);
            InvarianceJob job = o->job;
            job.kernels = split_commas(o->kernels);
            job.distributions = {o->dist};
            job.sizes = {parse_size(o->size)};
            job.seeds = {o->seed};
            job.sweeps.m = o->ms;
            job.sweeps.n = o->ns;
            job.sweeps.k_tails = o->k_tails;
            job.sweeps.cost = !o->no_cost;
            job.settings = o->settings;
            return run_job(job);
          }};
}

}  // namespace gemmlab::cli
