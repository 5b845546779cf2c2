// `gemmlab run`: the experiment loop (see run.hpp).
#include "experiments/engine/run.hpp"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <map>
#include <set>
#include <thread>

#include "experiments/report/files.hpp"
#include "experiments/report/metadata.hpp"
#include "kernels/registry.hpp"
#include "reference/error_stats.hpp"
#include "reference/mpfr_gemm.hpp"
#include "reference/rng.hpp"

namespace fs = std::filesystem;

namespace gemmlab {

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

GemmReference compute_reference(const RunPlan& plan, const Matrix& A, const Matrix& B, Format out, int threads,
                                std::uint64_t seed, std::string& label) {
  GemmReference ref = plan.reference == "mpfr" ? mpfr_gemm(A, B, out, threads) : exact_gemm(A, B, out, threads);
  label = ref.engine;
  if (plan.reference == "auto" && plan.spot_checks > 0) {
    // Check the fast engine against MPFR on entries chosen by the seed (STYLE habit 6).
    const long long total = static_cast<long long>(ref.M) * ref.N;
    const int n = static_cast<int>(std::min<long long>(plan.spot_checks, total));
    for (int s = 0; s < n; ++s) {
      const long long idx = static_cast<long long>(splitmix64(seed * 1315423911ull + static_cast<std::uint64_t>(s)) %
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

namespace {

Format narrowest(Format a, Format b) { return info(a).precision <= info(b).precision ? a : b; }

std::string file_tag(const Distribution& d, const Size& z, std::uint64_t seed, Format in) {
  return d.name() + "_" + z.str() + "_s" + std::to_string(seed) + "_" + info(in).name;
}

// Everything a run needs to know before the first row: checked plan, output paths, device.
struct Prepared {
  ResolvedPlan rp;
  std::string out, meta_path;
};

Prepared prepare(const RunRequest& req, Device& device) {
  const RunPlan& plan = req.plan;
  validate_numbers(plan);
  Prepared p;
  p.rp = resolve(plan);
  // Every (kernel, size) pair must fit before anything runs.
  std::string unfit;
  for (const auto& z : plan.sizes)
    for (auto* k : p.rp.kernels)
      if (std::string why = check_size(*k, z.M, z.N, z.K); !why.empty()) unfit += "\n  " + why;
  if (!unfit.empty())
    throw UsageError("some kernels cannot take the requested sizes:" + unfit +
                     "\nchoose sizes that fit or leave those kernels out");

  p.out = req.out_csv.empty() ? "results/" + plan.name + "-" + utc_now("%Y%m%dT%H%M%SZ") + ".csv" : req.out_csv;
  if (p.out.size() < 5 || p.out.substr(p.out.size() - 4) != ".csv")
    throw UsageError("--out must name a .csv file, got '" + p.out + "'");
  check_writable(p.out);
  p.meta_path = metadata_path(p.out);
  if (!req.save_matrices.empty()) {
    std::error_code ec;
    if (!fs::is_directory(req.save_matrices, ec))
      throw UsageError("--save-matrices folder '" + req.save_matrices + "' does not exist: create it first");
    check_writable((fs::path(req.save_matrices) / "probe.npy").string());
  }

  const DeviceInfo& dev = device.info();
  if (!dev.present)
    throw UsageError("gemmlab run needs a CUDA GPU, and none is usable here (" + dev.why_absent +
                     "). Run it on a machine with an NVIDIA GPU; `gemmlab list` works without one.");
  for (const auto& z : plan.sizes) {
    const double bytes = 8.0 * (double(z.M) * z.K + double(z.K) * z.N + double(z.M) * z.N) + 2.0 * dev.l2_bytes;
    if (bytes > 0.8 * double(dev.global_mem_bytes))
      throw UsageError("size " + z.str() + " needs about " + std::to_string(long(bytes / 1e9)) + " GB on the GPU, more than " +
                       dev.name + " has free: choose a smaller size");
  }
  return p;
}

nlohmann::json plan_metadata(const RunRequest& req, const Prepared& p, Device& device) {
  const RunPlan& plan = req.plan;
  nlohmann::json meta = base_metadata("run", req.command_line, p.out);
  meta["plan"] = {{"name", plan.name},           {"kernels", plan.kernels}, {"distributions", plan.distributions},
                  {"seeds", plan.seeds},         {"reps", plan.reps},       {"warmup", plan.warmup},
                  {"reference", plan.reference}, {"spot_checks", plan.spot_checks}};
  for (const auto& z : plan.sizes) meta["plan"]["sizes"].push_back({z.M, z.N, z.K});
  add_device_metadata(meta, device.info(), device.software(), device.sm_clock_mhz());
  meta["cpu_threads"] = req.threads ? req.threads : static_cast<int>(std::thread::hardware_concurrency());
  return meta;
}

// The references of one problem, one per output format, computed when a kernel first needs one.
class ReferenceCache {
 public:
  ReferenceCache(const RunRequest& req, const Matrix& A, const Matrix& B, const Size& z, std::uint64_t seed,
                 std::string tag)
      : req_(req), A_(A), B_(B), z_(z), seed_(seed), tag_(std::move(tag)) {}

  const std::pair<GemmReference, std::string>& get(Format out) {
    auto it = refs_.find(out);
    if (it != refs_.end()) return it->second;
    std::string label;
    const auto t0 = std::chrono::steady_clock::now();
    GemmReference ref = compute_reference(req_.plan, A_, B_, out, req_.threads, seed_, label);
    seconds_ += std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    std::fprintf(stderr, "[gemmlab]   reference (%s, %s out): %.1f s\n", label.c_str(), info(out).name, ref.seconds);
    if (!req_.save_matrices.empty()) {
      const std::string base = (fs::path(req_.save_matrices) / tag_).string();
      write_npy(base + "_ref_fp64.npy", ref.c, z_.M, z_.N);
      write_npy(base + "_ref_rn_" + info(out).name + ".npy", ref.c_out, z_.M, z_.N);
    }
    return refs_.emplace(out, std::make_pair(std::move(ref), label)).first->second;
  }
  double seconds() const { return seconds_; }

 private:
  const RunRequest& req_;
  const Matrix& A_;
  const Matrix& B_;
  Size z_;
  std::uint64_t seed_;
  std::string tag_;
  std::map<Format, std::pair<GemmReference, std::string>> refs_;
  double seconds_ = 0;
};

}  // namespace

void judge(ResultRow& row, const ErrorStats& s, const Distribution& d, const Numerics& n) {
  const bool ok = s.within_bound && s.unwritten == 0;
  // With K u_eff >= 1 there is no deterministic bound: "within" it would be vacuous.
  const bool bounded = std::isfinite(s.gamma_bound);
  row.status = !ok ? Status::failed_bound : bounded ? Status::passed : Status::no_bound;
  std::string note;
  if (ok && !bounded) note += "K u_eff >= 1: no deterministic bound applies; judge by the statistics; ";
  if (s.unwritten) note += std::to_string(s.unwritten) + " entries left unwritten (NaN poison); ";
  if (s.bound_violations)
    note += std::to_string(s.bound_violations) + " entries above the bound gamma_K |A||B| + underflow term; ";
  if (s.subnormal_reference)
    note += std::to_string(s.subnormal_reference) +
            " exact entries below the output's normal range, left out of the relative errors; ";
  if (d.kind == DistKind::exactint)
    if (std::string why = exact_in(d, n.compute, narrowest(n.accumulator, n.output), row.K); !why.empty())
      note += "exactint not exact here: " + why;
  row.note = note;
}

int run_experiment(const RunRequest& req, Device& device) {
  const RunPlan& plan = req.plan;
  const Prepared p = prepare(req, device);
  nlohmann::json meta = plan_metadata(req, p, device);

  CsvWriter csv(p.out, result_columns());
  auto emit = [&](const ResultRow& r) { csv.row(to_fields(r)); };
  int errors = 0, rows = 0;
  double ref_seconds = 0;
  TimingOptions topt;
  topt.reps = plan.reps;
  topt.warmup = plan.warmup;

  // Kernels grouped by input format: one set of inputs per format.
  std::vector<Format> formats;
  for (auto* k : p.rp.kernels)
    if (std::find(formats.begin(), formats.end(), k->numerics.input) == formats.end())
      formats.push_back(k->numerics.input);

  for (const auto& z : plan.sizes)
    for (const auto& d : p.rp.distributions)
      for (std::uint64_t seed : plan.seeds)
        for (Format in : formats) {
          std::fprintf(stderr, "[gemmlab] %s %s seed %llu, %s inputs\n", d.name().c_str(), z.str().c_str(),
                       static_cast<unsigned long long>(seed), info(in).name);
          auto kernels_of_format = [&](auto&& fn) {
            for (auto* k : p.rp.kernels)
              if (k->numerics.input == in) fn(*k);
          };
          if (std::string why = unusable_reason(d, in); !why.empty()) {
            // This distribution cannot be expressed in this input format: say so in every row.
            kernels_of_format([&](const Kernel& k) {
              ResultRow row = describe(k, d.name(), z.M, z.N, z.K, seed);
              row.status = Status::not_applicable;
              row.note = why;
              emit(row), ++rows;
            });
            continue;
          }
          const Matrix A = generate(d, Operand::A, z.M, z.K, in, seed, req.threads);
          const Matrix B = generate(d, Operand::B, z.K, z.N, in, seed, req.threads);
          const std::string tag = file_tag(d, z, seed, in);
          if (!req.save_matrices.empty()) {
            write_npy((fs::path(req.save_matrices) / (tag + "_A.npy")).string(), A.v, A.rows, A.cols);
            write_npy((fs::path(req.save_matrices) / (tag + "_B.npy")).string(), B.v, B.rows, B.cols);
          }
          ReferenceCache refs(req, A, B, z, seed, tag);
          kernels_of_format([&](const Kernel& k) {
            ResultRow row = describe(k, d.name(), z.M, z.N, z.K, seed);
            row.reps = plan.reps;
            if (std::string why = device.hardware_support(k); !why.empty()) {
              row.status = Status::not_supported;
              row.note = why;
              emit(row), ++rows;
              return;
            }
            const auto& [ref, label] = refs.get(k.numerics.output);
            row.reference = label;
            // An exact result beyond the output format's range cannot be computed by any kernel.
            const double maxf = info(k.numerics.output).max_finite;
            const long long over =
                std::count_if(ref.c.begin(), ref.c.end(), [&](double c) { return !(std::fabs(c) <= maxf); });
            if (over) {
              row.status = Status::not_applicable;
              row.note = std::to_string(over) + " exact entries exceed " + info(k.numerics.output).name +
                         "'s range (max " + fmt_double(maxf) + "): choose a narrower distribution for this output format";
              emit(row), ++rows;
              return;
            }
            try {
              KernelRun run = device.run(k, A, B, topt);
              row.timing = Timing{run.time_ms_median, run.time_ms_min, run.time_ms_max, run.tflops, device.sm_clock_mhz()};
              row.stats = compute_error_stats(run.c, ref, bound_model(k.numerics, z.K), req.threads);
              judge(row, *row.stats, d, k.numerics);
              if (!req.save_matrices.empty())
                write_npy((fs::path(req.save_matrices) / (tag + "_" + k.name + "_C.npy")).string(), run.c, z.M, z.N);
              std::fprintf(stderr, "[gemmlab]   %-44s %9.3f ms %8.2f TFLOP/s  bias %+.3e  spread %.3e  %s\n", k.name,
                           run.time_ms_median, run.tflops, row.stats->rel_mean, row.stats->rel_std,
                           row.status == Status::failed_bound ? "FAILED_BOUND" : to_string(row.status));
            } catch (const std::exception& e) {
              ++errors;
              row.status = Status::error;
              row.note = e.what();
              std::fprintf(stderr, "[gemmlab]   %s: error: %s\n", k.name, e.what());
            }
            emit(row), ++rows;
          });
          ref_seconds += refs.seconds();
        }

  meta["gpu"]["sm_clock_mhz_end"] = device.sm_clock_mhz();
  meta["rows"] = rows;
  meta["kernel_errors"] = errors;
  meta["reference_seconds"] = ref_seconds;
  meta["columns"] = result_columns();
  AtomicFile mf(p.meta_path);
  mf.stream() << meta.dump(2) << "\n";
  csv.commit();
  mf.commit();
  std::fprintf(stderr, "[gemmlab] wrote %s (%d rows) and %s\n", p.out.c_str(), rows, p.meta_path.c_str());
  std::printf("%s\n", p.out.c_str());
  return errors ? 3 : 0;
}

}  // namespace gemmlab
