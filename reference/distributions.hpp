// Controlled input distributions. Each is generated deterministically from a seed by a
// counter-based generator (same values on every platform and thread count), then rounded to the
// kernel's input format; the reference is computed on exactly those rounded values.
//
// Canonical names carry their parameters, so the CSV's `distribution` column says everything:
//   uniform_0_1          U[0,1)
//   uniform_-1_1         U[-1,1)
//   normal_0_1           N(0,1)
//   logunif_L_H          magnitude 2^U[L,H) (log-uniform over binades L..H), random sign
//   cancel_E             cancellation-heavy: the second half of K repeats A's first half while B's
//                        second half negates B's first half up to a relative perturbation 2^E, so
//                        C is about 2^E |A||B|, reached through large partial sums
//   exactint_R           integers in [-R, R]; every product and partial sum is exact in the output
//                        format when K R^2 <= 2^p_out (checked: see exact_in), so the only correct
//                        error is zero
//   expspread_PHI        exponent spread: (U - 0.5) exp(PHI N(0,1)), U uniform in [0, 1): the
//                        test matrices of exact / emulated GEMM studies (Ozaki, Uchino & Imamura;
//                        GEMMul8 uses PHI = 0.5 ... 4), so gemmlab's rows compare with their tables
// Any of them may carry a scaled fp8 recipe after '@' (reference/scaled_fp8.hpp), e.g.
// normal_0_1@e4m3_1x128_128x128: the kernel then reads the quantized operands and their scales; or a
// quantized recipe (reference/quantized_recipe.hpp: MX, NVFP4, int8, int4), e.g. normal_0_1@mxfp4 or
// normal_0_1@bf16_x_uint4_g128.
// The parser accepts these names and the aliases "uniform01", "uniform_pm1", "normal", "logunif",
// "cancel", "exactint" (default parameters), and rejects anything else with a message that lists
// the valid names.
//
// Parameters are integers, except PHI of expspread (a decimal, e.g. expspread_0.5). Defaults (the aliases, and default_distributions()): logunif_-8_8,
// cancel_-10, exactint_8. Details (reference/distributions.cpp):
//   uniform_-1_1         2u - 1 with u a 53-bit uniform: multiples of 2^-52.
//   normal_0_1           Box-Muller with hand-written ln and cos (bit-reproducible, |z| < 8.6).
//   logunif_L_H          L < H; binade b uniform in {L, ..., H-1}, magnitude 2^b 2^f with f
//                        uniform in [0,1) (so log2|x| is uniform on [L, H)), sign +-1 with
//                        probability 1/2. Range vs format: H must be <= emax of the input format
//                        (every value stays finite after rounding; otherwise generate() throws,
//                        see unusable_reason); magnitudes below the format's smallest subnormal
//                        round to +-0 (allowed: that is how subnormal/underflow inputs are made).
//   cancel_E             E <= -1. Base values U[-1,1). With h = K/2: A(i, h+k) = A(i, k) and
//                        B(h+k, j) = -RN_fmt(B(k, j) (1 + 2^E d)), d uniform in [-1, 1) per (k, j),
//                        so C(i,j) = sum_{k<h} A(i,k) (B(k,j) + B(h+k,j)) and
//                        |C(i,j)| <= (2^E + 2u_in) sum_{k<h} |A(i,k) B(k,j)|, which is about
//                        (2^E + 2u_in) |A||B|(i,j) / 2; for random data C is about
//                        2^E |A||B| / sqrt(K), reached from partial sums about |A||B| / 2. For odd K
//                        the last column of A and the last row of B are zero. The perturbation
//                        must survive rounding to the input format: E >= 1 - p_in (fp16 and wider
//                        take the default -10; bf16 needs E >= -7, e4m3 E >= -3, e5m2 E >= -2;
//                        otherwise generate() throws).
//   exactint_R           R >= 1; uniform integers in [-R, R]; every one must be representable in
//                        the input format: R <= 2^p_in (e4m3: 16, e5m2: 8, bf16: 256).
//   expspread_PHI        0 < PHI <= 16, written in the name as the shortest decimal that reads back
//                        as the same double (expspread_0.5, expspread_4). U from one Philox word
//                        (53 bits, so U - 0.5 is exact), N(0,1) from the normal above (second
//                        Philox block, |N| < 8.58), e^x by rng::exp (hand-written, bit-
//                        reproducible), one binary64 product, then one rounding to the format.
//                        |values| < 0.5 e^(8.58 PHI) must stay below the format's largest finite
//                        number (fp16: PHI <= 1.37, e4m3: 0.79, e5m2: 1.35, fp32/bf16/tf32: 10.4;
//                        otherwise generate() throws); values below the smallest subnormal round to
//                        +-0. Not in the default list: it is a family of its own (choose PHI).
#pragma once
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>
#include "reference/formats.hpp"
#include "reference/matrix.hpp"
#include "reference/quantized_recipe.hpp"

namespace gemmlab {

enum class DistKind { uniform01, uniform_pm1, normal, logunif, cancel, exactint, expspread };

// Scaled fp8 (reference/scaled_fp8.hpp says what each is and how the quantization goes): which
// entries of one operand share a dequantization scale. K runs along A's columns and B's rows.
//  none     no scales (an unscaled kernel)
//  tensor   one for the operand
//  outer    one per row of A (M), per column of B (N)
//  k128     one per row of A / column of B and 128 elements of K (1 x 128)
//  blk128   one per 128 x 128 block
enum class ScaleGranularity { none, tensor, outer, k128, blk128 };
const char* to_string(ScaleGranularity g);

// A recipe: the source is quantized to `fp8` with scales of granularity a (A) and b (B).
struct ScaleRecipe {
  Format fp8 = Format::e4m3;
  ScaleGranularity a = ScaleGranularity::tensor, b = ScaleGranularity::tensor;
  bool ue8m0 = false;        // scales are powers of two
  std::string name() const;  // "e4m3_1x128_128x128", "e5m2_tensor_ue8m0"
  bool operator==(const ScaleRecipe&) const = default;
};
// Throws std::invalid_argument naming the bad recipe and listing the valid forms.
ScaleRecipe parse_recipe(std::string_view name);

struct Distribution {
  DistKind kind = DistKind::uniform01;
  double p1 = 0, p2 = 0;  // logunif: L, H binades; cancel: E; exactint: R; expspread: PHI
  // SOURCE@RECIPE: the distribution above is the fp32 source, quantized under the recipe
  // (make_scaled_problem, reference/scaled_fp8.hpp; generate() refuses such a distribution).
  std::optional<ScaleRecipe> recipe;
  // SOURCE@RECIPE with a quantized recipe (make_quantized_problem, reference/quantized.hpp); at most one of
  // recipe and quant is set.
  std::optional<QuantRecipe> quant;
  std::string name() const;  // canonical name, e.g. "logunif_-8_8", "normal_0_1@e4m3_1x128_128x128"
  Distribution source() const;  // the distribution without its recipe
};

// Throws std::invalid_argument with a message naming the bad input and listing valid names.
Distribution parse_distribution(std::string_view name);
// The default list ("all" in the CLI): one of each kind with default parameters.
const std::vector<Distribution>& default_distributions();

// Which operand: A and B of one problem get independent streams from one seed, and so do a form's C0 and
// bias vector (reference/gemm_form.hpp).
enum class Operand { A = 0, B = 1, C0 = 2, bias = 3 };

// Generates the (rows, cols) operand, row-major, every value rounded to `fmt`. For cancel, the
// structure couples A and B: generate both with the same seed and K (A is (M,K), B is (K,N)).
Matrix generate(const Distribution& d, Operand which, int rows, int cols, Format fmt,
                std::uint64_t seed, int threads = 0);

// For exactint: whether the exact product is representable in `out` for this K (K R^2 <= 2^p and
// every input integer fits the input format). Empty string when fine, else the reason.
std::string exact_in(const Distribution& d, Format in, Format out, int K);
// (Pass as `out` the narrowest format that holds partial sums or the result: the accumulator's
// if it is narrower than the output's; pass as `in` the compute format if the multiplier sees a
// narrower one, e.g. tf32 for fp32 inputs under TF32 mode. For any other kind: the reason it is not
// an exact distribution.)

// Whether the distribution can be generated in input format `in` (logunif: H <= emax; cancel:
// E >= 1 - p; exactint: R <= 2^p; SOURCE@RECIPE: `in` is the recipe's fp8 format and the source
// can be generated in fp32; a quantized recipe: never, its operands are quantized operands, which
// only a kernel of that recipe takes). Empty string when fine, else the reason (what generate() throws for a
// distribution without a recipe).
std::string unusable_reason(const Distribution& d, Format in);

}  // namespace gemmlab
