// gemmlab._gpu: the GPU half of the Python package (nanobind), built only where a CUDA toolkit is
// found (python/CMakeLists.txt). It binds the same C++ as `gemmlab run`: the run loop with its
// journal, the timing helper, inputs generated on the GPU, the exact GPU reference and the GPU
// statistics (cmake/GemmlabSources.cmake GEMMLAB_GPU_ENGINE_SOURCES), plus two entry points:
//
//  * judge(): a Python callable becomes a run-time Kernel (experiments/device/callable.hpp) and goes
//    through run_experiment like a built-in kernel. Its operands and output reach Python as DLPack
//    tensors of the caller's framework (torch, cupy, jax) wrapping gemmlab's own device buffers:
//    no copy, no host round trip, on the caller's stream.
//  * invariance(): the same run-time Kernel through `gemmlab invariance`'s core (journaled rows).
//  * evaluate(): tensors already on the GPU (handed in through DLPack) judged on the GPU.
//  * explain() / explain_diff(): reference/explain.hpp's stages (and explain/diff.hpp) on callables.
//
// The typed API with its checks is python/gemmlab/gpu.py; errors raised here are the last line of
// defence (UsageError and std::invalid_argument arrive as ValueError, std::runtime_error as
// RuntimeError).
#include <nanobind/nanobind.h>
#include <nanobind/ndarray.h>
#include <nanobind/stl/optional.h>
#include <nanobind/stl/pair.h>
#include <nanobind/stl/string.h>
#include <nanobind/stl/tuple.h>
#include <nanobind/stl/vector.h>

#include <csignal>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <execinfo.h>
#include <algorithm>
#include <chrono>
#include <memory>
#include <stdexcept>
#include <string>
#include <tuple>
#include <vector>

#include "experiments/device/callable.hpp"
#include "experiments/device/emulate_gpu.hpp"
#include "experiments/device/evaluate_gpu.hpp"
#include "experiments/device/explain_diff.hpp"
#include "experiments/device/explain_gpu.hpp"
#include "experiments/device/runner.hpp"
#include "experiments/engine/evaluate.hpp"
#include "experiments/engine/invariance.hpp"
#include "experiments/engine/run.hpp"
#include "experiments/engine/watchdog.hpp"
#include "experiments/engine/worker_process.hpp"
#include "experiments/plan/plan.hpp"
#include "experiments/report/files.hpp"
#include "experiments/report/metadata.hpp"
#include "kernels/registry.hpp"
#include "reference/formats.hpp"
#include "reference/gemm_form.hpp"
#include "reference/numerics.hpp"
#include "reference/quantized_layout.hpp"
#include "reference/tc_gpus.hpp"

namespace nb = nanobind;
using namespace nb::literals;

namespace gemmlab::python {
namespace {

Format format_of(const std::string& name) {
  if (auto f = parse_format(name)) return *f;
  throw std::invalid_argument("unknown format '" + name + "'");
}

Layout layout_of(const std::string& name) {
  if (name == "row") return Layout::row_major;
  if (name == "col") return Layout::col_major;
  throw std::invalid_argument("layout must be 'row' or 'col', got '" + name + "'");
}

// The DLPack element type gemmlab hands out for a format: formats DLPack has no type for (fp8) go
// as raw unsigned bytes, which the Python side views as the framework's float8 dtype.
nb::dlpack::dtype dlpack_dtype(Format f) {
  switch (f) {
    case Format::fp32:
    case Format::tf32: return nb::dtype<float>();
    case Format::fp16: return {static_cast<std::uint8_t>(nb::dlpack::dtype_code::Float), 16, 1};
    case Format::bf16: return {static_cast<std::uint8_t>(nb::dlpack::dtype_code::Bfloat), 16, 1};
    case Format::e4m3:
    case Format::e5m2: return nb::dtype<std::uint8_t>();
    default: throw std::invalid_argument(std::string("format ") + info(f).name + " has no GPU tensor form here");
  }
}

// The DLPack element type of a quantized kernel tensor (reference/quantized_layout.hpp): float8 tensors go as their
// bytes, which the Python side views as the framework's float8 dtype.
nb::dlpack::dtype dlpack_dtype(TensorType t) {
  switch (t) {
    case TensorType::i8: return nb::dtype<std::int8_t>();
    case TensorType::f32: return nb::dtype<float>();
    case TensorType::fp16: return {static_cast<std::uint8_t>(nb::dlpack::dtype_code::Float), 16, 1};
    case TensorType::bf16: return {static_cast<std::uint8_t>(nb::dlpack::dtype_code::Bfloat), 16, 1};
    default: return nb::dtype<std::uint8_t>();
  }
}

// A view of gemmlab's device buffer as a tensor of `framework` with this shape and these strides (elements).
// No copy, no owner: the buffer lives for the row that uses it.
nb::object wrap_nd(const std::string& framework, const void* p, nb::dlpack::dtype dt, std::size_t ndim,
                   const std::size_t* shape, const std::int64_t* strides, int device) {
  void* data = const_cast<void*>(p);
  const int dev_type = nb::device::cuda::value;
  if (framework == "torch")
    return nb::cast(nb::ndarray<nb::pytorch>(data, ndim, shape, nb::handle(), strides, dt, dev_type, device),
                    nb::rv_policy::reference);
  if (framework == "cupy")
    return nb::cast(nb::ndarray<nb::cupy>(data, ndim, shape, nb::handle(), strides, dt, dev_type, device),
                    nb::rv_policy::reference);
  if (framework == "jax")
    return nb::cast(nb::ndarray<nb::jax>(data, ndim, shape, nb::handle(), strides, dt, dev_type, device),
                    nb::rv_policy::reference);
  throw std::invalid_argument("framework must be torch, cupy or jax, got '" + framework + "'");
}

// A (rows, cols) view laid out as `layout` (a column-major operand is the transposed view the kernel would
// read); with batch > 1, (batch, rows, cols), each batch's matrix after the last.
nb::object wrap(const std::string& framework, const void* p, Format f, int rows, int cols, Layout layout, int device,
                int batch = 1) {
  const std::int64_t rs = layout == Layout::row_major ? cols : 1, cs = layout == Layout::row_major ? 1 : rows;
  if (batch <= 1) {
    const std::size_t shape[2] = {static_cast<std::size_t>(rows), static_cast<std::size_t>(cols)};
    const std::int64_t strides[2] = {rs, cs};
    return wrap_nd(framework, p, dlpack_dtype(f), 2, shape, strides, device);
  }
  const std::size_t shape[3] = {static_cast<std::size_t>(batch), static_cast<std::size_t>(rows),
                                static_cast<std::size_t>(cols)};
  const std::int64_t strides[3] = {static_cast<std::int64_t>(rows) * cols, rs, cs};
  return wrap_nd(framework, p, dlpack_dtype(f), 3, shape, strides, device);
}

// A contiguous view of a quantized kernel tensor.
nb::object wrap_tensor(const std::string& framework, const void* p, const TensorLayout& l, int device) {
  const std::size_t shape[2] = {static_cast<std::size_t>(l.rows), static_cast<std::size_t>(l.cols)};
  const std::int64_t strides[2] = {l.ndim == 2 ? l.cols : 1, 1};
  return wrap_nd(framework, p, dlpack_dtype(l.type), static_cast<std::size_t>(l.ndim), shape,
                 l.ndim == 2 ? strides : strides + 1, device);
}

std::string python_message(nb::python_error& e) {
  // what() formats the exception with its traceback; the caller holds the GIL.
  std::string m = e.what();
  return m;
}

// What a returned C must be, in words: (M, N), or (batch, M, N) for a batched form.
std::string expected_output(Format out, int M, int N, int device, int batch = 1) {
  return std::string("a") + (batch > 1 ? " (" + std::to_string(batch) + ", " : "n (") + std::to_string(M) + ", " +
         std::to_string(N) + ") " + info(out).name + " tensor on cuda:" + std::to_string(device);
}

// The state of one callable kernel while it is judged (Python objects: touched with the GIL only).
struct Callable {
  // launcher(A, B, C_or_None, stream, keywords) -> returned C (or (C, amax)) or None. `stream` (an
  // integer cudaStream_t, 1 the legacy default stream) is where gemmlab wants the launch: the
  // framework's current stream, or a perturbation's (a green context's), which the Python side makes
  // current around the call. `keywords` holds a form's parts (reference/gemm_form.hpp): C0, bias,
  // alpha, beta, scale, offs (a grouped form's int32 row ends on the GPU).
  nb::callable launcher;
  std::string framework;
  bool returns_output = false;
  Format in = Format::fp32, out = Format::fp32;
  Layout la = Layout::row_major, lb = Layout::row_major;
  Epilogue epilogue;  // C0's and the bias's formats
  int device = 0;
  std::optional<QuantRecipe> quant;  // a quantized callable: its recipe (the tensors of quantized_layout.hpp)
  // Tensors of the current row's buffers, made once per row: a buffer's address can come back for
  // the next problem with another shape (pooled or freed and allocated again), so the key is the
  // address and the size (and a form's buffers and shape). JAX's are made again for every launch: a JAX array is immutable by
  // contract, and where its DLPack import copies (a layout XLA does not take as it is) a view made
  // once would keep the first launch's operands while gemmlab writes new ones in place (explain).
  std::tuple<const void*, const void*, const void*, int, int, int, const void*, const void*, int, int, const void*,
             const void*, const void*, const void*> key{};
  nb::object ta, tb, tc, result;
  nb::dict keywords;
  std::vector<int> offs_host;  // the row ends behind `offs` (its device copy lives in offs_device)
  std::shared_ptr<int> offs_device;
  long long calls = 0;  // launches so far, for messages ("call 3")

  // The framework runs on streams gemmlab cannot see (JAX: XLA's own).
  bool foreign_streams() const { return framework == "jax"; }

  // What went wrong with call `calls` as the C++ error: CudaContextLost where the GPU's context is lost
  // (torch raises RuntimeError for a CUDA error it sees first), CallableOutputError for an output that
  // is not C, else std::runtime_error.
  [[noreturn]] void fail(const std::string& what, bool bad_output = false) const {
    const std::string m = "call " + std::to_string(calls) + ": the callable " + what;
    throw_if_context_lost(m, device);
    if (bad_output) throw CallableOutputError(m);
    throw std::runtime_error(m);
  }

  // A form's keyword arguments for the callable: C0 ((batch,) M, N), bias (M) or (N), alpha, beta, scale, offs.
  nb::dict form_keywords(const GemmArgs& a) {
    nb::dict kw;
    if (a.C0) kw["C0"] = wrap(framework, a.C0, epilogue.c0, a.M, a.N, Layout::row_major, device, a.batch);
    if (a.bias) {
      const std::size_t shape[1] = {static_cast<std::size_t>(a.bias_kind == BiasKind::row ? a.M : a.N)};
      const std::int64_t strides[1] = {1};
      kw["bias"] = wrap_nd(framework, a.bias, dlpack_dtype(epilogue.bias), 1, shape, strides, device);
    }
    if (a.alpha != 1.0f) kw["alpha"] = static_cast<double>(a.alpha);
    if (a.C0) kw["beta"] = static_cast<double>(a.beta);
    if (a.output_scale != 1.0f) kw["scale"] = static_cast<double>(a.output_scale);
    if (a.groups > 0) {
      std::vector<int> ends(a.groups);
      int r = 0;
      for (int g = 0; g < a.groups; ++g) ends[g] = r += a.group_rows[g];
      if (ends != offs_host || !offs_device) {
        offs_host = ends;
        offs_device = std::shared_ptr<int>(device::upload_ints(ends), [](int* p) { device::free_owned(p); });
      }
      const std::size_t shape[1] = {static_cast<std::size_t>(a.groups)};
      const std::int64_t strides[1] = {1};
      kw["offs"] = wrap_nd(framework, offs_device.get(), nb::dtype<std::int32_t>(), 1, shape, strides, device);
    }
    return kw;
  }

  void launch(const GemmArgs& a) {
    nb::gil_scoped_acquire gil;
    ++calls;
    // In a worker process, the parent's watchdog names the call that never comes back.
    if (LaunchReporter* r = launch_reporter()) r->beat("call " + std::to_string(calls));
    std::string raised;
    try {
      const QuantizedArgs none;
      const QuantizedArgs& q = a.quantized ? *a.quantized : none;
      const auto now = std::make_tuple(a.A, a.B, static_cast<const void*>(a.C), a.M, a.N, a.K, a.C0, a.bias, a.batch,
                                       a.groups, q.scale_a, q.scale_b, q.zero_a, q.zero_b);
      if (now != key || !ta.is_valid() || foreign_streams()) {
        // Batched: A (batch, M, K), B (batch, K, N); grouped: A (M, K) with its groups' rows in turn, B (groups, K, N).
        tc = returns_output ? nb::object()
                            : wrap(framework, a.C, out, a.M, a.N, Layout::row_major, device, a.groups ? 1 : a.batch);
        if (quant) {
          // A quantized callable: its recipe's elements as A and B, the scales, zeros and tensor scales as keywords.
          if (!a.quantized) throw std::logic_error("a quantized callable launched without its quantized tensors");
          const KernelOperandLayout la_ = kernel_layout(quant->a, Operand::A, a.M, a.K);
          const KernelOperandLayout lb_ = kernel_layout(quant->b, Operand::B, a.K, a.N);
          ta = wrap_tensor(framework, a.A, la_.elements, device);
          tb = wrap_tensor(framework, a.B, lb_.elements, device);
          nb::dict kw;
          if (la_.scales.present()) kw["a_scale"] = wrap_tensor(framework, a.quantized->scale_a, la_.scales, device);
          if (lb_.scales.present()) kw["b_scale"] = wrap_tensor(framework, a.quantized->scale_b, lb_.scales, device);
          if (la_.zeros.present()) kw["a_zero"] = wrap_tensor(framework, a.quantized->zero_a, la_.zeros, device);
          if (lb_.zeros.present()) kw["b_zero"] = wrap_tensor(framework, a.quantized->zero_b, lb_.zeros, device);
          if (la_.tensor_scale) kw["a_tensor_scale"] = a.quantized->tensor_scale_a;
          if (lb_.tensor_scale) kw["b_tensor_scale"] = a.quantized->tensor_scale_b;
          keywords = kw;
        } else {
          ta = wrap(framework, a.A, in, a.M, a.K, la, device, a.groups ? 1 : a.batch);
          tb = wrap(framework, a.B, in, a.K, a.N, lb, device, a.groups ? a.groups : a.batch);
          keywords = form_keywords(a);
        }
        key = now;
      }
      result = launcher(ta, tb, returns_output ? nb::none() : tc, reinterpret_cast<std::uintptr_t>(a.stream), keywords);
    } catch (nb::python_error& e) {
      raised = "raised " + python_message(e);
    }
    if (!raised.empty()) fail(raised);
  }

  void collect(const GemmArgs& a) {
    nb::gil_scoped_acquire gil;
    nb::object r = std::move(result);
    result = nb::object();
    const int batch = a.groups ? 1 : a.batch;
    const std::string want = expected_output(out, a.M, a.N, device, batch);
    if (!r.is_valid() || r.is_none())
      fail("returned None; it must return C, " + want + " (or take an `out` argument and write into it: style='out')", true);
    // A kernel that reports amax returns (C, amax), amax a float32 tensor of one element on the GPU.
    nb::object amax;
    if (nb::isinstance<nb::tuple>(r)) {
      nb::tuple t = nb::borrow<nb::tuple>(r);
      if (t.size() != 2)
        fail("returned a tuple of " + std::to_string(t.size()) + " items; it must return C, " + want + ", or (C, amax)",
             true);
      r = t[0];
      amax = t[1];
    }
    nb::ndarray<> arr;
    try {
      arr = nb::cast<nb::ndarray<>>(r);
    } catch (const std::exception&) {
      fail("returned a " + std::string(nb::type_name(r.type()).c_str()) + ", not a tensor; it must return " + want, true);
    }
    if (arr.device_type() != nb::device::cuda::value || arr.device_id() != device)
      fail("returned a tensor on another device (DLPack device type " + std::to_string(arr.device_type()) + ", id " +
           std::to_string(arr.device_id()) + "); it must return " + want, true);
    const std::size_t nd = batch > 1 ? 3 : 2;
    const bool shape_ok = arr.ndim() == nd && arr.shape(nd - 2) == static_cast<std::size_t>(a.M) &&
                          arr.shape(nd - 1) == static_cast<std::size_t>(a.N) &&
                          (nd == 2 || arr.shape(0) == static_cast<std::size_t>(batch));
    if (!shape_ok) {
      std::string shape;
      for (std::size_t d = 0; d < arr.ndim(); ++d) shape += (d ? ", " : "") + std::to_string(arr.shape(d));
      fail("returned a tensor of shape (" + shape + "); it must return " + want, true);
    }
    const auto dt = arr.dtype(), expect = dlpack_dtype(out);
    const bool raw16 = out == Format::bf16 && dt == nb::dtype<std::uint16_t>();
    if (!(dt == expect) && !raw16)
      fail("returned a tensor of DLPack dtype (code " + std::to_string(dt.code) + ", " + std::to_string(dt.bits) +
           " bits); it must return " + want, true);
    const std::size_t eb = dt.bits / 8;
    for (int t = 0; t < batch; ++t)
      device::copy_strided(static_cast<const char*>(arr.data()) + (nd == 3 ? t * arr.stride(0) * eb : 0), eb, a.M, a.N,
                           arr.stride(nd - 2), arr.stride(nd - 1),
                           static_cast<char*>(a.C) + static_cast<std::size_t>(t) * a.M * a.N * eb, a.stream);
    if (amax.is_valid() && a.output_amax) {
      nb::ndarray<> am;
      try {
        am = nb::cast<nb::ndarray<>>(amax);
      } catch (const std::exception&) {
        fail("returned an amax that is a " + std::string(nb::type_name(amax.type()).c_str()) +
             ", not a tensor; return (C, amax) with amax a float32 tensor of one element", true);
      }
      if (am.size() != 1 || !(am.dtype() == nb::dtype<float>()) || am.device_type() != nb::device::cuda::value)
        fail("returned an amax that is not a float32 tensor of one element on cuda:" + std::to_string(device), true);
      device::copy_strided(am.data(), 4, 1, 1, 1, 1, a.output_amax, a.stream);
    }
    // `r` dies with this call: where its memory belongs to a framework on other streams (JAX), the
    // copy must be done before the framework may hand that memory to its next computation.
    if (foreign_streams()) device::synchronize(a.stream);
  }
};

// A Python launcher as a run-time kernel, registered under `name` while this lives (a plan names it).
struct JudgedKernel {
  std::shared_ptr<Callable> state;
  std::unique_ptr<CallableKernel> ck;
  JudgedKernel(nb::callable launcher, const std::string& framework, const std::string& name, const std::string& family,
               const std::string& description, const Numerics& n, const std::string& layout_a,
               const std::string& layout_b, bool returns_output, int device,
               const std::optional<Epilogue>& forms = std::nullopt, const std::string& quantized = "",
               const std::string& quantized_scales = "unknown", int scale_roundings = 0);
  ~JudgedKernel() {
    unregister_kernel(ck->kernel.name);
    // Python objects of the last launch die here, with the GIL held.
    state->ta = state->tb = state->tc = state->result = nb::object();
  }
  JudgedKernel(const JudgedKernel&) = delete;
  JudgedKernel& operator=(const JudgedKernel&) = delete;
};

// The numerics a callable is judged by: as declared, or (numerics_json: gemmlab.explain's identified
// record) the whole record gemmlab found.
Numerics judged_numerics(const std::string& input_format, const std::string& compute_format,
                         const std::string& accumulator_format, const std::string& output_format,
                         const std::string& accumulation, int promotion_interval_k,
                         const std::string& numerics_json = "") {
  const auto acc = parse_accumulation(accumulation);
  if (!acc) throw std::invalid_argument("unknown accumulation '" + accumulation + "'");
  const Numerics n = declared_numerics(format_of(input_format), format_of(output_format), *acc,
                                       compute_format.empty() ? std::nullopt : std::optional(format_of(compute_format)),
                                       accumulator_format.empty() ? std::nullopt
                                                                  : std::optional(format_of(accumulator_format)),
                                       promotion_interval_k);
  if (numerics_json.empty()) return n;
  const Numerics found = numerics_from_json(nlohmann::json::parse(numerics_json));
  if (found.input != n.input || found.output != n.output)
    throw std::invalid_argument("numerics_json: its input/output formats (" + std::string(info(found.input).name) + ", " +
                                info(found.output).name + ") are not the callable's");
  return found;
}

JudgedKernel::JudgedKernel(nb::callable launcher, const std::string& framework, const std::string& name,
                           const std::string& family, const std::string& description, const Numerics& n,
                           const std::string& layout_a, const std::string& layout_b, bool returns_output, int device,
                           const std::optional<Epilogue>& forms, const std::string& quantized,
                           const std::string& quantized_scales, int scale_roundings) {
  state = std::make_shared<Callable>();
  state->launcher = launcher;
  state->framework = framework;
  state->returns_output = returns_output;
  state->in = n.input;
  state->out = n.output;
  state->la = layout_of(layout_a);
  state->lb = layout_of(layout_b);
  state->device = device;
  auto st = state;
  ck = make_callable_kernel(
      name, family, description, n, state->la, state->lb, [st](const GemmArgs& a) { st->launch(a); },
      returns_output ? std::function<void(const GemmArgs&)>([st](const GemmArgs& a) { st->collect(a); })
                     : std::function<void(const GemmArgs&)>());
  if (forms) {  // a callable judged on a form takes whatever form it is asked, with this epilogue record
    ck->kernel.forms = all_forms();
    ck->kernel.epilogue = *forms;
    state->epilogue = *forms;
  }
  if (!quantized.empty()) {  // a quantized callable: its recipe's canonical name lives in ck (the kernel points at it)
    state->quant = parse_quant_recipe(quantized);
    ck->quantized = state->quant->name();
    ck->kernel.quantized = ck->quantized.c_str();
    const auto where = parse_quant_scales(quantized_scales);
    if (!where)
      throw std::invalid_argument("scales '" + quantized_scales + "' is not where a quantized kernel applies its scales "
                                  "(operands, output, unknown)");
    if (scale_roundings < 0) throw std::invalid_argument("scale_roundings must be >= 0");
    ck->kernel.quantized_scales = *where;
    ck->kernel.quantized_scale_roundings = scale_roundings;
  }
  register_kernel(ck->kernel);
}

// The epilogue record a callable is judged by: C0 and the bias in their formats (default: the output's), fp32
// arithmetic, the placements declared (default unknown: the weaker bound).
Epilogue judged_epilogue(Format out, const std::string& c0_format, const std::string& bias_format,
                         const std::string& c0_placement, const std::string& bias_placement) {
  Epilogue e = epilogue_of_output(out);
  if (!c0_format.empty()) e.c0 = format_of(c0_format);
  if (!bias_format.empty()) e.bias = format_of(bias_format);
  auto placement = [](const std::string& p, const char* what) {
    if (p.empty()) return Placement::unknown;
    if (auto v = parse_placement(p)) return *v;
    throw std::invalid_argument(std::string(what) + " '" + p +
                                "' is not a placement (before_output_rounding, after_output_rounding, unknown)");
  };
  e.c0_placement = placement(c0_placement, "c0_placement");
  e.bias_placement = placement(bias_placement, "bias_placement");
  return e;
}

// The caller's stream as TimingOptions takes it (0, the legacy default stream, as the handle 1).
void* timing_stream(std::optional<std::uintptr_t> stream) {
  if (!stream) return nullptr;
  return *stream == 0 ? reinterpret_cast<void*>(std::uintptr_t{1}) : reinterpret_cast<void*>(*stream);
}

// The launch limit of a callable's launches (engine/watchdog.hpp): `launch_timeout` the floor (0: none), and
// the first call in a process allowed LaunchLimit::kCallableFirstCallSeconds more (Triton compiles there).
LaunchLimit callable_limit(double launch_timeout) {
  if (!(launch_timeout >= 0)) throw std::invalid_argument("launch_timeout must be >= 0 seconds (0: no limit)");
  LaunchLimit l;
  l.enabled = launch_timeout > 0;
  if (l.enabled) l.floor_seconds = launch_timeout;
  l.first_call_seconds = LaunchLimit::kCallableFirstCallSeconds;
  return l;
}

// Runs the plan of one callable kernel through run_experiment. Returns the process-style exit code
// (0 every row produced, 3 some row is an `error`, `timeout` or `faulted`). With `worker_argv`, the
// callable runs in worker processes started with that command (gemmlab._worker.main in a fresh Python, given SPEC), each of
// which calls this with `serve` (serve_run_worker): a callable that hangs or faults costs its row.
int judge(nb::callable launcher, const std::string& framework, const std::string& name, const std::string& family,
          const std::string& description, const std::string& input_format, const std::string& compute_format,
          const std::string& accumulator_format, const std::string& output_format, const std::string& accumulation,
          int promotion_interval_k, const std::string& layout_a, const std::string& layout_b, bool returns_output,
          const std::vector<std::tuple<int, int, int>>& sizes, const std::vector<std::string>& distributions,
          const std::vector<std::uint64_t>& seeds, int reps, int warmup, bool flush_l2, const std::string& reference,
          int spot_checks, int device, std::optional<std::uintptr_t> stream, bool host_timer, const std::string& out_csv,
          bool resume, bool force, const std::string& caller_json, const std::string& command_line, bool quiet,
          const std::string& numerics_json, const std::string& perturbation, const std::string& form,
          const std::string& c0_format, const std::string& bias_format, const std::string& c0_placement,
          const std::string& bias_placement, const std::vector<std::string>& worker_argv, double launch_timeout,
          bool retry_failed, bool serve, double max_noise, int min_samples, double min_time_ms, double max_time_ms,
          const std::string& quantized, const std::string& quantized_scales, int scale_roundings) {
  const ScopedLaunchLimit limit(callable_limit(launch_timeout));
  const Numerics n = judged_numerics(input_format, compute_format, accumulator_format, output_format, accumulation,
                                     promotion_interval_k, numerics_json);
  const std::string key = form_key(form);  // "" for plain; a bad form throws (ValueError) before anything runs
  std::optional<Epilogue> epilogue;
  if (!key.empty()) epilogue = judged_epilogue(n.output, c0_format, bias_format, c0_placement, bias_placement);
  JudgedKernel judged(launcher, framework, name, family, description, n, layout_a, layout_b, returns_output, device,
                      epilogue, quantized, quantized_scales, scale_roundings);
  RunRequest req;
  req.plan.name = name;
  req.plan.kernels = {name};
  if (!key.empty()) req.plan.forms = {key};
  req.plan.distributions = distributions;
  req.plan.sizes.clear();
  for (auto [M, N, K] : sizes) req.plan.sizes.push_back({M, N, K});
  req.plan.seeds = seeds;
  req.plan.reps = reps;  // 0: the noise rule below (experiments/report/stopping.hpp)
  req.plan.warmup = warmup;
  req.plan.max_noise = max_noise;
  req.plan.min_samples = min_samples;
  req.plan.min_time_ms = min_time_ms;
  req.plan.max_time_ms = max_time_ms;
  req.plan.reference = reference;
  req.plan.spot_checks = spot_checks;
  req.out_csv = out_csv;
  req.resume = resume;
  req.force = force;
  req.command_line = command_line;
  req.live_progress = false;
  std::unique_ptr<std::FILE, int (*)(std::FILE*)> devnull(quiet ? std::fopen("/dev/null", "w") : nullptr, &std::fclose);
  if (devnull) req.log = devnull.get();
  if (!caller_json.empty()) req.caller_metadata = nlohmann::json::parse(caller_json);
  req.timing.flush_l2 = flush_l2;
  req.timing.host_timer = host_timer;
  req.timing.stream = timing_stream(stream);
  req.timing.perturbation = perturbation;
  req.retry_failed = retry_failed;
  if (!worker_argv.empty()) req.worker_command = [worker_argv](int, int) { return worker_argv; };
  req.standby_worker = !worker_argv.empty();  // a Python worker's start costs seconds: one waits ready beside it
  try {
    nb::gil_scoped_release nogil;
    if (serve) return serve_run_worker(req, gpu_device(device), 1);
    return run_experiment(req, gpu_device(device));
  } catch (const CudaContextLost& e) {
    throw CudaContextLost(name + ", at or before call " + std::to_string(judged.state->calls) +
                          " (launches are asynchronous: gemmlab.explain runs one call at a time and names the call): " +
                          e.what());
  }
}

// Determinism and batch invariance of one callable kernel through the invariance core
// (experiments/engine/invariance.hpp), journaled into out_csv. Orders are revealed through whole
// launches of the callable (there is no EntryRunner for it): keep reveal_k_max small or 0.
// Returns the exit code (0, 3 with error rows, 128 + signal when stopped).
int invariance(nb::callable launcher, const std::string& framework, const std::string& name, const std::string& family,
               const std::string& description, const std::string& input_format, const std::string& compute_format,
               const std::string& accumulator_format, const std::string& output_format,
               const std::string& accumulation, int promotion_interval_k, const std::string& layout_a,
               const std::string& layout_b, bool returns_output, std::tuple<int, int, int> size,
               const std::vector<std::string>& ms, const std::vector<std::string>& ns,
               const std::vector<std::string>& k_tails, int repeats, const std::string& distribution,
               std::uint64_t seed, int reps, int warmup, bool flush_l2, int reveal_k_max, bool cost, int device,
               std::optional<std::uintptr_t> stream, bool host_timer, const std::string& out_csv, bool resume,
               bool force, const std::string& caller_json, const std::string& command_line, bool quiet,
               double launch_timeout) {
  const ScopedLaunchLimit limit(callable_limit(launch_timeout));
  JudgedKernel judged(launcher, framework, name, family, description,
                      judged_numerics(input_format, compute_format, accumulator_format, output_format, accumulation,
                                      promotion_interval_k),
                      layout_a, layout_b, returns_output, device);
  InvarianceSpec spec;
  std::tie(spec.M, spec.N, spec.K) = size;
  spec.ms = parse_sweep(ms, spec.M, "m");
  spec.ns = parse_sweep(ns, spec.N, "n");
  spec.k_tails = parse_sweep(k_tails, 0, "k_tails");
  spec.repeats = repeats;
  spec.distribution = parse_distribution(distribution);
  spec.seed = seed;
  spec.reveal_k_max = reveal_k_max;
  spec.cost = cost;
  spec.timing.reps = reps;
  spec.timing.warmup = warmup;
  spec.timing.flush_l2 = flush_l2;
  spec.timing.host_timer = host_timer;
  spec.timing.stream = timing_stream(stream);
  Device& dev = gpu_device(device);
  InvarianceRunRequest req;
  req.units.push_back({{&judged.ck->kernel, "default", {}}, spec});
  req.out_csv = out_csv;
  req.session = {resume, force, command_line};
  req.argv = {command_line};
  req.meta = base_metadata("invariance", command_line, out_csv);
  add_device_metadata(req.meta, dev.info(), dev.software(), dev.sm_clock_mhz());
  if (!caller_json.empty()) req.meta["caller"] = nlohmann::json::parse(caller_json);
  std::unique_ptr<std::FILE, int (*)(std::FILE*)> devnull(quiet ? std::fopen("/dev/null", "w") : nullptr, &std::fclose);
  req.log = devnull ? devnull.get() : stderr;
  try {
    nb::gil_scoped_release nogil;
    dev.bind_thread();
    return run_invariance(req, dev);
  } catch (const CudaContextLost& e) {
    throw CudaContextLost(name + ", at or before call " + std::to_string(judged.state->calls) + ": " + e.what());
  }
}

// gemmlab.explain's engine: the stages of reference/explain.hpp on the callable at (M, N, K); returns
// the report as JSON text, and writes the explain CSV (+ metadata) when out_csv is given.
std::string explain(nb::callable launcher, const std::string& framework, const std::string& name,
                    const std::string& input_format, const std::string& output_format, const std::string& layout_a,
                    const std::string& layout_b, bool returns_output, int M, int N, int K,
                    const std::vector<std::string>& distributions, std::uint64_t seed, long long compare_outputs,
                    int verify_entries, int device, std::optional<std::uintptr_t> stream, const std::string& known_json,
                    const std::string& out_csv, const std::string& caller_json, const std::string& command_line,
                    bool schedule, double schedule_seconds, const std::string& predictions_file, double launch_timeout,
                    bool serve, const std::string& quantized) {
  const ScopedLaunchLimit limit(callable_limit(launch_timeout));
  const Numerics n = declared_numerics(format_of(input_format), format_of(output_format), Accumulation::unknown);
  if (M < 1 || N < 1 || K < 2) throw std::invalid_argument("explain needs M, N >= 1 and K >= 2");
  // A quantized callable (its recipe): explained in the plain operand's format with the quantized operand's
  // probes at unit scale, compared on SOURCE@RECIPE problems of its recipe.
  std::optional<QuantRecipe> recipe;
  if (!quantized.empty()) {
    recipe = parse_quant_recipe(quantized);
    std::string why;
    if (!explain_input_format(*recipe, &why)) throw std::invalid_argument(why);
    quant_plan(Operand::A, recipe->a, M, K);  // a K the blocks do not divide, refused before any launch
    quant_plan(Operand::B, recipe->b, K, N);
  }
  for (const std::string& d : distributions) {
    const Distribution dist = parse_distribution(d);
    if (recipe) {
      if (!dist.quant || !(*dist.quant == *recipe))
        throw std::invalid_argument("distribution " + d + ": the callable reads operands quantized under " +
                                    recipe->name() + "; give SOURCE@" + recipe->name());
    } else if (std::string why = unusable_reason(dist, n.input); !why.empty()) {
      throw std::invalid_argument("distribution " + d + ": " + why);
    }
  }
  if (!out_csv.empty()) check_writable(out_csv);
  explain::Options opt;
  if (recipe) {
    opt.values_a = unit_scale_values(recipe->a);
    opt.values_b = unit_scale_values(recipe->b);
    opt.fprev_carrier = recipe->a.scheme == QuantScheme::plain ? FprevCarrier::a : FprevCarrier::b;
  }
  opt.distributions = distributions;
  opt.seed = seed;
  opt.first_call = true;  // a kernel compiled on first use (Triton, XLA) compiles before the clock
  opt.emulate = gpu_tree_emulator();  // the composition's predictions on the GPU (GEMMLAB_EMULATE=cpu: here)
  opt.compare_outputs = compare_outputs;
  opt.verify_entries = verify_entries;
  opt.schedule = schedule;
  opt.schedule_seconds = schedule_seconds;
  opt.predictions_file = predictions_file;
  if (!known_json.empty()) opt.known = known_kernels_from_json(nlohmann::json::parse(known_json));
  JudgedKernel judged(launcher, framework, name, "user", "explained by gemmlab.explain", n, layout_a, layout_b,
                      returns_output, device, std::nullopt, recipe ? recipe->name() : "", "operands", 0);
  // A worker process of an isolated explain (explain_isolated): the launches' events and, as each stage
  // begins, the report so far go to the parent, which reports those stages if the callable never comes back.
  std::optional<engine::WorkerChannel> channel;
  std::optional<engine::ChannelReporter> reporter;
  if (serve) {
    channel.emplace();
    reporter.emplace(*channel);
    set_launch_reporter(&*reporter);
  }
  explain::Report r;
  {
    nb::gil_scoped_release nogil;
    void* s = !stream ? nullptr : *stream == 0 ? reinterpret_cast<void*>(std::uintptr_t{1}) : reinterpret_cast<void*>(*stream);
    const auto t0 = std::chrono::steady_clock::now();
    KernelOracle oracle(judged.ck->kernel, M, N, K, device, s, judged.state->foreign_streams());
    if (channel) {
      opt.on_stage = [&](const explain::Report& so_far, const std::string& stage) {
        explain::Report c = so_far;  // as if it stopped here: the parent fills in the reason
        c.identified = false;
        c.failed_stage = stage;
        c.reason.clear();
        c.oracle_lost = true;
        c.launches = oracle.launches;
        c.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
        const std::string summary = c.summary();
        channel->send({{"stage",
                        {{"stage", stage},
                         {"report", report_to_json(c)},
                         {"row", explain_rows(name, c, M, N, K, seed).at(0)},
                         {"summary_tail", summary.substr(summary.find('\n') + 1)},
                         {"launches", c.launches}}}});
      };
      channel->send({{"ready", {{"explain", name}}}});
    }
    r = explain::explain_kernel(oracle, opt);
  }
  nlohmann::json report = report_to_json(r);
  if (!out_csv.empty()) {
    nlohmann::json meta = base_metadata("explain", command_line, out_csv);
    add_device_metadata(meta, query_device(device), software_versions(device), current_sm_clock_mhz(device));
    meta["report"] = report;
    if (!caller_json.empty()) meta["caller"] = nlohmann::json::parse(caller_json);
    write_table(out_csv, explain_columns(), explain_rows(name, r, M, N, K, seed), meta);
  }
  if (channel) {
    channel->send({{"result", report}});
    set_launch_reporter(nullptr);
  }
  return report.dump();
}

// gemmlab.explain's parent of an isolated explain: starts `worker_argv` (python -m gemmlab._worker SPEC, which
// calls explain() with `serve`) and returns its report as JSON text. Where the callable never comes back
// (silent beyond its limit: engine/worker_process.hpp) or the worker dies, the worker is stopped and the report
// is the one its last stage began with, stopped there with the reason (the call, the limit or how it ended):
// the stages finished before are reported; `out_csv` is written with it. Throws engine::WorkerStartFailed when
// the worker cannot start (the Python side then explains in-process).
std::string explain_isolated(const std::vector<std::string>& worker_argv, const std::string& name, int M, int N, int K,
                             std::uint64_t seed, int device, const std::string& out_csv, const std::string& caller_json,
                             const std::string& command_line, double grace_seconds) {
  if (!out_csv.empty()) check_writable(out_csv);
  (void)gpu_tree_emulator();  // GEMMLAB_EMULATE refused here, before the worker starts, as the worker would
  nlohmann::json report;
  std::vector<std::string> row;
  {
    nb::gil_scoped_release nogil;
    const auto t0 = std::chrono::steady_clock::now();
    engine::WatchedWorker w(worker_argv, grace_seconds);
    w.wait_ready(600, [](const std::string& line) { std::fprintf(stderr, "%s\n", line.c_str()); });
    nlohmann::json last;  // the last stage's report, as it began
    long long arms_then = 0;
    std::string reason, stopped;
    for (;;) {
      const engine::WatchedWorker::Event e = w.next(1.0);
      if (e.kind == engine::WatchedWorker::Event::quiet) continue;
      if (e.kind == engine::WatchedWorker::Event::message) {
        if (e.msg.contains("result")) {
          w.process().finish(10.0);
          return e.msg["result"].dump();  // the worker wrote out_csv
        }
        if (e.msg.contains("stage")) {
          last = e.msg["stage"];
          arms_then = w.arms();
        } else if (e.msg.contains("failed")) {
          throw std::runtime_error(e.msg["failed"].get<std::string>());
        }
        continue;
      }
      if (e.kind == engine::WatchedWorker::Event::timed_out) {
        w.process().kill();
        stopped = "timeout";
        reason = w.overran_words() + ": its host call never came back, or the GPU never finished it; the worker "
                 "process running it was stopped (launch_timeout= sets the limit's floor)";
      } else {
        stopped = "faulted";
        reason = "the worker process running " + name + (w.last_beat().empty() ? "" : " (" + w.last_beat() + ")") +
                 " " + w.process().how_it_ended();
      }
      break;
    }
    if (last.is_null()) {  // before the first stage began: nothing to report but where
      explain::Report none;
      none.failed_stage = "gemm";
      last = {{"stage", "gemm"}, {"report", report_to_json(none)}, {"row", explain_rows(name, none, M, N, K, seed).at(0)},
              {"summary_tail", ""}, {"launches", 0}};
    }
    const std::string stage = last["stage"].get<std::string>();
    const long long launches = last["launches"].get<long long>() + (w.arms() - arms_then);
    const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    report = last["report"];
    report["failed_stage"] = stage;
    report["reason"] = reason;
    report["launches"] = launches;
    report["seconds"] = seconds;
    report["oracle_lost"] = true;
    report["worker_stopped"] = stopped;
    report["summary"] = "UNIDENTIFIED (" + stage + ": " + reason + ")\n" + last["summary_tail"].get<std::string>();
    row = last["row"].get<std::vector<std::string>>();
    const auto& cols = explain_columns();
    auto set = [&](const std::string& col, const std::string& v) {
      row.at(static_cast<std::size_t>(std::find(cols.begin(), cols.end(), col) - cols.begin())) = v;
    };
    char secs[32];
    std::snprintf(secs, sizeof secs, "%.3f", seconds);
    set("failed_stage", stage);
    set("reason", reason);
    set("launches", std::to_string(launches));
    set("explain_seconds", secs);
  }
  if (!out_csv.empty()) {
    nlohmann::json meta = base_metadata("explain", command_line, out_csv);
    add_device_metadata(meta, query_device(device), software_versions(device), current_sm_clock_mhz(device));
    meta["report"] = report;
    if (!caller_json.empty()) meta["caller"] = nlohmann::json::parse(caller_json);
    write_table(out_csv, explain_columns(), {row}, meta);
  }
  return report.dump();
}

// gemmlab.explain_diff's engine: two callables (each its launcher, framework, name, output format,
// layouts, style and stream) at one size, reference/explain/diff.hpp on both; returns the diff as JSON
// text, and writes the diff CSV (+ metadata) to out_csv and each kernel's explain CSV to out_csv_a /
// out_csv_b when given.
std::string explain_diff(nb::callable launcher_a, const std::string& framework_a, const std::string& name_a,
                         const std::string& output_a, const std::string& layout_a_a, const std::string& layout_b_a,
                         bool returns_a, std::optional<std::uintptr_t> stream_a, nb::callable launcher_b,
                         const std::string& framework_b, const std::string& name_b, const std::string& output_b,
                         const std::string& layout_a_b, const std::string& layout_b_b, bool returns_b,
                         std::optional<std::uintptr_t> stream_b, const std::string& input_format, int M, int N, int K,
                         const std::vector<std::string>& distributions, std::uint64_t seed, long long compare_outputs,
                         long long confirm_outputs, int verify_entries, int device, const std::string& known_json,
                         const std::string& out_csv, const std::string& out_csv_a, const std::string& out_csv_b,
                         const std::string& caller_json, const std::string& command_line, bool schedule,
                         double schedule_seconds, double launch_timeout) {
  const ScopedLaunchLimit limit(callable_limit(launch_timeout));
  if (name_a == name_b) throw std::invalid_argument("explain_diff needs two different names, got '" + name_a + "' twice");
  const Numerics na = declared_numerics(format_of(input_format), format_of(output_a), Accumulation::unknown);
  const Numerics nbr = declared_numerics(format_of(input_format), format_of(output_b), Accumulation::unknown);
  if (M < 1 || N < 1 || K < 2) throw std::invalid_argument("explain_diff needs M, N >= 1 and K >= 2");
  for (const std::string& d : distributions)
    if (std::string why = unusable_reason(parse_distribution(d), na.input); !why.empty())
      throw std::invalid_argument("distribution " + d + ": " + why);
  for (const std::string* csv : {&out_csv, &out_csv_a, &out_csv_b})
    if (!csv->empty()) check_writable(*csv);
  explain::DiffOptions opt;
  opt.explain.distributions = distributions;
  opt.explain.seed = seed;
  opt.explain.compare_outputs = compare_outputs;
  opt.explain.verify_entries = verify_entries;
  opt.compare_outputs = confirm_outputs;
  opt.explain.schedule = schedule;
  opt.explain.schedule_seconds = schedule_seconds;
  if (!known_json.empty()) opt.explain.known = known_kernels_from_json(nlohmann::json::parse(known_json));
  JudgedKernel ja(launcher_a, framework_a, name_a, "user", "explained by gemmlab.explain_diff", na, layout_a_a, layout_b_a,
                  returns_a, device);
  JudgedKernel jb(launcher_b, framework_b, name_b, "user", "explained by gemmlab.explain_diff", nbr, layout_a_b,
                  layout_b_b, returns_b, device);
  explain::DiffReport d;
  {
    nb::gil_scoped_release nogil;
    auto handle = [](std::optional<std::uintptr_t> s) -> void* {
      return !s ? nullptr : *s == 0 ? reinterpret_cast<void*>(std::uintptr_t{1}) : reinterpret_cast<void*>(*s);
    };
    KernelOracle a(ja.ck->kernel, M, N, K, device, handle(stream_a), ja.state->foreign_streams());
    KernelOracle b(jb.ck->kernel, M, N, K, device, handle(stream_b), jb.state->foreign_streams());
    d = explain::explain_diff(a, b, name_a, name_b, opt);
  }
  nlohmann::json j = diff_to_json(d);
  auto meta_for = [&](const std::string& csv) {
    nlohmann::json meta = base_metadata("explain", command_line, csv);
    add_device_metadata(meta, query_device(device), software_versions(device), current_sm_clock_mhz(device));
    if (!caller_json.empty()) meta["caller"] = nlohmann::json::parse(caller_json);
    return meta;
  };
  if (!out_csv.empty()) {
    nlohmann::json meta = meta_for(out_csv);
    meta["diff"] = j;
    write_table(out_csv, explain_diff_columns(), explain_diff_rows(d, seed), meta);
  }
  for (const auto& [csv, r, name] : {std::tuple{&out_csv_a, &d.a, &name_a}, std::tuple{&out_csv_b, &d.b, &name_b}}) {
    if (csv->empty()) continue;
    nlohmann::json meta = meta_for(*csv);
    meta["report"] = report_to_json(*r);
    write_table(*csv, explain_columns(), explain_rows(*name, *r, M, N, K, seed), meta);
  }
  return j.dump();
}

device::DeviceMatrix device_matrix(const nb::ndarray<>& t, const std::string& format, const char* what, int device) {
  if (t.device_type() != nb::device::cuda::value)
    throw std::invalid_argument(std::string(what) + " is not on a CUDA device");
  if (t.device_id() != device)
    throw std::invalid_argument(std::string(what) + " is on cuda:" + std::to_string(t.device_id()) + ", not cuda:" +
                                std::to_string(device));
  if (t.ndim() != 2) throw std::invalid_argument(std::string(what) + " must be 2-dimensional");
  const Format f = format_of(format);
  const auto dt = t.dtype(), expect = dlpack_dtype(f);
  const bool raw = (f == Format::bf16 && dt == nb::dtype<std::uint16_t>()) ||
                   ((f == Format::e4m3 || f == Format::e5m2) && dt.bits == 8);
  if (!(dt == expect) && !raw)
    throw std::invalid_argument(std::string(what) + "'s dtype (DLPack code " + std::to_string(dt.code) + ", " +
                                std::to_string(dt.bits) + " bits) is not the storage of " + format);
  device::DeviceMatrix m;
  m.data = t.data();
  m.format = f;
  m.rows = static_cast<int>(t.shape(0));
  m.cols = static_cast<int>(t.shape(1));
  m.s0 = t.stride(0);
  m.s1 = t.stride(1);
  return m;
}

}  // namespace

namespace {
// GEMMLAB_SEGV_BACKTRACE=1: a crash inside the engine prints its native frames (module+offset, for
// addr2line) before the process dies as it would have.
void print_native_backtrace(int sig) {
  void* frames[64];
  const int n = backtrace(frames, 64);
  backtrace_symbols_fd(frames, n, 2);
  std::signal(sig, SIG_DFL);
  std::raise(sig);
}
}  // namespace

NB_MODULE(_gpu, m) {
  if (std::getenv("GEMMLAB_SEGV_BACKTRACE")) std::signal(SIGSEGV, print_native_backtrace);
  // The GPU's context is lost (an illegal memory access, ...): gemmlab.GpuContextLost on the Python side.
  nb::exception<CudaContextLost>(m, "CudaContextLost", PyExc_RuntimeError);
  // A worker process could not start (gemmlab.judge and explain then run the callable in-process).
  nb::exception<engine::WorkerStartFailed>(m, "WorkerStartFailed", PyExc_RuntimeError);
  m.doc() = "gemmlab's GPU engine: judge(), evaluate() on GPU tensors (see gemmlab.judge)";

  m.def("device_status", [](int device) {
    const DeviceInfo& d = query_device(device);
    return std::make_pair(d.present, d.present ? d.name : d.why_absent);
  }, "device"_a = 0, "(usable, GPU name or why not) of CUDA device `device`");
  m.def("gpu_held_by_a_kernel", [] { return gpu_held_by_a_kernel(); },
        "Whether a launch of a kernel under test in this process never ended (it may still hold the GPU): the process "
        "should then end without the CUDA runtime's teardown, which would wait for that launch (os._exit).");
  m.def("select_model", [](int device, const std::string& gpu) {
    const DeviceInfo& d = query_device(device);
    if (!d.present) throw std::invalid_argument("no usable GPU: " + d.why_absent);
    const tc::DeviceModel m = tc::select_device_model(d.cc(), d.name, gpu);
    if (!m.ok) throw std::invalid_argument(m.message);
    tc::apply_model(m);
    return m.message;
  }, "device"_a, "gpu"_a,
        "The tensor-core model this process's explain and predictions use: device's generation, or gpu's (a name, "
        "sm_XX or generation); ValueError on a GPU gemmlab has no model for unless gpu names one. Returns what was chosen.");

  m.def("explain", &explain, "launcher"_a, "framework"_a, "name"_a, "input_format"_a, "output_format"_a, "layout_a"_a,
        "layout_b"_a, "returns_output"_a, "M"_a, "N"_a, "K"_a, "distributions"_a, "seed"_a, "compare_outputs"_a,
        "verify_entries"_a, "device"_a, "stream"_a.none(), "known_json"_a, "out_csv"_a, "caller_json"_a, "command_line"_a,
        "schedule"_a = true, "schedule_seconds"_a = 12.0, "predictions_file"_a = "", "launch_timeout"_a = 10.0,
        "serve"_a = false, "quantized"_a = "",
        "Reveals the callable's tree, operand conversion and node arithmetic and predicts its bits; the report as JSON "
        "(report['oracle_lost']: the GPU context was lost, the files written, nothing more can run)");

  m.def("explain_isolated", &explain_isolated, "worker_argv"_a, "name"_a, "M"_a, "N"_a, "K"_a, "seed"_a, "device"_a,
        "out_csv"_a, "caller_json"_a, "command_line"_a, "grace_seconds"_a = 5.0,
        "explain() in a worker process started with worker_argv; a callable that never comes back stops it, the "
        "stages finished before reported");

  m.def("explain_diff", &explain_diff, "launcher_a"_a, "framework_a"_a, "name_a"_a, "output_a"_a, "layout_a_a"_a,
        "layout_b_a"_a, "returns_a"_a, "stream_a"_a.none(), "launcher_b"_a, "framework_b"_a, "name_b"_a, "output_b"_a,
        "layout_a_b"_a, "layout_b_b"_a, "returns_b"_a, "stream_b"_a.none(), "input_format"_a, "M"_a, "N"_a, "K"_a,
        "distributions"_a, "seed"_a, "compare_outputs"_a, "confirm_outputs"_a, "verify_entries"_a, "device"_a,
        "known_json"_a, "out_csv"_a, "out_csv_a"_a, "out_csv_b"_a, "caller_json"_a, "command_line"_a, "schedule"_a,
        "schedule_seconds"_a, "launch_timeout"_a = 10.0, "Where two callables' numerics differ, each difference on an input where their bits differ; the diff as JSON");

  m.def("judge", &judge, "launcher"_a, "framework"_a, "name"_a, "family"_a, "description"_a, "input_format"_a,
        "compute_format"_a, "accumulator_format"_a, "output_format"_a, "accumulation"_a, "promotion_interval_k"_a,
        "layout_a"_a, "layout_b"_a, "returns_output"_a, "sizes"_a, "distributions"_a, "seeds"_a, "reps"_a, "warmup"_a,
        "flush_l2"_a, "reference"_a, "spot_checks"_a, "device"_a, "stream"_a.none(), "host_timer"_a, "out_csv"_a,
        "resume"_a, "force"_a, "caller_json"_a, "command_line"_a, "quiet"_a, "numerics_json"_a = "",
        "perturbation"_a = "", "form"_a = "", "c0_format"_a = "", "bias_format"_a = "", "c0_placement"_a = "",
        "bias_placement"_a = "", "worker_argv"_a = std::vector<std::string>{}, "launch_timeout"_a = 10.0,
        "retry_failed"_a = false, "serve"_a = false, "max_noise"_a = StoppingRule{}.max_noise,
        "min_samples"_a = StoppingRule{}.min_samples, "min_time_ms"_a = StoppingRule{}.min_time_ms,
        "max_time_ms"_a = StoppingRule{}.max_time_ms, "quantized"_a = "", "quantized_scales"_a = "unknown",
        "scale_roundings"_a = 0,
        "Runs the callable's plan through gemmlab run's engine; returns the exit code (0, or 3 with error rows)");

  m.def("invariance", &invariance, "launcher"_a, "framework"_a, "name"_a, "family"_a, "description"_a,
        "input_format"_a, "compute_format"_a, "accumulator_format"_a, "output_format"_a, "accumulation"_a,
        "promotion_interval_k"_a, "layout_a"_a, "layout_b"_a, "returns_output"_a, "size"_a, "m"_a, "n"_a,
        "k_tails"_a, "repeats"_a, "distribution"_a, "seed"_a, "reps"_a, "warmup"_a, "flush_l2"_a, "reveal_k_max"_a,
        "cost"_a, "device"_a, "stream"_a.none(), "host_timer"_a, "out_csv"_a, "resume"_a, "force"_a, "caller_json"_a,
        "command_line"_a, "quiet"_a, "launch_timeout"_a = 10.0,
        "Determinism and batch invariance of the callable (gemmlab invariance's core); returns the exit code");

  m.def(
      "evaluate",
      [](nb::ndarray<> A, nb::ndarray<> B, nb::ndarray<> C, const std::string& input_format,
         const std::string& compute_format, const std::string& accumulator_format, const std::string& output_format,
         const std::string& accumulation, int promotion_interval_k, const std::string& kernel, const std::string& family,
         const std::string& distribution, std::uint64_t seed, std::optional<double> time_ms, std::optional<int> reps,
         const std::string& note, int spot_checks, bool allow_nonfinite, int device, std::uintptr_t stream) {
        const auto acc = parse_accumulation(accumulation);
        if (!acc) throw std::invalid_argument("unknown accumulation '" + accumulation + "'");
        Declared d;
        d.kernel = kernel;
        d.family = family;
        d.numerics = declared_numerics(
            format_of(input_format), format_of(output_format), *acc,
            compute_format.empty() ? std::nullopt : std::optional(format_of(compute_format)),
            accumulator_format.empty() ? std::nullopt : std::optional(format_of(accumulator_format)), promotion_interval_k);
        d.distribution = distribution;
        d.seed = seed;
        d.time_ms = time_ms;
        d.reps = reps;
        d.note = note;
        const auto a = device_matrix(A, input_format, "A", device), b = device_matrix(B, input_format, "B", device),
                   c = device_matrix(C, output_format, "C", device);
        nb::gil_scoped_release nogil;
        gpu_device(device).bind_thread();
        const auto r = device::evaluate_gpu(a, b, c, d, spot_checks, seed, allow_nonfinite,
                                            stream == 0 ? reinterpret_cast<void*>(std::uintptr_t{1})
                                                        : reinterpret_cast<void*>(stream));
        return std::make_tuple(to_fields(r.row), r.seconds, r.reference_seconds);
      },
      "A"_a, "B"_a, "C"_a, "input_format"_a, "compute_format"_a, "accumulator_format"_a, "output_format"_a,
      "accumulation"_a, "promotion_interval_k"_a, "kernel"_a, "family"_a, "distribution"_a, "seed"_a, "time_ms"_a.none(),
      "reps"_a.none(), "note"_a, "spot_checks"_a, "allow_nonfinite"_a, "device"_a, "stream"_a,
      "(CSV fields of the row, seconds, reference seconds) of C ~ A B with A, B, C on the GPU");

  m.def(
      "generate",
      [](const std::string& framework, const std::string& distribution, int rows, int cols, const std::string& operand,
         const std::string& format, std::uint64_t seed, int device) {
        // An operand as gemmlab run makes it, generated on the GPU, as a float32 tensor of `framework`
        // that owns its memory (freed with it).
        const Distribution d = parse_distribution(distribution);
        const Format f = format_of(format);
        float* p = nullptr;
        {
          nb::gil_scoped_release nogil;
          gpu_device(device).bind_thread();
          p = device::generate_owned(d, operand == "B" ? Operand::B : Operand::A, rows, cols, f, seed);
        }
        nb::capsule owner(p, [](void* q) noexcept { device::free_owned(q); });
        const std::size_t shape[2] = {static_cast<std::size_t>(rows), static_cast<std::size_t>(cols)};
        const int dev_type = nb::device::cuda::value;
        if (framework == "torch")
          return nb::cast(nb::ndarray<nb::pytorch, float>(p, 2, shape, owner, nullptr, nb::dtype<float>(), dev_type, device));
        if (framework == "cupy")
          return nb::cast(nb::ndarray<nb::cupy, float>(p, 2, shape, owner, nullptr, nb::dtype<float>(), dev_type, device));
        return nb::cast(nb::ndarray<nb::jax, float>(p, 2, shape, owner, nullptr, nb::dtype<float>(), dev_type, device));
      },
      "framework"_a, "distribution"_a, "rows"_a, "cols"_a, "operand"_a, "format"_a, "seed"_a, "device"_a);
}

}  // namespace gemmlab::python
