// The watchdog of the kernels under test: every launch of one (a built-in kernel, a plugin's, a Python
// callable) gets a time limit derived from its work, and a launch that does not end within it costs its
// row (status `timeout`), never the run.
//
// The limit of one launch of a problem of 2·M·N·K floating-point operations (every part of a form):
//
//   limit = floor + 2·M·N·K / (10^10 FLOP/s)      (+ first_call_seconds for a callable's first launches)
//
// 10 GFLOP/s is 50 times below the slowest kernel gemmlab runs (sgemm_01_naive, 0.5 TFLOP/s on an
// H100 at 4096^3) and 40 times below its host baselines (eigen_gemm_fp64, 437 GFLOP/s on 16 cores), so
// the work term alone covers any launch of them; the floor (10 s, `--launch-timeout`, the
// `launch_timeout` of gemmlab.judge / explain) covers launch overheads, a library's first-call
// heuristics and small problems, where the work term is nothing. At 4096^3 the limit is 23.7 s.
// The host calls of a Python callable's first batch of launches in a process (its first row's warm-up and
// timed launches, explain's first call) also get first_call_seconds (120 s): Triton compiles there, and an
// autotuner times its configurations. The GPU's part of a launch never does.
//
// Where it is checked (experiments/device/runner.cu): the timing helper and EntryRunner record an event
// after each launch and wait for the launches by polling those events (cudaEventQuery) instead of one
// blocking synchronisation; a launch still running a limit after the one before it ended throws
// LaunchTimeout, and so does a launch whose host call (a callable's Python) returned only after its
// limit. Polling costs nothing measurable: the wait ends at most one poll interval after the last launch.
//
// A kernel that never ends holds the GPU until its process exits: in a process of its own (a worker:
// engine/isolation.hpp) the parent stops it and starts another; in-process, nothing more can run on that
// GPU (LaunchTimeout is a CudaContextLost then). A launch whose host call never returns (a callable
// blocked in Python) is seen only by a worker's parent, through the LaunchReporter events below.
#pragma once
#include <chrono>
#include <string>

#include "experiments/device/runner.hpp"

namespace gemmlab {

struct LaunchLimit {
  bool enabled = true;
  double floor_seconds = 10.0;       // --launch-timeout
  double rate_flops = 1e10;          // the conservative rate of the work term
  double first_call_seconds = 0.0;   // added to a kernel's first batch of launches in the process (callables: 120)
  static constexpr double kCallableFirstCallSeconds = 120.0;

  // The limit of one launch of `flops` operations (its first in this process when `first`).
  double seconds(double flops, bool first = false) const;
  // The limit in words: "23.7 s (10 s + 2MNK at 10 GFLOP/s)".
  std::string words(double flops, bool first = false) const;
};

// The process's limit: set by `gemmlab` from --launch-timeout, by the Python package for the duration of
// a judge or explain call (ScopedLaunchLimit). Thread-safe.
LaunchLimit launch_limit();
void set_launch_limit(const LaunchLimit& l);
struct ScopedLaunchLimit {
  explicit ScopedLaunchLimit(const LaunchLimit& l) : saved_(launch_limit()) { set_launch_limit(l); }
  ~ScopedLaunchLimit() { set_launch_limit(saved_); }
  ScopedLaunchLimit(const ScopedLaunchLimit&) = delete;
  ScopedLaunchLimit& operator=(const ScopedLaunchLimit&) = delete;

 private:
  LaunchLimit saved_;
};

// True the first time it is asked for kernel `name` in this process (its first launch), false after.
bool first_launch_of(const std::string& name);

// A launch of a kernel under test that did not end within its limit. `gpu_held`: the kernel may still
// be running, so nothing more can run on the GPU in this process (a CudaContextLost); false when the
// launch's host call came back late and the GPU then drained within the limit, so the process goes on.
struct LaunchTimeout : CudaContextLost {
  LaunchTimeout(const std::string& what, bool gpu_held) : CudaContextLost(what), gpu_held(gpu_held) {
    if (gpu_held) note_gpu_held();
  }
  bool gpu_held;
  static void note_gpu_held();
};
// Whether a launch that never ended holds this process's GPU (a LaunchTimeout with gpu_held was made): the
// process then ends without tearing the CUDA runtime down, which would wait for that launch.
bool gpu_held_by_a_kernel();

// What a worker process tells its parent while kernels under test run (engine/isolation.hpp sends these
// as messages; the parent's watchdog stops a worker that stays silent beyond the armed limit). In a
// process that is not a worker, none is set and nothing is sent.
class LaunchReporter {
 public:
  virtual ~LaunchReporter() = default;
  // Launches of `kernel` at `size` begin, each allowed `limit_seconds` after the last event.
  virtual void arm(const std::string& kernel, const std::string& size, double limit_seconds) = 0;
  // A launch was enqueued or seen ended; `what` (may be empty) names it for the parent's message
  // ("call 40", "launch 3 of 23").
  virtual void beat(const std::string& what) = 0;
  // The launches ended: gemmlab's own work follows (statistics), with no limit.
  virtual void disarm() = 0;
};
void set_launch_reporter(LaunchReporter* r);  // the worker's, for the process's lifetime
LaunchReporter* launch_reporter();            // nullptr outside a worker

// The watchdog of one batch of launches of a kernel (the timing helper's, one EntryRunner launch, a fake
// device's in the CPU tests): its limit, the reporter armed while it lives, and the words of a launch
// that overran. The GPU side (an event after each launch, polled until the limit) is runner.cu's.
class LaunchWatch {
 public:
  // `flops`: one launch's work; `launches`: how many the batch makes; `at_least_seconds`: a floor of the
  // limit for launches that are allowed longer (a launch under a schedule perturbation: its patience).
  LaunchWatch(std::string kernel, int M, int N, int K, double flops, int launches, double at_least_seconds = 0);
  ~LaunchWatch();  // disarms the reporter
  LaunchWatch(const LaunchWatch&) = delete;
  LaunchWatch& operator=(const LaunchWatch&) = delete;

  bool enabled() const { return limit_.enabled; }
  // A launch's limit on the GPU: from when it was enqueued, or the one before it ended, to its end.
  double limit_seconds() const { return seconds_; }
  // A launch's host call (k.launch): the limit, and first_call_seconds more in a kernel's first batch in the
  // process (a callable's compilation happens there, not on the GPU). What the reporter is armed with.
  double host_limit_seconds() const { return host_seconds_; }
  // "launch 3 of 23 of sgemm_01_naive at 4096x4096x4096 did not end within its limit of 23.7 s (10 s +
  // 2MNK at 10 GFLOP/s)" with `how` = "did not end within" ("returned after 31.2 s, beyond": `host`, the
  // host call's limit).
  std::string overran(int launch, const std::string& how, bool host = false) const;
  // The reporter's beat for launch i (0-based), enqueued or ended.
  void beat(int launch);

 private:
  std::string kernel_, size_;
  int launches_;
  LaunchLimit limit_;
  double flops_, seconds_, host_seconds_;
  bool first_;
  bool beaten_ = false;
  std::chrono::steady_clock::time_point last_beat_;
};

}  // namespace gemmlab
