// explain's own host time in its launch-heavy stages (reference/explain/tree.cpp and schedule.cpp: the tree
// revealed by FPRev, then the scheduling stage's trials) at 4096^3 with 4096 entries, against an oracle that
// answers FPRev's launches analytically for an in-mma chain of blocks (no arithmetic, no GPU): e4m3 operands
// (masks of 16 unit groups, blocks of 32) and bf16 (one group, blocks of 16). Only explain's building of the
// launches' inputs, its reading of the answers and its reconstruction are timed.
// scripts/lab/bench_fprev_host.sh builds it against two commits' tree.cpp and runs both.
#include <algorithm>
#include <chrono>
#include <cstdio>

#include "reference/explain/internal.hpp"

using namespace gemmlab;
using namespace gemmlab::explain;

namespace {
// C(i, j) of an FPRev launch when the products are summed in a chain of blocks of `block` in increasing k: the
// units after the block holding the later of the pair p < q survive (+M and -M cancel there), those before it
// are absorbed; without a pair every unit survives. The units are those of the row's fill range.
struct ChainOracle : Oracle {
  Format in;
  int block;
  ChainOracle(Format f, int b) : in(f), block(b) {}
  int M() const override { return 4096; }
  int N() const override { return 4096; }
  int K() const override { return 4096; }
  Format input() const override { return in; }
  Format output() const override { return Format::fp32; }
  std::vector<std::uint64_t> run_sparse(const SparseInputs& s, const std::vector<Entry>& e) override {
    ++launches;
    std::vector<std::uint64_t> out(e.size());
    for (std::size_t t = 0; t < e.size(); ++t) {
      const SparseVector &a = s.a_rows[t], &b = s.b_cols[t];
      const int from = a.fill_from, to = std::min(a.fill_to, K());
      int count = to - from;
      if (!a.at.empty()) {
        const int q = std::max(a.at[0].first, a.at[1].first), end = (q / block + 1) * block;
        count = std::max(0, to - std::max(from, end));
      }
      out[t] = to_bits(Format::fp32, static_cast<float>(count * a.fill * b.fill));
    }
    return out;
  }
  std::vector<std::uint64_t> run_full(const Matrix&, const Matrix&, const std::vector<Entry>& e) override {
    return std::vector<std::uint64_t>(e.size(), 0);
  }
  std::vector<Perturbation> perturbations() override { return {{"a", "a"}, {"b", "b"}, {"c", "c"}}; }
  std::string perturb(int) override { return ""; }
};
}  // namespace

int main() {
  for (Format f : {Format::e4m3, Format::bf16}) {
    ChainOracle o(f, f == Format::e4m3 ? 32 : 16);
    const Options opt;
    std::vector<Entry> E;
    for (int i = 0; i < 4096; ++i) E.push_back({i % 64, (i * 37) % 4096});
    auto t0 = std::chrono::steady_clock::now();
    const TreeStage tree = detail::reveal(o, E, opt);
    const double tree_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    const long long tree_launches = o.launches;
    t0 = std::chrono::steady_clock::now();
    const ScheduleStage sched = detail::check_schedule(o, E, tree, opt);
    const double sched_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    std::printf("%s: tree %.3f s (%lld launches, %s), scheduling %.3f s (%lld launches, %s)\n", info(f).name, tree_s,
                tree_launches, tree.ok ? "revealed" : tree.why.c_str(), sched_s, o.launches - tree_launches,
                sched.verdict.c_str());
  }
}
