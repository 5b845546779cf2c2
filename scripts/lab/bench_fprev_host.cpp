// explain's own host time per FPRev launch (reference/explain/tree.cpp, Fprev::counts): a scheduling trial's
// pairs (16 per entry) asked at 4096 entries of a 4096^3 problem, of e4m3 operands (masks of 16 unit groups:
// 16 launches per pair) and bf16 ones (one group), with an oracle that answers at once (every count 0 units),
// so that only explain's building of the launches' inputs and its reading of the answers is timed.
// scripts/lab/bench_fprev_host.sh builds it against two commits' tree.cpp and runs both.
#include <chrono>
#include <cstdio>

#include "reference/explain/internal.hpp"

using namespace gemmlab;
using namespace gemmlab::explain;

namespace {
struct InstantOracle : Oracle {
  Format in;
  explicit InstantOracle(Format f) : in(f) {}
  int M() const override { return 4096; }
  int N() const override { return 4096; }
  int K() const override { return 4096; }
  Format input() const override { return in; }
  Format output() const override { return Format::fp32; }
  std::vector<std::uint64_t> run_sparse(const SparseInputs&, const std::vector<Entry>& e) override {
    ++launches;
    return std::vector<std::uint64_t>(e.size(), 0);
  }
  std::vector<std::uint64_t> run_full(const Matrix&, const Matrix&, const std::vector<Entry>& e) override {
    return std::vector<std::uint64_t>(e.size(), 0);
  }
};
}  // namespace

int main() {
  for (Format f : {Format::e4m3, Format::bf16}) {
    InstantOracle o(f);
    detail::Fprev fp{o, detail::tree_masks(o)};
    std::vector<Entry> E;
    for (int i = 0; i < 4096; ++i) E.push_back({i % 64, (i * 37) % 4096});
    std::vector<std::pair<int, int>> pairs;
    for (int t = 0; t < 16 * 4096; ++t) {
      const int p = (t * 131) % 4095;
      pairs.push_back({p, std::min(4095, p + 1 + t % 7)});
    }
    const auto t0 = std::chrono::steady_clock::now();
    const std::vector<int> counts = fp.counts(E, pairs);
    const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    std::printf("%s: %lld launches of %zu entries, %.3f s, %.3f ms a launch (%zu counts; %s)\n", info(f).name,
                o.launches, E.size(), s, 1e3 * s / static_cast<double>(o.launches), counts.size(),
                fp.m.describe().c_str());
  }
}
