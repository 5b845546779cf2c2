// `gemmlab run` and `gemmlab list`.
#include "experiments/run.hpp"

#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <ctime>
#include <filesystem>
#include <iostream>
#include <map>
#include <memory>
#include <nlohmann/json.hpp>
#include <set>
#include <sstream>
#include <thread>

#include "experiments/gpu_runner.hpp"
#include "experiments/output.hpp"
#include "kernels/registry.hpp"
#include "reference/error_stats.hpp"
#include "reference/exact_gemm.hpp"
#include "reference/mpfr_gemm.hpp"

namespace fs = std::filesystem;

namespace gemmlab {

const char* git_commit();  // written at build time (cmake/GitVersion.cmake)

ResolvedPlan resolve(const RunPlan& p) {
  ResolvedPlan r;
  std::set<std::string> seen;
  auto add = [&](const Kernel* k) {
    if (seen.insert(k->name).second) r.kernels.push_back(k);
  };
  for (const auto& name : p.kernels) {
    if (name == "all") {
      for (auto* k : all_kernels()) add(k);
    } else if (name.rfind("family:", 0) == 0) {
      std::string fam = name.substr(7);
      bool any = false;
      for (auto* k : all_kernels())
        if (fam == k->family) add(k), any = true;
      if (!any) throw UsageError("no kernel of family '" + fam + "' is registered (`gemmlab list` shows them)");
    } else if (const Kernel* k = find_kernel(name)) {
      add(k);
    } else {
      std::string near;
      for (auto* c : all_kernels())
        if (std::string(c->name).find(name) != std::string::npos) near += std::string(near.empty() ? "" : ", ") + c->name;
      throw UsageError("unknown kernel '" + name + "'" + (near.empty() ? "" : " (did you mean: " + near + "?)") +
                       "; `gemmlab list` shows the " + std::to_string(all_kernels().size()) + " registered kernels");
    }
  }
  for (const auto& name : p.distributions) {
    if (name == "all") {
      for (const auto& d : default_distributions()) r.distributions.push_back(d);
      continue;
    }
    try {
      r.distributions.push_back(parse_distribution(name));
    } catch (const std::invalid_argument& e) {
      throw UsageError(e.what());
    }
  }
  return r;
}

const std::vector<std::string>& csv_columns() {
  static const std::vector<std::string> cols = {
      "kernel", "family", "input_format", "compute_format", "accumulator_format", "output_format", "accumulation",
      "promotion_interval_k", "layout_a", "layout_b", "distribution", "M", "N", "K", "seed", "reference",
      "entries", "zero_reference", "zero_ref_nonzero", "nonfinite", "unwritten", "rel_count",
      "rel_mean", "rel_mean_ci95", "rel_std", "rel_median", "rel_p01", "rel_p99", "rel_max_abs",
      "u_out", "rel_mean_u", "rel_std_u", "rel_median_u", "rel_p01_u", "rel_p99_u", "rel_max_abs_u",
      "normwise", "componentwise", "cw_mean", "cw_mean_ci95", "cw_std", "frac_correctly_rounded", "gamma_bound", "cw_over_gamma", "sqrtk_u",
      "cw_over_sqrtk_u", "time_ms_median", "time_ms_min", "time_ms_max", "reps", "tflops", "sm_clock_mhz",
      "status", "note"};
  return cols;
}

namespace {

// splitmix64: picks the spot-checked entries from the seed.
std::uint64_t mix(std::uint64_t x) {
  x += 0x9e3779b97f4a7c15ull;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
  return x ^ (x >> 31);
}

std::string utc_now(const char* fmt) {
  std::time_t t = std::time(nullptr);
  char buf[64];
  std::strftime(buf, sizeof buf, fmt, std::gmtime(&t));
  return buf;
}

std::string hostname() {
  char buf[256] = {0};
  gethostname(buf, sizeof buf - 1);
  return buf;
}

struct Row {
  std::map<std::string, std::string> f;
  void set(const std::string& k, const std::string& v) { f[k] = v; }
  void set(const std::string& k, double v) { f[k] = fmt_double(v); }
  void set_int(const std::string& k, long long v) { f[k] = std::to_string(v); }
  std::vector<std::string> fields() const {
    std::vector<std::string> out;
    for (const auto& c : csv_columns()) {
      auto it = f.find(c);
      out.push_back(it == f.end() ? "" : it->second);
    }
    return out;
  }
};

Row describe(const Kernel& k, const Distribution& d, const Size& z, std::uint64_t seed) {
  Row r;
  r.set("kernel", k.name);
  r.set("family", k.family);
  r.set("input_format", info(k.input).name);
  r.set("compute_format", info(k.compute).name);
  r.set("accumulator_format", info(k.accumulator).name);
  r.set("output_format", info(k.output).name);
  r.set("accumulation", to_string(k.accumulation));
  r.set_int("promotion_interval_k", k.promotion_interval_k);
  r.set("layout_a", to_string(k.layout_a));
  r.set("layout_b", to_string(k.layout_b));
  r.set("distribution", d.name());
  r.set_int("M", z.M);
  r.set_int("N", z.N);
  r.set_int("K", z.K);
  r.set("seed", std::to_string(seed));
  return r;
}

void put_stats(Row& r, const ErrorStats& s) {
  r.set_int("entries", s.entries);
  r.set_int("zero_reference", s.zero_reference);
  r.set_int("zero_ref_nonzero", s.zero_ref_nonzero);
  r.set_int("nonfinite", s.nonfinite);
  r.set_int("rel_count", s.rel_count);
  r.set("rel_mean", s.rel_mean);
  r.set("rel_mean_ci95", s.rel_mean_ci95);
  r.set("rel_std", s.rel_std);
  r.set("rel_median", s.rel_median);
  r.set("rel_p01", s.rel_p01);
  r.set("rel_p99", s.rel_p99);
  r.set("rel_max_abs", s.rel_max_abs);
  r.set("u_out", s.u_out);
  r.set("rel_mean_u", s.rel_mean_u);
  r.set("rel_std_u", s.rel_std_u);
  r.set("rel_median_u", s.rel_median_u);
  r.set("rel_p01_u", s.rel_p01_u);
  r.set("rel_p99_u", s.rel_p99_u);
  r.set("rel_max_abs_u", s.rel_max_abs_u);
  r.set("normwise", s.normwise);
  r.set("componentwise", s.componentwise);
  r.set("cw_mean", s.cw_mean);
  r.set("cw_mean_ci95", s.cw_mean_ci95);
  r.set("cw_std", s.cw_std);
  r.set("frac_correctly_rounded", s.frac_correctly_rounded);
  r.set("gamma_bound", s.gamma_bound);
  r.set("cw_over_gamma", s.cw_over_gamma);
  r.set("sqrtk_u", s.sqrtk_u);
  r.set("cw_over_sqrtk_u", s.cw_over_sqrtk_u);
}

Format narrowest(Format a, Format b) { return info(a).precision <= info(b).precision ? a : b; }

std::string file_tag(const Distribution& d, const Size& z, std::uint64_t seed, Format in) {
  return d.name() + "_" + z.str() + "_s" + std::to_string(seed) + "_" + info(in).name;
}

// The reference for one problem and output format, with the self-check the plan asks for.
struct RefKey {
  Format out;
  bool operator<(const RefKey& o) const { return out < o.out; }
};

GemmReference compute_reference(const RunPlan& plan, const Matrix& A, const Matrix& B, Format out, int threads,
                                std::uint64_t seed, std::string& label) {
  GemmReference ref = plan.reference == "mpfr" ? mpfr_gemm(A, B, out, threads) : exact_gemm(A, B, out, threads);
  label = ref.engine;
  if (plan.reference == "auto" && plan.spot_checks > 0) {
    // Check the fast engine against MPFR on entries chosen by the seed (STYLE habit 6).
    const long long total = static_cast<long long>(ref.M) * ref.N;
    const int n = static_cast<int>(std::min<long long>(plan.spot_checks, total));
    for (int s = 0; s < n; ++s) {
      const long long idx = static_cast<long long>(mix(seed * 1315423911ull + static_cast<std::uint64_t>(s)) %
                                                   static_cast<std::uint64_t>(total));
      const int i = static_cast<int>(idx / ref.N), j = static_cast<int>(idx % ref.N);
      const double m = mpfr_dot(A, B, i, j);
      if (!(m == ref.c[idx]) && !(std::isnan(m) && std::isnan(ref.c[idx])))
        throw std::runtime_error("reference self-check failed: " + ref.engine + " gives " + fmt_double(ref.c[idx]) +
                                 " for C(" + std::to_string(i) + "," + std::to_string(j) + ") but MPFR gives " +
                                 fmt_double(m) + " (seed " + std::to_string(seed) + "); please report this");
    }
    label += "+mpfr_spot" + std::to_string(n);
  }
  return ref;
}

}  // namespace

int run_experiment(const RunRequest& req) {
  const RunPlan& plan = req.plan;
  validate_numbers(plan);
  ResolvedPlan rp = resolve(plan);

  // Every (kernel, size) pair must fit before anything runs.
  std::string unfit;
  for (const auto& z : plan.sizes)
    for (auto* k : rp.kernels)
      if (std::string why = check_size(*k, z.M, z.N, z.K); !why.empty()) unfit += "\n  " + why;
  if (!unfit.empty())
    throw UsageError("some kernels cannot take the requested sizes:" + unfit +
                     "\nchoose sizes that fit or leave those kernels out");

  std::string out = req.out_csv.empty() ? "results/" + plan.name + "-" + utc_now("%Y%m%dT%H%M%SZ") + ".csv" : req.out_csv;
  if (out.size() < 5 || out.substr(out.size() - 4) != ".csv") throw UsageError("--out must name a .csv file, got '" + out + "'");
  check_writable(out);
  const std::string meta_path = out.substr(0, out.size() - 4) + ".meta.json";
  if (!req.save_matrices.empty()) {
    std::error_code ec;
    if (!fs::is_directory(req.save_matrices, ec))
      throw UsageError("--save-matrices folder '" + req.save_matrices + "' does not exist: create it first");
    check_writable((fs::path(req.save_matrices) / "probe.npy").string());
  }

  const DeviceInfo& dev = query_device();
  if (!dev.present)
    throw UsageError("gemmlab run needs a CUDA GPU, and none is usable here (" + dev.why_absent +
                     "). Run it on a machine with an NVIDIA GPU; `gemmlab list` works without one.");
  for (const auto& z : plan.sizes) {
    const double bytes = 8.0 * (double(z.M) * z.K + double(z.K) * z.N + double(z.M) * z.N) + 2.0 * dev.l2_bytes;
    if (bytes > 0.8 * double(dev.global_mem_bytes))
      throw UsageError("size " + z.str() + " needs about " + std::to_string(long(bytes / 1e9)) + " GB on the GPU, more than " +
                       dev.name + " has free: choose a smaller size");
  }

  const SoftwareVersions sw = software_versions();
  nlohmann::json meta;
  meta["gemmlab_version"] = "0.1";
  meta["git_commit"] = git_commit();
  meta["command_line"] = req.command_line;
  meta["date_utc"] = utc_now("%Y-%m-%dT%H:%M:%SZ");
  meta["host"] = hostname();
  meta["csv"] = fs::path(out).filename().string();
  meta["plan"] = {{"name", plan.name},           {"kernels", plan.kernels}, {"distributions", plan.distributions},
                  {"seeds", plan.seeds},         {"reps", plan.reps},       {"warmup", plan.warmup},
                  {"reference", plan.reference}, {"spot_checks", plan.spot_checks}};
  for (const auto& z : plan.sizes) meta["plan"]["sizes"].push_back({z.M, z.N, z.K});
  meta["gpu"] = {{"name", dev.name},
                 {"compute_capability", std::to_string(dev.cc_major) + "." + std::to_string(dev.cc_minor)},
                 {"sm_count", dev.sm_count},
                 {"l2_bytes", dev.l2_bytes},
                 {"memory_bytes", dev.global_mem_bytes},
                 {"max_sm_clock_mhz", sw.max_sm_clock_mhz},
                 {"sm_clock_mhz_start", current_sm_clock_mhz()}};
  meta["software"] = {{"driver", sw.driver},
                      {"cuda_driver_api", sw.cuda_driver_api},
                      {"cuda_runtime", sw.cuda_runtime},
                      {"cublas", sw.cublas}};
  meta["cpu_threads"] = req.threads ? req.threads : static_cast<int>(std::thread::hardware_concurrency());

  CsvWriter csv(out, csv_columns());
  int errors = 0, rows = 0;
  double ref_seconds = 0;
  TimingOptions topt;
  topt.reps = plan.reps;
  topt.warmup = plan.warmup;

  for (const auto& z : plan.sizes)
    for (const auto& d : rp.distributions)
      for (std::uint64_t seed : plan.seeds) {
        // Kernels grouped by input format: one set of inputs and references per format.
        std::vector<Format> formats;
        for (auto* k : rp.kernels)
          if (std::find(formats.begin(), formats.end(), k->input) == formats.end()) formats.push_back(k->input);
        for (Format in : formats) {
          std::fprintf(stderr, "[gemmlab] %s %s seed %llu, %s inputs\n", d.name().c_str(), z.str().c_str(),
                       static_cast<unsigned long long>(seed), info(in).name);
          if (std::string why = unusable_reason(d, in); !why.empty()) {
            // This distribution cannot be expressed in this input format: say so in every row.
            for (auto* k : rp.kernels) {
              if (k->input != in) continue;
              Row row = describe(*k, d, z, seed);
              row.set("status", "not_applicable");
              row.set("note", why);
              csv.row(row.fields()), ++rows;
            }
            continue;
          }
          const Matrix A = generate(d, Operand::A, z.M, z.K, in, seed, req.threads);
          const Matrix B = generate(d, Operand::B, z.K, z.N, in, seed, req.threads);
          const std::string tag = file_tag(d, z, seed, in);
          if (!req.save_matrices.empty()) {
            write_npy((fs::path(req.save_matrices) / (tag + "_A.npy")).string(), A.v, A.rows, A.cols);
            write_npy((fs::path(req.save_matrices) / (tag + "_B.npy")).string(), B.v, B.rows, B.cols);
          }
          std::map<RefKey, std::pair<GemmReference, std::string>> refs;
          for (auto* k : rp.kernels) {
            if (k->input != in) continue;
            Row row = describe(*k, d, z, seed);
            row.set_int("reps", plan.reps);
            if (std::string why = hardware_support(*k, dev); !why.empty()) {
              row.set("status", "not_supported");
              row.set("note", why);
              csv.row(row.fields()), ++rows;
              continue;
            }
            auto it = refs.find({k->output});
            if (it == refs.end()) {
              std::string label;
              auto t0 = std::chrono::steady_clock::now();
              GemmReference ref = compute_reference(plan, A, B, k->output, req.threads, seed, label);
              ref_seconds += std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
              std::fprintf(stderr, "[gemmlab]   reference (%s, %s out): %.1f s\n", label.c_str(),
                           info(k->output).name, ref.seconds);
              if (!req.save_matrices.empty()) {
                const std::string base = (fs::path(req.save_matrices) / tag).string();
                write_npy(base + "_ref_fp64.npy", ref.c, z.M, z.N);
                write_npy(base + "_ref_rn_" + info(k->output).name + ".npy", ref.c_out, z.M, z.N);
              }
              it = refs.emplace(RefKey{k->output}, std::make_pair(std::move(ref), label)).first;
            }
            const GemmReference& ref = it->second.first;
            row.set("reference", it->second.second);
            // An exact result beyond the output format's range cannot be computed by any kernel.
            const double maxf = info(k->output).max_finite;
            const long long over = std::count_if(ref.c.begin(), ref.c.end(), [&](double c) { return !(std::fabs(c) <= maxf); });
            if (over) {
              row.set("status", "not_applicable");
              row.set("note", std::to_string(over) + " exact entries exceed " + info(k->output).name +
                                  "'s range (max " + fmt_double(maxf) + "): choose a narrower distribution for this output format");
              csv.row(row.fields()), ++rows;
              continue;
            }
            try {
              KernelRun run = run_kernel(*k, A, B, topt);
              row.set_int("unwritten", run.unwritten);
              row.set("time_ms_median", run.time_ms_median);
              row.set("time_ms_min", run.time_ms_min);
              row.set("time_ms_max", run.time_ms_max);
              row.set("tflops", run.tflops);
              row.set_int("sm_clock_mhz", current_sm_clock_mhz());
              ErrorStats s = compute_error_stats(run.c, ref, bound_model(*k, z.K), req.threads);
              put_stats(row, s);
              const bool ok = s.within_bound && run.unwritten == 0;
              // With K u_eff >= 1 there is no deterministic bound: "within" it would be vacuous.
              const bool bounded = std::isfinite(s.gamma_bound);
              row.set("status", !ok ? "failed_bound" : bounded ? "passed" : "no_bound");
              std::string note;
              if (ok && !bounded) note += "K u_eff >= 1: no deterministic bound applies; judge by the statistics; ";
              if (run.unwritten) note += std::to_string(run.unwritten) + " entries left unwritten (NaN poison); ";
              if (!s.within_bound) note += "componentwise error above the gamma_K bound; ";
              if (d.kind == DistKind::exactint)
                if (std::string why = exact_in(d, k->compute, narrowest(k->accumulator, k->output), z.K); !why.empty())
                  note += "exactint not exact here: " + why;
              row.set("note", note);
              if (!req.save_matrices.empty())
                write_npy((fs::path(req.save_matrices) / (tag + "_" + k->name + "_C.npy")).string(), run.c, z.M, z.N);
              std::fprintf(stderr, "[gemmlab]   %-44s %9.3f ms %8.2f TFLOP/s  bias %+.3e  spread %.3e  %s\n", k->name,
                           run.time_ms_median, run.tflops, s.rel_mean, s.rel_std,
                           !ok ? "FAILED_BOUND" : bounded ? "passed" : "no_bound");
            } catch (const std::exception& e) {
              ++errors;
              row.set("status", "error");
              row.set("note", e.what());
              std::fprintf(stderr, "[gemmlab]   %s: error: %s\n", k->name, e.what());
            }
            csv.row(row.fields()), ++rows;
          }
        }
      }

  meta["gpu"]["sm_clock_mhz_end"] = current_sm_clock_mhz();
  meta["rows"] = rows;
  meta["kernel_errors"] = errors;
  meta["reference_seconds"] = ref_seconds;
  meta["columns"] = csv_columns();
  AtomicFile mf(meta_path);
  mf.stream() << meta.dump(2) << "\n";
  csv.commit();
  mf.commit();
  std::fprintf(stderr, "[gemmlab] wrote %s (%d rows) and %s\n", out.c_str(), rows, meta_path.c_str());
  std::printf("%s\n", out.c_str());
  return errors ? 3 : 0;
}

void print_list() {
  std::printf("kernels (%zu):\n", all_kernels().size());
  std::printf("  %-48s %-7s %-5s %-5s %-5s %-5s %-9s %-9s %s\n", "name", "family", "in", "comp", "acc", "out",
              "accum", "multiple", "needs");
  for (auto* k : all_kernels()) {
    std::string mult = std::to_string(k->m_multiple) + "," + std::to_string(k->n_multiple) + "," + std::to_string(k->k_multiple);
    std::string needs = k->requires_sm90a ? "sm_90a" : "cc>=" + std::to_string(k->min_cc / 10) + "." + std::to_string(k->min_cc % 10);
    std::printf("  %-48s %-7s %-5s %-5s %-5s %-5s %-9s %-9s %s\n", k->name, k->family, info(k->input).name,
                info(k->compute).name, info(k->accumulator).name, info(k->output).name, to_string(k->accumulation),
                mult.c_str(), needs.c_str());
  }
  std::printf("\ndistributions (\"all\" runs these; parameters are part of the name):\n");
  for (const auto& d : default_distributions()) std::printf("  %s\n", d.name().c_str());
  std::printf("  forms: uniform_0_1, uniform_-1_1, normal_0_1, logunif_L_H, cancel_E, exactint_R, expspread_PHI\n");
  std::printf("\nsuites:\n");
  for (const auto& s : list_suites()) std::printf("  %s\n", s.c_str());
}

}  // namespace gemmlab
