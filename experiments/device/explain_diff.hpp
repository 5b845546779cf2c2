// `gemmlab explain --diff A B` and gemmlab.explain_diff: the diff of two kernels' numerics
// (reference/explain/diff.hpp) as JSON (the metadata's "diff", gemmlab.explain_diff's report) and as
// CSV rows, one per difference.
//
// Plain C++ header (no CUDA types).
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "reference/explain/diff.hpp"

namespace gemmlab {

// The whole diff: verdict, differences with their witnesses (entry, inputs in words and as the
// witness's row of A and column of B, both kernels' bits and predictions), the aspects found the same
// and those not compared, the full-size confirmation per distribution, and each kernel's explain
// report (report_to_json).
nlohmann::json diff_to_json(const explain::DiffReport& d);

// The CSV of `gemmlab explain --diff`: one row per difference, or one row with aspect `none` when
// there is none (bit-identical by construction, or an incomplete comparison that found nothing).
const std::vector<std::string>& explain_diff_columns();
std::vector<std::vector<std::string>> explain_diff_rows(const explain::DiffReport& d, std::uint64_t seed);

}  // namespace gemmlab
