// The one timing helper every kernel goes through (STYLE habit 10), plus input conversion.
//
// Per repetition: L2 flushed (a memset over twice the L2), C poisoned with NaN (all-ones bytes are
// NaN in fp32, fp16, bf16, e4m3 and e5m2), then CUDA events around the launch alone. Warm-up
// launches first. Every repetition's time is kept; the median is what the CSV reports.
#include "experiments/device/runner.hpp"

#include <cublasLt.h>
#include <cublas_v2.h>
#include <cuda_runtime.h>

#include <algorithm>
#include <chrono>
#include <map>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <memory>
#include <mutex>
#include <stdexcept>
#include <thread>

#include "kernels/common/cuda_check.cuh"
#include "reference/formats.hpp"
#include "reference/parallel.hpp"

namespace gemmlab {
namespace {

std::size_t storage_bytes(Format f) {
  int bits = info(f).storage_bits;
  return static_cast<std::size_t>((bits + 7) / 8);
}


// (rows, cols) row-major doubles -> bytes in `f`, laid out row- or column-major.
std::vector<unsigned char> pack(const Matrix& m, Format f, Layout layout) {
  const std::size_t eb = storage_bytes(f);
  std::vector<unsigned char> out(m.size() * eb);
  parallel_for_range(m.size(), 0, std::size_t{1} << 16, [&](std::size_t lo, std::size_t hi) {
    for (std::size_t idx = lo; idx < hi; ++idx) {
      std::size_t i = idx / m.cols, j = idx % m.cols;
      std::size_t dst = layout == Layout::row_major ? idx : j * m.rows + i;
      std::uint64_t bits = to_bits(f, m.v[idx]);
      std::memcpy(out.data() + dst * eb, &bits, eb);  // little-endian: low bytes first
    }
  });
  return out;
}

std::vector<double> unpack(const std::vector<unsigned char>& bytes, Format f, std::size_t n) {
  const std::size_t eb = storage_bytes(f);
  std::vector<double> out(n);
  parallel_for_range(n, 0, std::size_t{1} << 16, [&](std::size_t lo, std::size_t hi) {
    for (std::size_t i = lo; i < hi; ++i) {
      std::uint64_t bits = 0;
      std::memcpy(&bits, bytes.data() + i * eb, eb);
      out[i] = from_bits(f, bits);
    }
  });
  return out;
}

struct DeviceBuffer {
  void* p = nullptr;
  explicit DeviceBuffer(std::size_t bytes) {
    if (bytes) GEMMLAB_CUDA_CHECK(cudaMalloc(&p, bytes));
  }
  ~DeviceBuffer() {
    if (p) cudaFree(p);
  }
  DeviceBuffer(const DeviceBuffer&) = delete;
  DeviceBuffer& operator=(const DeviceBuffer&) = delete;
};

// Library handles and workspace of one GPU, created on its first use with that GPU current (a
// cuBLAS handle belongs to the device that was current when it was created).
struct Libraries {
  cublasHandle_t blas = nullptr;
  cublasLtHandle_t lt = nullptr;
  void* blas_workspace = nullptr;
  explicit Libraries(int device) {
    GEMMLAB_CUDA_CHECK(cudaSetDevice(device));
    GEMMLAB_CUBLAS_CHECK(cublasCreate(&blas));
    GEMMLAB_CUBLAS_CHECK(cublasSetMathMode(blas, CUBLAS_DEFAULT_MATH));
    const std::size_t ws = 64u << 20;
    GEMMLAB_CUDA_CHECK(cudaMalloc(&blas_workspace, ws));
    GEMMLAB_CUBLAS_CHECK(cublasSetWorkspace(blas, blas_workspace, ws));
    GEMMLAB_CUBLAS_CHECK(cublasLtCreate(&lt));
  }
};
Libraries& libraries(int device) {
  static std::mutex mu;
  static std::map<int, std::unique_ptr<Libraries>> libs;  // never destroyed before exit: handles stay valid
  std::lock_guard<std::mutex> lock(mu);
  auto& l = libs[device];
  if (!l) l = std::make_unique<Libraries>(device);
  return *l;
}

std::string format_uuid(const cudaUUID_t& u) {
  // nvidia-smi's spelling: GPU-8-4-4-4-12 hex digits.
  static const char* hex = "0123456789abcdef";
  std::string s = "GPU-";
  for (int i = 0; i < 16; ++i) {
    if (i == 4 || i == 6 || i == 8 || i == 10) s += '-';
    const auto b = static_cast<unsigned char>(u.bytes[i]);
    s += hex[b >> 4], s += hex[b & 15];
  }
  return s;
}

DeviceInfo probe_device(int index) {
  DeviceInfo d;
  d.device = index;
  int n = 0;
  cudaError_t e = cudaGetDeviceCount(&n);
  if (e != cudaSuccess) {
    d.why_absent = std::string("cudaGetDeviceCount failed: ") + cudaGetErrorString(e);
    cudaGetLastError();
    return d;
  }
  if (n == 0) {
    d.why_absent = "the CUDA runtime sees no device";
    return d;
  }
  if (index < 0 || index >= n) {
    d.why_absent = "there is no GPU " + std::to_string(index) + " (the CUDA runtime sees " + std::to_string(n) + ")";
    return d;
  }
  cudaDeviceProp p{};
  e = cudaGetDeviceProperties(&p, index);
  if (e != cudaSuccess) {
    d.why_absent = std::string("cudaGetDeviceProperties failed: ") + cudaGetErrorString(e);
    return d;
  }
  d.present = true;
  d.name = p.name;
  d.uuid = format_uuid(p.uuid);
  d.cc_major = p.major;
  d.cc_minor = p.minor;
  d.sm_count = p.multiProcessorCount;
  d.l2_bytes = p.l2CacheSize;
  d.global_mem_bytes = static_cast<long long>(p.totalGlobalMem);
  return d;
}

}  // namespace

int device_count() {
  int n = 0;
  if (cudaGetDeviceCount(&n) != cudaSuccess) {
    cudaGetLastError();
    return 0;
  }
  return n;
}

const DeviceInfo& query_device(int device) {
  static std::mutex mu;
  static std::map<int, std::unique_ptr<DeviceInfo>> cache;  // entries never move: references stay valid
  std::lock_guard<std::mutex> lock(mu);
  auto& d = cache[device];
  if (!d) d = std::make_unique<DeviceInfo>(probe_device(device));
  return *d;
}

std::string hardware_support(const Kernel& k, const DeviceInfo& dev) {
  if (!dev.present) return "no CUDA GPU: " + dev.why_absent;
  if (k.requires_sm90a) {
#ifndef GEMMLAB_HAVE_SM90A
    return "needs an sm_90a build (configure with -DCMAKE_CUDA_ARCHITECTURES=90a); this build has none";
#endif
    if (dev.cc() != 90)
      return "needs sm_90a (wgmma/TMA, Hopper compute capability 9.0); this GPU is " + dev.name + " (" +
             std::to_string(dev.cc_major) + "." + std::to_string(dev.cc_minor) + ")";
  }
  if (dev.cc() < k.min_cc)
    return "needs compute capability " + std::to_string(k.min_cc / 10) + "." + std::to_string(k.min_cc % 10) +
           " or newer; this GPU is " + dev.name + " (" + std::to_string(dev.cc_major) + "." +
           std::to_string(dev.cc_minor) + ")";
  return {};
}

KernelRun run_kernel(const Kernel& k, const Matrix& A, const Matrix& B, const TimingOptions& opt, int device) {
  if (A.cols != B.rows) throw std::invalid_argument("run_kernel: A is (M,K) and B must be (K,N)");
  const auto wall_start = std::chrono::steady_clock::now();
  const int M = A.rows, K = A.cols, N = B.cols;
  const DeviceInfo& dev = query_device(device);
  if (!dev.present) throw std::runtime_error("run_kernel: no CUDA GPU: " + dev.why_absent);
  GEMMLAB_CUDA_CHECK(cudaSetDevice(dev.device));

  // Inputs in the kernel's format and layouts: converted here, outside anything timed.
  auto hA = pack(A, k.numerics.input, k.layout_a);
  auto hB = pack(B, k.numerics.input, k.layout_b);
  const std::size_t c_bytes = static_cast<std::size_t>(M) * N * storage_bytes(k.numerics.output);
  DeviceBuffer dA(hA.size()), dB(hB.size()), dC(c_bytes), dW(k.workspace_bytes);
  const std::size_t flush_bytes = opt.flush_l2 ? std::max<std::size_t>(2 * dev.l2_bytes, 8u << 20) : 0;
  DeviceBuffer dFlush(flush_bytes);
  GEMMLAB_CUDA_CHECK(cudaMemcpy(dA.p, hA.data(), hA.size(), cudaMemcpyHostToDevice));
  GEMMLAB_CUDA_CHECK(cudaMemcpy(dB.p, hB.data(), hB.size(), cudaMemcpyHostToDevice));

  cudaStream_t stream;
  GEMMLAB_CUDA_CHECK(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking));
  std::unique_ptr<CUstream_st, void (*)(cudaStream_t)> stream_guard(stream, [](cudaStream_t s) { cudaStreamDestroy(s); });

  GemmArgs args;
  args.M = M;
  args.N = N;
  args.K = K;
  args.A = dA.p;
  args.B = dB.p;
  args.C = dC.p;
  args.stream = stream;
  Libraries& libs = libraries(dev.device);
  args.cublas = libs.blas;
  args.cublaslt = libs.lt;
  args.workspace = dW.p;
  args.workspace_bytes = k.workspace_bytes;

  auto prepare = [&] {
    if (flush_bytes) GEMMLAB_CUDA_CHECK(cudaMemsetAsync(dFlush.p, 0, flush_bytes, stream));
    GEMMLAB_CUDA_CHECK(cudaMemsetAsync(dC.p, 0xFF, c_bytes, stream));  // NaN poison
  };

  for (int w = 0; w < opt.warmup; ++w) {
    prepare();
    k.launch(args);
  }
  const int reps = std::max(1, opt.reps);
  std::vector<cudaEvent_t> ev(2 * reps);
  for (auto& e : ev) GEMMLAB_CUDA_CHECK(cudaEventCreate(&e));
  struct EventGuard {
    std::vector<cudaEvent_t>& ev;
    ~EventGuard() {
      for (auto e : ev) cudaEventDestroy(e);
    }
  } event_guard{ev};
  for (int r = 0; r < reps; ++r) {
    prepare();
    GEMMLAB_CUDA_CHECK(cudaEventRecord(ev[2 * r], stream));
    k.launch(args);
    GEMMLAB_CUDA_CHECK(cudaEventRecord(ev[2 * r + 1], stream));
  }
  GEMMLAB_CUDA_CHECK(cudaStreamSynchronize(stream));
  GEMMLAB_CUDA_CHECK(cudaGetLastError());

  KernelRun run;
  run.times_ms.resize(reps);
  for (int r = 0; r < reps; ++r) GEMMLAB_CUDA_CHECK(cudaEventElapsedTime(&run.times_ms[r], ev[2 * r], ev[2 * r + 1]));
  std::vector<float> sorted = run.times_ms;
  std::sort(sorted.begin(), sorted.end());
  run.time_ms_min = sorted.front();
  run.time_ms_max = sorted.back();
  run.time_ms_median = reps % 2 ? sorted[reps / 2] : 0.5 * (double(sorted[reps / 2 - 1]) + sorted[reps / 2]);
  run.tflops = 2.0 * M * N * double(K) / (run.time_ms_median * 1e-3) / 1e12;

  std::vector<unsigned char> hC(c_bytes);
  GEMMLAB_CUDA_CHECK(cudaMemcpy(hC.data(), dC.p, c_bytes, cudaMemcpyDeviceToHost));
  run.c = unpack(hC, k.numerics.output, static_cast<std::size_t>(M) * N);
  run.unwritten = std::count_if(run.c.begin(), run.c.end(), [](double x) { return std::isnan(x); });
  run.wall_seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - wall_start).count();
  return run;
}

int current_sm_clock_mhz(int device) {
  const DeviceInfo& dev = query_device(device);
  if (!dev.present) return -1;
  std::string cmd = "nvidia-smi --query-gpu=clocks.sm --format=csv,noheader,nounits -i " +
                    std::to_string(dev.device) + " 2>/dev/null";
  FILE* p = popen(cmd.c_str(), "r");
  if (!p) return -1;
  int mhz = -1;
  if (std::fscanf(p, "%d", &mhz) != 1) mhz = -1;
  pclose(p);
  return mhz;
}

namespace {
std::string smi(const std::string& field, int device) {
  std::string cmd = "nvidia-smi --query-gpu=" + field + " --format=csv,noheader,nounits -i " +
                    std::to_string(device) + " 2>/dev/null";
  FILE* p = popen(cmd.c_str(), "r");
  if (!p) return "unknown";
  char buf[256] = {0};
  std::string out = std::fgets(buf, sizeof buf, p) ? buf : "unknown";
  pclose(p);
  while (!out.empty() && (out.back() == '\n' || out.back() == ' ')) out.pop_back();
  return out.empty() ? "unknown" : out;
}
}  // namespace

SoftwareVersions software_versions(int device) {
  SoftwareVersions v;
  cudaDriverGetVersion(&v.cuda_driver_api);
  cudaRuntimeGetVersion(&v.cuda_runtime);
  int ma = 0, mi = 0, pa = 0;
  cublasGetProperty(MAJOR_VERSION, &ma);
  cublasGetProperty(MINOR_VERSION, &mi);
  cublasGetProperty(PATCH_LEVEL, &pa);
  v.cublas = std::to_string(ma) + "." + std::to_string(mi) + "." + std::to_string(pa);
  if (query_device(device).present) {
    v.driver = smi("driver_version", device);
    try {
      v.max_sm_clock_mhz = std::stoi(smi("clocks.max.sm", device));
    } catch (...) {
      v.max_sm_clock_mhz = -1;
    }
  } else {
    v.driver = "unknown";
  }
  return v;
}

namespace {
class GpuDevice final : public Device {
 public:
  explicit GpuDevice(int index) : index_(index) {}
  const DeviceInfo& info() override { return query_device(index_); }
  SoftwareVersions software() override { return software_versions(index_); }
  std::string hardware_support(const Kernel& k) override { return gemmlab::hardware_support(k, query_device(index_)); }
  KernelRun run(const Kernel& k, const Matrix& A, const Matrix& B, const TimingOptions& opt) override {
    return run_kernel(k, A, B, opt, index_);
  }
  int sm_clock_mhz() override { return current_sm_clock_mhz(index_); }
  void bind_thread() override {
    if (query_device(index_).present) GEMMLAB_CUDA_CHECK(cudaSetDevice(index_));
  }

 private:
  int index_;
};
}  // namespace

Device& gpu_device(int device) {
  static std::mutex mu;
  static std::map<int, std::unique_ptr<GpuDevice>> devices;
  std::lock_guard<std::mutex> lock(mu);
  auto& d = devices[device];
  if (!d) d = std::make_unique<GpuDevice>(device);
  return *d;
}

}  // namespace gemmlab
