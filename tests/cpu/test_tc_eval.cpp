// `gemmlab tc-eval` (experiments/engine/tc_eval.hpp): the inferred model on one instruction's inputs.
// Hand-computed dyadic cases for the features that set Hopper apart (truncating alignment, the
// fp8 wgmma result cut, the fp8 mma.sync interleaved steps), the file form, the errors a user
// meets, and every probe the H100 answered (results/probes/h100_probes_20261123_outputs.csv: the
// hardware's D bits, compacted from the raw outcomes by scripts/lab/probes/compact_outcomes.py) replayed
// through tc-eval's parser and evaluation.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <functional>
#include <limits>
#include <fstream>
#include <map>
#include <sstream>

#include "experiments/engine/files.hpp"
#include "experiments/engine/plan_rows.hpp"
#include "experiments/engine/tc_eval.hpp"
#include "experiments/plan/plan.hpp"
#include "reference/tc_corpus.hpp"
#include "reference/tc_infer.hpp"
#include "tests/cpu/engine_test_util.hpp"

using namespace gemmlab;

namespace {

double p2(int e) { return std::ldexp(1.0, e); }

// k values as tc-eval text: `terms` at their indices, zeros elsewhere (numbers, not bits).
std::string values(int k, const std::map<int, double>& terms) {
  std::ostringstream s;
  s.precision(17);
  for (int i = 0; i < k; ++i) {
    const auto it = terms.find(i);
    s << (i ? " " : "") << (it == terms.end() ? 0.0 : it->second);
  }
  return s.str();
}

std::uint64_t eval_bits(const char* ins, const std::string& a, const std::string& b, const std::string& c = "") {
  return evaluate_tc_case(parse_tc_case(ins, a, b, c, "")).d_bits;
}

}  // namespace

// fp16 mma.sync: 1 * 1 and 3 * 2^-13 * 2^-12 = 3 * 2^-25 in one block; 25 fraction bits keep the
// small product, the output is truncated to fp32: 1 (round to nearest would give 1 + 2^-23).
TEST(TcEval, Fp16BlockTruncatesTheOutput) {
  const std::string a = values(16, {{0, 1}, {1, 3 * p2(-13)}}), b = values(16, {{0, 1}, {1, p2(-12)}});
  EXPECT_EQ(eval_bits("mma_m16n8k16_f16_f32", a, b), 0x3f800000u);
  // The same as bit patterns (fp16 1 = 0x3c00, 3 * 2^-13 = 0x0e00, 2^-12 = 0x0c00).
  std::string abits = "0x3c00 0x0e00", bbits = "0x3c00 0x0c00";
  for (int i = 2; i < 16; ++i) abits += " 0x0000", bbits += " 0x0000";
  EXPECT_EQ(eval_bits("mma_m16n8k16_f16_f32", abits, bbits), 0x3f800000u);
}

// fp8 wgmma: sixteen 1 * 1 and 2^-5 * 2^-5 = 2^-10 align exactly at 13 fraction bits, but the sum
// 16 + 2^-10 needs 14 after normalising and is cut to 13: 16. C alone: 1 + 2^-20 loses its last
// 10 bits: 1.
TEST(TcEval, Fp8WgmmaCutsTheResultTo13Bits) {
  std::map<int, double> a, b;
  for (int i = 0; i < 16; ++i) a[i] = b[i] = 1;
  a[16] = b[16] = p2(-5);
  EXPECT_EQ(eval_bits("wgmma_m64n8k32_e4m3_f32", values(32, a), values(32, b)), 0x41800000u);
  EXPECT_EQ(eval_bits("wgmma_m64n8k32_e4m3_f32", values(32, {}), values(32, {}), "0x3f800008"), 0x3f800000u);
}

// fp8 mma.sync on sm_90: k = 0, 1 (k mod 4 in {0, 1}) go to the first fp16 step, k = 2 to the
// second, so 2^16 - 2^16 cancels before 2^-12 meets it: D = 2^-12 exactly. One block of 32 would
// align 2^-12 28 bits below 2^16 and lose it.
TEST(TcEval, Fp8MmaSyncStepsAreInterleaved) {
  const std::string a = values(32, {{0, 256}, {1, 256}, {2, p2(-6)}});
  const std::string b = values(32, {{0, 256}, {1, -256}, {2, p2(-6)}});
  EXPECT_EQ(eval_bits("mma_m16n8k32_e4m3_f32", a, b), 0x39800000u);
}

TEST(TcEval, ObservedDIsComparedBitForBit) {
  const std::string a = values(16, {{0, 1}, {1, 3 * p2(-13)}}), b = values(16, {{0, 1}, {1, p2(-12)}});
  EXPECT_TRUE(*evaluate_tc_case(parse_tc_case("mma_m16n8k16_f16_f32", a, b, "", "0x3f800000")).match);
  EXPECT_FALSE(*evaluate_tc_case(parse_tc_case("mma_m16n8k16_f16_f32", a, b, "", "0x3f800001")).match);
  EXPECT_FALSE(evaluate_tc_case(parse_tc_case("mma_m16n8k16_f16_f32", a, b, "", "")).match.has_value());
}

TEST(TcEval, BadInputIsNamed) {
  const std::string ones16 = values(16, {{0, 1}});
  const auto message = [](auto f) {
    try {
      f();
    } catch (const UsageError& e) {
      return std::string(e.what());
    }
    return std::string("no error");
  };
  EXPECT_NE(message([&] { parse_tc_case("mma_m16n8k99", ones16, ones16, "", ""); }).find("unknown instruction"),
            std::string::npos);
  EXPECT_NE(message([&] { parse_tc_case("mma_m16n8k16_f16_f32", "1 1", ones16, "", ""); }).find("k = 16"),
            std::string::npos);
  EXPECT_NE(message([&] { parse_tc_case("mma_m16n8k16_f16_f32", values(16, {{0, 0.1}}), ones16, "", ""); })
                .find("not exactly representable in fp16"),
            std::string::npos);
  EXPECT_NE(message([&] { parse_tc_value(Format::fp16, "0x10000", "a[0]"); }).find("does not fit"), std::string::npos);
  EXPECT_NE(message([&] { parse_tc_value(Format::tf32, "0x1ff800000", "a[0]"); }).find("does not fit the 32 bits"),
            std::string::npos);
  EXPECT_NE(message([&] { parse_tc_value(Format::fp32, "one", "c"); }).find("neither"), std::string::npos);
  EXPECT_EQ(parse_tc_value(Format::e4m3, "0x38", "a[0]"), 1.0);
  EXPECT_EQ(parse_tc_value(Format::fp32, "0x1p-149", "c"), p2(-149));
}

TEST(TcEval, FileFormWritesEveryCaseAndCountsMismatches) {
  engine_test::TempDir dir("tc_eval");
  const std::string a = values(16, {{0, 1}, {1, 3 * p2(-13)}}), b = values(16, {{0, 1}, {1, p2(-12)}});
  {
    std::ofstream f(dir / "cases.csv");
    f << "instruction,a,b,c,d\n"
      << "mma_m16n8k16_f16_f32," << a << "," << b << ",,0x3f800000\n"
      << "mma_m16n8k16_f16_f32," << a << "," << b << ",0,0x3f800001\n"
      << "mma_m16n8k16_f16_f32," << a << "," << b << ",1,\n";
  }
  const TcEvalSummary s = tc_eval_file(dir / "cases.csv", dir / "out.csv", "test");
  EXPECT_EQ(s.cases, 3);
  EXPECT_EQ(s.compared, 2);
  EXPECT_EQ(s.mismatches, 1);
  const engine::CsvRecords out = engine::parse_csv(engine::read_file(dir / "out.csv"));
  ASSERT_EQ(out.records.size(), 4u);
  EXPECT_EQ(out.records[0], (std::vector<std::string>{"instruction", "a", "b", "c", "d", "d_model", "d_model_value",
                                                      "match"}));
  EXPECT_EQ(out.records[1][5], "0x3f800000");
  EXPECT_EQ(out.records[1][7], "1");
  EXPECT_EQ(out.records[2][7], "0");
  EXPECT_EQ(out.records[3][5], "0x40000000");  // C = 1 joins: 1 + 1 + 3 * 2^-25, truncated: 2
  EXPECT_EQ(out.records[3][7], "");
  EXPECT_TRUE(std::ifstream(dir / "out.meta.json").good()) << "the metadata beside the CSV";

  {
    std::ofstream f(dir / "bad.csv");
    f << "instruction,a,b,c\n"
      << "mma_m16n8k16_f16_f32," << a << "," << b << ",0\n"
      << "mma_m16n8k16_f16_f32," << a << "\n";
  }
  try {
    tc_eval_file(dir / "bad.csv", dir / "bad_out.csv", "test");
    FAIL() << "a short line must be refused";
  } catch (const UsageError& e) {
    EXPECT_NE(std::string(e.what()).find("line 3"), std::string::npos) << e.what();
  }
  EXPECT_FALSE(std::ifstream(dir / "bad_out.csv").good()) << "nothing written for a malformed file";
  {
    std::ofstream f(dir / "nohead.csv");
    f << "instr,a,b\n";
  }
  EXPECT_THROW(tc_eval_file(dir / "nohead.csv", dir / "x.csv", "test"), UsageError);
}

namespace {

// Replays a compact file of hardware outputs (scripts/lab/probes/compact_outcomes.py: one row per
// instruction, its outputs in probe order and the sha256 of the ids) through tc-eval: the cases are
// rebuilt with `make` (tc::make_probes, or tc::make_corpus for the corpus), written as tc-eval bit
// patterns with the hardware's D as the observed d. Returns the outcomes compared; failures name
// the first differing ones.
long long replay(const std::string& path, const std::function<std::vector<tc::Probe>(const tc::InstructionInfo&)>& make) {
  const engine::CsvRecords csv = engine::parse_csv(engine::read_file(path));
  EXPECT_GE(csv.records.size(), 2u) << path;
  if (csv.records.empty()) return 0;
  EXPECT_EQ(csv.records[0], (std::vector<std::string>{"instruction", "probes", "probe_ids_sha256", "output_bits"}));
  long long compared = 0, differing = 0;
  for (std::size_t row = 1; row < csv.records.size(); ++row) {
    const std::vector<std::string>& rec = csv.records[row];
    const auto ins = tc::parse_instruction(rec[0]);
    if (!ins) {
      ADD_FAILURE() << path << ": unknown instruction " << rec[0];
      continue;
    }
    const tc::InstructionInfo& ii = tc::info(*ins);
    const std::vector<tc::Probe> probes = make(ii);
    std::string ids;
    for (const tc::Probe& p : probes) ids += (ids.empty() ? "" : "\n") + p.id;
    if (std::to_string(probes.size()) != rec[1] || engine::sha256_hex(ids) != rec[2]) {
      ADD_FAILURE() << path << " " << ii.name << ": the cases built here are not the ones the hardware answered";
      continue;
    }
    std::istringstream hardware(rec[3]);
    for (const tc::Probe& p : probes) {
      std::string observed;
      if (!(hardware >> observed)) {
        ADD_FAILURE() << path << " " << ii.name << ": fewer output bits than cases";
        break;
      }
      const tc::RawBits bits = tc::probe_bits(ii, p);
      std::string a, b;
      for (int k = 0; k < ii.k; ++k) {
        a += (k ? " " : "") + tc_hex(ii.input, bits.a[k]);
        b += (k ? " " : "") + tc_hex(ii.format_b(), bits.b[k]);
      }
      const TcEvalResult r = evaluate_tc_case(parse_tc_case(ii.name, a, b, tc_hex(ii.output, bits.c), observed));
      ++compared;
      if (!*r.match && ++differing <= 5)
        ADD_FAILURE() << path << " " << ii.name << " " << p.id << ": hardware " << observed << ", model "
                      << tc_hex(ii.output, r.d_bits);
    }
  }
  EXPECT_EQ(differing, 0) << path;
  return compared;
}

std::vector<std::string> committed(const std::string& suffix) {
  std::vector<std::string> v;
  for (const auto& e : std::filesystem::directory_iterator(std::string(GEMMLAB_SOURCE_DIR) + "/results/probes")) {
    const std::string name = e.path().filename().string();
    if (name.size() > suffix.size() && name.compare(name.size() - suffix.size(), suffix.size(), suffix) == 0)
      v.push_back(e.path().string());
  }
  std::sort(v.begin(), v.end());
  return v;
}

}  // namespace

// Every probe of every instruction, as the H100 answered it (results/probes/h100_probes_20261123_
// outputs.csv), through tc-eval; the file's sha256 of the probe ids first checks that make_probes
// builds the same probes in the same order. The model must give the hardware's bits for all of
// them (72,954 probes over the 12 instructions probed then), NaN bits included: the H100 wrote every
// NaN as 0x7fffffff / 0x7fff, the model's nan_encoding all_ones.
TEST(TcEval, ReproducesEveryH100ProbeOutcome) {
  const std::string path = std::string(GEMMLAB_SOURCE_DIR) + "/results/probes/h100_probes_20261123_outputs.csv";
  EXPECT_EQ(replay(path, [](const tc::InstructionInfo& ii) { return tc::make_probes(ii); }), 72954);
}

// Every other committed file of probe outputs (the tc-corpus runs: the new instructions' probes too).
TEST(TcEval, ReproducesEveryCommittedProbeOutcome) {
  long long n = 0;
  for (const std::string& path : committed("_outputs.csv"))
    if (path.find("_corpus_outputs.csv") == std::string::npos)
      n += replay(path, [](const tc::InstructionInfo& ii) { return tc::make_probes(ii); });
  EXPECT_GE(n, 72954) << "the H100 file of 2026-11-23 at least";
}

// Every committed corpus outcome (<gpu>_tc_corpus_<date>_corpus_outputs.csv, written by
// scripts/lab/probes/tc_corpus_postprocess.py from `scripts/lab/gpu_session.sh ... tc-corpus`): the corpus
// rebuilt by make_corpus, each case's hardware D through tc-eval.
TEST(TcEval, ReproducesEveryCommittedCorpusOutcome) {
  const std::vector<std::string> files = committed("_corpus_outputs.csv");
  if (files.empty()) GTEST_SKIP() << "no corpus outcomes committed yet (scripts/lab/gpu_session.sh BIN OUT tc-corpus)";
  for (const std::string& path : files)
    EXPECT_GT(replay(path, [](const tc::InstructionInfo& ii) { return tc::make_corpus(ii); }), 0) << path;
}

// The fp64 tensor core's outcomes on both GPUs (scripts/lab/gpu_tc_f64.sh, 2026-11-24; written by
// tc_corpus_postprocess.py --run tc_f64): every probe (36,916 over the four instructions) and every
// corpus case (48,000), NaN payloads included, through the committed model (nan_encoding propagate).
TEST(TcEval, ReproducesTheCommittedF64Outcomes) {
  const std::string dir = std::string(GEMMLAB_SOURCE_DIR) + "/results/probes/";
  for (const char* gpu : {"h100", "h200"}) {
    const std::string stem = dir + gpu + "_tc_f64_20261124";
    EXPECT_EQ(replay(stem + "_outputs.csv", [](const tc::InstructionInfo& ii) { return tc::make_probes(ii); }), 36916)
        << gpu;
    EXPECT_EQ(replay(stem + "_corpus_outputs.csv", [](const tc::InstructionInfo& ii) { return tc::make_corpus(ii); }),
              48000)
        << gpu;
  }
}

// What tests/gpu/test_fp64_tensor_core.cpp asks of the GPU, on the H100's committed probe outputs
// (the H200's are byte-identical): inference from the probes alone gives the committed model of each
// f64 instruction, NaN rule included (probes nan_inf/inf_times_0, inf_minus_inf and
// c_inf_minus_product_inf: 0xfff8000000000000, which only propagate writes), explaining every probe.
TEST(TcEval, TheCommittedF64ProbesInferTheCommittedModel) {
  const std::string path = std::string(GEMMLAB_SOURCE_DIR) + "/results/probes/h100_tc_f64_20261124_outputs.csv";
  const engine::CsvRecords csv = engine::parse_csv(engine::read_file(path));
  ASSERT_EQ(csv.records.size(), 5u) << path;
  for (std::size_t row = 1; row < csv.records.size(); ++row) {
    const auto ins = tc::parse_instruction(csv.records[row][0]);
    ASSERT_TRUE(ins) << csv.records[row][0];
    std::vector<tc::ProbeOutcome> outcomes;
    std::istringstream hardware(csv.records[row][3]);
    for (const tc::Probe& p : tc::make_probes(tc::info(*ins))) {
      std::string observed;
      ASSERT_TRUE(hardware >> observed) << csv.records[row][0] << ": fewer output bits than probes";
      outcomes.push_back({p, std::stoull(observed, nullptr, 16)});
    }
    const tc::Inference inf = tc::infer(tc::info(*ins), outcomes);
    EXPECT_EQ(inf.mismatching_probes, 0) << csv.records[row][0];
    EXPECT_EQ(inf.params, *tc::measured_hopper_params(*ins))
        << csv.records[row][0] << " inferred " << inf.params.describe();
  }
}

// tf32 operands given as fp32 bits: the instruction reads them as the model's tf32_low_bits rule
// says, toward_zero (the low 13 bits ignored), as MMA-Sim's truncate_to_tf32 does; the corpus class
// tf32_low_bits settles it on the hardware. 0x3f800fff is 1 + 4095 * 2^-23: read as 1.
TEST(TcEval, Tf32OperandsMayCarryLowBits) {
  std::string a = "0x3f800fff", b = "0x3f800000";
  for (int k = 1; k < 8; ++k) a += " 0", b += " 0";
  const TcEvalCase c = parse_tc_case("mma_m16n8k8_tf32_f32", a, b, "", "");
  EXPECT_EQ(c.bits.a[0], 0x3f800fffu) << "the bits are kept as given";
  EXPECT_EQ(evaluate_tc_case(c).d_bits, 0x3f800000u);
}

// One separator: spaces. Commas are still read, and flagged so the CLI can warn.
TEST(TcEval, CommasAreDeprecated) {
  const std::string spaced = values(16, {{0, 1}});
  std::string commas = spaced;
  for (char& ch : commas)
    if (ch == ' ') ch = ',';
  EXPECT_FALSE(parse_tc_case("mma_m16n8k16_f16_f32", spaced, spaced, "", "").used_commas);
  const TcEvalCase c = parse_tc_case("mma_m16n8k16_f16_f32", commas, spaced, "", "");
  EXPECT_TRUE(c.used_commas);
  EXPECT_EQ(evaluate_tc_case(c).d_bits, 0x3f800000u);
}

// match is bit for bit, NaN included: inf * 0 gives NaN, written 0x7fffffff (nan_encoding all_ones:
// what the H100 and H200 wrote for probes nan_inf/*). Another NaN pattern does not match.
TEST(TcEval, NanMatchesOnlyTheSameBits) {
  const std::string a = values(16, {{0, std::numeric_limits<double>::infinity()}}), b = values(16, {});
  EXPECT_EQ(evaluate_tc_case(parse_tc_case("mma_m16n8k16_f16_f32", a, b, "", "")).d_bits, 0x7fffffffu);
  EXPECT_TRUE(*evaluate_tc_case(parse_tc_case("mma_m16n8k16_f16_f32", a, b, "", "0x7fffffff")).match);
  EXPECT_FALSE(*evaluate_tc_case(parse_tc_case("mma_m16n8k16_f16_f32", a, b, "", "0x7fc00000")).match);
  EXPECT_FALSE(*evaluate_tc_case(parse_tc_case("mma_m16n8k16_f16_f32", a, b, "", "0xffffffff")).match);
  EXPECT_EQ(evaluate_tc_case(parse_tc_case("mma_m16n8k16_f16_f16", a, b, "", "")).d_bits, 0x7fffu);
}

// --explain: the rule and the intermediate values of the fp16 case of Fp16BlockTruncatesTheOutput
// (3 * 2^-13 = 1.5 * 2^-12 times 2^-12: exponent sum -24):
// 1 and 3 * 2^-25 aligned to 2^0 with 25 fraction bits (both kept), summed exactly to
// 1 + 3 * 2^-25 = 33554435 * 2^-25, normalised at 2^0, truncated to fp32: 1.
TEST(TcEval, ExplainNamesTheRuleAndTheIntermediateValues) {
  const std::string a = values(16, {{0, 1}, {1, 3 * p2(-13)}}), b = values(16, {{0, 1}, {1, p2(-12)}});
  const TcEvalCase c = parse_tc_case("mma_m16n8k16_f16_f32", a, b, "", "");
  const TcEvalResult r = evaluate_tc_case(c, true);
  EXPECT_EQ(r.trace.rule, "arithmetic");
  ASSERT_EQ(r.trace.blocks.size(), 1u);
  const tc::TcTrace::Block& blk = r.trace.blocks[0];
  ASSERT_EQ(blk.terms.size(), 2u);
  EXPECT_EQ(blk.terms[1].value, 3 * p2(-25));
  EXPECT_EQ(blk.terms[1].aligned, 3 * p2(-25));
  EXPECT_EQ(blk.max_exponent, 0);
  EXPECT_EQ(blk.quantum_exponent, -25);
  EXPECT_EQ(blk.aligned_sum, 1 + 3 * p2(-25));
  EXPECT_EQ(blk.leading_exponent, 0);
  EXPECT_EQ(blk.result, 1.0);
  std::string text;
  for (const std::string& l : explain_tc_case(c, r)) text += l + "\n";
  for (const char* want : {"rule: arithmetic", "a1*b1 = 3*2^-25 (exponent -24) -> aligned 3*2^-25",
                           "aligned to 2^0 (set by a0*b0), 25 fraction bits kept: last place 2^-25",
                           "truncated sum 33554435*2^-25, normalised: leading bit 2^0",
                           "block result 1 (rounded toward_zero to fp32)", "D = 0x3f800000 = 1"})
    EXPECT_NE(text.find(want), std::string::npos) << want << "\nin\n" << text;
  // and the special rules name themselves
  const TcEvalResult nan = evaluate_tc_case(
      parse_tc_case("mma_m16n8k16_f16_f32", values(16, {{0, std::numeric_limits<double>::infinity()}}), values(16, {}),
                    "", ""),
      true);
  EXPECT_NE(nan.trace.rule.find("inf * 0"), std::string::npos) << nan.trace.rule;
}

// Extra columns pass through in their place; the added ones follow; a column tc-eval writes is refused.
TEST(TcEval, FilePassesExtraColumnsThrough) {
  engine_test::TempDir dir("tc_eval_extra");
  const std::string a = values(16, {{0, 1}, {1, 3 * p2(-13)}}), b = values(16, {{0, 1}, {1, p2(-12)}});
  {
    std::ofstream f(dir / "cases.csv");
    f << "id,instruction,a,b,label,c\n"
      << "7,mma_m16n8k16_f16_f32," << a << "," << b << ",\"first, quoted\",\n";
  }
  const TcEvalSummary s = tc_eval_file(dir / "cases.csv", dir / "out.csv", "test", true);
  EXPECT_EQ(s.cases, 1);
  const engine::CsvRecords out = engine::parse_csv(engine::read_file(dir / "out.csv"));
  ASSERT_EQ(out.records.size(), 2u);
  EXPECT_EQ(out.records[0], (std::vector<std::string>{"id", "instruction", "a", "b", "label", "c", "d_model",
                                                      "d_model_value", "match", "rule", "explanation"}));
  EXPECT_EQ(out.records[1][0], "7");
  EXPECT_EQ(out.records[1][4], "first, quoted");
  EXPECT_EQ(out.records[1][6], "0x3f800000");
  EXPECT_EQ(out.records[1][9], "arithmetic");
  EXPECT_NE(out.records[1][10].find("truncated sum"), std::string::npos);
  {
    std::ofstream f(dir / "clash.csv");
    f << "instruction,a,b,c,match\n";
  }
  EXPECT_THROW(tc_eval_file(dir / "clash.csv", dir / "clash_out.csv", "test"), UsageError);
}
