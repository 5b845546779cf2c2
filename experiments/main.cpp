// gemmlab: run GEMM kernels on controlled inputs, compare every entry with an exact reference, and
// record error statistics beside the runtime.
//
// Exit codes: 0 success; 1 internal error; 2 bad input (the message says what and what to do);
// 3 the run finished but some kernel raised an error (its CSV row says which); 4 `gemmlab order`
// found outputs that do not form a summation tree.
#include <CLI/CLI.hpp>

#include <chrono>
#include <cstdio>
#include <iostream>
#include <string>

#include "experiments/output.hpp"
#include "experiments/plan.hpp"
#include "experiments/run.hpp"
#include "experiments/tune_sgemm.hpp"
#include "experiments/order.hpp"
#include "experiments/probe.hpp"
#include "reference/distributions.hpp"
#include "reference/exact_gemm.hpp"
#include "reference/mpfr_gemm.hpp"
#include "reference/tc_model.hpp"

using namespace gemmlab;

namespace {

std::string join_args(int argc, char** argv) {
  std::string s;
  for (int i = 0; i < argc; ++i) s += (i ? " " : "") + std::string(argv[i]);
  return s;
}

std::vector<std::string> split_commas(const std::vector<std::string>& in) {
  std::vector<std::string> out;
  for (const auto& s : in) {
    std::size_t start = 0;
    while (start <= s.size()) {
      std::size_t end = s.find(',', start);
      if (end == std::string::npos) end = s.size();
      if (end > start) out.push_back(s.substr(start, end - start));
      start = end + 1;
    }
  }
  return out;
}

int bench_reference(const std::string& size, const std::string& dist, const std::string& format,
                    const std::string& engine, int threads) {
  Size z = parse_size(size);
  Distribution d;
  try {
    d = parse_distribution(dist);
  } catch (const std::invalid_argument& e) {
    throw UsageError(e.what());
  }
  auto f = parse_format(format);
  if (!f) throw UsageError("unknown format '" + format + "' (fp64, fp32, tf32, fp16, bf16, e4m3, e5m2)");
  Matrix A = generate(d, Operand::A, z.M, z.K, *f, 1, threads);
  Matrix B = generate(d, Operand::B, z.K, z.N, *f, 1, threads);
  GemmReference r;
  if (engine == "exact")
    r = exact_gemm(A, B, Format::fp32, threads);
  else if (engine == "mpfr")
    r = mpfr_gemm(A, B, Format::fp32, threads);
  else
    throw UsageError("--engine must be exact or mpfr");
  const double entries = double(z.M) * z.N;
  std::printf("engine=%s size=%s dist=%s format=%s threads=%d seconds=%.3f entries_per_s=%.4g products_per_s=%.4g\n",
              r.engine.c_str(), z.str().c_str(), d.name().c_str(), format.c_str(), threads, r.seconds,
              entries / r.seconds, entries * z.K / r.seconds);
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"gemmlab: accuracy and speed of GPU GEMM kernels against an exact (MPFR-checked) reference"};
  app.require_subcommand(1);

  app.add_subcommand("list", "print the registered kernels, the distributions and the suites");

  auto* run = app.add_subcommand("run", "run kernels on controlled inputs and write a tidy CSV plus metadata");
  RunRequest req;
  std::vector<std::string> kernels, dists, sizes, seeds_s;
  std::string suite;
  int reps = -1, warmup = -1, spot = -1;
  std::string reference;
  run->add_option("--suite", suite, "suite file or name (experiments/suites/<name>.toml); flags below override it");
  run->add_option("-k,--kernels", kernels, "kernel names, 'all', or 'family:<name>' (comma-separated)");
  run->add_option("-d,--dists", dists, "distributions, e.g. uniform_0_1,normal_0_1,logunif_-8_8, or 'all'");
  run->add_option("-s,--size", sizes, "N (for N^3) or MxNxK; repeatable / comma-separated");
  run->add_option("--seeds", seeds_s, "seeds (comma-separated non-negative integers)");
  run->add_option("--reps", reps, "timed repetitions per kernel (median reported)");
  run->add_option("--warmup", warmup, "untimed warm-up launches");
  run->add_option("--reference", reference, "auto (exact + MPFR spot checks), exact, or mpfr (every entry)");
  run->add_option("--spot-checks", spot, "entries checked against MPFR per reference in auto mode");
  run->add_option("-o,--out", req.out_csv, "output CSV (default results/<suite>-<UTC time>.csv); metadata beside it");
  run->add_option("--save-matrices", req.save_matrices, "folder for .npy files of inputs, outputs and references");
  run->add_option("--threads", req.threads, "CPU threads for the reference and statistics (default: all)");

  auto* bench = app.add_subcommand("bench-reference", "time the exact reference engines on the CPU");
  std::string b_size = "512", b_dist = "uniform_0_1", b_format = "fp32", b_engine = "exact";
  int b_threads = 0;
  bench->add_option("--size", b_size, "N or MxNxK");
  bench->add_option("--dist", b_dist, "distribution");
  bench->add_option("--format", b_format, "input format");
  bench->add_option("--engine", b_engine, "exact or mpfr");
  bench->add_option("--threads", b_threads, "threads (0: all)");

  auto* tune = app.add_subcommand("tune", "search sgemm_09_autotuned's (BM, BN, BK, TM, TN) on this GPU");
  std::string t_size = "4096", t_write;
  int t_reps = 10;
  tune->add_option("--size", t_size, "N or MxNxK to tune at");
  tune->add_option("--reps", t_reps, "timed repetitions per candidate");
  tune->add_option("--write", t_write, "write the winner into this header (kernels/simt/sgemm_09_autotuned_config.hpp)");

  auto* probe = app.add_subcommand("probe", "infer how this GPU's tensor-core instructions round, one instruction at a time");
  std::string p_out = "results/probes.csv";
  long long p_validate = 0;
  std::uint64_t p_seed = 1;
  probe->add_option("-o,--out", p_out, "findings CSV (raw outcomes go beside it as <out>_outcomes.csv)");
  probe->add_option("--validate", p_validate, "then compare the inferred model with the hardware on this many random tiles per instruction");
  probe->add_option("--seed", p_seed, "seed of the validation tiles");

  auto* order = app.add_subcommand("order", "reveal the tree in which one output entry's K products are summed (FPRev)");
  std::string o_kernel, o_size = "256", o_out;
  int o_i = 0, o_j = 0;
  order->add_option("-k,--kernel", o_kernel, "registered kernel (cuBLAS included)")->required();
  order->add_option("-s,--size", o_size, "N or MxNxK (K products are revealed; keep K modest, e.g. 256)");
  order->add_option("-i", o_i, "row of the output entry");
  order->add_option("-j", o_j, "column of the output entry");
  order->add_option("-o,--out", o_out, "CSV of the tree's nodes (default results/order-<kernel>-K<K>.csv)");

  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    return app.exit(e) == 0 ? 0 : 2;
  }

  try {
    if (app.got_subcommand("list")) {
      print_list();
      return 0;
    }
    if (app.got_subcommand("tune")) {
      Size z = parse_size(t_size);
      if (t_reps < 1) throw UsageError("--reps must be at least 1");
      return tune_sgemm(z.M, z.N, z.K, t_reps, t_write);
    }
    if (app.got_subcommand("probe")) {
      if (p_out.size() < 5 || p_out.substr(p_out.size() - 4) != ".csv") throw UsageError("--out must name a .csv file");
      check_writable(p_out);
      int rc = run_probes(p_out, true);
      if (rc != 0 || p_validate <= 0) return rc;
      for (auto ins : tc::all_instructions()) {
        const char* name = tc::info(ins).name;
        std::string report;
        validate_model(name, p_validate, p_seed, &report);
        std::printf("validate %-24s %s\n", name, report.c_str());
      }
      return 0;
    }
    if (app.got_subcommand("order")) {
      Size z = parse_size(o_size);
      if (o_out.empty()) o_out = "results/order-" + o_kernel + "-K" + std::to_string(z.K) + ".csv";
      if (o_out.size() < 5 || o_out.substr(o_out.size() - 4) != ".csv") throw UsageError("--out must name a .csv file");
      check_writable(o_out);
      if (o_i < 0 || o_i >= z.M || o_j < 0 || o_j >= z.N)
        throw UsageError("entry (" + std::to_string(o_i) + ", " + std::to_string(o_j) + ") is outside the " + z.str() + " output");
      return run_order(o_kernel, z.M, z.N, z.K, o_i, o_j, o_out);
    }
    if (app.got_subcommand("bench-reference")) return bench_reference(b_size, b_dist, b_format, b_engine, b_threads);
    if (app.got_subcommand("run")) {
      if (!suite.empty()) req.plan = load_suite(find_suite(suite));
      if (!kernels.empty()) req.plan.kernels = split_commas(kernels);
      if (!dists.empty()) req.plan.distributions = split_commas(dists);
      if (!sizes.empty()) {
        req.plan.sizes.clear();
        for (const auto& s : split_commas(sizes)) req.plan.sizes.push_back(parse_size(s));
      }
      if (!seeds_s.empty()) {
        req.plan.seeds.clear();
        for (const auto& s : split_commas(seeds_s)) {
          if (s.empty() || s.find_first_not_of("0123456789") != std::string::npos || s.size() > 19)
            throw UsageError("seed '" + s + "' is not a non-negative integer");
          req.plan.seeds.push_back(std::stoull(s));
        }
      }
      if (reps >= 0) req.plan.reps = reps;
      if (warmup >= 0) req.plan.warmup = warmup;
      if (spot >= 0) req.plan.spot_checks = spot;
      if (!reference.empty()) req.plan.reference = reference;
      req.command_line = join_args(argc, argv);
      return run_experiment(req);
    }
  } catch (const UsageError& e) {
    std::fprintf(stderr, "gemmlab: %s\n", e.what());
    return 2;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "gemmlab: internal error: %s\n", e.what());
    return 1;
  }
  return 0;
}
