// The problem beyond C = A·B (reference/gemm_form.*): the form's text, its shape, its exact reference (hand-
// computed dyadic answers, and MPFR evaluating alpha sum a b + beta c0 + b directly, not through the augmented
// product the engines compute) and its bound (hand-computed factors; every entry of kernels emulated with each
// placement within it).
#include <gtest/gtest.h>
#include <mpfr.h>

#include <cmath>
#include <random>
#include <string>
#include <vector>

#include "reference/error_stats.hpp"
#include "reference/gemm_form.hpp"
#include "reference/mpfr_gemm.hpp"
#include "reference/numerics.hpp"
#include "tests/same_bits.hpp"

namespace gemmlab {
namespace {

using testing::same_bits;

// ---- the text -------------------------------------------------------------------------------

TEST(GemmFormText, CanonicalOrderAndDefaults) {
  EXPECT_EQ(parse_form("").name(), "plain");
  EXPECT_EQ(parse_form("plain").name(), "plain");
  EXPECT_TRUE(parse_form("batch=1,alpha=1").plain());
  EXPECT_EQ(parse_form("c0=normal,beta=2,alpha=0.5").name(), "alpha=0.5,beta=2,c0=normal_0_1");
  EXPECT_EQ(parse_form("c0=uniform01").name(), "beta=1,c0=uniform_0_1");  // beta 1 with a C0
  EXPECT_EQ(parse_form("scale=0.25,bias=column:uniform_pm1,batch=16").name(),
            "batch=16,bias=column:uniform_-1_1,scale=0.25");
  EXPECT_EQ(parse_form("groups=128+512+1000+*").name(), "groups=128+512+1000+*");
  EXPECT_EQ(form_key("plain"), "");
  EXPECT_EQ(form_key("bias=row:normal_0_1"), "bias=row:normal_0_1");
}

TEST(GemmFormText, AlphaAndBetaAreFp32Values) {
  const GemmForm f = parse_form("alpha=0.1,beta=0.7,c0=normal_0_1");
  EXPECT_EQ(f.alpha, static_cast<double>(0.1f));
  EXPECT_EQ(f.beta, static_cast<double>(0.7f));
  EXPECT_EQ(f.name(), "alpha=0.1,beta=0.7,c0=normal_0_1");  // the shortest decimal of the float
  EXPECT_EQ(parse_form(f.name()).alpha, f.alpha);
  // A decimal between two floats is rounded once, to nearest (not through binary64).
  EXPECT_EQ(parse_form("alpha=1.00000005960464477539062500000001").alpha, 1.0 + 0x1p-23);
}

TEST(GemmFormText, BadFormsAreRefusedNamingThePart) {
  auto message = [](const char* text) {
    try {
      parse_form(text);
    } catch (const std::invalid_argument& e) {
      return std::string(e.what());
    }
    return std::string("accepted");
  };
  EXPECT_NE(message("gamma=2").find("'gamma' is not a part of a form"), std::string::npos);
  EXPECT_NE(message("beta=2").find("beta needs a C0"), std::string::npos);
  EXPECT_NE(message("batch=2,groups=1+2").find("batched or grouped"), std::string::npos);
  EXPECT_NE(message("groups=*+3").find("only the last group"), std::string::npos);
  EXPECT_NE(message("groups=64").find("at least two groups"), std::string::npos);
  EXPECT_NE(message("bias=diagonal:normal").find("row:DISTRIBUTION or column:DISTRIBUTION"), std::string::npos);
  EXPECT_NE(message("c0=gaussian").find("c0:"), std::string::npos);
  EXPECT_NE(message("c0=normal_0_1@e4m3_tensor").find("recipe"), std::string::npos);
  EXPECT_NE(message("alpha=x").find("not a finite decimal"), std::string::npos);
  EXPECT_NE(message("alpha=1e60").find("not a finite decimal"), std::string::npos);  // beyond fp32
  EXPECT_NE(message("batch=0").find(">= 1"), std::string::npos);
  EXPECT_NE(message("alpha=1,alpha=2").find("given twice"), std::string::npos);
  EXPECT_NE(message("beta=0,c0=normal").find("beta=0"), std::string::npos);
}

TEST(GemmFormSupport, SaysWhatTheKernelLacks) {
  FormSupport s;
  s.alpha = s.c0 = true;
  EXPECT_EQ(form_unsupported(s, parse_form("alpha=0.5,beta=2,c0=normal")), "");
  EXPECT_EQ(form_unsupported(s, parse_form("batch=4,bias=row:normal")), "takes no a row bias or batches");
  EXPECT_EQ(form_unsupported(FormSupport{}, parse_form("plain")), "");
  EXPECT_EQ(form_unsupported(all_forms(), parse_form("groups=1+2,alpha=3,c0=normal,bias=column:normal,scale=2")), "");
}

TEST(GemmFormShape, BatchesAndGroups) {
  const FormShape b = form_shape(parse_form("batch=3,bias=row:normal"), 4, 5, 6);
  EXPECT_EQ(b.rows, 12);
  EXPECT_EQ(b.part_row0, (std::vector<int>{0, 4, 8}));
  EXPECT_EQ(b.bias_length, 4);
  const FormShape g = form_shape(parse_form("groups=3+5+*"), 10, 7, 2);
  EXPECT_EQ(g.part_rows, (std::vector<int>{3, 5, 2}));
  EXPECT_EQ(part_of_row(g, 7), 1);
  EXPECT_EQ(part_of_row(g, 8), 2);
  EXPECT_THROW(form_shape(parse_form("groups=3+5"), 10, 7, 2), std::invalid_argument);    // 8 rows, M = 10
  EXPECT_THROW(form_shape(parse_form("groups=3+7+*"), 10, 7, 2), std::invalid_argument);  // nothing left
  EXPECT_EQ(form_shape(parse_form("bias=column:normal"), 4, 5, 6).bias_length, 5);
}

TEST(GemmFormProblem, Fp64InputsAndCancelAreRefused) {
  const Epilogue e = epilogue_of_output(Format::bf16);
  EXPECT_NE(form_problem(parse_form("alpha=0.5"), Format::fp64, e).find("fp64 GEMMs run plain"), std::string::npos);
  EXPECT_EQ(form_problem(parse_form("plain"), Format::fp64, e), "");
  EXPECT_NE(form_problem(parse_form("c0=cancel"), Format::bf16, e).find("couples A and B"), std::string::npos);
  EXPECT_NE(form_problem(parse_form("bias=column:logunif_-8_200"), Format::bf16, e).find("bias in bf16"),
            std::string::npos);
}

// ---- the exact reference --------------------------------------------------------------------

FormOperands operands(const std::string& form, int M, int N, int K, Format in, Epilogue e, const char* dist,
                      std::uint64_t seed) {
  const GemmForm f = parse_form(form);
  return make_form_operands(f, form_shape(f, M, N, K), parse_distribution(dist), in, e, seed, 1);
}

// Two batches, alpha 0.5, beta 2, a column bias: every value dyadic, the answers computed by hand.
TEST(GemmFormExact, HandComputedDyadicBatches) {
  FormOperands o = operands("batch=2,alpha=0.5,beta=2,c0=uniform_0_1,bias=column:uniform_0_1", 1, 2, 2,
                            Format::fp32, epilogue_of_output(Format::fp32), "uniform_0_1", 1);
  // A (2 rows: one per batch, K = 2), B (K, 2 batches x N = 2), C0 (2, 2), bias (1, 2).
  o.A.v = {1, 2, 3, 4};
  o.B.v = {1, 2, 0.5, 0.25, 3, 4, -1, 8};  // B_0 = [[1, 2], [3, 4]], B_1 = [[0.5, 0.25], [-1, 8]]
  o.C0.v = {0.25, 0.5, 1, -1};
  o.bias.v = {0.125, -0.75};
  const GemmReference r = exact_form(o, Format::fp32, 1);
  // batch 0: A_0 B_0 = [1*1 + 2*3, 1*2 + 2*4] = [7, 10]; 0.5 that + 2 C0 + bias
  // batch 1: A_1 B_1 = [3*0.5 + 4*-1, 3*0.25 + 4*8] = [-2.5, 32.75]
  const std::vector<double> want = {3.5 + 0.5 + 0.125, 5 + 1 - 0.75, -1.25 + 2 + 0.125, 16.375 - 2 - 0.75};
  EXPECT_TRUE(same_bits(r.c, want, 2));
  // |alpha||A||B| + |beta C0| + |bias|
  const std::vector<double> abs = {3.5 + 0.5 + 0.125, 5 + 1 + 0.75, 0.75 + 2 + 2 + 0.125, 16.375 + 2 + 0.75};
  EXPECT_TRUE(same_bits(r.abs_ab, abs, 2));
}

TEST(GemmFormExact, RowBiasPerBatchRowAndPerGroupRow) {
  FormOperands b = operands("batch=2,bias=row:uniform_0_1", 2, 1, 1, Format::fp32, epilogue_of_output(Format::fp32),
                            "uniform_0_1", 1);
  b.A.v = {1, 2, 3, 4};
  b.B.v = {1, 10};
  b.bias.v = {0.5, 0.25};  // one per row of a batch, shared by the batches
  EXPECT_TRUE(same_bits(exact_form(b, Format::fp32, 1).c, std::vector<double>{1.5, 2.25, 30.5, 40.25}, 1));
  FormOperands g = operands("groups=1+*,bias=row:uniform_0_1", 3, 1, 1, Format::fp32, epilogue_of_output(Format::fp32),
                            "uniform_0_1", 1);
  g.A.v = {1, 2, 3};
  g.B.v = {1, 10};  // B_0 = 1, B_1 = 10
  g.bias.v = {0.5, 0.25, 0.125};  // one per row of the stacked C
  EXPECT_TRUE(same_bits(exact_form(g, Format::fp32, 1).c, std::vector<double>{1.5, 20.25, 30.125}, 1));
}

// T = s (alpha sum a b + beta c0 + b) evaluated in MPFR at a precision that holds it exactly, then rounded to
// `prec` bits to nearest (53: binary64).
double mpfr_form_entry(const FormOperands& o, int row, int j, mpfr_prec_t prec, double* abs_out) {
  const GemmForm& f = o.form;
  const FormShape& s = o.shape;
  const int t = part_of_row(s, row), i = row - s.part_row0[t];
  mpfr_t acc, term, aacc;
  mpfr_inits2(4000, acc, term, aacc, static_cast<mpfr_ptr>(nullptr));
  mpfr_set_zero(acc, 1);
  mpfr_set_zero(aacc, 1);
  for (int k = 0; k < s.K; ++k) {
    mpfr_set_d(term, o.A(row, k), MPFR_RNDN);
    mpfr_mul_d(term, term, o.B(k, t * s.N + j), MPFR_RNDN);
    mpfr_add(acc, acc, term, MPFR_RNDN);
    mpfr_abs(term, term, MPFR_RNDN);
    mpfr_add(aacc, aacc, term, MPFR_RNDN);
  }
  mpfr_mul_d(acc, acc, f.alpha, MPFR_RNDN);
  mpfr_mul_d(aacc, aacc, std::fabs(f.alpha), MPFR_RNDN);
  if (!f.c0.empty()) {
    mpfr_set_d(term, o.C0(row, j), MPFR_RNDN);
    mpfr_mul_d(term, term, f.beta, MPFR_RNDN);
    mpfr_add(acc, acc, term, MPFR_RNDN);
    mpfr_abs(term, term, MPFR_RNDN);
    mpfr_add(aacc, aacc, term, MPFR_RNDN);
  }
  if (f.bias != BiasKind::none) {
    const double b = f.bias == BiasKind::column ? o.bias(0, j) : o.bias(0, f.grouped() ? row : i);
    mpfr_add_d(acc, acc, b, MPFR_RNDN);
    mpfr_add_d(aacc, aacc, std::fabs(b), MPFR_RNDN);
  }
  mpfr_mul_d(acc, acc, f.scale, MPFR_RNDN);
  mpfr_mul_d(aacc, aacc, std::fabs(f.scale), MPFR_RNDN);
  mpfr_prec_round(acc, prec, MPFR_RNDN);
  const double v = mpfr_get_d(acc, MPFR_RNDN);
  if (abs_out) *abs_out = mpfr_get_d(aacc, MPFR_RNDN);
  mpfr_clears(acc, term, aacc, static_cast<mpfr_ptr>(nullptr));
  return v;
}

struct Case {
  const char* form;
  int M, N, K;
  Format in, out;
  const char* dist;
};

// Arbitrary fp32 alpha, beta and scale (not powers of two), every part of a form, fp16 / bf16 / fp32 inputs:
// c bit for bit MPFR's direct evaluation, c_out its rounding to the output format's precision (values kept in
// the normal range), abs_ab |s|(|alpha||A||B| + |beta C0| + |bias|); the MPFR engine on the augmented
// operands equal bit for bit.
TEST(GemmFormExact, EqualsMpfrEvaluatedDirectly) {
  const Case cases[] = {
      {"alpha=0.1,beta=0.7,c0=normal_0_1,bias=column:uniform_-1_1", 9, 7, 33, Format::fp16, Format::fp16, "normal_0_1"},
      {"batch=3,alpha=-1.3,beta=2,c0=uniform_0_1", 5, 6, 17, Format::bf16, Format::bf16, "uniform_-1_1"},
      {"groups=3+8+*,bias=row:normal_0_1,alpha=0.3", 16, 5, 40, Format::fp32, Format::fp32, "logunif_-8_8"},
      {"scale=0.3,bias=column:uniform_0_1,alpha=0.7", 6, 6, 64, Format::e4m3, Format::bf16, "uniform_0_1"},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.form);
    const FormOperands o = operands(c.form, c.M, c.N, c.K, c.in, epilogue_of_output(c.out), c.dist, 7);
    const GemmReference r = exact_form(o, c.out, 1);
    const int prec = info(c.out).precision;
    for (int i = 0; i < o.shape.rows; ++i)
      for (int j = 0; j < o.shape.N; ++j) {
        double abs = 0;
        const std::size_t at = static_cast<std::size_t>(i) * o.shape.N + j;
        EXPECT_EQ(std::bit_cast<std::uint64_t>(r.c[at]), std::bit_cast<std::uint64_t>(mpfr_form_entry(o, i, j, 53, &abs)))
            << "c(" << i << "," << j << ")";
        EXPECT_EQ(r.abs_ab[at], abs) << "abs_ab(" << i << "," << j << ")";
        if (std::fabs(r.c[at]) >= std::ldexp(1.0, info(c.out).emin))  // a normal result: its precision alone
          EXPECT_EQ(r.c_out[at], mpfr_form_entry(o, i, j, prec, nullptr)) << "c_out(" << i << "," << j << ")";
      }
    const GemmReference m = exact_form(o, c.out, 1, /*mpfr=*/true);
    EXPECT_TRUE(same_bits(m.c, r.c, o.shape.N));
    EXPECT_TRUE(same_bits(m.c_odd, r.c_odd, o.shape.N));
    EXPECT_TRUE(same_bits(m.abs_ab, r.abs_ab, o.shape.N));
  }
}

TEST(GemmFormExact, OperandsAreThoseOfThePlainProblemOfTheStackedSize) {
  const FormOperands o = operands("batch=3,c0=normal_0_1", 4, 5, 6, Format::bf16, epilogue_of_output(Format::bf16),
                                  "cancel_-7", 11);
  const Distribution d = parse_distribution("cancel_-7");
  EXPECT_TRUE(same_bits(o.A.v, generate(d, Operand::A, 12, 6, Format::bf16, 11).v, 6));
  EXPECT_TRUE(same_bits(o.B.v, generate(d, Operand::B, 6, 15, Format::bf16, 11).v, 15));
  // C0 is a stream of its own: not A's or B's values.
  const Matrix a_like = generate(parse_distribution("normal_0_1"), Operand::A, 12, 5, Format::bf16, 11);
  EXPECT_NE(o.C0.v, a_like.v);
  EXPECT_TRUE(same_bits(o.C0.v, generate(parse_distribution("normal_0_1"), Operand::C0, 12, 5, Format::bf16, 11).v, 5));
}

TEST(GemmFormExact, AugmentedLineIsTheOperandsRowAndColumn) {
  const FormOperands o = operands("groups=2+*,alpha=0.7,beta=3,c0=uniform_-1_1,bias=column:normal_0_1,scale=1.5", 5,
                                  3, 4, Format::fp16, epilogue_of_output(Format::fp16), "normal_0_1", 3);
  Matrix Ap, Bp, a, b;
  augmented_operands(o, 1, Ap, Bp);
  augmented_line(o, 1, 2, 1, a, b);
  ASSERT_EQ(a.cols, augmented_depth(o.form, o.shape));
  EXPECT_EQ(a.cols, 4 + 3 + 1);
  for (int k = 0; k < a.cols; ++k) {
    EXPECT_EQ(a(0, k), Ap(2, k));
    EXPECT_EQ(b(k, 0), Bp(k, 1));
  }
}

// ---- the bound --------------------------------------------------------------------------------

double gamma(double n, double u) { return n * u / (1 - n * u); }
// (1 + a)(1 + b) - 1 without losing a's and b's digits against the 1.
double grow(double a, double b) { return a + b + a * b; }

TEST(GemmFormBound, PlainFormLeavesTheBoundAsItWas) {
  const Numerics n = cuda_core_fp32_fma();
  const BoundModel plain = bound_model(n, 4096);
  const BoundModel form = form_bound_model(n, epilogue_of_output(Format::fp32), parse_form("plain"), 4096);
  EXPECT_EQ(gamma_bound_factor(form), gamma_bound_factor(plain));
  EXPECT_EQ(underflow_term(form), underflow_term(plain));
}

TEST(GemmFormBound, HandComputedFactors) {
  const double u = 0x1p-24;
  Numerics n = cuda_core_fp32_fma();
  // fp32 out from fp32: u_o = 0. alpha 0.5, beta 2, C0, bias, placement unknown: h = 3, r = 2.
  const GemmForm f = parse_form("alpha=0.5,beta=2,c0=normal,bias=column:normal");
  BoundModel m = form_bound_model(n, epilogue_of_output(Format::fp32), f, 100);
  EXPECT_EQ(m.epilogue_roundings, 3);
  EXPECT_EQ(m.output_roundings, 2);
  EXPECT_DOUBLE_EQ(gamma_bound_factor(m), grow(gamma(100, u), gamma(3, u)));
  // bf16 out (u_o = 2^-8): the plain factor carries (1 + u_o), the after-placement one more.
  n.output = Format::bf16;
  m = form_bound_model(n, epilogue_of_output(Format::bf16), f, 100);
  const double uo = 0x1p-8;
  EXPECT_DOUBLE_EQ(gamma_bound_factor(m), grow(grow(grow(gamma(100, u), uo), gamma(3, u)), uo));
  // Declared before the output rounding: r = 1.
  Epilogue before = epilogue_of_output(Format::bf16);
  before.c0_placement = before.bias_placement = Placement::before_output_rounding;
  m = form_bound_model(n, before, f, 100);
  EXPECT_EQ(m.output_roundings, 1);
  EXPECT_DOUBLE_EQ(gamma_bound_factor(m), grow(grow(gamma(100, u), uo), gamma(3, u)));
  // One unknown term is enough for r = 2; alpha 1, beta 1: no multiplication; a scale adds one rounding.
  before.bias_placement = Placement::unknown;
  m = form_bound_model(n, before, parse_form("c0=normal,bias=row:normal,scale=3"), 100);
  EXPECT_EQ(m.epilogue_roundings, 3);
  EXPECT_EQ(m.output_roundings, 2);
  // A library's unknown rounding: 2u in the epilogue's arithmetic too.
  Numerics lib = library_numerics(Format::fp32);
  m = form_bound_model(lib, epilogue_of_output(Format::fp32), parse_form("alpha=3"), 10);
  EXPECT_DOUBLE_EQ(gamma_bound_factor(m), grow(gamma(10, 2 * u), gamma(1, 2 * u)));
  EXPECT_EQ(m.underflow_scale, 3);
}

TEST(GemmFormBound, UnderflowTermGrowsWithAlphaScaleAndRoundings) {
  const Numerics n = cuda_core_fp32_fma();
  const BoundModel plain = bound_model(n, 10);
  const BoundModel m = form_bound_model(n, epilogue_of_output(Format::fp32), parse_form("alpha=4,bias=row:normal"), 10);
  const double eta = 0x1p-150;  // fp32, nearest: half the subnormal spacing
  const double g_h = gamma(2, 0x1p-24);
  EXPECT_DOUBLE_EQ(underflow_term(m), (4 * underflow_term(plain) + 2 * eta) * (1 + g_h) + eta);
}

// Kernels emulated in fp32 arithmetic with each placement: 0, alpha on the sum, beta C0 and the bias added in fp32
// before one rounding to bf16; 1, the GEMM rounded to bf16, then beta C0 and the bias added in fp32 and rounded
// again; 2, alpha on each product; 3, alpha on each product and beta C0 + bias as the accumulator's start. Every
// entry within the bound of the placement declared unknown, and of `before_output_rounding` where that is where
// they enter.
TEST(GemmFormBound, EmulatedPlacementsAreWithinTheirBound) {
  const Format out = Format::bf16;
  const GemmForm f = parse_form("alpha=0.3,beta=1.7,c0=normal_0_1,bias=column:uniform_-1_1");
  const FormOperands o = [&] {
    const FormShape s = form_shape(f, 24, 20, 300);
    return make_form_operands(f, s, parse_distribution("uniform_0_1"), Format::bf16, epilogue_of_output(out), 5, 1);
  }();
  const GemmReference ref = exact_form(o, out, 1);
  Numerics n = cuda_core_fp32_fma();
  n.input = n.compute = Format::bf16;
  n.output = out;
  auto fl = [](double x) { return static_cast<double>(static_cast<float>(x)); };  // fp32 round to nearest
  auto run = [&](int how) {
    std::vector<double> c(ref.c.size());
    for (int i = 0; i < o.shape.rows; ++i)
      for (int j = 0; j < o.shape.N; ++j) {
        const double bc = fl(f.beta * o.C0(i, j)), b = o.bias(0, j);
        double acc = how == 3 ? fl(bc + b) : 0.0;
        for (int k = 0; k < o.shape.K; ++k)
          acc = how >= 2 ? fl(acc + fl(f.alpha * fl(o.A(i, k) * o.B(k, j)))) : fl(std::fma(o.A(i, k), o.B(k, j), acc));
        const double ab = how >= 2 ? acc : fl(f.alpha * acc);
        double v;
        if (how == 1) v = round_to(out, fl(fl(round_to(out, ab) + bc) + b));
        else if (how == 3) v = round_to(out, ab);
        else v = round_to(out, fl(fl(ab + bc) + b));
        c[static_cast<std::size_t>(i) * o.shape.N + j] = v;
      }
    return c;
  };
  Epilogue unknown = epilogue_of_output(out), before = unknown;
  before.c0_placement = before.bias_placement = Placement::before_output_rounding;
  for (int how : {0, 1, 2, 3}) {
    SCOPED_TRACE("placement " + std::to_string(how));
    const ErrorStats s = compute_error_stats(run(how), ref, out, form_bound_model(n, unknown, f, o.shape.K), 1);
    EXPECT_EQ(s.bound_violations, 0);
    EXPECT_GT(s.rel_count, 0);
    if (how != 1) EXPECT_EQ(compute_error_stats(run(how), ref, out, form_bound_model(n, before, f, o.shape.K), 1)
                                .bound_violations, 0);
  }
  // The correctly rounded output passes and is counted as such.
  const ErrorStats exact = compute_error_stats(ref.c_out, ref, out, form_bound_model(n, before, f, o.shape.K), 1);
  EXPECT_EQ(exact.frac_correctly_rounded, 1.0);
  EXPECT_EQ(exact.bound_violations, 0);
}

}  // namespace
}  // namespace gemmlab
