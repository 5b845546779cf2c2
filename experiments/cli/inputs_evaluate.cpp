// `gemmlab inputs` and `gemmlab evaluate`: judge a kernel gemmlab does not build. `inputs` writes the
// A and B `gemmlab run` would use; the user runs their kernel on them and saves C as .npy;
// `evaluate` writes the same CSV row and metadata `run` writes for its own kernels.
//
// Exit codes as for every subcommand (main.cpp): 0 when the row was written, whatever its status
// (failed_bound included, as `gemmlab run`); 2 for bad input, with nothing written. NaN or infinity
// in C is bad input (exit 2, the message counts them) unless --allow-nonfinite, which writes the
// row with them counted (nonfinite, unwritten) and status failed_bound, exit 0.
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <memory>

#include "experiments/cli/commands.hpp"
#include "experiments/engine/evaluate.hpp"
#include "experiments/engine/inputs.hpp"
#include "experiments/engine/session.hpp"
#include "experiments/plan/plan.hpp"
#include "experiments/report/files.hpp"
#include "experiments/report/metadata.hpp"
#include "experiments/report/npy.hpp"

namespace fs = std::filesystem;

namespace gemmlab::cli {

namespace {

std::string format_names() {
  std::string s;
  for (Format f : all_formats()) s += std::string(s.empty() ? "" : ", ") + info(f).name;
  return s;
}

Format format_arg(const std::string& flag, const std::string& v) {
  if (auto f = parse_format(v)) return *f;
  throw UsageError(flag + " '" + v + "' is not a format; valid: " + format_names());
}

}  // namespace

Command add_inputs(CLI::App& app, const std::string& command_line) {
  auto* cmd = app.add_subcommand("inputs", "write the A and B gemmlab run would use (.npy) for a kernel of your own");
  struct Options {
    InputsSpec spec;
    std::string dist, size, seed = "1", format = "fp32", dir;
    bool force = false;
    int threads = 0;
  };
  auto o = std::make_shared<Options>();
  cmd->add_option("-d,--dist", o->dist, "distribution, e.g. normal_0_1 (`gemmlab list` shows them)")->required();
  cmd->add_option("-s,--size", o->size, "N (for N^3) or MxNxK")->required();
  cmd->add_option("--seed", o->seed, "seed (non-negative integer)");
  cmd->add_option("--format", o->format, "input format of your kernel: " + format_names());
  cmd->add_option("-o,--out", o->dir, "folder to write A.npy, B.npy and inputs.json into")->required();
  cmd->add_flag("--force", o->force, "overwrite the files of an existing non-empty folder");
  auto* threads = cmd->add_option("--threads", o->threads, "CPU threads, at least 1 (default: all)");
  return {cmd, [o, threads, command_line] {
            require_threads(threads, o->threads);
            o->spec.distribution = o->dist;
            const Size z = parse_size(o->size);
            o->spec.M = z.M, o->spec.N = z.N, o->spec.K = z.K;
            o->spec.seed = parse_seeds({o->seed}).at(0);
            o->spec.format = format_arg("--format", o->format);
            const nlohmann::json j = write_inputs(o->spec, o->dir, o->force, o->threads, command_line);
            std::string shown = o->dir;  // "in/" is shown "in/{A.npy,...}", not "in//{...}"
            while (shown.size() > 1 && shown.back() == '/') shown.pop_back();
            std::fprintf(stderr, "[gemmlab] wrote %s/{A.npy,B.npy,inputs.json}: %s %s seed %s, %s\n", shown.c_str(),
                         j["distribution"].get<std::string>().c_str(), z.str().c_str(), o->seed.c_str(),
                         info(o->spec.format).name);
            std::printf("%s\n", o->dir.c_str());
            return 0;
          }};
}

Command add_evaluate(CLI::App& app, const std::string& command_line) {
  auto* cmd = app.add_subcommand(
      "evaluate", "judge your kernel's C (.npy) on a `gemmlab inputs` folder: the CSV row and metadata of gemmlab run");
  struct Options {
    std::string dir, c_path, name, family = "user", out, note;
    std::string output_format = "fp32", accumulation = "unknown", compute_format, accumulator_format;
    int promotion_interval_k = 0, spot_checks = 16, threads = 0, reps = -1;
    double time_ms = -1;
    bool allow_nonfinite = false, force = false;
  };
  auto o = std::make_shared<Options>();
  cmd->add_option("dir", o->dir, "folder written by `gemmlab inputs`")->required();
  cmd->add_option("--output", o->c_path, "your kernel's C = A B as .npy, (M, N), in the output format's dtype")->required();
  cmd->add_option("--name", o->name, "your kernel's name (the CSV kernel column)")->required();
  cmd->add_option("--family", o->family, "CSV family column: user (default) or external (a library or framework)");
  cmd->add_option("--output-format", o->output_format, "format of C: " + format_names() + " (default fp32)");
  cmd->add_option("--accumulation", o->accumulation,
                  "where your kernel accumulates: fma, in_mma, in_wgmma, external, promoted, library, unknown "
                  "(default: no bound is claimed)");
  cmd->add_option("--compute-format", o->compute_format, "format the multiplier sees (default: the input format)");
  cmd->add_option("--accumulator-format", o->accumulator_format, "format of the running sum (default fp32; fp64 for fp64 output)");
  cmd->add_option("--promotion-interval-k", o->promotion_interval_k, "promoted: elements of K per fp32 addition");
  auto* time_ms = cmd->add_option("--time-ms", o->time_ms, "your kernel's median time in ms (fills time_ms_median and tflops)");
  auto* reps = cmd->add_option("--reps", o->reps, "repetitions behind --time-ms");
  cmd->add_option("--note", o->note, "text for the row's note");
  cmd->add_flag("--allow-nonfinite", o->allow_nonfinite,
                "count NaN/Inf in C in the row (status failed_bound) instead of refusing C");
  cmd->add_option("-o,--out", o->out, "output CSV (default DIR/<name>.csv); metadata beside it");
  cmd->add_flag("--force", o->force, "replace an existing output CSV and its metadata");
  cmd->add_option("--spot-checks", o->spot_checks, "entries of the reference checked against MPFR (default 16, as run)");
  auto* threads =
      cmd->add_option("--threads", o->threads, "CPU threads for the reference and statistics, at least 1 (default: all)");
  return {cmd, [o, threads, time_ms, reps, command_line] {
            // Everything is checked before the reference is computed and before anything is written.
            require_threads(threads, o->threads);
            const InputsFolder in = read_inputs(o->dir);
            for (const auto& w : in.warnings) std::fprintf(stderr, "gemmlab: warning: %s\n", w.c_str());
            if (o->name.empty() || o->name.find_first_of(",\"\n") != std::string::npos)
              throw UsageError("--name must be a non-empty name without commas, quotes or newlines");
            if (o->family != "user" && o->family != "external")
              throw UsageError("--family must be user or external, got '" + o->family + "'");
            const Format out_format = format_arg("--output-format", o->output_format);
            const auto acc = parse_accumulation(o->accumulation);
            if (!acc)
              throw UsageError("--accumulation '" + o->accumulation +
                               "' is not known; valid: fma, in_mma, in_wgmma, external, promoted, library, unknown");
            std::optional<Format> compute, accumulator;
            if (!o->compute_format.empty()) compute = format_arg("--compute-format", o->compute_format);
            if (!o->accumulator_format.empty()) accumulator = format_arg("--accumulator-format", o->accumulator_format);
            Declared d;
            d.numerics = declared_numerics(in.spec.format, out_format, *acc, compute, accumulator, o->promotion_interval_k);
            d.kernel = o->name;
            d.family = o->family;
            d.distribution = in.spec.distribution;
            d.seed = in.spec.seed;
            d.note = o->note;
            if (time_ms->count() > 0) {  // given: any value but a positive time is refused (-1 too)
              if (!(std::isfinite(o->time_ms) && o->time_ms > 0))
                throw UsageError("--time-ms must be a positive number of milliseconds");
              d.time_ms = o->time_ms;
            }
            if (reps->count() > 0) {
              if (o->reps < 1) throw UsageError("--reps must be at least 1");
              if (time_ms->count() == 0)
                throw UsageError("--reps counts the repetitions behind --time-ms: give --time-ms too (or leave out --reps)");
              d.reps = o->reps;
            }
            if (o->spot_checks < 0) throw UsageError("--spot-checks must be >= 0");

            const NpyArray c = read_npy(o->c_path);
            if (c.rows != in.spec.M || c.cols != in.spec.N)
              throw UsageError(o->c_path + " is " + std::to_string(c.rows) + "x" + std::to_string(c.cols) + " but A B is " +
                               std::to_string(in.spec.M) + "x" + std::to_string(in.spec.N) + " (inputs " +
                               Size{in.spec.M, in.spec.N, in.spec.K}.str() + " in " + o->dir + ")");
            if (std::string why = check_output_dtype(c.dtype, out_format); !why.empty()) throw UsageError(o->c_path + ": " + why);
            if (std::string why = check_output_values(c.v, c.cols, out_format, o->allow_nonfinite); !why.empty())
              throw UsageError(o->c_path + ": " + why);

            const std::string csv = o->out.empty() ? (fs::path(o->dir) / (o->name + ".csv")).string() : o->out;
            require_csv(csv);
            check_writable(csv);
            engine::check_no_overwrite(engine::OutputPaths::for_csv(csv), o->force);  // as run and merge

            std::string label;
            const GemmReference ref =
                evaluation_reference(in.A, in.B, out_format, o->spot_checks, in.spec.seed, o->threads, label);
            const ResultRow row = evaluate(in.A, in.B, c.v, d, ref, label, o->threads);

            nlohmann::json meta = base_metadata("evaluate", command_line, csv);
            meta["inputs"] = in.json;
            meta["inputs_folder"] = o->dir;
            meta["output_file"] = {{"path", o->c_path}, {"dtype", c.dtype}, {"sha256", sha256_file(o->c_path)}};
            meta["declared_numerics"] = d.numerics.describe();
            meta["warnings"] = in.warnings;
            meta["reference_seconds"] = ref.seconds;
            meta["columns"] = result_columns();
            meta["rows"] = 1;
            CsvWriter w(csv, result_columns());
            w.row(to_fields(row));
            AtomicFile mf(metadata_path(csv));
            mf.stream() << meta.dump(2) << "\n";
            w.commit();
            mf.commit();
            if (row.stats)
              std::fprintf(stderr, "[gemmlab] %s: bias %+.3e (%.3g u)  spread %.3e  componentwise %.3e (bound %.3e)  %s%s%s\n",
                           row.kernel.c_str(), row.stats->rel_mean, row.stats->rel_mean_u, row.stats->rel_std,
                           row.stats->componentwise, row.stats->gamma_bound, to_string(row.status),
                           row.note.empty() ? "" : ": ", row.note.c_str());
            else
              std::fprintf(stderr, "[gemmlab] %s: %s: %s\n", row.kernel.c_str(), to_string(row.status), row.note.c_str());
            std::fprintf(stderr, "[gemmlab] wrote %s and %s\n", csv.c_str(), metadata_path(csv).c_str());
            std::printf("%s\n", csv.c_str());
            return 0;
          }};
}

}  // namespace gemmlab::cli
