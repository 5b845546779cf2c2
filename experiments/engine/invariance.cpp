// `gemmlab invariance`'s core; see invariance.hpp.
#include "experiments/engine/invariance.hpp"

#include <algorithm>
#include <bit>
#include <cmath>
#include <cstring>
#include <sstream>
#include <stdexcept>

#include "experiments/engine/files.hpp"
#include "experiments/engine/plan_rows.hpp"
#include "experiments/engine/signals.hpp"
#include "experiments/plan/plan.hpp"
#include "experiments/report/files.hpp"
#include "experiments/report/metadata.hpp"
#include "kernels/registry.hpp"
#include "reference/exact_gemm.hpp"
#include "reference/formats.hpp"

namespace gemmlab {
namespace {

std::string size_str(int M, int N, int K) {
  return std::to_string(M) + "x" + std::to_string(N) + "x" + std::to_string(K);
}

int depth(const SummationTree& t, int id) {
  if (t.is_leaf(id)) return 0;
  int d = 0;
  for (int c : t.children(id)) d = std::max(d, depth(t, c));
  return d + 1;
}

void collect_parts(const SummationTree& t, int id, std::vector<int>& out) {
  if (t.is_leaf(id) || depth(t, id) < 2) {
    out.push_back(id);
    return;
  }
  const auto& ch = t.children(id);
  const bool combines = std::all_of(ch.begin(), ch.end(), [&](int c) { return depth(t, c) >= 2; });
  if (!combines) {
    out.push_back(id);
    return;
  }
  for (int c : ch) collect_parts(t, c, out);
}

// Rows [0, rows) x columns [0, cols) of `a` ((?, a_cols) row-major) against the same entries of `b`.
struct Diff {
  long long compared = 0, differing = 0;
  int first_i = -1, first_j = -1;
};
Diff compare_bits(const std::vector<double>& a, int a_cols, const std::vector<double>& b, int b_cols, int rows,
                  int cols) {
  Diff d;
  for (int i = 0; i < rows; ++i)
    for (int j = 0; j < cols; ++j) {
      const double x = a[static_cast<std::size_t>(i) * a_cols + j], y = b[static_cast<std::size_t>(i) * b_cols + j];
      ++d.compared;
      if (std::bit_cast<std::uint64_t>(x) != std::bit_cast<std::uint64_t>(y)) {
        if (d.differing++ == 0) {
          d.first_i = i;
          d.first_j = j;
        }
      }
    }
  return d;
}

Matrix first_rows(const Matrix& A, int m) {
  Matrix out(m, A.cols);
  std::copy(A.v.begin(), A.v.begin() + static_cast<std::ptrdiff_t>(m) * A.cols, out.v.begin());
  return out;
}

Matrix first_cols(const Matrix& B, int n) {
  Matrix out(B.rows, n);
  for (int r = 0; r < B.rows; ++r)
    for (int c = 0; c < n; ++c) out(r, c) = B(r, c);
  return out;
}

// A (M, K) and B (K, N) padded to K + t with zero columns of A and zero rows of B.
Matrix pad_cols(const Matrix& A, int t) {
  Matrix out(A.rows, A.cols + t);
  for (int r = 0; r < A.rows; ++r)
    for (int c = 0; c < A.cols; ++c) out(r, c) = A(r, c);
  return out;
}
Matrix pad_rows(const Matrix& B, int t) {
  Matrix out(B.rows + t, B.cols);
  std::copy(B.v.begin(), B.v.end(), out.v.begin());
  return out;
}

std::string chunks_str(const std::vector<int>& cuts) {
  std::ostringstream s;
  s << (cuts.size() - 1) << (cuts.size() == 2 ? " chunk" : " chunks") << " {";
  for (std::size_t x = 0; x < cuts.size(); ++x) s << (x ? "," : "") << cuts[x];
  s << "}";
  return s.str();
}

// The index of an invariance column (the name is one of invariance_columns()).
std::size_t column(const std::string& name) {
  const auto& c = invariance_columns();
  return static_cast<std::size_t>(std::find(c.begin(), c.end(), name) - c.begin());
}

// The comparison's counts and verdict into the row.
void record(InvarianceRow& r, const Diff& d) {
  r.compared = d.compared;
  r.differing = d.differing;
  r.first_i = d.first_i;
  r.first_j = d.first_j;
  r.status = d.differing ? "differs" : "equal";
}

class Checker {
 public:
  Checker(const Kernel& k, Device& dev, const InvarianceSpec& s, const InvarianceProbes& p)
      : k_(k), dev_(dev), s_(s), p_(p) {}

  std::vector<InvarianceRow> run() {
    validate_invariance_spec(s_);
    // The planned rows first, so that a kernel that cannot run still has every one of them.
    std::vector<InvarianceRow> rows = planned_invariance_rows(k_, s_, dev_.info().name);
    const std::string hw = dev_.hardware_support(k_);
    const std::string base_size = check_size(k_, s_.M, s_.N, s_.K);
    if (!hw.empty() || !base_size.empty()) {
      for (auto& r : rows) {
        r.status = "not_supported";
        r.note = !hw.empty() ? hw : "the full size: " + base_size;
      }
      return rows;
    }
    A_ = generate(s_.distribution, Operand::A, s_.M, s_.K, k_.numerics.input, s_.seed, s_.threads);
    B_ = generate(s_.distribution, Operand::B, s_.K, s_.N, k_.numerics.input, s_.seed, s_.threads);
    try {
      full_ = launch(A_, B_);
    } catch (const std::exception& e) {
      for (auto& r : rows) {
        r.status = "error";
        r.note = std::string("the full-size launch failed: ") + e.what();
      }
      return rows;
    }
    algorithm_full_ = algorithm(s_.M, s_.N, s_.K);
    for (auto& r : rows) {
      r.algorithm_full = algorithm_full_;
      try {
        fill(r);
      } catch (const std::exception& e) {
        r.status = "error";
        r.note = e.what();
      }
    }
    return rows;
  }

 private:
  KernelRun launch(const Matrix& A, const Matrix& B) {
    KernelRun r = dev_.run(k_, A, B, s_.timing);
    if (static_cast<long long>(r.c.size()) != static_cast<long long>(A.rows) * B.cols)
      throw std::runtime_error("the device returned " + std::to_string(r.c.size()) + " entries for a " +
                               std::to_string(A.rows) + "x" + std::to_string(B.cols) + " output");
    return r;
  }

  std::string algorithm(int M, int N, int K) const { return p_.algorithm ? p_.algorithm(k_, M, N, K) : ""; }

  void fill(InvarianceRow& r) {
    if (r.check == "cost") return cost(r);
    if (std::string why = check_size(k_, r.m, r.n, r.k); !why.empty()) {
      r.status = "not_supported";
      r.note = why;
      return;
    }
    Diff d;
    r.algorithm = algorithm(r.m, r.n, r.k);
    if (r.check == "repeat") {
      r.algorithm = algorithm_full_;
      r.time_ms_median = full_.time_ms_median;
      // Within the full launch (first vs last repetition), then each further launch against it.
      long long within = full_.nondeterministic;
      d = compare_bits(full_.c, s_.N, full_.c, s_.N, s_.M, s_.N);
      for (int x = 1; x < s_.repeats; ++x) {
        KernelRun again = launch(A_, B_);
        within = std::max(within, again.nondeterministic);
        Diff dx = compare_bits(again.c, s_.N, full_.c, s_.N, s_.M, s_.N);
        if (dx.differing > d.differing) d = dx;
      }
      d.differing = std::max(d.differing, within);
      record(r, d);
      if (d.differing)
        r.why = "not deterministic run to run: " + std::to_string(d.differing) + " of " + std::to_string(d.compared) +
                " entries changed between launches on the same inputs (an order fixed at run time: atomics, or "
                "partial sums reduced in the order they arrive)";
      return;
    }
    KernelRun out;
    if (r.check == "m") {
      out = launch(first_rows(A_, r.m), B_);
      d = compare_bits(out.c, r.n, full_.c, s_.N, r.m, s_.N);
    } else if (r.check == "n") {
      out = launch(A_, first_cols(B_, r.n));
      d = compare_bits(out.c, r.n, full_.c, s_.N, s_.M, r.n);
    } else {  // k_tail
      out = launch(pad_cols(A_, r.k - s_.K), pad_rows(B_, r.k - s_.K));
      d = compare_bits(out.c, s_.N, full_.c, s_.N, s_.M, s_.N);
    }
    r.time_ms_median = out.time_ms_median;
    record(r, d);
    if (out.nondeterministic)
      r.note = std::to_string(out.nondeterministic) + " entries differed between this size's own launches";
    if (d.differing) r.why = explain(r);
  }

  void cost(InvarianceRow& r) {
    std::unique_ptr<ProblemInputs> in =
        dev_.inputs(s_.distribution, s_.M, s_.N, s_.K, k_.numerics.input, s_.seed, s_.threads);
    std::unique_ptr<ProblemReference> ref = dev_.reference(*in, ReferenceOptions{"auto", 4, s_.seed, s_.threads});
    Measurement m = dev_.measure(k_, *in, *ref, s_.timing, bound_model(k_.numerics, s_.K), false, s_.threads);
    ref->wait_verified();
    r.algorithm = algorithm_full_;
    r.status = "measured";
    r.time_ms_median = m.run.time_ms_median;
    r.rel_mean = m.stats.rel_mean;
    r.rel_std = m.stats.rel_std;
    r.note = "reference: " + ref->label;
  }

  // Words for why row r's first differing entry changed between its size and the full size.
  std::string explain(const InvarianceRow& r) {
    const int i = r.first_i, j = r.first_j;
    const std::string at_small = size_str(r.m, r.n, r.k), at_full = size_str(s_.M, s_.N, s_.K);
    std::vector<std::string> parts;
    if (!r.algorithm.empty() && r.algorithm != algorithm_full_)
      parts.push_back("the library chose another algorithm: " + r.algorithm + " at " + at_small + " vs " +
                      algorithm_full_ + " at " + at_full);
    else if (!r.algorithm.empty())
      parts.push_back("the library chose the same algorithm at both sizes (" + r.algorithm + ")");
    if (k_.numerics.k_chunked && k_.k_chunks) {
      const std::vector<int> small = k_.k_chunks(r.m, r.n, r.k).of(i, j), full = k_.k_chunks(s_.M, s_.N, s_.K).of(i, j);
      if (small != full)
        parts.push_back("stream-K split-K: C(" + std::to_string(i) + "," + std::to_string(j) + ") is summed in " +
                        chunks_str(small) + " at " + at_small + " vs " + chunks_str(full) + " at " + at_full +
                        " (the chunk map follows the tile count and the co-resident blocks)");
      else
        parts.push_back("stream-K: the same chunks " + chunks_str(full) + " at both sizes");
    }
    const int k_max = std::max(r.k, s_.K);
    if (k_max <= s_.reveal_k_max) {
      try {
        RevealedTree a = reveal(r.m, r.n, r.k, i, j), b = reveal(s_.M, s_.N, s_.K, i, j);
        parts.push_back("C(" + std::to_string(i) + "," + std::to_string(j) + "): " +
                        explain_trees(a.tree, "at " + at_small, b.tree, "at " + at_full));
      } catch (const std::exception& e) {
        parts.push_back(std::string("the order could not be revealed: ") + e.what());
      }
    } else if (parts.empty()) {
      parts.push_back("order not revealed: K = " + std::to_string(k_max) + " is above --reveal-k-max " +
                      std::to_string(s_.reveal_k_max) +
                      " (the masking experiment takes about K x depth launches); rerun at a smaller K to see it");
    }
    std::string out;
    for (const auto& p : parts) out += (out.empty() ? "" : "; ") + p;
    return out;
  }

  RevealedTree reveal(int M, int N, int K, int i, int j) {
    if (p_.reveal) return p_.reveal(k_, M, N, K, i, j);
    TimingOptions once;
    once.warmup = 0;
    once.reps = 1;
    once.flush_l2 = false;
    return reveal_tree_with(k_, K, [&](const std::vector<double>& a, const std::vector<double>& b) {
      Matrix A(M, K), B(K, N);
      for (int x = 0; x < K; ++x) {
        A(i, x) = a[x];
        B(x, j) = b[x];
      }
      return dev_.run(k_, A, B, once).c.at(static_cast<std::size_t>(i) * N + j);
    });
  }

  const Kernel& k_;
  Device& dev_;
  const InvarianceSpec& s_;
  const InvarianceProbes& p_;
  Matrix A_, B_;
  KernelRun full_;
  std::string algorithm_full_;
};

}  // namespace

void validate_invariance_spec(const InvarianceSpec& s) {
  if (s.M < 1 || s.N < 1 || s.K < 1)
    throw UsageError("the full size " + size_str(s.M, s.N, s.K) + " must be positive");
  for (int m : s.ms)
    if (m < 1 || m > s.M)
      throw UsageError("m = " + std::to_string(m) + " is outside [1, M = " + std::to_string(s.M) +
                       "]: the sweep compares the first m rows with the full M's");
  for (int n : s.ns)
    if (n < 1 || n > s.N)
      throw UsageError("n = " + std::to_string(n) + " is outside [1, N = " + std::to_string(s.N) + "]");
  for (int t : s.k_tails)
    if (t < 1) throw UsageError("a K tail of " + std::to_string(t) + " zero products: give 1 or more");
  if (s.repeats < 1) throw UsageError("--repeats " + std::to_string(s.repeats) + ": give at least 1");
}

const std::vector<std::string>& invariance_columns() {
  static const std::vector<std::string> c = {
      "kernel",   "config",   "family",     "input_format", "output_format",  "gpu",       "distribution",
      "seed",     "check",    "M",          "N",            "K",              "m",         "n",
      "k",        "compared", "differing",  "first_i",      "first_j",        "status",    "algorithm",
      "algorithm_full",       "why",        "by_construction", "time_ms_median", "rel_mean", "rel_std",
      "note"};
  return c;
}

std::vector<std::string> InvarianceRow::cells() const {
  const bool costed = check == "cost" && status == "measured";
  auto opt = [](double x, bool have) { return have ? fmt_double(x) : std::string(); };
  return {kernel,
          config,
          family,
          input_format,
          output_format,
          gpu,
          distribution,
          std::to_string(seed),
          check,
          std::to_string(M),
          std::to_string(N),
          std::to_string(K),
          std::to_string(m),
          std::to_string(n),
          std::to_string(k),
          std::to_string(compared),
          std::to_string(differing),
          first_i < 0 ? "" : std::to_string(first_i),
          first_j < 0 ? "" : std::to_string(first_j),
          status,
          algorithm,
          algorithm_full,
          why,
          by_construction,
          opt(time_ms_median, time_ms_median >= 0),
          opt(rel_mean, costed),
          opt(rel_std, costed),
          note};
}

std::string invariance_by_construction(const Kernel& k) {
  const Numerics& n = k.numerics;
  if (n.accumulation == Accumulation::library || n.accumulation == Accumulation::unknown)
    return "unknown: the library or callable chooses its algorithm per size (measured here)";
  if (n.k_chunked)
    return "depends: stream-K splits the K range of the last wave's tiles over co-resident blocks, so an entry's "
           "chunks change with M and N where the chunk map does";
  if (n.split_k > 1)
    return "yes: a fixed split-K of " + std::to_string(n.split_k) + ", the same at every size";
  return "yes: fixed tiling; every entry's K range is summed in one order whatever M and N (" + n.describe() + ")";
}

std::vector<int> split_parts(const SummationTree& t) {
  std::vector<int> out;
  collect_parts(t, t.root(), out);
  std::sort(out.begin(), out.end(), [&](int a, int b) { return t.min_leaf(a) < t.min_leaf(b); });
  return out;
}

std::string describe_parts(const SummationTree& t) {
  const std::vector<int> parts = split_parts(t);
  std::ostringstream s;
  s << parts.size() << (parts.size() == 1 ? " part" : " parts") << ": ";
  const std::size_t shown = std::min<std::size_t>(parts.size(), 4);
  for (std::size_t x = 0; x < shown; ++x) s << (x ? "; " : "") << describe_leaves(t.leaves_under(parts[x]));
  if (shown < parts.size()) s << "; ...";
  return s.str();
}

std::string explain_trees(const SummationTree& a, const std::string& label_a, const SummationTree& b,
                          const std::string& label_b) {
  const std::size_t pa = split_parts(a).size(), pb = split_parts(b).size();
  if (pa != pb)
    return "split-K " + std::to_string(pa) + " " + label_a + " vs split-K " + std::to_string(pb) + " " + label_b +
           " (" + describe_parts(a) + " vs " + describe_parts(b) + ")";
  if (a.canonical() != b.canonical())
    return "another tree with the same split-K count (" + std::to_string(pa) + "): " + label_a + " " + describe(a) +
           "; " + label_b + " " + describe(b);
  return "the same summation tree at both sizes (" + describe(a) +
         "): the bits differ through something other than the order (another instruction, rounding or scaling)";
}

std::vector<int> default_sweep(int full) {
  std::vector<int> v;
  for (int m = 1; m <= 8; ++m) v.push_back(m);
  for (long long p = 16; p <= full; p *= 2) {
    v.push_back(static_cast<int>(p - 1));
    v.push_back(static_cast<int>(p));
    v.push_back(static_cast<int>(p + 1));
  }
  std::sort(v.begin(), v.end());
  v.erase(std::unique(v.begin(), v.end()), v.end());
  v.erase(std::remove_if(v.begin(), v.end(), [&](int m) { return m < 1 || m >= full; }), v.end());
  return v;
}

std::vector<InvarianceRow> planned_invariance_rows(const Kernel& k, const InvarianceSpec& s, const std::string& gpu) {
  auto row = [&](const std::string& check, int m, int n, int kk) {
    InvarianceRow r;
    r.kernel = k.name;
    r.config = s.config;
    r.family = k.family;
    r.input_format = info(k.numerics.input).name;
    r.output_format = info(k.numerics.output).name;
    r.gpu = gpu;
    r.distribution = s.distribution.name();
    r.seed = s.seed;
    r.check = check;
    r.M = s.M;
    r.N = s.N;
    r.K = s.K;
    r.m = m;
    r.n = n;
    r.k = kk;
    r.by_construction = invariance_by_construction(k);
    return r;
  };
  std::vector<InvarianceRow> rows;
  if (s.repeats > 1) rows.push_back(row("repeat", s.M, s.N, s.K));
  for (int m : s.ms) rows.push_back(row("m", m, s.N, s.K));
  for (int n : s.ns) rows.push_back(row("n", s.M, n, s.K));
  for (int t : s.k_tails) rows.push_back(row("k_tail", s.M, s.N, s.K + t));
  if (s.cost) rows.push_back(row("cost", s.M, s.N, s.K));
  return rows;
}

std::string invariance_row_key(const std::vector<std::string>& fields) {
  static const std::vector<std::size_t> at = [] {
    std::vector<std::size_t> idx;
    for (const char* name : {"kernel", "config", "distribution", "seed", "M", "N", "K", "check", "m", "n", "k"})
      idx.push_back(column(name));
    return idx;
  }();
  if (fields.size() != invariance_columns().size())
    throw UsageError("an invariance row has " + std::to_string(fields.size()) + " fields, not " +
                     std::to_string(invariance_columns().size()));
  const auto f = [&](int x) { return fields[at[x]]; };
  return f(0) + "|" + f(1) + "|" + f(2) + "|" + f(3) + "|" + f(4) + "x" + f(5) + "x" + f(6) + "|" + f(7) + "|" + f(8) +
         "x" + f(9) + "x" + f(10);
}

std::vector<int> parse_sweep(const std::vector<std::string>& entries, int full, const std::string& what) {
  std::vector<int> out;
  for (const std::string& entry : entries) {
    std::size_t start = 0;
    while (start <= entry.size()) {
      const std::size_t comma = entry.find(',', start);
      const std::string s = entry.substr(start, comma == std::string::npos ? std::string::npos : comma - start);
      if (s == "default") {
        for (int v : default_sweep(full)) out.push_back(v);
      } else {
        std::size_t used = 0;
        int v = 0;
        try {
          v = std::stoi(s, &used);
        } catch (const std::exception&) {
          used = 0;
        }
        if (used == 0 || used != s.size()) throw UsageError(what + ": '" + s + "' is not a whole number or 'default'");
        out.push_back(v);
      }
      if (comma == std::string::npos) break;
      start = comma + 1;
    }
  }
  return out;
}

std::vector<InvarianceRow> check_invariance(const Kernel& k, Device& dev, const InvarianceSpec& spec,
                                            const InvarianceProbes& probes) {
  return Checker(k, dev, spec, probes).run();
}

nlohmann::json invariance_spec_json(const InvarianceSpec& s) {
  return {{"M", s.M},
          {"N", s.N},
          {"K", s.K},
          {"m", s.ms},
          {"n", s.ns},
          {"k_tails", s.k_tails},
          {"repeats", s.repeats},
          {"distribution", s.distribution.name()},
          {"seed", s.seed},
          {"reveal_k_max", s.reveal_k_max},
          {"cost", s.cost},
          {"warmup", s.timing.warmup},
          {"reps", s.timing.reps}};
}

int run_invariance(const InvarianceRunRequest& req, Device& dev, std::vector<std::vector<std::string>>* rows_out) {
  // The plan: every unit's spec and task, and every row's key, before anything runs.
  nlohmann::json plan = nlohmann::json::array();
  std::vector<std::string> keys;
  for (const InvarianceUnit& u : req.units) {
    validate_invariance_spec(u.spec);
    nlohmann::json j = invariance_spec_json(u.spec);
    j["kernel"] = u.task.kernel->name;
    j["config"] = u.task.config;
    plan.push_back(j);
    InvarianceSpec s = u.spec;
    s.config = u.task.config;
    for (const InvarianceRow& r : planned_invariance_rows(*u.task.kernel, s, dev.info().name))
      keys.push_back(invariance_row_key(r.cells()));
  }
  engine::JournalIdentity id;
  id.plan_hash = "sha256:" + engine::sha256_hex(plan.dump());
  id.git_commit = git_commit();
  id.gemmlab_version = gemmlab_version();
  id.gpu_name = dev.info().name;
  id.gpu_uuid = dev.info().uuid;
  id.columns = invariance_columns();
  engine::RunSession session(engine::OutputPaths::for_csv(req.out_csv), id, keys, invariance_row_key, req.session);
  if (session.resumed() && req.log) std::fprintf(req.log, "%s\n", session.start_note().c_str());
  engine::install_stop_handlers();
  int status = 0;
  for (const InvarianceUnit& u : req.units) {
    if (const int sig = engine::stop_signal()) {
      if (req.log)
        std::fprintf(req.log, "stopped by signal %d: the journal keeps every finished unit; continue with\n  %s\n",
                     sig, engine::resume_command(req.argv).c_str());
      engine::remove_stop_handlers();
      return engine::stopped_exit_status(sig);
    }
    InvarianceSpec s = u.spec;
    s.config = u.task.config;
    const auto planned = planned_invariance_rows(*u.task.kernel, s, dev.info().name);
    const bool done = std::all_of(planned.begin(), planned.end(),
                                  [&](const InvarianceRow& r) { return session.finished(invariance_row_key(r.cells())); });
    if (done) continue;
    const std::vector<InvarianceRow> rows = check_invariance(*u.task.kernel, dev, s, u.task.probes);
    int equal = 0, differs = 0, other = 0;
    for (const auto& r : rows) {
      const std::vector<std::string> cells = r.cells();
      if (!session.finished(invariance_row_key(cells))) session.record(cells);
      if (r.check != "cost") (r.status == "equal" ? equal : r.status == "differs" ? differs : other)++;
    }
    if (req.log)
      std::fprintf(req.log, "invariance %-44s %-16s %s %s: %3d equal %3d differ %3d other\n", u.task.kernel->name,
                   u.task.config.c_str(), u.spec.distribution.name().c_str(),
                   size_str(u.spec.M, u.spec.N, u.spec.K).c_str(), equal, differs, other);
  }
  engine::remove_stop_handlers();
  nlohmann::json meta = req.meta;
  meta["invariance"] = plan;
  meta["gpu_name"] = dev.info().name;
  meta["columns"] = invariance_columns();
  const auto final_rows = session.finished_rows();
  meta["rows"] = final_rows.size();
  for (const auto& f : final_rows)
    if (f[column("status")] == "error") status = 3;
  session.finalise(meta);
  if (rows_out) *rows_out = final_rows;
  return status;
}

}  // namespace gemmlab
