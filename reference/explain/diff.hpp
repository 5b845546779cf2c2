// `gemmlab explain --diff A B` and gemmlab.explain_diff: where two kernels' numerics differ, in words,
// each difference shown on an input where their bits differ.
//
// The use: making one kernel reproduce another bit for bit (a Triton GEMM that must give cuBLAS's
// bits, as Meta's Triton "bitequiv" work did), or checking that a refactor kept the numerics.
//
// How. explain_kernel (reference/explain.hpp) runs on each kernel; nothing of its stages is done again.
// Their reports are compared aspect by aspect, each only where both reports reached it:
//   scheduling          whether the order depends on scheduling: it changed between the tree stage's
//                       own calls, or the scheduling stage (ScheduleStage) saw it change under repeated,
//                       reordered or perturbed launches;
//   tree                the summation tree revealed at the first entry, at rest (canonical forms);
//   operand_conversion  how fp32 operands reach the multiplier (as is, tf32 / bf16 / fp16, split);
//   node_arithmetic     the model of each kind of fused node (the instruction model and its
//                       parameters), and the split scheme of split operands;
//   output_conversion   the format the kernel writes its result in (rounded to nearest even there).
// Each aspect that differs gets a witness: an input built to expose that difference alone, whose
// output bits the two kernels are run on (the same launch places it at a few entries; the first entry
// whose bits differ is shown with both kernels' bits, and what each report predicts there):
//   scheduling          the kernel whose order moves, under the perturbation that exposed it (none for
//                       a repeat), on FPRev's masks at the first pair where a revealed variant of its
//                       order and the other kernel's tree differ, launched up to 8 times, else on the
//                       full inputs of the first distribution; the other kernel undisturbed;
//   tree                FPRev's masks (reference/fprev.hpp) at the first pair of products (p, q) that
//                       meet in nodes of different sizes in the two trees: products p = +M, q = -M,
//                       every other product a unit u; each kernel returns the units added after p and
//                       q met, so the counts differ by construction;
//   operand_conversion  one product x * 1 (A's side or B's, wherever the conversions differ), x an
//                       fp32 value that the two conversions turn into different values (ties and
//                       near-ties of tf32 and bf16, fp16's range), chosen so that the difference
//                       survives both outputs;
//   node_arithmetic     gemmlab's tensor-core probes of the node's instruction (tc::make_probes, those
//                       with C = 0) at the leaves of one fused node of that kind, the rest zero, then
//                       seeded rows of the explain distributions; the first whose predictions by the
//                       two reports differ (the trees must be equal for the input to show only this);
//   output_conversion   1 * 1 plus 2^-e * 1 (two exact products, exact in any accumulator): the first
//                       e whose sum the two outputs round to different values.
// An aspect that differs but whose witness cannot be isolated (no probe separates the node models,
// or the trees differ so no node is common) says so; it is never dropped.
// Where every aspect was compared and none differs, the kernels are bit-identical by construction
// (same tree, conversions, node models and output): then the full-size confirmation must find no
// output whose bits differ. The confirmation runs in every case: each kernel on full random inputs of
// each explain distribution, twice (a kernel whose bits change between two launches is a scheduling
// difference, shown by its two bit patterns), the outputs compared bit for bit (values where the
// output formats differ). Bits that differ where the reports found no difference are an `unexplained`
// difference with its entry: explain's models missed something, and the report says so.
//
// Plain C++ (no CUDA header).
#pragma once
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "reference/explain.hpp"

namespace gemmlab::explain {

// The aspects of a kernel's numerics the diff compares, by their CSV names.
inline constexpr const char* kDiffAspects[] = {"tree", "scheduling", "operand_conversion", "node_arithmetic",
                                               "output_conversion", "unexplained"};

// One difference between the kernels, with its witness.
struct Difference {
  std::string aspect;        // one of kDiffAspects
  std::string a_does, b_does;  // what each kernel does there, in words
  bool confirmed = false;    // both kernels ran on the witness and their bits differ there
  Entry entry{-1, -1};       // where (confirmed)
  std::string inputs;        // the witness input, in words
  // The witness as inputs: row `entry.first` of A and column `entry.second` of B, the rest zero (empty
  // lines: the witness is the full inputs of a distribution, as `inputs` says).
  SparseVector a_row, b_col;
  std::uint64_t a_bits = 0, b_bits = 0;  // each kernel's output bits there (in its output format)
  // What each kernel's report predicts there (tree + conversion + node models), where it can.
  std::optional<std::uint64_t> a_predicted, b_predicted;
  std::string note;          // how the bits read (counts of units, values), or why no witness
};

// The full-size confirmation on one distribution: both kernels on the same random inputs, twice each.
struct DiffComparison {
  // One output seen: its entry ((-1, -1): none), a's and b's bits on their first launches, and the bits
  // of the relaunch that changed (for a kernel whose bits changed between its two launches).
  struct Seen {
    Entry at{-1, -1};
    std::uint64_t a = 0, b = 0, again = 0;
  };
  std::string distribution;
  long long outputs = 0;
  long long differing = 0;                   // outputs whose bits (values, for different output formats) differ
  long long a_unstable = 0, b_unstable = 0;  // outputs that changed between a kernel's two launches
  Seen first_differing, a_first_unstable, b_first_unstable;
};

struct DiffOptions {
  Options explain;                 // each kernel's explain (its distributions are the confirmation's)
  int witness_entries = 8;         // entries a witness input is placed at in one launch
  long long compare_outputs = 0;   // outputs compared per distribution (0 or >= M N: every output)
};

struct DiffReport {
  std::string a_name, b_name;
  int M = 0, N = 0, K = 0;
  Format input = Format::fp32, a_output = Format::fp32, b_output = Format::fp32;
  Report a, b;
  // "identical_by_construction": every aspect compared and the same, and no output differs;
  // "different": some aspect differs (differences lists each); "incomplete": a kernel was not
  // identified, so the aspects after its failed stage were not compared and none compared differs.
  std::string verdict;
  std::vector<Difference> differences;
  std::vector<std::string> same;          // aspects compared and equal, in words
  std::vector<std::string> not_compared;  // aspects not compared, and why
  std::vector<DiffComparison> comparisons;
  long long launches = 0;
  double seconds = 0;
  std::string summary() const;  // a few lines for people
};

// Throws std::invalid_argument when the kernels do not share M, N, K and the input format (the two
// must be asked the same inputs).
DiffReport explain_diff(Oracle& a, Oracle& b, const std::string& a_name, const std::string& b_name,
                        const DiffOptions& opt);

// The parts, exposed for tests.
// The first pair (p, q) whose products meet in nodes of different sizes in t and u (same leaves):
// (0, q) for every q, then (p, p + 1), (p, K - 1), then seeded pairs, then every pair where K <= 1024;
// nullopt when t and u agree on every pair tried.
std::optional<std::pair<int, int>> first_differing_pair(const SummationTree& t, const SummationTree& u);
// fp32 values that tell the conversions apart: for every two different candidate conversions
// (candidate_conversions(fp32)), one of these converts differently.
const std::vector<double>& conversion_witness_values();
// What kernel r's report predicts for C = A B at `entries` as output bits in `output` (tree,
// conversion, node models and split as the composition composes them); nullopt where the report
// has no model to predict with (a stage not reached, or a tree the nodes cannot compose).
std::optional<std::vector<std::uint64_t>> predict_bits(const Report& r, Format output, const Matrix& A, const Matrix& B,
                                                       const std::vector<Entry>& entries, int threads = 0);

}  // namespace gemmlab::explain
