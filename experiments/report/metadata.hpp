// The metadata every result file carries beside it (<file>.meta.json): which gemmlab (version,
// git commit), which command, when, on which host, GPU, driver and libraries. One builder for
// `run`, `probe`, `order`, `tune`, `predict` and every benchmark, so no result is published
// without saying how it was made.
#pragma once
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "experiments/device/runner.hpp"

namespace gemmlab {

// Both written at build time (cmake/GitVersion.cmake); the version is pyproject.toml's, the project's
// one version string (`gemmlab --version`, gemmlab.__version__, the metadata's gemmlab_version).
const char* git_commit();
const char* gemmlab_version();

std::string utc_now(const char* strftime_format = "%Y-%m-%dT%H:%M:%SZ");
std::string hostname();

// The common fields; `what` names the producing command ("run", "probe", ...), `csv` the file.
nlohmann::json base_metadata(const std::string& what, const std::string& command_line, const std::string& csv);
// Adds "gpu" and "software" from the device (no-op fields when absent).
void add_device_metadata(nlohmann::json& meta, const DeviceInfo& dev, const SoftwareVersions& sw, int sm_clock_mhz);

// <path without .csv>.meta.json
std::string metadata_path(const std::string& csv_path);

// Writes a tidy CSV (header `columns`, then `rows`) and its metadata, both atomically (written to
// .partial files and renamed only when complete); `meta` gets "columns" and "rows".
void write_table(const std::string& csv_path, const std::vector<std::string>& columns,
                 const std::vector<std::vector<std::string>>& rows, nlohmann::json meta);

}  // namespace gemmlab
