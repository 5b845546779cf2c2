// `gemmlab invariance`'s core (experiments/engine/invariance.hpp) against a fake device whose
// kernels have known variance: one sums every entry in one fp32 chain (invariant), one switches to
// split-K 2 when M > 64, one reverses its order on every other launch (not deterministic), one
// takes only M multiples of 8, and one stream-K-like kernel splits the last tiles' K in two when
// the tile count is not a multiple of 4. The core must find each variance, at exactly the sizes
// where it is, and name its cause (split-K, the chunk map); the reveal goes through the fake's
// launches, as it goes through the GPU's.
#include <gtest/gtest.h>

#include <unistd.h>

#include <cmath>
#include <csignal>
#include <filesystem>
#include <fstream>
#include <set>
#include <string>

#include "engine_test_util.hpp"
#include "experiments/engine/invariance.hpp"
#include "experiments/engine/signals.hpp"
#include "experiments/plan/plan.hpp"
#include "reference/summation_tree.hpp"

using namespace gemmlab;

namespace {

// Where the fake kernels cut an entry's K range: each chunk is an fp32 fmaf chain from +0 in
// increasing k (or decreasing, for the nondeterministic kernel's odd launches), the chunk sums
// added in increasing k.
constexpr int kTile = 16;

int tiles(int M, int N) { return ((M + kTile - 1) / kTile) * ((N + kTile - 1) / kTile); }

// Stream-K-like: when the tile count is not a multiple of 4 (a partial last wave), the last tile
// of the row-major order is split at K/2.
KChunkMap streamk_chunks(int M, int N, int K) {
  KChunkMap map;
  map.tile_m = map.tile_n = kTile;
  map.tiles_n = (N + kTile - 1) / kTile;
  const int t = tiles(M, N);
  map.bounds.assign(t, {0, K});
  if (t % 4 != 0) map.bounds.back() = {0, K / 2, K};
  return map;
}

Kernel fake(const char* name, Numerics n, int m_multiple = 1) {
  Kernel k{};
  k.name = name;
  k.family = "fake";
  k.description = "a fake kernel of known variance";
  k.numerics = n;
  k.layout_a = k.layout_b = Layout::row_major;
  k.m_multiple = m_multiple;
  k.n_multiple = k.k_multiple = 1;
  k.min_cc = 0;
  return k;
}

const Kernel& sequential() {
  static const Kernel k = fake("fake_sequential", cuda_core_fp32_fma());
  return k;
}
const Kernel& splitk_above_64() {
  static const Kernel k = fake("fake_splitk2_above_m64", cuda_core_fp32_fma());
  return k;
}
const Kernel& flipping() {
  static const Kernel k = fake("fake_nondeterministic", cuda_core_fp32_fma());
  return k;
}
const Kernel& multiple_of_8() {
  static const Kernel k = fake("fake_m_multiple_8", cuda_core_fp32_fma(), 8);
  return k;
}
const Kernel& streamk() {
  static const Kernel k = [] {
    Numerics n = cuda_core_fp32_fma();
    n.k_chunked = true;
    Kernel x = fake("fake_streamk", n);
    x.k_chunks = streamk_chunks;
    return x;
  }();
  return k;
}

class FakeDevice final : public Device {
 public:
  FakeDevice() {
    info_ = engine_test::fake_gpu_info("GPU-fake-invariance");
  }
  const DeviceInfo& info() override { return info_; }
  SoftwareVersions software() override { return {"fake", 13000, 13000, "13.0.0", 1980}; }
  std::string hardware_support(const Kernel&) override { return ""; }
  int sm_clock_mhz() override { return 1755; }

  KernelRun run(const Kernel& k, const Matrix& A, const Matrix& B, const TimingOptions&) override {
    const int M = A.rows, N = B.cols, K = A.cols;
    const std::string name = k.name;
    const bool reversed = name == "fake_nondeterministic" && (launches_++ % 2 == 1);
    KernelRun r;
    r.c.resize(static_cast<std::size_t>(M) * N);
    const KChunkMap chunks = name == "fake_streamk" ? streamk_chunks(M, N, K) : KChunkMap{};
    for (int i = 0; i < M; ++i)
      for (int j = 0; j < N; ++j) {
        std::vector<int> cuts = {0, K};
        if (name == "fake_splitk2_above_m64" && M > 64) cuts = {0, K / 2, K};
        if (name == "fake_streamk") cuts = chunks.of(i, j);
        float total = 0;
        for (std::size_t c = 0; c + 1 < cuts.size(); ++c) {
          float acc = 0;
          for (int x = 0; x < cuts[c + 1] - cuts[c]; ++x) {
            const int kk = reversed ? cuts[c + 1] - 1 - x : cuts[c] + x;
            acc = std::fmaf(static_cast<float>(A(i, kk)), static_cast<float>(B(kk, j)), acc);
          }
          total = c == 0 ? acc : total + acc;
        }
        r.c[static_cast<std::size_t>(i) * N + j] = total;
      }
    r.times_ms = {1.0f};
    r.time_ms_median = r.time_ms_min = r.time_ms_max = 1.0;
    return r;
  }

 private:
  DeviceInfo info_;
  int launches_ = 0;
};

InvarianceSpec spec(int M, int N, int K) {
  InvarianceSpec s;
  s.M = M;
  s.N = N;
  s.K = K;
  s.ms = default_sweep(M);
  s.ns = {1, 3, N / 2};
  s.k_tails = {1, 16};
  s.repeats = 3;
  s.distribution = parse_distribution("uniform_-1_1");
  s.seed = 7;
  s.threads = 1;
  return s;
}

bool has(const std::string& s, const std::string& part) { return s.find(part) != std::string::npos; }

}  // namespace

TEST(Invariance, DefaultSweepHasNonTileMultiplesBelowTheFullSize) {
  const std::vector<int> expect = {1, 2, 3, 4, 5, 6, 7, 8, 15, 16, 17, 31, 32, 33, 63, 64, 65, 127};
  EXPECT_EQ(default_sweep(128), expect);
  EXPECT_EQ(default_sweep(1), std::vector<int>{});
}

TEST(Invariance, SplitPartsOfKnownTrees) {
  EXPECT_EQ(split_parts(sequential_tree(37)).size(), 1u);
  EXPECT_EQ(split_parts(blocked_tree(128, 16, true)).size(), 1u);
  EXPECT_EQ(split_parts(blocked_tree(128, 16, false)).size(), 1u);
  EXPECT_EQ(split_parts(split_blocked_tree(128, 16, 2, true)).size(), 2u);
  EXPECT_EQ(split_parts(split_blocked_tree(96, 16, 3, false)).size(), 3u);
  // Promotion sums each group of 64 from zero and adds the group sums: 4 parts, as split-K 4 would.
  EXPECT_EQ(split_parts(promoted_tree(256, 16, 64)).size(), 4u);
  EXPECT_EQ(describe_parts(split_blocked_tree(64, 16, 2, true)), "2 parts: k in [0,16) + 32j, j < 2; k in [16,32) + 32j, j < 2");
  EXPECT_TRUE(has(explain_trees(sequential_tree(64), "at 8x8x64", split_blocked_tree(64, 1, 2, true), "at 128x8x64"),
                  "split-K 1 at 8x8x64 vs split-K 2 at 128x8x64"));
  EXPECT_TRUE(has(explain_trees(sequential_tree(16), "a", sequential_tree(16), "b"), "the same summation tree"));
  EXPECT_TRUE(has(explain_trees(blocked_tree(64, 16, true), "a", blocked_tree(64, 8, true), "b"),
                  "another tree with the same split-K count (1)"));
}

TEST(Invariance, ByConstructionFollowsTheNumerics) {
  EXPECT_EQ(invariance_by_construction(sequential()).rfind("yes: fixed tiling", 0), 0u);
  EXPECT_EQ(invariance_by_construction(streamk()).rfind("depends: stream-K", 0), 0u);
  Numerics lib = cuda_core_fp32_fma();
  lib.accumulation = Accumulation::library;
  EXPECT_EQ(invariance_by_construction(fake("lib", lib)).rfind("unknown:", 0), 0u);
  Numerics split = cuda_core_fp32_fma();
  split.split_k = 2;
  EXPECT_EQ(invariance_by_construction(fake("split", split)), "yes: a fixed split-K of 2, the same at every size");
}

TEST(Invariance, AFixedOrderIsInvariantEverywhere) {
  FakeDevice dev;
  const auto rows = check_invariance(sequential(), dev, spec(128, 16, 64));
  const InvarianceSpec s = spec(128, 16, 64);
  ASSERT_EQ(rows.size(), 1 + s.ms.size() + s.ns.size() + s.k_tails.size() + 1);
  for (const auto& r : rows) {
    if (r.check == "cost") {
      EXPECT_EQ(r.status, "measured");
      EXPECT_EQ(r.time_ms_median, 1.0);
      continue;
    }
    EXPECT_EQ(r.status, "equal") << r.check << " " << r.m << " " << r.n << " " << r.k << ": " << r.why;
    EXPECT_EQ(r.differing, 0);
    EXPECT_EQ(r.compared, r.check == "m" ? 16LL * r.m : r.check == "n" ? 128LL * r.n : 128LL * 16);
    EXPECT_EQ(r.gpu, "Fake GPU");
  }
}

TEST(Invariance, SplitKAboveM64IsFoundAtEverySmallMAndExplained) {
  FakeDevice dev;
  const InvarianceSpec s = spec(128, 16, 64);
  const auto rows = check_invariance(splitk_above_64(), dev, s);
  int differs = 0;
  for (const auto& r : rows) {
    if (r.check != "m") continue;
    if (r.m <= 64) {
      ++differs;
      EXPECT_EQ(r.status, "differs") << r.m;
      EXPECT_GE(r.first_i, 0);
      EXPECT_LT(r.first_i, r.m);
      EXPECT_TRUE(has(r.why, "split-K 1 at " + std::to_string(r.m) + "x16x64 vs split-K 2 at 128x16x64")) << r.why;
      EXPECT_TRUE(has(r.why, "k in [0,32); k in [32,64)")) << r.why;
    } else {
      EXPECT_EQ(r.status, "equal") << r.m << ": " << r.why;
    }
  }
  EXPECT_EQ(differs, 16);  // 1..8, 15, 16, 17, 31, 32, 33, 63, 64
  for (const auto& r : rows) {
    if (r.check == "n" || r.check == "repeat") EXPECT_EQ(r.status, "equal") << r.check << " " << r.n;
    // K + 1 keeps the split point (K + 1) / 2 = 32 and adds a zero to the second part: equal.
    // K + 16 moves it to 40: the tail differs, and the reveal says the parts moved.
    if (r.check == "k_tail" && r.k == 65) EXPECT_EQ(r.status, "equal") << r.why;
    if (r.check == "k_tail" && r.k == 80) {
      EXPECT_EQ(r.status, "differs");
      EXPECT_TRUE(has(r.why, "another tree with the same split-K count (2)")) << r.why;
    }
  }
}

TEST(Invariance, ANondeterministicKernelIsFoundRunToRun) {
  FakeDevice dev;
  InvarianceSpec s = spec(32, 8, 48);
  s.ms = {5};
  s.ns = {};
  s.k_tails = {};
  s.cost = false;
  const auto rows = check_invariance(flipping(), dev, s);
  ASSERT_EQ(rows.size(), 2u);
  EXPECT_EQ(rows[0].check, "repeat");
  EXPECT_EQ(rows[0].status, "differs");
  EXPECT_GT(rows[0].differing, 0);
  EXPECT_TRUE(has(rows[0].why, "not deterministic run to run")) << rows[0].why;
  EXPECT_EQ(rows[0].compared, 32 * 8);
}

TEST(Invariance, SizesAKernelCannotTakeAreRowsNotGaps) {
  FakeDevice dev;
  InvarianceSpec s = spec(64, 8, 32);
  s.cost = false;
  const auto rows = check_invariance(multiple_of_8(), dev, s);
  int not_supported = 0;
  for (const auto& r : rows)
    if (r.check == "m") {
      if (r.m % 8 != 0) {
        ++not_supported;
        EXPECT_EQ(r.status, "not_supported");
        EXPECT_TRUE(has(r.note, "needs M a multiple of 8")) << r.note;
      } else {
        EXPECT_EQ(r.status, "equal");
      }
    }
  EXPECT_EQ(not_supported, 12);  // 1..7, 15, 17, 31, 33, 63
}

TEST(Invariance, StreamKChunkChangesAreNamedFromTheChunkMap) {
  FakeDevice dev;
  // 64x64: 16 tiles, none split; m = 16, 32, 48 give 4, 8, 12 tiles, none split: every row equal.
  InvarianceSpec s = spec(64, 64, 32);
  s.ms = {16, 32, 48};
  s.ns = {};
  s.k_tails = {};
  s.cost = false;
  const auto rows = check_invariance(streamk(), dev, s);
  for (const auto& r : rows) {
    if (r.check != "m") continue;
    EXPECT_EQ(r.status, "equal") << r.m;
  }
  // 80x48: 5 x 3 = 15 tiles, the last, (4, 2), split; m = 24: 6 tiles, the last, (1, 2), split while
  // the full size sums it whole; m = 40: 9 tiles, (2, 2) split; m = 56: 12 tiles, none split.
  s.M = 80;
  s.N = 48;
  s.ms = {24, 40, 56};
  const auto rows2 = check_invariance(streamk(), dev, s);
  for (const auto& r : rows2) {
    if (r.check != "m") continue;
    const int t = tiles(r.m, 48);
    if (t % 4 != 0) {
      EXPECT_EQ(r.status, "differs") << r.m;
      EXPECT_TRUE(has(r.why, "stream-K split-K: C(")) << r.why;
      EXPECT_TRUE(has(r.why, "2 chunks {0,16,32}")) << r.why;
      EXPECT_TRUE(has(r.why, "split-K 2 at")) << r.why;  // the revealed trees agree with the map
    } else {
      EXPECT_EQ(r.status, "equal") << r.m;
    }
  }
}

TEST(Invariance, BadSweepsAreUsageErrors) {
  FakeDevice dev;
  InvarianceSpec s = spec(32, 8, 16);
  s.ms = {33};
  EXPECT_THROW(check_invariance(sequential(), dev, s), UsageError);
  s = spec(32, 8, 16);
  s.k_tails = {0};
  EXPECT_THROW(check_invariance(sequential(), dev, s), UsageError);
}

TEST(Invariance, TheShippedSuiteHasItsTableAndBadTablesAreNamed) {
  const RunPlan p = load_suite(find_suite("invariance"));
  ASSERT_TRUE(p.invariance.has_value());
  EXPECT_EQ(p.invariance->m, std::vector<std::string>{"default"});
  EXPECT_EQ(p.invariance->n, (std::vector<std::string>{"1", "127", "256"}));
  EXPECT_EQ(p.invariance->settings, (std::vector<std::string>{"default", "ws=0", "cfg=:4096:8"}));
  EXPECT_EQ(p.invariance->repeats, 3);
  EXPECT_FALSE(load_suite(find_suite("smoke")).invariance.has_value());
  const std::string path = (std::filesystem::temp_directory_path() / "gemmlab_bad_invariance.toml").string();
  for (const auto& [body, says] : std::vector<std::pair<std::string, std::string>>{
           {"[invariance]\nmm = [1]\n", "'invariance.mm' is not a key of [invariance]"},
           {"[invariance]\nm = [\"all\"]\n", "must hold whole numbers or \"default\""},
           {"[invariance]\ncost = 1\n", "'invariance.cost' must be true or false"},
           {"invariance = 3\n", "'invariance' must be a table"}}) {
    std::ofstream(path) << body;
    try {
      load_suite(path);
      ADD_FAILURE() << body;
    } catch (const UsageError& e) {
      EXPECT_NE(std::string(e.what()).find(says), std::string::npos) << e.what();
    }
  }
  std::filesystem::remove(path);
}

// The journaled run: a run stopped after its first unit keeps that unit's rows in the journal;
// --resume computes only the other units and gives the CSV an uninterrupted run gives, byte for byte
// (the fake's timings are constant).
TEST(Invariance, AStoppedRunResumesToTheSameCsv) {
  const auto dir = std::filesystem::temp_directory_path() / ("gemmlab_invariance_run_" + std::to_string(::getpid()));
  std::filesystem::remove_all(dir);
  std::filesystem::create_directories(dir);
  InvarianceSpec s = spec(96, 8, 64);
  s.ns = {};
  s.k_tails = {};
  s.cost = false;
  auto request = [&](const std::string& csv) {
    InvarianceRunRequest req;
    for (const Kernel* k : {&sequential(), &splitk_above_64(), &multiple_of_8()}) req.units.push_back({{k, "default", {}}, s});
    req.out_csv = (dir / csv).string();
    req.meta = nlohmann::json::object();
    req.log = nullptr;
    return req;
  };
  FakeDevice dev;
  std::vector<std::vector<std::string>> whole;
  ASSERT_EQ(run_invariance(request("whole.csv"), dev, &whole), 0);
  EXPECT_EQ(whole.size(), 3 * (1 + s.ms.size()));

  // A device that asks to stop during the first unit: that unit finishes, the others wait.
  class StoppingDevice final : public Device {
   public:
    explicit StoppingDevice(Device& d) : d_(d) {}
    const DeviceInfo& info() override { return d_.info(); }
    SoftwareVersions software() override { return d_.software(); }
    std::string hardware_support(const Kernel& k) override { return d_.hardware_support(k); }
    int sm_clock_mhz() override { return 1755; }
    KernelRun run(const Kernel& k, const Matrix& A, const Matrix& B, const TimingOptions& o) override {
      if (++launches == 1) engine::request_stop(SIGTERM);
      seen.insert(k.name);
      return d_.run(k, A, B, o);
    }
    Device& d_;
    int launches = 0;
    std::set<std::string> seen;
  };
  FakeDevice dev2;
  StoppingDevice stopping(dev2);
  EXPECT_EQ(run_invariance(request("cut.csv"), stopping), 128 + SIGTERM);
  EXPECT_FALSE(std::filesystem::exists(dir / "cut.csv"));
  EXPECT_TRUE(std::filesystem::exists(dir / "cut.csv.journal"));
  EXPECT_EQ(stopping.seen, std::set<std::string>{"fake_sequential"});

  InvarianceRunRequest again = request("cut.csv");
  EXPECT_THROW(run_invariance(again, dev2), UsageError) << "a journal is there: --resume or --force";
  again.session.resume = true;
  StoppingDevice counting(dev2);
  counting.launches = 1;  // no further stop
  EXPECT_EQ(run_invariance(again, counting), 0);
  EXPECT_EQ(counting.seen.count("fake_sequential"), 0u) << "the journaled unit is not computed again";
  auto slurp = [](const std::filesystem::path& p) {
    std::ifstream f(p);
    return std::string(std::istreambuf_iterator<char>(f), {});
  };
  EXPECT_EQ(slurp(dir / "cut.csv"), slurp(dir / "whole.csv"));
  EXPECT_FALSE(std::filesystem::exists(dir / "cut.csv.journal"));
  std::filesystem::remove_all(dir);
}
