// What a `gemmlab run` will do, from command-line flags or a suite file (TOML). Plain C++: parsed
// and checked without a GPU. Kernel names are resolved against the registry by the caller.
#pragma once
#include <cstdint>
#include <optional>
#include <stdexcept>
#include <string>
#include <vector>

#include "experiments/report/stopping.hpp"

namespace gemmlab {

// A mistake in what the user asked for: the message says what was wrong and what to do.
struct UsageError : std::runtime_error {
  using std::runtime_error::runtime_error;
};

struct Size {
  int M = 0, N = 0, K = 0;
  std::string str() const { return std::to_string(M) + "x" + std::to_string(N) + "x" + std::to_string(K); }
};

// A suite's `[invariance]` table: `gemmlab run` then measures determinism and batch invariance of
// each kernel at each size, distribution and seed (experiments/engine/invariance.hpp), as
// `gemmlab invariance` does, instead of the accuracy rows. Sweeps as that command takes them:
// "default" or whole numbers.
struct InvariancePlan {
  std::vector<std::string> m = {"default"}, n, k_tails;
  std::vector<std::string> settings = {"default"};  // library settings (experiments/device/library_variants.hpp)
  int repeats = 3;
  int reveal_k_max = 256;
  bool cost = true;
};

struct RunPlan {
  std::string name = "run";                        // suite name, used in the default output name
  std::vector<std::string> kernels = {"all"};      // names, "all", or "family:<family>"; "all" leaves out
                                                   // the kernels that say why (Kernel::left_out_of_all)
  std::vector<std::string> exclude;                // names or "family:<family>" taken out of `kernels`
  std::vector<std::string> distributions = {"all"};
  std::vector<Size> sizes = {{4096, 4096, 4096}};
  std::vector<std::uint64_t> seeds = {1};
  // The timed launches of each row (experiments/report/stopping.hpp): `reps` > 0 is a fixed count;
  // 0 (the default) launches until the median's 95% confidence interval is within +-max_noise of it,
  // after min_samples launches and min_time_ms of their time, or until max_time_ms of wall clock.
  int reps = 0;
  int warmup = 1;  // untimed launches first (nvbench takes one)
  double max_noise = StoppingRule{}.max_noise;
  int min_samples = StoppingRule{}.min_samples;
  double min_time_ms = StoppingRule{}.min_time_ms;
  double max_time_ms = StoppingRule{}.max_time_ms;
  StoppingRule stopping() const { return {reps, max_noise, min_samples, min_time_ms, max_time_ms}; }
  std::string reference = "auto";                 // auto | gpu | cpu | exact | mpfr (device/runner.hpp ReferenceOptions)
  int spot_checks = 16;                            // MPFR-checked entries per reference in auto mode
  std::vector<std::string> plugins;                // shared libraries whose kernels join the registry
                                                   // (experiments/engine/plugin.hpp), loaded before
                                                   // `kernels` is resolved
  std::optional<InvariancePlan> invariance;        // the suite's [invariance] table, if any
  // The problem beyond C = A B each kernel runs (reference/gemm_form.hpp): form texts such as "plain" or
  // "alpha=0.5,beta=2,c0=normal_0_1", or "default": each kernel's own form (Kernel::form; plain for most). A
  // kernel that cannot take a form gets a not_applicable row saying why.
  std::vector<std::string> forms = {"default"};
};

// "4096" -> 4096^3; "MxNxK" -> (M, N, K). Throws UsageError.
Size parse_size(const std::string& s);

// Reads a suite file; unknown keys, wrong types and bad values are UsageErrors naming the file,
// the key and what is expected. Keys: name, description, kernels, exclude (names or family:<family>
// taken out of kernels; an unknown one is refused when the plan is resolved), distributions, sizes ([[M,N,K],..]
// or [N,..]), seeds, reps (a fixed count; left out: stop on noise), warmup, max_noise, min_samples,
// min_time_ms, max_time_ms (RunPlan), reference, spot_checks, plugins (["lib.so", ..]: a relative path
// is relative to the suite file's folder, so a suite means the same from any working directory),
// forms (["default", "alpha=0.5,beta=2,c0=normal_0_1", ..]: see RunPlan::forms),
// and the table [invariance] (keys m, n, k_tails: arrays of whole numbers or "default"; settings:
// array of strings; repeats, reveal_k_max: integers; cost: boolean).
RunPlan load_suite(const std::string& path);

// Finds a suite by path, or by name in ./experiments/suites and the source tree's. Throws UsageError.
std::string find_suite(const std::string& name_or_path);
std::vector<std::string> list_suites();

// Checks the numbers in a plan (positive sizes, reps >= 1, reference mode known) and its forms. Throws
// UsageError.
void validate_numbers(const RunPlan& p);

}  // namespace gemmlab
