// `gemmlab predict` (see predict.hpp).
#include "experiments/device/predict.hpp"

#include "reference/scaled_fp8.hpp"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <map>
#include <sstream>

#include "experiments/device/order.hpp"
#include "experiments/device/runner.hpp"
#include "experiments/engine/plugin.hpp"
#include "experiments/plan/plan.hpp"
#include "experiments/report/files.hpp"
#include "experiments/report/metadata.hpp"
#include "kernels/registry.hpp"
#include "reference/kernel_emulation.hpp"
#include "reference/tc_gpus.hpp"

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
  static const std::vector<std::string> c = {
      "kernel",  "order_source",   "order",         "distribution", "seed",         "M",
      "N",       "K",              "outputs",       "mismatches",   "first_i",      "first_j",
      "predicted_bits", "observed_bits", "tree_entries", "trees_agree", "chunked_tiles"};
  return c;
}

std::vector<std::string> to_fields(const PredictionRow& r) {
  const bool any = r.mismatches > 0;
  const bool measured = r.order_source == "measured";
  return {r.kernel,
          r.order_source,
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
          r.observed_bits,
          r.tree_entries,
          measured ? (r.trees_agree ? "true" : "false") : "",
          std::to_string(r.chunked_tiles)};
}

std::optional<tc::TcParams> prediction_params(const Kernel& k) {
  if (!k.numerics.predictable()) return std::nullopt;
  if (k.numerics.accumulation == Accumulation::fma) return tc::TcParams{};
  return tc::model_params(*k.numerics.instruction);
}

namespace {

// Runs k once on the inputs (with their scale grids for a scaled kernel) and fills the comparison
// part of a row against `pred`.
void compare(const Kernel& k, const Matrix& A, const Matrix& B, const std::vector<double>& pred, PredictionRow& r,
             const OperandScales* scales = nullptr) {
  const Numerics& n = k.numerics;
  TimingOptions opt;
  opt.warmup = 0;
  opt.reps = 1;
  opt.flush_l2 = false;
  const KernelRun run = run_kernel(k, A, B, opt, 0, scales);
  r.outputs = static_cast<long long>(pred.size());
  r.unwritten = run.unwritten;
  for (std::size_t e = 0; e < pred.size(); ++e) {
    const bool both_nan = std::isnan(pred[e]) && std::isnan(run.c[e]);
    if (both_nan || to_bits(n.output, pred[e]) == to_bits(n.output, run.c[e])) continue;
    if (r.mismatches++ == 0) {
      r.first_i = static_cast<int>(e / r.N);
      r.first_j = static_cast<int>(e % r.N);
      r.predicted_bits = hex(to_bits(n.output, pred[e]), n.output);
      r.observed_bits = hex(to_bits(n.output, run.c[e]), n.output);
    }
  }
}

PredictionRow row_head(const Kernel& k, const Distribution& d, int M, int N, int K, std::uint64_t seed) {
  PredictionRow r;
  r.kernel = k.name;
  r.distribution = d.name();
  r.seed = seed;
  r.M = M, r.N = N, r.K = K;
  return r;
}

double seconds_since(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

}  // namespace

std::vector<Numerics> scaled_candidate_orders(const Kernel& k) {
  std::vector<Numerics> out;
  const bool blocks = k.scale_a == ScaleGranularity::k128 || k.scale_b == ScaleGranularity::k128 ||
                      k.scale_a == ScaleGranularity::blk128 || k.scale_b == ScaleGranularity::blk128;
  // Per-block application, promoted every 128 of K: the block recipes' only choice, and a candidate
  // for the tensor and rowwise modes too (a library may run them through its block-scaled kernel).
  for (ScaleApplication a : {ScaleApplication::block_fma, ScaleApplication::block_mul_mul,
                             ScaleApplication::block_mul_mul_ba, ScaleApplication::block_mul_fma_a,
                             ScaleApplication::block_mul_fma_b}) {
    Numerics n = wgmma_f32_numerics(k.numerics.input, 128);
    n.scale_application = a;
    out.push_back(n);
  }
  if (!blocks) {
    for (int interval : {0, 128})
      for (ScaleApplication a : {ScaleApplication::epilogue, ScaleApplication::epilogue_mul_mul,
                                 ScaleApplication::epilogue_mul_mul_ba}) {
        Numerics n = wgmma_f32_numerics(k.numerics.input, interval);
        n.scale_application = a;
        out.push_back(n);
      }
  }
  return out;
}

namespace {

// Scaled fp8: the quantized problem of d (with its recipe), the kernel run with its scale grids and
// compared with the emulation of `order` (the kernel's own, or a candidate for a library's).
PredictionRow predict_scaled(const Kernel& k, const Numerics& order, const Distribution& d, int M, int N, int K,
                             std::uint64_t seed, const tc::TcParams& params, const ScaledProblem& sp) {
  PredictionRow r = row_head(k, d, M, N, K, seed);
  r.order_source = order.scale_application == k.numerics.scale_application ? "numerics" : "candidate";
  r.order = order.describe();
  const auto t0 = std::chrono::steady_clock::now();
  const std::vector<double> pred = emulation::emulate_scaled(order, sp.A, sp.B, params, 0);
  r.emulation_seconds = seconds_since(t0);
  const OperandScales scales{kernel_scales(sp.A, Operand::A, d.recipe->a), kernel_scales(sp.B, Operand::B, d.recipe->b)};
  compare(k, sp.A.q, sp.B.q, pred, r, &scales);
  return r;
}

}  // namespace

PredictionRow predict_and_compare(const Kernel& k, const Distribution& d, int M, int N, int K, std::uint64_t seed,
                                  const tc::TcParams& params) {
  const Numerics& n = k.numerics;
  if (d.recipe) return predict_scaled(k, n, d, M, N, K, seed, params, make_scaled_problem(d, M, N, K, seed));
  const Matrix A = generate(d, Operand::A, M, K, n.input, seed);
  const Matrix B = generate(d, Operand::B, K, N, n.input, seed);
  PredictionRow r = row_head(k, d, M, N, K, seed);
  r.order_source = "numerics";
  r.order = n.describe();
  std::optional<KChunkMap> chunks;
  if (n.k_chunked) {
    if (!k.k_chunks) throw std::runtime_error(std::string(k.name) + ": k_chunked but no chunk map in its descriptor");
    chunks = k.k_chunks(M, N, K);
    for (const std::vector<int>& cuts : chunks->bounds) r.chunked_tiles += cuts.size() > 2;
  }
  const auto t0 = std::chrono::steady_clock::now();
  const std::vector<double> pred = emulation::emulate(n, A, B, params, 0, chunks ? &*chunks : nullptr);
  r.emulation_seconds = seconds_since(t0);
  compare(k, A, B, pred, r);
  return r;
}

std::vector<std::pair<int, int>> default_tree_entries(int M, int N) {
  std::vector<std::pair<int, int>> e = {{0, 0}, {M / 2 + 1 < M ? M / 2 + 1 : M - 1, N / 2 + 3 < N ? N / 2 + 3 : N - 1},
                                        {M - 1, N - 1}};
  std::sort(e.begin(), e.end());
  e.erase(std::unique(e.begin(), e.end()), e.end());
  return e;
}

std::string measured_order_gap(const Kernel& k) {
  const Numerics& n = k.numerics;
  if (n.accumulation != Accumulation::library)
    return "only library kernels are predicted through a measured order (this one declares " +
           std::string(to_string(n.accumulation)) + ")";
  if (n.input != n.compute)
    return std::string("its operands are converted from ") + info(n.input).name + " to " + info(n.compute).name +
           " in a way gemmlab has not measured";
  if (n.accumulator != Format::fp32 || n.output != Format::fp32)
    return "a measured order is composed with fp32 running sums and output only";
  return "";
}

MeasuredOrder measure_order(const Kernel& k, int M, int N, int K, const std::vector<std::pair<int, int>>& entries) {
  MeasuredOrder m;
  std::string first;
  for (const auto& [i, j] : entries) {
    if (i < 0 || i >= M || j < 0 || j >= N)
      throw UsageError("tree entry (" + std::to_string(i) + ", " + std::to_string(j) + ") lies outside the (" +
                       std::to_string(M) + ", " + std::to_string(N) + ") output");
    RevealedTree t = reveal_tree(k, M, N, K, i, j);
    m.runs += t.runs;
    m.seconds += t.seconds;
    m.entries += (m.entries.empty() ? "" : " ") + std::to_string(i) + ":" + std::to_string(j);
    if (first.empty()) {
      first = t.tree.canonical();
      m.tree = std::move(t.tree);
    } else if (t.tree.canonical() != first) {
      m.agree = false;
      std::printf("[predict] %s: the tree at (%d, %d) differs from the one at (%d, %d): %s\n", k.name, i, j,
                  entries.front().first, entries.front().second, describe(t.tree).c_str());
    }
  }
  if (std::string gap = emulation::tree_gap(m.tree, k.numerics.compute); !gap.empty())
    throw std::runtime_error(std::string(k.name) + ": the revealed tree cannot be composed with the tensor-core model: " +
                             gap + " (tree: " + describe(m.tree) + ")");
  return m;
}

PredictionRow predict_measured(const Kernel& k, const Distribution& d, int M, int N, int K, std::uint64_t seed,
                               const MeasuredOrder& order) {
  const Numerics& n = k.numerics;
  const Matrix A = generate(d, Operand::A, M, K, n.input, seed);
  const Matrix B = generate(d, Operand::B, K, N, n.input, seed);
  PredictionRow r = row_head(k, d, M, N, K, seed);
  r.order_source = "measured";
  r.order = describe(order.tree);
  r.tree_entries = order.entries;
  r.trees_agree = order.agree;
  const auto t0 = std::chrono::steady_clock::now();
  const std::vector<double> pred = emulation::emulate_tree(order.tree, n.compute, A, B, 0);
  r.emulation_seconds = seconds_since(t0);
  compare(k, A, B, pred, r);
  return r;
}

int predict_command(const std::vector<std::string>& kernels, const std::vector<std::string>& distributions, int M,
                    int N, int K, std::uint64_t seed, const std::string& out_csv, const std::string& command_line,
                    const std::vector<std::pair<int, int>>& tree_entries, const std::string& gpu) {
  // The tensor-core model: this GPU's generation, or --gpu's (a GPU gemmlab has no model for needs it).
  if (const DeviceInfo& dev = query_device(); dev.present) {
    const tc::DeviceModel m = tc::select_device_model(dev.cc(), dev.name, gpu);
    if (!m.ok) throw UsageError(m.message);
    tc::apply_model(m);
    std::fprintf(stderr, "[gemmlab] %s\n", m.message.c_str());
  } else if (!gpu.empty() && !tc::parse_gpu(gpu)) {
    throw UsageError("--gpu " + gpu + ": not a GPU gemmlab models; use one of " + tc::gpu_name_help());
  }
  std::vector<const Kernel*> ks;
  std::vector<std::optional<tc::TcParams>> params;  // nullopt: through a measured order
  for (const std::string& name : kernels) {
    const Kernel* k = find_kernel(name);
    if (!k) throw UsageError("unknown kernel '" + name + "' (`gemmlab list` shows them)");
    auto p = prediction_params(*k);
    const bool scaled = k->scale_a != ScaleGranularity::none;
    if (!p && scaled) p = tc::model_params(*scaled_candidate_orders(*k).front().instruction);
    if (!p) {
      if (std::string gap = measured_order_gap(*k); !gap.empty())
        throw UsageError(name + ": gemmlab cannot predict this kernel (" + k->numerics.describe() + "): " + gap);
    }
    if (std::string why = check_size(*k, M, N, K); !why.empty()) throw UsageError(why);
    ks.push_back(k);
    params.push_back(p);
  }
  std::vector<Distribution> ds;
  for (const std::string& name : distributions) {
    try {
      ds.push_back(parse_distribution(name));
    } catch (const std::invalid_argument& e) {
      throw UsageError(e.what());
    }
  }
  // A scaled kernel takes only distributions of its recipe's granularities, an unscaled one none.
  for (const Kernel* k : ks)
    for (const Distribution& d : ds) {
      const bool scaled = k->scale_a != ScaleGranularity::none;
      if (d.quant)
        throw UsageError(std::string(k->name) + " reads plain operands, so it cannot be predicted on the quantized " +
                         d.name() + ": predict it on " + d.source().name());
      if (!scaled && d.recipe)
        throw UsageError(std::string(k->name) + " takes no scales, so it cannot be predicted on " + d.name() +
                         ": predict it on the distribution without '@" + d.recipe->name() + "'");
      if (scaled && (!d.recipe || d.recipe->a != k->scale_a || d.recipe->b != k->scale_b ||
                     d.recipe->fp8 != k->numerics.input))
        throw UsageError(std::string(k->name) + " takes " + info(k->numerics.input).name + " with " +
                         to_string(k->scale_a) + " x " + to_string(k->scale_b) + " scales; " + d.name() +
                         " does not give them: name a distribution with a matching recipe (SOURCE@RECIPE)");
    }
  // The quantized problems of scaled distributions, made before anything runs: data a recipe
  // refuses (an all-zero block, ...) is bad input, named before the GPU and with nothing written.
  std::map<std::string, ScaledProblem> scaled_problems;
  for (const Distribution& d : ds)
    if (d.recipe) try {
        scaled_problems.emplace(d.name(), make_scaled_problem(d, M, N, K, seed));
      } catch (const std::invalid_argument& e) {
        throw UsageError(d.name() + " at " + std::to_string(M) + "x" + std::to_string(N) + "x" + std::to_string(K) +
                         ": " + e.what());
      }
  const std::vector<std::pair<int, int>> entries = tree_entries.empty() ? default_tree_entries(M, N) : tree_entries;
  for (const auto& [i, j] : entries)
    if (i < 0 || i >= M || j < 0 || j >= N)
      throw UsageError("--tree-entries: (" + std::to_string(i) + ", " + std::to_string(j) + ") lies outside the (" +
                       std::to_string(M) + ", " + std::to_string(N) + ") output");
  check_writable(out_csv);  // after the arguments: a mistake in them is named before the output folder
  const DeviceInfo& dev = query_device();
  if (!dev.present) throw UsageError("gemmlab predict needs a CUDA GPU: " + dev.why_absent);
  for (const Kernel* k : ks)
    if (std::string why = hardware_support(*k, dev); !why.empty()) throw UsageError(std::string(k->name) + ": " + why);
  std::vector<std::vector<std::string>> rows;
  long long total_mismatches = 0;
  for (std::size_t i = 0; i < ks.size(); ++i) {
    if (ks[i]->scale_a != ScaleGranularity::none) {
      // A scaled kernel: its own order (gemmlab's kernels), or every candidate (a library's).
      const bool own = ks[i]->numerics.scale_application != ScaleApplication::none;
      const std::vector<Numerics> orders = own ? std::vector<Numerics>{ks[i]->numerics} : scaled_candidate_orders(*ks[i]);
      for (const Distribution& d : ds) {
        const ScaledProblem& sp = scaled_problems.at(d.name());
        long long best = -1;
        for (const Numerics& o : orders) {
          PredictionRow r;
          try {
            r = predict_scaled(*ks[i], o, d, M, N, K, seed, *params[i], sp);
          } catch (const KernelNotSupported& e) {
            // The library offers no algorithm for this problem here: nothing to predict, nothing written.
            std::fprintf(stderr, "gemmlab predict: %s is not supported here: %s\n", ks[i]->name, e.what());
            return 4;
          }
          std::printf("[predict] %s [emulation %.1f s]\n", r.summary().c_str(), r.emulation_seconds);
          best = best < 0 ? r.mismatches : std::min(best, r.mismatches);
          rows.push_back(to_fields(r));
        }
        if (!own)
          std::printf("[predict] %s on %s: %s\n", ks[i]->name, d.name().c_str(),
                      best == 0 ? "a candidate order matched every output bit for bit"
                                : "no candidate order matched: its order is none of them");
        total_mismatches += best;
      }
      continue;
    }
    std::optional<MeasuredOrder> measured;
    if (!params[i]) {
      try {
        measured = measure_order(*ks[i], M, N, K, entries);
      } catch (const std::runtime_error& e) {
        if (dynamic_cast<const UsageError*>(&e)) throw;
        // Not a fault of the request: the library's order could not be revealed or composed here.
        std::fprintf(stderr, "gemmlab predict: %s\n", e.what());
        return 4;
      }
      std::printf("[predict] %s: order revealed at %s in %lld kernel runs (%.1f s)%s: %s\n", ks[i]->name,
                  measured->entries.c_str(), measured->runs, measured->seconds,
                  measured->agree ? ", the same tree at each" : ", TREES DIFFER", describe(measured->tree).c_str());
    }
    for (const Distribution& d : ds) {
      PredictionRow r = measured ? predict_measured(*ks[i], d, M, N, K, seed, *measured)
                                 : predict_and_compare(*ks[i], d, M, N, K, seed, *params[i]);
      std::printf("[predict] %s [emulation %.1f s]\n", r.summary().c_str(), r.emulation_seconds);
      total_mismatches += r.mismatches;
      rows.push_back(to_fields(r));
    }
  }
  nlohmann::json meta = base_metadata("predict", command_line, out_csv);
  add_device_metadata(meta, dev, software_versions(), current_sm_clock_mhz());
  if (nlohmann::json plugins = plugins_metadata(kernels); !plugins.empty()) meta["plugins"] = plugins;
  write_table(out_csv, prediction_columns(), rows, meta);
  std::printf("wrote %s\n", out_csv.c_str());
  return total_mismatches ? 5 : 0;
}

}  // namespace gemmlab
