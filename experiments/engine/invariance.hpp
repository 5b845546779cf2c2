// `gemmlab invariance`: determinism and batch invariance of one kernel, measured bit for bit.
//
//  * repeat: the same inputs launched `repeats` times; every entry compared with the first launch.
//  * m:      rows [0, m) of C computed with M = m rows (A's first m rows) against the same rows of C
//            computed at the full M, for every m of the sweep. A served model computes a request's
//            row in a batch of m rows: a kernel is batch invariant where these agree.
//  * n:      the same for columns [0, n) (B's first n columns).
//  * k_tail: C at K against C at K + t with the t extra columns of A and rows of B zero (a padded or
//            growing reduction): an order that does not depend on K leaves every bit as it was.
//  * cost:   bias and spread of the relative error (reference/error_stats.hpp) and the median time
//            at the full size, so that an invariant configuration can be weighed against the default.
//
// For every size that differs, the row's `why` says what changed, in words: a stream-K kernel's
// chunk map (Kernel::k_chunks), the library's algorithm (cuBLASLt's heuristic choice), and where K
// is small enough, the summation order of the first differing entry at both sizes as the masking
// experiment reveals it (experiments/engine/reveal.hpp): split-K count, another tree, or the same
// tree (then the difference lies elsewhere). A size the kernel cannot take (its multiples,
// supports()) is a not_supported row, never left out.
//
// Plain C++: the kernels run through the Device interface, so the CPU tests drive this with a fake.
#pragma once
#include <cstdint>
#include <cstdio>
#include <functional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "experiments/device/runner.hpp"
#include "experiments/engine/reveal.hpp"
#include "experiments/engine/session.hpp"
#include "kernels/kernel.hpp"
#include "reference/distributions.hpp"

namespace gemmlab {

struct InvarianceSpec {
  int M = 0, N = 0, K = 0;    // the full size
  std::vector<int> ms;        // each in [1, M]
  std::vector<int> ns;        // each in [1, N]
  std::vector<int> k_tails;   // each >= 1: K + t with a zero tail
  int repeats = 3;            // launches compared run to run (1: no repeat row)
  Distribution distribution;
  std::uint64_t seed = 1;
  int reveal_k_max = 256;     // reveal orders only where K (or K + t) is at most this
  bool cost = true;           // the cost row (needs an exact reference of the full size)
  TimingOptions timing;       // warm-up and timed repetitions of every launch
  std::string config = "default";  // the library setting this kernel runs under (CSV `config`)
  int threads = 0;            // CPU threads for the reference and statistics (0: all)
};

// Ways to explain a difference beyond Device::run; each may be left empty.
struct InvarianceProbes {
  // The order of entry (i, j) at (M, N, K). Empty: the masking experiment through Device::run
  // (whole operands per query: fine on a CPU, slow for a large GPU problem; the CLI passes the
  // GPU's EntryRunner instead).
  std::function<RevealedTree(const Kernel&, int M, int N, int K, int i, int j)> reveal;
  // The library's choice at (M, N, K), e.g. cuBLASLt's algorithm, tile, split-K and reduction
  // scheme; "" where the library says nothing.
  std::function<std::string(const Kernel&, int M, int N, int K)> algorithm;
};

// The CSV's columns, in order (one name per InvarianceRow field).
const std::vector<std::string>& invariance_columns();

struct InvarianceRow {
  std::string kernel, config, family, input_format, output_format, gpu, distribution;
  std::uint64_t seed = 0;
  std::string check;          // repeat, m, n, k_tail, cost
  int M = 0, N = 0, K = 0;    // the full size
  int m = 0, n = 0, k = 0;    // the size of this row's launch
  long long compared = 0, differing = 0;
  int first_i = -1, first_j = -1;  // the first differing entry (row-major order)
  std::string status;         // equal, differs, not_supported, error, measured (cost)
  std::string algorithm;      // the library's choice at (m, n, k)
  std::string algorithm_full; // ... and at the full size
  std::string why;            // what differs, in words
  std::string by_construction;  // invariance_by_construction(kernel)
  double time_ms_median = -1, rel_mean = 0, rel_std = 0;  // cost rows (time: every launched row)
  std::string note;
  std::vector<std::string> cells() const;
};

// Whether a kernel is batch invariant by construction, from its numerics record: "yes: ..." for a
// fixed order (fixed tiling, a fixed split-K), "depends: ..." for stream-K (k_chunked), "unknown:
// ..." for library and run-time kernels whose order gemmlab does not know.
std::string invariance_by_construction(const Kernel& k);

// The parts a tree sums separately from +0 and adds together at the end (split-K), as subtree
// node ids in increasing k: below the root, a node whose children are all sums of several
// k-steps (depth >= 2) only combines parts; anything else is one part. A running sum (sequential,
// in_mma, external blocks) is one part.
std::vector<int> split_parts(const SummationTree& t);
// "2 parts: k in [0,32); k in [32,64)".
std::string describe_parts(const SummationTree& t);

// Words for the difference between the trees of one entry at two sizes (labels name the sizes):
// split-K counts, another tree with the same count, or the same tree.
std::string explain_trees(const SummationTree& a, const std::string& label_a, const SummationTree& b,
                          const std::string& label_b);

// The default sweep of m (or n) for a full size `full`: 1..8, powers of two
// and their neighbours (2^p - 1, 2^p + 1: not tile multiples); sorted, within [1, full) (m = full
// is the full launch itself).
std::vector<int> default_sweep(int full);
// A sweep as the CLI, suites and Python give it: "default" (default_sweep(full)) or whole numbers,
// each entry possibly comma-separated. Throws UsageError naming `what` and the entry.
std::vector<int> parse_sweep(const std::vector<std::string>& entries, int full, const std::string& what);

// Throws UsageError naming what is wrong: a size that is not positive, an m outside [1, M], an n
// outside [1, N], a K tail below 1, repeats below 1.
void validate_invariance_spec(const InvarianceSpec& spec);

// Every row for one kernel (in the order repeat, m, n, k_tail, cost). Throws UsageError when the
// spec is inconsistent (an m above M, ...); a kernel error becomes an `error` row.
std::vector<InvarianceRow> check_invariance(const Kernel& k, Device& dev, const InvarianceSpec& spec,
                                            const InvarianceProbes& probes = {});

// One kernel under one library setting, with its ways to explain a difference.
struct InvarianceTask {
  const Kernel* kernel = nullptr;
  std::string config = "default";
  InvarianceProbes probes;
};

// One unit of a run: a task at one spec (size, distribution, seed, sweeps); spec.config is the task's.
struct InvarianceUnit {
  InvarianceTask task;
  InvarianceSpec spec;
};

// The rows check_invariance returns for k at spec, before anything runs (status empty): the plan
// of a run, and the keys its journal records.
std::vector<InvarianceRow> planned_invariance_rows(const Kernel& k, const InvarianceSpec& spec, const std::string& gpu);
// A row's identity in a run: kernel|config|distribution|seed|MxNxK|check|mxnxk, from its CSV fields.
std::string invariance_row_key(const std::vector<std::string>& fields);

struct InvarianceRunRequest {
  std::vector<InvarianceUnit> units;
  std::string out_csv;
  engine::SessionOptions session;  // --resume, --force, the command line for the lock
  std::vector<std::string> argv;   // the command as typed, for the resume hint
  nlohmann::json meta;             // the metadata so far (command, GPU, ...); the run adds the plan
  std::FILE* log = stderr;
};

// Runs every unit through one journaled session, as `gemmlab run` runs its rows
// (experiments/engine/session.hpp): each unit's rows are journaled when it finishes, SIGINT/SIGTERM
// stop after the unit in progress (the log says how to resume), --resume skips the units the
// journal holds, and out_csv with its metadata appears atomically once every unit is done. Logs one
// summary line per unit. Returns the exit status: 0, 3 when some row is an `error`, 128 + signal
// when stopped; `rows` (if given) gets the final rows' fields in order. Throws UsageError (before
// anything runs) for a bad spec, an unwritable or existing output, or a journal of another run.
int run_invariance(const InvarianceRunRequest& req, Device& dev, std::vector<std::vector<std::string>>* rows = nullptr);

// The spec as metadata (sizes, sweeps, repeats, distribution, seed, reveal limit, timing).
nlohmann::json invariance_spec_json(const InvarianceSpec& spec);

}  // namespace gemmlab
