#include "experiments/engine/signals.hpp"

#include <csignal>

namespace gemmlab::engine {

namespace {

volatile std::sig_atomic_t g_stop = 0;

extern "C" void on_stop_signal(int sig) {
  g_stop = sig;
  // The next signal gets the default action: a second Ctrl-C ends the process at once.
  std::signal(sig == SIGINT ? SIGTERM : SIGINT, SIG_DFL);
  std::signal(sig, SIG_DFL);
}

std::string shell_quote(const std::string& s) {
  if (!s.empty() && s.find_first_not_of("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_-+=./:,@%") ==
                        std::string::npos)
    return s;
  std::string out = "'";
  for (char c : s) out += c == '\'' ? std::string("'\\''") : std::string(1, c);
  return out + "'";
}

}  // namespace

void install_stop_handlers() {
  g_stop = 0;
  struct sigaction sa {};
  sa.sa_handler = on_stop_signal;
  sigemptyset(&sa.sa_mask);
  // SA_RESTART: a write or read under way when the signal comes resumes instead of failing with
  // EINTR, so the row in progress and its journal line complete normally.
  sa.sa_flags = SA_RESTART;
  sigaction(SIGINT, &sa, nullptr);
  sigaction(SIGTERM, &sa, nullptr);
}

void remove_stop_handlers() {
  std::signal(SIGINT, SIG_DFL);
  std::signal(SIGTERM, SIG_DFL);
}

int stop_signal() { return g_stop; }
void request_stop(int sig) { g_stop = sig; }
int stopped_exit_status(int sig) { return 128 + sig; }

std::string resume_command(const std::vector<std::string>& args) {
  std::string out;
  bool has_resume = false;
  for (const auto& a : args) {
    if (a == "--force") continue;
    if (a == "--resume") has_resume = true;
    out += (out.empty() ? "" : " ") + shell_quote(a);
  }
  if (!has_resume) out += " --resume";
  return out;
}

}  // namespace gemmlab::engine
