// The adversarial corpus (reference/tc_corpus.hpp): a pure function of (instruction, seed), at least
// 1,000 cases per rule class per instruction, each class reaching what it is named for; and the
// special rules inferred back from outcomes the model itself gives (a rule is a parameter the
// corpus settles, never a constant).
#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <map>
#include <set>

#include "reference/tc_corpus.hpp"

using namespace gemmlab;
using namespace gemmlab::tc;

namespace {

struct Terms {
  std::vector<double> products;  // exact (in double: every product of these formats is)
  double c = 0;
};

Terms terms_of(const Probe& p) {
  Terms t;
  for (size_t k = 0; k < p.a.size(); ++k) t.products.push_back(p.a[k] * p.b[k]);
  t.c = p.c;
  return t;
}

bool special(double x) { return std::isnan(x) || std::isinf(x); }

}  // namespace

TEST(TcCorpus, IsAPureFunctionOfInstructionAndSeed) {
  const InstructionInfo& ins = info(Instruction::mma_m16n8k16_bf16_f32);
  const std::vector<Probe> a = make_corpus(ins, 7, 50), b = make_corpus(ins, 7, 50), c = make_corpus(ins, 8, 50);
  ASSERT_EQ(a.size(), b.size());
  bool differs = false;
  for (size_t i = 0; i < a.size(); ++i) {
    EXPECT_EQ(a[i].id, b[i].id);
    EXPECT_EQ(a[i].raw->a, b[i].raw->a);
    EXPECT_EQ(a[i].raw->b, b[i].raw->b);
    EXPECT_EQ(a[i].raw->c, b[i].raw->c);
    differs = differs || a[i].raw->a != c[i].raw->a || a[i].raw->c != c[i].raw->c;
  }
  EXPECT_TRUE(differs) << "another seed gives other cases";
  // a class's cases do not depend on how many cases the other classes have
  const std::vector<Probe> more = make_corpus(ins, 7, 60);
  EXPECT_EQ(more[60].raw->a, a[50].raw->a) << more[60].id << " vs " << a[50].id;
}

// Every instruction, every class that applies: 1,000 cases, unique ids, k bits per operand that
// decode to the values the case states, and a model that evaluates each (measured params).
TEST(TcCorpus, EveryInstructionHasAThousandCasesPerClass) {
  for (Instruction i : all_instructions()) {
    const InstructionInfo& ins = info(i);
    const std::vector<Probe> corpus = make_corpus(ins);
    std::map<std::string, int> per_class;
    std::set<std::string> ids;
    const TcParams p = *measured_hopper_params(i);
    for (const Probe& c : corpus) {
      ++per_class[c.feature];
      EXPECT_TRUE(ids.insert(c.id).second) << c.id;
      EXPECT_TRUE(is_corpus_case(c)) << c.id;
      ASSERT_TRUE(c.raw) << c.id;
      ASSERT_EQ((int)c.raw->a.size(), ins.k);
      ASSERT_EQ((int)c.raw->b.size(), ins.k);
      for (int k = 0; k < ins.k; ++k) {
        const double a = from_bits(ins.input, c.raw->a[k]), b = from_bits(ins.format_b(), c.raw->b[k]);
        EXPECT_TRUE(std::isnan(a) ? std::isnan(c.a[k]) : std::bit_cast<std::uint64_t>(a) == std::bit_cast<std::uint64_t>(c.a[k])) << c.id;
        EXPECT_TRUE(std::isnan(b) ? std::isnan(c.b[k]) : std::bit_cast<std::uint64_t>(b) == std::bit_cast<std::uint64_t>(c.b[k])) << c.id;
      }
      EXPECT_NO_THROW(predict_bits(p, c)) << c.id;
    }
    const std::vector<std::string> classes = corpus_classes(ins);
    EXPECT_EQ(per_class.size(), classes.size()) << ins.name;
    for (const std::string& cls : classes) EXPECT_EQ(per_class[cls], kCorpusCasesPerClass) << ins.name << " " << cls;
    EXPECT_EQ(per_class.count("tf32_low_bits"), ins.input == Format::tf32 ? 1u : 0u) << ins.name;
  }
}

// Each class reaches what it is named for, in most of its cases.
TEST(TcCorpus, ClassesReachTheirTargets) {
  for (Instruction i : all_instructions()) {
    const InstructionInfo& ins = info(i);
    const FormatInfo &fa = gemmlab::info(ins.input), &fb = gemmlab::info(ins.format_b()), &fo = gemmlab::info(ins.output);
    std::map<std::string, int> hit, total;
    for (const Probe& c : make_corpus(ins)) {
      const Terms t = terms_of(c);
      ++total[c.feature];
      bool ok = false;
      const auto any_of = [&](auto pred) {
        for (int k = 0; k < ins.k; ++k)
          if (pred(k)) return true;
        return false;
      };
      const std::string& cls = c.feature;
      if (cls == "nan_inf_a") ok = any_of([&](int k) { return special(c.a[k]); });
      else if (cls == "nan_inf_b") ok = any_of([&](int k) { return special(c.b[k]); });
      else if (cls == "nan_inf_c") ok = special(c.c);
      else if (cls == "overflow_before_alignment")
        ok = std::fabs(c.c) >= std::ldexp(1.0, fo.emax) ||
             any_of([&](int k) { return std::fabs(t.products[k]) >= std::ldexp(1.0, fo.emax); });
      else if (cls == "overflow_after_alignment") {
        double s = c.c;
        for (double x : t.products) s += x;  // near the top: the double sum's binade is enough
        ok = std::fabs(s) >= std::ldexp(1.0, fo.emax - 1) ||
             any_of([&](int k) { return std::fabs(t.products[k]) >= std::ldexp(1.0, fo.emax - 1); });
      } else if (cls == "exact_cancellation") {
        if (ins.output == Format::fp64) {  // binary64 products are not exact in double: one exact sum
          TcParams exact;
          exact.arithmetic = Arithmetic::fused_sum;
          exact.block_size = ins.k;
          exact.input = exact.output = Format::fp64;
          ok = dot(exact, c.a.data(), c.b.data(), ins.k, c.c) == 0;
        } else {
          double s = c.c;  // pairs of equal magnitude: exact in double
          for (double x : t.products) s += x;
          ok = s == 0;
        }
      } else if (cls == "zero_operands")
        ok = any_of([&](int k) {
          return (c.a[k] == 0 && c.b[k] != 0 && std::ilogb(c.b[k]) >= fb.emax - 1) ||
                 (c.b[k] == 0 && c.a[k] != 0 && std::ilogb(c.a[k]) >= fa.emax - 1) ||
                 (c.a[k] == 0 && c.b[k] != 0 && std::ilogb(c.b[k]) == fb.emin) ||
                 (c.b[k] == 0 && c.a[k] != 0 && std::ilogb(c.a[k]) == fa.emin);
        }) && any_of([&](int k) { return t.products[k] != 0; });
      else if (cls == "subnormal")
        ok = (c.c != 0 && std::fabs(c.c) < std::ldexp(1.0, fo.emin)) ||
             any_of([&](int k) {
               return (c.a[k] != 0 && std::fabs(c.a[k]) < std::ldexp(1.0, fa.emin)) ||
                      (c.b[k] != 0 && std::fabs(c.b[k]) < std::ldexp(1.0, fb.emin)) ||
                      (t.products[k] != 0 && std::fabs(t.products[k]) < std::ldexp(1.0, fo.emin + 2));
             });
      else if (cls == "top_carry") {
        int same = 0;
        for (int k = 0; k < ins.k; ++k)
          for (int m = k + 1; m < ins.k; ++m)
            same += t.products[k] != 0 && std::ilogb(c.a[k]) + std::ilogb(c.b[k]) == std::ilogb(c.a[m]) + std::ilogb(c.b[m]) &&
                    t.products[m] != 0 && std::signbit(t.products[k]) == std::signbit(t.products[m]);
        ok = same > 0;
      } else if (cls == "c_alone")
        ok = !any_of([&](int k) { return t.products[k] != 0; });
      else if (cls == "exponent_gap")
        ok = c.c != 0 && any_of([&](int k) { return t.products[k] != 0; });
      else if (cls == "tf32_low_bits")
        ok = any_of([&](int k) { return (c.raw->a[k] & 0x1fffu) != 0; });
      else if (cls == "step_rounding")  // a product at C's half ulp (a tie of C's last place)
        ok = c.c != 0 && any_of([&](int k) {
               return t.products[k] != 0 && std::ilogb(t.products[k]) == std::ilogb(c.c) - fo.precision;
             });
      hit[cls] += ok;
    }
    for (const auto& [cls, n] : total) {
      // overflow_before_alignment reaches beyond the range by C where products cannot, so all of it;
      // the others at least 60% (a few draws fall back to a neighbouring case)
      EXPECT_GE(hit[cls] * 10, n * 6) << ins.name << " " << cls << ": " << hit[cls] << " of " << n;
    }
  }
}

// The special rules come back from outcomes the model gives with other values of them: each is
// inferred from the corpus (with the probe set for the arithmetic), none is assumed.
TEST(TcCorpus, SpecialRulesAreInferredFromCorpusOutcomes) {
  for (Instruction i : {Instruction::mma_m16n8k16_bf16_f32, Instruction::mma_m16n8k8_tf32_f32,
                        Instruction::mma_m16n8k16_f16_f16}) {
    const InstructionInfo& ins = info(i);
    TcParams truth = *measured_hopper_params(i);
    truth.nan_encoding = NanEncoding::ieee_quiet;
    truth.overflow = ins.output == Format::fp16 ? Overflow::saturate : Overflow::infinity;
    truth.zero_sign = ZeroSign::c_sign;
    truth.zero_operand_exponent = ZeroOperandExponent::input_emin;
    if (ins.input == Format::tf32) truth.tf32_low_bits = Rounding::nearest_even;
    std::vector<ProbeOutcome> outcomes;
    for (const Probe& p : make_probes(ins)) outcomes.push_back({p, predict_bits(truth, p)});
    for (const Probe& p : make_corpus(ins)) outcomes.push_back({p, predict_bits(truth, p)});
    const auto t0 = std::chrono::steady_clock::now();
    const Inference inf = infer(ins, outcomes);
    const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    EXPECT_EQ(inf.mismatching_probes, 0) << ins.name;
    EXPECT_EQ(inf.params.nan_encoding, truth.nan_encoding) << ins.name;
    EXPECT_EQ(inf.params.overflow, truth.overflow) << ins.name;
    EXPECT_EQ(inf.params.zero_sign, truth.zero_sign) << ins.name;
    EXPECT_EQ(inf.params.zero_operand_exponent, truth.zero_operand_exponent) << ins.name;
    EXPECT_EQ(inf.params.tf32_low_bits, truth.tf32_low_bits) << ins.name;
    for (const char* rule : {"nan_encoding", "overflow", "zero_sign", "zero_operand_alignment", "tf32_low_bits"})
      EXPECT_EQ(std::count(inf.ambiguous.begin(), inf.ambiguous.end(), std::string(rule)), 0) << ins.name << " " << rule;
    EXPECT_LT(s, 90.0) << ins.name << ": inference took " << s << " s";
  }
}
