// What the stages of `gemmlab explain` share (reference/explain.hpp is the one public entry). Each
// stage lives in its own file of reference/explain/:
//   gemm_check.cpp   stage 1: is it a GEMM at all?
//   tree.cpp         stage 2: the summation tree (FPRev), the entries it is asked and checked at
//   conversion.cpp   stage 3: how an operand reaches the multiplier (and the Conversion vocabulary)
//   nodes.cpp        stage 4: the arithmetic of each kind of fused node (split operands included)
//   composition.cpp  tree + conversion + nodes predict C at full size; the Numerics record found
//   driver.cpp       the stages in order, and the report's summary
//   synthetic.cpp    SyntheticKernel, the CPU kernels of known numerics the tests explain
//   common.cpp       the helpers below
//
// Plain C++ (no CUDA header).
#pragma once
#include <chrono>
#include <cstdint>
#include <string>
#include <vector>

#include "reference/explain.hpp"

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
std::vector<std::uint64_t> run_items(Oracle& o, const std::vector<Entry>& entries, const std::vector<Item>& items);

// A NaN whose payload bits are all ones (0x7fffffff for fp32): what Hopper writes for NaN results.
std::uint64_t all_ones_nan(Format f);

// The kernel's conversion of its fp32 result to the output format (cvt.rn): IEEE round to nearest
// even, so a negative value that rounds to zero gives -0 (the H100 through torch.matmul's fp16 C:
// -2^-25 -> 0x8000). tc::round_to_format gives +0 there, the rule of the tensor core's own sums.
std::uint64_t output_bits(Format f, double v, std::uint64_t nan_bits);

// Stage 1 (gemm_check.cpp): "" when the kernel is a GEMM as far as zero inputs and one or two
// power-of-two products tell; else why not. `seen` says what was checked.
std::string check_gemm(Oracle& o, const std::vector<Entry>& E, std::string& seen);

// Stage 2 (tree.cpp): the tree revealed at the entries E, verified entry by entry and call by call.
TreeStage reveal(Oracle& o, const std::vector<Entry>& E, const Options& opt);

// Stage 3 (conversion.cpp): how A's and B's operands reach the multiplier, from single products.
ConversionStage infer_conversion(Oracle& o, const std::vector<Entry>& E);

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

}  // namespace gemmlab::explain::detail
