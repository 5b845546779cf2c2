// The subcommands that study one instruction or one kernel on the GPU: `probe`, `order`, `tune`,
// and `bench-reference` (the exact reference engines, CPU).
#include <cstdio>

#include "experiments/cli/commands.hpp"
#include "experiments/device/bench_reference.hpp"
#include "experiments/device/mma_ceiling.hpp"
#include "experiments/device/order.hpp"
#include "experiments/device/predict.hpp"
#include "experiments/device/explain_command.hpp"
#include "experiments/device/probe.hpp"
#include "experiments/device/tune_sgemm.hpp"
#include "experiments/engine/plugin.hpp"
#include "experiments/plan/plan.hpp"
#include "experiments/report/files.hpp"
#include "reference/distributions.hpp"
#include "reference/exact_gemm.hpp"
#include "reference/mpfr_gemm.hpp"
#include "reference/tc_model.hpp"

namespace gemmlab::cli {

Command add_tune(CLI::App& app) {
  auto* tune = app.add_subcommand("tune", "search sgemm_09_autotuned's (BM, BN, BK, TM, TN) on this GPU");
  struct Options {
    std::string size = "4096", write;
    int reps = 10;
  };
  auto o = std::make_shared<Options>();
  tune->add_option("--size", o->size, "N or MxNxK to tune at");
  tune->add_option("--reps", o->reps, "timed repetitions per candidate");
  tune->add_option("--write", o->write, "write the winner into this header (kernels/simt/sgemm_09_autotuned_config.hpp)");
  return {tune, [o] {
            Size z = parse_size(o->size);
            if (o->reps < 1) throw UsageError("--reps must be at least 1");
            return tune_sgemm(z.M, z.N, z.K, o->reps, o->write);
          }};
}

Command add_probe(CLI::App& app, const std::string& command_line) {
  auto* probe = app.add_subcommand("probe", "infer how this GPU's tensor-core instructions round, one instruction at a time");
  struct Options {
    std::string out = "results/probes.csv";
    long long validate = 0;
    std::uint64_t seed = 1;
    long long first_tile = 0;
    std::vector<std::string> instructions;
    bool corpus = false;
  };
  auto o = std::make_shared<Options>();
  probe->add_option("-o,--out", o->out, "findings CSV (raw outcomes go beside it as <out>_outcomes.csv)");
  probe->add_flag("--corpus", o->corpus,
                  "also run the adversarial corpus (reference/tc_corpus.hpp) and infer the special rules from it; "
                  "writes <out>_corpus.csv (per rule class) and <out>_corpus_outcomes.csv (per case)");
  probe->add_option("--validate", o->validate,
                    "then compare the inferred model with the hardware on this many random tiles per instruction");
  probe->add_option("--seed", o->seed, "seed of the validation tiles");
  probe->add_option("--first-tile", o->first_tile,
                    "validate tiles [F, F + N) of the seed's sequence (calls with F = 0, N, 2N, ... add up to one long run)");
  probe->add_option("--instructions", o->instructions,
                    "probe and validate only these instructions (comma-separated names; default all)")
      ->delimiter(',');
  return {probe, [o, command_line] {
            require_csv(o->out);
            if (o->first_tile < 0) throw UsageError("--first-tile must be 0 or more");
            std::vector<std::string> names;
            for (const std::string& n : o->instructions) {
              if (!tc::parse_instruction(n)) throw UsageError("--instructions: unknown instruction '" + n + "'");
              names.push_back(n);
            }
            check_writable(o->out);  // after the options, so a mistake in them is named first
            const std::vector<std::string> only = names;  // empty: every instruction
            if (names.empty())
              for (auto ins : tc::all_instructions()) names.push_back(tc::info(ins).name);
            std::vector<std::pair<std::string, tc::TcParams>> inferred;
            int rc = run_probes(o->out, true, command_line, o->corpus, &inferred, only);
            if (rc != 0 || o->validate <= 0) return rc;
            std::vector<ValidationResult> results;
            for (const std::string& name : names) {
              const tc::TcParams* params = nullptr;  // the probe stage's inference, not a second one
              for (const auto& [n, p] : inferred)
                if (n == name) params = &p;
              results.push_back(validate_instruction(name, o->validate, o->seed, params, o->first_tile));
              std::printf("validate %-24s %s\n", name.c_str(), results.back().summary().c_str());
              std::fflush(stdout);
            }
            std::printf("validation table: %s\n", write_validation(o->out, results, command_line).c_str());
            return 0;
          }};
}

Command add_order(CLI::App& app, const std::string& command_line) {
  auto* order = app.add_subcommand("order", "reveal the tree in which one output entry's K products are summed (FPRev)");
  struct Options {
    std::string kernel, size = "256", out;
    int i = 0, j = 0;
    std::vector<std::string> plugins;
    bool declared = false;
  };
  auto o = std::make_shared<Options>();
  order->add_option("-k,--kernel", o->kernel, "registered kernel (cuBLAS included)")->required();
  order->add_flag("--declared", o->declared,
                  "no GPU: the tree the kernel's numerics record declares (the order gemmlab's emulation assumes), "
                  "nothing run");
  order->add_option("-s,--size", o->size, "N or MxNxK (K products are revealed; keep K modest, e.g. 256)");
  order->add_option("-i", o->i, "row of the output entry");
  order->add_option("-j", o->j, "column of the output entry");
  order->add_option("-o,--out", o->out, "CSV of the tree's nodes (default results/order-<kernel>-K<K>.csv)");
  add_plugin_option(order, o->plugins);
  add_launch_timeout_option(order);
  return {order, [o, command_line] {
            load_plugins(o->plugins);
            Size z = parse_size(o->size);
            if (o->out.empty()) o->out = "results/order-" + o->kernel + "-K" + std::to_string(z.K) + ".csv";
            require_csv(o->out);
            // run_order checks the kernel, the size and the entry, then that the output folder is
            // writable: a mistake in the options is named before a missing results/ folder.
            if (o->i < 0 || o->i >= z.M || o->j < 0 || o->j >= z.N)
              throw UsageError("entry (" + std::to_string(o->i) + ", " + std::to_string(o->j) + ") is outside the " +
                               z.str() + " output");
            return run_order(o->kernel, z.M, z.N, z.K, o->i, o->j, o->out, command_line, o->declared);
          }};
}

Command add_explain(CLI::App& app, const std::string& command_line) {
  auto* cmd = app.add_subcommand(
      "explain", "reveal a kernel's summation tree, operand conversion and tensor-core arithmetic, and predict its bits");
  cmd->footer(
      "With --diff A B: where two kernels' numerics differ (tree, order that depends on scheduling, operand "
      "conversion, node arithmetic, output conversion), each difference shown on an input where their bits differ, "
      "else 'bit-identical by construction', confirmed on full inputs; exit 5 when either kernel is not identified (the "
      "aspects after its failed stage are not compared). For making one kernel reproduce another bit for bit (a Triton "
      "GEMM that must give cuBLAS's bits), or checking that a refactor kept the numerics.");
  struct Options {
    ExplainRequest r;
    std::string size = "4096";
    std::vector<std::string> dists, plugins;
  };
  auto o = std::make_shared<Options>();
  auto* kernel = cmd->add_option("-k,--kernel", o->r.kernel, "registered kernel (built-in, cuBLAS, or a --plugin's)");
  cmd->add_option("--diff", o->r.diff, "A B: compare two registered kernels' numerics instead (see below)")
      ->expected(2)
      ->excludes(kernel);
  cmd->add_option("--confirm-outputs", o->r.confirm_outputs,
                  "with --diff: outputs compared bit for bit per distribution on full inputs (default 0: every output)");
  cmd->add_option("-s,--size", o->size, "N or MxNxK (default 4096)");
  cmd->add_option("-d,--dists", o->dists,
                  "distributions of the full-size comparison (default uniform_0_1,normal_0_1,logunif_-8_8)");
  cmd->add_option("--seed", o->r.seed, "seed of the compared inputs and of the entries chosen");
  cmd->add_option("--compare-outputs", o->r.compare_outputs,
                  "outputs predicted per distribution, whole rows (0: every output; default 65536)");
  cmd->add_option("-o,--out", o->r.out_csv,
                  "CSV: one row per distribution (default results/explain-<kernel>.csv); with --diff one row per "
                  "difference (default results/explain-diff-<A>-vs-<B>.csv)");
  cmd->add_option("--judge", o->r.judge_csv,
                  "also run the kernel under the numerics found and write those rows here (status by that bound)");
  cmd->add_option("--gpu", o->r.gpu,
                  "the tensor-core models' GPU (v100, a100, ada, l4, h100, b200, sm_80, ...; default: this GPU's own "
                  "generation; a GPU gemmlab has no model for needs it, and nothing found that way is validated)");
  add_plugin_option(cmd, o->plugins);
  add_launch_timeout_option(cmd);
  return {cmd, [o, command_line] {
            load_plugins(o->plugins);
            const Size z = parse_size(o->size);
            if (!o->dists.empty()) o->r.distributions = split_commas(o->dists);
            if (o->r.compare_outputs < 0) throw UsageError("--compare-outputs must be 0 (every output) or more");
            if (o->r.confirm_outputs < 0) throw UsageError("--confirm-outputs must be 0 (every output) or more");
            if (o->r.kernel.empty() && o->r.diff.empty()) throw UsageError("give -k KERNEL, or --diff A B");
            if (!o->r.diff.empty() && o->r.out_csv.empty())
              o->r.out_csv = "results/explain-diff-" + o->r.diff[0] + "-vs-" + o->r.diff[1] + ".csv";
            if (o->r.out_csv.empty()) o->r.out_csv = "results/explain-" + o->r.kernel + ".csv";
            require_csv(o->r.out_csv);
            if (!o->r.judge_csv.empty()) require_csv(o->r.judge_csv);
            o->r.M = z.M;
            o->r.N = z.N;
            o->r.K = z.K;
            o->r.command_line = command_line;
            return explain_command(o->r);
          }};
}

Command add_bench_reference(CLI::App& app, const std::string& command_line) {
  auto* bench = app.add_subcommand("bench-reference", "time the exact reference engines, CPU and GPU side by side");
  struct Options {
    BenchReferenceOptions b;
    std::vector<std::string> sizes, dists, formats;
    bool no_gpu = false;
  };
  auto o = std::make_shared<Options>();
  o->b.out_csv = "results/bench_reference.csv";
  bench->add_option("-s,--size", o->sizes, "N or MxNxK; repeatable / comma-separated (default 4096)");
  bench->add_option("-d,--dists", o->dists, "distributions (default: all)");
  bench->add_option("--formats", o->formats, "input formats (default: fp32,fp16)");
  bench->add_option("--cpu", o->b.cpu, "CPU engine: all, none, or N (only at sizes up to N^3)");
  bench->add_flag("--no-gpu", o->no_gpu, "CPU engine only (no GPU needed)");
  bench->add_option("--stats", o->b.stats_n, "also time the statistics of one (n, n) output, CPU vs GPU");
  auto* threads = bench->add_option("--threads", o->b.threads, "CPU threads, at least 1 (default: all)");
  bench->add_option("-o,--out", o->b.out_csv, "CSV of one row per engine x problem (metadata beside it)");
  return {bench, [o, threads, command_line] {
            require_threads(threads, o->b.threads);
            require_csv(o->b.out_csv);
            if (!o->sizes.empty()) {
              o->b.sizes.clear();
              for (const auto& s : split_commas(o->sizes)) o->b.sizes.push_back(parse_size(s));
            }
            if (!o->dists.empty()) o->b.distributions = split_commas(o->dists);
            if (!o->formats.empty()) {
              o->b.formats.clear();
              for (const auto& f : split_commas(o->formats)) {
                auto fmt = parse_format(f);
                if (!fmt) throw UsageError("unknown format '" + f + "' (fp64, fp32, tf32, fp16, bf16, e4m3, e5m2)");
                o->b.formats.push_back(*fmt);
              }
            }
            o->b.gpu = !o->no_gpu;
            return bench_reference(o->b, command_line);
          }};
}

Command add_predict(CLI::App& app, const std::string& command_line) {
  auto* predict = app.add_subcommand("predict", "predict kernels' outputs bit for bit on the CPU and compare with the GPU");
  struct Options {
    std::vector<std::string> kernels, dists = {"uniform_0_1"}, tree_entries, plugins;
    std::string size = "512", out, gpu;
    std::uint64_t seed = 1;
  };
  auto o = std::make_shared<Options>();
  predict->add_option("-k,--kernels", o->kernels,
                      "registered kernels (comma-separated): gemmlab's own through their numerics record, library "
                      "kernels (cuBLAS, cuBLASLt) through the tree `gemmlab order` reveals on this GPU at this size")
      ->required();
  predict->add_option("--tree-entries", o->tree_entries,
                      "library kernels: the output entries I:J whose tree is revealed (comma-separated; default "
                      "0:0, one near the middle, and the last); the first one's tree is used for every entry");
  predict->add_option("-d,--dists", o->dists, "distributions (comma-separated)");
  predict->add_option("-s,--size", o->size, "N or MxNxK");
  predict->add_option("--seed", o->seed, "seed of the inputs");
  predict->add_option("-o,--out", o->out, "CSV of one row per kernel x distribution")->required();
  predict->add_option("--gpu", o->gpu,
                      "the tensor-core models' GPU (default: this GPU's own generation; see `gemmlab tc-eval --list`)");
  add_plugin_option(predict, o->plugins);
  add_launch_timeout_option(predict);
  return {predict, [o, command_line] {
            load_plugins(o->plugins);
            require_csv(o->out);
            Size z = parse_size(o->size);
            std::vector<std::pair<int, int>> entries;
            for (const std::string& e : split_commas(o->tree_entries)) {
              int i = -1, j = -1;
              char colon = 0, extra = 0;
              if (std::sscanf(e.c_str(), "%d%c%d%c", &i, &colon, &j, &extra) != 3 || colon != ':')
                throw UsageError("--tree-entries: '" + e + "' is not I:J (row:column of the output, e.g. 0:0)");
              entries.emplace_back(i, j);
            }
            return predict_command(split_commas(o->kernels), split_commas(o->dists), z.M, z.N, z.K, o->seed, o->out,
                                   command_line, entries, o->gpu);
          }};
}

Command add_bench_mma_ceiling(CLI::App& app, const std::string& command_line) {
  auto* bench = app.add_subcommand("bench-mma-ceiling",
                                   "time a register-only mma.sync loop (in_mma and external) beside cuBLAS");
  auto out = std::make_shared<std::string>("results/mma_ceiling.csv");
  bench->add_option("-o,--out", *out, "CSV of one row per configuration");
  return {bench, [out, command_line] {
            require_csv(*out);
            return bench_mma_ceiling(*out, command_line);
          }};
}

}  // namespace gemmlab::cli
