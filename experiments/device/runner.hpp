// Running one kernel on the GPU: inputs converted to the kernel's format and layout (outside the
// timed region), the one timing helper every kernel goes through, and the output brought back as
// doubles; and the Device interface the run loop uses. No CUDA type in this header.
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
  int cc_major = 0, cc_minor = 0;
  int sm_count = 0;
  long long l2_bytes = 0, global_mem_bytes = 0;
  int cc() const { return cc_major * 10 + cc_minor; }
};

// Never throws; present = false with the reason when no usable GPU is there.
const DeviceInfo& query_device();

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
};

// Uploads A (M, K) and B (K, N) in the kernel's input format and layouts, runs warm-up and timed
// repetitions (CUDA events around each launch only; L2 flushed and C poisoned with NaN before each),
// and downloads C. Throws std::runtime_error on a CUDA error. The caller checks sizes and support.
KernelRun run_kernel(const Kernel& k, const Matrix& A, const Matrix& B, const TimingOptions& opt);

// Sampled SM clock in MHz (nvidia-smi), -1 if unknown.
int current_sm_clock_mhz();

struct SoftwareVersions {
  std::string driver;        // NVIDIA driver, from nvidia-smi ("unknown" if absent)
  int cuda_driver_api = 0;   // cudaDriverGetVersion, e.g. 13000
  int cuda_runtime = 0;      // cudaRuntimeGetVersion
  std::string cublas;        // "major.minor.patch"
  int max_sm_clock_mhz = -1;
};
SoftwareVersions software_versions();

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
};

// This process's GPU (device 0) through the functions above.
Device& gpu_device();

}  // namespace gemmlab
