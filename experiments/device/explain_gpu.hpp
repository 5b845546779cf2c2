// `gemmlab explain` on the GPU: the Oracle of reference/explain.hpp over any Kernel (built-in,
// plugin or Python callable), the report as JSON and CSV rows, and the numerics record as JSON (the
// Python package's gemmlab.explain passes the identified record back to gemmlab.judge with it).
//
// Plain C++ header (no CUDA types).
#pragma once
#include <chrono>
#include <memory>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "experiments/device/perturb.hpp"
#include "experiments/device/runner.hpp"
#include "kernels/kernel.hpp"
#include "reference/explain.hpp"
#include "experiments/report/numerics_json.hpp"

namespace gemmlab {

// Kernel k at (M, N, K) on GPU `device`, its operands kept on the GPU: a sparse call writes only the
// rows and columns that change (those set now, and those set by the previous call, which go back to
// zero), on the GPU from their descriptions (EntryRunner::set_lines). The caller has checked the
// size and the GPU.
class KernelOracle : public explain::Oracle {
 public:
  // `stream`, `foreign_streams`: as for EntryRunner (a Python callable's framework stream, nullptr:
  // the runner's own; a JAX callable launches on XLA's streams).
  // Throws std::invalid_argument for a quantized kernel whose recipe explain cannot take (explain_input_format).
  KernelOracle(const Kernel& k, int M, int N, int K, int device = 0, void* stream = nullptr,
               bool foreign_streams = false);
  ~KernelOracle() override;
  int M() const override { return M_; }
  int N() const override { return N_; }
  int K() const override { return K_; }
  // A quantized kernel's (Kernel::quantized): the format it is explained in (reference/quantized.hpp
  // explain_input_format), its probes written into the recipe's tensors at unit scale (EntryRunner).
  Format input() const override { return input_; }
  Format output() const override { return k_.numerics.output; }
  // A launch that fails throws explain::KernelFailed with the reason (explain::OracleLost where the
  // GPU's context is lost), so that no stage takes it for an answer.
  std::vector<std::uint64_t> run_sparse(const explain::SparseInputs& in, const std::vector<explain::Entry>& entries) override;
  std::vector<std::uint64_t> run_full(const Matrix& A, const Matrix& B, const std::vector<explain::Entry>& entries) override;
  // The operands made on the GPU (EntryRunner::generate_operands), only B and the entries' rows of A
  // coming back.
  std::vector<std::uint64_t> run_generated(const Distribution& d, std::uint64_t seed, int threads,
                                           const std::vector<explain::Entry>& entries, Matrix& A, Matrix& B) override;
  // default_perturbations() of this GPU (experiments/device/perturb.hpp). fewer_sms is refused for a
  // kernel on streams of its own (JAX) and for stream-K kernels (k_chunked: their blocks wait for each
  // other, all assumed resident).
  std::vector<explain::Perturbation> perturbations() override;
  std::string perturb(int i) override;

 private:
  template <class F>
  auto guarded(F&& f) -> decltype(f());
  const Kernel& k_;
  int M_, N_, K_;
  Format input_;
  int device_;
  bool foreign_streams_;
  std::unique_ptr<EntryRunner> runner_;
  std::unique_ptr<Perturber> perturber_;  // made on first use
  std::vector<Perturbation> offered_;
  std::vector<int> rows_set_, cols_set_;  // non-zero rows of A and columns of B on the GPU now
  std::vector<char> row_mark_, col_mark_;  // run_sparse's scratch: the lines of the call under way
  bool dense_ = false;                    // run_full left whole operands there
  // GEMMLAB_PROFILE_ORACLE=1: where the calls' time goes (writing the lines, the launch and the wait
  // for its entries, and the caller's own work between two calls), on stderr when the oracle ends.
  struct Profile {
    bool on = false;
    long long calls = 0, lines_written = 0, values_listed = 0;
    double lines = 0, launch = 0, between = 0;
    std::chrono::steady_clock::time_point last{};
    void enter();  // a call begins: the caller's time since the last one ended
    void leave(std::chrono::steady_clock::time_point start, std::chrono::steady_clock::time_point launched);
    void print(const char* kernel, const std::string& when) const;
  } profile_;
  // The launch and its entries, after the operands were set since t0 (the profile's two parts).
  std::vector<std::uint64_t> run_entries_since(std::chrono::steady_clock::time_point t0,
                                               const std::vector<explain::Entry>& entries);
};

// The registered kernels whose numerics gemmlab predicts, with their instruction's model, for
// "behaves exactly like".
std::vector<explain::KnownKernel> known_kernels(const std::vector<const Kernel*>& kernels);

std::vector<explain::KnownKernel> known_kernels_from_json(const nlohmann::json& j);  // {name: numerics}

nlohmann::json report_to_json(const explain::Report& r);

// The CSV of `gemmlab explain` and gemmlab.explain: one row per distribution compared (one row
// with an empty distribution when the kernel was not identified before the comparison).
const std::vector<std::string>& explain_columns();
std::vector<std::vector<std::string>> explain_rows(const std::string& kernel, const explain::Report& r, int M, int N,
                                                   int K, std::uint64_t seed);
// What decides the kernel's bits, as one string: two kernels with the same signature compute the same
// bits on every input (the same tree, operand conversions and node models).
std::string numerics_signature(const explain::Report& r);

}  // namespace gemmlab
