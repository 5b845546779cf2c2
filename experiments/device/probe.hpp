// `gemmlab probe`: run the tensor-core probes (reference/tc_infer.hpp) through one mma.sync
// instruction at a time, infer each instruction's model parameters from the outcomes, and write a
// tidy CSV (instruction, feature, observed, evidence_inputs, evidence_output_bits).
#pragma once
#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "reference/tc_model.hpp"

namespace gemmlab {

// Runs every instruction the GPU supports (the others get a not_supported row), writes the CSV
// and its metadata atomically (report layer) and, if print_table, a readable table on stdout.
// With corpus, the adversarial corpus (reference/tc_corpus.hpp) runs too: its outcomes join the
// probes' in the inference (the special rules come from them), and two more CSVs go beside the
// findings: <out>_corpus.csv (tidy: one row per instruction x rule class, with the mismatch count)
// and <out>_corpus_outcomes.csv (one row per case). `inferred`, if given, receives each
// instruction's inferred parameters. `only`, if not empty, names the instructions to probe (the
// others get no row). Returns 0 on success, non-zero with a message on stderr when no GPU is usable
// or a write fails.
int run_probes(const std::string& out_csv_path, bool print_table, const std::string& command_line, bool corpus = false,
               std::vector<std::pair<std::string, tc::TcParams>>* inferred = nullptr,
               const std::vector<std::string>& only = {});

// Validates the inferred model of `instruction` (a name from tc::all_instructions(), e.g.
// "mma_m16n8k16_f16_f32") against the hardware on n_tiles random tiles drawn from several
// distributions (uniform, normal, wide exponent ranges, cancellation, subnormals), seeded by `seed`.
// Returns the number of output entries whose bits differ (0 = bit-exact), or -1 if the instruction
// is not supported here. `report`, if given, receives a one-line summary with the first mismatch.
long long validate_model(const std::string& instruction, long long n_tiles, std::uint64_t seed,
                         std::string* report = nullptr);

// The same validation with its counts per input distribution and per range C is drawn from
// (zero, unit, wide: probe.cu's random_tile says how each is drawn).
struct ValidationResult {
  struct Cell {
    long long tiles = 0, outputs = 0, mismatching_outputs = 0, mismatching_bits = 0;
    std::string first_mismatch;  // tile, entry, model and hardware bits, the row's inputs (hex floats)
  };
  std::string instruction, status;  // validated | not_supported
  std::string model;                // the inferred TcParams::describe()
  std::uint64_t seed = 0;
  long long tiles = 0, first_tile = 0;  // tiles [first_tile, first_tile + tiles) of the seed's sequence
  double seconds = 0;
  std::vector<std::string> distributions, c_ranges;
  std::vector<Cell> cells;  // [distribution * c_ranges.size() + c_range]
  long long mismatching_outputs() const;
  std::string summary() const;  // one line
};
// `inferred`: the instruction's parameters from run_probes (else the probes are run and inferred here).
// `first_tile`: validate tiles [first_tile, first_tile + n_tiles) of the seed's sequence.
ValidationResult validate_instruction(const std::string& instruction, long long n_tiles, std::uint64_t seed,
                                      const tc::TcParams* inferred = nullptr, long long first_tile = 0);

// Writes <findings stem>_validation.csv beside the findings CSV (tidy: one row per instruction x
// distribution x c_range, plus an all/all row per instruction) and its metadata; returns its path.
std::string write_validation(const std::string& findings_csv, const std::vector<ValidationResult>& results,
                             const std::string& command_line);

}  // namespace gemmlab
