// The problem beyond C = A·B: the form of a GEMM as a model runs it (issue 34), its exact reference
// and its bound.
//
//   C_t = s · (alpha · A_t B_t + beta · C0_t + bias),   t = 0 .. parts - 1, rounded once to the output
//
//  * batch=N        N strided batches of (M, N, K): A_t (M, K), B_t (K, N), C_t and C0_t (M, N) (torch.bmm,
//                   cublasGemmStridedBatchedEx);
//  * groups=a+b+..  grouped GEMM: group g takes rows [o_g, o_g + m_g) of A (M, K) and of C (M, N) with its own
//                   B_g (K, N) (an MoE layer: torch._grouped_mm, cublasGemmGroupedBatchedEx); the m_g sum to M,
//                   and a last entry `*` takes the rows the others leave;
//  * alpha=X, beta=X, c0=DIST   C = alpha A B + beta C0 (torch.addmm), C0 drawn from distribution DIST in the
//                   kernel's C0 format (Epilogue::c0); alpha and beta are fp32 values (a decimal is rounded to
//                   fp32 as a kernel's float receives it);
//  * bias=row:DIST or bias=column:DIST   a bias vector drawn from DIST in the kernel's bias format, one value per
//                   row of C (length M) or per column (length N: F.linear's bias, cuBLASLt's BIAS epilogue);
//  * scale=X        an output scale s (fp32): C = RN_out(s T), saturating for fp8 outputs (torch._scaled_mm's
//                   scale_result, cuBLASLt's D scale); a kernel may report amax = max |T|.
// One form is written as one canonical text, the CSV's `form` column: "plain" for C = A B, else its parts as
// key=value joined by ',' in the order batch, groups, alpha, beta, c0, bias, scale (beta is written whenever C0 is
// there; a part at its neutral value is left out). parse_form reads any order and writes it back canonically.
//
// Inputs: the operands of a form problem are exactly those of the plain problem (rows, parts N, K) that
// `gemmlab inputs` makes from the same distribution and seed: A stacked over the parts (rows = batch M, or
// M for groups), B (K, parts N) whose columns [t N, (t + 1) N) are B_t. C0 (rows, N) and the bias (1, length)
// come from generate() with operands Operand::C0 and Operand::bias of their own distributions and the seed.
//
// Exact reference: every entry of part t is one exact sum, so it is the product of augmented operands
//   A'_t = [ alpha A_t | C0_t | b_r ]      (m_t, K + N + 1)
//   B'_t = [ s B_t ; beta s I_N ; s b_c ]   (K + N + 1, N)
// (the C0 block only where there is a C0, the last column/row only with a bias: b_r the row bias or ones, b_c the
// column bias or ones), and every entry of A' and B' is exact in binary64: alpha a and s b are products of two
// values of at most 24 significand bits (inputs up to fp32; fp64 inputs take no form), beta s likewise. Any exact
// engine (exact_gemm, mpfr_gemm, the GPU's int8 split) then computes C'_t = A'_t B'_t with one rounding, and
// |A'_t||B'_t| = |s| (|alpha| |A_t||B_t| + |beta C0_t| + |bias|) is exactly the magnitude the bound of a form is
// relative to (BoundModel's epilogue terms, reference/error_stats.hpp). The parts' references are stacked
// into one (rows, N) reference, judged as one output.
//
// Plain C++: no CUDA header.
#pragma once
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "reference/distributions.hpp"
#include "reference/error_stats.hpp"
#include "reference/exact_gemm.hpp"
#include "reference/formats.hpp"
#include "reference/matrix.hpp"

namespace gemmlab {

// Which values of C a bias vector holds one entry for.
//  row      one per row of C (length M, the same for every column)
//  column   one per column of C (length N, the same for every row): F.linear, cuBLASLt's BIAS epilogue
enum class BiasKind { none, row, column };
const char* to_string(BiasKind b);

// Where a term of the epilogue (beta C0, the bias) enters, relative to the rounding of the result to the
// output format (one word per concept, in the kernel's record and the CSV):
//  before_output_rounding  added in the epilogue's arithmetic (or to the accumulator) before C is rounded once to
//                          its format (cuBLASLt's epilogue as documented; a fused Triton epilogue)
//  after_output_rounding   added to the GEMM's result already rounded to the output format, then rounded again
//                          (a GEMM, then a separate add)
//  unknown                 not declared (a library, a callable): the bound takes the weaker, after_output_rounding
enum class Placement { before_output_rounding, after_output_rounding, unknown };
const char* to_string(Placement p);
std::optional<Placement> parse_placement(std::string_view name);

struct GemmForm {
  int batch = 1;                 // strided batches (1: none)
  std::vector<int> group_rows;   // grouped GEMM: rows of each group; -1 (written `*`) as the last: the rest of M
  double alpha = 1.0;            // fp32 values
  double beta = 0.0;
  std::string c0;                // distribution of C0 ("" = no C0)
  BiasKind bias = BiasKind::none;
  std::string bias_distribution;
  double scale = 1.0;            // output scale s (fp32)

  bool plain() const;
  bool grouped() const { return !group_rows.empty(); }
  std::string name() const;  // the canonical text ("plain" for C = A B)
  bool operator==(const GemmForm& o) const { return name() == o.name(); }
};

// Reads a form's text (any order of its parts; "plain" or "" for C = A B). Throws std::invalid_argument naming
// the part that is wrong and listing the valid parts.
GemmForm parse_form(std::string_view text);
// The canonical text of `text` ("" for plain: the key of a plain row is the key it always had). Throws as
// parse_form.
std::string form_key(std::string_view text);

// The forms a kernel takes (Kernel::forms). A kernel that takes none runs only plain problems; a row whose form
// it cannot take is not_applicable, saying why.
struct FormSupport {
  bool alpha = false;        // alpha != 1
  bool c0 = false;           // beta C0
  bool bias_row = false;
  bool bias_column = false;
  bool batch = false;
  bool groups = false;
  bool scale = false;        // an output scale (and amax)
  bool any() const { return alpha || c0 || bias_row || bias_column || batch || groups || scale; }
};
// Everything (a Python callable takes whatever form it is asked).
constexpr FormSupport all_forms() { return {true, true, true, true, true, true, true}; }
// "" when a kernel with support s takes form f, else what it lacks.
std::string form_unsupported(const FormSupport& s, const GemmForm& f);

// How a kernel computes the epilogue of a form (its part of the numerics record; Kernel::epilogue).
struct Epilogue {
  Format c0 = Format::fp32;          // storage format of C0 as the kernel reads it
  Format bias = Format::fp32;        // storage format of the bias vector
  Format arithmetic = Format::fp32;  // format of the epilogue's arithmetic: alpha x, beta C0, the adds, s x
  Placement c0_placement = Placement::unknown;
  Placement bias_placement = Placement::unknown;
  bool operator==(const Epilogue&) const = default;
};
// The epilogue of a kernel with output format `out` that declares nothing else: C0 and bias in the output
// format, fp32 arithmetic, placements unknown.
constexpr Epilogue epilogue_of_output(Format out) { return {out, out, Format::fp32, Placement::unknown, Placement::unknown}; }

// A form at a size: the parts (batches or groups) and where each one's rows sit in the stacked (rows, N)
// output. For a batch, (M, N, K) is one batch's; for groups, M is the total of the groups' rows.
struct FormShape {
  int M = 0, N = 0, K = 0;
  int rows = 0;                  // rows of the stacked A, C0 and C
  std::vector<int> part_rows;    // m_t
  std::vector<int> part_row0;    // the first row of part t
  int bias_length = 0;           // M_t-independent: M (row bias of a batch: one batch's M) or N; 0 = no bias
  int parts() const { return static_cast<int>(part_rows.size()); }
};
// Throws std::invalid_argument when the form does not fit the size (groups beyond M, a `*` with no rows left).
FormShape form_shape(const GemmForm& f, int M, int N, int K);

// One form problem's operands on the host, every value exact in its format: A (rows, K), B (K, parts N),
// C0 (rows, N) or empty, bias (1, bias_length) or empty.
struct FormOperands {
  GemmForm form;
  FormShape shape;
  Format input = Format::fp32;
  Epilogue epilogue;
  Matrix A, B, C0, bias;
};
// Why distribution `d` cannot be C0 or a bias in format `fmt` ("" when it can): no recipe, no cancel (its
// structure couples A and B), and unusable_reason.
std::string epilogue_distribution_problem(std::string_view what, const std::string& d, Format fmt);
// Why the form cannot run with inputs in `in` and this epilogue ("" when it can): the exact reference takes
// inputs of at most 24 significand bits (fp64 inputs: plain only), C0 and bias distributions as above.
std::string form_problem(const GemmForm& f, Format in, const Epilogue& e);
// The operands as generate() makes them (the plain problem's A and B, see above). Throws std::invalid_argument
// where form_problem is not empty.
FormOperands make_form_operands(const GemmForm& f, const FormShape& s, const Distribution& d, Format in,
                                const Epilogue& e, std::uint64_t seed, int threads = 0);

// The augmented operands of part t (A'_t (m_t, K'), B'_t (K', N)) from rows of the parts: a_row(i, k) = A(row0 +
// i, k), etc. One function for the CPU engines, the spot checks and the GPU's layout (experiments/device).
int augmented_depth(const GemmForm& f, const FormShape& s);  // K' = K + (C0 ? N : 0) + (bias ? 1 : 0)
void augmented_operands(const FormOperands& in, int part, Matrix& A_aug, Matrix& B_aug);
// Row i of A'_t and column j of B'_t alone (an MPFR spot check of entry (row0_t + i, j)).
void augmented_line(const FormOperands& in, int part, int i, int j, Matrix& a_row, Matrix& b_col);
// The part a stacked row belongs to.
int part_of_row(const FormShape& s, int row);

// The exact reference of the whole form: each part's augmented product by exact_gemm (mpfr: by mpfr_gemm),
// stacked into one (rows, N) reference for output format `out` (abs_ab: |s|(|alpha||A||B| + |beta C0| + |bias|)).
GemmReference exact_form(const FormOperands& in, Format out, int threads = 0, bool mpfr = false);

// The bound model of a kernel of numerics n and epilogue e on form f at depth K: bound_model(n, K) with the
// epilogue's terms (BoundModel::epilogue_roundings, output_roundings, epilogue, underflow_scale; the derivation is
// at gamma_bound_factor in reference/error_stats.hpp). h counts the roundings in the epilogue's arithmetic on the
// worst term's path: one for alpha (alpha != 1) or beta C0 (beta != 1), one per add (C0 and the bias), one for the
// scale (s != 1); r is 2 when C0 or the bias is there and its placement is after_output_rounding or unknown, else 1.
struct Numerics;
BoundModel form_bound_model(const Numerics& n, const Epilogue& e, const GemmForm& f, int K);

}  // namespace gemmlab
