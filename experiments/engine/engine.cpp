#include "experiments/engine/engine.hpp"

#include <atomic>
#include <csignal>
#include <cstring>
#include <stdexcept>

#include "experiments/engine/progress.hpp"
#include "experiments/engine/signals.hpp"

namespace gemmlab::engine {

namespace {

// Handlers for the run's lifetime only: before and after it, Ctrl-C ends gemmlab at once.
struct StopHandlers {
  StopHandlers() { install_stop_handlers(); }
  ~StopHandlers() { remove_stop_handlers(); }
};

std::string signal_name(int sig) {
  if (sig == SIGINT) return "SIGINT";
  if (sig == SIGTERM) return "SIGTERM";
  return "signal " + std::to_string(sig);
}

}  // namespace

EngineResult run_rows(const EngineRequest& req, const WorkerFn& compute, const std::function<nlohmann::json()>& metadata) {
  RunSession session(req.paths, req.identity, req.rows, req.session);
  EngineResult result;
  result.resumed = session.resumed();
  if (!session.start_note().empty()) std::fprintf(req.log, "[gemmlab] %s\n", session.start_note().c_str());
  if (req.on_resumed_row)
    for (const auto& row : session.finished_rows()) req.on_resumed_row(row);

  // The ETA is paced per unit of planned work, M N K of each row (progress.hpp says why).
  auto work_of = [](const PlanSize& z) { return static_cast<double>(z.M) * z.N * z.K; };
  ProgressOptions popt;
  for (const RowKey& k : session.pending()) popt.work += work_of(k.size);
  Progress progress(req.rows.size(), session.resumed(), req.log, req.live_progress, popt);
  std::atomic<std::size_t> computed{0};
  auto keep_hint = [&](const std::string& why) {
    progress.finish();
    std::fprintf(req.log,
                 "[gemmlab] %s: %zu of %zu rows are kept in %s; continue with:\n  %s\n", why.c_str(),
                 session.rows().size() - session.pending().size(), session.rows().size(), req.paths.journal.c_str(),
                 resume_command(req.argv).c_str());
  };

  DispatchOptions opt;
  opt.workers = req.workers;
  opt.worker_start = req.worker_start;
  opt.should_stop = [] { return stop_signal() != 0; };
  opt.log = [&](const std::string& line) { progress.log(line); };
  auto sink = [&](const std::vector<std::string>& row) {
    session.record(row);
    ++computed;
    progress.row_done(work_of(key_of_row(req.identity.columns, row).size));
  };
  {
    StopHandlers handlers;
    try {
      dispatch(group_by_problem(session.pending()), compute, sink, opt);
    } catch (const std::exception& e) {
      keep_hint(std::string("stopped by an error (") + e.what() + ")");
      throw;
    }
    result.computed = computed.load();
    if (!session.complete()) {
      const int sig = stop_signal();
      if (sig == 0) throw std::logic_error("run_rows: the workers returned with rows still pending and no stop asked");
      keep_hint("stopped by " + signal_name(sig));
      result.exit_status = stopped_exit_status(sig);
      return result;
    }
  }
  // Every row is in the journal: a signal now no longer loses anything, so finish the files.
  session.finalise(metadata());
  progress.finish();
  std::fprintf(req.log, "[gemmlab] wrote %s (%zu rows) and %s\n", req.paths.csv.c_str(), req.rows.size(), req.paths.meta.c_str());
  result.complete = true;
  return result;
}

}  // namespace gemmlab::engine
