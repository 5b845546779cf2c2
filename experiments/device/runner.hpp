// Running one kernel on the GPU: inputs converted to the kernel's format and layout (outside the
// timed region), the one timing helper every kernel goes through, and the output brought back as
// doubles; and the Device interface the run loop uses. No CUDA type in this header.
//
// Every function takes a device index (cudaGetDevice numbering, default 0): each GPU has its own
// cuBLAS/cuBLASLt handles and workspace, created on first use, and the calling thread is bound to
// the device (cudaSetDevice) before anything runs, so one thread per GPU can run kernels at once.
#pragma once
#include <string>
#include <vector>
#include "kernels/kernel.hpp"
#include "reference/matrix.hpp"

namespace gemmlab {

struct DeviceInfo {
  bool present = false;
  std::string why_absent;        // when !present: what the CUDA runtime said
  int device = 0;
  std::string name;
  std::string uuid;              // "GPU-xxxxxxxx-xxxx-xxxx-xxxx-xxxxxxxxxxxx", as nvidia-smi -L prints it
  int cc_major = 0, cc_minor = 0;
  int sm_count = 0;
  long long l2_bytes = 0, global_mem_bytes = 0;
  int cc() const { return cc_major * 10 + cc_minor; }
};

// GPUs the CUDA runtime sees (0 when none or when the runtime fails).
int device_count();

// Never throws; present = false with the reason when GPU `device` is not usable (or not there).
const DeviceInfo& query_device(int device = 0);

// Empty if the kernel can run on this device and build; otherwise why not (-> a not_supported row).
std::string hardware_support(const Kernel& k, const DeviceInfo& dev);

struct TimingOptions {
  int warmup = 3;      // untimed launches first (module load, cuBLAS heuristics, clocks up)
  int reps = 20;       // timed repetitions; each gets an L2 flush and a NaN-poisoned C first
  bool flush_l2 = true;
};

struct KernelRun {
  std::vector<double> c;         // (M, N) row-major output of the last repetition, as doubles
  std::vector<float> times_ms;   // every timed repetition
  double time_ms_median = 0, time_ms_min = 0, time_ms_max = 0;
  double tflops = 0;             // 2 M N K / median
  long long unwritten = 0;       // NaN entries left in C (the poison): a kernel that skipped entries
  double wall_seconds = 0;       // run_kernel's whole wall time: packing, copies, warm-up, timed reps, unpacking
};

// Uploads A (M, K) and B (K, N) in the kernel's input format and layouts, runs warm-up and timed
// repetitions (CUDA events around each launch only; L2 flushed and C poisoned with NaN before each),
// and downloads C, on GPU `device`. Throws std::runtime_error on a CUDA error. The caller checks
// sizes and support.
KernelRun run_kernel(const Kernel& k, const Matrix& A, const Matrix& B, const TimingOptions& opt, int device = 0);

// Sampled SM clock of GPU `device` in MHz (nvidia-smi), -1 if unknown.
int current_sm_clock_mhz(int device = 0);

struct SoftwareVersions {
  std::string driver;        // NVIDIA driver, from nvidia-smi ("unknown" if absent)
  int cuda_driver_api = 0;   // cudaDriverGetVersion, e.g. 13000
  int cuda_runtime = 0;      // cudaRuntimeGetVersion
  std::string cublas;        // "major.minor.patch"
  int max_sm_clock_mhz = -1;
};
SoftwareVersions software_versions(int device = 0);

// What the run loop (experiments/engine) needs from the machine that runs kernels.
class Device {
 public:
  virtual ~Device() = default;
  virtual const DeviceInfo& info() = 0;
  virtual SoftwareVersions software() = 0;
  // Empty if the kernel can run here; otherwise why not (-> a not_supported row).
  virtual std::string hardware_support(const Kernel& k) = 0;
  virtual KernelRun run(const Kernel& k, const Matrix& A, const Matrix& B, const TimingOptions& opt) = 0;
  virtual int sm_clock_mhz() = 0;
  // Called once in each worker thread before its first row (a GPU binds the thread to itself).
  virtual void bind_thread() {}
};

// GPU `device` through the functions above (one object per index, alive for the process).
Device& gpu_device(int device = 0);

}  // namespace gemmlab
