// The CPU side of the Device interface (device/runner.hpp): exact references on the CPU with their
// MPFR spot checks, and statistics on the host from run()'s output. Devices that keep data on a
// GPU override reference() and measure(); tests' fake devices use these.
#include <chrono>
#include <cmath>
#include <stdexcept>

#include "experiments/device/runner.hpp"
#include "experiments/report/files.hpp"
#include "reference/distributions.hpp"
#include "reference/mpfr_gemm.hpp"
#include "reference/parallel.hpp"
#include "reference/rng.hpp"
#include "reference/quantized.hpp"
#include "reference/scaled_fp8.hpp"

namespace gemmlab {

std::vector<long long> spot_check_entries(int M, int N, int n, std::uint64_t seed) {
  const long long total = static_cast<long long>(M) * N;
  std::vector<long long> v;
  for (int s = 0; s < n; ++s)
    v.push_back(static_cast<long long>(splitmix64(seed * 1315423911ull + static_cast<std::uint64_t>(s)) %
                                       static_cast<std::uint64_t>(total)));
  return v;
}

void spot_check(int M, int N, int K, int n, std::uint64_t seed, const std::string& engine,
                const std::function<void(int, int, Matrix&, Matrix&)>& load, const std::function<double(long long)>& c) {
  // The operands and values are read in this thread (load and c may read a GPU bound to it); the
  // MPFR dot products, independent, run on all cores; the comparison goes in order, so the first
  // disagreement reported is always the same one.
  const std::vector<long long> entries = spot_check_entries(M, N, n, seed);
  std::vector<Matrix> as(entries.size(), Matrix(1, K)), bs(entries.size(), Matrix(K, 1));
  std::vector<double> mpfr(entries.size()), got(entries.size());
  for (std::size_t s = 0; s < entries.size(); ++s) {
    load(static_cast<int>(entries[s] / N), static_cast<int>(entries[s] % N), as[s], bs[s]);
    got[s] = c(entries[s]);
  }
  parallel_for(static_cast<long>(entries.size()), 0, [&](long s) {
    const auto u = static_cast<std::size_t>(s);
    mpfr[u] = mpfr_dot(as[u], bs[u], 0, 0);
  });
  for (std::size_t s = 0; s < entries.size(); ++s) {
    const long long idx = entries[s];
    const int i = static_cast<int>(idx / N), j = static_cast<int>(idx % N);
    const double m = mpfr[s], v = got[s];
    if (!(m == v) && !(std::isnan(m) && std::isnan(v)))
      throw std::runtime_error("reference self-check failed: " + engine + " gives " + fmt_double(v) + " for C(" +
                               std::to_string(i) + "," + std::to_string(j) + ") but MPFR gives " + fmt_double(m) +
                               " (seed " + std::to_string(seed) + "); please report this");
  }
}

void spot_check(const Matrix& A, const Matrix& B, int n, std::uint64_t seed, const std::string& engine,
                const std::function<double(long long)>& c) {
  spot_check(A.rows, B.cols, A.cols, n, seed, engine, [&](int i, int j, Matrix& a, Matrix& b) {
    for (int t = 0; t < A.cols; ++t) a(0, t) = A(i, t), b(t, 0) = B(t, j);
  }, c);
}

namespace {

class HostReference final : public ProblemReference {
 public:
  explicit HostReference(GemmReference r) : ref_(std::move(r)) {}
  long long count_beyond(double max_finite) override {
    long long n = 0;
    for (double c : ref_.c) n += !(std::fabs(c) <= max_finite);
    return n;
  }
  const GemmReference& host() override { return ref_; }

 private:
  GemmReference ref_;
};

}  // namespace

std::unique_ptr<ProblemReference> host_reference(GemmReference r, std::string label) {
  auto ref = std::make_unique<HostReference>(std::move(r));
  ref->label = std::move(label);
  return ref;
}

double ProblemReference::max_abs() {
  double m = 0;
  for (double c : host().c) m = std::fmax(m, std::fabs(c));
  return m;
}

std::unique_ptr<ProblemReference> cpu_reference(const Matrix& A, const Matrix& B, const ReferenceOptions& opt) {
  const auto t0 = std::chrono::steady_clock::now();
  GemmReference r = opt.mode == "mpfr" ? mpfr_gemm(A, B, Format::fp32, opt.threads) : exact_gemm(A, B, Format::fp32, opt.threads);
  std::string label = r.engine;
  const bool checked = opt.mode == "auto" || opt.mode == "cpu" || opt.mode == "gpu";
  if (checked && opt.spot_checks > 0) {
    const int n = static_cast<int>(std::min<long long>(opt.spot_checks, static_cast<long long>(r.M) * r.N));
    spot_check(A, B, n, opt.seed, r.engine, [&](long long idx) { return r.c[static_cast<std::size_t>(idx)]; });
    label += "+mpfr_spot" + std::to_string(n);
  }
  auto ref = std::make_unique<HostReference>(std::move(r));
  ref->label = label;
  ref->seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  return ref;
}

std::string Device::check_memory(int M, int N, int K, Format) {
  const DeviceInfo& dev = info();
  const double bytes = 8.0 * (double(M) * K + double(K) * N + double(M) * N) + 2.0 * dev.l2_bytes;
  if (bytes <= 0.8 * double(dev.global_mem_bytes)) return {};
  return "size " + std::to_string(M) + "x" + std::to_string(N) + "x" + std::to_string(K) + " needs about " +
         std::to_string(long(bytes / 1e9)) + " GB on the GPU, more than " + dev.name + " has: choose a smaller size";
}

HostInputs::HostInputs(Matrix a, Matrix b, Format f) : a_(std::move(a)), b_(std::move(b)) {
  M = a_.rows, K = a_.cols, N = b_.cols;
  format = f;
}

std::unique_ptr<ProblemInputs> Device::inputs(const Distribution& d, int M, int N, int K, Format in,
                                              std::uint64_t seed, int threads) {
  const auto t0 = std::chrono::steady_clock::now();
  auto p = std::make_unique<HostInputs>(generate(d, Operand::A, M, K, in, seed, threads),
                                        generate(d, Operand::B, K, N, in, seed, threads), in);
  p->seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  return p;
}

std::unique_ptr<ProblemReference> Device::reference(ProblemInputs& in, const ReferenceOptions& opt) {
  if (opt.mode == "gpu") throw std::runtime_error("--reference gpu: this device has no GPU reference engine");
  return cpu_reference(in.A(), in.B(), opt);
}

KernelRun Device::run_scaled(const Kernel& k, const Matrix&, const Matrix&, const OperandScales&, const TimingOptions&) {
  throw std::runtime_error(std::string(k.name) + " is a scaled fp8 kernel and this device cannot run scaled kernels");
}

namespace {

// make_scaled_problem's matrices on the host (members in the order they are made from it).
class HostScaledInputs final : public ScaledInputs {
 public:
  HostScaledInputs(ScaledProblem p, const ScaleRecipe& r)
      : sources_(std::move(p.A0), std::move(p.B0), Format::fp32),
        dequantized_(p.A.dequantized(), p.B.dequantized(), Format::fp64),
        scales_{kernel_scales(p.A, Operand::A, r.a), kernel_scales(p.B, Operand::B, r.b)},
        qa_(std::move(p.A.q)),
        qb_(std::move(p.B.q)) {
    M = sources_.M, N = sources_.N, K = sources_.K;
    recipe = r;
  }
  ProblemInputs& sources() override { return sources_; }
  ProblemInputs& dequantized() override { return dequantized_; }
  const Matrix& q(Operand which) override { return which == Operand::A ? qa_ : qb_; }
  const OperandScales& scales() override { return scales_; }

 private:
  HostInputs sources_, dequantized_;
  OperandScales scales_;
  Matrix qa_, qb_;
};

}  // namespace

std::unique_ptr<ScaledInputs> Device::scaled_inputs(const Distribution& d, int M, int N, int K, std::uint64_t seed,
                                                    int threads) {
  const auto t0 = std::chrono::steady_clock::now();
  ScaledProblem problem = make_scaled_problem(d, M, N, K, seed, threads);  // throws for d without a recipe
  auto p = std::make_unique<HostScaledInputs>(std::move(problem), *d.recipe);
  p->seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  return p;
}

Measurement Device::measure_scaled(const Kernel& k, ScaledInputs& in, ProblemReference& gemm_ref,
                                   ProblemReference& total_ref, const TimingOptions& opt, const BoundModel& model,
                                   int threads) {
  Measurement m;
  m.run = run_scaled(k, in.q(Operand::A), in.q(Operand::B), in.scales(), opt);
  const auto t0 = std::chrono::steady_clock::now();
  m.stats = compute_error_stats(m.run.c, gemm_ref.host(), k.numerics.output, model, threads);
  m.total = compute_error_stats(m.run.c, total_ref.host(), k.numerics.output, model, threads);
  m.stats_seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  m.run.c.clear();
  return m;
}

ErrorStats Device::quantization_error(ProblemReference& gemm_ref, ProblemReference& total_ref, Format out,
                                      const BoundModel& model, int threads) {
  return compute_error_stats(gemm_ref.host().c, total_ref.host(), out, model, threads);
}

namespace {

// make_quantized_problem's matrices on the host.
class HostQuantizedInputs final : public QuantizedInputs {
 public:
  HostQuantizedInputs(QuantizedProblem p, const QuantRecipe& r)
      : sources_(std::move(p.A0), std::move(p.B0), Format::fp32),
        dequantized_(p.A.dequantized(), p.B.dequantized(), Format::fp64),
        a_(std::move(p.A)),
        b_(std::move(p.B)) {
    M = sources_.M, N = sources_.N, K = sources_.K;
    recipe = r;
  }
  ProblemInputs& sources() override { return sources_; }
  ProblemInputs& dequantized() override { return dequantized_; }
  const QuantizedOperand& host(Operand which) override { return which == Operand::A ? a_ : b_; }
  bool exact_in(Format f) override {
    return all_representable(dequantized_.A(), f) && all_representable(dequantized_.B(), f);
  }

 private:
  HostInputs sources_, dequantized_;
  QuantizedOperand a_, b_;
};

}  // namespace

std::unique_ptr<QuantizedInputs> Device::quantized_inputs(const Distribution& d, int M, int N, int K,
                                                          std::uint64_t seed, int threads) {
  const auto t0 = std::chrono::steady_clock::now();
  QuantizedProblem problem = make_quantized_problem(d, M, N, K, seed, threads);  // throws for d without a recipe
  auto p = std::make_unique<HostQuantizedInputs>(std::move(problem), *d.quant);
  p->seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  return p;
}

KernelRun Device::run_quantized(const Kernel& k, const QuantizedOperand&, const QuantizedOperand&, const TimingOptions&) {
  throw std::runtime_error(std::string(k.name) + " is a quantized kernel and this device cannot run quantized kernels");
}

Measurement Device::measure_quantized(const Kernel& k, QuantizedInputs& in, ProblemReference& gemm_ref,
                                      ProblemReference& total_ref, const TimingOptions& opt, const BoundModel& model,
                                      int threads) {
  Measurement m;
  m.run = run_quantized(k, in.host(Operand::A), in.host(Operand::B), opt);
  const auto t0 = std::chrono::steady_clock::now();
  m.stats = compute_error_stats(m.run.c, gemm_ref.host(), k.numerics.output, model, threads);
  m.total = compute_error_stats(m.run.c, total_ref.host(), k.numerics.output, model, threads);
  m.stats_seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  m.run.c.clear();
  return m;
}

Measurement Device::measure(const Kernel& k, ProblemInputs& in, ProblemReference& ref, const TimingOptions& opt,
                            const BoundModel& model, bool keep_output, int threads) {
  Measurement m;
  m.run = run(k, in.A(), in.B(), opt);
  const auto t0 = std::chrono::steady_clock::now();
  m.stats = compute_error_stats(m.run.c, ref.host(), k.numerics.output, model, threads);
  m.stats_seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  if (!keep_output) m.run.c.clear();
  return m;
}

}  // namespace gemmlab
