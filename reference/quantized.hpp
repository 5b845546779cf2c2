// Quantized operands as quantized models' matmuls read them: a distribution's fp32 sources A0 (M, K),
// B0 (K, N), each quantized under its spec of a recipe (reference/quantized_recipe.hpp: MX, NVFP4,
// int8 per row / column, int4 / uint4 per group, or plain bf16 / fp16), with the scales, zeros and
// tensor scales a kernel is given beside the elements.
//
// The dequantized operand (every element times its scales, plus its zero) is exact in binary64
// (reference/quantized_entry.hpp says why), so both exact references of a problem come from the exact
// engines as they are: against the dequantized operands (the kernel's own error: what it computed from
// what it was given) and against A0 B0 (the total error, quantization included); the exact product of
// the dequantized operands against A0 B0 is the quantization error alone.
//
// Rules (what is refused, std::invalid_argument with what was wrong and what to do):
//  * K not a multiple of a spec's block extent (32, 16 or the group size);
//  * a block without a usable scale: all zero (amax 0; as scaled fp8 refuses), a non-finite value, a
//    scale that is 0 in its format or an E8M0 exponent outside -127 .. 127, a uint4 group whose values
//    are all equal (its scale would be 0), a uint4 group whose (q - 8) s + z is not exact in binary64.
//
// Plain C++ (no CUDA header).
#pragma once
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "reference/distributions.hpp"
#include "reference/error_stats.hpp"
#include "reference/formats.hpp"
#include "reference/matrix.hpp"
#include "reference/numerics.hpp"
#include "reference/quantized_entry.hpp"
#include "reference/quantized_recipe.hpp"

namespace gemmlab {

// The plan of operand `which` (rows, cols) under `spec`: its block extents and scale grid. Throws
// std::invalid_argument when K is not a multiple of the block extent.
quant_detail::QuantPlan quant_plan(Operand which, const QuantSpec& spec, int rows, int cols);

// One quantized operand.
struct QuantizedOperand {
  QuantSpec spec;
  Operand which = Operand::A;
  quant_detail::QuantPlan plan;
  Matrix q;                    // (rows, cols): element values as doubles (integers for int8 / int4 / uint4)
  int grid_rows = 0, grid_cols = 0;
  std::vector<double> scales;  // (grid_rows, grid_cols) row-major: 2^e (mx), ue4m3 (nvfp4), fp32, bf16
  std::vector<double> zeros;   // uint4: the zero of each block (bf16), same grid; empty otherwise
  double tensor_scale = 1.0;   // nvfp4: the operand's fp32 scale t; 1 otherwise
  double scale_of(int i, int j) const;
  double zero_of(int i, int j) const;
  double dequantized_at(int i, int j) const;  // exact
  Matrix dequantized() const;
};

// The message for a block without a usable scale (a quant_detail::QuantProblem), naming the operand,
// the spec and the block (grid indices gi, gj), and saying what to do.
std::string quant_problem_message(int problem, Operand which, const QuantSpec& spec, int gi, int gj);

// Quantizes the source operand (fp32 values). Throws std::invalid_argument with quant_problem_message's
// text for the first block (row-major grid order; NVFP4's tensor scale first) without a usable scale.
QuantizedOperand quantize(const Matrix& source, Operand which, const QuantSpec& spec);

// A whole problem of a distribution with a quantized recipe: the sources A0 (M, K), B0 (K, N) of
// d.source() generated in fp32 from `seed`, A quantized under recipe.a, B under recipe.b.
struct QuantizedProblem {
  Matrix A0, B0;
  QuantizedOperand A, B;
};
QuantizedProblem make_quantized_problem(const Distribution& d, int M, int N, int K, std::uint64_t seed,
                                        int threads = 0);

// Whether every value of the matrix is a value of f (the dequantized operands in a kernel's compute format), on
// `threads` threads (0: all; reference/parallel.hpp).
bool all_representable(const Matrix& m, Format f, int threads = 0);

// gemmlab explain of a quantized kernel: its probes are written into the recipe's tensors at unit scale
// (quantized_entry.hpp unit_scale_element), so that the dequantized operands are the probes' values exactly.
// The values an operand of `spec` holds that way, sorted: every finite element value (MXFP4's e2m1: 0, +-0.5,
// +-1, ..., +-6; int8 -127 .. 127; int4 -7 .. 7; uint4 with its zero q - 8: -8 .. 7); empty for a plain operand
// (any value of its format).
std::vector<double> unit_scale_values(const QuantSpec& spec);
// The format a recipe's kernel is explained in: the plain operand's (bf16 or fp16) beside a quantized one, which
// must hold every unit-scale value of the quantized operand. nullopt, with *why saying why and what to do
// instead, where explain cannot take the recipe: both operands quantized (the tree stage's probes need one
// operand that holds any value of its format), or a plain operand that cannot hold the other's elements.
std::optional<Format> explain_input_format(const QuantRecipe& r, std::string* why);

// Where a quantized kernel applies the scales, which decides its bound (against the exact product of the
// dequantized operands, relative to |A^||B^| of those operands):
//  operands  the kernel multiplies the dequantized operands (the scales folded in before the multiply, as
//            tl.dot_scaled does on Hopper and the weight-only kernels do in registers), in its declared compute
//            format, and accumulates as its numerics say: its numerics' bound with input fp64 (the dequantized
//            values, exact), the products exact (d_prod = 0) when every dequantized value of the problem is a
//            value of the compute format (bf16 holds every MX value q 2^e of an fp32 source), else both
//            operands rounded to it (d_prod = (1 + u_c)^2 - 1);
//  output    integer elements (int8, int4) multiplied and summed exactly (|q| <= 127: K 127^2 < 2^31 for K below
//            133,143, which the run checks), the scales applied to the sum: `roundings` fp32 roundings (the sum's
//            conversion to fp32, each scale multiplication but the last) and the output's one:
//            1 + f = (1 + u_out)(1 + gamma_h(2^-24)) with h = roundings (error_stats.hpp's epilogue), the exact
//            accumulation bounded as a binary64 one (gamma_K(2^-53), which is above 0 and below any fp32 term);
//  unknown   not declared: no bound is claimed (status no_bound).
enum class QuantScales { operands, output, unknown };
const char* to_string(QuantScales s);
std::optional<QuantScales> parse_quant_scales(std::string_view name);
BoundModel quantized_bound_model(const Numerics& n, QuantScales where, int roundings, int K, bool operands_exact);

// An int8 rowwise kernel's scales on the output, explained: quantized_entry.hpp's candidate epilogues, each with
// the outputs it predicts wrong (`differ`, of `entries`), in words for the row's note: the candidate that predicts
// every output bit for bit, or the one closest to it.
const char* epilogue_candidate_name(int candidate);  // "epilogue_mul_mul", ..., "once"
std::string epilogue_explanation(const long long* differ, long long entries);

}  // namespace gemmlab
