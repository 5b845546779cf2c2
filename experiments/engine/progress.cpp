#include "experiments/engine/progress.hpp"

#include <unistd.h>

#include <algorithm>
#include <cmath>

namespace gemmlab::engine {

std::optional<double> eta_seconds(const ProgressSnapshot& s) {
  const std::size_t computed = s.done > s.resumed ? s.done - s.resumed : 0;
  if (computed == 0) return std::nullopt;
  const std::size_t left = s.total > s.done ? s.total - s.done : 0;
  return s.elapsed_s / static_cast<double>(computed) * static_cast<double>(left);
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

Progress::Progress(std::size_t total, std::size_t resumed, std::FILE* out, std::optional<bool> live)
    : out_(out), live_(live ? *live : ::isatty(::fileno(out)) != 0), total_(total), resumed_(resumed), done_(resumed),
      start_(std::chrono::steady_clock::now()) {
  std::lock_guard<std::mutex> lock(mu_);
  if (live_) draw_locked();
  else if (resumed_) std::fprintf(out_, "[gemmlab] %s\n", format_progress(snapshot_unlocked()).c_str());
}

ProgressSnapshot Progress::snapshot_unlocked() const {
  return {done_, total_, resumed_, std::chrono::duration<double>(std::chrono::steady_clock::now() - start_).count()};
}

ProgressSnapshot Progress::snapshot() const {
  std::lock_guard<std::mutex> lock(mu_);
  return snapshot_unlocked();
}

void Progress::draw_locked() {
  std::fprintf(out_, "\r\033[2K%s", format_progress_bar(snapshot_unlocked(), 30).c_str());
  std::fflush(out_);
}

void Progress::row_done() {
  std::lock_guard<std::mutex> lock(mu_);
  ++done_;
  if (live_) {
    draw_locked();
    return;
  }
  const auto now = std::chrono::steady_clock::now();
  if (last_line_ && done_ < total_ && now - *last_line_ < std::chrono::seconds(1)) return;
  last_line_ = now;
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
