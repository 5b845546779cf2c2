// `gemmlab inputs` folders (see inputs.hpp).
#include "experiments/engine/inputs.hpp"

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <sstream>

#include <unistd.h>

#include "experiments/engine/plan_rows.hpp"
#include "experiments/plan/plan.hpp"
#include "experiments/report/files.hpp"
#include "experiments/report/metadata.hpp"
#include "experiments/report/npy.hpp"
#include "reference/distributions.hpp"

namespace fs = std::filesystem;

namespace gemmlab {

std::string sha256_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw UsageError("cannot read '" + path + "'");
  std::ostringstream s;
  s << in.rdbuf();
  return engine::sha256_hex(s.str());
}

nlohmann::json write_inputs(const InputsSpec& spec, const std::string& dir, bool force, int threads,
                            const std::string& command_line) {
  Distribution d;
  try {
    d = parse_distribution(spec.distribution);
  } catch (const std::invalid_argument& e) {
    throw UsageError(e.what());
  }
  if (d.quant)
    throw UsageError(d.name() + " is a quantized distribution: `gemmlab inputs` writes plain operands, without the "
                     "scales such a kernel also needs; use " + d.source().name() +
                     " (the fp32 source: --format fp32), or gemmlab.quantized_inputs in Python for the quantized operands");
  if (d.recipe)
    throw UsageError(d.name() + " is a scaled fp8 distribution: `gemmlab inputs` writes plain operands, without the "
                     "scale grids such a kernel also needs; use " + d.source().name() +
                     " (the fp32 source: --format fp32) and quantize it yourself, or judge the kernel with gemmlab run");
  if (spec.M <= 0 || spec.N <= 0 || spec.K <= 0)
    throw UsageError("size " + Size{spec.M, spec.N, spec.K}.str() + " is not positive");
  {  // A and B are made whole in binary64 before they are written: a size this machine cannot hold is refused here
    const double need = 8.0 * (static_cast<double>(spec.M) * spec.K + static_cast<double>(spec.K) * spec.N);
    const long pages = ::sysconf(_SC_PHYS_PAGES), page = ::sysconf(_SC_PAGESIZE);
    const double have = pages > 0 && page > 0 ? static_cast<double>(pages) * page : 0;
    if (have > 0 && need > have) {
      char line[256];
      std::snprintf(line, sizeof line, "A (%d x %d) and B (%d x %d) take %.1f GiB as binary64, more than this machine's "
                    "%.1f GiB of memory: choose a smaller size", spec.M, spec.K, spec.K, spec.N, need / (1 << 30),
                    have / (1 << 30));
      throw UsageError(line);
    }
  }
  if (std::string why = unusable_reason(d, spec.format); !why.empty()) throw UsageError(why);
  std::error_code ec;
  if (fs::exists(dir, ec)) {
    if (!fs::is_directory(dir, ec)) throw UsageError("'" + dir + "' exists and is not a folder: choose another -o (in Python, out=)");
    if (!fs::is_empty(dir, ec) && !force)
      throw UsageError("folder '" + dir + "' exists and is not empty: choose a new folder, or pass --force (in Python, force=True) to "
                       "overwrite its A.npy, B.npy and inputs.json");
  } else if (!fs::create_directories(dir, ec) || ec) {
    throw UsageError("cannot create folder '" + dir + "': " + ec.message());
  }
  // An inputs.json of an earlier folder must not outlive the matrices it describes.
  if (force) fs::remove(fs::path(dir) / "inputs.json", ec);

  const Matrix A = generate(d, Operand::A, spec.M, spec.K, spec.format, spec.seed, threads);
  const Matrix B = generate(d, Operand::B, spec.K, spec.N, spec.format, spec.seed, threads);
  nlohmann::json j;
  j["what"] = "gemmlab inputs: A and B of one problem, as gemmlab run generates them";
  j["inputs_format_version"] = kInputsFormatVersion;
  j["gemmlab_version"] = gemmlab_version();
  j["git_commit"] = git_commit();
  j["command_line"] = command_line;
  j["date_utc"] = utc_now();
  j["host"] = hostname();
  j["distribution"] = d.name();
  j["M"] = spec.M, j["N"] = spec.N, j["K"] = spec.K;
  j["seed"] = spec.seed;
  j["format"] = info(spec.format).name;
  auto save = [&](const char* name, const Matrix& m) {
    const std::string file = std::string(name) + ".npy";
    const std::string path = (fs::path(dir) / file).string();
    write_npy(path, m.v, m.rows, m.cols);
    j["files"][name] = {{"file", file}, {"shape", {m.rows, m.cols}}, {"dtype", "float64"},
                        {"sha256", sha256_file(path)}};
  };
  save("A", A);
  save("B", B);
  AtomicFile f((fs::path(dir) / "inputs.json").string());
  f.stream() << j.dump(2) << "\n";
  f.commit();
  return j;
}

InputsFolder read_inputs(const std::string& dir) {
  const std::string make = "; make one with `gemmlab inputs -d DIST -s MxNxK --seed S --format FMT -o DIR`";
  std::error_code ec;
  if (!fs::is_directory(dir, ec)) throw UsageError("'" + dir + "' is not a folder" + make);
  const fs::path jp = fs::path(dir) / "inputs.json";
  if (!fs::exists(jp, ec)) throw UsageError("'" + dir + "' is not a gemmlab inputs folder (it has no inputs.json)" + make);
  InputsFolder r;
  try {
    std::ifstream in(jp);
    r.json = nlohmann::json::parse(in);
  } catch (const std::exception& e) {
    throw UsageError("'" + jp.string() + "' is not a gemmlab inputs.json (" + e.what() + ")" + make);
  }
  nlohmann::json& j = r.json;
  if (!j.is_object() || !j.contains("inputs_format_version") || !j.contains("files"))
    throw UsageError("'" + jp.string() + "' is not a gemmlab inputs.json (no inputs_format_version)" + make);
  try {
    const int v = j.at("inputs_format_version").get<int>();
    const std::string ver = j.at("gemmlab_version").get<std::string>();
    if (v != kInputsFormatVersion || ver != gemmlab_version())
      throw UsageError("'" + dir + "' was written by gemmlab " + ver + " (inputs format version " + std::to_string(v) +
                       "); this is gemmlab " + gemmlab_version() + " (inputs format version " +
                       std::to_string(kInputsFormatVersion) + "): make the folder again with this gemmlab's `gemmlab inputs`");
    const std::string commit = j.value("git_commit", "unknown");
    if (commit != git_commit())
      r.warnings.push_back("'" + dir + "' was written by git commit " + commit + ", this gemmlab is " + git_commit() +
                           " (same version " + gemmlab_version() + " and inputs format: A and B are used as they are)");
    r.spec.distribution = j.at("distribution").get<std::string>();
    r.spec.M = j.at("M").get<int>(), r.spec.N = j.at("N").get<int>(), r.spec.K = j.at("K").get<int>();
    r.spec.seed = j.at("seed").get<std::uint64_t>();
    const auto f = parse_format(j.at("format").get<std::string>());
    if (!f) throw UsageError("'" + jp.string() + "' names an unknown format '" + j.at("format").get<std::string>() + "'");
    r.spec.format = *f;
  } catch (const nlohmann::json::exception& e) {
    throw UsageError("'" + jp.string() + "' lacks a field or has one of the wrong type (" + e.what() + ")" + make);
  }
  auto load = [&](const char* name, int rows, int cols, Matrix* m) {
    const std::string path = (fs::path(dir) / (std::string(name) + ".npy")).string();
    if (!fs::exists(path, ec)) throw UsageError("'" + dir + "' has inputs.json but no " + name + ".npy" + make);
    const std::string want = j["files"][name].value("sha256", "");
    if (sha256_file(path) != want)
      throw UsageError(path + " is not the file `gemmlab inputs` wrote (its sha256 differs from inputs.json's): "
                       "make the folder again");
    NpyArray a = read_npy(path);
    if (a.rows != rows || a.cols != cols || a.dtype != "float64")
      throw UsageError(path + " is " + std::to_string(a.rows) + "x" + std::to_string(a.cols) + " " + a.dtype +
                       ", inputs.json says " + std::to_string(rows) + "x" + std::to_string(cols) + " float64");
    *m = Matrix(rows, cols);
    m->v = std::move(a.v);
  };
  load("A", r.spec.M, r.spec.K, &r.A);
  load("B", r.spec.K, r.spec.N, &r.B);
  return r;
}

}  // namespace gemmlab
