#include "experiments/engine/progress.hpp"

#include <unistd.h>

#include <algorithm>
#include <cmath>

namespace gemmlab::engine {

std::optional<double> eta_seconds(const ProgressSnapshot& s) {
  if (s.rate_rows < kEtaMinRows || !(s.rate_work > 0)) return std::nullopt;
  return s.rate_s / s.rate_work * std::max(0.0, s.work_left);
}

std::string format_duration(double seconds) {
  const long t = std::lround(std::max(0.0, seconds));
  char buf[32];
  if (t < 60) std::snprintf(buf, sizeof buf, "%lds", t);
  else if (t < 3600) std::snprintf(buf, sizeof buf, "%ldm%02lds", t / 60, t % 60);
  else std::snprintf(buf, sizeof buf, "%ldh%02ldm", t / 3600, (t % 3600) / 60);
  return buf;
}

std::string format_progress(const ProgressSnapshot& s) {
  char pct[16];
  std::snprintf(pct, sizeof pct, "%.1f%%", s.total ? 100.0 * static_cast<double>(s.done) / static_cast<double>(s.total) : 100.0);
  std::string out = std::to_string(s.done) + "/" + std::to_string(s.total) + " rows (" + pct + ")";
  if (s.resumed) out += ", " + std::to_string(s.resumed) + " resumed";
  out += ", elapsed " + format_duration(s.elapsed_s);
  auto eta = eta_seconds(s);
  out += ", ETA " + (eta ? format_duration(*eta) : std::string("--"));
  return out;
}

std::string format_progress_bar(const ProgressSnapshot& s, int width) {
  const int filled = s.total ? static_cast<int>(static_cast<double>(width) * static_cast<double>(s.done) / static_cast<double>(s.total)) : width;
  return "[" + std::string(static_cast<std::size_t>(filled), '#') + std::string(static_cast<std::size_t>(width - filled), '-') +
         "] " + format_progress(s);
}

Progress::Progress(std::size_t total, std::size_t resumed, std::FILE* out, std::optional<bool> live, ProgressOptions opt)
    : out_(out), live_(live ? *live : ::isatty(::fileno(out)) != 0), total_(total), resumed_(resumed), done_(resumed),
      clock_(std::move(opt.clock)), start_s_(now_s()),
      work_left_(opt.work > 0 ? opt.work : static_cast<double>(total > resumed ? total - resumed : 0)) {
  std::lock_guard<std::mutex> lock(mu_);
  if (live_) draw_locked();
  else if (resumed_) std::fprintf(out_, "[gemmlab] %s\n", format_progress(snapshot_unlocked()).c_str());
}

double Progress::now_s() const {
  if (clock_) return clock_();
  return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

ProgressSnapshot Progress::snapshot_unlocked() const {
  ProgressSnapshot s;
  const double now = now_s();
  s.done = done_, s.total = total_, s.resumed = resumed_;
  s.elapsed_s = now - start_s_;
  s.rate_rows = rate_rows_;
  s.rate_s = first_row_s_ ? now - *first_row_s_ : 0;
  s.rate_work = rate_work_;
  s.work_left = work_left_;
  return s;
}

ProgressSnapshot Progress::snapshot() const {
  std::lock_guard<std::mutex> lock(mu_);
  return snapshot_unlocked();
}

void Progress::draw_locked() {
  std::fprintf(out_, "\r\033[2K%s", format_progress_bar(snapshot_unlocked(), 30).c_str());
  std::fflush(out_);
}

void Progress::row_done(double work) {
  std::lock_guard<std::mutex> lock(mu_);
  ++done_;
  const double now = now_s();
  work_left_ -= work;
  if (!first_row_s_) {
    first_row_s_ = now;  // the start-up is in this row: the pace starts after it
  } else {
    ++rate_rows_;
    rate_work_ += work;
  }
  if (live_) {
    draw_locked();
    return;
  }
  if (last_line_s_ && done_ < total_ && now - *last_line_s_ < 1.0) return;
  last_line_s_ = now;
  std::fprintf(out_, "[gemmlab] %s\n", format_progress(snapshot_unlocked()).c_str());
}

void Progress::log(const std::string& line) {
  std::lock_guard<std::mutex> lock(mu_);
  if (live_) {
    std::fprintf(out_, "\r\033[2K%s\n", line.c_str());
    draw_locked();
  } else {
    std::fprintf(out_, "%s\n", line.c_str());
  }
}

void Progress::finish() {
  std::lock_guard<std::mutex> lock(mu_);
  if (live_) {
    draw_locked();
    std::fprintf(out_, "\n");
    live_ = false;
  }
}

}  // namespace gemmlab::engine
