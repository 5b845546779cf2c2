// Tensor-core models per GPU generation; see tc_gpus.hpp.
#include "reference/tc_gpus.hpp"

#include <algorithm>
#include <atomic>
#include <cctype>
#include <mutex>

namespace gemmlab::tc {

namespace {

std::string lower(std::string s) {
  for (char& ch : s) ch = static_cast<char>(std::tolower(static_cast<unsigned char>(ch)));
  return s;
}

// The compute capability that stands for a generation (the lowest of its GPUs).
int generation_cc(Generation g) {
  switch (g) {
    case Generation::volta: return 70;
    case Generation::ampere: return 80;
    case Generation::ada: return 89;
    case Generation::hopper: return 90;
    case Generation::blackwell: return 100;
  }
  return 90;
}

bool is_wgmma(Instruction i) { return std::string(info(i).name).rfind("wgmma_", 0) == 0; }
bool is_tcgen05(Instruction i) { return std::string(info(i).name).rfind("tcgen05_", 0) == 0; }
bool is_volta_mma(Instruction i) { return i == Instruction::mma_m8n8k4_f16_f32 || i == Instruction::mma_m8n8k4_f16_f16; }
bool is_fp8(Format f) { return f == Format::e4m3 || f == Format::e5m2; }

// The published vectors of Khattak & Mikaitis that reach each generation's instructions.
const char* kKm =
    "Khattak & Mikaitis's published hardware outputs (arXiv 2512.07004; north-numerical-computing/MATLAB-tensor-core "
    "model_validation/";

std::atomic<Generation> g_active{Generation::hopper};

}  // namespace

const char* to_string(Generation g) {
  switch (g) {
    case Generation::volta: return "volta";
    case Generation::ampere: return "ampere";
    case Generation::ada: return "ada";
    case Generation::hopper: return "hopper";
    case Generation::blackwell: return "blackwell";
  }
  return "?";
}

const std::vector<Generation>& all_generations() {
  static const std::vector<Generation> v = {Generation::volta, Generation::ampere, Generation::ada, Generation::hopper,
                                            Generation::blackwell};
  return v;
}

std::optional<Generation> parse_generation(const std::string& name) {
  for (Generation g : all_generations())
    if (lower(name) == to_string(g)) return g;
  return std::nullopt;
}

const char* to_string(ModelSource s) {
  switch (s) {
    case ModelSource::probed: return "probed";
    case ModelSource::fitted: return "fitted";
    case ModelSource::literature: return "literature";
  }
  return "?";
}

const std::vector<GpuName>& gpu_names() {
  static const std::vector<GpuName> v = {
      {"v100", "NVIDIA V100", Generation::volta, 70},       {"a100", "NVIDIA A100", Generation::ampere, 80},
      {"a30", "NVIDIA A30", Generation::ampere, 80},        {"a2", "NVIDIA A2", Generation::ampere, 86},
      {"ada", "NVIDIA RTX (Ada)", Generation::ada, 89},     {"l4", "NVIDIA L4", Generation::ada, 89},
      {"l40s", "NVIDIA L40S", Generation::ada, 89},         {"h100", "NVIDIA H100", Generation::hopper, 90},
      {"h200", "NVIDIA H200", Generation::hopper, 90},      {"b200", "NVIDIA B200", Generation::blackwell, 100},
  };
  return v;
}

std::optional<Generation> generation_of_cc(int cc) {
  switch (cc) {
    case 70: return Generation::volta;
    case 80:
    case 86: return Generation::ampere;
    case 89: return Generation::ada;
    case 90: return Generation::hopper;
    case 100: return Generation::blackwell;
    default: return std::nullopt;
  }
}

Generation nearest_generation(int cc) {
  Generation best = Generation::volta;
  for (Generation g : all_generations())
    if (generation_cc(g) <= cc) best = g;
  return best;
}

std::optional<Generation> parse_gpu(const std::string& text) {
  const std::string s = lower(text);
  for (const GpuName& g : gpu_names())
    if (s == g.name) return g.generation;
  if (auto g = parse_generation(s)) return g;
  std::string sm = s;
  if (sm.rfind("sm_", 0) == 0) sm = sm.substr(3);
  else if (sm.rfind("sm", 0) == 0) sm = sm.substr(2);
  else return std::nullopt;
  if (!sm.empty() && sm.back() == 'a') sm.pop_back();
  if (sm.empty() || !std::all_of(sm.begin(), sm.end(), [](char c) { return std::isdigit(static_cast<unsigned char>(c)); }))
    return std::nullopt;
  return generation_of_cc(std::stoi(sm));
}

std::string gpu_name_help() {
  std::string s;
  for (const GpuName& g : gpu_names()) s += (s.empty() ? "" : ", ") + std::string(g.name);
  return s + "; or an architecture: sm_70, sm_80, sm_86, sm_89, sm_90, sm_100; or a generation: volta, ampere, ada, "
             "hopper, blackwell";
}

bool has_instruction(Generation g, Instruction i) {
  if (is_wgmma(i)) return g == Generation::hopper;
  if (is_tcgen05(i)) return g == Generation::blackwell;
  // mma.m8n8k4 f16: modelled on Volta only (later GPUs take it in PTX by means not published).
  if (is_volta_mma(i)) return g == Generation::volta;
  const InstructionInfo& ii = info(i);
  if (g == Generation::volta)  // Volta's tensor cores take fp16 only, through wmma and mma.m8n8k4
    return i == Instruction::wmma_m16n16k16_f16_f32 || i == Instruction::wmma_m16n16k16_f16_f16;
  return generation_cc(g) >= ii.min_cc;
}

std::vector<Instruction> instructions_of(Generation g) {
  std::vector<Instruction> v;
  for (Instruction i : every_instruction())
    if (has_instruction(g, i)) v.push_back(i);
  return v;
}

namespace {

// Blackwell's tcgen05 kinds (literature, MMA-Sim's tcgen05mma): one fused block of all k products
// and C at 25 fraction bits, written toward zero (fp32) or to nearest (fp16): the f16, bf16 and tf32
// kinds the datapath Hopper's wgmma has (gemmlab's measured model of the wgmma of the same formats
// and k, special rules included), fp8 one block of 32 at 25 bits with no cut (Hopper's wgmma fp8
// keeps 13).
TcParams tcgen05_params(Instruction i) {
  const InstructionInfo& ii = info(i);
  Instruction hopper = Instruction::wgmma_m64n8k16_f16_f32;
  if (ii.input == Format::bf16) hopper = Instruction::wgmma_m64n8k16_bf16_f32;
  else if (ii.input == Format::tf32) hopper = Instruction::wgmma_m64n8k8_tf32_f32;
  else if (ii.input == Format::fp16 && ii.output == Format::fp16) hopper = Instruction::wgmma_m64n8k16_f16_f16;
  else if (is_fp8(ii.input)) hopper = ii.input == Format::e4m3 ? Instruction::wgmma_m64n8k32_e4m3_f32
                                                              : Instruction::wgmma_m64n8k32_e5m2_f32;
  TcParams p = *measured_hopper_params(hopper);
  if (is_fp8(ii.input)) {
    p.block_size = 32;
    p.neab = 25 - (gemmlab::info(ii.output).precision - 1);
    p.result_fraction_bits = -1;
    p.zero_c_offset = -1;
  }
  return p;
}

}  // namespace

std::optional<TcParams> generation_params(Generation g, Instruction i) {
  if (!has_instruction(g, i)) return std::nullopt;
  if (is_tcgen05(i)) return tcgen05_params(i);
  std::optional<TcParams> hopper = measured_hopper_params(i);
  if (is_volta_mma(i)) {
    // Volta's mma.m8n8k4 is the HMMA.884 its wmma is issued as: start from the wmma of the same output
    // (Hopper's measured special rules, as every Volta model) and take Volta's datapath below.
    const bool f32 = info(i).output == Format::fp32;
    hopper = measured_hopper_params(f32 ? Instruction::wmma_m16n16k16_f16_f32 : Instruction::wmma_m16n16k16_f16_f16);
  }
  if (g == Generation::hopper || !hopper) return hopper;
  TcParams p = *hopper;  // the special rules stay Hopper's (assumed), the datapath is the generation's
  const InstructionInfo& ii = info(i);
  if (p.arithmetic != Arithmetic::block_fused) return p;  // fp64: one FMA chain (MMA-Sim, every generation)
  const bool fp16_out = ii.output == Format::fp16;
  // The fraction bits kept: F = p_out - 1 + neab; F fixed per generation, neab follows the output.
  const auto keep = [&](int F) { p.neab = F - (gemmlab::info(ii.output).precision - 1); };
  // A zero C's exponent floor, emin_out - offset, one place higher on Volta/Ampere/Ada than on Hopper
  // (Khattak & Mikaitis's min_exp_limit: -132 / -20 against Hopper's -133 / -21; Volta fp16 out -19).
  const auto zero_c = [&](int offset) {
    if (p.zero_c_offset >= 0) p.zero_c_offset = offset;
  };
  // Blackwell's mma.sync: Hopper's datapath, fp8 included (two interleaved fp16 steps and C added
  // last to nearest, as on sm_90: the published B200 E4M3/E5M2 vectors fit it, 0 of 20,000 off, where
  // one native block of 32 at F = 25 misses 7,046).
  if (g == Generation::blackwell) return p;
  if (g == Generation::volta) {  // HMMA.884: blocks of 4 products at F = 23
    p.block_size = 4;
    keep(23);
    if (fp16_out) p.zero_c_offset = 5;
    return p;
  }
  // Ampere and Ada
  if (is_fp8(ii.input)) {  // Ada: two halves of 16 products at 13 fraction bits (an "e8m13" fp32 result)
    p.block_size = 16;
    p.step_interleave = 0;
    p.c_entry = CEntry::first_block;
    p.operand_conversion.reset();
    keep(13);
    p.result_fraction_bits = fp16_out ? -1 : 13;
    p.zero_c_offset = -1;  // Khattak & Mikaitis: no exponent floor for fp8 (min_exp_limit -132, below any product)
    return p;
  }
  keep(24);
  zero_c(6);
  if (ii.input == Format::tf32) p.block_size = 4;  // k8 as two halves of 4, k4 as one
  else p.block_size = 8;                           // k16 as two halves of 8, k8 as one
  return p;
}

ModelProvenance provenance(Generation g, Instruction i) {
  ModelProvenance m;
  if (!has_instruction(g, i)) {
    m.text = std::string(to_string(g)) + " has no " + info(i).name;
    return m;
  }
  if (g == Generation::hopper) {
    const std::string e = model_evidence(i);
    m.source = e.rfind("probed", 0) == 0 ? ModelSource::probed : ModelSource::literature;
    m.text = e;
    return m;
  }
  const InstructionInfo& ii = info(i);
  const std::string special =
      "; the special rules (NaN encoding, overflow, sign of zero) are Hopper's measured ones, assumed";
  const std::string literature = "MMA-Sim (arXiv 2511.10909, microsoft/MMA-Sim mmasim/simulator/nv_ptx.py)";
  if (ii.input == Format::fp64) {
    m.source = ModelSource::literature;
    m.text = "literature: " + literature + " models every generation's DMMA as one chain of binary64 FMAs; probed on "
             "Hopper only" + special;
    return m;
  }
  if (is_tcgen05(i)) {
    m.source = ModelSource::literature;
    m.text = "literature: " + literature + ", tcgen05mma: one fused block of all k products and C at 25 fraction bits, "
             "toward zero (fp32) or to nearest (fp16), as Hopper's wgmma for fp16, bf16 and tf32 (gemmlab's measured wgmma "
             "model, special rules included) and fp8 at 25 bits where Hopper's wgmma keeps 13; no gemmlab probe and no "
             "published vector has run it";
    return m;
  }
  // Which published sets reach this instruction's datapath (input format and output format).
  std::string sets;
  const bool f32 = ii.output == Format::fp32;
  switch (g) {
    case Generation::volta:
      sets = f32 ? "V100/fp16 d_fp32" : "V100/fp16 d_fp16";
      break;
    case Generation::ampere:
      if (ii.input == Format::fp16) sets = f32 ? "A100, A2 fp16 d_fp32" : "A100, A2 fp16 d_fp16";
      else if (ii.input == Format::bf16) sets = "A100, A2 bf16";
      else if (ii.input == Format::tf32) sets = "A100, A2 tf32";
      break;
    case Generation::ada:
      if (ii.input == Format::fp16) sets = f32 ? "Ada, L40S fp16 d_fp32" : "Ada, L40S fp16 d_fp16";
      else if (ii.input == Format::bf16) sets = "Ada, L40S bf16";
      else if (ii.input == Format::tf32) sets = "Ada, L40S tf32";
      else if (is_fp8(ii.input) && !ii.input_b) sets = f32 ? "Ada, L40S E4M3 and E5M2 d_fp32" : "Ada E4M3 and E5M2 d_fp16";
      break;
    case Generation::blackwell:
      if (ii.input == Format::fp16) sets = f32 ? "B200 fp16 d_fp32" : "B200 fp16 d_fp16";
      else if (ii.input == Format::bf16) sets = "B200 bf16";
      else if (ii.input == Format::tf32) sets = "B200 tf32";
      else if (is_fp8(ii.input) && !ii.input_b) sets = f32 ? "B200 E4M3 and E5M2 d_fp32" : "B200 E4M3 and E5M2 d_fp16";
      break;
    case Generation::hopper: break;
  }
  // The vectors ran k16 fp16/bf16 (wmma), k8 tf32 and k32 fp8 (mma.sync) instructions; the other
  // shapes of the same formats share the datapath by the generation's block structure.
  const bool same_shape = ii.k == 16 || (ii.input == Format::tf32 && ii.k == 8) || (is_fp8(ii.input) && ii.k == 32);
  // Volta's mma.m8n8k4 is one HMMA.884: the instruction the vectors' wmma was issued as, one step of it.
  const std::string volta_mma =
      is_volta_mma(i) ? "; mma.m8n8k4 is one step of the HMMA.884 that Volta's wmma m16n16k16 is issued as (Jia et al., "
                        "arXiv 1804.06826): the same block of 4 products, no published vector ran it directly"
                      : "";
  // fp16 outputs: the published vectors fit every generation's accumulator width (rounding to 11
  // bits hides whether 23, 24 or 25 were kept), so there F is the generation's fp32-output one.
  const std::string pins = ii.output == Format::fp16 && ii.input == Format::fp16
                               ? "; these vectors fit Hopper's F = 25 too: F is taken from the same generation's fp32 output"
                               : "";
  if (!sets.empty()) {
    m.source = ModelSource::fitted;
    m.text = std::string("fitted: ") + kKm + sets + "), 0 mismatches on every vector" + pins +
             (same_shape || !volta_mma.empty() ? "" : "; this k's blocks follow the same datapath (literature: " + literature + ")") +
             volta_mma + special;
  } else {
    m.source = ModelSource::literature;
    m.text = "literature: " + literature + "; no published vector reaches this instruction" + special;
  }
  return m;
}

bool has_block_scaled(Generation g, BlockScaledKind k) { return generation_cc(g) >= info(k).min_cc; }

std::vector<BlockScaledKind> block_scaled_kinds_of(Generation g) {
  std::vector<BlockScaledKind> v;
  for (BlockScaledKind k : every_block_scaled_kind())
    if (has_block_scaled(g, k)) v.push_back(k);
  return v;
}

ModelProvenance provenance(Generation g, BlockScaledKind k) {
  ModelProvenance m;
  m.source = ModelSource::literature;
  if (!has_block_scaled(g, k)) {
    m.text = std::string(to_string(g)) + " has no " + info(k).name;
    return m;
  }
  m.text = std::string("literature: MMA-Sim (arXiv 2511.10909, microsoft/MMA-Sim mmasim/simulator/nv_ptx.py "
                       "tcgen05mma_block_scale), a model from the literature that no gemmlab probe and no published "
                       "vector has run (reference/tc_block_scaled.hpp)") +
           (k == BlockScaledKind::mxf8f6f4 ? "; its e2m3 and e3m2 elements extrapolate MMA-Sim's rule" : "");
  return m;
}

std::string gpus_with(BlockScaledKind k) {
  std::string s;
  for (const GpuName& n : gpu_names())
    if (has_block_scaled(n.generation, k))
      s += (s.empty() ? "" : ", ") + std::string(n.name) + " (" + to_string(n.generation) + ", sm_" +
           std::to_string(n.cc) + ")";
  return s;
}

std::optional<Instruction> closest_instruction(Generation g, Instruction i) {
  if (has_instruction(g, i)) return i;
  const InstructionInfo& ii = info(i);
  std::optional<Instruction> other_k;
  // A warpgroup MMA (wgmma) becomes Blackwell's tcgen05.mma; anything else its mma.sync.
  const bool to_tcgen05 = is_wgmma(i) && g == Generation::blackwell;
  for (Instruction j : every_instruction()) {
    if (!has_instruction(g, j) || is_tcgen05(j) != to_tcgen05) continue;
    const InstructionInfo& jj = info(j);
    if (jj.input != ii.input || jj.output != ii.output || jj.input_b != ii.input_b) continue;
    if (jj.k == ii.k) return j;
    if (!other_k) other_k = j;
  }
  if (other_k) return other_k;
  // fp32 output where the instruction wrote fp16 (or the reverse) is not the same arithmetic: none.
  return std::nullopt;
}

Generation active_generation() { return g_active.load(); }

namespace {
std::mutex g_applied_mu;
std::optional<DeviceModel> g_applied;
}  // namespace

void apply_model(const DeviceModel& m) {
  std::lock_guard<std::mutex> lock(g_applied_mu);
  g_applied = m;
  set_active_generation(m.generation);
}

void apply_device_default(int cc, const std::string& device_name) {
  {
    std::lock_guard<std::mutex> lock(g_applied_mu);
    if (g_applied) return;
  }
  DeviceModel m = select_device_model(cc, device_name);
  if (m.ok) {
    apply_model(m);
    return;
  }
  // No model of this GPU: Hopper's stays, said as an assumption (never validated here).
  m.ok = true;
  m.generation = active_generation();
  m.validated = false;
  m.message = std::string("tensor-core model: ") + to_string(m.generation) + ", an assumption: " + m.message;
  apply_model(m);
}

DeviceModel applied_model() {
  std::lock_guard<std::mutex> lock(g_applied_mu);
  if (g_applied && g_applied->generation == active_generation()) return *g_applied;
  DeviceModel m;
  m.ok = true;
  m.generation = active_generation();
  m.message = std::string("tensor-core model: ") + to_string(m.generation) + " (no GPU chose it)";
  return m;
}
void set_active_generation(Generation g) { g_active.store(g); }

std::optional<TcParams> model_params(Instruction i) { return generation_params(active_generation(), i); }

DeviceModel select_device_model(int cc, const std::string& device_name, const std::string& requested) {
  DeviceModel m;
  const std::string dev = device_name + " (compute capability " + std::to_string(cc / 10) + "." + std::to_string(cc % 10) + ")";
  const std::optional<Generation> own = generation_of_cc(cc);
  if (!requested.empty()) {
    const std::optional<Generation> r = parse_gpu(requested);
    if (!r) {
      m.message = "--gpu " + requested + ": not a GPU gemmlab models; use one of " + gpu_name_help();
      return m;
    }
    m.ok = true;
    m.generation = *r;
    m.overridden = true;
    m.validated = own && *own == *r;
    m.message = std::string("tensor-core model: ") + to_string(*r) + " (--gpu " + requested + ")" +
                (m.validated ? std::string(", this GPU's own generation")
                             : ", NOT this GPU's (" + dev + "): an assumption, the predictions are not validated here");
    return m;
  }
  if (!own) {
    const Generation near = nearest_generation(cc);
    m.message = "gemmlab has no validated tensor-core model for " + dev + ": its models are of volta (sm_70), ampere "
                "(sm_80, sm_86), ada (sm_89), hopper (sm_90) and blackwell (sm_100). To go on with the nearest one as an "
                "assumption, pass --gpu " + std::string(to_string(near)) + " (Python: gpu=\"" + to_string(near) +
                "\"); nothing predicted that way is validated";
    return m;
  }
  m.ok = true;
  m.generation = *own;
  m.validated = true;
  m.message = std::string("tensor-core model: ") + to_string(*own) + ", this GPU's generation (" + dev + ")";
  return m;
}

}  // namespace gemmlab::tc
