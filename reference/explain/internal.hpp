// What the stages of `gemmlab explain` share (reference/explain.hpp is the one public entry). Each
// stage lives in its own file of reference/explain/:
//   gemm_check.cpp   stage 1: is it a GEMM at all?
//   tree.cpp         stage 2: the summation tree (FPRev), the entries it is asked and checked at
//   conversion.cpp   stage 3: how an operand reaches the multiplier (and the Conversion vocabulary)
//   nodes.cpp        stage 4: the arithmetic of each kind of fused node (split operands included)
//   schedule.cpp     the scheduling stage: the tree asked again with the schedule disturbed
//   composition.cpp  tree + conversion + nodes predict C at full size; the Numerics record found
//   driver.cpp       the stages in order, and the report's summary
//   synthetic.cpp    SyntheticKernel, the CPU kernels of known numerics the tests explain
//   common.cpp       the helpers below
//   diff.cpp         `explain --diff`: two kernels' reports compared, each difference with a witness
//                    (its own entry, reference/explain/diff.hpp)
//
// Plain C++ (no CUDA header).
#pragma once
#include <chrono>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "reference/explain.hpp"
#include "reference/fprev.hpp"

namespace gemmlab::explain::detail {

using Clock = std::chrono::steady_clock;
double since(Clock::time_point t0);

std::string entry_text(const Entry& e);  // "C(i,j)"
std::string value_text(double x);        // exactly and briefly (tc::exact_text)

// One item: the row of A and the column of B that one output entry sees.
struct Item {
  SparseVector a, b;
};

// Runs the items |entries| at a time, item t of a launch at entries[t]; the output bits per item.
// One launch of `in` at the entries `at` (one sparse row and column each); throws when the oracle answers
// another number of entries.
std::vector<std::uint64_t> run_inputs(Oracle& o, const SparseInputs& in, const std::vector<Entry>& at);
std::vector<std::uint64_t> run_items(Oracle& o, const std::vector<Entry>& entries, const std::vector<Item>& items);
// The same with items the caller gives up: moved into the launches, not copied.
std::vector<std::uint64_t> run_items(Oracle& o, const std::vector<Entry>& entries, std::vector<Item>&& items);

// A NaN whose payload bits are all ones (0x7fffffff for fp32): what Hopper writes for NaN results.
std::uint64_t all_ones_nan(Format f);

// The kernel's conversion of its fp32 result to the output format (cvt.rn): IEEE round to nearest
// even, so a negative value that rounds to zero gives -0 (the H100 through torch.matmul's fp16 C:
// -2^-25 -> 0x8000). tc::round_to_format gives +0 there, the rule of the tensor core's own sums.
std::uint64_t output_bits(Format f, double v, std::uint64_t nan_bits);

// Stage 1 (gemm_check.cpp): "" when the kernel is a GEMM as far as zero inputs and one or two
// power-of-two products tell; else why not. `seen` says what was checked.
std::string check_gemm(Oracle& o, const std::vector<Entry>& E, std::string& seen,
                       FprevCarrier carrier = FprevCarrier::both);

// FPRev's queries (reference/fprev.hpp), each pair's units split into the masks' groups: a pair of
// groups(K - 2) items, whose counts add up to the pair's count (tree.cpp; the scheduling stage asks
// them too).
struct Fprev {
  Oracle& o;
  FprevMasks m;
  // Pair (p, q) (p < 0: no masks, every product a unit) with only the units of group g non-zero:
  // the units in increasing k, p and q skipped, m.group of them to a group. One group: every unit.
  // A group is the k range from its first unit to its last, p and q inside it overwritten by M.
  Item item(int p, int q, int g) const;
  std::pair<int, int> unit_range(int p, int q, int g) const;  // group g's units' k range [from, to)
  // Units counted for each pair, pair t answered at entry E[t % |E|] (all its groups there, so that
  // a count is one entry's): |E| pairs take one launch per group. Throws when a group's count is not
  // a whole number of its units.
  std::vector<int> counts(const std::vector<Entry>& E, const std::vector<std::pair<int, int>>& pairs);
  // lca sizes of `pairs`, pair t answered at entry E[t % |E|].
  std::vector<int> sizes(const std::vector<Entry>& E, const std::vector<std::pair<int, int>>& pairs);
};
// The masks the tree stage asks with, for the oracle's formats and K (choose_fprev_masks, grouped
// units). Throws std::invalid_argument where no unit can be counted.
FprevMasks tree_masks(const Oracle& o, FprevCarrier carrier = FprevCarrier::both);

// Stage 2 (tree.cpp): the tree revealed at the entries E, verified entry by entry and call by call.
TreeStage reveal(Oracle& o, const std::vector<Entry>& E, const Options& opt);

// The scheduling stage (schedule.cpp): the tree's pairs asked again at the entries E, repeated, in
// another order and under each of the oracle's perturbations; other orders seen are revealed where
// they hold still. Rethrows OracleLost; any other failure of a trial is that trial's not_applied.
ScheduleStage check_schedule(Oracle& o, const std::vector<Entry>& E, const TreeStage& tree, const Options& opt);
// After the composition: the record covering every order seen (r.numerics, r.schedule.bound_note).
void bound_over_orders(Oracle& o, Report& r);

// Stage 3 (conversion.cpp): how A's and B's operands reach the multiplier, from single products.
// values_a / values_b: Options' (an operand held to a few values is probed with its own).
ConversionStage infer_conversion(Oracle& o, const std::vector<Entry>& E, const std::vector<double>& values_a = {},
                                 const std::vector<double>& values_b = {});

// Stage 4 (nodes.cpp): the model of each kind of fused node of t.
NodeStage infer_nodes(Oracle& o, const std::vector<Entry>& E, const SummationTree& t, const ConversionStage& conv,
                      const Options& opt);
// The node model the composition uses: each kind's params by its number of leaves.
emulation::NodeModel node_model(const std::vector<NodeKind>& kinds);

// Composition (composition.cpp): the prediction of tree + conversion + nodes compared bit for bit
// with the kernel's C on each distribution (r.comparisons), then the record (r.numerics,
// r.numerics_text) and the known kernels it behaves like; `mismatches`: the compared outputs that
// differ, over all distributions. Returns "" or, with nothing compared, why the nodes' models cannot
// compose the tree (the nodes stage fails then).
std::string compose(Oracle& o, const Options& opt, Report& r, long long& mismatches);

// compose() in two halves, so that its predictions (the CPU's work, seconds at 4096^3) run beside the
// scheduling stage (the GPU's launches): begin() makes each distribution's inputs and runs the kernel on
// them (the oracle, on this thread), then starts the predictions, in the background where `background`
// (on all threads but this one); "" or the gap (then nothing started). finish() waits for them and
// compares, with the variants r.schedule revealed. A Composition destroyed unfinished waits for its
// predictions.
class Composition {
 public:
  Composition();
  ~Composition();
  Composition(const Composition&) = delete;
  Composition& operator=(const Composition&) = delete;
  std::string begin(Oracle& o, const Options& opt, const Report& r, bool background);
  // The stage begin's refusal belongs to: "nodes" (a fused node the nodes stage left without a model) or
  // "composition" (the operands cannot be predicted).
  const std::string& refused_at() const { return refused_at_; }
  void finish(Oracle& o, const Options& opt, Report& r, long long& mismatches);

 private:
  // Where a quantized problem's dequantized operand holds values the input format does not: the
  // Report::Dequantization candidate that predicts the first such distribution's first rows best, applied to
  // that operand of every distribution. "" or why the operands cannot be predicted.
  std::string choose_dequantization(Oracle& o, const Options& opt, const Report& r);
  struct State;
  std::unique_ptr<State> s_;
  std::string refused_at_ = "nodes";
};

}  // namespace gemmlab::explain::detail
