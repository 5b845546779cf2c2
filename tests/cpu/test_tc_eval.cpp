// `gemmlab tc-eval` (experiments/engine/tc_eval.hpp): the inferred model on one instruction's inputs.
// Hand-computed dyadic cases for the features that set Hopper apart (truncating alignment, the
// fp8 wgmma result cut, the fp8 mma.sync interleaved steps), the file form, the errors a user
// meets, and every probe the H100 answered (results/probes/h100_probes_20261123_outputs.csv: the
// hardware's D bits, compacted from the raw outcomes by results/probes/compact_outcomes.py) replayed
// through tc-eval's parser and evaluation.
#include <gtest/gtest.h>

#include <cmath>
#include <fstream>
#include <map>
#include <sstream>

#include "experiments/engine/files.hpp"
#include "experiments/engine/plan_rows.hpp"
#include "experiments/engine/tc_eval.hpp"
#include "experiments/plan/plan.hpp"
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
  EXPECT_NE(message([&] { parse_tc_value(Format::tf32, "0x3f800001", "a[0]"); }).find("tf32"), std::string::npos);
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

// Every probe of every instruction, as the H100 answered it: the probe's values written as tc-eval
// bit patterns, the hardware's D as the observed d. The file holds each instruction's output bits in
// the order of its probes and the sha256 of their ids, so the test first checks that make_probes
// builds the same probes in the same order. The model must give the hardware's bits for all of them
// (72,954 probes over 12 instructions).
TEST(TcEval, ReproducesEveryH100ProbeOutcome) {
  const std::string path = std::string(GEMMLAB_SOURCE_DIR) + "/results/probes/h100_probes_20261123_outputs.csv";
  const engine::CsvRecords csv = engine::parse_csv(engine::read_file(path));
  ASSERT_EQ(csv.records.size(), tc::all_instructions().size() + 1) << path;
  ASSERT_EQ(csv.records[0], (std::vector<std::string>{"instruction", "probes", "probe_ids_sha256", "output_bits"}));
  long long compared = 0, differing = 0;
  for (std::size_t row = 1; row < csv.records.size(); ++row) {
    const std::vector<std::string>& rec = csv.records[row];
    const auto ins = tc::parse_instruction(rec[0]);
    ASSERT_TRUE(ins) << rec[0];
    const tc::InstructionInfo& ii = tc::info(*ins);
    const std::vector<tc::Probe> probes = tc::make_probes(ii);
    std::string ids;
    for (const tc::Probe& p : probes) ids += (ids.empty() ? "" : "\n") + p.id;
    ASSERT_EQ(std::to_string(probes.size()), rec[1]) << ii.name << ": make_probes builds another probe set";
    ASSERT_EQ(engine::sha256_hex(ids), rec[2]) << ii.name << ": make_probes builds other probes or another order";
    std::istringstream hardware(rec[3]);
    for (const tc::Probe& p : probes) {
      std::string observed;
      ASSERT_TRUE(hardware >> observed) << ii.name << ": fewer output bits than probes";
      std::string a, b;
      for (int k = 0; k < ii.k; ++k) {
        a += (k ? " " : "") + tc_hex(ii.input, to_bits(ii.input, p.a[k]));
        b += (k ? " " : "") + tc_hex(ii.input, to_bits(ii.input, p.b[k]));
      }
      const TcEvalResult r =
          evaluate_tc_case(parse_tc_case(ii.name, a, b, tc_hex(ii.output, to_bits(ii.output, p.c)), observed));
      ++compared;
      if (!*r.match && ++differing <= 5)
        ADD_FAILURE() << ii.name << " " << p.id << ": hardware " << observed << ", model " << tc_hex(ii.output, r.d_bits);
    }
  }
  EXPECT_EQ(compared, 72954);
  EXPECT_EQ(differing, 0);
}
