// `gemmlab port`: what an explained kernel's numbers would be on other GPU generations
// (experiments/engine/port.hpp). No GPU needed.
//
// Exit codes: 0 when every kernel was predicted on every target (rows `no_instruction` included: a
// target that lacks the formats is a result); 2 for bad input.
#include <algorithm>
#include <cstdio>
#include <memory>

#include "experiments/cli/commands.hpp"
#include "experiments/engine/plugin.hpp"
#include "experiments/engine/port.hpp"
#include "experiments/plan/plan.hpp"
#include "experiments/report/files.hpp"
#include "kernels/registry.hpp"

namespace gemmlab::cli {

Command add_port(CLI::App& app, const std::string& command_line) {
  auto* cmd = app.add_subcommand(
      "port", "predict an explained kernel's outputs on other GPU generations: bits that change, bias and spread");
  cmd->footer(
      "The kernel's order (or revealed tree) and operand conversion stay as explained; its tensor-core instruction "
      "runs with each target generation's model (`gemmlab tc-eval --list --gpu all`). A target without the "
      "instruction (wgmma off Hopper) gets the closest it has, named as an assumption; one without the formats (fp8 "
      "before Ada) a row `no_instruction`. Runs on the CPU.");
  struct Options {
    std::vector<std::string> kernels, explanations, gpus, dists, plugins;
    std::string size = "4096", out, measured, from = "hopper";
    PortOptions p;
  };
  auto o = std::make_shared<Options>();
  cmd->add_option("-k,--kernels", o->kernels, "built-in kernels (comma-separated): their numerics record, measured on "
                                             "--from's generation");
  cmd->add_option("--explanation", o->explanations,
                  "a kernel as `gemmlab explain` or gemmlab.explain wrote it (its .meta.json or CSV; repeatable); the "
                  "measured bias and spread come from the <stem>_judged.csv beside it");
  cmd->add_option("--gpus", o->gpus,
                  "target GPUs, comma-separated (" + tc::gpu_name_help() + "; default: every generation but the "
                  "kernel's own)");
  cmd->add_option("--from", o->from, "the generation built-in kernels' records were measured on (default hopper)");
  cmd->add_option("-s,--size", o->size, "N or MxNxK (default 4096; a revealed tree is ported at its own K)");
  cmd->add_option("-d,--dists", o->dists, "distributions (default uniform_0_1,normal_0_1,logunif_-8_8)");
  cmd->add_option("--seed", o->p.seed, "seed of the inputs (default 20261124, explain's)");
  cmd->add_option("--entries", o->p.entries, "output entries predicted per distribution (default 4096)");
  cmd->add_option("--measured", o->measured, "a run CSV whose rows give built-in kernels' measured bias and spread");
  auto* threads = cmd->add_option("--threads", o->p.threads, "CPU threads, at least 1 (default: all)");
  cmd->add_option("-o,--out", o->out, "CSV of one row per kernel x distribution x target (default results/port.csv)");
  add_plugin_option(cmd, o->plugins);
  return {cmd, [o, command_line, threads] {
            require_threads(threads, o->p.threads);
            load_plugins(o->plugins);
            if (o->kernels.empty() && o->explanations.empty())
              throw UsageError("port: give -k KERNEL (built-in) or --explanation FILE (what explain wrote)");
            if (o->out.empty()) o->out = "results/port.csv";
            require_csv(o->out);
            if (o->p.entries < 1) throw UsageError("--entries must be at least 1");
            const Size z = parse_size(o->size);
            o->p.M = z.M, o->p.N = z.N, o->p.K = z.K;
            if (!o->dists.empty()) o->p.distributions = split_commas(o->dists);
            for (const std::string& d : o->p.distributions) try {
                (void)parse_distribution(d);
              } catch (const std::invalid_argument& e) {
                throw UsageError(e.what());
              }
            for (const std::string& g : split_commas(o->gpus)) {
              const std::optional<tc::Generation> gen = tc::parse_gpu(g);
              if (!gen) throw UsageError("--gpus " + g + ": not a GPU gemmlab models; use one of " + tc::gpu_name_help());
              if (std::find(o->p.targets.begin(), o->p.targets.end(), *gen) == o->p.targets.end())
                o->p.targets.push_back(*gen);
            }
            const std::optional<tc::Generation> from = tc::parse_gpu(o->from);
            if (!from) throw UsageError("--from " + o->from + ": not a GPU gemmlab models; use one of " + tc::gpu_name_help());
            std::vector<PortKernel> ks;
            for (const std::string& name : split_commas(o->kernels)) {
              const Kernel* k = find_kernel(name);
              if (!k) throw UsageError("unknown kernel '" + name + "' (`gemmlab list` shows them)");
              if (!k->numerics.predictable() || k->numerics.k_chunked || k->scale_a != ScaleGranularity::none)
                throw UsageError(name + ": its numerics (" + k->numerics.describe() +
                                 ") are not a record gemmlab predicts; explain it first and port the explanation");
              if (std::string why = check_size(*k, o->p.M, o->p.N, o->p.K); !why.empty()) throw UsageError(why);
              PortKernel pk;
              pk.name = name;
              pk.numerics = k->numerics;
              pk.from = *from;
              pk.origin = "built-in numerics record";
              if (!o->measured.empty()) try {
                  pk.measured = measured_from_csv(o->measured, name);
                } catch (const std::invalid_argument& e) {
                  throw UsageError(e.what());
                }
              ks.push_back(std::move(pk));
            }
            for (const std::string& f : o->explanations) try {
                ks.push_back(port_kernel_from_explain(f));
              } catch (const std::invalid_argument& e) {
                throw UsageError(e.what());
              }
            check_writable(o->out);
            std::vector<PortRow> rows;
            try {
              rows = port(ks, o->p);
            } catch (const std::invalid_argument& e) {
              throw UsageError(e.what());
            }
            write_port_csv(rows, o->out, command_line, o->p);
            std::printf("%-36s %-14s %-9s %-9s %-14s %9s %12s %12s %12s\n", "kernel", "distribution", "from", "gpu",
                        "status", "changed", "bias_u", "bias_u_from", "measured");
            for (const PortRow& r : rows) {
              const bool nums = r.status == "ported" || r.status == "same_model";
              std::printf("%-36s %-14s %-9s %-9s %-14s %8.2f%% %12.4g %12.4g %12s\n", r.kernel.c_str(),
                          r.distribution.c_str(), r.from.c_str(), r.gpu.c_str(), r.status.c_str(),
                          nums ? 100 * r.changed_fraction : 0.0, nums ? r.bias_u : 0.0, r.bias_u_from,
                          r.measured_bias_u ? std::to_string(*r.measured_bias_u).c_str() : "-");
            }
            std::fprintf(stderr, "[gemmlab] port: %zu rows (%d entries per distribution) written to %s\n", rows.size(),
                         o->p.entries, o->out.c_str());
            return 0;
          }};
}

}  // namespace gemmlab::cli
