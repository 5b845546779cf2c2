// The rows of one form problem (reference/gemm_form.hpp): every kernel of one distribution x size x seed x
// input format x form, as the run loop (run.cpp) hands them over. Each kernel that cannot take the form gets a
// not_applicable row saying why (it takes no such form, its epilogue's formats cannot hold the C0 or bias
// distribution, a part's rows are not a multiple it needs, the form's groups do not fit M); the others are
// measured against the exact reference of the form, computed once per (C0 format, bias format) by the device,
// and judged by the form's bound (form_bound_model).
//
// Plain C++: the GPU is reached through the Device interface (device/runner.hpp).
#pragma once
#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "experiments/device/runner.hpp"
#include "experiments/plan/plan.hpp"
#include "experiments/report/result.hpp"
#include "kernels/kernel.hpp"
#include "reference/distributions.hpp"

namespace gemmlab {

struct FormRowsContext {
  const RunPlan* plan = nullptr;
  Device* device = nullptr;
  int threads = 0;
  TimingOptions timing;
  std::string who;                                   // the log's prefix ("[gemmlab]", "[gemmlab gpu1]")
  std::function<bool()> should_stop;
  std::function<void(const std::string&)> log;
  std::function<void(const ResultRow&)> emit;        // journals the row
  // Seconds spent, by part: "inputs", "reference", "kernels", "kernel_setup", "statistics".
  std::function<void(const char*, double)> spent;
  // A measured row that left the GPU path (Measurement::host_path): noted and counted as the run loop does.
  std::function<void(ResultRow&, const Measurement&)> host_path;
};

// form_key: the canonical form text (not plain). M, N, K: the plan's size (one batch's; for groups M is the total).
void run_form_rows(const FormRowsContext& c, const Distribution& d, int M, int N, int K, std::uint64_t seed,
                   Format in, const std::string& form_key, const std::vector<const Kernel*>& kernels);

// The row of kernel k on a form before it ran: describe() with the form and the kernel's epilogue record.
ResultRow describe_form(const Kernel& k, const std::string& distribution, int M, int N, int K, std::uint64_t seed,
                        const GemmForm& f);

// Why kernel k cannot run form f at (M, N, K) with inputs `in` ("" when it can): the not_applicable note.
std::string form_not_applicable(const Kernel& k, const GemmForm& f, int M, int N, int K, Format in);

}  // namespace gemmlab
