// The tensor-core models of every GPU generation (reference/tc_gpus.hpp): names, which instructions
// each generation has, Hopper's models unchanged, the model a device gets, and the round trip that
// makes `gemmlab probe` usable on every generation: outcomes of the probes and the adversarial corpus
// synthesised by a generation's model (a virtual device) must give that model back.
#include <gtest/gtest.h>

#include <functional>
#include <map>
#include <set>

#include "reference/tc_corpus.hpp"
#include "reference/tc_gpus.hpp"
#include "reference/tc_infer.hpp"

using namespace gemmlab;
using namespace gemmlab::tc;

namespace {

// A virtual device: D(0,0) of every probe and corpus case as generation g's model writes it.
std::vector<ProbeOutcome> virtual_device(const TcParams& p, const InstructionInfo& ins) {
  std::vector<Probe> cases = make_probes(ins);
  const std::vector<Probe> corpus = make_corpus(ins, kCorpusSeed, 100);
  cases.insert(cases.end(), corpus.begin(), corpus.end());
  std::vector<ProbeOutcome> out;
  for (const Probe& pr : cases) out.push_back({pr, predict_bits(p, pr)});
  return out;
}

// A feature inference may leave open when no input of the instruction can tell its values apart, and
// the field of TcParams it names (the inference then keeps the canonical first value).
const std::map<std::string, std::function<void(TcParams&, const TcParams&)>>& copy_feature() {
  static const std::map<std::string, std::function<void(TcParams&, const TcParams&)>> m = {
      {"zero_c_alignment", [](TcParams& a, const TcParams& t) { a.zero_c_offset = t.zero_c_offset; }},
      {"output_rounding", [](TcParams& a, const TcParams& t) { a.output_rounding = t.output_rounding; }},
      {"result_cut", [](TcParams& a, const TcParams& t) { a.result_fraction_bits = t.result_fraction_bits; }},
      {"subnormal_output", [](TcParams& a, const TcParams& t) { a.subnormal_output = t.subnormal_output; }},
      {"operand_conversion", [](TcParams& a, const TcParams& t) { a.operand_conversion = t.operand_conversion; }},
      {"overflow", [](TcParams& a, const TcParams& t) { a.overflow = t.overflow; }},
      {"zero_sign", [](TcParams& a, const TcParams& t) { a.zero_sign = t.zero_sign; }},
      {"zero_operand_alignment", [](TcParams& a, const TcParams& t) { a.zero_operand_exponent = t.zero_operand_exponent; }},
  };
  return m;
}

}  // namespace

TEST(TcGenerations, NamesArchitecturesAndGenerations) {
  const std::pair<const char*, Generation> cases[] = {
      {"v100", Generation::volta},   {"A100", Generation::ampere},     {"a30", Generation::ampere},
      {"a2", Generation::ampere},    {"ada", Generation::ada},         {"L4", Generation::ada},
      {"l40s", Generation::ada},     {"h100", Generation::hopper},     {"H200", Generation::hopper},
      {"b200", Generation::blackwell}, {"sm_70", Generation::volta},   {"sm_80", Generation::ampere},
      {"sm_86", Generation::ampere}, {"sm_89", Generation::ada},       {"sm_90a", Generation::hopper},
      {"sm_90", Generation::hopper}, {"sm_100", Generation::blackwell}, {"sm_100a", Generation::blackwell},
      {"ampere", Generation::ampere}, {"blackwell", Generation::blackwell}};
  for (auto [name, g] : cases) {
    ASSERT_TRUE(parse_gpu(name).has_value()) << name;
    EXPECT_EQ(*parse_gpu(name), g) << name;
  }
  for (const char* bad : {"", "rtx4090", "sm_75", "sm_120", "sm_", "sm_9x", "h300"}) EXPECT_FALSE(parse_gpu(bad)) << bad;
  EXPECT_EQ(gpu_names().size(), 10u);
  for (const GpuName& g : gpu_names()) EXPECT_EQ(generation_of_cc(g.cc), g.generation) << g.name;
  EXPECT_FALSE(generation_of_cc(75));   // Turing: no validated model
  EXPECT_FALSE(generation_of_cc(120));  // consumer Blackwell
  EXPECT_EQ(nearest_generation(75), Generation::volta);
  EXPECT_EQ(nearest_generation(87), Generation::ampere);
  EXPECT_EQ(nearest_generation(120), Generation::blackwell);
  EXPECT_EQ(nearest_generation(50), Generation::volta);
}

TEST(TcGenerations, WhichInstructionsEachHas) {
  for (Instruction i : every_instruction()) {
    const std::string name = info(i).name;
    const bool wgmma = name.rfind("wgmma_", 0) == 0, tcgen05 = name.rfind("tcgen05_", 0) == 0;
    const bool volta_mma = name.rfind("mma_m8n8k4_f16", 0) == 0;  // Volta's own, modelled there only
    EXPECT_EQ(has_instruction(Generation::hopper, i), !tcgen05 && !volta_mma) << name;  // every instruction gemmlab probed
    EXPECT_EQ(has_instruction(Generation::ampere, i), !wgmma && !volta_mma && info(i).min_cc <= 80) << name;
    EXPECT_EQ(has_instruction(Generation::ada, i), !wgmma && !volta_mma && info(i).min_cc <= 89) << name;
    EXPECT_EQ(has_instruction(Generation::blackwell, i), !wgmma && !volta_mma) << name;
    EXPECT_EQ(generation_params(Generation::ampere, i).has_value(), has_instruction(Generation::ampere, i)) << name;
  }
  EXPECT_EQ(instructions_of(Generation::volta),
            (std::vector<Instruction>{Instruction::wmma_m16n16k16_f16_f32, Instruction::wmma_m16n16k16_f16_f16,
                                      Instruction::mma_m8n8k4_f16_f32, Instruction::mma_m8n8k4_f16_f16}));
  EXPECT_FALSE(has_instruction(Generation::ampere, Instruction::mma_m16n8k32_e4m3_f32));  // fp8 from Ada on
  EXPECT_TRUE(has_instruction(Generation::ada, Instruction::mma_m16n8k32_e4m3_f32));
  EXPECT_FALSE(has_instruction(Generation::ampere, Instruction::mma_m16n8k16_f64));  // k16 DMMA from sm_90
  // A kernel moving off Hopper: wgmma's closest is the mma.sync of the same formats and k.
  EXPECT_EQ(closest_instruction(Generation::ampere, Instruction::wgmma_m64n8k16_f16_f32), Instruction::mma_m16n8k16_f16_f32);
  // ... and on Blackwell, Hopper's warpgroup MMA becomes tcgen05.mma.
  EXPECT_EQ(closest_instruction(Generation::blackwell, Instruction::wgmma_m64n8k8_tf32_f32), Instruction::tcgen05_m128n8k8_tf32_f32);
  EXPECT_EQ(closest_instruction(Generation::blackwell, Instruction::wgmma_m64n8k32_e4m3_f32),
            Instruction::tcgen05_m128n8k32_e4m3_f32);
  EXPECT_EQ(closest_instruction(Generation::blackwell, Instruction::mma_m16n8k16_f16_f32), Instruction::mma_m16n8k16_f16_f32);
  EXPECT_EQ(closest_instruction(Generation::hopper, Instruction::tcgen05_m128n8k16_bf16_f32), Instruction::mma_m16n8k16_bf16_f32);
  EXPECT_EQ(closest_instruction(Generation::ada, Instruction::wgmma_m64n8k32_e4m3_f32), Instruction::mma_m16n8k32_e4m3_f32);
  EXPECT_EQ(closest_instruction(Generation::volta, Instruction::wgmma_m64n8k16_f16_f32), Instruction::wmma_m16n16k16_f16_f32);
  EXPECT_FALSE(closest_instruction(Generation::ampere, Instruction::wgmma_m64n8k32_e4m3_f32));  // no fp8 before Ada
  EXPECT_FALSE(closest_instruction(Generation::volta, Instruction::mma_m16n8k16_bf16_f32));
}

// "On an H100 or H200, nothing moves": Hopper's models are measured_hopper_params, bit for bit.
TEST(TcGenerations, HopperIsTheProbedModel) {
  for (Instruction i : instructions_of(Generation::hopper)) {
    ASSERT_TRUE(generation_params(Generation::hopper, i).has_value()) << info(i).name;
    EXPECT_EQ(*generation_params(Generation::hopper, i), *measured_hopper_params(i)) << info(i).name;
    EXPECT_EQ(provenance(Generation::hopper, i).source, ModelSource::probed) << info(i).name;
  }
  EXPECT_EQ(active_generation(), Generation::hopper);
  for (Instruction i : all_instructions()) EXPECT_EQ(model_params(i), measured_hopper_params(i));
  EXPECT_EQ(instructions_of(Generation::hopper), all_instructions());  // every probed instruction, no tcgen05
  EXPECT_EQ(literature_instructions().size(), 8u);  // tcgen05's 6, Volta's mma.m8n8k4 2
}

// The published datapaths (Khattak & Mikaitis's models, MMA-Sim's fraction bits), as the fitted
// parameters must state them; the vectors themselves are the ctest tc.km_vectors.
TEST(TcGenerations, DatapathsPerGeneration) {
  const auto p = [](Generation g, Instruction i) { return *generation_params(g, i); };
  EXPECT_EQ(p(Generation::volta, Instruction::wmma_m16n16k16_f16_f32).block_size, 4);
  EXPECT_EQ(p(Generation::volta, Instruction::wmma_m16n16k16_f16_f32).fraction_bits(), 23);
  EXPECT_EQ(p(Generation::volta, Instruction::wmma_m16n16k16_f16_f16).fraction_bits(), 23);
  // Volta's mma.m8n8k4: one HMMA.884 step, the wmma datapath of the same output in one block of 4.
  EXPECT_EQ(p(Generation::volta, Instruction::mma_m8n8k4_f16_f32), p(Generation::volta, Instruction::wmma_m16n16k16_f16_f32));
  EXPECT_EQ(p(Generation::volta, Instruction::mma_m8n8k4_f16_f16), p(Generation::volta, Instruction::wmma_m16n16k16_f16_f16));
  EXPECT_EQ(info(Instruction::mma_m8n8k4_f16_f32).k, 4);
  EXPECT_EQ(provenance(Generation::volta, Instruction::mma_m8n8k4_f16_f32).source, ModelSource::fitted);
  EXPECT_NE(provenance(Generation::volta, Instruction::mma_m8n8k4_f16_f16).text.find("no published vector ran it directly"),
            std::string::npos);
  EXPECT_FALSE(generation_params(Generation::hopper, Instruction::mma_m8n8k4_f16_f32));
  EXPECT_FALSE(measured_hopper_params(Instruction::mma_m8n8k4_f16_f32));
  for (Generation g : {Generation::ampere, Generation::ada}) {
    EXPECT_EQ(p(g, Instruction::mma_m16n8k16_f16_f32).block_size, 8);
    EXPECT_EQ(p(g, Instruction::mma_m16n8k16_f16_f32).fraction_bits(), 24);
    EXPECT_EQ(p(g, Instruction::mma_m16n8k16_bf16_f32).zero_c_offset, 6);
    EXPECT_EQ(p(g, Instruction::mma_m16n8k8_tf32_f32).block_size, 4);
    EXPECT_EQ(p(g, Instruction::mma_m16n8k16_f16_f16).fraction_bits(), 24);
    EXPECT_EQ(p(g, Instruction::mma_m16n8k16_f16_f16).output_rounding, Rounding::nearest_even);
  }
  const TcParams ada8 = p(Generation::ada, Instruction::mma_m16n8k32_e4m3_f32);
  EXPECT_EQ(ada8.block_size, 16);
  EXPECT_EQ(ada8.fraction_bits(), 13);
  EXPECT_EQ(ada8.result_fraction_bits, 13);
  EXPECT_EQ(ada8.c_entry, CEntry::first_block);
  EXPECT_EQ(p(Generation::ada, Instruction::mma_m16n8k32_e5m2_f16).fraction_bits(), 13);
  for (Instruction i : instructions_of(Generation::blackwell))
    if (auto h = measured_hopper_params(i)) EXPECT_EQ(p(Generation::blackwell, i), *h) << info(i).name;
  // tcgen05 (literature): Hopper's wgmma datapath for f16/bf16/tf32, fp8 at 25 bits in one block of 32.
  EXPECT_EQ(p(Generation::blackwell, Instruction::tcgen05_m128n8k16_f16_f32),
            *measured_hopper_params(Instruction::wgmma_m64n8k16_f16_f32));
  const TcParams b8 = p(Generation::blackwell, Instruction::tcgen05_m128n8k32_e4m3_f32);
  EXPECT_EQ(b8.block_size, 32);
  EXPECT_EQ(b8.fraction_bits(), 25);
  EXPECT_EQ(b8.result_fraction_bits, -1);
  EXPECT_EQ(provenance(Generation::blackwell, Instruction::tcgen05_m128n8k32_e4m3_f32).source, ModelSource::literature);
  // Where each comes from: fitted where the published vectors reach, the literature elsewhere.
  EXPECT_EQ(provenance(Generation::ampere, Instruction::mma_m16n8k16_f16_f32).source, ModelSource::fitted);
  EXPECT_EQ(provenance(Generation::ada, Instruction::mma_m16n8k32_e5m2_f32).source, ModelSource::fitted);
  EXPECT_EQ(provenance(Generation::ampere, Instruction::mma_m8n8k4_f64).source, ModelSource::literature);
  EXPECT_EQ(provenance(Generation::ada, Instruction::mma_m16n8k32_e4m3_e5m2_f32).source, ModelSource::literature);
  for (Generation g : all_generations())
    for (Instruction i : instructions_of(g)) EXPECT_FALSE(provenance(g, i).text.empty()) << to_string(g) << info(i).name;
}

// The probes recover each generation's parameters from a virtual device that answers with that
// generation's model: every instruction whose model differs from one already checked.
TEST(TcGenerations, ProbesRecoverEveryGenerationsModel) {
  // Features no input of the instruction can settle (the inference keeps its first value and names
  // the feature): those of every block datapath, and those of some formats:
  //  - zero_c_alignment: a zero C's exponent floor lies below every product of fp16 and fp8 inputs;
  //  - output_rounding, result_cut: a 13- or 14-bit block result never shows the fp32 rounding;
  //  - subnormal_output, operand_conversion: fp8 products stay far above fp32's subnormals, and an
  //    fp16 conversion of an fp8 subnormal changes no alignment at 24 or 25 bits.
  const std::set<std::string> unsettled = {"zero_c_alignment", "output_rounding", "result_cut", "subnormal_output",
                                           "operand_conversion"};
  const auto also_unsettled = [](const InstructionInfo& ins, const TcParams& p, const std::string& f) {
    const bool narrow_in = ins.input == Format::fp16 || ins.input == Format::e4m3 || ins.input == Format::e5m2;
    // fp16 and fp8 products never leave fp32's range: no input overflows an fp32 output.
    if (f == "overflow") return narrow_in && ins.output == Format::fp32;
    // A zero operand's exponent never sets an fp16 output's or an fp8 block's alignment.
    if (f == "zero_operand_alignment") return ins.output == Format::fp16 || ins.input != ins.format_b() || narrow_in;
    // fp8 mma.sync through fp16 steps from +0, C added last by an FADD: C never joins an alignment,
    // and an exact zero comes out of the FADD, whose sign rule is IEEE's either way.
    if (f == "zero_sign" || f == "c_in_alignment" || f == "align_reference") return p.c_entry == CEntry::final_add;
    return false;
  };
  std::vector<std::pair<Instruction, TcParams>> done;
  int checked = 0;
  for (Generation g : all_generations())
    for (Instruction i : instructions_of(g)) {
      const TcParams truth = *generation_params(g, i);
      if (truth.arithmetic != Arithmetic::block_fused) continue;  // the fp64 chains: test_tc_f64.cpp
      bool seen = false;
      for (const auto& [j, q] : done) seen = seen || (q == truth && info(j).k == info(i).k);
      if (seen) continue;
      done.push_back({i, truth});
      const InstructionInfo& ins = info(i);
      const Inference inf = infer(ins, virtual_device(truth, ins));
      EXPECT_EQ(inf.mismatching_probes, 0) << to_string(g) << " " << ins.name;
      TcParams got = inf.params;
      for (const std::string& f : inf.ambiguous) {
        EXPECT_TRUE(unsettled.count(f) || also_unsettled(ins, truth, f))
            << to_string(g) << " " << ins.name << ": feature " << f << " not identified";
        if (copy_feature().count(f)) copy_feature().at(f)(got, truth);
        if (f == "c_in_alignment") got.c_in_alignment = truth.c_in_alignment;
        if (f == "align_reference") got.align_reference = truth.align_reference;
      }
      // With C added last, a zero C's floor is never seen (the steps start from +0): no value is offered.
      if (truth.c_entry == CEntry::final_add) got.zero_c_offset = truth.zero_c_offset;
      EXPECT_EQ(got, truth) << to_string(g) << " " << ins.name << "\n inferred " << inf.params.describe() << "\n truth    "
                            << truth.describe();
      ++checked;
    }
  EXPECT_GE(checked, 20);
}

TEST(TcGenerations, TheDeviceDecidesTheModel) {
  DeviceModel m = select_device_model(80, "NVIDIA A100-SXM4-80GB");
  EXPECT_TRUE(m.ok);
  EXPECT_EQ(m.generation, Generation::ampere);
  EXPECT_TRUE(m.validated);
  EXPECT_FALSE(m.overridden);
  m = select_device_model(90, "NVIDIA H200");
  EXPECT_EQ(m.generation, Generation::hopper);
  // A GPU gemmlab has no model for: refused, naming the nearest model and how to use it.
  m = select_device_model(120, "NVIDIA GeForce RTX 5090");
  EXPECT_FALSE(m.ok);
  EXPECT_NE(m.message.find("no validated tensor-core model for NVIDIA GeForce RTX 5090 (compute capability 12.0)"),
            std::string::npos) << m.message;
  EXPECT_NE(m.message.find("--gpu blackwell"), std::string::npos) << m.message;
  // ... unless --gpu names one: then it is used and never called validated.
  m = select_device_model(120, "NVIDIA GeForce RTX 5090", "b200");
  EXPECT_TRUE(m.ok);
  EXPECT_EQ(m.generation, Generation::blackwell);
  EXPECT_FALSE(m.validated);
  EXPECT_TRUE(m.overridden);
  EXPECT_NE(m.message.find("NOT this GPU's"), std::string::npos) << m.message;
  m = select_device_model(90, "NVIDIA H100", "a100");  // another generation's model on this GPU: an assumption
  EXPECT_EQ(m.generation, Generation::ampere);
  EXPECT_FALSE(m.validated);
  m = select_device_model(90, "NVIDIA H100", "nope");
  EXPECT_FALSE(m.ok);
  EXPECT_NE(m.message.find("--gpu nope: not a GPU gemmlab models"), std::string::npos);
}

TEST(TcGenerations, ScopedActiveGeneration) {
  EXPECT_EQ(active_generation(), Generation::hopper);
  {
    ScopedGeneration s(Generation::ampere);
    EXPECT_EQ(active_generation(), Generation::ampere);
    EXPECT_EQ(model_params(Instruction::mma_m16n8k16_f16_f32)->block_size, 8);
    EXPECT_FALSE(model_params(Instruction::wgmma_m64n8k16_f16_f32).has_value());
  }
  EXPECT_EQ(active_generation(), Generation::hopper);
  EXPECT_EQ(model_params(Instruction::mma_m16n8k16_f16_f32)->block_size, 16);
}
