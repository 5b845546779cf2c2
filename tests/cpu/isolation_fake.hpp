// The plan and the fake GPU of the isolation tests (test_isolation.cpp), shared with the fake worker
// process they start (tests/worker/fake_worker.cpp), so that parent and worker make the same plan. The
// fake runs real registered kernels' rows on the host (the exact result rounded to the output format),
// and misbehaves on one kernel as it is told: its launch never ends (its host call hangs), its process
// dies of SIGSEGV, the GPU context is lost, the launch overruns (the worker's own watchdog), or its host
// call comes back late; or the worker dies while making a reference, when no kernel runs.
#pragma once
#include <fcntl.h>
#include <unistd.h>

#include <chrono>
#include <csignal>
#include <string>
#include <thread>

#include "engine_test_util.hpp"
#include "experiments/engine/run.hpp"
#include "experiments/engine/watchdog.hpp"
#include "reference/exact_gemm.hpp"

namespace isolation_test {

// 5 kernels x 2 distributions x 1 size x 1 seed = 10 rows in 2 problems, plan order: the kernels in list
// order within each distribution.
inline gemmlab::RunPlan plan() {
  gemmlab::RunPlan p;
  p.name = "isolation";
  p.kernels = {"sgemm_01_naive", "sgemm_02_coalesce", "sgemm_03_smem", "sgemm_04_blocktile_1d",
               "sgemm_05_blocktile_2d"};
  p.distributions = {"uniform_0_1", "normal_0_1"};
  p.sizes = {{128, 128, 64}};
  p.seeds = {7};
  p.reps = 2;
  p.warmup = 1;
  p.spot_checks = 2;
  return p;
}
constexpr std::size_t kRows = 10;

// What the fake does wrong, on `kernel`'s rows (every distribution).
// overrun_stuck: an overrun whose problem cannot be let go of (its inputs' destructor never returns, as a
// cudaFree behind a launch that never ends did on the H200).
enum class Misdeed { none, hang, crash, lost, overrun, overrun_stuck, late, die_idle };
inline Misdeed misdeed_of(const std::string& s) {
  if (s == "hang") return Misdeed::hang;
  if (s == "crash") return Misdeed::crash;
  if (s == "lost") return Misdeed::lost;
  if (s == "overrun") return Misdeed::overrun;
  if (s == "overrun_stuck") return Misdeed::overrun_stuck;
  if (s == "late") return Misdeed::late;
  if (s == "die_idle") return Misdeed::die_idle;
  return Misdeed::none;
}

class FakeDevice final : public gemmlab::Device {
 public:
  FakeDevice(Misdeed m, std::string kernel, std::string ran_log)
      : misdeed_(m), kernel_(std::move(kernel)), ran_log_(std::move(ran_log)) {
    info_ = engine_test::fake_gpu_info("GPU-fake-isolation");
  }
  const gemmlab::DeviceInfo& info() override { return info_; }
  gemmlab::SoftwareVersions software() override { return {"fake", 13000, 13000, "13.0.0", 1980}; }
  std::string hardware_support(const gemmlab::Kernel&) override { return ""; }
  int sm_clock_mhz() override { return 1755; }

  std::unique_ptr<gemmlab::ProblemReference> reference(gemmlab::ProblemInputs& in,
                                                       const gemmlab::ReferenceOptions& opt) override {
    if (misdeed_ == Misdeed::die_idle) std::raise(SIGSEGV);  // gemmlab's own code, no kernel running
    return gemmlab::Device::reference(in, opt);
  }

  std::unique_ptr<gemmlab::ProblemInputs> inputs(const gemmlab::Distribution& d, int M, int N, int K, gemmlab::Format in,
                                                 std::uint64_t seed, int threads) override {
    auto base = gemmlab::Device::inputs(d, M, N, K, in, seed, threads);
    if (misdeed_ != Misdeed::overrun_stuck) return base;
    return std::make_unique<StuckInputs>(std::move(base), stuck_);
  }

  gemmlab::KernelRun run(const gemmlab::Kernel& k, const gemmlab::Matrix& A, const gemmlab::Matrix& B,
                         const gemmlab::TimingOptions&) override {
    note_ran(k.name);
    // Armed as the timing helper arms it: a worker's parent sees arm, beat and disarm.
    gemmlab::LaunchWatch watch(k.name, A.rows, B.cols, A.cols, 2.0 * A.rows * B.cols * A.cols, 3);
    watch.beat(0);
    if (kernel_ == k.name) switch (misdeed_) {
        case Misdeed::hang:
          for (;;) std::this_thread::sleep_for(std::chrono::hours(1));
        case Misdeed::crash: std::raise(SIGSEGV); break;
        case Misdeed::lost:
          throw gemmlab::CudaContextLost("CUDA error cudaErrorIllegalAddress (an illegal memory access was "
                                         "encountered) in the fake's launch of " + std::string(k.name));
        case Misdeed::overrun: throw gemmlab::LaunchTimeout(watch.overran(1, "did not end within"), true);
        case Misdeed::overrun_stuck:
          *stuck_ = true;
          throw gemmlab::LaunchTimeout(watch.overran(1, "did not end within"), true);
        case Misdeed::late:
          throw gemmlab::LaunchTimeout(watch.overran(0, "returned after 9.9 s, beyond", true), false);
        default: break;
      }
    gemmlab::KernelRun r;
    r.c = gemmlab::exact_gemm(A, B, k.numerics.output, 1).c_out;
    r.times_ms = {1.0f};
    r.time_ms_median = r.time_ms_min = r.time_ms_max = 1.0;
    r.tflops = 2.0 * A.rows * B.cols * double(A.cols) / 1e-3 / 1e12;
    r.launch_seconds = r.wall_seconds = 0.001;
    return r;
  }

 private:
  // A problem's inputs whose destructor, once its problem's launch overran (overrun_stuck), never returns.
  class StuckInputs final : public gemmlab::ProblemInputs {
   public:
    StuckInputs(std::unique_ptr<gemmlab::ProblemInputs> in, std::shared_ptr<bool> stuck)
        : in_(std::move(in)), stuck_(std::move(stuck)) {
      M = in_->M, N = in_->N, K = in_->K, format = in_->format, seconds = in_->seconds;
    }
    ~StuckInputs() override {
      while (*stuck_) std::this_thread::sleep_for(std::chrono::hours(1));
    }
    const gemmlab::Matrix& A() override { return in_->A(); }
    const gemmlab::Matrix& B() override { return in_->B(); }

   private:
    std::unique_ptr<gemmlab::ProblemInputs> in_;
    std::shared_ptr<bool> stuck_;
  };
  std::shared_ptr<bool> stuck_ = std::make_shared<bool>(false);
  // One line per kernel run, appended by every process that runs one (the parent's test counts them).
  void note_ran(const std::string& name) {
    if (ran_log_.empty()) return;
    const int fd = ::open(ran_log_.c_str(), O_WRONLY | O_CREAT | O_APPEND, 0644);
    if (fd < 0) return;
    const std::string line = name + "\n";
    (void)!::write(fd, line.data(), line.size());
    ::close(fd);
  }
  gemmlab::DeviceInfo info_;
  Misdeed misdeed_;
  std::string kernel_, ran_log_;
};

}  // namespace isolation_test
