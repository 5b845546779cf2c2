// A small plan, columns and deterministic fake rows for the engine's CPU tests: no GPU, no
// registry. A fake row's numbers depend only on its key, as a real row's statistics do.
#pragma once
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <sstream>
#include <stdexcept>
#include <string>
#include <vector>

#include "experiments/engine/files.hpp"
#include "experiments/engine/journal.hpp"
#include "experiments/engine/plan_rows.hpp"
#include "experiments/engine/run.hpp"
#include "experiments/device/runner.hpp"

namespace engine_test {

// What a fake Hopper GPU of the engine's CPU tests reports: an H100-like device under `uuid`.
inline gemmlab::DeviceInfo fake_gpu_info(const std::string& uuid, int index = 0) {
  gemmlab::DeviceInfo d;
  d.present = true;
  d.device = index;
  d.name = "Fake GPU";
  d.uuid = uuid;
  d.cc_major = 9;
  d.sm_count = 132;
  d.l2_bytes = 50 << 20;
  d.global_mem_bytes = 80ll << 30;
  return d;
}

namespace fs = std::filesystem;
using namespace gemmlab::engine;

// A fresh folder per test, removed by the test's end (its name says which test left it, if not).
struct TempDir {
  fs::path path;
  explicit TempDir(const std::string& name) {
    path = fs::temp_directory_path() / ("gemmlab_engine_" + name + "_" + std::to_string(::getpid()));
    fs::remove_all(path);
    fs::create_directories(path);
  }
  ~TempDir() { fs::remove_all(path); }
  std::string operator/(const std::string& f) const { return (path / f).string(); }
};

// A run request of one size and seed, one launch a row, writing d/out.csv with its log to /dev/null (the caller
// closes req.log): what the run loop's CPU tests with a fake device share.
inline gemmlab::RunRequest one_launch_request(const TempDir& d, const std::string& name,
                                              std::vector<std::string> kernels, std::vector<std::string> distributions,
                                              gemmlab::Size size) {
  gemmlab::RunRequest req;
  req.plan.name = name;
  req.plan.kernels = std::move(kernels);
  req.plan.distributions = std::move(distributions);
  req.plan.sizes = {size};
  req.plan.seeds = {3};
  req.plan.reps = 1;
  req.plan.warmup = 0;
  req.plan.spot_checks = 2;
  req.out_csv = d / "out.csv";
  req.threads = 2;
  req.command_line = "test";
  req.log = std::fopen("/dev/null", "w");
  req.live_progress = false;
  return req;
}

inline PlanSpec small_plan() {
  PlanSpec p;
  p.kernels = {{"sgemm_01_naive", "fp32"}, {"hgemm_a", "fp16"}, {"sgemm_10_warptiling", "fp32"}, {"hgemm_b", "fp16"}};
  p.distributions = {"uniform_0_1", "normal_0_1", "cancel_-10"};
  p.sizes = {{64, 64, 64}, {128, 32, 256}};
  p.seeds = {1, 2};
  p.reps = 5;
  p.warmup = 1;
  return p;
}

inline std::vector<std::string> columns() {
  return {"kernel", "input_format", "distribution", "M", "N", "K", "seed", "rel_mean", "time_ms_median", "status", "note"};
}

// Deterministic in the key; the note exercises CSV quoting (comma, quote, newline).
inline std::vector<std::string> fake_row(const RowKey& k) {
  const std::string h = sha256_hex(k.str()).substr(0, 12);
  std::string note = (h[0] < '8') ? "" : "a note, with \"quotes\"\nand a second line";
  return {k.kernel, k.input_format, k.distribution, std::to_string(k.size.M), std::to_string(k.size.N),
          std::to_string(k.size.K), std::to_string(k.seed), "0x" + h, "1.5", "passed", note};
}

inline JournalIdentity identity(const PlanSpec& p, const std::string& shard = "") {
  JournalIdentity id;
  id.plan_hash = plan_hash(p);
  id.git_commit = "abc123";
  id.gemmlab_version = "0.1";
  id.gpu_name = "NVIDIA H200";
  id.gpu_uuid = "GPU-0000";
  id.shard = shard;
  id.columns = columns();
  return id;
}

inline std::string slurp(const std::string& p) {
  std::ifstream f(p, std::ios::binary);
  std::stringstream s;
  s << f.rdbuf();
  return s.str();
}

inline void spit(const std::string& p, const std::string& text) { std::ofstream(p, std::ios::binary) << text; }

// A result CSV read back, with its cells found by column name.
struct Csv {
  std::vector<std::string> header;
  std::vector<std::vector<std::string>> rows;
  std::string col(std::size_t row, const std::string& name) const {
    for (std::size_t i = 0; i < header.size(); ++i)
      if (header[i] == name) return rows.at(row).at(i);
    throw std::logic_error("no column " + name);
  }
};
inline Csv read_csv(const std::string& path) {
  auto recs = parse_csv(slurp(path)).records;
  Csv c;
  c.header = recs.at(0);
  c.rows.assign(recs.begin() + 1, recs.end());
  return c;
}

}  // namespace engine_test
