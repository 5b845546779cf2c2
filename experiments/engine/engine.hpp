// The engine's run loop, with the computation of a problem's rows left to the caller: a session
// (lock, journal, resume), workers fed problems, every finished row journaled and counted in the
// progress, a clean stop on SIGINT/SIGTERM with the command to resume, and the atomic final CSV
// and metadata once every row is done.
//
// `gemmlab run` builds the request (paths, identity, this run's rows) and a WorkerFn that computes
// one problem's rows (inputs, reference, every kernel of the problem; or status `planned` rows for
// --dry-run), and returns run_rows()'s exit status.
#pragma once
#include <cstdio>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "experiments/engine/dispatch.hpp"
#include "experiments/engine/session.hpp"

namespace gemmlab::engine {

struct EngineRequest {
  OutputPaths paths;
  JournalIdentity identity;
  std::vector<RowKey> rows;        // this run's rows (the plan's, or one shard's), in plan order
  SessionOptions session;          // --resume, --force, the command line for the lock
  std::vector<std::string> argv;   // the command as typed, for the resume hint
  int workers = 1;                 // one per GPU of --gpus
  std::function<void(int worker)> worker_start;  // e.g. cudaSetDevice(gpus[worker])
  std::FILE* log = stderr;
  std::optional<bool> live_progress;  // default: a live bar when `log` is a terminal
  // Called before any row is computed with each row found finished in the journal (plan order),
  // so the caller can count them as if computed now (e.g. error rows, for the exit status).
  std::function<void(const std::vector<std::string>&)> on_resumed_row;
};

struct EngineResult {
  int exit_status = 0;     // 0: complete and finalised; 128 + signal: stopped, journal kept
  std::size_t resumed = 0;   // rows found finished in the journal
  std::size_t computed = 0;  // rows computed by this run
  bool complete = false;
};

// Runs the pending rows. `metadata` is called once, after the last row, to build the metadata
// JSON; run_rows adds nothing to it (put engine_metadata(plan, shard) under "engine" for merge).
// Throws UsageError from the session's checks before anything is computed; a worker's exception
// is rethrown after the log says how many rows the journal keeps and how to resume.
EngineResult run_rows(const EngineRequest& req, const WorkerFn& compute, const std::function<nlohmann::json()>& metadata);

}  // namespace gemmlab::engine
