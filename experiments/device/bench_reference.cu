// `gemmlab bench-reference` (see bench_reference.hpp).
#include "experiments/device/bench_reference.hpp"

#include <cuda_runtime.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <random>

#include "experiments/device/error_stats_gpu.hpp"
#include "experiments/device/exact_reference_gpu.hpp"
#include "experiments/device/runner.hpp"
#include "experiments/report/files.hpp"
#include "experiments/report/metadata.hpp"
#include "kernels/common/cuda_check.cuh"
#include "reference/distributions.hpp"
#include "reference/error_stats.hpp"
#include "reference/exact_gemm.hpp"

namespace gemmlab {
namespace {

double seconds_since(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

// A matrix widened to fp32 on the GPU (every gemmlab input format is a subset of fp32).
struct DeviceFloats {
  float* p = nullptr;
  explicit DeviceFloats(const Matrix& X) {
    std::vector<float> f(X.v.begin(), X.v.end());
    GEMMLAB_CUDA_CHECK(cudaMalloc(&p, std::max<std::size_t>(f.size(), 1) * sizeof(float)));
    GEMMLAB_CUDA_CHECK(cudaMemcpy(p, f.data(), f.size() * sizeof(float), cudaMemcpyHostToDevice));
  }
  ~DeviceFloats() { cudaFree(p); }
  DeviceFloats(const DeviceFloats&) = delete;
  DeviceFloats& operator=(const DeviceFloats&) = delete;
};

bool same_reference(const GemmReference& a, const GemmReference& b) {
  return a.c == b.c && a.c_odd == b.c_odd && a.abs_ab == b.abs_ab && a.c_out == b.c_out;
}

bool same_stats(const ErrorStats& a, const ErrorStats& b) {
  bool same = a.within_bound == b.within_bound;
#define GEMMLAB_SAME(type, name, doc) \
  same = same && std::bit_cast<std::uint64_t>(static_cast<double>(a.name)) == std::bit_cast<std::uint64_t>(static_cast<double>(b.name));
  GEMMLAB_ERROR_STATS_FIELDS(GEMMLAB_SAME)
#undef GEMMLAB_SAME
  return same;
}

}  // namespace

int bench_reference(const BenchReferenceOptions& opt, const std::string& command_line) {
  long cpu_up_to = -1;  // -1: every size
  if (opt.cpu == "none")
    cpu_up_to = 0;
  else if (opt.cpu != "all") {
    try {
      cpu_up_to = std::stol(opt.cpu);
    } catch (...) {
      throw UsageError("--cpu must be all, none or a size N (the CPU engine at sizes up to N^3), got '" + opt.cpu + "'");
    }
  }
  // Whether the CPU engine times size z (--cpu).
  const auto cpu_times = [cpu_up_to](const Size& z) {
    return cpu_up_to < 0 || (cpu_up_to > 0 && long(z.M) * z.N * z.K <= cpu_up_to * cpu_up_to * cpu_up_to);
  };
  // Without the GPU engine, the CPU's is all there is to time: a plan where it times no size measures nothing.
  if (!opt.gpu && opt.stats_n <= 0) {
    if (std::none_of(opt.sizes.begin(), opt.sizes.end(), cpu_times))
      throw UsageError(cpu_up_to == 0 ? std::string("--no-gpu with --cpu none times nothing: give --cpu all or N")
                                      : "--no-gpu with --cpu " + opt.cpu + " times nothing: no size given is at most " +
                                            opt.cpu + "^3; give --cpu all, a larger N, or a smaller -s");
  }
  std::vector<Distribution> dists;
  for (const std::string& name : opt.distributions) {
    if (name == "all") {
      for (const auto& d : default_distributions()) dists.push_back(d);
      continue;
    }
    try {
      dists.push_back(parse_distribution(name));
    } catch (const std::invalid_argument& e) {
      throw UsageError(e.what());
    }
  }
  check_writable(opt.out_csv);  // after the options: a mistake in them is named before the output folder
  const DeviceInfo& dev = query_device();
  if (opt.gpu && !dev.present)
    throw UsageError("bench-reference times the GPU engine, and no GPU is usable here (" + dev.why_absent +
                     "); add --no-gpu to time the CPU engine alone");
  if (opt.gpu) {
    for (const Size& z : opt.sizes)
      for (Format in : opt.formats) {
        const std::size_t need = device::gpu_oracle_bytes(z.M, z.N, z.K, in);
        if (need > static_cast<std::size_t>(dev.global_mem_bytes))
          throw UsageError("size " + z.str() + " in " + info(in).name + " may need " + std::to_string(need >> 30) +
                           " GiB for the GPU reference, more than " + dev.name + " has; the largest square size that " +
                           "fits is " + std::to_string(device::gpu_oracle_max_square(in, dev.global_mem_bytes)));
      }
    const Matrix a = generate(parse_distribution("normal_0_1"), Operand::A, 256, 256, Format::fp16, 1);
    device::exact_gemm_gpu_host(a, a, Format::fp32);  // warm-up: cuBLAS handle, CUB, module load
  }

  std::vector<std::vector<std::string>> rows;
  int differ = 0;
  auto row = [&](const char* what, const std::string& dist, Format in, const Size& z, const std::string& engine,
                 double s, const std::string& upload, const std::string& compute, const std::string& da,
                 const std::string& db, const std::string& speedup, const std::string& same,
                 const std::string& split = "", const std::string& gemms = "") {
    rows.push_back({what, dist, info(in).name, std::to_string(z.M), std::to_string(z.N), std::to_string(z.K), engine,
                    fmt_double(s), upload, compute, da, db, speedup, same, split, gemms});
  };
  for (const Size& z : opt.sizes)
    for (Format in : opt.formats)
      for (const Distribution& d : dists) {
        if (!unusable_reason(d, in).empty()) continue;
        const Matrix A = generate(d, Operand::A, z.M, z.K, in, 1, opt.threads);
        const Matrix B = generate(d, Operand::B, z.K, z.N, in, 1, opt.threads);
        const bool cpu = cpu_times(z);
        GemmReference c;
        double tc = 0;
        if (cpu) {
          const auto t0 = std::chrono::steady_clock::now();
          c = exact_gemm(A, B, Format::fp32, opt.threads);
          tc = seconds_since(t0);
          row("reference", d.name(), in, z, c.engine, tc, "", "", "", "", "", "");
        }
        double t_gpu = 0;
        if (opt.gpu) {
          // Two calls, the faster reported (the first may include one-off allocations).
          double best = 1e30;
          device::GpuReferenceTiming tbest;
          int da = 0, db = 0, gemms = 0;
          std::string split;
          GemmReference g;
          for (int rep = 0; rep < 2; ++rep) {
            const auto t0 = std::chrono::steady_clock::now();
            device::GpuReference r = device::exact_gemm_gpu(A, B);
            const double t = seconds_since(t0);
            if (t < best) best = t, tbest = r.timing;
            da = r.digits_a, db = r.digits_b, split = r.split, gemms = r.gemms;
            if (rep == 1 && cpu) g = r.to_host(Format::fp32);
          }
          // The resident rows start from fp32 operands on the GPU (what `gemmlab run` has for every format
          // within fp32); fp64 operands are uploaded as binary64, which the row above times.
          const bool within_fp32 = info(in).precision <= 24;
          double resident = 1e30;
          if (within_fp32) {
            const DeviceFloats a(A), b(B);
            for (int rep = 0; rep < 2; ++rep) {
              const auto t0 = std::chrono::steady_clock::now();
              device::GpuReference r = device::exact_gemm_gpu_device(a.p, b.p, z.M, z.N, z.K);
              resident = std::min(resident, seconds_since(t0));
            }
          }
          t_gpu = within_fp32 ? resident : best;
          std::string same = "not_checked";
          if (cpu) {
            same = same_reference(g, c) ? "yes" : "NO";
            differ += same == "NO";
          }
          row("reference", d.name(), in, z, "gpu_int8_ozaki", best, fmt_double(tbest.upload), fmt_double(tbest.compute),
              std::to_string(da), std::to_string(db), cpu ? fmt_double(tc / best) : "", same, split,
              std::to_string(gemms));
          if (within_fp32)
            row("reference", d.name(), in, z, "gpu_int8_ozaki_resident", resident, "0", "", std::to_string(da),
                std::to_string(db), cpu ? fmt_double(tc / resident) : "", same, split, std::to_string(gemms));
        }
        std::fprintf(stderr, "[bench-reference] %-16s %-5s %s: cpu %s  gpu (operands on the GPU) %s\n",
                     d.name().c_str(), info(in).name, z.str().c_str(), cpu ? (fmt_double(tc) + " s").c_str() : "-",
                     opt.gpu ? (fmt_double(t_gpu) + " s").c_str() : "-");
      }
  if (opt.stats_n > 0) {
    const Size z{opt.stats_n, opt.stats_n, 256};
    const Distribution d = parse_distribution("normal_0_1");
    const Matrix A = generate(d, Operand::A, z.M, z.K, Format::fp32, 1);
    const Matrix B = generate(d, Operand::B, z.K, z.N, Format::fp32, 1);
    const GemmReference ref = exact_gemm(A, B, Format::fp32, opt.threads);
    // A kernel-like output: the correctly rounded value moved by a seeded number of ulps.
    std::vector<double> x = ref.c_out;
    std::mt19937_64 gen(1);
    for (double& v : x) v = round_to(Format::fp32, v * (1 + std::ldexp(double(gen() % 7) - 3, -24)));
    BoundModel m;
    m.K = z.K;
    const auto t0 = std::chrono::steady_clock::now();
    const ErrorStats cs = compute_error_stats(x, ref, Format::fp32, m, opt.threads);
    const double tc = seconds_since(t0);
    row("statistics", d.name(), Format::fp32, z, "cpu", tc, "", "", "", "", "", "");
    if (opt.gpu) {
      const device::GpuReference g = device::exact_gemm_gpu(A, B);
      device::GpuStatsTiming tg;
      device::compute_error_stats_gpu(x, g, Format::fp32, m, &tg);  // warm-up (CUB temporary sizes)
      double best = 1e30;
      ErrorStats gs;
      for (int rep = 0; rep < 3; ++rep) {
        gs = device::compute_error_stats_gpu(x, g, Format::fp32, m, &tg);
        best = std::min(best, tg.total);
      }
      const bool same = same_stats(gs, cs);
      differ += !same;
      row("statistics", d.name(), Format::fp32, z, "gpu", best, "", "", "", "", fmt_double(tc / best), same ? "yes" : "NO");
    }
  }
  nlohmann::json meta = base_metadata("bench-reference", command_line, opt.out_csv);
  add_device_metadata(meta, dev, software_versions(), dev.present ? current_sm_clock_mhz() : -1);
  meta["seed"] = 1;
  meta["cpu_threads"] = opt.threads;
  meta["notes"] = "GPU rows: the faster of two calls after a warm-up; the resident rows start from fp32 operands "
                  "already on the GPU, as gemmlab run has them. statistics rows: one (n, n) output of K = 256; the GPU "
                  "time includes the upload of the computed output.";
  write_table(opt.out_csv,
              {"what", "distribution", "input", "M", "N", "K", "engine", "seconds", "gpu_upload_s", "gpu_compute_s",
               "digits_a", "digits_b", "speedup_vs_cpu", "bit_identical_to_cpu", "split", "gemms"},
              rows, meta);
  std::printf("%s\n", opt.out_csv.c_str());
  return differ ? 5 : 0;
}

}  // namespace gemmlab
