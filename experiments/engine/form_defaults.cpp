// The CPU side of the Device interface for forms (device/runner.hpp, reference/gemm_form.hpp): operands made
// on the host, the exact reference of the augmented products with its MPFR spot checks, statistics on the
// host from run_form's output. The GPU overrides form_inputs, form_reference and measure_form
// (experiments/device/form_gpu.cu); tests' fake devices use these.
#include <chrono>
#include <stdexcept>

#include "experiments/device/runner.hpp"
#include "reference/gemm_form.hpp"

namespace gemmlab {

namespace {
double seconds_since(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}
}  // namespace

HostFormInputs::HostFormInputs(FormOperands o) : o_(std::move(o)) {
  form = o_.form;
  shape = o_.shape;
  input = o_.input;
  epilogue = o_.epilogue;
}

std::unique_ptr<ProblemReference> cpu_form_reference(const FormOperands& o, const ReferenceOptions& opt) {
  const auto t0 = std::chrono::steady_clock::now();
  // c_out is asked for fp32; every output format rounds once from c_odd (exact_gemm.hpp).
  GemmReference r = exact_form(o, Format::fp32, opt.threads, opt.mode == "mpfr");
  std::string label = r.engine;
  const bool checked = opt.mode == "auto" || opt.mode == "cpu" || opt.mode == "gpu";
  if (checked && opt.spot_checks > 0) {
    const int n = static_cast<int>(std::min<long long>(opt.spot_checks, static_cast<long long>(r.M) * r.N));
    spot_check(r.M, r.N, augmented_depth(o.form, o.shape), n, opt.seed, r.engine,
               [&](int i, int j, Matrix& a, Matrix& b) {
                 const int t = part_of_row(o.shape, i);
                 augmented_line(o, t, i - o.shape.part_row0[t], j, a, b);
               },
               [&](long long idx) { return r.c[static_cast<std::size_t>(idx)]; });
    label += "+mpfr_spot" + std::to_string(n);
  }
  auto ref = host_reference(std::move(r), label);
  ref->seconds = seconds_since(t0);
  return ref;
}

std::unique_ptr<FormInputs> Device::form_inputs(const Distribution& d, const GemmForm& f, const FormShape& s,
                                                Format in, const Epilogue& e, std::uint64_t seed, int threads) {
  const auto t0 = std::chrono::steady_clock::now();
  auto p = std::make_unique<HostFormInputs>(make_form_operands(f, s, d, in, e, seed, threads));
  p->seconds = seconds_since(t0);
  return p;
}

std::unique_ptr<ProblemReference> Device::form_reference(FormInputs& in, const ReferenceOptions& opt) {
  if (opt.mode == "gpu") throw std::runtime_error("--reference gpu: this device has no GPU reference engine");
  return cpu_form_reference(in.host(), opt);
}

KernelRun Device::run_form(const Kernel& k, FormInputs& in, const TimingOptions&) {
  throw std::runtime_error(std::string(k.name) + " on form " + in.form.name() + ": this device cannot run forms");
}

Measurement Device::measure_form(const Kernel& k, FormInputs& in, ProblemReference& ref, const TimingOptions& opt,
                                 const BoundModel& model, bool keep_output, int threads) {
  Measurement m;
  m.run = run_form(k, in, opt);
  const auto t0 = std::chrono::steady_clock::now();
  m.stats = compute_error_stats(m.run.c, ref.host(), k.numerics.output, model, threads);
  m.stats_seconds = seconds_since(t0);
  if (!keep_output) m.run.c.clear();
  return m;
}

}  // namespace gemmlab
