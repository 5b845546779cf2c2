// Finding the NVIDIA driver and cuBLAS at run time (see cuda_libraries.hpp). Plain C++ against the CUDA
// headers: the driver is only dlopen'ed to name what is wrong before the CUDA runtime reports its own
// "driver version is insufficient"; cuBLAS is dlopen'ed once, by the first call of cublas_missing() or of
// a forwarder (cublas_forwarders.cpp).
#include "kernels/common/cuda_libraries.hpp"

#include <cublas_api.h>
#include <cuda_runtime_api.h>
#include <dlfcn.h>

#include <cstdlib>
#include <string>
#include <vector>

namespace gemmlab {
namespace {

constexpr int kCudaMajor = CUDART_VERSION / 1000;
const std::string kCublasMajor = std::to_string(CUBLAS_VER_MAJOR);
const std::string kCublasLt = "libcublasLt.so." + kCublasMajor;  // first: libcublas needs it
const std::string kCublas = "libcublas.so." + kCublasMajor;

std::string last_dlerror() {
  const char* e = dlerror();
  return e ? e : "unknown error";
}

// The driver this build of the CUDA runtime needs, in words.
std::string driver_needed() {
  std::string s = "an NVIDIA driver for CUDA " + std::to_string(kCudaMajor);
  if (kCudaMajor == 13) s += " (580 or newer)";
  return s;
}

struct Cublas {
  void* lt = nullptr;
  void* blas = nullptr;
  std::string why;  // "" when both are loaded
};

// Both libraries from one place: `dir` ("" for the dynamic loader's own search). The error of the
// failed dlopen, or "".
std::string open_pair(const std::string& dir, Cublas& c) {
  const auto path = [&](const std::string& name) { return dir.empty() ? name : dir + "/" + name; };
  void* lt = dlopen(path(kCublasLt).c_str(), RTLD_NOW | RTLD_LOCAL);
  if (!lt) return last_dlerror();
  void* blas = dlopen(path(kCublas).c_str(), RTLD_NOW | RTLD_LOCAL);
  if (!blas) {
    std::string e = last_dlerror();
    dlclose(lt);
    return e;
  }
  c.lt = lt, c.blas = blas;
  return "";
}

Cublas load_cublas() {
  Cublas c;
  const std::string install = "install it (pip install \"nvidia-cublas>=" + kCublasMajor + ",<" +
                              std::to_string(CUBLAS_VER_MAJOR + 1) + "\", which PyTorch for CUDA " + kCublasMajor +
                              " brings, or the CUDA " + kCublasMajor +
                              " toolkit), or name the folder that has it in GEMMLAB_CUDA_LIB_DIR";
  const std::string what = "cuBLAS " + kCublasMajor + " not found";
  if (const char* env = std::getenv("GEMMLAB_CUDA_LIB_DIR"); env && *env) {
    const std::string e = open_pair(env, c);
    if (!e.empty())
      c.why = what + " in GEMMLAB_CUDA_LIB_DIR=" + env + " (" + e + "; nothing else is tried while it is set): " +
              install;
    return c;
  }
  std::string first = open_pair("", c);
  if (first.empty()) return c;
  std::vector<std::string> roots;
  for (const char* var : {"CUDA_HOME", "CUDA_PATH"})
    if (const char* v = std::getenv(var); v && *v) roots.emplace_back(v);
  roots.emplace_back("/usr/local/cuda");
  for (const std::string& root : roots)
    for (const char* sub : {"lib64", "lib", "targets/x86_64-linux/lib"})
      if (open_pair(root + "/" + sub, c).empty()) return c;
  c.why = what + " (" + first + "; nor in CUDA_HOME, CUDA_PATH or /usr/local/cuda): " + install;
  return c;
}

const Cublas& cublas() {
  static const Cublas c = load_cublas();
  return c;
}

}  // namespace

std::string driver_missing() {
  static const std::string why = [] () -> std::string {
    void* cuda = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);  // kept open: the CUDA runtime loads it too
    if (!cuda)
      return "no NVIDIA driver (" + last_dlerror() + "): install " + driver_needed() + " on a machine with an NVIDIA GPU";
    using DriverGetVersion = int (*)(int*);  // CUresult cuDriverGetVersion(int*), CUDA_SUCCESS = 0
    auto get = reinterpret_cast<DriverGetVersion>(dlsym(cuda, "cuDriverGetVersion"));
    int version = 0;
    if (get && get(&version) == 0 && version / 1000 < kCudaMajor)
      return "the NVIDIA driver supports CUDA " + std::to_string(version / 1000) + "." +
             std::to_string(version % 1000 / 10) + ", and gemmlab is built with CUDA " + std::to_string(kCudaMajor) +
             ": install " + driver_needed();
    return "";
  }();
  return why;
}

std::string cublas_missing() { return cublas().why; }

std::string gpu_libraries_missing() {
  std::string why = driver_missing();
  if (const std::string c = cublas_missing(); !c.empty()) why += (why.empty() ? "" : "; ") + c;
  return why;
}

void* cublas_handle(bool lt) { return lt ? cublas().lt : cublas().blas; }

}  // namespace gemmlab
