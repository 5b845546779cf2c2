// Problems handed to N workers (one per GPU), rows handed to one journal.
//
// Workers take the next problem from a shared queue (an atomic index over the plan-ordered
// problems), so a slow problem on one GPU does not hold up the others. Each finished row goes
// through `sink`, which dispatch() serialises with one mutex: the journal sees one writer, and
// the rows arrive in completion order; finalisation puts them back into plan order, so the final
// CSV does not depend on the number of workers. A row's statistics depend only on its inputs and
// kernel, so they are identical bit for bit whichever GPU computed it; only timings differ.
#pragma once
#include <functional>
#include <string>
#include <vector>

#include "experiments/engine/plan_rows.hpp"

namespace gemmlab::engine {

struct WorkerContext {
  int worker = 0;  // 0..workers-1: the index into the --gpus list
  // Hands one finished row to the sink (thread-safe; on disk when it returns, for a journal sink).
  std::function<void(const std::vector<std::string>&)> emit;
  // True once the run should stop: the worker finishes the row in progress and returns.
  std::function<bool()> should_stop;
  // A line for the run's log (thread-safe; kept above a live progress bar).
  std::function<void(const std::string&)> log;
};

struct DispatchOptions {
  int workers = 1;
  // Called once in each worker's thread before its first problem (e.g. cudaSetDevice).
  std::function<void(int worker)> worker_start;
  std::function<bool()> should_stop = [] { return false; };
  std::function<void(const std::string&)> log;  // default: a line on stderr
};

struct DispatchResult {
  std::size_t problems_done = 0;  // problems whose worker returned
  std::size_t rows_emitted = 0;
  bool stopped = false;           // should_stop() became true: some rows may not have been computed
};

using WorkerFn = std::function<void(const Problem&, WorkerContext&)>;
using RowSink = std::function<void(const std::vector<std::string>&)>;

// Runs `fn` on every problem with `opt.workers` threads (one worker runs in the calling thread, so
// a one-GPU run keeps its CUDA context where it was). If a worker throws, no new problem starts,
// the others finish theirs, and the first exception is rethrown.
DispatchResult dispatch(const std::vector<Problem>& problems, const WorkerFn& fn, const RowSink& sink,
                        const DispatchOptions& opt);

}  // namespace gemmlab::engine
