// The journal, the lock, resume, no-overwrite and finalisation (experiments/engine/journal,
// lock, session): what keeps every finished row of an interrupted run.
#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <csignal>

#include "engine_test_util.hpp"
#include "experiments/engine/files.hpp"
#include "experiments/engine/lock.hpp"
#include "experiments/engine/session.hpp"
#include "experiments/plan/plan.hpp"

using namespace engine_test;
using gemmlab::UsageError;

namespace {

std::string what_of(const std::function<void()>& f) {
  try {
    f();
  } catch (const UsageError& e) {
    return e.what();
  }
  return "(no UsageError)";
}

}  // namespace

TEST(EngineFiles, CsvRecordsKeepQuotedNewlinesAndFindTheTornTail) {
  const std::vector<std::string> a = {"x", "a, \"b\"\nc", ""}, b = {"y", "2", "3"};
  const std::string text = csv_line(a) + csv_line(b);
  CsvRecords r = parse_csv(text);
  ASSERT_EQ(r.records.size(), 2u);
  EXPECT_EQ(r.records[0], a);
  EXPECT_EQ(r.records[1], b);
  EXPECT_FALSE(r.torn_tail);
  EXPECT_EQ(r.complete_bytes, text.size());
  // Cut anywhere inside the second record: only the first survives.
  for (std::size_t cut = csv_line(a).size(); cut < text.size(); ++cut) {
    CsvRecords t = parse_csv(text.substr(0, cut));
    ASSERT_EQ(t.records.size(), 1u) << cut;
    EXPECT_EQ(t.complete_bytes, csv_line(a).size());
    EXPECT_EQ(t.torn_tail, cut > csv_line(a).size());
  }
}

// A CSV saved with CRLF line ends (RFC 4180; Python's csv module) reads as the same records: the last
// field is "note", not "note\r" (compare took the column for another and left it uncompared).
TEST(EngineFiles, CsvRecordsTakeCrlfLineEnds) {
  const std::string text = "kernel,note\r\nk1,\"a\r\nb\"\r\nk2,x\r\n";
  const CsvRecords r = parse_csv(text);
  ASSERT_EQ(r.records.size(), 3u);
  EXPECT_EQ(r.records[0], (std::vector<std::string>{"kernel", "note"}));
  EXPECT_EQ(r.records[1], (std::vector<std::string>{"k1", "a\r\nb"})) << "inside quotes a CR is the field's";
  EXPECT_EQ(r.records[2], (std::vector<std::string>{"k2", "x"}));
  EXPECT_FALSE(r.torn_tail);
  EXPECT_EQ(r.complete_bytes, text.size());
}

TEST(EngineFiles, WriteDurablyLeavesNoPartialFile) {
  TempDir d("durable");
  write_durably(d / "x.csv", "a,b\n");
  EXPECT_EQ(slurp(d / "x.csv"), "a,b\n");
  EXPECT_FALSE(fs::exists(d / "x.csv.partial"));
  EXPECT_THROW(write_durably(d / "no_such_folder/x.csv", "a"), UsageError);
}

TEST(EngineJournal, AppendsAndRecoversEveryRow) {
  TempDir d("journal");
  const auto id = identity(small_plan());
  const auto keys = plan_rows(small_plan());
  {
    JournalWriter w(d / "out.csv.journal", id);
    for (int i = 0; i < 10; ++i) w.append(fake_row(keys[i]));
    EXPECT_THROW(w.append({"too", "few"}), std::logic_error);
  }
  RecoveredJournal r = recover_journal(d / "out.csv.journal");
  ASSERT_TRUE(r.has_identity);
  EXPECT_EQ(identity_difference(id, r.identity), "");
  ASSERT_EQ(r.rows.size(), 10u);
  for (int i = 0; i < 10; ++i) EXPECT_EQ(r.rows[i], fake_row(keys[i]));
  EXPECT_EQ(r.dropped, "");
  EXPECT_EQ(r.complete_bytes, slurp(d / "out.csv.journal").size());
}

// A crash while a row is being written leaves a prefix of it: at every cut, recovery keeps the
// rows before it and drops the rest; continuing the journal then appends cleanly after them.
TEST(EngineJournal, RowCutShortAnywhereIsDroppedAndTheJournalContinues) {
  TempDir d("torn");
  const auto id = identity(small_plan());
  const auto keys = plan_rows(small_plan());
  const std::string path = d / "out.csv.journal";
  {
    JournalWriter w(path, id);
    for (int i = 0; i < 3; ++i) w.append(fake_row(keys[i]));
  }
  const std::string three = slurp(path);
  const std::string fourth = csv_line(fake_row(keys[3]));
  for (std::size_t cut = 0; cut < fourth.size(); ++cut) {
    spit(path, three + fourth.substr(0, cut));
    RecoveredJournal r = recover_journal(path);
    ASSERT_EQ(r.rows.size(), 3u) << "cut at " << cut;
    EXPECT_EQ(r.complete_bytes, three.size());
    EXPECT_EQ(r.dropped.empty(), cut == 0) << r.dropped;
    {
      JournalWriter w(path, r);
      w.append(fake_row(keys[4]));
    }
    RecoveredJournal again = recover_journal(path);
    ASSERT_EQ(again.rows.size(), 4u) << "cut at " << cut;
    EXPECT_EQ(again.rows[3], fake_row(keys[4]));
    EXPECT_EQ(again.dropped, "");
  }
  // A last line that has its newline but too few fields is the same damage.
  spit(path, three + "sgemm_01_naive,fp32\n");
  RecoveredJournal r = recover_journal(path);
  EXPECT_EQ(r.rows.size(), 3u);
  EXPECT_EQ(r.complete_bytes, three.size());
  EXPECT_NE(r.dropped.find("2 of 11 fields"), std::string::npos) << r.dropped;
  // In the middle, it is not crash damage: refused.
  spit(path, three + "sgemm_01_naive,fp32\n" + fourth);
  EXPECT_NE(what_of([&] { recover_journal(path); }).find("damaged or edited"), std::string::npos);
  // Killed while writing the identity line: no rows, and a new journal is started.
  spit(path, id.to_json().dump().substr(0, 20));
  r = recover_journal(path);
  EXPECT_FALSE(r.has_identity);
  EXPECT_TRUE(r.rows.empty());
  spit(path, "not json\n");
  EXPECT_NE(what_of([&] { recover_journal(path); }).find("not a gemmlab journal"), std::string::npos);
}

TEST(EngineJournal, IdentityDifferencesAreNamed) {
  const auto id = identity(small_plan());
  auto other = id;
  other.plan_hash = "sha256:00";
  other.gpu_uuid = "GPU-1111";
  const std::string diff = identity_difference(id, other);
  EXPECT_NE(diff.find("plan changed"), std::string::npos) << diff;
  EXPECT_NE(diff.find("GPU UUID changed"), std::string::npos) << diff;
  EXPECT_EQ(diff.find("binary"), std::string::npos) << diff;
  other = id;
  other.git_commit = "def456";
  EXPECT_NE(identity_difference(id, other).find("binary (git commit) changed: journal has 'def456', this run 'abc123'"),
            std::string::npos);
  EXPECT_EQ(JournalIdentity::from_json(id.to_json()).to_json(), id.to_json());
}

// --- the session: lock, resume, no overwrite, finalisation ----------------------------------

namespace {

struct Output {
  OutputPaths paths;
  std::vector<RowKey> rows = plan_rows(small_plan());
  JournalIdentity id = identity(small_plan());
  explicit Output(const TempDir& d) : paths(OutputPaths::for_csv(d / "out.csv")) {}
  std::unique_ptr<RunSession> start(bool resume = false, bool force = false) {
    return std::make_unique<RunSession>(paths, id, rows, SessionOptions{resume, force, "gemmlab run -o out.csv"});
  }
};

nlohmann::json meta() { return {{"gemmlab_version", "0.1"}}; }

}  // namespace

TEST(EngineSession, ResumeSkipsExactlyTheFinishedRows) {
  TempDir d("resume");
  Output run(d);
  {
    auto s = run.start();
    EXPECT_EQ(s->pending().size(), run.rows.size());
    for (int i : {0, 1, 2, 5, 7}) s->record(fake_row(run.rows[i]));  // rows of two workers finish out of order
    EXPECT_THROW(s->record(fake_row(run.rows[0])), std::logic_error);
    EXPECT_FALSE(fs::exists(run.paths.csv));
  }  // the run stops here: the journal stays, the lock goes
  EXPECT_TRUE(fs::exists(run.paths.journal));
  EXPECT_FALSE(fs::exists(run.paths.lock));

  // Without --resume or --force, an interrupted run's journal is never discarded.
  EXPECT_NE(what_of([&] { run.start(); }).find("5 finished rows of an interrupted run: pass --resume"), std::string::npos);

  auto s = run.start(/*resume=*/true);
  EXPECT_EQ(s->resumed(), 5u);
  auto pending = s->pending();
  ASSERT_EQ(pending.size(), run.rows.size() - 5);
  std::vector<RowKey> expected;
  for (std::size_t i = 0; i < run.rows.size(); ++i)
    if (i != 0 && i != 1 && i != 2 && i != 5 && i != 7) expected.push_back(run.rows[i]);
  EXPECT_EQ(pending, expected);
  EXPECT_NE(s->start_note().find("5 of 48 rows finished"), std::string::npos) << s->start_note();
  for (const auto& k : pending) s->record(fake_row(k));
  ASSERT_TRUE(s->complete());
  s->finalise(meta());

  // The final CSV: every row once, in plan order, byte-identical to an uninterrupted run's.
  std::string expected_csv = csv_line(columns());
  for (const auto& k : run.rows) expected_csv += csv_line(fake_row(k));
  EXPECT_EQ(slurp(run.paths.csv), expected_csv);
  EXPECT_EQ(nlohmann::json::parse(slurp(run.paths.meta))["gemmlab_version"], "0.1");
  EXPECT_FALSE(fs::exists(run.paths.journal));
  EXPECT_FALSE(fs::exists(run.paths.lock));
  EXPECT_FALSE(fs::exists(run.paths.csv + ".partial"));
}

TEST(EngineSession, ResumeRefusesAfterAPlanBinaryOrGpuChange) {
  TempDir d("refuse");
  Output run(d);
  {
    auto s = run.start();
    s->record(fake_row(run.rows[0]));
  }
  const std::string journal_before = slurp(run.paths.journal);
  struct Change {
    const char* says;
    std::function<void(Output&)> apply;
  } changes[] = {
      {"plan changed", [](Output& r) {
         PlanSpec p = small_plan();
         p.reps = 7;
         r.id.plan_hash = plan_hash(p);
       }},
      {"binary (git commit) changed", [](Output& r) { r.id.git_commit = "fff"; }},
      {"GPU changed", [](Output& r) { r.id.gpu_name = "NVIDIA H100"; }},
      {"shard changed", [](Output& r) { r.id.shard = "1/2"; }},
  };
  for (auto& c : changes) {
    Output changed(d);
    c.apply(changed);
    const std::string msg = what_of([&] { changed.start(/*resume=*/true); });
    EXPECT_NE(msg.find(c.says), std::string::npos) << msg;
    EXPECT_NE(msg.find("cannot resume"), std::string::npos) << msg;
    EXPECT_EQ(slurp(run.paths.journal), journal_before) << "a refused resume touched the journal";
    EXPECT_FALSE(fs::exists(run.paths.lock));
  }
  // --force (without --resume) discards the journal and starts again.
  auto s = run.start(false, /*force=*/true);
  EXPECT_EQ(s->pending().size(), run.rows.size());
}

TEST(EngineSession, ResumeWithTornJournalLosesOnlyTheRowInProgress) {
  TempDir d("torn_session");
  Output run(d);
  {
    auto s = run.start();
    for (int i = 0; i < 4; ++i) s->record(fake_row(run.rows[i]));
  }
  // SIGKILL in the middle of the fifth row's write.
  const std::string fifth = csv_line(fake_row(run.rows[4]));
  std::ofstream(run.paths.journal, std::ios::app) << fifth.substr(0, fifth.size() / 2);
  auto s = run.start(true);
  EXPECT_EQ(s->resumed(), 4u);
  EXPECT_NE(s->start_note().find("dropped a row cut short"), std::string::npos) << s->start_note();
  for (const auto& k : s->pending()) s->record(fake_row(k));
  s->finalise(meta());
  EXPECT_EQ(parse_csv(slurp(run.paths.csv)).records.size(), run.rows.size() + 1);
}

TEST(EngineSession, NeverOverwritesAFinalCsvWithoutForce) {
  TempDir d("overwrite");
  Output run(d);
  spit(run.paths.csv, "precious\n");
  EXPECT_NE(what_of([&] { run.start(); }).find("already exists: choose another --out to keep it, or pass --force"),
            std::string::npos);
  EXPECT_NE(what_of([&] { run.start(true); }).find("is complete, with no journal to resume"), std::string::npos);
  EXPECT_EQ(slurp(run.paths.csv), "precious\n");
  EXPECT_FALSE(fs::exists(run.paths.journal));
  fs::remove(run.paths.csv);
  spit(run.paths.meta, "{}");  // the metadata alone is protected as well
  EXPECT_THROW(check_no_overwrite(run.paths, false), UsageError);
  EXPECT_NO_THROW(check_no_overwrite(run.paths, true));
  fs::remove(run.paths.meta);
  EXPECT_NO_THROW(check_no_overwrite(run.paths, false));

  // --force replaces it, but only when the new run completes: until then the old CSV stays.
  spit(run.paths.csv, "precious\n");
  auto s = run.start(false, true);
  for (const auto& k : run.rows) s->record(fake_row(k));
  EXPECT_EQ(slurp(run.paths.csv), "precious\n");
  s->finalise(meta());
  EXPECT_EQ(slurp(run.paths.csv).rfind("kernel,input_format", 0), 0u);
}

TEST(EngineSession, FinaliseRefusesWhileRowsAreMissing) {
  TempDir d("incomplete");
  Output run(d);
  auto s = run.start();
  s->record(fake_row(run.rows[0]));
  EXPECT_FALSE(s->complete());
  EXPECT_THROW(s->finalise(meta()), std::logic_error);
  EXPECT_FALSE(fs::exists(run.paths.csv));
  EXPECT_FALSE(fs::exists(run.paths.meta));
}

// --- the lock, between two real processes -------------------------------------------------

TEST(EngineLock, SecondProcessRefusesNamingTheHolder) {
  TempDir d("lock");
  const std::string lock = d / "out.csv.lock";
  int ready[2], go[2];
  ASSERT_EQ(::pipe(ready), 0);
  ASSERT_EQ(::pipe(go), 0);
  const pid_t child = ::fork();
  ASSERT_GE(child, 0);
  if (child == 0) {
    // The holder: takes the lock, says so, waits to be told to exit (or is killed).
    int rc = 0;
    try {
      OutputLock held(lock, "gemmlab run -o out.csv (holder)");
      char c = 1;
      if (::write(ready[1], &c, 1) != 1) rc = 3;
      if (::read(go[0], &c, 1) != 1) rc = 4;
    } catch (...) {
      rc = 5;
    }
    ::_exit(rc);
  }
  char c;
  ASSERT_EQ(::read(ready[0], &c, 1), 1);

  const std::string msg = what_of([&] { OutputLock second(lock, "gemmlab run -o out.csv (second)"); });
  EXPECT_NE(msg.find("another gemmlab run is writing this output"), std::string::npos) << msg;
  EXPECT_NE(msg.find("pid " + std::to_string(child)), std::string::npos) << msg;
  EXPECT_NE(msg.find("on host "), std::string::npos) << msg;
  EXPECT_NE(msg.find("(holder)"), std::string::npos) << msg;
  auto holder = read_lock_holder(lock);
  ASSERT_TRUE(holder);
  EXPECT_EQ(holder->pid, child);

  // A whole session refuses as well, before touching the journal.
  Output run(d);
  EXPECT_NE(what_of([&] { run.start(); }).find("pid " + std::to_string(child)), std::string::npos);
  EXPECT_FALSE(fs::exists(run.paths.journal));

  // The holder dies by SIGKILL, without any cleanup: the kernel releases its lock.
  ::kill(child, SIGKILL);
  int status = 0;
  ::waitpid(child, &status, 0);
  EXPECT_TRUE(WIFSIGNALED(status));
  EXPECT_TRUE(fs::exists(lock)) << "the killed holder's file stays, but no longer locks";
  {
    OutputLock mine(lock, "gemmlab run -o out.csv (after)");
    EXPECT_EQ(read_lock_holder(lock)->pid, ::getpid());
  }
  EXPECT_FALSE(fs::exists(lock));
  ::close(ready[0]), ::close(ready[1]), ::close(go[0]), ::close(go[1]);
}
