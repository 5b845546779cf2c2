#include "reference/parallel.hpp"

#include <algorithm>
#include <atomic>
#include <exception>
#include <mutex>
#include <thread>
#include <vector>

namespace gemmlab {

int resolve_threads(int threads) {
  if (threads > 0) return threads;
  const unsigned hc = std::thread::hardware_concurrency();
  return hc == 0 ? 1 : static_cast<int>(hc);
}

void parallel_for(long tasks, int threads, const std::function<void(long)>& fn) {
  const int nt = static_cast<int>(std::min<long>(resolve_threads(threads), std::max(tasks, 1L)));
  if (nt <= 1) {
    for (long t = 0; t < tasks; ++t) fn(t);
    return;
  }
  std::atomic<long> next{0};
  std::exception_ptr error;
  std::mutex error_mutex;
  auto worker = [&] {
    try {
      for (long t; (t = next.fetch_add(1)) < tasks;) fn(t);
    } catch (...) {
      std::lock_guard<std::mutex> lock(error_mutex);
      if (!error) error = std::current_exception();
      next = tasks;
    }
  };
  std::vector<std::thread> pool;
  for (int t = 0; t < nt; ++t) pool.emplace_back(worker);
  for (std::thread& th : pool) th.join();
  if (error) std::rethrow_exception(error);
}

void parallel_for_range(std::size_t n, int threads, std::size_t min_chunk,
                        const std::function<void(std::size_t, std::size_t)>& fn) {
  const std::size_t nt = static_cast<std::size_t>(resolve_threads(threads));
  const std::size_t chunk = std::max<std::size_t>(min_chunk, (n + nt - 1) / std::max<std::size_t>(nt, 1));
  const long tasks = static_cast<long>((n + chunk - 1) / chunk);
  parallel_for(tasks, threads, [&](long t) {
    const std::size_t lo = static_cast<std::size_t>(t) * chunk;
    fn(lo, std::min(n, lo + chunk));
  });
}

}  // namespace gemmlab
