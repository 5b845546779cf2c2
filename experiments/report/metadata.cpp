#include "experiments/report/metadata.hpp"

#include "reference/tc_gpus.hpp"

#include <unistd.h>

#include <ctime>
#include <filesystem>

#include "experiments/report/files.hpp"

namespace gemmlab {

std::string utc_now(const char* fmt) {
  std::time_t t = std::time(nullptr);
  char buf[64];
  std::tm tm{};
  gmtime_r(&t, &tm);
  std::strftime(buf, sizeof buf, fmt, &tm);
  return buf;
}

std::string hostname() {
  char buf[256] = {0};
  gethostname(buf, sizeof buf - 1);
  return buf;
}

nlohmann::json base_metadata(const std::string& what, const std::string& command_line, const std::string& csv) {
  nlohmann::json meta;
  meta["gemmlab_version"] = gemmlab_version();
  meta["git_commit"] = git_commit();
  meta["produced_by"] = what;
  meta["command_line"] = command_line;
  meta["date_utc"] = utc_now();
  meta["host"] = hostname();
  meta["csv"] = std::filesystem::path(csv).filename().string();
  return meta;
}

void add_device_metadata(nlohmann::json& meta, const DeviceInfo& dev, const SoftwareVersions& sw, int sm_clock_mhz) {
  if (!dev.present) {
    meta["gpu"] = {{"name", "none"}, {"why_absent", dev.why_absent}};
    return;
  }
  meta["gpu"] = {{"name", dev.name},
                 {"uuid", dev.uuid},
                 {"index", dev.device},
                 {"compute_capability", std::to_string(dev.cc_major) + "." + std::to_string(dev.cc_minor)},
                 {"sm_count", dev.sm_count},
                 {"l2_bytes", dev.l2_bytes},
                 {"memory_bytes", dev.global_mem_bytes},
                 {"max_sm_clock_mhz", sw.max_sm_clock_mhz},
                 {"sm_clock_mhz_start", sm_clock_mhz}};
  meta["software"] = {{"driver", sw.driver},
                      {"cuda_driver_api", sw.cuda_driver_api},
                      {"cuda_runtime", sw.cuda_runtime},
                      {"cublas", sw.cublas}};
  // The tensor-core model this process's predictions, explanations and tree bounds use (tc_gpus.hpp).
  const tc::DeviceModel m = tc::applied_model();
  meta["tc_model"] = {{"generation", tc::to_string(m.generation)},
                      {"validated", m.validated},
                      {"chosen_by", m.overridden ? "--gpu" : "the GPU"},
                      {"message", m.message}};
}

std::string metadata_path(const std::string& csv_path) {
  const std::string stem = csv_path.size() > 4 && csv_path.substr(csv_path.size() - 4) == ".csv"
                               ? csv_path.substr(0, csv_path.size() - 4)
                               : csv_path;
  return stem + ".meta.json";
}

void write_table(const std::string& csv_path, const std::vector<std::string>& columns,
                 const std::vector<std::vector<std::string>>& rows, nlohmann::json meta) {
  CsvWriter csv(csv_path, columns);
  for (const auto& r : rows) csv.row(r);
  meta["columns"] = columns;
  meta["rows"] = rows.size();
  AtomicFile mf(metadata_path(csv_path));
  mf.stream() << meta.dump(2) << "\n";
  csv.commit();
  mf.commit();
}

}  // namespace gemmlab
