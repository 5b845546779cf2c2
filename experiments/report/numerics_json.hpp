// A numerics record (reference/numerics.hpp) as JSON: the form `gemmlab explain` writes a kernel's
// identified numerics in (its report's "numerics"), `gemmlab port` and gemmlab.explain's callers read
// back, and `gemmlab run --numerics` takes. Plain C++ (no CUDA).
#pragma once
#include <nlohmann/json.hpp>

#include "reference/numerics.hpp"

namespace gemmlab {

nlohmann::json numerics_to_json(const Numerics& n);
// Throws std::invalid_argument naming the field that is missing or unknown.
Numerics numerics_from_json(const nlohmann::json& j);

}  // namespace gemmlab
