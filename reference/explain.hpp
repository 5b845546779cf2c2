// `gemmlab explain`: what a kernel gemmlab did not build does to the numbers, inferred from its
// outputs alone. Four stages, each on inputs designed to tell the candidates apart:
//  1. Is it a GEMM at all? Zero inputs give zeros, single power-of-two products come back exact,
//     no NaN from finite inputs.
//  2. The summation tree (FPRev masking, reference/fprev.hpp), revealed with many output entries
//     answering one pair each per launch (summation_tree.hpp reconstruct_batched), then checked
//     entry by entry and call by call: where entries or calls disagree, say where. Where one entry
//     cannot count all K - 2 units exactly (e4m3's subnormal units at K > 256, a bf16 output past
//     256 units), each pair's units are split into groups (FprevUnits::grouped), one launch per
//     group answering |E| pairs, and a pair's count is the sum of its groups' counts.
//  3. The operand conversion: how an fp32 operand reaches the multiplier (as is, tf32 rounded to
//     nearest even, to nearest away from zero or toward zero, bf16, fp16), from single products.
//  4. The arithmetic of each kind of fused node: `gemmlab probe`'s probes of the instruction with
//     that block, embedded in full GEMMs at the leaves of one fused node of the revealed tree (C
//     built exactly by the node before it), inferred with tc::infer like `gemmlab probe`. A kernel
//     writing a narrower format than the instruction (bf16 from fp32) hides the bits the inference
//     reads: there each candidate instruction's measured model is checked on the probes as rounded
//     to that output (NodeKind::checked_through), not inferred.
// Then composition: tree + conversion + node model predict C (kernel_emulation.hpp), compared bit
// for bit with the kernel's C on several distributions at full size. A kernel is identified only
// when every stage is and the prediction is exact; otherwise the report names the stage and why.
//
// This header is the one entry; each stage has its own file under reference/explain/ (internal.hpp
// lists them: gemm_check, tree, conversion, nodes, composition, driver).
//
// The stages talk to the kernel through Oracle, so CPU tests drive them with synthetic kernels of
// known numerics (tests/cpu/test_explain.cpp) and the GPU adapter (experiments/device/explain_gpu.*)
// with any Kernel: built-in, plugin or Python callable.
//
// Plain C++ (no CUDA header).
#pragma once
#include <cstdint>
#include <functional>
#include <limits>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "reference/formats.hpp"
#include "reference/kernel_emulation.hpp"
#include "reference/matrix.hpp"
#include "reference/numerics.hpp"
#include "reference/summation_tree.hpp"
#include "reference/tc_model.hpp"

namespace gemmlab::explain {

// How an operand of the input format reaches the multiplier.
enum class Conversion { as_is, tf32_rne, tf32_rna, tf32_rz, bf16_rne, fp16_rne };
const char* to_string(Conversion c);     // "tf32_rna"
const char* in_words(Conversion c);      // "rounded to tf32, to nearest, ties away from zero"
std::optional<Conversion> parse_conversion(const std::string& name);
Format compute_format(Conversion c, Format input);
double convert(Conversion c, double v);  // v exact in fp32
// The candidates for operands of `input` (only fp32 operands can be converted; every other format
// reaches the multiplier as it is, which stage 3 checks).
std::vector<Conversion> candidate_conversions(Format input);

using Entry = std::pair<int, int>;  // (i, j) of C
// One row of A or column of B: `fill` at every k in [fill_from, fill_to) (every k by default), 0
// elsewhere, except the listed (k, value). The range lets FPRev's unit groups (a contiguous run of
// K / G units) travel as four numbers rather than K / G listed values per line.
struct SparseVector {
  int index = 0;
  double fill = 0;
  std::vector<std::pair<int, double>> at;
  int fill_from = 0, fill_to = std::numeric_limits<int>::max();
  double value(int k) const;  // linear in at.size(): for building whole vectors
};
struct SparseInputs {  // A and B zero except these rows of A and columns of B
  std::vector<SparseVector> a_rows, b_cols;
};

// The kernel under study at one size. Values are exact in input(); answers are output bits.
class Oracle {
 public:
  virtual ~Oracle() = default;
  virtual int M() const = 0;
  virtual int N() const = 0;
  virtual int K() const = 0;
  virtual Format input() const = 0;
  virtual Format output() const = 0;
  virtual std::vector<std::uint64_t> run_sparse(const SparseInputs& in, const std::vector<Entry>& entries) = 0;
  virtual std::vector<std::uint64_t> run_full(const Matrix& A, const Matrix& B, const std::vector<Entry>& entries) = 0;
  long long launches = 0;  // kept by implementations
};

// A kernel whose numerics gemmlab knows (a built-in one), for "behaves exactly like".
struct KnownKernel {
  std::string name;
  Numerics numerics;
  tc::TcParams params;  // its instruction's model (empty for fma)
};

struct Options {
  std::vector<std::string> distributions{"uniform_0_1", "normal_0_1", "logunif_-8_8"};
  std::uint64_t seed = 20261124;
  int verify_pairs = 48;           // FPRev pairs checked at every verification entry, twice
  int verify_entries = 256;        // entries checked (first, middle, last and tile edges among them)
  long long compare_outputs = 1 << 16;  // outputs predicted per distribution (0 or >= M N: all)
  long long max_probes = 20000;    // embedded probes per node kind
  int threads = 0;
  std::vector<KnownKernel> known;  // candidates for "behaves exactly like"
};

struct TreeStage {
  bool ok = false;
  std::string why;                 // when not ok
  SummationTree tree{1};
  std::string text;                // describe(tree)
  int entries_used = 0;            // entries that answered the reconstruction's pairs
  int entries_verified = 0, entries_differing = 0;
  std::string differing;           // where the order differs between entries, in words
  bool deterministic = true;       // the verification's two passes gave the same counts
  std::string masks;
  double seconds = 0;
};

struct ConversionStage {
  bool ok = false;
  std::string why;
  Conversion a = Conversion::as_is, b = Conversion::as_is;
  // fp32 single products that no conversion explains but fp32 operands split into two bf16 pieces do
  // (each product hi + mid of x, as Triton's bf16x3 gives): a and b stay as_is (fp32 reaches the
  // pieces) and stage 4 checks the split schemes.
  bool split = false;
  int tests = 0;
};

struct NodeKind {
  int leaves = 0;            // products fused in one node
  bool carry = false;        // the node also adds a running sum (one C)
  std::string instruction;   // whose probes were embedded
  int probes = 0, skipped = 0, mismatching = 0;
  tc::TcParams params;
  std::vector<std::string> ambiguous;
  std::string same_as;       // instructions whose measured model equals the inferred one
  // The kernel's output format where it is narrower than the instruction's (bf16 written from fp32):
  // `instruction`'s measured model checked on the probes as rounded there, not inferred ("": inferred).
  std::string checked_through;
};

struct NodeStage {
  bool ok = false;
  std::string why;
  std::vector<NodeKind> kinds;
  // fp32 operands that reach fused nodes unconverted (or that the conversion stage found split): the
  // one split scheme (tf32 or bf16 pieces) that explains every split probe with its pieces'
  // instruction's measured model (kinds' params), checked, not inferred; split_candidates schemes were
  // tried, split_probes probes run.
  std::optional<emulation::SplitScheme> split;
  int split_candidates = 0, split_probes = 0;
  double seconds = 0;
};

struct Comparison {
  std::string distribution;
  long long outputs = 0, mismatches = 0;
  std::string first_mismatch;  // "(i,j): predicted 0x.. kernel 0x.."
};

struct Report {
  bool identified = false;
  std::string failed_stage;  // gemm | tree | conversion | nodes | composition ("" when identified)
  std::string reason;
  std::string gemm_check;    // what stage 1 saw
  TreeStage tree;
  ConversionStage conversion;
  NodeStage nodes;
  std::vector<Comparison> comparisons;
  std::optional<Numerics> numerics;  // the identified numerics as gemmlab's record, where one fits
  std::string numerics_text;         // in words
  std::vector<std::string> behaves_like;
  long long launches = 0;
  double seconds = 0;
  std::string summary() const;       // a few lines for people
};

Report explain_kernel(Oracle& oracle, const Options& opt);

// Stages, exposed for tests.
std::vector<Entry> choose_entries(int M, int N, int count, std::uint64_t seed);
int lca_size(const SummationTree& t, int p, int q);
// The Numerics record whose expected tree is `tree`, for these node kinds and conversion; nullopt
// when no record of gemmlab's vocabulary (fma, in_mma, external, promoted, split) has that tree.
// With `split` (operands split into pieces, `tree` the tree of one pass): the record of that tree with
// the pieces' format as its compute format and Numerics::split saying which products are formed (the
// pass order and grouping stay the report's words: the bound does not depend on them).
std::optional<Numerics> numerics_for(const SummationTree& tree, Format input, Format output, Conversion conv,
                                     const std::vector<NodeKind>& kinds,
                                     const emulation::SplitScheme* split = nullptr);

// The split schemes stage 4 tries for fp32 operands reaching fused nodes unconverted, run per chain or
// per group of 1, 2, 4, 8 nodes (below `longest_chain`), with and without the NaN mask before the last
// pass. tf32 pieces: big rounded to nearest even, to nearest away or toward zero; the passes
// small*big, big*small, big*big in each of their 6 orders, alone or with small*small first or last.
// bf16 pieces (rounded to nearest even): 2 pieces in those orders; 3 pieces in Triton's bf16x6 order
// and 5 orders near it (explain/nodes.cpp lists them and says why the first three are not permuted).
std::vector<emulation::SplitScheme> split_candidates(
    int longest_chain, emulation::SplitScheme::PieceFormat format = emulation::SplitScheme::PieceFormat::tf32);

// Whether `n`'s expected tree at K (kernel_emulation.hpp) is the tree with this canonical form.
bool expected_tree_matches(const Numerics& n, int K, const std::string& canonical);

// A synthetic kernel on the CPU with known numerics, for tests: C = A B summed in `tree` with the
// node model `model` after converting operands by `conv`; options for what a bad kernel does.
class SyntheticKernel : public Oracle {
 public:
  SyntheticKernel(int M, int N, int K, Format input, SummationTree tree, emulation::NodeModel model,
                  Conversion conv_a = Conversion::as_is, Conversion conv_b = Conversion::as_is);
  int M() const override { return M_; }
  int N() const override { return N_; }
  int K() const override { return K_; }
  Format input() const override { return input_; }
  Format output() const override { return output_format; }
  std::vector<std::uint64_t> run_sparse(const SparseInputs& in, const std::vector<Entry>& entries) override;
  std::vector<std::uint64_t> run_full(const Matrix& A, const Matrix& B, const std::vector<Entry>& entries) override;

  Format output_format = Format::fp32;       // the fp32 sum rounded to nearest even in this (a kernel writing bf16)
  double add_constant = 0;                   // not a GEMM: C + this
  bool nan_on_zero_row = false;              // NaN wherever a row of A is all zero
  std::optional<SummationTree> other_tree;   // used for entries with i >= other_from_row ...
  int other_from_row = 1 << 30;
  bool alternate_calls = false;              // ... or on every other call (order differs between calls)
  std::optional<emulation::SplitScheme> split;  // operands split into tf32 or bf16 pieces, conv_* as_is

 private:
  // row_a(i, out): A(i, 0 .. K-1); col_b(j, out): B(0 .. K-1, j).
  std::vector<std::uint64_t> compute(const std::function<void(int, double*)>& row_a,
                                     const std::function<void(int, double*)>& col_b, const std::vector<Entry>& entries);
  int M_, N_, K_;
  Format input_;
  SummationTree tree_;
  emulation::NodeModel model_;
  Conversion conv_a_, conv_b_;
  long long calls_ = 0;
};

}  // namespace gemmlab::explain
