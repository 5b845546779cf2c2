// One run's hold on its output: the lock, the no-overwrite rule, the journal (new or resumed),
// and the atomic finalisation. The run loop asks it which rows are pending, hands it each row as
// it finishes, and finalises it when none is pending.
//
// Files for `-o out.csv`:
//   out.csv            the final CSV, rows in plan order; appears only when every row is done
//   out.meta.json      its metadata; appears just before the CSV
//   out.csv.journal    finished rows while the run is under way (removed by finalise)
//   out.csv.lock       held while a run writes this output (removed when it ends)
#pragma once
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <unordered_map>
#include <unordered_set>
#include <vector>

#include <nlohmann/json.hpp>

#include "experiments/engine/journal.hpp"
#include "experiments/engine/lock.hpp"
#include "experiments/engine/plan_rows.hpp"

namespace gemmlab::engine {

struct OutputPaths {
  std::string csv, meta, journal, lock;
  // "x.csv" -> x.csv, x.meta.json, x.csv.journal, x.csv.lock. Throws UsageError unless it ends in .csv.
  static OutputPaths for_csv(const std::string& csv);
};

// Throws UsageError if the final CSV or its metadata exists and `force` is false, saying how to
// keep it (another --out) or replace it (--force).
void check_no_overwrite(const OutputPaths& paths, bool force);

struct SessionOptions {
  bool resume = false;       // continue the journal (refused when there is none)
  bool force = false;        // replace an existing final CSV, or discard an existing journal
  std::string command_line;  // written into the lock, for the message another run gets
  // With resume: the journal's rows whose kernel did not finish or raised (status timeout, faulted, error:
  // report/result.hpp retried_by_retry_failed) are dropped from it before the run, so they are computed again.
  bool retry_failed = false;
};

class RunSession {
 public:
  // In this order: takes the lock; with --resume, recovers the journal and refuses if there is
  // none or if its identity differs from `id` (plan, binary, GPU, shard or columns changed); without it,
  // refuses to replace a journal or a final CSV unless --force. `rows`: this run's rows
  // (the plan's, or one shard's) in plan order. Throws UsageError, having written nothing.
  RunSession(const OutputPaths& paths, const JournalIdentity& id, std::vector<RowKey> rows, const SessionOptions& opt);
  // The same for results with several rows per kernel and problem (`gemmlab invariance`: one row
  // per check and size): a row's key is key_of(its fields); `keys` are this run's, in final order.
  using RowKeyFn = std::function<std::string(const std::vector<std::string>& fields)>;
  RunSession(const OutputPaths& paths, const JournalIdentity& id, std::vector<std::string> keys, RowKeyFn key_of,
             const SessionOptions& opt);
  ~RunSession();  // keeps the journal unless finalised; releases the lock

  const std::vector<RowKey>& rows() const { return rows_; }
  std::vector<RowKey> pending() const;   // rows not yet finished, in plan order
  bool finished(const std::string& key) const;  // whether the row of this key is recorded
  std::size_t resumed() const { return resumed_; }
  std::size_t retried() const { return retried_; }  // rows dropped from the journal by retry_failed
  // The rows finished so far (resumed ones included), in plan order.
  std::vector<std::vector<std::string>> finished_rows() const;
  // What the start did, for the log: "resumed out.csv.journal: 8 of 30 rows finished, …".
  const std::string& start_note() const { return note_; }

  // Journals a finished row (on disk before it returns). Thread-safe. Throws std::logic_error if
  // the row's key is not pending (not in this run, or already recorded): a bug in the caller.
  void record(const std::vector<std::string>& fields);
  bool complete() const;

  // With every row recorded: writes the metadata, then the CSV (rows in plan order), each
  // atomically and durably, then removes the journal and the lock. Throws std::logic_error if
  // rows are missing.
  void finalise(const nlohmann::json& meta);

 private:
  OutputPaths paths_;
  JournalIdentity id_;
  void open(const SessionOptions& opt);
  void drop_failed(RecoveredJournal& rec);  // SessionOptions::retry_failed
  std::vector<RowKey> rows_;              // empty for a session keyed by RowKeyFn
  std::vector<std::string> order_;        // every row's key, in final order
  RowKeyFn key_of_;
  std::unordered_set<std::string> keys_;  // of order_
  std::unique_ptr<OutputLock> lock_;
  std::unique_ptr<JournalWriter> journal_;
  std::unordered_map<std::string, std::vector<std::string>> done_;  // key -> row
  std::size_t resumed_ = 0, retried_ = 0;
  std::string note_;
  mutable std::mutex mu_;
};

}  // namespace gemmlab::engine
