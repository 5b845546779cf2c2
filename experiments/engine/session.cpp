#include "experiments/engine/session.hpp"

#include <algorithm>
#include <filesystem>
#include <stdexcept>
#include <unordered_set>

#include "experiments/engine/files.hpp"
#include "experiments/report/files.hpp"
#include "experiments/report/result.hpp"
#include "experiments/plan/plan.hpp"

namespace fs = std::filesystem;

namespace gemmlab::engine {

OutputPaths OutputPaths::for_csv(const std::string& csv) {
  if (csv.size() < 5 || csv.substr(csv.size() - 4) != ".csv") throw UsageError("--out must name a .csv file, got '" + csv + "'");
  return {csv, csv.substr(0, csv.size() - 4) + ".meta.json", csv + ".journal", csv + ".lock"};
}

void check_no_overwrite(const OutputPaths& paths, bool force) {
  if (force) return;
  std::error_code ec;
  for (const auto* p : {&paths.csv, &paths.meta})
    if (fs::exists(*p, ec))
      throw UsageError("'" + *p + "' already exists: choose another --out to keep it, or pass --force to replace it");
}

RunSession::RunSession(const OutputPaths& paths, const JournalIdentity& id, std::vector<RowKey> rows,
                       const SessionOptions& opt)
    : paths_(paths), id_(id), rows_(std::move(rows)) {
  for (const auto& k : rows_) order_.push_back(k.str());
  key_of_ = [columns = id_.columns](const std::vector<std::string>& fields) {
    return key_of_row(columns, fields).str();
  };
  open(opt);
}

RunSession::RunSession(const OutputPaths& paths, const JournalIdentity& id, std::vector<std::string> keys,
                       RowKeyFn key_of, const SessionOptions& opt)
    : paths_(paths), id_(id), order_(std::move(keys)), key_of_(std::move(key_of)) {
  open(opt);
}

void RunSession::open(const SessionOptions& opt) {
  for (const auto& k : order_)
    if (!keys_.insert(k).second) throw std::logic_error("RunSession: the row " + k + " is in the run twice");
  make_output_folder(paths_.csv);
  // The lock first: everything looked at below could otherwise change under us.
  lock_ = std::make_unique<OutputLock>(paths_.lock, opt.command_line);
  std::error_code ec;
  const bool have_journal = fs::exists(paths_.journal, ec);

  if (have_journal && opt.resume) {
    RecoveredJournal rec = recover_journal(paths_.journal);
    if (rec.has_identity) {
      if (std::string diff = identity_difference(id_, rec.identity); !diff.empty())
        throw UsageError("cannot resume from '" + paths_.journal + "': " + diff + ". Its " + std::to_string(rec.rows.size()) +
                         " rows belong to another run: resume with the plan, binary and GPU that wrote them, or run "
                         "without --resume and with --force to discard them and start again");
      const auto& in_run = keys_;
      if (opt.retry_failed) drop_failed(rec);
      for (auto& row : rec.rows) {
        const std::string k = key_of_(row);
        // The identity matched, so a row outside this run or a second copy means the file was edited.
        if (!in_run.count(k) || !done_.emplace(k, std::move(row)).second)
          throw UsageError("'" + paths_.journal + "' holds the row " + k + (in_run.count(k) ? " twice" : ", which is not in this plan") +
                           ": the journal was damaged or edited; move it away, or pass --force without --resume to start again");
      }
      resumed_ = done_.size();
      journal_ = std::make_unique<JournalWriter>(paths_.journal, rec);
      note_ = "resuming '" + paths_.journal + "': " + std::to_string(resumed_) + " of " + std::to_string(order_.size()) +
              " rows finished" + (rec.dropped.empty() ? "" : "; dropped " + rec.dropped) +
              (opt.retry_failed ? "; " + std::to_string(retried_) + " timeout, faulted or error rows to compute again"
                                : std::string());
      return;
    }
    note_ = "'" + paths_.journal + "' holds no row (" + rec.dropped + "): starting from the first row";
  } else if (have_journal && !opt.force) {
    RecoveredJournal rec = recover_journal(paths_.journal);
    throw UsageError("'" + paths_.journal + "' holds " + std::to_string(rec.rows.size()) +
                     " finished rows of an interrupted run: pass --resume to continue it, or --force to discard it and start again");
  } else if (!have_journal) {
    if (opt.retry_failed && fs::exists(paths_.csv, ec))
      throw UsageError("'" + paths_.csv + "' is complete, with no journal: --retry-failed computes again the rows of an "
                       "interrupted run's journal; to compute a finished run's timeout, faulted or error rows again, run "
                       "those kernels into another --out, or the whole plan with --force");
    if (opt.resume && !opt.force && fs::exists(paths_.csv, ec))
      throw UsageError("'" + paths_.csv + "' is complete, with no journal to resume: nothing to do (pass --force to run it again)");
    if (opt.resume)
      throw UsageError("--resume: there is no journal '" + paths_.journal +
                       "' (no run writing this output was interrupted): run without --resume to start it");
    check_no_overwrite(paths_, opt.force);
  }
  journal_ = std::make_unique<JournalWriter>(paths_.journal, id_);
}

void RunSession::drop_failed(RecoveredJournal& rec) {
  const auto& cols = rec.identity.columns;
  const auto at = std::find(cols.begin(), cols.end(), "status");
  if (at == cols.end()) return;  // rows of a kind without statuses
  const std::size_t c = static_cast<std::size_t>(at - cols.begin());
  std::vector<std::vector<std::string>> kept;
  for (auto& row : rec.rows) {
    const auto st = parse_status(row[c]);
    if (st && retried_by_retry_failed(*st)) ++retried_;
    else kept.push_back(std::move(row));
  }
  if (!retried_) return;
  // The journal without them, in place of the old one in one rename: a crash leaves one or the other.
  std::string text = rec.identity.to_json().dump() + "\n";
  for (const auto& row : kept) text += csv_line(row);
  write_durably(paths_.journal, text);
  rec.rows = std::move(kept);
  rec.complete_bytes = text.size();
  rec.dropped.clear();
}

RunSession::~RunSession() = default;

std::vector<RowKey> RunSession::pending() const {
  std::lock_guard<std::mutex> lock(mu_);
  std::vector<RowKey> out;
  for (const auto& k : rows_)
    if (!done_.count(k.str())) out.push_back(k);
  return out;
}

bool RunSession::finished(const std::string& key) const {
  std::lock_guard<std::mutex> lock(mu_);
  return done_.count(key) > 0;
}

std::vector<std::vector<std::string>> RunSession::finished_rows() const {
  std::lock_guard<std::mutex> lock(mu_);
  std::vector<std::vector<std::string>> out;
  for (const auto& k : order_)
    if (auto it = done_.find(k); it != done_.end()) out.push_back(it->second);
  return out;
}

void RunSession::record(const std::vector<std::string>& fields) {
  const std::string k = key_of_(fields);
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (!keys_.count(k)) throw std::logic_error("record: row " + k + " is not in this run");
    if (done_.count(k)) throw std::logic_error("record: row " + k + " was recorded already");
    // Reserve the key before the (slow) fsync so that a second record of it fails at once.
    done_.emplace(k, fields);
  }
  try {
    journal_->append(fields);
  } catch (...) {
    std::lock_guard<std::mutex> lock(mu_);
    done_.erase(k);
    throw;
  }
}

bool RunSession::complete() const {
  std::lock_guard<std::mutex> lock(mu_);
  return done_.size() == order_.size();
}

void RunSession::finalise(const nlohmann::json& meta) {
  std::string csv = csv_line(id_.columns);
  {
    std::lock_guard<std::mutex> lock(mu_);
    for (const auto& k : order_) {
      auto it = done_.find(k);
      if (it == done_.end()) throw std::logic_error("finalise: row " + k + " has not been recorded");
      csv += csv_line(it->second);
    }
  }
  // Metadata first: a CSV under its final name always has its metadata beside it. A crash
  // between the steps leaves the journal, and --resume repeats them with the same bytes.
  write_durably(paths_.meta, meta.dump(2) + "\n");
  write_durably(paths_.csv, csv);
  journal_.reset();
  remove_durably(paths_.journal);
  lock_.reset();
}

}  // namespace gemmlab::engine
