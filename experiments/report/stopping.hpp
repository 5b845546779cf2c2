// When a row's timed launches stop, and what their times say: the one rule the timing helper
// (experiments/device/runner.cu) and every fake device of the tests follow. Plain C++.
//
// nvbench stops a measurement once the relative standard deviation of its samples is below a
// threshold (--stopping-criterion stdrel, --max-noise, --min-samples, --min-time, --timeout). gemmlab
// reports a median, so it stops on the median's own uncertainty: a distribution-free 95% confidence
// interval of the median from order statistics, [X(l), X(n+1-l)] of the n sorted times with l the
// largest rank such that P(Bin(n, 1/2) <= l - 1) <= 2.5% (the interval holds the true median unless
// at least n + 1 - l samples fall on one side of it; no normal approximation, no assumption on the
// times' distribution beyond independence: the binomial interval for a quantile of Conover's
// Practical Nonparametric Statistics). It exists from n = 6 on ([X(1), X(6)], 96.9%).
#pragma once
#include <cstddef>
#include <optional>
#include <string>
#include <utility>
#include <vector>

namespace gemmlab {

// How a row's timed launches end. Fixed (reps > 0): exactly `reps` timed launches, as `--reps N`
// asks. On noise (reps == 0, the default): launches in batches until the median's 95% confidence
// interval lies within +-max_noise of the median, at least min_samples launches were timed and their
// times add up to at least min_time_ms; or, whatever the noise, once max_time_ms of wall clock have
// passed since the first timed launch (the row then says time_limit, and its interval is wider).
struct StoppingRule {
  int reps = 0;
  double max_noise = 0.005;  // 0.5%: nvbench's --max-noise default
  int min_samples = 10;      // nvbench's --min-samples default
  double min_time_ms = 0;
  double max_time_ms = 500;
  // "" when the rule can be followed, else what is wrong in the user's words (the plan, the CLI and
  // gemmlab.judge refuse it with this message).
  std::string problem() const;
  bool operator==(const StoppingRule&) const = default;
};

// What ended a row's timed launches: the fixed count, the noise threshold, or the time limit.
enum class StopReason { reps, noise, time_limit };
const char* to_string(StopReason r);
std::optional<StopReason> parse_stop_reason(const std::string& s);

// The 0-based indices (l - 1, n - l) into n sorted times of the distribution-free 95% confidence
// interval of their median (the header's rule); nullopt for n < 6, where no pair of order statistics
// covers the median with 95% confidence.
std::optional<std::pair<std::size_t, std::size_t>> median_ci95_ranks(std::size_t n);

// What a row's times say (every field NaN for no time).
struct TimingSummary {
  double median = 0, min = 0, max = 0;
  double iqr = 0;     // interquartile_range (experiments/report/result.hpp)
  // max(median - X(l), X(n+1-l) - median) / median: the 95% interval lies within +- this fraction
  // of the median. NaN below 6 times.
  double ci95_rel = 0;
};
TimingSummary summarize(const std::vector<float>& times_ms);

// The timed launches of one row, in batches between looks at their times. The caller asks next()
// how many launches to enqueue, times them, and hands their times to add(), until next() says 0.
class LaunchBatches {
 public:
  explicit LaunchBatches(const StoppingRule& rule);
  // Launches to enqueue before the next look at the times; 0 once the row is done. `launch_ms`: the
  // wall time one launch is expected to take with what goes with it (flush, poison), from the
  // warm-up or the times so far (<= 0: unknown); `elapsed_ms`: wall time since the first timed
  // launch. A batch never runs far past max_time_ms, and gives a look at least every millisecond's
  // worth of launches and every quarter of the samples so far, so that a row stops within about a
  // quarter more samples than it needed.
  int next(double launch_ms, double elapsed_ms) const;
  // The times of the batch just run, and the wall time since the first timed launch at its end.
  void add(const std::vector<float>& times_ms, double elapsed_ms);
  bool done() const { return reason_.has_value(); }
  StopReason reason() const;  // valid once done()
  const std::vector<float>& times() const { return times_; }

 private:
  StoppingRule rule_;
  std::vector<float> times_;
  double sum_ms_ = 0;
  std::optional<StopReason> reason_;
};

}  // namespace gemmlab
