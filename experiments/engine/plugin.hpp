// Kernels from shared libraries (`--plugin libmine.so`, a suite's `plugins = [...]`), through the C
// ABI of kernels/plugin/gemmlab_plugin.h. The loader checks every descriptor of a library before it
// registers any, turns each into a Kernel whose strings and numerics record it owns (for the life of
// the process; the library is never unloaded), and registers them after the built-ins, so `all`,
// `family:<name>`, suites, --gpus, shards, `order` and `predict` see them as they see gemmlab's own.
//
// Plain C++ (dlopen/dlsym; no CUDA): `gemmlab list --plugin` and `gemmlab run --plugin --dry-run`
// need no GPU. Loading happens before any run starts; the registry is not locked against readers.
#pragma once
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "kernels/kernel.hpp"
#include "kernels/plugin/gemmlab_plugin.h"

namespace gemmlab {

// At most this many kernels in all the plugins of one process (each gets one launch trampoline),
// and so at most this many in one plugin's table.
inline constexpr int kMaxPluginKernels = 256;

// One library as loaded, and as the run's metadata and journal identity record it.
struct LoadedPlugin {
  std::string path;                  // canonical: absolute, symlinks resolved
  std::string sha256;                // of the file's bytes (64 hex digits)
  int abi_version = 0;
  std::string name;                  // the plugin's own name (gemmlab_plugin::name)
  std::vector<std::string> kernels;  // registered names, in the table's order
};

// Loads the library at `path`, checks its table and registers its kernels. Loading a file this
// process loaded already (same canonical path, same bytes) does nothing more. Throws UsageError,
// having registered nothing of it, naming the file (and the descriptor and field) and what to do:
// a missing file, not a loadable shared library (dlerror's text), no gemmlab_plugin_v1, another ABI
// version, a malformed descriptor, a kernel name already registered, or a file changed since this
// process loaded it.
const LoadedPlugin& load_plugin(const std::string& path);
void load_plugins(const std::vector<std::string>& paths);

// The plugins loaded so far, in load order.
std::vector<LoadedPlugin> loaded_plugins();

// The plugin that registered kernel `name`; nullptr for a built-in (or unknown) kernel.
const LoadedPlugin* plugin_of(std::string_view kernel_name);

// The metadata entries {path, sha256, abi_version, name, kernels} of the plugins the given kernels
// come from, each once, in order of first use; an empty array when all are built-ins.
nlohmann::json plugins_metadata(const std::vector<std::string>& kernel_names);

// One descriptor turned into a kernel: the Kernel's strings point into this object, which never
// moves. Its launch is bound to a trampoline only when the loader registers it.
struct PluginKernel {
  std::string name, family, description, file;
  Kernel kernel{};
  int (*launch)(const gemmlab_gemm_args*, char*, std::size_t) = nullptr;
};

// Checks a plugin's table (ABI version, descriptor size, name, count, every field of every
// descriptor, names unique within the table) and returns its kernels, unbound and unregistered.
// `file` names the library in messages. Throws UsageError. The loader's check, public so that tests
// can hand it tables built in memory.
std::vector<std::unique_ptr<PluginKernel>> check_plugin_table(const gemmlab_plugin* table, const std::string& file);

// Calls a plugin kernel's launch with `args`; throws std::runtime_error with the plugin's message
// (naming the kernel and the file) when it returns non-zero. What the registered trampolines call.
void launch_plugin_kernel(const PluginKernel& k, const GemmArgs& args);

}  // namespace gemmlab
