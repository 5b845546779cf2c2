// `gemmlab run`: resolves a plan against the registry, validates it before touching the GPU, then
// runs every kernel x distribution x size x seed, checks each output against the exact reference and
// writes one typed result row each (report/result.hpp) into a tidy CSV plus metadata.
//
// The rows go through the engine (engine.hpp): each is journaled as it finishes, a killed run
// continues with --resume, --shard i/n computes one part of the plan, and --gpus runs one worker
// per GPU. The loop reaches the GPU only through the Device interface (device/runner.hpp), so it
// is plain C++: gpu_device(i) is the CUDA implementation, and tests drive the loop with a fake.
#pragma once
#include <cstdio>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "experiments/device/runner.hpp"
#include "experiments/engine/plan_rows.hpp"
#include "experiments/plan/plan.hpp"
#include "experiments/report/result.hpp"
#include "kernels/kernel.hpp"
#include "reference/distributions.hpp"
#include "reference/exact_gemm.hpp"

namespace gemmlab {

struct RunRequest {
  RunPlan plan;
  std::string out_csv;          // empty: results/<plan.name>-<UTC time>.csv
  std::string save_matrices;    // folder for .npy files, empty: none
  int threads = 0;              // CPU threads for reference and statistics (0: all), shared by the workers
  std::string command_line;     // recorded in the metadata and the lock
  std::vector<std::string> argv;  // the command as typed, for the resume hint
  bool resume = false;          // continue the journal of an interrupted run
  bool force = false;           // replace an existing CSV, or discard a journal
  bool dry_run = false;         // write the plan's rows with status `planned`; no GPU needed
  std::string shard;            // "i/n": only that shard's rows; "" for the whole plan
  std::FILE* log = stderr;
  std::optional<bool> live_progress;  // default: a live bar when `log` is a terminal
  // Written into the metadata as "caller": what decides a framework kernel's numerics (gemmlab.judge
  // records the torch and Triton versions, TF32 and reduced-precision flags, CUBLAS_WORKSPACE_CONFIG).
  nlohmann::json caller_metadata;
  // How launches are timed beyond the plan's reps and warmup (which override these): the stream
  // (gemmlab.judge passes its caller's), the host timer, the L2 flush.
  TimingOptions timing;
  // Isolation: set, the kernels run in worker processes, one per GPU, each started with the command
  // worker_command(gpu index, number of workers), which must serve this request (serve_run_worker); a
  // kernel that overruns its launch limit or faults costs its row (timeout, faulted) and the worker, never
  // the run. Unset (the default): in this process, where such a row stops the run.
  std::function<std::vector<std::string>(int device, int workers)> worker_command;
  // How long beyond a launch's limit the parent waits for a silent worker (engine/worker_process.hpp).
  double worker_grace_seconds = 5.0;
  // A second worker per GPU kept started and idle beside the one at work, which takes over at once when
  // that one is stopped or dies: for workers whose start costs seconds (a Python worker imports its
  // framework and the callable: 8-9 s on the H200), not the engine's own (gemmlab.judge sets it).
  bool standby_worker = false;
  bool retry_failed = false;  // with resume: compute the journal's timeout, faulted and error rows again
};

struct ResolvedPlan {
  std::vector<const Kernel*> kernels;
  std::vector<Distribution> distributions;
};

// Throws UsageError naming the unknown kernel/distribution.
ResolvedPlan resolve(const RunPlan& p);

// The plan as the engine keys it: kernel names with their input formats, distribution names.
engine::PlanSpec plan_spec(const RunPlan& p, const ResolvedPlan& r);

// The exact reference of one problem with the self-check the plan asks for (MPFR spot checks on
// entries chosen by the seed); `label` gets the engine name as the CSV's `reference` column says it.
GemmReference compute_reference(const RunPlan& plan, const Matrix& A, const Matrix& B, Format out, int threads,
                                std::uint64_t seed, std::string& label);

// Status and note of a row whose kernel ran: failed_bound when above the bound or with entries
// unwritten, no_bound when K u_eff >= 1, else passed; the note says why, and whether an exactint
// distribution is exact in this kernel's formats.
void judge(ResultRow& row, const ErrorStats& s, const Distribution& d, const Numerics& n);

// A measured row's timing, statistics and verdict: judge, plus what a kernel of unknown accumulation
// (no_bound) and a nondeterministic one (nondeterministic) add to it. Every measured row of the run loop.
void record_measured(ResultRow& row, const KernelRun& run, const ErrorStats& stats, const Numerics& n,
                     const Distribution& d, int sm_clock_mhz);

// A row whose kernel lost the GPU (CudaContextLost): `timeout` for a launch beyond its limit
// (LaunchTimeout, engine/watchdog.hpp), `faulted` for a CUDA error that ends the context; the note is the
// error's words (which name the kernel, the size, the limit or CUDA's error). Returns true when this
// process can go on (a host call that came back late, the GPU drained since), false when nothing more can
// run on that GPU in it; in a worker process, the worker then ends once that row is sent (serve_run_worker).
bool record_lost(ResultRow& row, const CudaContextLost& e);

// `--gpus all|0,1,...` on a host with `count` GPUs: the indices, in the order given. Throws
// UsageError for a malformed list, a repeated index, or an index the host does not have.
std::vector<int> parse_gpus(const std::string& text, int count);

// Runs the plan with one worker per device (their indices are the --gpus list; a row's statistics
// do not depend on which device computed it). `devices` may be empty for a dry run. Returns the
// process exit code: 0 when every row was produced (passed, failed_bound, no_bound, not_supported,
// not_applicable, planned), 3 when some kernel raised an error (its row says so; rows resumed from
// the journal count), 128 + signal when SIGINT/SIGTERM stopped it (the journal keeps the finished
// rows and the log says how to resume). Throws UsageError for bad input, having written nothing.
int run_experiment(const RunRequest& req, const std::vector<Device*>& devices);
int run_experiment(const RunRequest& req, Device& device);

// The worker process of an isolated run (RunRequest::worker_command): prepares the same plan on `device`,
// then computes the problems its parent hands it, messages on its file descriptors 3 and 4
// (engine/worker_process.hpp). `workers`: how many share the CPU threads. Returns the exit code when its
// parent ends its input; exits the process at once (status 3) after a row that lost the GPU.
int serve_run_worker(const RunRequest& req, Device& device, int workers);

}  // namespace gemmlab
