#include "experiments/engine/dispatch.hpp"

#include <atomic>
#include <cstdio>
#include <exception>
#include <mutex>
#include <thread>

namespace gemmlab::engine {

DispatchResult dispatch(const std::vector<Problem>& problems, const WorkerFn& fn, const RowSink& sink,
                        const DispatchOptions& opt) {
  if (opt.workers < 1) throw std::logic_error("dispatch: at least one worker is needed");
  std::atomic<std::size_t> next{0}, done{0}, emitted{0};
  std::atomic<bool> failed{false}, stopped{false};
  std::exception_ptr first_error;
  std::mutex sink_mu, error_mu;

  auto should_stop = [&] {
    if (failed.load() || stopped.load()) return true;
    if (opt.should_stop && opt.should_stop()) stopped = true;
    return stopped.load();
  };
  auto work = [&](int w) {
    try {
      if (opt.worker_start) opt.worker_start(w);
      WorkerContext ctx;
      ctx.worker = w;
      ctx.emit = [&](const std::vector<std::string>& row) {
        std::lock_guard<std::mutex> lock(sink_mu);
        sink(row);
        ++emitted;
      };
      ctx.should_stop = should_stop;
      ctx.log = opt.log;
      if (!ctx.log)
        ctx.log = [&](const std::string& line) {
          std::lock_guard<std::mutex> lock(sink_mu);
          std::fprintf(stderr, "%s\n", line.c_str());
        };
      while (!should_stop()) {
        const std::size_t i = next++;
        if (i >= problems.size()) break;
        fn(problems[i], ctx);
        ++done;
      }
    } catch (...) {
      std::lock_guard<std::mutex> lock(error_mu);
      if (!first_error) first_error = std::current_exception();
      failed = true;
    }
  };

  if (opt.workers == 1) {
    work(0);
  } else {
    std::vector<std::thread> threads;
    for (int w = 0; w < opt.workers; ++w) threads.emplace_back(work, w);
    for (auto& t : threads) t.join();
  }
  if (first_error) std::rethrow_exception(first_error);
  return {done.load(), emitted.load(), stopped.load()};
}

}  // namespace gemmlab::engine
