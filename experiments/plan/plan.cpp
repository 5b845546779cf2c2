#include "experiments/plan/plan.hpp"

#include <toml++/toml.h>

#include "reference/gemm_form.hpp"

#include <algorithm>
#include <filesystem>
#include <regex>
#include <set>
#include <sstream>

namespace fs = std::filesystem;

namespace gemmlab {

Size parse_size(const std::string& s) {
  static const std::regex cube(R"(\s*(\d{1,6})\s*)"), full(R"(\s*(\d{1,6})x(\d{1,6})x(\d{1,6})\s*)");
  std::smatch m;
  Size z;
  if (std::regex_match(s, m, cube)) {
    z.M = z.N = z.K = std::stoi(m[1]);
  } else if (std::regex_match(s, m, full)) {
    z.M = std::stoi(m[1]);
    z.N = std::stoi(m[2]);
    z.K = std::stoi(m[3]);
  } else {
    throw UsageError("size '" + s + "' is not understood: write N for N x N x N, or MxNxK (e.g. 4096x2048x512)");
  }
  if (z.M <= 0 || z.N <= 0 || z.K <= 0)
    throw UsageError("size '" + s + "': M, N and K must be positive");
  return z;
}

namespace {

[[noreturn]] void bad(const std::string& file, const std::string& key, const std::string& what) {
  throw UsageError("suite file " + file + ": '" + key + "' " + what);
}

std::vector<std::string> string_list(const toml::node& n, const std::string& file, const std::string& key,
                                     bool may_be_empty = false) {
  const toml::array* a = n.as_array();
  if (!a) bad(file, key, std::string("must be an array of strings, e.g. ") + (key == "exclude" ? "[\"family:cpu\"]" : "[\"all\"]"));
  std::vector<std::string> out;
  for (const auto& e : *a) {
    auto v = e.value<std::string>();
    if (!v || v->empty()) bad(file, key, "must hold only non-empty strings");
    out.push_back(*v);
  }
  if (out.empty() && !may_be_empty) bad(file, key, "must not be empty");
  return out;
}

std::int64_t integer(const toml::node& n, const std::string& file, const std::string& key, std::int64_t lo,
                     std::int64_t hi) {
  auto v = n.value_exact<std::int64_t>();
  if (!v) bad(file, key, "must be an integer");
  if (*v < lo || *v > hi) bad(file, key, "must be between " + std::to_string(lo) + " and " + std::to_string(hi));
  return *v;
}

// The [invariance] table: sweeps of whole numbers or "default", settings, repeats, reveal_k_max, cost.
InvariancePlan invariance_table(const toml::node& n, const std::string& file) {
  const toml::table* t = n.as_table();
  if (!t) bad(file, "invariance", "must be a table ([invariance] with keys m, n, k_tails, settings, repeats, "
                                  "reveal_k_max, cost)");
  InvariancePlan p;
  auto sweep = [&](const std::string& key) {
    std::vector<std::string> out;
    const toml::array* a = t->get(key)->as_array();
    if (!a) bad(file, "invariance." + key, "must be an array of whole numbers or \"default\"");
    for (const auto& e : *a) {
      if (auto v = e.value_exact<std::int64_t>()) out.push_back(std::to_string(integer(e, file, "invariance." + key, 1, 1 << 20)));
      else if (auto str = e.value<std::string>(); str && *str == "default") out.push_back(*str);
      else bad(file, "invariance." + key, "must hold whole numbers or \"default\"");
    }
    return out;
  };
  static const std::set<std::string> known = {"m", "n", "k_tails", "settings", "repeats", "reveal_k_max", "cost"};
  for (const auto& [k, v] : *t)
    if (!known.count(std::string(k.str())))
      bad(file, "invariance." + std::string(k.str()),
          "is not a key of [invariance] (known: m, n, k_tails, settings, repeats, reveal_k_max, cost)");
  if (t->contains("m")) p.m = sweep("m");
  if (t->contains("n")) p.n = sweep("n");
  if (t->contains("k_tails")) p.k_tails = sweep("k_tails");
  if (auto s = t->get("settings")) p.settings = string_list(*s, file, "invariance.settings");
  if (auto r = t->get("repeats")) p.repeats = static_cast<int>(integer(*r, file, "invariance.repeats", 1, 1000));
  if (auto r = t->get("reveal_k_max"))
    p.reveal_k_max = static_cast<int>(integer(*r, file, "invariance.reveal_k_max", 0, 1 << 20));
  if (auto c = t->get("cost")) {
    auto v = c->value_exact<bool>();
    if (!v) bad(file, "invariance.cost", "must be true or false");
    p.cost = *v;
  }
  return p;
}

}  // namespace

RunPlan load_suite(const std::string& path) {
  toml::table t;
  try {
    t = toml::parse_file(path);
  } catch (const toml::parse_error& e) {
    std::ostringstream os;
    os << "suite file " << path << " is not valid TOML: " << e.description() << " (line " << e.source().begin.line
       << ", column " << e.source().begin.column << ")";
    throw UsageError(os.str());
  }
  RunPlan p;
  p.name = fs::path(path).stem().string();
  static const std::set<std::string> known = {"name",      "description", "kernels", "exclude",   "distributions",
                                              "sizes",     "seeds",       "reps",    "warmup",    "reference",
                                              "spot_checks", "plugins",   "invariance", "forms",  "max_noise",
                                              "min_samples", "min_time_ms", "max_time_ms"};
  for (const auto& [k, v] : t) {
    std::string key(k.str());
    if (!known.count(key)) {
      std::string list;
      for (auto& s : known) list += (list.empty() ? "" : ", ") + s;
      bad(path, key, "is not a suite key (known keys: " + list + ")");
    }
  }
  if (auto n = t["name"]) {
    auto v = n.value<std::string>();
    if (!v || v->empty() || v->find_first_of("/\\ ") != std::string::npos)
      bad(path, "name", "must be a non-empty string without spaces or slashes");
    p.name = *v;
  }
  if (auto n = t.get("kernels")) p.kernels = string_list(*n, path, "kernels");
  if (auto n = t.get("exclude")) p.exclude = string_list(*n, path, "exclude", true);
  if (auto n = t.get("distributions")) p.distributions = string_list(*n, path, "distributions");
  if (auto n = t.get("forms")) p.forms = string_list(*n, path, "forms");
  if (auto n = t.get("plugins"))
    for (const std::string& lib : string_list(*n, path, "plugins"))
      p.plugins.push_back(fs::path(lib).is_absolute() ? lib : (fs::path(path).parent_path() / lib).lexically_normal().string());
  if (auto n = t.get("sizes")) {
    const toml::array* a = n->as_array();
    if (!a || a->empty()) bad(path, "sizes", "must be a non-empty array of [M, N, K] triples or integers");
    p.sizes.clear();
    for (const auto& e : *a) {
      Size z;
      if (auto sq = e.value_exact<std::int64_t>()) {
        z.M = z.N = z.K = static_cast<int>(integer(e, path, "sizes", 1, 1 << 20));
      } else if (const toml::array* tri = e.as_array(); tri && tri->size() == 3) {
        z.M = static_cast<int>(integer(*tri->get(0), path, "sizes", 1, 1 << 20));
        z.N = static_cast<int>(integer(*tri->get(1), path, "sizes", 1, 1 << 20));
        z.K = static_cast<int>(integer(*tri->get(2), path, "sizes", 1, 1 << 20));
      } else {
        bad(path, "sizes", "entries must be [M, N, K] triples of positive integers or single integers");
      }
      p.sizes.push_back(z);
    }
  }
  if (auto n = t.get("seeds")) {
    const toml::array* a = n->as_array();
    if (!a || a->empty()) bad(path, "seeds", "must be a non-empty array of non-negative integers");
    p.seeds.clear();
    for (const auto& e : *a) p.seeds.push_back(static_cast<std::uint64_t>(integer(e, path, "seeds", 0, INT64_MAX)));
  }
  if (auto n = t.get("reps")) p.reps = static_cast<int>(integer(*n, path, "reps", 1, 100000));
  if (auto n = t.get("warmup")) p.warmup = static_cast<int>(integer(*n, path, "warmup", 0, 100000));
  if (auto n = t.get("min_samples")) p.min_samples = static_cast<int>(integer(*n, path, "min_samples", 1, 1000000));
  auto number = [&](const char* key, double& out) {
    if (auto n = t.get(key)) {
      if (auto v = n->value<double>()) out = *v;  // an integer reads as a number too
      else bad(path, key, "must be a number");
    }
  };
  number("max_noise", p.max_noise);
  number("min_time_ms", p.min_time_ms);
  number("max_time_ms", p.max_time_ms);
  if (auto n = t.get("spot_checks")) p.spot_checks = static_cast<int>(integer(*n, path, "spot_checks", 0, 1000000));
  if (auto n = t.get("reference")) {
    auto v = n->value<std::string>();
    if (!v) bad(path, "reference", "must be a string: auto, gpu, cpu, exact or mpfr");
    p.reference = *v;
  }
  if (auto n = t.get("description"); n && !n->is_string()) bad(path, "description", "must be a string");
  if (auto n = t.get("invariance")) p.invariance = invariance_table(*n, path);
  try {
    validate_numbers(p);
  } catch (const UsageError& e) {
    throw UsageError("suite file " + path + ": " + e.what());
  }
  return p;
}

void validate_numbers(const RunPlan& p) {
  if (p.reference != "auto" && p.reference != "exact" && p.reference != "mpfr" && p.reference != "cpu" &&
      p.reference != "gpu")
    throw UsageError("reference '" + p.reference + "' is not known: use auto (the GPU exact engine where it can be "
                     "exact, else the CPU's, + MPFR spot checks), gpu or cpu (that engine only, + spot checks), exact "
                     "(auto without spot checks), or mpfr (MPFR for every entry; slow, for small sizes)");
  if (std::string why = p.stopping().problem(); !why.empty()) throw UsageError(why);
  if (p.warmup < 0) throw UsageError("warmup must not be negative");
  for (const auto& z : p.sizes)
    if (z.M <= 0 || z.N <= 0 || z.K <= 0) throw UsageError("size " + z.str() + " is not positive");
  if (p.sizes.empty()) throw UsageError("no size given");
  if (p.seeds.empty()) throw UsageError("no seed given");
  if (p.forms.empty()) throw UsageError("no form given: \"default\" runs each kernel's own form (plain for most)");
  for (const auto& f : p.forms) {
    if (f == "default") continue;
    try {
      parse_form(f);
    } catch (const std::invalid_argument& e) {
      throw UsageError(std::string(e.what()) + "; or \"default\": each kernel's own form");
    }
  }
}

namespace {
std::vector<fs::path> suite_dirs() {
  std::vector<fs::path> d = {fs::path("experiments") / "suites"};
#ifdef GEMMLAB_SOURCE_DIR
  d.push_back(fs::path(GEMMLAB_SOURCE_DIR) / "experiments" / "suites");
#endif
  // Beside the executable: the gemmlab command of the Python package (gemmlab/_bin/gemmlab) has
  // its suites in gemmlab/_bin/suites.
  std::error_code ec;
  const fs::path exe = fs::read_symlink("/proc/self/exe", ec);
  if (!ec) d.push_back(exe.parent_path() / "suites");
  return d;
}
}  // namespace

std::string find_suite(const std::string& name_or_path) {
  std::error_code ec;
  if (fs::is_regular_file(name_or_path, ec)) return name_or_path;
  for (const auto& dir : suite_dirs()) {
    fs::path p = dir / (name_or_path + ".toml");
    if (fs::is_regular_file(p, ec)) return p.string();
  }
  std::string known;
  for (const auto& s : list_suites()) known += (known.empty() ? "" : ", ") + s;
  throw UsageError("suite '" + name_or_path + "' not found (neither a file nor a suite name; known suites: " +
                   (known.empty() ? "none" : known) + ")");
}

std::vector<std::string> list_suites() {
  std::set<std::string> names;
  std::error_code ec;
  for (const auto& dir : suite_dirs()) {
    if (!fs::is_directory(dir, ec)) continue;
    for (const auto& e : fs::directory_iterator(dir, ec))
      if (e.path().extension() == ".toml") names.insert(e.path().stem().string());
  }
  return {names.begin(), names.end()};
}

}  // namespace gemmlab
