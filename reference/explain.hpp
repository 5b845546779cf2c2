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
//  4. The arithmetic of each kind of fused node: every instruction of `gemmlab tc-eval --list` with
//     that block and input format is a candidate, whatever its accumulator (fp32 or fp16); `gemmlab
//     probe`'s probes of each accumulator, embedded in full GEMMs at the leaves of one fused node of the
//     revealed tree (C built exactly by the node before it), check each candidate's measured model as
//     the kernel's output rounds it; the report names the one chosen and those ruled out, with counts.
//     Where none explains them, the model is inferred with tc::infer like `gemmlab probe` (not through
//     an output narrower than the instruction's, bf16 from fp32: the rounding hides the bits it reads).
// Between the tree and the conversion, the scheduling stage (schedule.cpp): the tree's checks are
// asked again with the schedule disturbed (ScheduleStage): the same launches again, in another order,
// and under each of the oracle's perturbations (on a GPU: fewer SMs through a green context, SMs held
// by a concurrent kernel). Where the order changes, the kernel's order depends on scheduling: the
// other orders seen (variants) are revealed where they hold still long enough, counted, and the
// kernel is judged by a bound that covers them all.
// Then composition: tree + conversion + node model predict C (kernel_emulation.hpp), compared bit
// for bit with the kernel's C on several distributions at full size. A kernel is identified only
// when every stage is and the prediction is exact (an output that a revealed variant of the order
// predicts counts as predicted); otherwise the report names the stage and why. An
// identified kernel's record holds its tree (Numerics::tree, tree_form.hpp) and is bounded by it
// (tree_bound.hpp); the report says the tree in words.
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
#include <map>
#include <optional>
#include <set>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

#include "reference/distributions.hpp"
#include "reference/formats.hpp"
#include "reference/fprev.hpp"
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

// One way an oracle can disturb how its kernel is scheduled (the scheduling stage tries each): a name
// (an identity: the CSV's and the JSON's) and what it does, in words.
struct Perturbation {
  std::string name;   // e.g. "fewer_sms_64"
  std::string words;  // e.g. "in a green context of 64 of the GPU's 132 SMs"
};

// Thrown by an oracle whose kernel could not be run: it raised, returned something that is not C, or
// the GPU reported an error. explain stops at the stage with the message as the reason; nothing is
// inferred from a launch that failed. Not a std::runtime_error, which the stages use for answers that
// are no answers (a count of no whole number of units), so that no stage mistakes it for one.
class KernelFailed : public std::exception {
 public:
  explicit KernelFailed(std::string what) : what_(std::move(what)) {}
  const char* what() const noexcept override { return what_.c_str(); }

 private:
  std::string what_;
};
// The oracle can answer no more (the GPU reported an error after which nothing runs in this process:
// an illegal memory access). Report::oracle_lost says so.
struct OracleLost : KernelFailed {
  using KernelFailed::KernelFailed;
};
// The kernel's output is not C (another shape, dtype or device): its own failure under any schedule, so
// also under a perturbation (where a launch that raised may be the perturbation's doing: a framework
// that cannot run in a green context).
struct BadOutput : KernelFailed {
  using KernelFailed::KernelFailed;
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
  // run_full on the operands of distribution d from `seed` in the oracle's input format, generate()'s
  // bit for bit (SOURCE@RECIPE with a quantized recipe: make_quantized_problem's dequantized operands, the
  // kernel's quantized ones where it reads them), made where the kernel reads them; A (M, K) and B (K, N) get their values for the
  // caller: B whole, A at least in the rows `entries` name (an oracle may leave the others 0). The
  // default generates them on the host with `threads` threads and calls run_full; a GPU oracle makes
  // them on the GPU and copies back only what the caller reads (the composition's inputs, whose host
  // generation, packing and upload were a second of a 4096^3 explain).
  virtual std::vector<std::uint64_t> run_generated(const Distribution& d, std::uint64_t seed, int threads,
                                                   const std::vector<Entry>& entries, Matrix& A, Matrix& B);
  // The perturbations of the schedule this oracle can apply (none by default).
  virtual std::vector<Perturbation> perturbations() { return {}; }
  // The launches from now on run under perturbations()[i] (-1: undisturbed). Returns "" or why the
  // perturbation cannot be applied here (then the launches run undisturbed).
  virtual std::string perturb(int i) { return i < 0 ? "" : "this oracle has no perturbations"; }
  long long launches = 0;  // kept by implementations
};

// An oracle that passes every question to `inner`, calling before_launch() ahead of each launch: the
// base of oracles that watch or limit the launches (explain's budget, tests' failing kernels). The
// perturbations are not passed on: a subclass that should apply them forwards perturbations() and
// perturb() itself.
class ForwardingOracle : public Oracle {
 public:
  explicit ForwardingOracle(Oracle& inner) : inner_(inner) {}
  int M() const override { return inner_.M(); }
  int N() const override { return inner_.N(); }
  int K() const override { return inner_.K(); }
  Format input() const override { return inner_.input(); }
  Format output() const override { return inner_.output(); }
  std::vector<std::uint64_t> run_sparse(const SparseInputs& in, const std::vector<Entry>& entries) override {
    before_launch();
    return inner_.run_sparse(in, entries);
  }
  std::vector<std::uint64_t> run_full(const Matrix& A, const Matrix& B, const std::vector<Entry>& entries) override {
    before_launch();
    return inner_.run_full(A, B, entries);
  }
  std::vector<std::uint64_t> run_generated(const Distribution& d, std::uint64_t seed, int threads,
                                           const std::vector<Entry>& entries, Matrix& A, Matrix& B) override {
    before_launch();
    return inner_.run_generated(d, seed, threads, entries, A, B);
  }

 protected:
  virtual void before_launch() = 0;
  Oracle& inner_;
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
  // The scheduling stage: whether it runs, the pairs asked at every entry under each perturbation,
  // and the wall time it may take (trials left when it is spent are reported as not tried).
  bool schedule = true;
  int schedule_pairs = 16;
  double schedule_seconds = 12;
  // Where the composition writes what it predicted, "" for nowhere: per distribution compared, per
  // entry, the value the identified tree + conversion + nodes give before the output rounding (the
  // accumulator's value), a text line "distribution i j value" with the value in C's hexadecimal
  // floating point (%a), exact. gemmlab.explain's forms stage builds the epilogue's candidates on it.
  std::string predictions_file;
  // Called as each stage begins ("gemm", "tree", "conversion", "nodes", "composition", "scheduling",
  // "composition" again: its kernel runs before the scheduling stage, its comparison after) with the
  // report of the stages finished so far: a worker process sends it to its parent, which reports those
  // stages if the kernel then never comes back (python/bindings_gpu.cpp). Null: nothing is called.
  std::function<void(const struct Report&, const std::string& stage)> on_stage;
  // One call of the kernel before the stages' clock starts (on all-zero inputs): a kernel compiled on its
  // first call (Triton, XLA, torch.compile) pays that compilation there, and Report::first_call_seconds says
  // how long it took; the report's seconds, stages and launches are explain's own. A failing first call is
  // the gemm stage's failure.
  bool first_call = false;
  // Where the composition's predictions are computed, when not by emulation::emulate_tree_at on this
  // host's threads: a GPU's (experiments/device/emulate_gpu.hpp), the same bits. Called before the
  // scheduling stage, in this thread; where it returns nullopt the host predicts, in the background.
  emulation::TreeEmulator emulate;
  // Which operand carries FPRev's M and u in the tree and scheduling stages (fprev.hpp), and the gemm stage's
  // power-of-two products: both, or one, the other operand then 1 or 0 (-1 at one product with carrier a) in
  // every launch of those stages.
  FprevCarrier fprev_carrier = FprevCarrier::both;
  // The values each operand can hold, empty: every value of the input format. A quantized operand of unit
  // scale holds only its elements' values (MXFP4's e2m1: 0, 0.5, 1, 1.5, 2, 3, 4, 6 and their negatives): the
  // nodes stage then writes each probe's products a b as a' b' with a' and b' among them (and exact in the
  // format the multiplier takes), the same products and so the same sums, and leaves out the probes it
  // cannot (a NaN or an infinity on the restricted operand among them); the split operands' probes are not
  // taken. Groundwork for explaining the X x bf16 forms (issue 43), with fprev_carrier; not exposed to the CLI or
  // Python.
  std::vector<double> values_a, values_b;
};

struct TreeStage {
  bool ok = false;
  std::string why;                 // when not ok
  SummationTree tree{1};
  std::string text;                // the tree in words, a line or a few (tree_form.hpp tree_in_words)
  std::string form;                // its canonical compact form (tree_form.hpp), what the record holds
  int entries_used = 0;            // entries that answered the reconstruction's pairs
  int entries_verified = 0, entries_differing = 0;
  std::string differing;           // where the order differs between entries, in words
  bool deterministic = true;       // the verification's two passes gave the same counts
  std::string masks;
  double seconds = 0;
};

// The scheduling stage. The tree's pairs are first asked at every entry undisturbed (each entry's
// baseline); a trial asks them again under one condition: "repeat" (the same launches again,
// undisturbed), "shuffled_launches" (the same launches in a seeded random order, so each follows another
// launch than before), or one of the oracle's perturbations. An entry keeps its order in a trial when
// every pair meets in a node of the size its baseline showed.
struct ScheduleTrial {
  std::string perturbation;      // "repeat", "shuffled_launches", or the oracle's name
  std::string words;
  std::string not_applied;       // why it was not applied or did not finish ("" when it ran)
  int entries = 0;               // entries observed
  int following = 0;             // ... that kept their order (their baseline's counts)
  std::vector<int> variant_entries;  // ... that followed each of ScheduleStage::variants (same indices)
  int unexplained = 0;           // ... that followed another order, not revealed
  long long launches = 0;
  double seconds = 0;
};

// An order other than the tree's, seen in some trial: revealed (its tree) where the entries that
// followed it kept to it while they were asked again under the same perturbation, else described by
// the pairs' counts that were seen.
struct ScheduleVariant {
  bool revealed = false;
  SummationTree tree{1};
  std::string text;              // describe(tree), or the counts seen
  std::string why;               // not revealed: why
  std::string first_seen;        // the trial that exposed it
  long long entries = 0;         // entries seen following it, over all trials
};

struct ScheduleStage {
  bool ran = false;
  // "unchanged": in every trial that ran every entry kept its order; "depends": the order changed
  // (between calls or under a perturbation); "" not checked (why).
  std::string verdict;
  std::string why;               // verdict "": why the stage did not run
  std::vector<ScheduleTrial> trials;
  std::vector<ScheduleVariant> variants;
  std::string exposed_by;        // the first trial under which the order changed
  // Why no bound covers every order seen ("" when the report's numerics covers them: it is the record
  // of the order with the largest bound), in which case the report has no numerics: judged, the kernel
  // claims no bound.
  std::string bound_note;
  std::string text;              // what was tried and what changed, in words
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
  // The chosen model: `params`, `instruction`'s measured model checked on the probes (or, where no
  // instruction's explains them, inferred from `instruction`'s probes); probes, skipped, mismatching: of
  // that check or inference.
  std::string instruction;
  int probes = 0, skipped = 0, mismatching = 0;
  tc::TcParams params;
  std::vector<std::string> ambiguous;
  std::string same_as;       // instructions whose measured model equals the chosen one
  // The kernel's output format where it is narrower than the instruction's (bf16 written from fp32):
  // `instruction`'s measured model checked on the probes as rounded there ("": the kernel writes what
  // the instruction writes).
  std::string checked_through;
  // Every candidate: each instruction of `gemmlab tc-eval --list` with this block and compute format,
  // whatever its accumulator (fp32, fp16), its measured model checked on the probes it applies to (those
  // whose C it could be handed: exact in its accumulator). mismatching 0: it explains them all; > 0: ruled
  // out; -1: no measured model.
  struct Candidate {
    std::string instruction;
    int probes = 0, mismatching = 0;
  };
  std::vector<Candidate> candidates;
  // The inference where the kernel writes the format of one of the candidates: whose probes, and how
  // many of the probes (of every set) the inferred model leaves unexplained ("": none was inferred).
  std::string inferred_from;
  int inferred_mismatching = 0;
  // "X (13 of 5580 probes unexplained), Y (...)": the candidates ruled out, "" when none.
  std::string ruled_out() const;
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
  // Where its time went: the inputs made where the kernel reads them and its launch on them
  // (Oracle::run_generated), and the prediction of the compared outputs (the other orders' included).
  double run_seconds = 0, prediction_seconds = 0;
  std::string first_mismatch;  // "(i,j): predicted 0x.. kernel 0x.."
  // Outputs that the tree's prediction misses but a revealed variant of the order predicts (counted
  // as predicted, not in mismatches).
  long long by_variant = 0;
};

struct Report {
  bool identified = false;
  std::string failed_stage;  // gemm | tree | scheduling | conversion | nodes | composition ("" when identified)
  std::string reason;
  // The oracle could answer no more (OracleLost: the GPU context is lost, or a launch never ended); the
  // reason says where. The stages finished before it are kept; nothing is identified.
  bool oracle_lost = false;
  std::string gemm_check;    // what stage 1 saw
  TreeStage tree;
  ScheduleStage schedule;
  ConversionStage conversion;
  NodeStage nodes;
  std::vector<Comparison> comparisons;
  // The identified numerics as gemmlab's record, holding the revealed tree (Numerics::tree): the named
  // order where one fits, accumulation tree otherwise; none where a node model is no instruction's.
  std::optional<Numerics> numerics;
  std::string numerics_text;         // in words
  // The record's bound at K (error_stats.hpp): |C^ - C| <= bound |A||B| + underflow_bound, computed from
  // the tree and its node models (tree_bound.hpp); +inf where it reaches 1 (judged no_bound); NaN
  // without a record. path_roundoff: the largest sum of unit roundoffs on one product's path,
  // path_roundings the roundings on that path, worst_product the product; named_bound: the gamma_K
  // bound of the record's named order (NaN for accumulation tree), which `bound` never exceeds.
  double bound = std::numeric_limits<double>::quiet_NaN(), underflow_bound = 0;
  double path_roundoff = 0, named_bound = std::numeric_limits<double>::quiet_NaN();
  int path_roundings = 0, worst_product = 0;
  std::vector<std::string> behaves_like;
  // A quantized problem (SOURCE@RECIPE): the composition predicts from the dequantized operands, every
  // element times its scales (the scales on the operands, before the multiply). Where those are not values
  // of the input format (a weight-only kernel's (q - 8) s + z against bf16 activations), the kernel rounds
  // them before it multiplies: each way of rounding in dequantization_candidates() predicts every compared
  // output of those distributions, and the one that predicts the most is taken (ways that round every value
  // alike on these inputs tie: the first is taken). Empty `operands`: nothing was rounded (no quantized
  // problem, or every dequantized value was one of the format's).
  struct Dequantization {
    std::string operands;          // "A", "B" or "A and B": the operands rounded
    std::string chosen;            // the candidate taken (dequantization_candidates()'s name)
    long long trial_outputs = 0;   // the outputs each candidate predicted
    std::vector<std::pair<std::string, long long>> tried;  // each candidate and its mismatches among them
  } dequantization;
  bool quantized = false;          // the composition compared quantized problems (their scales on the operands)
  long long launches = 0;
  double seconds = 0;
  double first_call_seconds = 0;  // Options::first_call: the call before the clock (0: none made)
  long long predicted_on_gpu = 0;  // the composition's outputs Options::emulate predicted (the rest: this host)
  // Each stage that ran, in order (gemm, tree, conversion, nodes, composition, scheduling, composition: the
  // composition's kernel runs and its predictions by Options::emulate, then the scheduling stage while the
  // predictions it did not take are made on the CPU, then its comparison; a tree that is not one deterministic order goes from tree to scheduling): its wall
  // time and the kernel's launches in it, where explain's time goes.
  struct StageTime {
    std::string stage;
    double seconds = 0;
    long long launches = 0;
  };
  std::vector<StageTime> stage_times;
  std::string summary() const;       // a few lines for people
};

Report explain_kernel(Oracle& oracle, const Options& opt);

// How a kernel may round a dequantized value v (exact in binary64) into `input`, the format it multiplies
// in: "rn": once, to nearest even (an fma of that format computing (q - 8) s + z, e.g. bf16's); "fp32_then_rn":
// to fp32 first (fp32 arithmetic: (q - 8) s is exact there, + z rounds), then to `input`.
struct DequantizationCandidate {
  const char* name;
  const char* words;
};
const std::vector<DequantizationCandidate>& dequantization_candidates();
double dequantize_as(const std::string& candidate, double v, Format input);

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

// The record of an identified kernel: numerics_for's where one fits, else accumulation tree (its fused
// nodes, if any, all one instruction's measured model, named by the kinds' same_as); either holds the
// tree's compact form (Numerics::tree), so that its bound is the tree's. nullopt where a kind of fused
// node has a model no instruction has, or the kinds need two instructions.
std::optional<Numerics> record_for(const SummationTree& tree, Format input, Format output, Conversion conv,
                                   const std::vector<NodeKind>& kinds,
                                   const emulation::SplitScheme* split = nullptr);

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
  std::vector<Perturbation> perturbations() override { return offered; }
  std::string perturb(int i) override;

  Format output_format = Format::fp32;       // the fp32 sum rounded to nearest even in this (a kernel writing bf16)
  double add_constant = 0;                   // not a GEMM: C + this
  bool nan_on_zero_row = false;              // NaN wherever a row of A is all zero
  std::optional<SummationTree> other_tree;   // used for entries with i >= other_from_row ...
  int other_from_row = 1 << 30;
  bool alternate_calls = false;              // ... or on every other call (order differs between calls)
  // Perturbations this kernel offers (perturbations()), and the tree it sums in under some of them:
  // under_perturbation[name] for every entry, or on every other call where alternate_under is set (an
  // order that changes from call to call under that perturbation, as atomics racing do).
  std::vector<Perturbation> offered;
  std::map<std::string, SummationTree> under_perturbation;
  std::set<std::string> alternate_under;
  // ... or, under by_row_under[name], entry (i, j) in the tree by_row_under[name][i % size] (an order of
  // its own at each entry, as atomics racing at every entry give).
  std::map<std::string, std::vector<SummationTree>> by_row_under;
  std::string refuse;                        // perturb() refuses every perturbation with this reason
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
  int perturbed_ = -1;  // index into offered, -1: undisturbed
};

}  // namespace gemmlab::explain
