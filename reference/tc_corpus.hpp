// The adversarial corpus (issue 21): cases built on purpose where random tiles never go, one rule
// class at a time, for one tensor-core instruction. Each case is a probe (reference/tc_infer.hpp):
// one dot product c + sum a_k b_k of the instruction's length k, placed in row 0 of A, column 0 of
// B and C(0,0) of an otherwise zero tile, with the exact bit patterns the hardware is fed (NaN
// payloads and signs, -0, the low bits of a tf32 operand's container). The model's answer is a pure
// function of those bits; the hardware's answer to every case feeds the inference of the special
// rules (tc_model.hpp: nan_encoding, overflow, zero_sign, zero_operand_exponent, tf32_low_bits) and
// the per-class validation `gemmlab probe --corpus` writes.
//
// The classes (kCorpusClasses, in this order):
//   nan_inf_a, nan_inf_b, nan_inf_c  NaN (random payload and sign) and +-infinity in A, B or C, with
//                                    zero or finite partners (inf * 0, inf - inf, NaN * 0);
//   overflow_before_alignment        terms beyond the output's largest finite value before they are
//                                    aligned (products whose exponent sum exceeds the output's emax,
//                                    or C in the top binade), cancelling or not;
//   overflow_after_alignment         terms in range whose aligned, truncated sum lands at, just below
//                                    or just above the largest finite value (carries, C = +-max);
//   exact_cancellation               terms that cancel exactly, every sign combination of the
//                                    products and C, C = +0 and -0, zero operands of either sign;
//   zero_operands                    +-0 in A or B opposite the largest and smallest exponents, next
//                                    to small non-zero products whose bits a zero's alignment would cut;
//   subnormal                        subnormal operands, products below the output's normal range,
//                                    subnormal C and results;
//   top_carry                        many terms at the block's largest exponent with full
//                                    significands: carries out of the top of the aligned sum;
//   c_alone                          every product zero (+-0 operands, some opposite extreme
//                                    exponents): D is C as the datapath passes it;
//   exponent_gap                     C and the products at the largest and smallest exponent gaps
//                                    (C far above, far below, and around F places apart);
//   tf32_low_bits (tf32 only)        operands given as fp32 bits with non-zero low 13 bits;
//   step_rounding (fp64 only)        sums whose roundings differ between an FMA chain (either
//                                    order) and one rounding of the whole sum: ties of C's last
//                                    place, sticky bits far below, cancellation, 106-bit products.
//
// Plain C++ (no CUDA header): the same cases are built on the CPU (tests) and for the GPU.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "reference/tc_infer.hpp"

namespace gemmlab::tc {

inline constexpr std::uint64_t kCorpusSeed = 20261124;
inline constexpr int kCorpusCasesPerClass = 1000;

// The rule classes, in the corpus's order.
const std::vector<std::string>& corpus_classes();
// Those that apply to this instruction (tf32_low_bits only to tf32 operands, step_rounding only to
// binary64 ones).
std::vector<std::string> corpus_classes(const InstructionInfo& ins);

// `per_class` cases of every class that applies, in class order; ids "corpus/<class>/<seed>/<i>",
// feature = the class. A pure function of (instruction, seed, per_class).
std::vector<Probe> make_corpus(const InstructionInfo& ins, std::uint64_t seed = kCorpusSeed,
                               int per_class = kCorpusCasesPerClass);

// True for a case of make_corpus (its id starts with "corpus/").
bool is_corpus_case(const Probe& p);

}  // namespace gemmlab::tc
