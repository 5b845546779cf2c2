// `gemmlab tc-eval`: the inferred tensor-core model on your own inputs (experiments/engine/tc_eval.hpp).
//
// Exit codes: 0 when every case was evaluated and every observed D (if any) matched; 5 when some
// observed D differed from the model (the output CSV's match column says which); 2 for bad input.
#include <cstdio>
#include <memory>

#include "experiments/cli/commands.hpp"
#include "experiments/engine/tc_eval.hpp"
#include "experiments/plan/plan.hpp"

namespace gemmlab::cli {

Command add_tc_eval(CLI::App& app, const std::string& command_line) {
  auto* cmd = app.add_subcommand(
      "tc-eval", "evaluate gemmlab's tensor-core model on your inputs: one instruction, A/B/C bits in, D bits out");
  struct Options {
    std::string instruction, a, b, c, d, in, out, write_cases, gpu;
    std::string scale_a, scale_b, a_format, b_format, block, scale_format;  // the block-scaled kinds
    bool list = false, explain = false;
  };
  auto o = std::make_shared<Options>();
  cmd->add_option("-i,--instruction", o->instruction,
                  "instruction, e.g. mma_m16n8k16_f16_f32 (`gemmlab tc-eval --list` names them)");
  cmd->add_option("--a", o->a,
                  "row of A: k values separated by spaces, quoted (0x bit patterns in the input format, or exact numbers; "
                  "tf32: any fp32 bits)");
  cmd->add_option("--b", o->b, "column of B: k values, as --a");
  cmd->add_option("--c", o->c, "C (output format; default +0)");
  cmd->add_option("--d", o->d, "observed D to compare bit for bit with the model (output format)");
  cmd->add_option("--scale-a", o->scale_a,
                  "block-scaled kinds (tcgen05_mxf8f6f4, tcgen05_mxf4, tcgen05_mxf4nvf4; --gpu b200): A's scales, one per "
                  "--block of k, separated by spaces (0x bit patterns of --scale-format, or exact numbers)");
  cmd->add_option("--scale-b", o->scale_b, "block-scaled kinds: B's scales, as --scale-a");
  cmd->add_option("--a-format", o->a_format,
                  "block-scaled kinds: A's element format: e4m3 (default), e5m2, e2m3, e3m2, e2m1 for tcgen05_mxf8f6f4; "
                  "e2m1 for tcgen05_mxf4 and tcgen05_mxf4nvf4");
  cmd->add_option("--b-format", o->b_format, "block-scaled kinds: B's element format, as --a-format");
  cmd->add_option("--block", o->block,
                  "block-scaled kinds: products per scale, 16 or 32 (default 32; tcgen05_mxf4nvf4: 16)");
  cmd->add_option("--scale-format", o->scale_format,
                  "block-scaled kinds: the scales' format, ue8m0 (powers of two) or ue4m3 (default ue8m0; tcgen05_mxf4nvf4 "
                  "at --block 16: ue4m3)");
  cmd->add_option("--in", o->in,
                  "CSV of cases: columns instruction,a,b,c[,d] (a, b: k values separated by spaces), and for block-scaled "
                  "kinds scale_a,scale_b[,a_format,b_format,block,scale_format]; other columns pass through");
  cmd->add_option("-o,--out", o->out, "with --in: the CSV to write (adds d_model, d_model_value, match)");
  cmd->add_flag("--explain", o->explain,
                "say which rule of the model decided D and the intermediate values (aligned terms, truncated sum, "
                "normalisation, rounding); with --in, as the columns rule and explanation");
  cmd->add_flag("--list", o->list,
                "list the instructions and the model of each (with --gpu, that generation's; --gpu all: every "
                "generation's; with -o, as a CSV)");
  cmd->add_option("--gpu", o->gpu,
                  "the GPU whose model to use: " + tc::gpu_name_help() + "; default: hopper, said on stderr");
  cmd->add_option("--write-cases", o->write_cases,
                  "with -i and -o: write the instruction's probes or adversarial corpus (probes|corpus) as a CSV of "
                  "cases for --in (bit patterns, with case id and class)");
  const auto warn_commas = [](bool used) {
    if (used)
      std::fprintf(stderr,
                   "[gemmlab] warning: commas between values are deprecated and will be refused in a later version; "
                   "separate values with spaces, on the command line (quoted) as in the CSV\n");
  };
  return {cmd, [o, command_line, warn_commas] {
            // The generation whose model is used: --gpu, else Hopper's, said once on stderr.
            std::vector<tc::Generation> gens;
            if (o->gpu == "all") {
              if (!o->list) throw UsageError("tc-eval --gpu all goes with --list; evaluate cases under one GPU's model");
              gens = tc::all_generations();
            } else if (!o->gpu.empty()) {
              const std::optional<tc::Generation> g = tc::parse_gpu(o->gpu);
              if (!g) throw UsageError("--gpu " + o->gpu + ": not a GPU gemmlab models; use one of " + tc::gpu_name_help());
              gens = {*g};
            } else {
              gens = {tc::Generation::hopper};
              if (!o->list && o->write_cases.empty())
                std::fprintf(stderr,
                             "[gemmlab] tc-eval: no --gpu given: using hopper's model (H100, H200); --gpu NAME picks "
                             "another GPU's\n");
            }
            const tc::Generation gen = gens.front();
            if (o->list) {
              if (!o->out.empty()) {
                require_csv(o->out);
                write_tc_models(gens, o->out, command_line);
                std::fprintf(stderr, "[gemmlab] tc-eval: wrote the models of %zu generation(s) to %s\n", gens.size(),
                             o->out.c_str());
                return 0;
              }
              for (tc::Generation g : gens)
                for (tc::Instruction i : tc::instructions_of(g)) {
                  const tc::InstructionInfo& ii = tc::info(i);
                  std::string in = info(ii.input).name;
                  if (ii.input_b) in += std::string(" x ") + info(*ii.input_b).name;
                  const tc::ModelProvenance prov = tc::provenance(g, i);
                  std::printf("%-9s %-29s k=%-2d %s -> %s  %s\n    %s\n", tc::to_string(g), ii.name, ii.k, in.c_str(),
                              info(ii.output).name, tc::generation_params(g, i)->describe().c_str(), prov.text.c_str());
                }
              for (tc::Generation g : gens)
                for (tc::BlockScaledKind k : tc::block_scaled_kinds_of(g)) {
                  const tc::BlockScaledInfo& bi = tc::info(k);
                  std::string elements;
                  for (Format f : tc::element_formats(k)) elements += (elements.empty() ? "" : "|") + std::string(info(f).name);
                  std::printf("%-9s %-29s k=%-2d %s -> fp32  scales %s; %s\n    %s\n", tc::to_string(g), bi.name,
                              bi.k, elements.c_str(), tc::scales_help(k).c_str(), tc::describe(k).c_str(),
                              tc::provenance(g, k).text.c_str());
                }
              return 0;
            }
            if (!o->write_cases.empty()) {
              if (tc::parse_block_scaled_kind(o->instruction))
                throw UsageError("tc-eval --write-cases: gemmlab has no probes or corpus for " + o->instruction +
                                 " (a model from the literature); write its cases by hand (--in's columns)");
              const auto ins = tc::parse_instruction(o->instruction);
              if (!ins) throw UsageError("tc-eval --write-cases needs -i INSTRUCTION (`gemmlab tc-eval --list` names them)");
              if (o->out.empty()) throw UsageError("tc-eval --write-cases needs -o OUT.csv");
              require_csv(o->out);
              const long long n = write_tc_cases(*ins, o->write_cases, o->out, command_line);
              std::fprintf(stderr, "[gemmlab] tc-eval: wrote %lld %s cases of %s to %s\n", n, o->write_cases.c_str(),
                           tc::info(*ins).name, o->out.c_str());
              return 0;
            }
            const bool scaled_options = !o->scale_a.empty() || !o->scale_b.empty() || !o->a_format.empty() ||
                                        !o->b_format.empty() || !o->block.empty() || !o->scale_format.empty();
            if (!o->in.empty()) {
              if (!o->instruction.empty() || !o->a.empty() || !o->b.empty() || scaled_options)
                throw UsageError("tc-eval: give either --in FILE (with -o) or one case (-i, --a, --b), not both");
              if (o->out.empty()) throw UsageError("tc-eval --in needs -o OUT.csv for the results");
              require_csv(o->out);
              const TcEvalSummary s = tc_eval_file(o->in, o->out, command_line, o->explain, gen);
              warn_commas(s.used_commas);
              std::fprintf(stderr, "[gemmlab] tc-eval: %lld cases, %lld with an observed D, %lld differ from the model; wrote %s\n",
                           s.cases, s.compared, s.mismatches, o->out.c_str());
              return s.mismatches ? 5 : 0;
            }
            if (o->instruction.empty() || o->a.empty() || o->b.empty())
              throw UsageError("tc-eval: give -i INSTRUCTION --a VALUES --b VALUES [--c C] [--d D], or --in FILE -o OUT");
            if (const auto kind = tc::parse_block_scaled_kind(o->instruction)) {
              // A model from the literature on Blackwell only: refused elsewhere before its values are read.
              require_block_scaled(*kind, gen);
              const TcBlockScaledCase c = parse_tc_block_scaled_case({o->instruction, o->a, o->b, o->scale_a, o->scale_b,
                                                                      o->a_format, o->b_format, o->block,
                                                                      o->scale_format, o->c, o->d});
              warn_commas(c.used_commas);
              const TcBlockScaledResult r = evaluate_tc_block_scaled_case(c, o->explain, gen);
              std::printf("%s %.17g\n", tc_hex(Format::fp32, r.d_bits).c_str(), r.d_value);
              if (o->explain)
                for (const std::string& line : explain_tc_block_scaled_case(c, r, gen)) std::printf("  %s\n", line.c_str());
              std::fprintf(stderr,
                           "[gemmlab] %s on %s: a model from the literature (MMA-Sim, arXiv 2511.10909) that no gemmlab "
                           "probe has run: %s\n",
                           tc::info(*kind).name, tc::to_string(gen), describe_tc_block_scaled_case(c).c_str());
              if (r.match && !*r.match) {
                std::fprintf(stderr, "[gemmlab] the observed D %s differs from the model's %s\n",
                             tc_hex(Format::fp32, *c.d_observed).c_str(), tc_hex(Format::fp32, r.d_bits).c_str());
                return 5;
              }
              return 0;
            }
            if (scaled_options)
              throw UsageError("tc-eval: --scale-a, --scale-b, --a-format, --b-format, --block and --scale-format go with "
                               "the block-scaled kinds (tcgen05_mxf8f6f4, tcgen05_mxf4, tcgen05_mxf4nvf4), not " +
                               o->instruction);
            const TcEvalCase c = parse_tc_case(o->instruction, o->a, o->b, o->c, o->d);
            warn_commas(c.used_commas);
            const TcEvalResult r = evaluate_tc_case(c, o->explain, gen);
            const tc::InstructionInfo& ii = tc::info(c.instruction);
            std::printf("%s %.17g\n", tc_hex(ii.output, r.d_bits).c_str(), r.d_value);
            if (o->explain)
              for (const std::string& line : explain_tc_case(c, r, gen)) std::printf("  %s\n", line.c_str());
            std::fprintf(stderr, "[gemmlab] %s model on %s (%s): %s\n", ii.name, tc::to_string(gen),
                         tc::provenance(gen, c.instruction).text.c_str(), tc_eval_params(c.instruction, gen).describe().c_str());
            if (r.match && !*r.match) {
              std::fprintf(stderr, "[gemmlab] the observed D %s differs from the model's %s\n",
                           tc_hex(ii.output, *c.d_observed).c_str(), tc_hex(ii.output, r.d_bits).c_str());
              return 5;
            }
            return 0;
          }};
}

}  // namespace gemmlab::cli
