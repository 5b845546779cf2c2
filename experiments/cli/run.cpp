// `gemmlab run` and `gemmlab list`.
#include <cstdio>
#include <filesystem>
#include <memory>
#include <optional>

#include "experiments/cli/commands.hpp"
#include "experiments/device/explain_gpu.hpp"
#include "experiments/device/runner.hpp"
#include "experiments/report/files.hpp"
#include "experiments/engine/plugin.hpp"
#include "experiments/engine/run.hpp"
#include "kernels/registry.hpp"

namespace gemmlab::cli {

Command add_run(CLI::App& app, const std::vector<std::string>& argv) {
  auto* run = app.add_subcommand("run", "run kernels on controlled inputs and write a tidy CSV plus metadata");
  struct Options {
    RunRequest req;
    std::vector<std::string> kernels, exclude, dists, sizes, seeds, plugins, forms;
    std::string suite, reference, gpus;
    std::string isolation = "process";
    std::string worker;  // hidden: "GPU/WORKERS" in a worker process of an isolated run
    int reps = -1, warmup = -1, spot = -1;
    std::optional<int> min_samples;
    std::optional<double> max_noise, min_time_ms, max_time_ms;
  };
  auto o = std::make_shared<Options>();
  for (const auto& a : argv) o->req.command_line += (o->req.command_line.empty() ? "" : " ") + a;
  o->req.argv = argv;
  run->add_option("--suite", o->suite, "suite file or name (experiments/suites/<name>.toml); flags below override it");
  run->add_option("-k,--kernels", o->kernels,
                  "kernel names, 'all', or 'family:<name>' (comma-separated); 'all' leaves out the host (CPU) kernels: "
                  "`gemmlab list` says which");
  run->add_option("--exclude", o->exclude, "kernel names or 'family:<name>' to leave out of -k (comma-separated; replaces a suite's exclude)");
  run->add_option("-d,--dists", o->dists, "distributions, e.g. uniform_0_1,normal_0_1,logunif_-8_8, or 'all'");
  run->add_option("-s,--size", o->sizes, "N (for N^3) or MxNxK; repeatable / comma-separated");
  run->add_option("--seeds", o->seeds, "seeds (comma-separated non-negative integers)");
  run->add_option("--form", o->forms,
                  "the problem beyond C = A B, repeatable: 'default' (each kernel's own form), 'plain', or key=value "
                  "parts joined by ',', e.g. alpha=0.5,beta=2,c0=normal_0_1 or batch=16 or bias=column:uniform_-1_1 "
                  "or groups=128+512+* or scale=0.25");
  run->add_option("--reps", o->reps,
                  "a fixed count of timed repetitions per row (median reported); without it, each row is timed "
                  "until its median is known (--max-noise)");
  // The defaults in the help are the code's (StoppingRule, RunPlan), so the text cannot go stale.
  auto g = [](double x) {
    char b[32];
    std::snprintf(b, sizeof b, "%g", x);
    return std::string(b);
  };
  const StoppingRule d;
  run->add_option("--warmup", o->warmup, "untimed warm-up launches per row (default " + std::to_string(RunPlan{}.warmup) + ")");
  run->add_option("--max-noise", o->max_noise,
                  "stop a row's repetitions once the median's 95% confidence interval is within +- this fraction "
                  "of it (default " + g(d.max_noise) + ")");
  run->add_option("--min-samples", o->min_samples,
                  "timed repetitions per row before the noise may stop it (default " + std::to_string(d.min_samples) + ")");
  run->add_option("--min-time-ms", o->min_time_ms,
                  "milliseconds of timed repetitions per row before the noise may stop it (default " + g(d.min_time_ms) + ")");
  run->add_option("--max-time-ms", o->max_time_ms,
                  "stop a row's repetitions after this many milliseconds whatever the noise (default " + g(d.max_time_ms) + ")");
  run->add_option("--reference", o->reference, "auto (GPU exact engine where it can be exact, else CPU; + MPFR spot checks), gpu, cpu, exact (no spot checks), or mpfr (every entry)");
  run->add_option("--spot-checks", o->spot, "entries checked against MPFR per reference in auto mode");
  run->add_option("-o,--out", o->req.out_csv, "output CSV (default results/<suite>-<UTC time>.csv); metadata beside it");
  run->add_option("--save-matrices", o->req.save_matrices, "folder for .npy files of inputs, outputs and references");
  auto* threads = run->add_option("--threads", o->req.threads,
                                   "CPU threads for the reference and statistics, at least 1 (default: all; shared by the GPUs' workers)");
  run->add_flag("--resume", o->req.resume, "continue the interrupted run writing --out from its journal (<out>.csv.journal)");
  run->add_flag("--force", o->req.force, "replace an existing --out, or discard the journal of an interrupted run");
  run->add_option("--shard", o->req.shard, "compute only shard i of n (1-based, e.g. 2/8); `gemmlab merge` joins the shards");
  run->add_option("--gpus", o->gpus, "'all' or GPU indices (e.g. 0,1): one worker per GPU, one CSV (default: GPU 0)");
  run->add_flag("--dry-run", o->req.dry_run, "write the plan's rows with status `planned` without running anything (no GPU needed)");
  run->add_flag("--retry-failed", o->req.retry_failed,
                "with --resume: compute again the journal's rows whose kernel timed out, faulted or raised (status "
                "timeout, faulted, error), instead of keeping them as results");
  run->add_option("--isolation", o->isolation,
                  "process (default): the kernels run in a worker process per GPU, so that one that hangs or crashes "
                  "costs its row (timeout, faulted) and a restart, never the run; none: in this process, where such a "
                  "row stops the run (--resume goes on)")
      ->check(CLI::IsMember({"process", "none"}));
  add_plugin_option(run, o->plugins);
  add_launch_timeout_option(run);
  run->add_option("--worker", o->worker)->group("");  // the worker process of an isolated run (run.hpp)
  return {run, [o, threads] {
            RunRequest& req = o->req;
            // Options are checked before anything about the output (a missing results/ folder).
            require_threads(threads, req.threads);
            if (!o->suite.empty()) req.plan = load_suite(find_suite(o->suite));
            // The suite's plugins and these: run_experiment loads them all before it resolves -k.
            req.plan.plugins.insert(req.plan.plugins.end(), o->plugins.begin(), o->plugins.end());
            if (!o->kernels.empty()) req.plan.kernels = split_commas(o->kernels);
            if (!o->exclude.empty()) req.plan.exclude = split_commas(o->exclude);
            if (!o->dists.empty()) req.plan.distributions = split_commas(o->dists);
            if (!o->sizes.empty()) {
              req.plan.sizes.clear();
              for (const auto& s : split_commas(o->sizes)) req.plan.sizes.push_back(parse_size(s));
            }
            if (!o->seeds.empty()) req.plan.seeds = parse_seeds(o->seeds);
            if (!o->forms.empty()) req.plan.forms = o->forms;
            if (o->reps >= 0) {
              if (o->reps < 1) throw UsageError("--reps must be at least 1 (leave it out to stop on noise)");
              req.plan.reps = o->reps;
            }
            if (o->warmup >= 0) req.plan.warmup = o->warmup;
            if (o->max_noise) req.plan.max_noise = *o->max_noise;
            if (o->min_samples) req.plan.min_samples = *o->min_samples;
            if (o->min_time_ms) req.plan.min_time_ms = *o->min_time_ms;
            if (o->max_time_ms) req.plan.max_time_ms = *o->max_time_ms;
            if (o->spot >= 0) req.plan.spot_checks = o->spot;
            if (!o->reference.empty()) req.plan.reference = o->reference;
            if (req.retry_failed && !req.resume)
              throw UsageError("--retry-failed computes again rows of an interrupted run's journal: add --resume");
            if (!o->worker.empty()) {  // a worker process of an isolated run: GPU/WORKERS
              const auto slash = o->worker.find('/');
              return serve_run_worker(req, gpu_device(std::stoi(o->worker.substr(0, slash))),
                                      std::stoi(o->worker.substr(slash + 1)));
            }
            if (req.plan.invariance) {
              if (!o->gpus.empty()) throw UsageError("a suite with [invariance] runs on GPU 0: leave out --gpus");
              return run_invariance_suite(req);
            }
            if (o->isolation == "process") {
              // The worker is this binary with the same arguments, which make the same plan, and --worker.
              std::error_code ec;
              std::string self = std::filesystem::read_symlink("/proc/self/exe", ec).string();
              if (ec || self.empty()) self = req.argv.at(0);
              std::vector<std::string> args(req.argv.begin() + 1, req.argv.end());
              req.worker_command = [self, args](int gpu, int workers) {
                std::vector<std::string> cmd{self};
                cmd.insert(cmd.end(), args.begin(), args.end());
                cmd.insert(cmd.end(), {"--worker", std::to_string(gpu) + "/" + std::to_string(workers)});
                return cmd;
              };
            }
            if (req.dry_run) {
              if (!o->gpus.empty()) throw UsageError("--dry-run runs nothing on a GPU: leave out --gpus");
              return run_experiment(req, std::vector<Device*>{});
            }
            if (o->gpus.empty()) return run_experiment(req, gpu_device(0));
            std::vector<Device*> devices;
            for (int i : parse_gpus(o->gpus, device_count())) devices.push_back(&gpu_device(i));
            return run_experiment(req, devices);
          }};
}

Command add_list(CLI::App& app) {
  auto* list = app.add_subcommand("list", "print the registered kernels, the distributions and the suites");
  auto plugins = std::make_shared<std::vector<std::string>>();
  auto numerics_json = std::make_shared<std::string>();
  add_plugin_option(list, *plugins);
  list->add_option("--numerics-json", *numerics_json,
                   "write {kernel: numerics} of every kernel whose bits gemmlab predicts to this JSON file "
                   "(python/gemmlab/builtin_numerics.json is this file, for gemmlab.explain's \"behaves like\")");
  return {list, [plugins, numerics_json] {
            load_plugins(*plugins);
            if (!numerics_json->empty()) {
              nlohmann::json j = nlohmann::json::object();
              for (const explain::KnownKernel& k : known_kernels(all_kernels())) j[k.name] = numerics_to_json(k.numerics);
              AtomicFile f(*numerics_json);
              f.stream() << j.dump(1) << "\n";
              f.commit();
              std::printf("wrote %s (%zu kernels)\n", numerics_json->c_str(), j.size());
              return 0;
            }
            std::printf("kernels (%zu):\n", all_kernels().size());
            std::printf("  %-48s %-7s %-5s %-5s %-5s %-5s %-9s %-9s %s\n", "name", "family", "in", "comp", "acc", "out",
                        "accum", "multiple", "needs");
            for (auto* k : all_kernels()) {
              const Numerics& n = k->numerics;
              std::string mult =
                  std::to_string(k->m_multiple) + "," + std::to_string(k->n_multiple) + "," + std::to_string(k->k_multiple);
              std::string needs = k->requires_sm90a ? "sm_90a"
                                                    : "cc>=" + std::to_string(k->min_cc / 10) + "." + std::to_string(k->min_cc % 10);
              std::printf("  %-48s %-7s %-5s %-5s %-5s %-5s %-9s %-9s %s\n", k->name, k->family, info(n.input).name,
                          info(n.compute).name, info(n.accumulator).name, info(n.output).name,
                          to_string(n.accumulation), mult.c_str(), needs.c_str());
            }
            bool any_left_out = false;
            for (auto* k : all_kernels()) any_left_out = any_left_out || k->left_out_of_all;
            if (any_left_out) {
              std::printf("\nleft out of `all` (run them by name, family:<family> or a suite that names them):\n");
              for (auto* k : all_kernels())
                if (k->left_out_of_all) std::printf("  %-48s %s\n", k->name, k->left_out_of_all);
            }
            for (const LoadedPlugin& p : loaded_plugins()) {
              std::printf("\nplugin %s (%s, ABI %d, sha256 %s):\n", p.name.c_str(), p.path.c_str(), p.abi_version,
                          p.sha256.c_str());
              for (const std::string& name : p.kernels) {
                const Kernel& k = *find_kernel(name);
                std::printf("  %-48s %s; %s\n", k.name, k.numerics.describe().c_str(), k.description);
              }
            }
            bool any_forms = false;
            for (auto* k : all_kernels()) {
              if (!k->forms.any()) continue;
              if (!any_forms) std::printf("\nkernels that take forms beyond C = A B (--form; their own form runs by default):\n");
              any_forms = true;
              const FormSupport& f = k->forms;
              std::string takes;
              const std::pair<bool, const char*> parts[] = {{f.alpha, "alpha"},  {f.c0, "beta C0"},
                                                            {f.bias_row, "row bias"}, {f.bias_column, "column bias"},
                                                            {f.batch, "batch"},  {f.groups, "groups"},
                                                            {f.scale, "scale"}};
              for (const auto& [yes, what] : parts)
                if (yes) takes += (takes.empty() ? "" : ", ") + std::string(what);
              std::printf("  %-48s takes %s; own form %s; C0 %s, bias %s, placement %s / %s\n", k->name, takes.c_str(),
                          k->form ? k->form : "plain", info(k->epilogue.c0).name, info(k->epilogue.bias).name,
                          to_string(k->epilogue.c0_placement), to_string(k->epilogue.bias_placement));
            }
            std::printf("\ndistributions (\"all\" runs these; parameters are part of the name):\n");
            for (const auto& d : default_distributions()) std::printf("  %s\n", d.name().c_str());
            std::printf("  forms: uniform_0_1, uniform_-1_1, normal_0_1, logunif_L_H, cancel_E, exactint_R, expspread_PHI\n");
            std::printf("\nsuites:\n");
            for (const auto& s : list_suites()) std::printf("  %s\n", s.c_str());
            return 0;
          }};
}

}  // namespace gemmlab::cli
