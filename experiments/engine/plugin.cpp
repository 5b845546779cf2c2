// Kernels from shared libraries (see plugin.hpp).
#include "experiments/engine/plugin.hpp"

#include <dlfcn.h>

#include <algorithm>
#include <array>
#include <cstring>
#include <deque>
#include <filesystem>
#include <mutex>
#include <optional>
#include <set>
#include <stdexcept>
#include <utility>

#include "experiments/engine/inputs.hpp"
#include "experiments/plan/plan.hpp"
#include "kernels/registry.hpp"
#include "reference/numerics.hpp"
#include "reference/tc_model.hpp"

namespace fs = std::filesystem;

namespace gemmlab {

namespace {

constexpr const char* kRebuild = "; fix it in the plugin's source and rebuild the plugin";
constexpr const char* kFormats = "fp32, tf32, fp16, bf16, e4m3 or e5m2";

// Names travel into the CSV, file names and the -k list: only characters that need no quoting.
bool plain_name(const std::string& s) {
  for (char c : s)
    if (!((c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '_' || c == '.' || c == '-'))
      return false;
  return true;
}

// The checks of one descriptor; every message names the file, the descriptor and the field.
class DescriptorCheck {
 public:
  DescriptorCheck(const std::string& file, int index) : file_(file), index_(index) {}
  void named(const std::string& name) { name_ = name; }

  [[noreturn]] void bad(const std::string& field, const std::string& what) const {
    throw UsageError("plugin " + file_ + ": kernel descriptor " + std::to_string(index_) +
                     (name_.empty() ? "" : " ('" + name_ + "')") + ": " + field + " " + what + kRebuild);
  }

  // A non-NULL string of 1 to max_len characters (max_len + 1 bytes are read at most).
  std::string text(const char* field, const char* s, std::size_t max_len) const {
    if (!s) bad(field, "is NULL");
    const std::size_t n = strnlen(s, max_len + 1);
    if (n == 0) bad(field, "is empty");
    if (n > max_len) bad(field, "is longer than " + std::to_string(max_len) + " characters");
    return std::string(s, n);
  }

  std::string plain(const char* field, const char* s, std::size_t max_len) const {
    std::string v = text(field, s, max_len);
    if (!plain_name(v)) bad(field, "'" + v + "' has characters other than A-Z a-z 0-9 _ . - (they would break CSV columns, file names and -k lists)");
    return v;
  }

  Format format(const char* field, const char* s) const {
    const std::string v = text(field, s, 16);
    const std::optional<Format> f = parse_format(v);
    if (!f || *f == Format::fp64) bad(field, "'" + v + "' is not a format gemmlab runs kernels in (" + kFormats + ")");
    return *f;
  }

  Layout layout(const char* field, const char* s) const {
    const std::string v = text(field, s, 8);
    if (v == "row") return Layout::row_major;
    if (v == "col") return Layout::col_major;
    bad(field, "'" + v + "' is not a layout (row or col)");
  }

  int at_least(const char* field, int v, int lo, int hi) const {
    if (v < lo || v > hi) bad(field, "is " + std::to_string(v) + "; it must be between " + std::to_string(lo) + " and " + std::to_string(hi));
    return v;
  }

 private:
  const std::string& file_;
  int index_;
  std::string name_;
};

std::string word_list(const std::vector<std::string>& words) {
  std::string s;
  for (const auto& w : words) s += (s.empty() ? "" : ", ") + w;
  return s;
}

// The numerics record a descriptor declares, checked for consistency: a bound, the emulation and
// the CSV are derived from it, so a contradiction would be reported as the kernel's error.
Numerics declared(const gemmlab_kernel_desc& d, const DescriptorCheck& c) {
  Numerics n;
  n.input = c.format("input_format", d.input_format);
  n.compute = c.format("compute_format", d.compute_format);
  n.accumulator = c.format("accumulator_format", d.accumulator_format);
  n.output = c.format("output_format", d.output_format);

  const std::string acc = c.text("accumulation", d.accumulation, 16);
  const std::optional<Accumulation> a = parse_accumulation(acc);
  if (!a) {
    std::vector<std::string> words;
    for (Accumulation x : all_accumulations()) words.push_back(to_string(x));
    c.bad("accumulation", "'" + acc + "' is not an accumulation (" + word_list(words) + ")");
  }
  n.accumulation = *a;

  if (d.instruction) {
    const std::string ins = c.text("instruction", d.instruction, 64);
    const std::optional<tc::Instruction> i = tc::parse_instruction(ins);
    if (!i) c.bad("instruction", "'" + ins + "' is not an instruction gemmlab models (`gemmlab tc-eval --list` names them), nor NULL");
    n.instruction = *i;
  }
  n.k_step = c.at_least("k_step", d.k_step, 0, 1 << 20);
  const bool tensor_core = n.accumulation == Accumulation::in_mma || n.accumulation == Accumulation::in_wgmma ||
                           n.accumulation == Accumulation::external || n.accumulation == Accumulation::promoted;
  if (n.instruction && !tensor_core)
    c.bad("instruction", std::string("is set, but accumulation ") + to_string(n.accumulation) +
                             " issues no tensor-core instruction: set it to NULL");
  if (n.instruction && n.k_step != tc::info(*n.instruction).k)
    c.bad("k_step", "is " + std::to_string(n.k_step) + ", but " + tc::info(*n.instruction).name + " takes " +
                        std::to_string(tc::info(*n.instruction).k) + " products along K");
  if (n.accumulation == Accumulation::fma && n.k_step != 1)
    c.bad("k_step", "is " + std::to_string(n.k_step) + ", but accumulation fma takes one product at a time: set 1");

  n.promotion_interval_k = c.at_least("promotion_interval_k", d.promotion_interval_k, 0, 1 << 20);
  if (n.accumulation == Accumulation::promoted && n.promotion_interval_k == 0)
    c.bad("promotion_interval_k", "is 0, but accumulation promoted needs the elements of K summed per promotion");
  if (n.accumulation != Accumulation::promoted && n.promotion_interval_k != 0)
    c.bad("promotion_interval_k", std::string("is for accumulation promoted only (this one is ") +
                                      to_string(n.accumulation) + "): set 0");
  n.split_k = c.at_least("split_k", d.split_k, 1, 1 << 20);

  if (d.accumulation_rounding) {
    const std::string r = c.text("accumulation_rounding", d.accumulation_rounding, 16);
    const std::optional<Rounding> parsed = parse_rounding(r);
    if (!parsed) c.bad("accumulation_rounding", "'" + r + "' is not a rounding (nearest_even, toward_zero, floor, unknown), nor NULL");
    n.accumulation_rounding = *parsed;
  } else {
    n.accumulation_rounding = default_accumulation_rounding(n.accumulation);
  }
  if (!(d.acc_unit_roundoff >= 0 && d.acc_unit_roundoff < 1))
    c.bad("acc_unit_roundoff", "must be 0 (the accumulator format's) or a unit roundoff in (0, 1)");
  n.acc_unit_roundoff = d.acc_unit_roundoff;
  n.subnormals_flushed = c.at_least("subnormals_flushed", d.subnormals_flushed, 0, 1) == 1;
  return n;
}

std::unique_ptr<PluginKernel> checked_kernel(const gemmlab_kernel_desc& d, int index, const std::string& file) {
  DescriptorCheck c(file, index);
  auto pk = std::make_unique<PluginKernel>();
  pk->name = c.plain("name", d.name, 128);
  c.named(pk->name);
  if (pk->name == "all") c.bad("name", "'all' selects every kernel: choose another name");
  pk->family = c.plain("family", d.family, 64);
  if (d.description) {
    pk->description = std::string(d.description, strnlen(d.description, 513));
    if (pk->description.size() > 512) c.bad("description", "is longer than 512 characters");
    for (char ch : pk->description)
      if (static_cast<unsigned char>(ch) < 0x20) c.bad("description", "must be one line without control characters");
  }
  pk->file = file;
  pk->launch = d.launch;
  if (!d.launch) c.bad("launch", "is NULL: every kernel needs a launch function");

  Kernel& k = pk->kernel;
  k.name = pk->name.c_str();
  k.family = pk->family.c_str();
  k.description = pk->description.c_str();
  k.numerics = declared(d, c);
  k.layout_a = c.layout("layout_a", d.layout_a);
  k.layout_b = c.layout("layout_b", d.layout_b);
  k.m_multiple = c.at_least("m_multiple", d.m_multiple, 1, 1 << 20);
  k.n_multiple = c.at_least("n_multiple", d.n_multiple, 1, 1 << 20);
  k.k_multiple = c.at_least("k_multiple", d.k_multiple, 1, 1 << 20);
  k.min_cc = c.at_least("min_cc", d.min_cc, 0, 1000);
  k.requires_sm90a = c.at_least("requires_sm90a", d.requires_sm90a, 0, 1) == 1;
  if (d.workspace_bytes > (std::size_t{1} << 40)) c.bad("workspace_bytes", "is more than 1 TiB");
  k.workspace_bytes = d.workspace_bytes;
  // Family cpu declares a host computation (gemmlab_plugin.h): `all` leaves it out, as it does
  // gemmlab's own host kernels; its name or family:cpu still runs it.
  if (pk->family == "cpu")
    k.left_out_of_all = "a plugin's kernel of family cpu (a host computation): run it by name or with family:cpu";
  k.launch = nullptr;  // bound to a trampoline when registered
  k.supports = d.supports;
  k.k_chunks = nullptr;
  return pk;
}

// Kernel::launch is a plain function pointer (the built-ins need no state), so each plugin kernel is
// given one of kMaxPluginKernels trampolines, each reading its own slot of this table. A slot is
// written under the loader's mutex before its kernel is registered, and never changes afterwards.
std::array<const PluginKernel*, kMaxPluginKernels> g_slots{};

template <std::size_t I>
void launch_slot(const GemmArgs& args) {
  launch_plugin_kernel(*g_slots[I], args);
}

template <std::size_t... I>
constexpr std::array<void (*)(const GemmArgs&), sizeof...(I)> make_trampolines(std::index_sequence<I...>) {
  return {&launch_slot<I>...};
}

constexpr auto kTrampolines = make_trampolines(std::make_index_sequence<kMaxPluginKernels>{});

struct LoaderState {
  std::mutex mu;
  std::deque<LoadedPlugin> plugins;  // a deque: plugin_of() hands out pointers that must stay valid
  std::vector<std::unique_ptr<PluginKernel>> kernels;
};

LoaderState& state() {
  static LoaderState s;
  return s;
}

// dlclose()s a library unless released: a refused plugin leaves nothing behind.
struct LibraryHandle {
  void* h = nullptr;
  ~LibraryHandle() {
    if (h) dlclose(h);
  }
};

}  // namespace

std::vector<std::unique_ptr<PluginKernel>> check_plugin_table(const gemmlab_plugin* t, const std::string& file) {
  const std::string what = "plugin " + file + ": ";
  if (!t) throw UsageError(what + GEMMLAB_PLUGIN_ENTRY + "() returned NULL instead of its table" + kRebuild);
  if (t->abi_version != GEMMLAB_PLUGIN_ABI_VERSION)
    throw UsageError(what + "it was built for plugin ABI version " + std::to_string(t->abi_version) + ", and this gemmlab reads version " +
                     std::to_string(GEMMLAB_PLUGIN_ABI_VERSION) + ": rebuild the plugin against this gemmlab's kernels/plugin/gemmlab_plugin.h");
  if (t->descriptor_size != sizeof(gemmlab_kernel_desc))
    throw UsageError(what + "its descriptors are " + std::to_string(t->descriptor_size) + " bytes, this gemmlab's " +
                     std::to_string(sizeof(gemmlab_kernel_desc)) + " (set descriptor_size = sizeof(struct gemmlab_kernel_desc)): "
                     "rebuild the plugin against this gemmlab's kernels/plugin/gemmlab_plugin.h");
  if (!t->name || !*t->name) throw UsageError(what + "the plugin's name is NULL or empty" + kRebuild);
  if (t->count < 1 || t->count > kMaxPluginKernels)
    throw UsageError(what + "count is " + std::to_string(t->count) + "; a plugin holds 1 to " +
                     std::to_string(kMaxPluginKernels) + " kernel descriptors" + kRebuild);
  if (!t->kernels) throw UsageError(what + "kernels is NULL, with count " + std::to_string(t->count) + kRebuild);
  std::vector<std::unique_ptr<PluginKernel>> out;
  std::set<std::string> names;
  for (int i = 0; i < t->count; ++i) {
    out.push_back(checked_kernel(t->kernels[i], i, file));
    if (!names.insert(out.back()->name).second)
      throw UsageError(what + "kernel descriptor " + std::to_string(i) + ": name '" + out.back()->name +
                       "' is used by an earlier descriptor of the same plugin" + kRebuild);
  }
  return out;
}

void launch_plugin_kernel(const PluginKernel& k, const GemmArgs& a) {
  const gemmlab_gemm_args args = {a.M,      a.N,        a.K,         a.A,         a.B,
                                  a.C,      a.stream,   a.cublas,    a.cublaslt,  a.workspace,
                                  a.workspace_bytes};
  char error[1024] = {0};
  const int rc = k.launch(&args, error, sizeof error);
  if (rc == 0) return;
  error[sizeof error - 1] = '\0';
  throw std::runtime_error(k.name + " (plugin " + k.file + ") failed: " +
                           (error[0] ? std::string(error) : "its launch returned " + std::to_string(rc) + " without a message"));
}

const LoadedPlugin& load_plugin(const std::string& path) {
  LoaderState& s = state();
  std::lock_guard<std::mutex> lock(s.mu);
  std::error_code ec;
  if (!fs::is_regular_file(path, ec))
    throw UsageError("plugin " + path + " does not exist or is not a file: give the path of a shared library built "
                     "against kernels/plugin/gemmlab_plugin.h (e.g. build/libgemmlab_example_plugin.so)");
  const std::string canonical = fs::canonical(path, ec).string();
  if (ec) throw UsageError("plugin " + path + ": cannot resolve its path (" + ec.message() + ")");
  const std::string sha = sha256_file(canonical);
  for (const LoadedPlugin& p : s.plugins) {
    if (p.path != canonical) continue;
    if (p.sha256 != sha)
      throw UsageError("plugin " + path + " changed on disk since this process loaded it (sha256 " + p.sha256.substr(0, 12) +
                       "… then, " + sha.substr(0, 12) + "… now): start gemmlab again to use the new build");
    return p;
  }

  dlerror();
  LibraryHandle lib{dlopen(canonical.c_str(), RTLD_NOW | RTLD_LOCAL)};
  if (!lib.h) {
    const char* why = dlerror();
    throw UsageError("plugin " + path + " cannot be loaded as a shared library: " + (why ? why : "dlopen failed") +
                     " (build it with -shared -fPIC for this machine, with the libraries it needs findable)");
  }
  dlerror();
  void* entry = dlsym(lib.h, GEMMLAB_PLUGIN_ENTRY);
  if (!entry) {
    const char* why = dlerror();
    throw UsageError("plugin " + path + " has no entry point " + GEMMLAB_PLUGIN_ENTRY + " (" + (why ? why : "not found") +
                     "): define `GEMMLAB_PLUGIN_EXPORT const struct gemmlab_plugin* gemmlab_plugin_v1(void)` from "
                     "kernels/plugin/gemmlab_plugin.h, with C linkage (the header declares it extern \"C\")");
  }
  const auto table = reinterpret_cast<const gemmlab_plugin* (*)()>(entry)();
  std::vector<std::unique_ptr<PluginKernel>> kernels = check_plugin_table(table, path);

  // Every name must be new before any is registered: a plugin joins whole or not at all.
  for (const auto& k : kernels)
    if (find_kernel(k->name)) {
      const LoadedPlugin* owner = nullptr;
      for (const LoadedPlugin& p : s.plugins)
        for (const std::string& n : p.kernels)
          if (n == k->name) owner = &p;
      throw UsageError("plugin " + path + ": kernel '" + k->name + "' is already registered by " +
                       (owner ? "plugin " + owner->path : std::string("gemmlab itself (a built-in kernel)")) +
                       ": rename the plugin's kernel (names are the CSV's identity), or load only one of them");
    }
  if (s.kernels.size() + kernels.size() > static_cast<std::size_t>(kMaxPluginKernels))
    throw UsageError("plugin " + path + ": its " + std::to_string(kernels.size()) + " kernels would bring the plugins' kernels to " +
                     std::to_string(s.kernels.size() + kernels.size()) + ", more than the " + std::to_string(kMaxPluginKernels) +
                     " one gemmlab process holds: load fewer plugins at once");

  LoadedPlugin rec;
  rec.path = canonical;
  rec.sha256 = sha;
  rec.abi_version = table->abi_version;
  rec.name = std::string(table->name, strnlen(table->name, 256));
  for (auto& k : kernels) {
    const std::size_t slot = s.kernels.size();
    g_slots[slot] = k.get();
    k->kernel.launch = kTrampolines[slot];
    register_kernel(k->kernel);
    rec.kernels.push_back(k->name);
    s.kernels.push_back(std::move(k));
  }
  lib.h = nullptr;  // kept loaded for the process: its kernels are registered
  s.plugins.push_back(std::move(rec));
  return s.plugins.back();
}

void load_plugins(const std::vector<std::string>& paths) {
  for (const std::string& p : paths) load_plugin(p);
}

std::vector<LoadedPlugin> loaded_plugins() {
  LoaderState& s = state();
  std::lock_guard<std::mutex> lock(s.mu);
  return {s.plugins.begin(), s.plugins.end()};
}

const LoadedPlugin* plugin_of(std::string_view kernel_name) {
  LoaderState& s = state();
  std::lock_guard<std::mutex> lock(s.mu);
  for (const LoadedPlugin& p : s.plugins)
    for (const std::string& n : p.kernels)
      if (n == kernel_name) return &p;
  return nullptr;
}

nlohmann::json plugins_metadata(const std::vector<std::string>& kernel_names) {
  nlohmann::json out = nlohmann::json::array();
  std::vector<const LoadedPlugin*> seen;
  for (const std::string& name : kernel_names) {
    const LoadedPlugin* p = plugin_of(name);
    if (!p || std::find(seen.begin(), seen.end(), p) != seen.end()) continue;
    seen.push_back(p);
    out.push_back({{"path", p->path}, {"sha256", p->sha256}, {"abi_version", p->abi_version}, {"name", p->name},
                   {"kernels", p->kernels}});
  }
  return out;
}

}  // namespace gemmlab
