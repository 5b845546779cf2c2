#include <atomic>
#include <cmath>
#include "experiments/engine/run.hpp"
#include "reference/exact_gemm.hpp"
using namespace gemmlab;
struct FakeDevice final : Device {
  DeviceInfo info_;
  FakeDevice() { info_.present = true; info_.name = "Fake"; info_.cc_major = 9; info_.l2_bytes = 50 << 20; info_.global_mem_bytes = 80ll << 30; }
  const DeviceInfo& info() override { return info_; }
  SoftwareVersions software() override { return {"fake", 13000, 13000, "13.0.0", 1980}; }
  std::string hardware_support(const Kernel& k) override { return k.requires_sm90a ? "fake GPU: no sm_90a" : ""; }
  KernelRun run(const Kernel& k, const Matrix& A, const Matrix& B, const TimingOptions&) override {
    if (std::string(k.name) == "cublas_gemmex_fp32_pedantic") throw std::runtime_error("fake launch failure");
    KernelRun r;
    r.c = exact_gemm(A, B, k.numerics.output, 1).c_out;
    // a deterministic perturbation: every 7th entry one ulp-ish off
    for (size_t i = 0; i < r.c.size(); i += 7) r.c[i] *= (1 + std::ldexp(1.0, -20));
    r.time_ms_median = r.time_ms_min = r.time_ms_max = 1.0; r.tflops = 3.5;
    return r;
  }
  int sm_clock_mhz() override { return 1755; }
};
inline RunRequest req(const char* out) {
  RunRequest r;
  r.plan.name = "x";
  r.plan.kernels = {"all"};
  r.plan.distributions = {"all", "logunif_-4_14", "cancel_-20"};
  r.plan.sizes = {{256, 256, 128}};
  r.plan.seeds = {1, 2};
  r.plan.spot_checks = 4;
  r.out_csv = out; r.threads = 2;
  return r;
}
