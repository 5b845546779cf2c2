// The watchdog's limits and events (see watchdog.hpp).
#include "experiments/engine/watchdog.hpp"

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <mutex>
#include <set>

namespace gemmlab {

namespace {

std::mutex& limit_mu() {
  static std::mutex mu;
  return mu;
}
LaunchLimit& the_limit() {
  static LaunchLimit l;
  return l;
}
std::atomic<LaunchReporter*> the_reporter{nullptr};

std::string seconds_text(double s) {
  char buf[32];
  std::snprintf(buf, sizeof buf, s >= 100 ? "%.0f" : "%.3g", s);
  return buf;
}

}  // namespace

double LaunchLimit::seconds(double flops, bool first) const {
  return floor_seconds + flops / rate_flops + (first ? first_call_seconds : 0.0);
}

std::string LaunchLimit::words(double flops, bool first) const {
  std::string w = seconds_text(seconds(flops, first)) + " s (" + seconds_text(floor_seconds) + " s + 2MNK at " +
                  seconds_text(rate_flops / 1e9) + " GFLOP/s";
  if (first && first_call_seconds > 0) w += " + " + seconds_text(first_call_seconds) + " s for a first call";
  return w + ")";
}

LaunchLimit launch_limit() {
  std::lock_guard<std::mutex> lock(limit_mu());
  return the_limit();
}

void set_launch_limit(const LaunchLimit& l) {
  std::lock_guard<std::mutex> lock(limit_mu());
  the_limit() = l;
}

bool first_launch_of(const std::string& name) {
  static std::mutex mu;
  static std::set<std::string> seen;
  std::lock_guard<std::mutex> lock(mu);
  return seen.insert(name).second;
}

namespace {
std::atomic<bool> the_gpu_held{false};
}
void LaunchTimeout::note_gpu_held() { the_gpu_held = true; }
bool gpu_held_by_a_kernel() { return the_gpu_held.load(); }

void set_launch_reporter(LaunchReporter* r) { the_reporter = r; }
LaunchReporter* launch_reporter() { return the_reporter.load(); }

LaunchWatch::LaunchWatch(std::string kernel, int M, int N, int K, double flops, int launches, double at_least_seconds)
    : kernel_(std::move(kernel)),
      size_(std::to_string(M) + "x" + std::to_string(N) + "x" + std::to_string(K)),
      launches_(launches),
      limit_(launch_limit()),
      flops_(flops),
      first_(first_launch_of(kernel_)) {
  seconds_ = std::max(limit_.seconds(flops_, false), at_least_seconds);
  host_seconds_ = std::max(limit_.seconds(flops_, first_), at_least_seconds);
  if (limit_.enabled)
    if (LaunchReporter* r = launch_reporter()) r->arm(kernel_, size_, host_seconds_);
}

LaunchWatch::~LaunchWatch() {
  if (limit_.enabled)
    if (LaunchReporter* r = launch_reporter()) r->disarm();
}

std::string LaunchWatch::overran(int launch, const std::string& how, bool host) const {
  const bool first = host && first_;
  const double limit = host ? host_seconds_ : seconds_;
  // A batch stopped on noise has no count fixed in advance (launches_ 0): "launch 7 of sgemm_01_naive ...".
  const std::string of = launches_ > 0 ? " of " + std::to_string(launches_) : "";
  return "launch " + std::to_string(launch + 1) + of + " of " + kernel_ + " at " +
         size_ + " " + how + " its limit of " +
         (limit > limit_.seconds(flops_, first)
              ? seconds_text(limit) + " s (the patience of a launch under a schedule perturbation)"
              : limit_.words(flops_, first)) +
         "; --launch-timeout (launch_timeout= in Python) sets the floor";
}

void LaunchWatch::beat(int launch) {
  if (!limit_.enabled) return;
  LaunchReporter* r = launch_reporter();
  if (!r) return;
  // At most four a second: the parent's patience is the limit (10 s at least), and a main job's rows
  // should not each send dozens of messages.
  const auto now = std::chrono::steady_clock::now();
  if (beaten_ && now - last_beat_ < std::chrono::milliseconds(250)) return;
  beaten_ = true;
  last_beat_ = now;
  r->beat("launch " + std::to_string(launch + 1) + (launches_ > 0 ? " of " + std::to_string(launches_) : std::string()));
}

}  // namespace gemmlab
