// Tensor-core models per GPU generation: which instructions each generation has and the TcParams
// (tc_model.hpp) of each, with where every parameter set comes from.
//
// The same parametrised model describes every generation; what differs is measured, not assumed:
//   generation   GPUs (compute capability)               fp16/bf16 block, F   tf32 block   fp8 (mma.sync)
//   volta        V100 (7.0)                               4, F = 23            -            -
//   ampere       A100, A30 (8.0); A2, A10, RTX 30xx (8.6) 8, F = 24            4            -
//   ada          L4, L40S, RTX 40xx (8.9)                  8, F = 24            4            16 at 13 bits, cut to 13
//   hopper       H100, H200 (9.0)                          16, F = 25           8            two fp16 steps (sm_90 SASS)
//   blackwell    B200 (10.0), mma.sync                     16, F = 25           8            as Hopper's
// A block of `block` products and the running C is aligned to its largest exponent keeping F
// fraction bits (bits below truncated), summed exactly, normalised once and written toward zero
// (fp32) or to nearest (fp16); an instruction of k products chains k / block such blocks. Ada's fp8
// blocks write an fp32 result cut to 13 fraction bits; Hopper's and Blackwell's fp8 mma.sync runs as
// two fp16 steps over interleaved pairs of k with C added last to nearest (Hopper's wgmma fp8: one
// block of 32 at 13 bits). Blackwell's tcgen05 instructions have their own models (literature).
//
// Sources (ModelSource): Hopper's parameters were inferred by gemmlab's own probes on an H100 and an
// H200 (results/probes); the other generations' were fitted to the hardware outputs Khattak & Mikaitis
// published (arXiv 2512.07004, repository north-numerical-computing/MATLAB-tensor-core, folder
// model_validation/: 5,000 vectors per GPU, format and output; tests/data/km_vectors/ holds a sample
// of each set and the repository's licence), where those vectors reach the instruction; the rest are
// taken from the literature (MMA-Sim, arXiv 2511.10909: the accumulator's fraction bits per
// architecture, the halves of K on Ampere and Ada, Blackwell's tcgen05 and block-scaled kinds) and
// are marked as such: no gemmlab probe has run them. The special rules (NaN encoding, overflow, the
// sign of zero), which the published vectors hardly reach, are Hopper's measured ones on every other
// generation, marked as assumed.
//
// Plain C++ (no CUDA header).
#pragma once
#include <optional>
#include <string>
#include <vector>

#include "reference/tc_block_scaled.hpp"
#include "reference/tc_model.hpp"

namespace gemmlab::tc {

enum class Generation { volta, ampere, ada, hopper, blackwell };
const char* to_string(Generation g);
const std::vector<Generation>& all_generations();
std::optional<Generation> parse_generation(const std::string& name);

// A GPU `--gpu` names: its name as the flag takes it, the marketing name, generation and compute
// capability (major * 10 + minor).
struct GpuName {
  const char* name;       // "v100", "a100", "a2", "a30", "ada", "l4", "l40s", "h100", "h200", "b200"
  const char* full_name;  // "NVIDIA A100"
  Generation generation;
  int cc;                 // 70, 80, 86, 89, 90, 100
};
const std::vector<GpuName>& gpu_names();

// A --gpu argument: a GPU name of gpu_names() or an architecture sm_70, sm_80, sm_86, sm_89, sm_90
// (sm_90a), sm_100 (sm_100a), case-insensitive. nullopt when it is neither; the message of
// gpu_name_help() lists what is.
std::optional<Generation> parse_gpu(const std::string& name);
std::string gpu_name_help();

// The generation gemmlab models for a device of compute capability cc (major * 10 + minor); nullopt
// when it has no validated model for it (Turing 7.5, Jetson 7.2/8.7, Blackwell 10.3/11.x/12.x, ...).
std::optional<Generation> generation_of_cc(int cc);
// The modelled generation nearest to cc (for a message, and for --gpu's suggestion): the newest one
// not newer than cc, else the oldest.
Generation nearest_generation(int cc);

// Where one generation's model of one instruction comes from.
enum class ModelSource {
  probed,      // inferred by gemmlab's probes on that GPU and validated on random tiles
  fitted,      // fitted to published hardware outputs (0 mismatches on every published vector)
  literature,  // taken from a paper's description; no gemmlab probe or published vector reached it
};
const char* to_string(ModelSource s);
struct ModelProvenance {
  ModelSource source = ModelSource::literature;
  std::string text;  // which probes, which vectors, which paper; what is assumed
};

// Whether generation g has instruction i (wgmma: Hopper only; fp8 mma.sync: Ada and newer; bf16 and
// tf32: Ampere and newer; Volta: wmma fp16 only; tcgen05: Blackwell only).
bool has_instruction(Generation g, Instruction i);
// The instructions g has, in every_instruction() order.
std::vector<Instruction> instructions_of(Generation g);
// g's model of i; nullopt when g does not have i.
std::optional<TcParams> generation_params(Generation g, Instruction i);
ModelProvenance provenance(Generation g, Instruction i);

// Blackwell's block-scaled kinds (tc_block_scaled.hpp): whether g has kind k (Blackwell only), the kinds
// g has, their provenance (literature: MMA-Sim's description, never run by a gemmlab probe), and the
// GPUs that have k as a --gpu list ("b200 (blackwell, sm_100)") for a message.
bool has_block_scaled(Generation g, BlockScaledKind k);
std::vector<BlockScaledKind> block_scaled_kinds_of(Generation g);
ModelProvenance provenance(Generation g, BlockScaledKind k);
std::string gpus_with(BlockScaledKind k);

// The instruction of g closest to i when g does not have i: the same input and output formats and
// the same k (mma.sync for a wgmma), else the same formats with another k, else nullopt. i itself
// when g has it.
std::optional<Instruction> closest_instruction(Generation g, Instruction i);

// The generation whose model gemmlab's prediction, explain and numerics records use in this process
// (Hopper unless set): the GPU a command runs on decides it (select_device_model), `--gpu` overrides.
Generation active_generation();
void set_active_generation(Generation g);
// The active generation's model of i (measured_hopper_params on Hopper). nullopt when the active
// generation lacks i.
std::optional<TcParams> model_params(Instruction i);
// Sets the active generation while alive, restores the previous one after.
class ScopedGeneration {
 public:
  explicit ScopedGeneration(Generation g) : prev_(active_generation()) { set_active_generation(g); }
  ~ScopedGeneration() { set_active_generation(prev_); }
  ScopedGeneration(const ScopedGeneration&) = delete;
  ScopedGeneration& operator=(const ScopedGeneration&) = delete;

 private:
  Generation prev_;
};

// The model a command uses on a device: the device's own generation, or the one `requested` names
// (a --gpu argument; empty: none). A device gemmlab has no model for gets none unless `requested`
// names one: then `ok` is false and `message` says so and what to do. `validated` is true only when
// the model is the device's own generation and that generation's models were probed or fitted.
struct DeviceModel {
  bool ok = false;
  Generation generation = Generation::hopper;
  bool validated = false;
  bool overridden = false;  // --gpu chose it
  std::string message;      // one line for stderr and the metadata ("model: ampere (fitted ...)")
};
DeviceModel select_device_model(int cc, const std::string& device_name, const std::string& requested = "");
// The model this process uses from now on (sets the active generation); what was applied last, for
// the metadata of what the process writes (a default Hopper model, said so, when none was applied).
void apply_model(const DeviceModel& m);
DeviceModel applied_model();
// Applies the device's own generation's model unless a model was applied already (by --gpu or an
// earlier device); a GPU gemmlab has no model for leaves the model as it is (Hopper's unless chosen),
// and the metadata's tc_model says so. For commands that judge but do not predict (gemmlab run).
void apply_device_default(int cc, const std::string& device_name);

}  // namespace gemmlab::tc
