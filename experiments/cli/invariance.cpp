// `gemmlab invariance`: determinism and batch invariance of kernels, bit for bit
// (experiments/engine/invariance.hpp), on GPU 0, with library kernels also run under other
// workspace settings (experiments/device/library_variants.hpp).
#include <cstdio>
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

// "default" -> the default sweep; else comma-separated integers.
std::vector<int> parse_sweep(const std::vector<std::string>& in, int full, const char* flag) {
  std::vector<int> out;
  for (const std::string& s : split_commas(in)) {
    if (s == "default") {
      for (int v : default_sweep(full)) out.push_back(v);
      continue;
    }
    std::size_t used = 0;
    int v = 0;
    try {
      v = std::stoi(s, &used);
    } catch (const std::exception&) {
      used = 0;
    }
    if (used != s.size()) throw UsageError(std::string(flag) + ": '" + s + "' is not a whole number or 'default'");
    out.push_back(v);
  }
  return out;
}

}  // namespace

Command add_invariance(CLI::App& app, const std::string& command_line) {
  auto* inv = app.add_subcommand(
      "invariance", "determinism and batch invariance, bit for bit: rows [0, m) at M = m vs the full M, columns, "
                    "K tails, repeated launches, library workspace settings; each difference explained");
  struct Options {
    std::vector<std::string> kernels, ms = {"default"}, ns, k_tails, settings = {"default"}, plugins;
    std::string size = "1024x1024x1024", dist = "uniform_-1_1", out;
    std::uint64_t seed = 1;
    int repeats = 3, reveal_k_max = 256, reps = 3, warmup = 1, threads = 0;
    bool no_cost = false;
  };
  auto o = std::make_shared<Options>();
  inv->add_option("-k,--kernels", o->kernels, "kernels (comma-separated names, 'family:<name>', plugin kernels)")
      ->required();
  inv->add_option("-s,--size", o->size, "the full size, N or MxNxK");
  inv->add_option("--m", o->ms, "rows m to compare with the full M (comma-separated, 'default': 1..8, 2^p - 1, 2^p, "
                                "2^p + 1 below M)");
  inv->add_option("--n", o->ns, "columns n to compare with the full N (as --m; default none)");
  inv->add_option("--k-tails", o->k_tails, "zero products appended to K (comma-separated; default none)");
  inv->add_option("--repeats", o->repeats, "launches on the same inputs compared run to run (1: none)");
  inv->add_option("--settings", o->settings,
                  "library kernels: settings to run besides each other, ';'-separated: 'default' (the harness's "
                  "handles: 64 MiB cuBLAS, 32 MiB cuBLASLt workspace) or e.g. 'ws=0', 'ws=large', "
                  "'cfg=:4096:8', 'ws=0,stream=own' (fresh handles for each)")
      ->delimiter(';');
  inv->add_option("-d,--dist", o->dist, "input distribution");
  inv->add_option("--seed", o->seed, "seed of the inputs");
  inv->add_option("--reveal-k-max", o->reveal_k_max,
                  "reveal the summation order of a differing entry only where K is at most this (about K x depth "
                  "launches each)");
  inv->add_option("--reps", o->reps, "timed repetitions of every launch");
  inv->add_option("--warmup", o->warmup, "untimed launches first");
  inv->add_option("--threads", o->threads, "CPU threads for the cost rows' reference (0: all)");
  inv->add_flag("--no-cost", o->no_cost, "skip the cost rows (bias, spread and time at the full size)");
  inv->add_option("-o,--out", o->out, "CSV of one row per kernel x setting x check x size (metadata beside it)")
      ->required();
  add_plugin_option(inv, o->plugins);
  return {inv, [o, command_line] {
            load_plugins(o->plugins);
            require_csv(o->out);
            const Size z = parse_size(o->size);
            RunPlan plan;
            plan.kernels = split_commas(o->kernels);
            plan.distributions = {o->dist};
            const ResolvedPlan resolved = resolve(plan);
            InvarianceSpec spec;
            spec.M = z.M;
            spec.N = z.N;
            spec.K = z.K;
            spec.ms = parse_sweep(o->ms, z.M, "--m");
            spec.ns = parse_sweep(o->ns, z.N, "--n");
            spec.k_tails = parse_sweep(o->k_tails, 0, "--k-tails");
            spec.repeats = o->repeats;
            spec.distribution = resolved.distributions.at(0);
            spec.seed = o->seed;
            spec.reveal_k_max = o->reveal_k_max;
            spec.cost = !o->no_cost;
            spec.timing.reps = o->reps;
            spec.timing.warmup = o->warmup;
            spec.threads = o->threads;
            if (o->reps < 1 || o->warmup < 0) throw UsageError("--reps must be at least 1 and --warmup at least 0");
            std::vector<LibrarySetting> settings;
            for (const std::string& s : o->settings) settings.push_back(parse_library_setting(s));
            validate_invariance_spec(spec);
            check_writable(o->out);  // after the options, so a mistake in them is named first
            Device& dev = gpu_device(0);
            if (!dev.info().present)
              throw UsageError("gemmlab invariance needs a CUDA GPU, and none is usable here (" + dev.info().why_absent +
                               ")");
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
                const Kernel* base = k;
                const std::size_t lt_ws = lt_workspace_bytes(*k, s);
                t.probes.reveal = [](const Kernel& kk, int M, int N, int K, int i, int j) {
                  return reveal_tree(kk, M, N, K, i, j);
                };
                if (is_cublaslt(*k))
                  t.probes.algorithm = [base, lt_ws](const Kernel&, int M, int N, int K) {
                    try {
                      return cublaslt_algorithm(*base, M, N, K, lt_ws);
                    } catch (const std::exception& e) {
                      return std::string("none: ") + e.what();
                    }
                  };
                tasks.push_back(std::move(t));
              }
            }
            nlohmann::json meta = base_metadata("invariance", command_line, o->out);
            add_device_metadata(meta, dev.info(), dev.software(), dev.sm_clock_mhz());
            meta["settings"] = o->settings;
            if (const char* env = std::getenv("CUBLAS_WORKSPACE_CONFIG")) meta["CUBLAS_WORKSPACE_CONFIG"] = env;
            std::vector<std::string> names;
            for (const Kernel* k : resolved.kernels) names.push_back(k->name);
            if (nlohmann::json plugins = plugins_metadata(names); !plugins.empty()) meta["plugins"] = plugins;
            const auto rows = run_invariance(tasks, dev, spec, o->out, meta);
            std::printf("wrote %s (%zu rows)\n", o->out.c_str(), rows.size());
            for (const auto& r : rows)
              if (r.status == "error") return 3;
            return 0;
          }};
}

}  // namespace gemmlab::cli
