// `gemmlab tc-eval` on Blackwell's block-scaled kinds (experiments/engine/tc_eval.hpp, the model of
// reference/tc_block_scaled.hpp: A MODEL FROM THE LITERATURE, MMA-Sim's, that no gemmlab probe has run).
// Hand-derived dyadic cases through the same parser and evaluation the CLI and the CSV use, each with its
// expected fp32 bits written out (never computed by the model): an aligned term cut by the 25 fraction
// bits, scales that keep every bit, a C larger than every product, ue4m3 scales of kind::mxf4nvf4; then
// the refusal on other generations, the errors a user meets, the file form and the models CSV.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "experiments/engine/files.hpp"
#include "experiments/engine/tc_eval.hpp"
#include "experiments/plan/plan.hpp"
#include "tests/cpu/engine_test_util.hpp"

using namespace gemmlab;

namespace {

// n values as tc-eval text: `head` first, zeros after.
std::string values(int n, const std::vector<std::string>& head) {
  std::string s;
  for (int i = 0; i < n; ++i) s += (i ? " " : "") + (i < static_cast<int>(head.size()) ? head[i] : std::string("0"));
  return s;
}

std::string repeat(int n, const std::string& v) { return values(n, std::vector<std::string>(n, v)); }

TcBlockScaledResult eval(const TcBlockScaledFields& f, bool explain = false) {
  return evaluate_tc_block_scaled_case(parse_tc_block_scaled_case(f), explain, tc::Generation::blackwell);
}

std::string message(const TcBlockScaledFields& f, tc::Generation g = tc::Generation::blackwell) {
  try {
    evaluate_tc_block_scaled_case(parse_tc_block_scaled_case(f), false, g);
  } catch (const UsageError& e) {
    return e.what();
  }
  return "no error";
}

// kind::mxf8f6f4, C = 1 and eight products a = 1.5 (e4m3), b = 2^-6 under scales sa, sb = 1.
TcBlockScaledFields eight_small_products(const std::string& scale_a) {
  const std::vector<std::string> a(8, "1.5"), b(8, "0.015625");
  return {"tcgen05_mxf8f6f4", values(32, a), values(32, b), scale_a, "1", "", "", "", "", "1", ""};
}

}  // namespace

// Each product is 1.5 2^-6 2^-19 = 3 2^-26 (scale_a 0x6c = 2^(108 - 127)). Aligned to C's exponent 0 with
// F = 25 fraction bits, it keeps 2^-25 (3 2^-26 = 1.5 2^-25, truncated): D = 1 + 8 2^-25 = 1 + 2^-22 =
// 0x3f800002. The exact sum 1 + 24 2^-26 = 1 + 3 2^-23 would be 0x3f800003 (on fp32's grid).
TEST(TcEvalBlockScaled, Mxf8f6f4AlignedTermsAreCutTo25FractionBits) {
  const TcBlockScaledResult r = eval(eight_small_products("0x6c"));
  EXPECT_EQ(r.d_bits, 0x3f800002u);
  EXPECT_EQ(r.d_value, 1.0 + 0x1p-22);
}

// The same products under scale_a 2^-17: each is 3 2^-24, a multiple of 2^-25, so the alignment keeps all
// of it; the sum 1 + 24 2^-24 = 1 + 12 2^-23 lies on fp32's grid: D = 0x3f80000c, the exact sum.
TEST(TcEvalBlockScaled, Mxf8f6f4ScalesThatKeepEveryBitGiveTheExactSum) {
  const TcBlockScaledResult r = eval(eight_small_products("0x1p-17"));
  EXPECT_EQ(r.d_bits, 0x3f80000cu);
  EXPECT_EQ(r.d_value, 1.0 + 12 * 0x1p-23);
}

// Mixed element formats, a C larger than every product: 32 products a = 1.75 (e2m3, 14 2^-3), b = 1.5
// (e3m2, 6 2^-2) under scales 2^-16 and 2^-1: each is 84 2^-5 2^-17 = 21 2^-20, exponent label -17.
//  * C = 1024 = 2^10: F = 25 keeps multiples of 2^-15; 21 2^-20 < 2^-15 is cut to 0 in every product:
//    D = 1024 = 0x44800000. (The exact sum 1024 + 672 2^-20 = 1024 + 5.25 2^-13 would truncate to
//    1024 + 5 2^-13.)
//  * C = 32 = 2^5: multiples of 2^-20 are kept, so every product is whole: D = 32 + 672 2^-20 = 32 + 168 2^-18,
//    on fp32's grid at 32 (quantum 2^-18): 0x42000000 + 168 = 0x420000a8.
TEST(TcEvalBlockScaled, Mxf8f6f4CLargerThanTheProducts) {
  TcBlockScaledFields f{"tcgen05_mxf8f6f4", repeat(32, "1.75"), repeat(32, "1.5"), "0x1p-16", "0.5",
                        "e2m3", "e3m2", "", "", "1024", ""};
  EXPECT_EQ(eval(f).d_bits, 0x44800000u);
  f.c = "32";
  EXPECT_EQ(eval(f).d_bits, 0x420000a8u);
  EXPECT_EQ(eval(f).d_value, 32 + 672 * 0x1p-20);
}

// kind::mxf4nvf4 at its defaults (block 16, ue4m3 scales):
//  * group 0: 1.5 * 3 + 6 * -0.5 = 1.5, scales 1.25 (0x3a: 0.0111.010) and 0.75 (0x34): 1.5 1.25 0.75 = 1.40625;
//  * group 1: 4 * 4 = 16, scales 448 (0x7e) and 2^-6 (0x08): 16 448 2^-6 = 112;
//  * groups 2 and 3: zero; C = 0.
// Every term within 35 fraction bits of the largest label (2 = 8 - 6): D = 113.40625 = 1.77197265625 2^6 =
// 0x42e2d000 (fraction 0x62d000). ue8m0 scales could not hold 1.25 or 0.75.
TEST(TcEvalBlockScaled, Mxf4nvf4Ue4m3ScalesMultiplyTheGroupSums) {
  const std::string a = values(64, {"1.5", "6", "0", "0", "0", "0", "0", "0", "0", "0", "0", "0", "0", "0", "0", "0", "4"});
  const std::string b = values(64, {"3", "-0.5", "0", "0", "0", "0", "0", "0", "0", "0", "0", "0", "0", "0", "0", "0", "4"});
  const TcBlockScaledFields f{"tcgen05_mxf4nvf4", a, b, "0x3a 448 1 1", "0.75 0x08 1 1", "", "", "", "", "", ""};
  const TcBlockScaledCase c = parse_tc_block_scaled_case(f);
  EXPECT_EQ(c.block, 16);
  EXPECT_EQ(c.scale_format, Format::ue4m3);
  EXPECT_EQ(c.scales_a[0], 1.25);
  EXPECT_EQ(eval(f).d_bits, 0x42e2d000u);
  // kind::mxf4 takes ue8m0 per 32 only: the same scales are refused there (its defaults would read 2 ue8m0).
  TcBlockScaledFields mx = f;
  mx.instruction = "tcgen05_mxf4";
  mx.block = "16";
  mx.scale_format = "ue4m3";
  EXPECT_NE(message(mx).find("tcgen05_mxf4 takes scales ue8m0 per 32, not ue4m3 per 16"), std::string::npos)
      << message(mx);
}

// An observed D is compared bit for bit; explain names the alignment and the truncated sum.
TEST(TcEvalBlockScaled, ObservedDAndExplain) {
  TcBlockScaledFields f = eight_small_products("0x6c");
  f.d = "0x3f800003";  // the exact sum's bits: not the model's
  const TcBlockScaledResult r = eval(f, true);
  ASSERT_TRUE(r.match.has_value());
  EXPECT_FALSE(*r.match);
  std::string text;
  for (const std::string& l : explain_tc_block_scaled_case(parse_tc_block_scaled_case(f), r, tc::Generation::blackwell))
    text += l + "\n";
  EXPECT_NE(text.find("a0*b0*sa*sb = 3*2^-26 (exponent -25) -> aligned 2^-25"), std::string::npos) << text;
  EXPECT_NE(text.find("aligned to 2^0 (set by C), 25 fraction bits kept"), std::string::npos) << text;
  EXPECT_NE(text.find("truncated sum 4194305*2^-22"), std::string::npos) << text;
  EXPECT_NE(text.find("literature"), std::string::npos) << text;
  EXPECT_EQ(text.find("validated"), std::string::npos) << text;
}

// Only Blackwell has the kinds; every other generation refuses them naming the GPUs that have them.
TEST(TcEvalBlockScaled, OnlyBlackwellHasThem) {
  for (tc::Generation g : tc::all_generations())
    for (tc::BlockScaledKind k : tc::every_block_scaled_kind())
      EXPECT_EQ(tc::has_block_scaled(g, k), g == tc::Generation::blackwell) << tc::to_string(g);
  EXPECT_EQ(tc::gpus_with(tc::BlockScaledKind::mxf4), "b200 (blackwell, sm_100)");
  EXPECT_EQ(tc::provenance(tc::Generation::blackwell, tc::BlockScaledKind::mxf8f6f4).source, tc::ModelSource::literature);
  const std::string m = message(eight_small_products("1"), tc::Generation::hopper);
  EXPECT_NE(m.find("tcgen05_mxf8f6f4 does not exist on hopper"), std::string::npos) << m;
  EXPECT_NE(m.find("b200 (blackwell, sm_100)"), std::string::npos) << m;
}

TEST(TcEvalBlockScaled, BadInputIsNamed) {
  const auto has = [](const TcBlockScaledFields& f, const std::string& what) {
    const std::string m = message(f);
    EXPECT_NE(m.find(what), std::string::npos) << m;
  };
  TcBlockScaledFields f = eight_small_products("3");
  has(f, "scale_a[0]: 3 is not a value of ue8m0: ue8m0 scales are powers of two");
  f = eight_small_products("1 1");
  has(f, "scale_a: tcgen05_mxf8f6f4 takes 1 ue8m0 scale per operand (one per 32 of k = 32), got 2");
  f = eight_small_products("1");
  f.a = "1 1";
  has(f, "a: tcgen05_mxf8f6f4 takes k = 32 values, got 2");
  f = eight_small_products("1");
  f.a_format = "e9m9";
  has(f, "a_format: tcgen05_mxf8f6f4 takes e4m3, e5m2, e2m3, e3m2, e2m1 elements, not 'e9m9'");
  f = eight_small_products("1");
  f.b_format = "e2m1";  // 2^-6 is not an e2m1 value
  has(f, "b[0]: 0.015625 is not a value of e2m1");
  f = eight_small_products("1");
  f.block = "64";
  has(f, "block: '64' is not a scale block (16 or 32)");
  f = eight_small_products("1");
  f.scale_format = "ue4m3";
  has(f, "tcgen05_mxf8f6f4 takes scales ue8m0 per 32, not ue4m3 per 32");
  f = eight_small_products("0x100");
  has(f, "scale_a[0]: 0x100 does not fit the 8 bits of ue8m0");
  f = {"tcgen05_mxf4", repeat(64, "1"), repeat(64, "1"), "1 1", "1 1", "e4m3", "", "", "", "", ""};
  has(f, "a_format: tcgen05_mxf4 takes e2m1 elements, not 'e4m3'");
}

// The file form: block-scaled rows beside another instruction's, their columns empty there; a scale given
// to another instruction is refused naming the line.
TEST(TcEvalBlockScaled, FileFormMixesInstructions) {
  engine_test::TempDir dir("tc_eval_block_scaled");
  const TcBlockScaledFields f = eight_small_products("0x6c");
  const std::string fp16_a = values(16, {"1"}), fp16_b = values(16, {"1"});
  {
    std::ofstream out(dir / "cases.csv");
    out << "id,instruction,a,b,c,d,scale_a,scale_b,a_format,block\n"
        << "1," << f.instruction << "," << f.a << "," << f.b << ",1,0x3f800002," << f.scale_a << ",1,e4m3,32\n"
        << "2,mma_m16n8k16_f16_f32," << fp16_a << "," << fp16_b << ",,0x3f800000,,,,\n";
  }
  const TcEvalSummary s = tc_eval_file(dir / "cases.csv", dir / "out.csv", "test", true, tc::Generation::blackwell);
  EXPECT_EQ(s.cases, 2);
  EXPECT_EQ(s.compared, 2);
  EXPECT_EQ(s.mismatches, 0);
  const engine::CsvRecords out = engine::parse_csv(engine::read_file(dir / "out.csv"));
  ASSERT_EQ(out.records.size(), 3u);
  EXPECT_EQ(out.records[1][10], "0x3f800002");
  EXPECT_EQ(out.records[1][12], "1");
  EXPECT_NE(out.records[1][13].find("fused sum"), std::string::npos);
  const std::string meta = engine::read_file(dir / "out.meta.json");
  EXPECT_NE(meta.find("no gemmlab probe"), std::string::npos);
  // Under Hopper's model the block-scaled row is refused, naming its line and the GPUs that have it.
  try {
    tc_eval_file(dir / "cases.csv", dir / "hopper.csv", "test", false, tc::Generation::hopper);
    ADD_FAILURE() << "no error";
  } catch (const UsageError& e) {
    EXPECT_NE(std::string(e.what()).find("line 2: tcgen05_mxf8f6f4 does not exist on hopper"), std::string::npos)
        << e.what();
  }
  {
    std::ofstream out(dir / "bad.csv");
    out << "instruction,a,b,c,scale_a\n"
        << "mma_m16n8k16_f16_f32," << fp16_a << "," << fp16_b << ",,1\n";
  }
  try {
    tc_eval_file(dir / "bad.csv", dir / "bad_out.csv", "test", false, tc::Generation::blackwell);
    ADD_FAILURE() << "no error";
  } catch (const UsageError& e) {
    EXPECT_NE(std::string(e.what()).find("line 2: scale_a is given, but only the block-scaled kinds"), std::string::npos)
        << e.what();
  }
}

// `tc-eval --list --gpu all -o models.csv`: the three kinds on Blackwell only, from the literature, with their
// k, F and scales (format/block).
TEST(TcEvalBlockScaled, ModelsCsvListsTheKinds) {
  engine_test::TempDir dir("tc_eval_block_scaled_models");
  write_tc_models(tc::all_generations(), dir / "models.csv", "test");
  const engine::CsvRecords csv = engine::parse_csv(engine::read_file(dir / "models.csv"));
  const std::vector<std::string>& h = csv.records[0];
  const auto col = [&](const std::string& name) {
    return static_cast<std::size_t>(std::find(h.begin(), h.end(), name) - h.begin());
  };
  std::vector<std::string> seen;
  for (std::size_t i = 1; i < csv.records.size(); ++i) {
    const std::vector<std::string>& r = csv.records[i];
    if (r[col("arithmetic")] != "block_scaled") continue;
    seen.push_back(r[col("generation")] + " " + r[col("instruction")] + " k" + r[col("k")] + " F" +
                   r[col("fraction_bits")] + " " + r[col("scales")] + " " + r[col("source")]);
  }
  EXPECT_EQ(seen, (std::vector<std::string>{"blackwell tcgen05_mxf8f6f4 k32 F25 ue8m0/32 literature",
                                            "blackwell tcgen05_mxf4 k64 F35 ue8m0/32 literature",
                                            "blackwell tcgen05_mxf4nvf4 k64 F35 ue4m3/16 ue8m0/16 ue8m0/32 literature"}));
}
