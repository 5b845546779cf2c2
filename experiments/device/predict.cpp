// `gemmlab predict` (see predict.hpp).
#include "experiments/device/predict.hpp"

#include <chrono>
#include <cmath>
#include <cstdio>
#include <sstream>

#include "experiments/device/runner.hpp"
#include "experiments/plan/plan.hpp"
#include "experiments/report/files.hpp"
#include "experiments/report/metadata.hpp"
#include "kernels/registry.hpp"
#include "reference/kernel_emulation.hpp"

namespace gemmlab {
namespace {
std::string hex(std::uint64_t bits, Format f) {
  std::ostringstream s;
  s << "0x" << std::hex;
  s.width((gemmlab::info(f).storage_bits + 3) / 4);
  s.fill('0');
  s << bits;
  return s.str();
}
}  // namespace

std::string PredictionRow::summary() const {
  std::ostringstream line;
  line << kernel << " on " << distribution << " (seed " << seed << ", " << M << "x" << N << "x" << K << "): " << mismatches
       << " / " << outputs << " outputs differ from the prediction";
  if (mismatches)
    line << "; first at (" << first_i << ", " << first_j << "): predicted " << predicted_bits << ", observed "
         << observed_bits;
  return line.str();
}

const std::vector<std::string>& prediction_columns() {
  static const std::vector<std::string> c = {"kernel", "order",   "distribution", "seed",    "M",
                                             "N",      "K",       "outputs",      "mismatches", "first_i",
                                             "first_j", "predicted_bits", "observed_bits"};
  return c;
}

std::vector<std::string> to_fields(const PredictionRow& r) {
  const bool any = r.mismatches > 0;
  return {r.kernel,
          r.order,
          r.distribution,
          std::to_string(r.seed),
          std::to_string(r.M),
          std::to_string(r.N),
          std::to_string(r.K),
          std::to_string(r.outputs),
          std::to_string(r.mismatches),
          any ? std::to_string(r.first_i) : "",
          any ? std::to_string(r.first_j) : "",
          r.predicted_bits,
          r.observed_bits};
}

std::optional<tc::TcParams> prediction_params(const Kernel& k) {
  if (!k.numerics.predictable()) return std::nullopt;
  if (k.numerics.accumulation == Accumulation::fma) return tc::TcParams{};
  return tc::measured_hopper_params(*k.numerics.instruction);
}

PredictionRow predict_and_compare(const Kernel& k, const Distribution& d, int M, int N, int K, std::uint64_t seed,
                                  const tc::TcParams& params) {
  const Numerics& n = k.numerics;
  const Matrix A = generate(d, Operand::A, M, K, n.input, seed);
  const Matrix B = generate(d, Operand::B, K, N, n.input, seed);
  TimingOptions opt;
  opt.warmup = 0;
  opt.reps = 1;
  opt.flush_l2 = false;
  const KernelRun run = run_kernel(k, A, B, opt);
  const auto t0 = std::chrono::steady_clock::now();
  const std::vector<double> pred = emulation::emulate(n, A, B, params, 0);
  PredictionRow r;
  r.emulation_seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  r.kernel = k.name;
  r.order = n.describe();
  r.distribution = d.name();
  r.seed = seed;
  r.M = M, r.N = N, r.K = K;
  r.outputs = static_cast<long long>(pred.size());
  r.unwritten = run.unwritten;
  for (std::size_t e = 0; e < pred.size(); ++e) {
    const bool both_nan = std::isnan(pred[e]) && std::isnan(run.c[e]);
    if (both_nan || to_bits(n.output, pred[e]) == to_bits(n.output, run.c[e])) continue;
    if (r.mismatches++ == 0) {
      r.first_i = static_cast<int>(e / N);
      r.first_j = static_cast<int>(e % N);
      r.predicted_bits = hex(to_bits(n.output, pred[e]), n.output);
      r.observed_bits = hex(to_bits(n.output, run.c[e]), n.output);
    }
  }
  return r;
}

int predict_command(const std::vector<std::string>& kernels, const std::vector<std::string>& distributions, int M,
                    int N, int K, std::uint64_t seed, const std::string& out_csv, const std::string& command_line) {
  check_writable(out_csv);
  std::vector<const Kernel*> ks;
  std::vector<tc::TcParams> params;
  for (const std::string& name : kernels) {
    const Kernel* k = find_kernel(name);
    if (!k) throw UsageError("unknown kernel '" + name + "' (`gemmlab list` shows them)");
    auto p = prediction_params(*k);
    if (!p)
      throw UsageError(name + ": gemmlab cannot predict this kernel (" + k->numerics.describe() +
                       "): its order or its instruction's model is not known");
    if (std::string why = check_size(*k, M, N, K); !why.empty()) throw UsageError(why);
    ks.push_back(k);
    params.push_back(*p);
  }
  std::vector<Distribution> ds;
  for (const std::string& name : distributions) {
    try {
      ds.push_back(parse_distribution(name));
    } catch (const std::invalid_argument& e) {
      throw UsageError(e.what());
    }
  }
  const DeviceInfo& dev = query_device();
  if (!dev.present) throw UsageError("gemmlab predict needs a CUDA GPU: " + dev.why_absent);
  for (const Kernel* k : ks)
    if (std::string why = hardware_support(*k, dev); !why.empty()) throw UsageError(std::string(k->name) + ": " + why);
  std::vector<std::vector<std::string>> rows;
  long long total_mismatches = 0;
  for (std::size_t i = 0; i < ks.size(); ++i)
    for (const Distribution& d : ds) {
      PredictionRow r = predict_and_compare(*ks[i], d, M, N, K, seed, params[i]);
      std::printf("[predict] %s [emulation %.1f s]\n", r.summary().c_str(), r.emulation_seconds);
      total_mismatches += r.mismatches;
      rows.push_back(to_fields(r));
    }
  nlohmann::json meta = base_metadata("predict", command_line, out_csv);
  add_device_metadata(meta, dev, software_versions(), current_sm_clock_mhz());
  write_table(out_csv, prediction_columns(), rows, meta);
  std::printf("wrote %s\n", out_csv.c_str());
  return total_mismatches ? 5 : 0;
}

}  // namespace gemmlab
