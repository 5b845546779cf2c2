// The rows of one form problem (form_rows.hpp).
#include "experiments/engine/form_rows.hpp"

#include <chrono>
#include <cmath>
#include <cstdio>
#include <memory>
#include <set>

#include "experiments/engine/evaluate.hpp"
#include "experiments/engine/run.hpp"
#include "kernels/registry.hpp"
#include "reference/gemm_form.hpp"

namespace gemmlab {

namespace {
double seconds_since(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}
}  // namespace

ResultRow describe_form(const Kernel& k, const std::string& distribution, int M, int N, int K, std::uint64_t seed,
                        const GemmForm& f) {
  ResultRow row = describe(k, distribution, M, N, K, seed);
  row.form = f.name();
  if (!f.plain()) row.epilogue = k.epilogue;
  return row;
}

std::string form_not_applicable(const Kernel& k, const GemmForm& f, int M, int N, int K, Format in) {
  if (f.plain()) return "";
  if (k.scale_a != ScaleGranularity::none || k.scale_b != ScaleGranularity::none)
    return std::string(k.name) + " is a scaled fp8 kernel: a form (" + f.name() + ") takes an unscaled kernel";
  if (std::string why = form_unsupported(k.forms, f); !why.empty())
    return std::string(k.name) + " " + why + " (form " + f.name() + "): choose a kernel that takes it (`gemmlab list` "
           "shows the forms each kernel takes) or another form";
  if (std::string why = form_problem(f, in, k.epilogue); !why.empty()) return why;
  FormShape s;
  try {
    s = form_shape(f, M, N, K);
  } catch (const std::invalid_argument& e) {
    return e.what();
  }
  std::set<int> rows(s.part_rows.begin(), s.part_rows.end());
  for (int m : rows)
    if (std::string why = check_size(k, m, N, K); !why.empty())
      return "form " + f.name() + ", a part of " + std::to_string(m) + " rows: " + why;
  return "";
}

void run_form_rows(const FormRowsContext& c, const Distribution& d, int M, int N, int K, std::uint64_t seed,
                   Format in, const std::string& form_key, const std::vector<const Kernel*>& kernels) {
  const GemmForm f = parse_form(form_key);
  const RunPlan& plan = *c.plan;
  Device& device = *c.device;
  auto not_applicable = [&](const Kernel& k, const std::string& why) {
    ResultRow row = describe_form(k, d.name(), M, N, K, seed, f);
    row.status = Status::not_applicable;
    row.note = why;
    c.emit(row);
  };
  if (d.recipe || d.quant) {
    for (const Kernel* k : kernels)
      not_applicable(*k, "form " + f.name() + " on a distribution with a recipe (" + d.name() +
                             "): a form takes a distribution without a recipe");
    return;
  }
  FormShape shape;
  try {
    shape = form_shape(f, M, N, K);
  } catch (const std::invalid_argument& e) {
    for (const Kernel* k : kernels) not_applicable(*k, e.what());
    return;
  }
  // One set of operands and one reference per (C0 format, bias format): kernels whose epilogues read C0 and the
  // bias in the same formats share them.
  struct Slot {
    Format c0, bias;
    std::unique_ptr<FormInputs> inputs;
    std::unique_ptr<ProblemReference> ref;
  };
  std::vector<Slot> slots;
  auto slot_of = [&](const Epilogue& e) -> Slot& {
    for (Slot& s : slots)
      if (s.c0 == e.c0 && s.bias == e.bias) return s;
    slots.push_back({e.c0, e.bias, nullptr, nullptr});
    return slots.back();
  };
  for (const Kernel* kp : kernels) {
    if (c.should_stop && c.should_stop()) return;
    const Kernel& k = *kp;
    ResultRow row = describe_form(k, d.name(), M, N, K, seed, f);
    if (std::string why = form_not_applicable(k, f, M, N, K, in); !why.empty()) {
      not_applicable(k, why);
      continue;
    }
    if (plan.reps > 0) row.reps = plan.reps;
    if (std::string why = device.hardware_support(k); !why.empty()) {
      row.status = Status::not_supported;
      row.note = why;
      c.emit(row);
      continue;
    }
    Slot& s = slot_of(k.epilogue);
    try {
      if (!s.inputs) {
        const auto t0 = std::chrono::steady_clock::now();
        Epilogue formats = epilogue_of_output(Format::fp32);
        formats.c0 = s.c0, formats.bias = s.bias;
        s.inputs = device.form_inputs(d, f, shape, in, formats, seed, c.threads);
        c.spent("inputs", seconds_since(t0));
      }
      if (!s.ref) {
        const auto t0 = std::chrono::steady_clock::now();
        s.ref = device.form_reference(*s.inputs, ReferenceOptions{plan.reference, plan.spot_checks, seed, c.threads});
        c.spent("reference", seconds_since(t0));
        char line[512];
        std::snprintf(line, sizeof line, "%s   form %s: reference (%s): %.3f s", c.who.c_str(), f.name().c_str(),
                      s.ref->label.c_str(), s.ref->seconds);
        c.log(line);
      }
    } catch (const CudaContextLost&) {
      throw;  // a kernel before this one lost the GPU: nothing more runs on it in this process
    } catch (const std::exception& e) {  // the operands or the reference could not be made: every such row says so
      row.status = Status::error;
      row.note = std::string("form ") + f.name() + ": " + e.what();
      c.log(c.who + "   " + k.name + ": error: " + row.note);
      c.emit(row);
      continue;
    }
    ProblemReference& ref = *s.ref;
    row.reference = ref.label;
    if (const long long over = ref.count_beyond(info(k.numerics.output).max_finite)) {
      ref.wait_verified();
      row.status = Status::not_applicable;
      row.note = over_range_note(over, k.numerics.output);
      c.emit(row);
      continue;
    }
    const auto t0 = std::chrono::steady_clock::now();
    try {
      const BoundModel model = form_bound_model(k.numerics, k.epilogue, f, K);
      Measurement m = device.measure_form(k, *s.inputs, ref, c.timing, model, false, c.threads);
      c.spent("kernels", m.run.launch_seconds);
      c.spent("kernel_setup", m.run.wall_seconds - m.run.launch_seconds);
      c.spent("statistics", m.stats_seconds);
      record_measured(row, m.run, m.stats, k.numerics, d, device.sm_clock_mhz());
      if (c.host_path) c.host_path(row, m);
      if (m.run.amax) {
        row.amax = *m.run.amax;
        row.amax_exact = ref.max_abs() / std::fabs(f.scale);
      }
      if (row.status != Status::passed)
        row.note = "form " + f.name() + " judged by |C^ - C| <= gamma_bound |s|(|alpha||A||B| + |beta C0| + |bias|) + "
                   "underflow_bound (" + std::to_string(model.epilogue_roundings) + " epilogue roundings, " +
                   std::to_string(model.output_roundings) + " to the output); " + row.note;
      char line[512];
      std::snprintf(line, sizeof line, "%s   %-44s %9.3f ms %8.2f TFLOP/s  bias %+.3e  spread %.3e  %s", c.who.c_str(),
                    k.name, m.run.time_ms_median, m.run.tflops, row.stats->rel_mean, row.stats->rel_std,
                    row.status == Status::failed_bound ? "FAILED_BOUND" : to_string(row.status));
      c.log(line);
    } catch (const KernelNotSupported& e) {
      c.spent("kernel_setup", seconds_since(t0));
      row.status = Status::not_supported;
      row.note = e.what();
      c.log(c.who + "   " + k.name + ": not supported: " + e.what());
    } catch (const CudaContextLost& e) {  // the row is a result; the process may be done (run.hpp record_lost)
      c.spent("kernel_setup", seconds_since(t0));
      const bool go_on = record_lost(row, e);
      c.log(c.who + "   " + k.name + ": " + to_string(row.status) + ": " + row.note);
      if (!go_on) {
        c.emit(row);
        throw;
      }
    } catch (const std::exception& e) {
      c.spent("kernel_setup", seconds_since(t0));
      row.status = Status::error;
      row.note = e.what();
      c.log(c.who + "   " + k.name + ": error: " + e.what());
    }
    ref.wait_verified();
    c.emit(row);
  }
}

}  // namespace gemmlab
