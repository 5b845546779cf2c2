// Disturbing how a kernel is scheduled on the GPU, to see whether its order of summation (and so its
// bits) depends on it: gemmlab explain's scheduling stage (reference/explain/schedule.cpp) and
// gemmlab.judge's determinism check run some launches
//   fewer_sms_<N>  in a CUDA green context of N SMs (cuDevSmResourceSplitByCount + cuGreenCtxCreate +
//                  cuGreenCtxStreamCreate, CUDA >= 12.5 for the stream): the kernel's stream is one of
//                  that context, so its blocks run on those N SMs only;
//   busy_sms_<N>   beside a kernel that holds N SMs: N blocks, each taking an SM's whole shared memory
//                  and 1024 threads, spin on another stream from before the launch (the host waits
//                  until all N are resident) until after it (released on the launch's stream). A
//                  kernel that needs every SM at once (a persistent grid sized for the whole GPU) cannot
//                  end while they spin: they leave by themselves once the launch has taken far longer
//                  than it takes undisturbed (release_seconds, timed by the blocks on the GPU's global
//                  timer), or after 10 s where that time is unknown; either way the hold did not last
//                  the launch, and the launch says so.
// The driver's green-context API is reached through cudaGetDriverEntryPointByVersion (no link to
// libcuda): where the driver lacks it, or the GPU cannot be split, the perturbation says why and the
// stage goes on without it.
//
// Plain C++ header (no CUDA types).
#pragma once
#include <memory>
#include <optional>
#include <stdexcept>
#include <string>
#include <vector>

namespace gemmlab {

struct Perturbation {
  enum class Kind { fewer_sms, busy_sms };
  Kind kind = Kind::fewer_sms;
  int sms = 0;
  std::string name() const;                  // "fewer_sms_64", "busy_sms_66": an identity (CSV, JSON)
  std::string words(int sm_count) const;     // "in a green context of 64 of the GPU's 132 SMs"
  // How long a launch that takes `undisturbed` seconds on the whole GPU may take under this perturbation
  // before it is taken for one that never ends: 50 times its share of the SMs' time, at least 20 s.
  double patience_seconds(double undisturbed, int sm_count) const;
  // busy_sms: how long the hold may last before it is released, for a launch that takes
  // `undisturbed` seconds on the whole GPU: 20 times its time on the SMs left, at least 50 ms, at most
  // the holding blocks' own limit of 10 s (also for an unknown time, undisturbed <= 0). A launch that
  // has not ended by then waits for the held SMs themselves, and ends only once they are released.
  double release_seconds(double undisturbed, int sm_count) const;
};
// The perturbation a name gives ("fewer_sms_64"), or nullopt.
std::optional<Perturbation> parse_perturbation(const std::string& name);

// The perturbations explain tries on a GPU of `sm_count` SMs: fewer_sms at half the SMs and at 16,
// busy_sms at half. (Green contexts on Hopper come in multiples of 8 SMs: half of 132 becomes 64.)
std::vector<Perturbation> default_perturbations(int sm_count);

// A perturbation this GPU cannot apply, found only by trying it (busy_sms on a GPU that does not run a
// launch's stream beside the holding blocks): the message says why. The Perturber remembers it, and
// available() gives the same reason from then on without trying again.
class PerturbationUnavailable : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

// The perturbations of one GPU, made on first use and kept (green contexts, their streams, the
// spinner's state). Launches under a perturbation: stream(p, base) is where they go, before(p, s)
// right before the launch on stream s, after(p, s) right after it. Not thread-safe.
class Perturber {
 public:
  explicit Perturber(int device);
  ~Perturber();
  Perturber(const Perturber&) = delete;
  Perturber& operator=(const Perturber&) = delete;
  int sm_count() const;
  // "" when p can be applied on this GPU, else why not (no green contexts in this driver, more SMs
  // asked for than the GPU can give, ...). Creates p's green context on first use.
  std::string available(const Perturbation& p);
  // The stream (a cudaStream_t) launches under p go to: fewer_sms, the green context's; else `base`.
  void* stream(const Perturbation& p, void* base);
  // busy_sms: starts the spinner on a stream of its own and waits on the host until its N blocks are
  // resident (throws std::runtime_error, naming how many became resident, when they are not within
  // a second; PerturbationUnavailable when this GPU runs the launch's stream only after them); they leave by themselves
  // `release_after` seconds after they started if after()'s release has not come by then (<= 0: their
  // own 10 s limit). fewer_sms: nothing.
  void before(const Perturbation& p, void* launch_stream, double release_after = 0);
  // busy_sms: releases the spinner, enqueued on `launch_stream` after the launch. "" or, checked once
  // the launch's stream is done, why the hold was not kept (it was released after release_after
  // seconds, or their own 10 s limit ran out first).
  std::string after(const Perturbation& p, void* launch_stream);

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace gemmlab
