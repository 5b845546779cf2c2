// `gemmlab port` (see port.hpp).
#include "experiments/engine/port.hpp"

#include <algorithm>
#include <atomic>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <set>
#include <sstream>
#include <stdexcept>
#include <mutex>
#include <thread>

#include <nlohmann/json.hpp>

#include "experiments/engine/files.hpp"
#include "experiments/report/files.hpp"
#include "experiments/report/metadata.hpp"
#include "experiments/report/numerics_json.hpp"
#include "reference/distributions.hpp"
#include "reference/exact_gemm.hpp"
#include "reference/kernel_emulation.hpp"
#include "reference/rng.hpp"
#include "reference/tree_form.hpp"

namespace gemmlab {

namespace {

std::string gpu_names_of(tc::Generation g) {
  std::string s;
  for (const tc::GpuName& n : tc::gpu_names())
    if (n.generation == g) s += (s.empty() ? "" : " ") + std::string(n.name);
  return s;
}

std::string num(double x) {
  std::ostringstream s;
  s.precision(6);
  s << x;
  return s.str();
}

// How one kernel is predicted on one generation: the instruction its nodes use there and that
// instruction's model, or why it cannot be.
struct Plan {
  std::string status = "ported";
  std::optional<tc::Instruction> instruction;
  tc::TcParams params;
  std::string assumption, note;
};

Plan plan_for(const PortKernel& k, tc::Generation g) {
  Plan p;
  const Numerics& n = k.numerics;
  if (n.accumulation == Accumulation::fma) {  // CUDA cores: IEEE fp32 (fp64) FMA on every generation
    p.note = "CUDA-core FMA: the same IEEE arithmetic on every generation";
    return p;
  }
  if (!n.instruction) {
    p.status = "not_portable";
    p.note = "the record names no tensor-core instruction";
    return p;
  }
  const std::optional<tc::Instruction> ins = tc::closest_instruction(g, *n.instruction);
  if (!ins) {
    p.status = "no_instruction";
    p.note = std::string(tc::to_string(g)) + " has no tensor-core instruction taking " + info(n.compute).name +
             " operands to " + info(tc::info(*n.instruction).output).name;
    return p;
  }
  p.instruction = ins;
  p.params = *tc::generation_params(g, *ins);
  if (*ins != *n.instruction)
    p.assumption = std::string(tc::info(*n.instruction).name) + " does not exist on " + tc::to_string(g) +
                   ": assumed compiled to " + tc::info(*ins).name;
  if (tc::info(*ins).k != tc::info(*n.instruction).k)
    p.assumption += std::string(p.assumption.empty() ? "" : "; ") + "its k is " + std::to_string(tc::info(*ins).k) +
                    ", not " + std::to_string(tc::info(*n.instruction).k);
  return p;
}

// The kernel's output at entries (i, j) under `plan` on a and b already converted as the kernel
// converts them (compute-format values).
struct Predictor {
  const PortKernel& k;
  Plan plan;
  std::optional<SummationTree> tree;

  Predictor(const PortKernel& kk, const Plan& pl, int K) : k(kk), plan(pl) {
    if (k.numerics.accumulation == Accumulation::tree) tree = parse_compact_form(k.numerics.tree, K);
  }

  double operator()(const double* a, const double* b, int K) const {
    const Numerics& n = k.numerics;
    if (tree) {
      const tc::TcParams p = plan.params;
      const int node_k = plan.instruction ? tc::info(*k.numerics.instruction).k : 0;
      const emulation::NodeModel model = [&](int leaves) -> std::optional<tc::TcParams> {
        if (leaves == node_k) return p;
        return std::nullopt;
      };
      return emulation::emulate_tree_dot(*tree, model, a, b);
    }
    Numerics o = n;
    if (plan.instruction && tc::info(*plan.instruction).k != tc::info(*n.instruction).k) o.k_step = tc::info(*plan.instruction).k;
    return emulation::emulate_dot(o, a, b, K, plan.params);
  }
  // The kernel's output: the accumulator's value written to the output format to nearest even (as
  // explain's composition predicts it; a no-op where the accumulator is the output format).
  double output(const double* a, const double* b, int K) const {
    const double v = (*this)(a, b, K);
    if (std::isnan(v)) return v;
    const double r = tc::round_to_format(k.numerics.output, v, Rounding::nearest_even);
    return r == 0 ? std::copysign(0.0, v) : r;
  }
};

struct Stats {
  long long n = 0, zero = 0;
  double sum = 0, sum2 = 0;
  void add(double rel) {
    ++n;
    sum += rel;
    sum2 += rel * rel;
  }
  double mean() const { return n ? sum / n : 0; }
  double stdev() const { return n > 1 ? std::sqrt(std::max(0.0, (sum2 - sum * sum / n) / (n - 1))) : 0; }
};

}  // namespace

const std::vector<std::string>& port_columns() {
  static const std::vector<std::string> c = {
      "kernel", "origin", "from", "gpu", "gpu_names", "distribution", "M", "N", "K", "seed", "status",
      "instruction_from", "instruction", "assumption", "model_source", "entries", "changed", "changed_fraction",
      "bias_u", "spread_u", "bias_u_from", "spread_u_from", "measured_bias_u", "measured_spread_u", "entries_zero", "note"};
  return c;
}

std::vector<std::string> to_fields(const PortRow& r) {
  const bool numbers = r.status == "ported" || r.status == "same_model";
  return {r.kernel, r.origin, r.from, r.gpu, r.gpu_names, r.distribution, std::to_string(r.M), std::to_string(r.N),
          std::to_string(r.K), std::to_string(r.seed), r.status, r.instruction_from, r.instruction, r.assumption,
          r.model_source, std::to_string(r.entries), numbers ? std::to_string(r.changed) : "",
          numbers ? num(r.changed_fraction) : "", numbers ? num(r.bias_u) : "", numbers ? num(r.spread_u) : "",
          num(r.bias_u_from), num(r.spread_u_from), r.measured_bias_u ? num(*r.measured_bias_u) : "",
          r.measured_spread_u ? num(*r.measured_spread_u) : "", std::to_string(r.entries_zero), r.note};
}

std::vector<PortRow> port(const std::vector<PortKernel>& kernels, const PortOptions& o) {
  if (o.M < 1 || o.N < 1 || o.K < 1) throw std::invalid_argument("port: M, N and K must be positive");
  if (o.entries < 1) throw std::invalid_argument("port: --entries (entries) must be at least 1");
  std::vector<Distribution> dists;
  for (const std::string& d : o.distributions) dists.push_back(parse_distribution(d));
  const unsigned threads = o.threads > 0 ? static_cast<unsigned>(o.threads) : std::max(1u, std::thread::hardware_concurrency());
  // The entries, seeded: the same for every kernel, distribution and GPU.
  const long long total = static_cast<long long>(o.M) * o.N;
  const long long n_entries = std::min<long long>(o.entries, total);
  std::vector<std::pair<int, int>> entries;
  {
    std::set<long long> picked;
    SplitMix rng{o.seed ^ 0x706f7274ull};  // "port"
    while (static_cast<long long>(picked.size()) < n_entries)
      picked.insert(n_entries == total ? static_cast<long long>(picked.size())
                                       : static_cast<long long>(rng.next() % static_cast<std::uint64_t>(total)));
    for (long long e : picked) entries.emplace_back(static_cast<int>(e / o.N), static_cast<int>(e % o.N));
  }
  std::vector<PortRow> rows;
  for (const PortKernel& k : kernels) {
    if (k.numerics.split.pieces > 1)
      throw std::invalid_argument(k.name + ": split operands (" + k.numerics.describe() +
                                  ") are not ported yet: each piece's product would move with the node");
    if (!k.numerics.predictable() && k.numerics.accumulation != Accumulation::tree)
      throw std::invalid_argument(k.name + ": its numerics (" + k.numerics.describe() +
                                  ") cannot be predicted, so they cannot be ported");
    // A named order's instruction takes K in steps of k_step products: at another K its order is not the
    // kernel's, and the predictions would be of no kernel (no kernel runs there either).
    if (k.numerics.accumulation != Accumulation::tree) {
      const int step = std::max(1, k.numerics.k_step);
      if (o.K % step != 0)
        throw std::invalid_argument(k.name + ": its numerics (" + k.numerics.describe() + ") take K in multiples of " +
                                    std::to_string(step) + "; K = " + std::to_string(o.K) +
                                    " is not one: port at a size the kernel runs (e.g. -s 4096)");
    }
    if (k.numerics.accumulation == Accumulation::tree) {
      if (!k.numerics.instruction)
        throw std::invalid_argument(k.name + ": a revealed tree without fused nodes sums on CUDA cores; nothing moves");
      try {
        (void)parse_compact_form(k.numerics.tree, o.K);
      } catch (const std::invalid_argument& e) {
        throw std::invalid_argument(k.name + ": its tree was revealed at another K than " + std::to_string(o.K) +
                                    " (port at the size it was explained at): " + e.what());
      }
    }
    std::vector<tc::Generation> targets = o.targets;
    if (targets.empty())
      for (tc::Generation g : tc::all_generations())
        if (g != k.from) targets.push_back(g);
    const Plan home = plan_for(k, k.from);
    if (home.status != "ported")
      throw std::invalid_argument(k.name + ": cannot be predicted on its own generation (" + tc::to_string(k.from) +
                                  "): " + home.note);
    const Format in = k.numerics.input, out = k.numerics.output;
    const double u = info(out).unit_roundoff;
    for (const Distribution& d : dists) {
      if (std::string why = unusable_reason(d, in); !why.empty())
        throw std::invalid_argument(k.name + ", distribution " + d.name() + ": " + why);
      // A's rows and B's columns at the entries, as the kernel's multiplier sees them.
      const Matrix A = generate(d, Operand::A, o.M, o.K, in, o.seed, o.threads);
      const Matrix B = generate(d, Operand::B, o.K, o.N, in, o.seed, o.threads);
      const std::size_t ne = entries.size();
      std::vector<double> exact(ne);
      std::vector<std::vector<double>> a_rows(ne), b_cols(ne);
      for (std::size_t e = 0; e < ne; ++e) {
        const auto [i, j] = entries[e];
        exact[e] = exact_dot(A, B, i, j);
        a_rows[e].resize(o.K);
        b_cols[e].resize(o.K);
        for (int t = 0; t < o.K; ++t) {
          a_rows[e][t] = explain::convert(k.conversion_a, A(i, t));
          b_cols[e][t] = explain::convert(k.conversion_b, B(t, j));
        }
      }
      const auto predict_all = [&](const Plan& plan) {
        std::vector<double> outv(ne);
        const Predictor pred(k, plan, o.K);
        std::atomic<std::size_t> next{0};
        std::vector<std::thread> pool;
        std::exception_ptr err;
        std::mutex err_mu;
        for (unsigned w = 0; w < threads; ++w)
          pool.emplace_back([&] {
            try {
              for (std::size_t e = next++; e < ne; e = next++) outv[e] = pred.output(a_rows[e].data(), b_cols[e].data(), o.K);
            } catch (...) {
              std::lock_guard<std::mutex> lock(err_mu);
              err = std::current_exception();
            }
          });
        for (auto& t : pool) t.join();
        if (err) std::rethrow_exception(err);
        return outv;
      };
      const auto stats_of = [&](const std::vector<double>& v) {
        Stats s;
        for (std::size_t e = 0; e < ne; ++e) {
          if (exact[e] == 0 || !std::isfinite(exact[e]) || !std::isfinite(v[e])) {
            ++s.zero;
            continue;
          }
          s.add((v[e] - exact[e]) / std::fabs(exact[e]) / u);
        }
        return s;
      };
      const std::vector<double> base = predict_all(home);
      const Stats sb = stats_of(base);
      const auto measured = k.measured.find(d.name());
      for (tc::Generation g : targets) {
        PortRow r;
        r.kernel = k.name;
        r.origin = k.origin;
        r.from = tc::to_string(k.from);
        r.gpu = tc::to_string(g);
        r.gpu_names = gpu_names_of(g);
        r.distribution = d.name();
        r.M = o.M, r.N = o.N, r.K = o.K;
        r.seed = o.seed;
        r.instruction_from = home.instruction ? tc::info(*home.instruction).name : "fma";
        r.entries = static_cast<long long>(ne);
        r.bias_u_from = sb.mean();
        r.spread_u_from = sb.stdev();
        if (measured != k.measured.end()) {
          r.measured_bias_u = measured->second.first;
          r.measured_spread_u = measured->second.second;
        }
        const Plan plan = plan_for(k, g);
        r.status = plan.status;
        r.assumption = plan.assumption;
        r.note = plan.note;
        r.instruction = plan.instruction ? tc::info(*plan.instruction).name : (plan.status == "ported" ? "fma" : "");
        if (plan.instruction) r.model_source = tc::to_string(tc::provenance(g, *plan.instruction).source);
        else if (plan.status == "ported") r.model_source = "ieee";
        if (plan.status == "ported") {
          if (plan.instruction && home.instruction && plan.params == home.params) r.status = "same_model";
          const std::vector<double> v = r.status == "same_model" ? base : predict_all(plan);
          for (std::size_t e = 0; e < ne; ++e)
            r.changed += !(v[e] == base[e] && std::signbit(v[e]) == std::signbit(base[e])) &&
                         !(std::isnan(v[e]) && std::isnan(base[e]));
          r.changed_fraction = static_cast<double>(r.changed) / static_cast<double>(ne);
          const Stats s = stats_of(v);
          r.bias_u = s.mean();
          r.spread_u = s.stdev();
          r.entries_zero = s.zero;
        }
        rows.push_back(std::move(r));
      }
    }
  }
  return rows;
}

std::map<std::string, std::pair<double, double>> measured_from_csv(const std::string& csv_path, const std::string& kernel) {
  std::map<std::string, std::pair<double, double>> m;
  const engine::CsvRecords csv = engine::parse_csv(engine::read_file(csv_path));
  if (csv.records.empty()) return m;
  const std::vector<std::string>& h = csv.records[0];
  const auto col = [&](const char* name) -> int {
    const auto it = std::find(h.begin(), h.end(), name);
    return it == h.end() ? -1 : static_cast<int>(it - h.begin());
  };
  const int ck = col("kernel"), cd = col("distribution"), cm = col("rel_mean_u"), cs = col("rel_std_u");
  if (ck < 0 || cd < 0 || cm < 0 || cs < 0)
    throw std::invalid_argument(csv_path + ": needs the columns kernel, distribution, rel_mean_u, rel_std_u (a run or "
                                "judged CSV of gemmlab's)");
  for (std::size_t r = 1; r < csv.records.size(); ++r) {
    const std::vector<std::string>& rec = csv.records[r];
    if (static_cast<int>(rec.size()) <= std::max({ck, cd, cm, cs}) || rec[ck] != kernel) continue;
    if (m.count(rec[cd]) || rec[cm].empty() || rec[cs].empty()) continue;
    try {
      m[rec[cd]] = {std::stod(rec[cm]), std::stod(rec[cs])};
    } catch (const std::exception&) {
    }
  }
  return m;
}

PortKernel port_kernel_from_explain(const std::string& path) {
  std::string meta = path;
  if (meta.size() > 4 && meta.substr(meta.size() - 4) == ".csv") meta = metadata_path(meta);
  std::ifstream f(meta);
  if (!f) throw std::invalid_argument(meta + ": cannot read it (give the .meta.json or the CSV that explain wrote)");
  nlohmann::json j;
  try {
    j = nlohmann::json::parse(f);
  } catch (const std::exception& e) {
    throw std::invalid_argument(meta + ": not JSON: " + e.what());
  }
  if (!j.contains("report")) throw std::invalid_argument(meta + ": no 'report': not the metadata of gemmlab explain");
  const nlohmann::json& r = j.at("report");
  if (!r.value("identified", false) || !r.contains("numerics") || r.at("numerics").is_null())
    throw std::invalid_argument(meta + ": the kernel was not identified (" + r.value("reason", std::string("no numerics")) +
                                "): there is nothing to port");
  PortKernel k;
  try {
    k.numerics = numerics_from_json(r.at("numerics"));
  } catch (const std::invalid_argument& e) {
    throw std::invalid_argument(meta + ": " + e.what());
  }
  if (r.contains("conversion")) {
    const nlohmann::json& c = r.at("conversion");
    for (auto [key, dst] : {std::pair{"a", &k.conversion_a}, std::pair{"b", &k.conversion_b}}) {
      const std::string v = c.value(key, std::string("as_is"));
      const auto conv = explain::parse_conversion(v);
      if (!conv) throw std::invalid_argument(meta + ": conversion." + key + " '" + v + "' is not one explain writes");
      *dst = *conv;
    }
  }
  // The kernel's name: the CSV's kernel column, else the command line's.
  k.name = std::filesystem::path(meta).stem().stem().string();
  if (j.contains("csv")) {
    const std::filesystem::path csv = std::filesystem::path(meta).parent_path() / j.at("csv").get<std::string>();
    try {
      const engine::CsvRecords rec = engine::parse_csv(engine::read_file(csv.string()));
      if (rec.records.size() > 1 && !rec.records[0].empty() && rec.records[0][0] == "kernel") k.name = rec.records[1][0];
    } catch (const std::exception&) {
    }
  }
  k.origin = meta;
  int cc = 90;
  if (j.contains("gpu") && j.at("gpu").contains("compute_capability")) {
    const std::string s = j.at("gpu").at("compute_capability").get<std::string>();
    const auto dot = s.find('.');
    if (dot != std::string::npos) cc = std::stoi(s.substr(0, dot)) * 10 + std::stoi(s.substr(dot + 1));
  }
  const std::optional<tc::Generation> g = tc::generation_of_cc(cc);
  if (!g)
    throw std::invalid_argument(meta + ": explained on a GPU of compute capability " + std::to_string(cc / 10) + "." +
                                std::to_string(cc % 10) + ", which gemmlab has no model for");
  k.from = *g;
  // The judged rows beside it: <stem>_judged.csv.
  std::string stem = meta.substr(0, meta.size() - std::string(".meta.json").size());
  const std::string judged = stem + "_judged.csv";
  if (std::filesystem::exists(judged)) k.measured = measured_from_csv(judged, k.name);
  return k;
}

void write_port_csv(const std::vector<PortRow>& rows, const std::string& out_csv, const std::string& command_line,
                    const PortOptions& o) {
  std::vector<std::vector<std::string>> fields;
  for (const PortRow& r : rows) fields.push_back(to_fields(r));
  nlohmann::json meta = base_metadata("port", command_line, out_csv);
  meta["entries_per_distribution"] = o.entries;
  meta["seed"] = o.seed;
  meta["model"] = "tc::generation_params (reference/tc_gpus.hpp); the kernel's numerics kept, its nodes moved";
  meta["bias_u"] = "mean of (predicted - exact) / |exact| over the sampled entries, in units of the output's u";
  nlohmann::json models = nlohmann::json::object();
  for (tc::Generation g : tc::all_generations()) models[tc::to_string(g)] = gpu_names_of(g);
  meta["generations"] = models;
  write_table(out_csv, port_columns(), fields, meta);
}

}  // namespace gemmlab
