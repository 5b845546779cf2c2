// When a row's timed launches stop (see stopping.hpp).
#include "experiments/report/stopping.hpp"

#include <algorithm>
#include <cmath>
#include <sstream>

#include "experiments/report/result.hpp"

namespace gemmlab {

std::string StoppingRule::problem() const {
  std::ostringstream s;
  if (reps < 0) s << "reps " << reps << ": give a fixed count of at least 1, or leave it out to stop on noise";
  else if (!(max_noise > 0) || !std::isfinite(max_noise))
    s << "max_noise " << max_noise << ": give the median's relative 95% confidence half-width to stop at, a positive "
      << "fraction such as 0.005 (0.5%)";
  else if (min_samples < 1) s << "min_samples " << min_samples << ": give at least 1 (the noise stop needs 6 samples)";
  else if (!(min_time_ms >= 0) || !std::isfinite(min_time_ms))
    s << "min_time_ms " << min_time_ms << ": give a time in milliseconds, 0 or more";
  else if (!(max_time_ms > 0) || std::isnan(max_time_ms))
    s << "max_time_ms " << max_time_ms << ": give a time limit per row in milliseconds, more than 0";
  else if (max_time_ms < min_time_ms)
    s << "max_time_ms " << max_time_ms << " is below min_time_ms " << min_time_ms
      << ": the time limit would end every row before its minimum time";
  return s.str();
}

const char* to_string(StopReason r) {
  switch (r) {
    case StopReason::reps: return "reps";
    case StopReason::noise: return "noise";
    case StopReason::time_limit: return "time_limit";
  }
  return "?";
}

std::optional<StopReason> parse_stop_reason(const std::string& s) {
  for (StopReason r : {StopReason::reps, StopReason::noise, StopReason::time_limit})
    if (s == to_string(r)) return r;
  return std::nullopt;
}

std::optional<std::pair<std::size_t, std::size_t>> median_ci95_ranks(std::size_t n) {
  // The largest j with P(B <= j) <= 0.025, B ~ Bin(n, 1/2): the pmf summed from 0 up, in logs
  // (2^-n underflows past n = 1074; terms below 1e-308 add nothing the comparison could see).
  constexpr double kTail = 0.025;
  double log_pmf = -static_cast<double>(n) * std::log(2.0);  // P(B = 0)
  double cdf = 0;
  std::optional<std::size_t> j;
  for (std::size_t i = 0; 2 * i < n; ++i) {
    cdf += std::exp(log_pmf);
    if (cdf > kTail) break;
    j = i;
    log_pmf += std::log(static_cast<double>(n - i)) - std::log(static_cast<double>(i + 1));
  }
  if (!j) return std::nullopt;
  return std::make_pair(*j, n - 1 - *j);
}

TimingSummary summarize(const std::vector<float>& times_ms) {
  TimingSummary s;
  const std::size_t n = times_ms.size();
  if (n == 0) {
    s.median = s.min = s.max = s.iqr = s.ci95_rel = std::nan("");
    return s;
  }
  std::vector<float> sorted = times_ms;
  std::sort(sorted.begin(), sorted.end());
  s.min = sorted.front();
  s.max = sorted.back();
  s.median = n % 2 ? sorted[n / 2] : 0.5 * (double(sorted[n / 2 - 1]) + sorted[n / 2]);
  s.iqr = interquartile_range(std::vector<double>(sorted.begin(), sorted.end()));
  s.ci95_rel = std::nan("");
  if (const auto r = median_ci95_ranks(n)) {
    const double below = s.median - sorted[r->first], above = sorted[r->second] - s.median;
    const double half = std::max(below, above);
    s.ci95_rel = s.median > 0 ? half / s.median : half == 0 ? 0.0 : HUGE_VAL;
  }
  return s;
}

LaunchBatches::LaunchBatches(const StoppingRule& rule) : rule_(rule) {}

StopReason LaunchBatches::reason() const { return reason_.value_or(StopReason::reps); }

int LaunchBatches::next(double launch_ms, double elapsed_ms) const {
  if (done()) return 0;
  const long long n = static_cast<long long>(times_.size());
  if (rule_.reps > 0) return static_cast<int>(std::max<long long>(1, rule_.reps - n));
  long long want = std::max<long long>({1, rule_.min_samples - n, (n + 3) / 4});
  if (launch_ms > 0) want = std::max(want, static_cast<long long>(std::ceil(1.0 / launch_ms)));
  if (n > 0 && sum_ms_ < rule_.min_time_ms && sum_ms_ > 0)
    want = std::max(want, static_cast<long long>(std::ceil((rule_.min_time_ms - sum_ms_) / (sum_ms_ / n))));
  if (launch_ms > 0 && std::isfinite(rule_.max_time_ms)) {
    // The launches that fit in what is left of the time limit (one at least: a row gets a sample).
    const double left = rule_.max_time_ms - elapsed_ms;
    want = std::min(want, std::max<long long>(1, static_cast<long long>(std::ceil(left / launch_ms))));
  }
  return static_cast<int>(std::min<long long>(want, 1 << 20));
}

void LaunchBatches::add(const std::vector<float>& times_ms, double elapsed_ms) {
  if (done()) return;
  for (float t : times_ms) {
    times_.push_back(t);
    sum_ms_ += t;
  }
  const long long n = static_cast<long long>(times_.size());
  if (rule_.reps > 0) {
    if (n >= rule_.reps) reason_ = StopReason::reps;
    return;
  }
  if (n >= rule_.min_samples && sum_ms_ >= rule_.min_time_ms) {
    const double rel = summarize(times_).ci95_rel;
    if (rel <= rule_.max_noise) {  // false for NaN: below 6 samples there is no interval
      reason_ = StopReason::noise;
      return;
    }
  }
  if (elapsed_ms >= rule_.max_time_ms) reason_ = StopReason::time_limit;
}

}  // namespace gemmlab
