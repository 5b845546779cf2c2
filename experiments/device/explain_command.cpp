#include "experiments/device/explain_command.hpp"

#include <cstdio>
#include <iostream>
#include <memory>

#include "experiments/device/emulate_gpu.hpp"
#include "experiments/device/explain_diff.hpp"
#include "experiments/device/explain_gpu.hpp"
#include "experiments/device/runner.hpp"
#include "experiments/engine/plugin.hpp"
#include "experiments/engine/run.hpp"
#include "experiments/report/files.hpp"
#include "experiments/report/metadata.hpp"
#include "kernels/registry.hpp"
#include "reference/distributions.hpp"
#include "reference/tc_gpus.hpp"

namespace gemmlab {

namespace {

// The checks `gemmlab explain` and `explain --diff` make before any launch: every distribution parses
// and can be expressed in `input`, there is a usable GPU, and it can run every kernel. "" or the
// message (the command exits 2 with it).
std::string refusal(const std::vector<std::string>& distributions, Format input, const std::vector<const Kernel*>& k,
                    const std::string& gpu) {
  for (const std::string& d : distributions) {
    try {
      if (std::string why = unusable_reason(parse_distribution(d), input); !why.empty())
        return "distribution " + d + ": " + why;
    } catch (const std::invalid_argument& e) {
      return e.what();
    }
  }
  const DeviceInfo& dev = query_device();
  if (!dev.present) return "no usable GPU: " + dev.why_absent;
  for (const Kernel* x : k)
    if (std::string why = hardware_support(*x, dev); !why.empty()) return std::string(x->name) + " cannot run here: " + why;
  // The tensor-core model explain's nodes and predictions use: this GPU's generation, or --gpu's.
  const tc::DeviceModel m = tc::select_device_model(dev.cc(), dev.name, gpu);
  if (!m.ok) return m.message;
  tc::apply_model(m);
  std::cerr << "[gemmlab] " << m.message << "\n";
  return "";
}

// `gemmlab explain --diff A B`: both kernels checked as explain checks one, then explain_diff.
int explain_diff_command(const ExplainRequest& req) {
  if (req.diff.size() != 2) {
    std::cerr << "gemmlab explain: --diff takes two kernel names, got " << req.diff.size() << "\n";
    return 2;
  }
  if (req.diff[0] == req.diff[1]) {
    std::cerr << "gemmlab explain: --diff " << req.diff[0] << " " << req.diff[1]
              << ": the same kernel twice (its bits are its own; give two different kernels)\n";
    return 2;
  }
  if (!req.judge_csv.empty()) {
    std::cerr << "gemmlab explain: --judge applies to one kernel, not to --diff (explain each with -k ... --judge)\n";
    return 2;
  }
  const Kernel* k[2];
  for (int s = 0; s < 2; ++s) {
    k[s] = find_kernel(req.diff[s]);
    if (!k[s]) {
      std::cerr << "gemmlab explain: --diff: unknown kernel '" << req.diff[s] << "' (gemmlab list shows the names)\n";
      return 2;
    }
    if (std::string why = check_size(*k[s], req.M, req.N, req.K); !why.empty()) {
      std::cerr << "gemmlab explain: --diff: " << why << "\n";
      return 2;
    }
  }
  if (k[0]->numerics.input != k[1]->numerics.input) {
    std::cerr << "gemmlab explain: --diff " << k[0]->name << " " << k[1]->name << ": they take different input formats ("
              << info(k[0]->numerics.input).name << ", " << info(k[1]->numerics.input).name
              << "), so they cannot be given the same inputs; compare kernels of one input format\n";
    return 2;
  }
  if (std::string why = refusal(req.distributions, k[0]->numerics.input, {k[0], k[1]}, req.gpu); !why.empty()) {
    std::cerr << "gemmlab explain: " << why << "\n";
    return 2;
  }
  try {
    check_writable(req.out_csv);
  } catch (const std::exception& e) {
    std::cerr << "gemmlab explain: " << e.what() << "\n";
    return 2;
  }

  explain::DiffOptions opt;
  opt.explain.distributions = req.distributions;
  opt.explain.seed = req.seed;
  opt.explain.compare_outputs = req.compare_outputs;
  opt.compare_outputs = req.confirm_outputs;
  for (const explain::KnownKernel& kk : known_kernels(all_kernels()))
    if (kk.name != k[0]->name && kk.name != k[1]->name) opt.explain.known.push_back(kk);
  KernelOracle a(*k[0], req.M, req.N, req.K), b(*k[1], req.M, req.N, req.K);
  const explain::DiffReport d = explain::explain_diff(a, b, k[0]->name, k[1]->name, opt);
  std::cout << d.summary() << "  " << d.launches << " launches, " << d.seconds << " s\n";

  nlohmann::json meta = base_metadata("explain", req.command_line, req.out_csv);
  add_device_metadata(meta, query_device(), software_versions(), current_sm_clock_mhz());
  meta["diff"] = diff_to_json(d);
  meta["declared_numerics"] = {{k[0]->name, numerics_to_json(k[0]->numerics)}, {k[1]->name, numerics_to_json(k[1]->numerics)}};
  if (nlohmann::json plugins = plugins_metadata({k[0]->name, k[1]->name}); !plugins.empty()) meta["plugins"] = plugins;
  write_table(req.out_csv, explain_diff_columns(), explain_diff_rows(d, req.seed), meta);
  std::cout << "  wrote " << req.out_csv << "\n";
  for (const auto* r : {&d.a, &d.b})
    if (r->oracle_lost) {
      // Nothing more ran on the GPU in this process after that: the diff is written as far as it got.
      std::cerr << "gemmlab explain: " << (r == &d.a ? d.a_name : d.b_name) << " stopped at its " << r->failed_stage
                << " stage: " << r->reason << "\n";
      return 3;
    }
  return d.a.identified && d.b.identified ? 0 : 5;
}

}  // namespace

int explain_command(const ExplainRequest& req) {
  if (!req.diff.empty()) return explain_diff_command(req);
  const Kernel* k = find_kernel(req.kernel);
  if (!k) {
    std::cerr << "gemmlab explain: unknown kernel '" << req.kernel << "' (gemmlab list shows the names)\n";
    return 2;
  }
  // A quantized kernel whose recipe explain cannot take (both operands quantized: the built-in int8 one), before
  // anything else is asked of the machine (KernelOracle would refuse it there).
  if (std::string why; k->quantized && !explain_input_format(parse_quant_recipe(k->quantized), &why)) {
    std::cerr << "gemmlab explain: " << k->name << ": " << why << "\n";
    return 2;
  }
  if (std::string why = check_size(*k, req.M, req.N, req.K); !why.empty()) {
    std::cerr << "gemmlab explain: " << why << "\n";
    return 2;
  }
  if (std::string why = refusal(req.distributions, k->numerics.input, {k}, req.gpu); !why.empty()) {
    std::cerr << "gemmlab explain: " << why << "\n";
    return 2;
  }
  emulation::TreeEmulator emulate;  // the composition's predictions on the GPU (GEMMLAB_EMULATE=cpu: here)
  try {
    check_writable(req.out_csv);
    if (!req.judge_csv.empty()) check_writable(req.judge_csv);
    emulate = gpu_tree_emulator();
  } catch (const std::exception& e) {
    std::cerr << "gemmlab explain: " << e.what() << "\n";
    return 2;
  }

  explain::Options opt;
  opt.distributions = req.distributions;
  opt.seed = req.seed;
  opt.compare_outputs = req.compare_outputs;
  opt.first_call = true;  // a kernel compiled on first use (Triton, XLA) compiles before the clock
  opt.emulate = emulate;
  for (const explain::KnownKernel& kk : known_kernels(all_kernels()))
    if (kk.name != k->name) opt.known.push_back(kk);
  KernelOracle oracle(*k, req.M, req.N, req.K);
  const explain::Report r = explain::explain_kernel(oracle, opt);
  std::cout << k->name << " at " << req.M << "x" << req.N << "x" << req.K << ": " << r.summary() << "  " << r.launches
            << " launches, " << r.seconds << " s\n";

  nlohmann::json meta = base_metadata("explain", req.command_line, req.out_csv);
  add_device_metadata(meta, query_device(), software_versions(), current_sm_clock_mhz());
  meta["report"] = report_to_json(r);
  meta["declared_numerics"] = numerics_to_json(k->numerics);
  if (nlohmann::json plugins = plugins_metadata({k->name}); !plugins.empty()) meta["plugins"] = plugins;
  write_table(req.out_csv, explain_columns(), explain_rows(k->name, r, req.M, req.N, req.K, req.seed), meta);
  std::cout << "  wrote " << req.out_csv << "\n";
  if (r.oracle_lost) {
    // Nothing more runs on the GPU in this process: the report is written, no judging.
    std::cerr << "gemmlab explain: " << k->name << " stopped at its " << r.failed_stage << " stage: " << r.reason << "\n";
    return 3;
  }

  if (!req.judge_csv.empty()) {
    // The kernel again, under the numerics it was found to have (unknown when it was not identified:
    // then its rows say no_bound).
    static std::vector<std::unique_ptr<std::string>> names;
    names.push_back(std::make_unique<std::string>(std::string(k->name) + "@explained"));
    Kernel copy = *k;
    copy.name = names.back()->c_str();
    if (r.identified && r.numerics) copy.numerics = *r.numerics;
    else copy.numerics.accumulation = Accumulation::unknown;
    register_kernel(copy);
    RunRequest run;
    run.plan.name = "explain-judge";
    run.plan.kernels = {copy.name};
    run.plan.distributions = req.distributions;
    run.plan.sizes = {{req.M, req.N, req.K}};
    run.plan.seeds = {req.seed};
    run.out_csv = req.judge_csv;
    run.force = true;
    run.command_line = req.command_line;
    run.live_progress = false;
    run.caller_metadata = {{"explained", report_to_json(r)}};
    const int rc = run_experiment(run, gpu_device(0));
    unregister_kernel(copy.name);
    if (rc != 0) return rc;
  }
  return r.identified ? 0 : 5;
}

}  // namespace gemmlab
