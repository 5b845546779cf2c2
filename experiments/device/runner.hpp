// Running one kernel on the GPU: inputs converted to the kernel's format and layout (outside the
// timed region), the one timing helper every kernel goes through, and the output brought back as
// doubles; and the Device interface the run loop uses. No CUDA type in this header.
//
// Every function takes a device index (cudaGetDevice numbering, default 0): each GPU has its own
// cuBLAS/cuBLASLt handles and workspace, created on first use, and the calling thread is bound to
// the device (cudaSetDevice) before anything runs, so one thread per GPU can run kernels at once.
#pragma once
#include <cstdint>
#include <functional>
#include <limits>
#include <memory>
#include <optional>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>
#include "experiments/report/stopping.hpp"
#include "kernels/kernel.hpp"
#include "reference/distributions.hpp"
#include "reference/error_stats.hpp"
#include "reference/exact_gemm.hpp"
#include "reference/gemm_form.hpp"
#include "reference/matrix.hpp"

namespace gemmlab {

struct Perturbation;  // experiments/device/perturb.hpp
class Perturber;

struct DeviceInfo {
  bool present = false;
  std::string why_absent;        // when !present: what the CUDA runtime said
  int device = 0;
  std::string name;
  std::string uuid;              // "GPU-xxxxxxxx-xxxx-xxxx-xxxx-xxxxxxxxxxxx", as nvidia-smi -L prints it
  int cc_major = 0, cc_minor = 0;
  int sm_count = 0;
  long long l2_bytes = 0, global_mem_bytes = 0;
  int cc() const { return cc_major * 10 + cc_minor; }
};

// A CUDA error after which nothing more runs on the GPU in this process (an illegal memory access, a
// misaligned address, a trap: the CUDA runtime documents these as leaving the context unusable until
// the process ends), or a launch that never ends. The runner's entry points (run_kernel, the GPU
// Device's measure, EntryRunner) throw it instead of a plain std::runtime_error, so that the engine and
// gemmlab.explain stop at once, say what to do, and keep what was finished before.
struct CudaContextLost : std::runtime_error {
  using std::runtime_error::runtime_error;
};
// If GPU `device`'s context is lost, throws CudaContextLost with `what` and what to do; else returns.
void throw_if_context_lost(const std::string& what, int device);

// GPUs the CUDA runtime sees (0 when none or when the runtime fails).
int device_count();

// Never throws; present = false with the reason when GPU `device` is not usable (or not there).
const DeviceInfo& query_device(int device = 0);

// Empty if the kernel can run on this device and build; otherwise why not (-> a not_supported row).
std::string hardware_support(const Kernel& k, const DeviceInfo& dev);

struct TimingOptions {
  int warmup = 3;      // untimed launches first (module load, cuBLAS heuristics, clocks up)
  // Timed repetitions, each after an L2 flush and a NaN-poisoned C: exactly `reps` when > 0; with 0,
  // as many as the noise rule below asks (experiments/report/stopping.hpp: until the median's 95%
  // confidence interval is within +-max_noise of it, or max_time_ms has passed).
  int reps = 20;
  double max_noise = StoppingRule{}.max_noise;
  int min_samples = StoppingRule{}.min_samples;
  double min_time_ms = StoppingRule{}.min_time_ms;
  double max_time_ms = StoppingRule{}.max_time_ms;
  StoppingRule rule() const { return {reps, max_noise, min_samples, min_time_ms, max_time_ms}; }
  bool flush_l2 = true;
  // The stream the launches go to (cudaStream_t): a Python caller's, so that its framework's work
  // and the timing events are ordered on one stream. nullptr: the harness makes its own.
  void* stream = nullptr;
  // Time each launch by the host clock around the launch and a device synchronisation, instead of
  // CUDA events on `stream`: for callables that run on streams the harness cannot see (JAX).
  bool host_timer = false;
  // A schedule perturbation (experiments/device/perturb.hpp: "busy_sms_66", "fewer_sms_64"; "auto":
  // busy_sms at half the GPU's SMs, or fewer_sms at half where SMs cannot be held during a launch; "": none). After the timed repetitions, one more launch runs under
  // it, into a C of its own, and is compared bit for bit with the last (KernelRun::perturbed_*): the
  // determinism check then covers the schedule too, not only two calls on an idle GPU.
  std::string perturbation;
};

struct KernelRun {
  std::vector<double> c;         // (M, N) row-major output of the last repetition, as doubles
  std::vector<float> times_ms;   // every timed repetition
  double time_ms_median = 0, time_ms_min = 0, time_ms_max = 0;
  double time_ms_iqr = 0;        // interquartile_range(times_ms) (experiments/report/result.hpp)
  // The median's 95% confidence half-width over the median (summarize, stopping.hpp; NaN below 6
  // repetitions), and what ended the repetitions (the fixed count, the noise rule, the time limit).
  double time_ms_ci95_rel = 0;
  StopReason stopped_by = StopReason::reps;
  double tflops = 0;             // 2 M N K / median
  long long unwritten = 0;       // NaN entries left in C (the poison): a kernel that skipped entries
  // Entries of C whose bits differ between the first launch and the last: a kernel that is not
  // deterministic run to run (its row says so instead of judging one arbitrary output).
  long long nondeterministic = 0;
  // TimingOptions::perturbation: its name, the entries whose bits differ between the last launch and
  // the perturbed one, and why it could not be applied ("" when it ran).
  std::string perturbation;
  long long perturbed_differences = 0;
  std::string perturbation_not_applied;
  double launch_seconds = 0;     // wall time of the warm-up and timed launches with their flushes and poisons
  double wall_seconds = 0;       // run_kernel's whole wall time: packing, copies, warm-up, timed reps, unpacking
  std::optional<double> amax;    // a form's kernel that reports amax (GemmArgs::output_amax): the last launch's
};

// Uploads A (M, K) and B (K, N) in the kernel's input format and layouts, runs warm-up and timed
// repetitions (CUDA events around each launch only; L2 flushed and C poisoned with NaN before each),
// and downloads C, on GPU `device`. Throws std::runtime_error on a CUDA error. The caller checks
// sizes and support.
// A scaled fp8 kernel's scale grids (GemmArgs::scale_a / scale_b), uploaded with the operands.
struct OperandScales {
  std::vector<float> a, b;
};
KernelRun run_kernel(const Kernel& k, const Matrix& A, const Matrix& B, const TimingOptions& opt, int device = 0,
                     const OperandScales* scales = nullptr);

// The timing helper above for a form's kernel (experiments/device/form_gpu.cu): A and B already packed on GPU
// `device`, C of `rows` x N in the output format (the stacked parts), `adjust` sets the form's fields of the
// launch's GemmArgs, `consume(dC, stream)` sees the last output. TFLOP/s = 2 rows N K / median.
KernelRun time_form_launches(const Kernel& k, int rows, int N, int K, const void* dA, const void* dB,
                             const TimingOptions& opt, int device, const std::function<void(GemmArgs&)>& adjust,
                             const std::function<void(const void*, void*)>& consume);

// One kernel launched many times on inputs that change only in one row of A and one column of B
// between launches, reading back one entry of C: the masking experiment of `gemmlab order`
// (order.cpp), whose thousands of launches would otherwise each pack, upload and download whole
// matrices. Operands, C and the workspace stay on the GPU; a changed row or column is written there
// by set_lines from its values alone. Throws std::runtime_error on a CUDA error.
class EntryRunner {
 public:
  // A (M, K) and B (K, N) as the first inputs (values exact in the kernel's input format). `stream`
  // (a cudaStream_t; (void*)1 is the legacy default stream): where everything is enqueued, the
  // caller's for a kernel that launches on it (a Python callable runs on its framework's current
  // stream); nullptr: a stream of the runner's own. `foreign_streams`: the kernel launches on streams
  // the runner cannot see (JAX: XLA's own), so nothing orders its reads of A and B after the runner's
  // writes on `stream`; the runner then waits for its stream on the host before every launch (a
  // launch that read inputs half written gave JAX counts of no whole number of units).
  EntryRunner(const Kernel& k, const Matrix& A, const Matrix& B, int device = 0, void* stream = nullptr,
              bool foreign_streams = false);
  ~EntryRunner();
  EntryRunner(const EntryRunner&) = delete;
  EntryRunner& operator=(const EntryRunner&) = delete;
  void set_a_row(int i, const std::vector<double>& values);  // A(i, 0 .. K-1)
  void set_b_col(int j, const std::vector<double>& values);  // B(0 .. K-1, j)
  // Many rows and columns at once (gemmlab explain's batched launches: thousands of lines per call).
  // One line: `fill` at every k in [from, to) and 0 elsewhere, except the listed (k, value). Sets
  // these rows of A and columns of B and zeroes the rows in `zero_rows` and the columns in
  // `zero_cols` (zero_all: every other line too) on the GPU: only the lines' descriptions and listed
  // values are uploaded, one kernel writes them. (Whole operands re-encoded on the host and uploaded
  // cost 20-30 ms per launch at 4096^2, most of an explain's time.) A line listed twice is refused.
  struct Line {
    int index = 0;
    double fill = 0;
    const std::vector<std::pair<int, double>>* at = nullptr;  // may be null: fill everywhere
    int from = 0, to = std::numeric_limits<int>::max();
  };
  void set_lines(const std::vector<Line>& a_rows, const std::vector<Line>& b_cols, const std::vector<int>& zero_rows,
                 const std::vector<int>& zero_cols, bool zero_all = false);
  // One launch on the current inputs, C poisoned with NaN first; returns C(i, j) (NaN: unwritten).
  double run_entry(int i, int j);
  // The same, returning the output bits of every listed entry (in the output format's encoding).
  std::vector<std::uint64_t> run_entries(const std::vector<std::pair<int, int>>& entries);
  // Replaces both operands (values exact in the kernel's input format).
  void set_operands(const Matrix& A, const Matrix& B);
  // Replaces both operands by those of distribution d from `seed` in the kernel's input format, made
  // and packed on the GPU (device/inputs_gpu.hpp: generate()'s values bit for bit), and copies back
  // what a prediction reads: B whole into B (K, N) and the rows `rows` of A into A (M, K), its other
  // rows left 0. A quantized kernel (Kernel::quantized) takes SOURCE@RECIPE of its recipe: the problem
  // made on the GPU (quantized_gpu.hpp), its tensors where the kernel reads them, the dequantized operands
  // (exact binary64) copied back. Until then, and after the next set_lines or set_operands, a quantized
  // kernel reads the values written at unit scale (quantized_gpu.hpp unit_scale_operand_gpu).
  void generate_operands(const Distribution& d, std::uint64_t seed, const std::vector<int>& rows, Matrix& A, Matrix& B);
  // The launches from now on run under `p` through `perturber` (both kept by the caller; nullptr: no
  // perturbation): fewer_sms moves everything the runner enqueues to the green context's stream (after
  // a device synchronisation), busy_sms holds SMs around each launch. A perturbed launch that has not
  // ended within 20 s throws CudaContextLost (a kernel waiting for blocks that cannot all be resident:
  // the GPU stays held by it). Throws std::runtime_error where p cannot be applied.
  void perturb(const Perturbation* p, Perturber* perturber);
  const Kernel& kernel() const;

 private:
  // generate_operands for a quantized kernel: the problem of d (SOURCE@RECIPE, the kernel's recipe) made on the GPU,
  // its tensors packed where the kernel reads them, the dequantized operands copied back as generate_operands says.
  void generate_quantized(const Distribution& d, std::uint64_t seed, const std::vector<int>& rows, Matrix& A, Matrix& B);
  void set_lines_once(const std::vector<Line>& a_rows, const std::vector<Line>& b_cols,
                      const std::vector<int>& zero_rows, const std::vector<int>& zero_cols, bool zero_all);
  std::vector<std::uint64_t> run_entries_once(const std::vector<std::pair<int, int>>& entries);
  double run_entry_once(int i, int j);
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

// Sampled SM clock of GPU `device` in MHz (nvidia-smi), -1 if unknown.
int current_sm_clock_mhz(int device = 0);

struct SoftwareVersions {
  std::string driver;        // NVIDIA driver, from nvidia-smi ("unknown" if absent)
  int cuda_driver_api = 0;   // cudaDriverGetVersion, e.g. 13000
  int cuda_runtime = 0;      // cudaRuntimeGetVersion
  std::string cublas;        // "major.minor.patch"
  int max_sm_clock_mhz = -1;
};
SoftwareVersions software_versions(int device = 0);

// How a run wants its exact references: mode "auto" (the GPU engine where it can be exact, else the
// CPU's), "gpu" (the GPU engine or an error), "cpu", "exact" (auto without spot checks) or "mpfr"
// (MPFR for every entry, CPU); `spot_checks` entries chosen by the seed are re-checked against MPFR.
struct ReferenceOptions {
  std::string mode = "auto";
  int spot_checks = 16;
  std::uint64_t seed = 0;
  int threads = 0;  // CPU threads
};

// The exact reference of one problem, kept where its statistics are computed (host or GPU). One
// per problem: it serves every output format (c_odd rounds once to any of them).
class ProblemReference {
 public:
  virtual ~ProblemReference() = default;
  std::string label;    // the CSV's `reference` column: the engine that ran (+ MPFR spot checks)
  double seconds = 0;   // wall time of computing and checking it
  // Why the GPU engine could not compute it exactly, when the CPU engine did in its place (the
  // rows judged against it leave the GPU path and say so); empty otherwise.
  std::string cpu_fallback;
  // Exact entries a kernel writing a format of this largest finite value cannot represent
  // (|c| > max_finite, or not finite).
  virtual long long count_beyond(double max_finite) = 0;
  // The reference on the host (c, c_odd, abs_ab; c_out for fp32): for --save-matrices and CPU
  // statistics. A GPU reference is copied on first use.
  virtual const GemmReference& host() = 0;
  // Returns once the reference's MPFR spot checks have passed; throws std::runtime_error if one
  // disagreed. A GPU reference runs them on the host while the first kernel runs: the run loop
  // calls this before it writes any row judged against the reference.
  virtual void wait_verified() {}
  // max |c| over the reference (a form's amax_exact, divided by its output scale).
  virtual double max_abs();
};

// A kernel's timing and its statistics against a problem's reference.
struct Measurement {
  KernelRun run;             // run.c is filled only when keep_output was asked for
  ErrorStats stats;
  // A scaled fp8 or quantized row's statistics against the exact product of its fp32 sources A0 B0 (the
  // total error, quantization included: ResultRow::total); absent for other rows.
  std::optional<ErrorStats> total;
  double stats_seconds = 0;  // every statistics computed for the row
  // The statistics were those of an earlier row of the problem whose output was the same bits, for the
  // same output format and bound (a GPU's statistics reuse, runner.cu), not computed again.
  bool stats_reused = false;
  // Why the row left a GPU's GPU path (experiments/device/gpu_path.hpp): the kernel's operands went
  // to it from the host, its output came back and was judged on the CPU. Empty when it stayed (and
  // on a device without a GPU path).
  std::string host_path;
  // What the device found out about the kernel beside the statistics, said in the row's note (a quantized
  // kernel's epilogue, explained bit for bit: reference/quantized.hpp epilogue_explanation); empty otherwise.
  std::string note;
};

// One problem's operands, A (M, K) and B (K, N) with every value exact in the input format, made
// by the device where its kernels read them (a GPU generates them in its own memory). The host
// copies are made on first use: for a CPU reference, MPFR spot checks and --save-matrices.
class ProblemInputs {
 public:
  virtual ~ProblemInputs() = default;
  virtual const Matrix& A() = 0;
  virtual const Matrix& B() = 0;
  int M = 0, N = 0, K = 0;
  Format format = Format::fp32;
  double seconds = 0;  // wall time of making them (generation, and on a GPU nothing else)
};

// The host implementation: the matrices as generate() makes them (or as given).
class HostInputs final : public ProblemInputs {
 public:
  HostInputs(Matrix a, Matrix b, Format f);
  const Matrix& A() override { return a_; }
  const Matrix& B() override { return b_; }

 private:
  Matrix a_, b_;
};

// One form problem's operands (reference/gemm_form.hpp FormOperands: A and B of the stacked plain problem, C0
// and the bias in the epilogue's formats), made by the device where its kernels read them; the host copy on
// first use (a CPU reference, MPFR spot checks, a host run).
class FormInputs {
 public:
  virtual ~FormInputs() = default;
  virtual const FormOperands& host() = 0;
  GemmForm form;
  FormShape shape;
  Format input = Format::fp32;
  Epilogue epilogue;
  double seconds = 0;  // wall time of making them
};

// The host implementation: the operands as make_form_operands makes them.
class HostFormInputs final : public FormInputs {
 public:
  explicit HostFormInputs(FormOperands o);
  const FormOperands& host() override { return o_; }

 private:
  FormOperands o_;
};

// One problem of a distribution with a scaled fp8 recipe (SOURCE@RECIPE, reference/scaled_fp8.hpp),
// bit for bit make_scaled_problem's: the fp32 sources A0 (M, K), B0 (K, N), their fp8 values and
// scale grids under the recipe, and the dequantized operands s q, made by the device where its
// kernels read them (a GPU makes them in its memory). Host copies are made on first use.
class ScaledInputs {
 public:
  virtual ~ScaledInputs() = default;
  virtual ProblemInputs& sources() = 0;        // A0, B0 (fp32): the total error's reference operands
  virtual ProblemInputs& dequantized() = 0;    // s q, exact in binary64: the GEMM error's reference operands
  virtual const Matrix& q(Operand which) = 0;  // the fp8 values a kernel reads, as doubles
  virtual const OperandScales& scales() = 0;   // as a kernel reads them (kernel_scales' layouts)
  int M = 0, N = 0, K = 0;
  ScaleRecipe recipe;
  double seconds = 0;  // wall time of making them
};

// One problem of a distribution with a quantized recipe (SOURCE@RECIPE, reference/quantized.hpp), bit for bit
// make_quantized_problem's: the fp32 sources A0 (M, K), B0 (K, N), the quantized operands, and the
// dequantized operands (exact binary64), made by the device where its kernels read them.
class QuantizedInputs {
 public:
  virtual ~QuantizedInputs() = default;
  virtual ProblemInputs& sources() = 0;      // A0, B0 (fp32): the total error's reference operands
  virtual ProblemInputs& dequantized() = 0;  // exact binary64: the kernel's own error's reference operands
  virtual const QuantizedOperand& host(Operand which) = 0;  // the quantized operand on the host (copied on first use)
  // Whether every dequantized value of both operands is a value of f (quantized_bound_model's operands_exact).
  virtual bool exact_in(Format f) = 0;
  int M = 0, N = 0, K = 0;
  QuantRecipe recipe;
  double seconds = 0;  // wall time of making them
};

// What the run loop (experiments/engine) needs from the machine that runs kernels. inputs(),
// reference(), measure(), scaled_inputs() and measure_scaled() have CPU defaults
// (experiments/engine/device_defaults.cpp: inputs made on the host, the CPU exact engines and
// statistics on run()'s output); the GPU overrides them to keep the operands, the reference, the
// output and the statistics on the GPU (its GPU path, experiments/device/gpu_path.hpp).
class Device {
 public:
  virtual ~Device() = default;
  virtual const DeviceInfo& info() = 0;
  virtual SoftwareVersions software() = 0;
  // Empty if the kernel can run here; otherwise why not (-> a not_supported row).
  virtual std::string hardware_support(const Kernel& k) = 0;
  virtual KernelRun run(const Kernel& k, const Matrix& A, const Matrix& B, const TimingOptions& opt) = 0;
  // run() for a scaled fp8 kernel: A and B hold the fp8 values, `scales` their scale grids. The
  // default throws std::runtime_error (a device that cannot run scaled kernels).
  virtual KernelRun run_scaled(const Kernel& k, const Matrix& A, const Matrix& B, const OperandScales& scales,
                               const TimingOptions& opt);
  virtual int sm_clock_mhz() = 0;
  // Called once in each worker thread before its first row (a GPU binds the thread to itself).
  virtual void bind_thread() {}
  // Empty if a problem of this size and input format fits this device's memory (the kernel's
  // buffers, and the reference and statistics where the device computes them); else a message
  // saying what fits.
  virtual std::string check_memory(int M, int N, int K, Format in);
  // The operands of distribution d at (M, N, K) in input format `in` from `seed`, bit for bit what
  // generate() gives (the default generates them on the host with `threads` threads).
  virtual std::unique_ptr<ProblemInputs> inputs(const Distribution& d, int M, int N, int K, Format in,
                                                std::uint64_t seed, int threads);
  // The exact reference of A B (throws std::runtime_error if a spot check disagrees).
  virtual std::unique_ptr<ProblemReference> reference(ProblemInputs& in, const ReferenceOptions& opt);
  // Runs k (timed as run() does) and judges its output against ref for k's output format.
  virtual Measurement measure(const Kernel& k, ProblemInputs& in, ProblemReference& ref, const TimingOptions& opt,
                              const BoundModel& model, bool keep_output, int threads);
  // The problem of distribution d (with a recipe) at (M, N, K) from `seed`. Throws
  // std::invalid_argument as make_scaled_problem does (the recipe refuses the data: an all-zero
  // block, ...). The default makes it on the host with `threads` threads.
  virtual std::unique_ptr<ScaledInputs> scaled_inputs(const Distribution& d, int M, int N, int K, std::uint64_t seed,
                                                      int threads);
  // Runs the scaled kernel k on in's fp8 values and scales (timed as run() does) and judges its
  // output against gemm_ref (Measurement::stats, the GEMM's own error) and total_ref
  // (Measurement::total). The default: run_scaled, then the CPU statistics.
  virtual Measurement measure_scaled(const Kernel& k, ScaledInputs& in, ProblemReference& gemm_ref,
                                     ProblemReference& total_ref, const TimingOptions& opt, const BoundModel& model,
                                     int threads);
  // The quantization error of a scaled fp8 or quantized problem: the exact product of the dequantized
  // operands (gemm_ref) measured against the exact product of the sources (total_ref), as a kernel's output
  // of format `out` would be (ResultRow::quantization). The default computes it on the host.
  virtual ErrorStats quantization_error(ProblemReference& gemm_ref, ProblemReference& total_ref, Format out,
                                        const BoundModel& model, int threads);

  // A quantized problem (reference/quantized.hpp), as the scaled fp8 one above: made by
  // make_quantized_problem on the host by default (throws std::invalid_argument as it does); run_quantized
  // runs a quantized kernel on the host operands (the default throws: a device that cannot run them), and
  // measure_quantized judges its output against gemm_ref (stats) and total_ref (total) (the default:
  // run_quantized, then the CPU statistics).
  virtual std::unique_ptr<QuantizedInputs> quantized_inputs(const Distribution& d, int M, int N, int K,
                                                            std::uint64_t seed, int threads);
  virtual KernelRun run_quantized(const Kernel& k, const QuantizedOperand& A, const QuantizedOperand& B,
                                  const TimingOptions& opt);
  virtual Measurement measure_quantized(const Kernel& k, QuantizedInputs& in, ProblemReference& gemm_ref,
                                        ProblemReference& total_ref, const TimingOptions& opt, const BoundModel& model,
                                        int threads);

  // A form problem (reference/gemm_form.hpp), as the four above do a plain one. Defaults
  // (experiments/engine/form_defaults.cpp): operands made by make_form_operands on the host, the CPU exact
  // reference exact_form with its MPFR spot checks (each checked entry one augmented dot product), run_form's
  // output judged on the host. run_form's default throws (a device that cannot run forms); the GPU overrides
  // the others to keep everything on the GPU.
  virtual std::unique_ptr<FormInputs> form_inputs(const Distribution& d, const GemmForm& f, const FormShape& s,
                                                  Format in, const Epilogue& e, std::uint64_t seed, int threads);
  virtual std::unique_ptr<ProblemReference> form_reference(FormInputs& in, const ReferenceOptions& opt);
  virtual KernelRun run_form(const Kernel& k, FormInputs& in, const TimingOptions& opt);
  virtual Measurement measure_form(const Kernel& k, FormInputs& in, ProblemReference& ref, const TimingOptions& opt,
                                   const BoundModel& model, bool keep_output, int threads);
};

// The CPU reference of A B as the options ask (exact engine or MPFR; spot checks), labelled.
std::unique_ptr<ProblemReference> cpu_reference(const Matrix& A, const Matrix& B, const ReferenceOptions& opt);
// The same for a form (exact_form; each spot check one augmented dot product: reference/gemm_form.hpp).
std::unique_ptr<ProblemReference> cpu_form_reference(const FormOperands& o, const ReferenceOptions& opt);
// A reference held on the host, as cpu_reference returns it.
std::unique_ptr<ProblemReference> host_reference(GemmReference r, std::string label);

// The MPFR spot checks: `n` entries chosen by splitmix64 of the seed; c(idx) gives the reference's
// binary64 value of entry idx. Throws std::runtime_error naming the first entry that differs.
void spot_check(const Matrix& A, const Matrix& B, int n, std::uint64_t seed, const std::string& engine,
                const std::function<double(long long)>& c);
// The same for an (M, K) x (K, N) product whose operands are elsewhere (on a GPU): load(i, j, a, b)
// fills a (1, K) with row i of A and b (K, 1) with column j of B.
// The linear indices (i N + j) of the n entries spot_check checks.
std::vector<long long> spot_check_entries(int M, int N, int n, std::uint64_t seed);
void spot_check(int M, int N, int K, int n, std::uint64_t seed, const std::string& engine,
                const std::function<void(int, int, Matrix&, Matrix&)>& load, const std::function<double(long long)>& c);

// GPU `device` through the functions above (one object per index, alive for the process).
Device& gpu_device(int device = 0);

}  // namespace gemmlab
