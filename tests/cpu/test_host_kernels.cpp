// Host kernels run only when asked for (Kernel::left_out_of_all, issue 33): `all` leaves them out,
// their name, family:<family> or a suite that names them runs them; a plan's `exclude` takes names
// and families out and refuses an unknown one as `kernels` does; a host kernel's row_note begins its
// rows' notes. And the guard that keeps the main job fast: the default suite resolves to no kernel
// that `all` should leave out (none that declares it, none of family cpu).
#include <gtest/gtest.h>

#include <algorithm>
#include <fstream>
#include <stdexcept>

#include "engine_test_util.hpp"
#include "experiments/engine/run.hpp"
#include "experiments/engine/plugin.hpp"
#include "kernels/cpu/eigen_product.hpp"
#include "kernels/registry.hpp"
#include "reference/exact_gemm.hpp"

using namespace engine_test;
using namespace gemmlab;

namespace {

void no_launch(const GemmArgs&) { throw std::logic_error("a test kernel: never launched"); }

// A kernel registered for one test and unregistered after it (the registry is per process).
struct TestKernel {
  Kernel k{};
  explicit TestKernel(const char* name, const char* family, const char* left_out = nullptr,
                      const char* row_note = nullptr) {
    k.name = name;
    k.family = family;
    k.description = "test kernel of test_host_kernels.cpp";
    k.numerics = cuda_core_fp32_fma();
    k.m_multiple = k.n_multiple = k.k_multiple = 1;
    k.launch = no_launch;
    k.left_out_of_all = left_out;
    k.row_note = row_note;
    register_kernel(k);
  }
  ~TestKernel() { unregister_kernel(k.name); }
};

std::vector<std::string> names(const ResolvedPlan& r) {
  std::vector<std::string> out;
  for (const Kernel* k : r.kernels) out.push_back(k->name);
  return out;
}

bool has(const std::vector<std::string>& v, const std::string& s) { return std::find(v.begin(), v.end(), s) != v.end(); }

ResolvedPlan resolved(std::vector<std::string> kernels, std::vector<std::string> exclude = {}) {
  RunPlan p;
  p.kernels = std::move(kernels);
  p.exclude = std::move(exclude);
  return resolve(p);
}

std::string refusal(std::vector<std::string> kernels, std::vector<std::string> exclude) {
  try {
    resolved(std::move(kernels), std::move(exclude));
  } catch (const UsageError& e) {
    return e.what();
  }
  return "";
}

bool contains(const std::string& s, const std::string& part) { return s.find(part) != std::string::npos; }

}  // namespace

TEST(LeftOutOfAll, AllSkipsAKernelThatSaysWhyItsNameAndFamilyRunIt) {
  TestKernel host("test_host_gemm", "testhost", "runs on the host (test)");
  TestKernel gpu("test_gpu_gemm", "testhost");
  const auto all = names(resolved({"all"}));
  EXPECT_FALSE(has(all, "test_host_gemm")) << "`all` runs a kernel that declares left_out_of_all";
  EXPECT_TRUE(has(all, "test_gpu_gemm"));
  // Every registered kernel without the field, and only those.
  std::size_t runs = 0;
  for (const Kernel* k : all_kernels()) runs += k->left_out_of_all == nullptr;
  EXPECT_EQ(all.size(), runs);
  EXPECT_TRUE(has(names(resolved({"test_host_gemm"})), "test_host_gemm")) << "by name";
  const auto fam = names(resolved({"family:testhost"}));
  EXPECT_EQ(fam, (std::vector<std::string>{"test_host_gemm", "test_gpu_gemm"})) << "family:<family> takes both";
  EXPECT_TRUE(has(names(resolved({"all", "family:testhost"})), "test_host_gemm"));
  EXPECT_EQ(names(resolved({"all", "test_host_gemm"})).size(), all.size() + 1);
}

TEST(LeftOutOfAll, EveryBuiltInCpuKernelSaysWhyAndIsRunByFamily) {
  std::vector<const Kernel*> cpu;
  for (const Kernel* k : all_kernels())
    if (std::string(k->family) == "cpu") cpu.push_back(k);
  if (cpu.empty()) GTEST_SKIP() << "no kernel of family cpu in this build (GEMMLAB_FAMILIES leaves out cpu)";
  const auto all = names(resolved({"all"}));
  const auto fam = names(resolved({"family:cpu"}));
  EXPECT_EQ(fam.size(), cpu.size());
  for (const Kernel* k : cpu) {
    ASSERT_NE(k->left_out_of_all, nullptr) << k->name << ": a host kernel must say why `all` leaves it out";
    EXPECT_GT(std::string(k->left_out_of_all).size(), 10u) << k->name;
    EXPECT_FALSE(has(all, k->name)) << k->name;
    EXPECT_TRUE(has(fam, k->name)) << k->name;
    // Its copies are untimed (prepare before, collect after the launch) and its rows say where it ran.
    EXPECT_NE(k->prepare, nullptr) << k->name;
    EXPECT_NE(k->collect, nullptr) << k->name;
    ASSERT_NE(k->row_note, nullptr) << k->name;
    EXPECT_TRUE(contains(k->row_note, "ran on the host CPU")) << k->row_note;
    EXPECT_TRUE(contains(k->row_note, "OpenMP thread")) << k->row_note;
    // The level and thread count the launches use (eigen_product.hpp), said as the kernel says them.
    EXPECT_TRUE(contains(k->row_note, eigen_cpu::describe(eigen_cpu::widest_level()))) << k->row_note;
    EXPECT_TRUE(contains(k->description, "host CPU")) << k->description;
    // A launch without its prepare() would time the copies or read stale buffers: refused, before any
    // CUDA call (so this runs without a GPU).
    GemmArgs args;
    args.M = args.N = args.K = 8;
    EXPECT_THROW(k->launch(args), std::logic_error) << k->name;
  }
}

// The guard of the main job (scripts/run.sh = the default suite): it must never hold a kernel that
// `all` should leave out. A host kernel there costs minutes per row at 4096^3 (issue 33: 45 min).
TEST(DefaultSuite, HoldsNoKernelThatAllShouldLeaveOut) {
  const RunPlan p = load_suite(std::string(GEMMLAB_SOURCE_DIR) + "/experiments/suites/default.toml");
  const ResolvedPlan r = resolve(p);
  ASSERT_FALSE(r.kernels.empty());
  std::size_t guarded = 0;  // registered kernels the guard would catch: it must have something to catch
  for (const Kernel* k : all_kernels()) guarded += k->left_out_of_all || std::string(k->family) == "cpu";
  if (guarded == 0) GTEST_SKIP() << "no kernel in this build that `all` should leave out (cpu family not built)";
  for (const Kernel* k : r.kernels) {
    EXPECT_EQ(k->left_out_of_all, nullptr) << "the default suite holds " << k->name << ", which `all` leaves out: "
                                           << k->left_out_of_all;
    EXPECT_NE(std::string(k->family), "cpu") << "the default suite holds the host kernel " << k->name;
  }
}

TEST(Exclude, TakesNamesAndFamiliesOutOfTheSelection) {
  TestKernel a("test_excl_a", "testexcl"), b("test_excl_b", "testexcl"), c("test_excl_c", "testexcl2");
  EXPECT_EQ(names(resolved({"family:testexcl", "family:testexcl2"}, {"test_excl_b"})),
            (std::vector<std::string>{"test_excl_a", "test_excl_c"}));
  EXPECT_EQ(names(resolved({"family:testexcl", "family:testexcl2"}, {"family:testexcl"})),
            (std::vector<std::string>{"test_excl_c"}));
  const auto all = names(resolved({"all"}));
  const auto rest = names(resolved({"all"}, {"family:testexcl", "test_excl_c"}));
  EXPECT_EQ(rest.size() + 3, all.size());
  for (const char* n : {"test_excl_a", "test_excl_b", "test_excl_c"}) EXPECT_FALSE(has(rest, n)) << n;
  // Excluding what the selection does not hold is fine (a suite may exclude family:cpu from `all`).
  EXPECT_EQ(names(resolved({"test_excl_a"}, {"test_excl_c"})), (std::vector<std::string>{"test_excl_a"}));
}

TEST(Exclude, RefusesWhatKernelsWouldRefuseAndAnEmptySelection) {
  TestKernel a("test_refuse_a", "testrefuse");
  std::string msg = refusal({"all"}, {"test_refuse"});
  EXPECT_TRUE(contains(msg, "unknown kernel 'test_refuse' in exclude (did you mean: test_refuse_a?)")) << msg;
  EXPECT_TRUE(contains(msg, "`gemmlab list` shows the")) << msg;
  msg = refusal({"all"}, {"family:no_such_family"});
  EXPECT_TRUE(contains(msg, "no kernel of family 'no_such_family' is registered in exclude")) << msg;
  msg = refusal({"all"}, {"all"});
  EXPECT_TRUE(contains(msg, "exclude: 'all' would leave no kernel")) << msg;
  msg = refusal({"test_refuse_a"}, {"family:testrefuse"});
  EXPECT_TRUE(contains(msg, "kernels [test_refuse_a] select no kernel")) << msg;
  // `kernels`' own messages are unchanged.
  msg = refusal({"test_refuse"}, {});
  EXPECT_TRUE(contains(msg, "unknown kernel 'test_refuse' (did you mean: test_refuse_a?)")) << msg;
}

TEST(Exclude, SuiteKeyIsReadAndTyped) {
  TempDir d("suite_exclude");
  const std::string ok = d / "ok.toml", empty = d / "empty.toml", bad = d / "bad.toml", worse = d / "worse.toml";
  std::ofstream(ok) << "kernels = [\"all\"]\nexclude = [\"family:cpu\", \"sgemm_01_naive\"]\n";
  std::ofstream(empty) << "exclude = []\n";
  std::ofstream(bad) << "exclude = \"family:cpu\"\n";
  std::ofstream(worse) << "exclude = [\"\"]\n";
  EXPECT_EQ(load_suite(ok).exclude, (std::vector<std::string>{"family:cpu", "sgemm_01_naive"}));
  EXPECT_TRUE(load_suite(empty).exclude.empty());
  auto message = [](const std::string& path) {
    try {
      load_suite(path);
    } catch (const UsageError& e) {
      return std::string(e.what());
    }
    return std::string();
  };
  EXPECT_TRUE(contains(message(bad), "'exclude' must be an array of strings, e.g. [\"family:cpu\"]")) << message(bad);
  EXPECT_TRUE(contains(message(worse), "'exclude' must hold only non-empty strings")) << message(worse);
}

TEST(PluginFamilyCpu, IsLeftOutOfAll) {
  auto desc = [](const char* name, const char* family) {
    gemmlab_kernel_desc d{};
    d.name = name;
    d.family = family;
    d.input_format = d.compute_format = d.accumulator_format = d.output_format = "fp32";
    d.accumulation = "library";
    d.split_k = 1;
    d.layout_a = d.layout_b = "row";
    d.m_multiple = d.n_multiple = d.k_multiple = 1;
    d.launch = [](const gemmlab_gemm_args*, char*, std::size_t) { return 0; };
    return d;
  };
  std::vector<gemmlab_kernel_desc> ks = {desc("k_host", "cpu"), desc("k_gpu", "plugin")};
  const gemmlab_plugin t{GEMMLAB_PLUGIN_ABI_VERSION, sizeof(gemmlab_kernel_desc), "host_test", 2, ks.data()};
  const auto checked = check_plugin_table(&t, "libhost.so");
  ASSERT_EQ(checked.size(), 2u);
  ASSERT_NE(checked[0]->kernel.left_out_of_all, nullptr);
  EXPECT_TRUE(contains(checked[0]->kernel.left_out_of_all, "family cpu")) << checked[0]->kernel.left_out_of_all;
  EXPECT_EQ(checked[1]->kernel.left_out_of_all, nullptr);
}

namespace {

// Runs every kernel as the exact product rounded to its output (the loop's fake GPU).
class ExactDevice final : public Device {
 public:
  ExactDevice() : info_(fake_gpu_info("GPU-fake-host-kernels")) {}
  const DeviceInfo& info() override { return info_; }
  SoftwareVersions software() override { return {"fake", 13000, 13000, "13.0.0", 1980}; }
  std::string hardware_support(const Kernel&) override { return ""; }
  KernelRun run(const Kernel& k, const Matrix& A, const Matrix& B, const TimingOptions&) override {
    KernelRun r;
    r.c = exact_gemm(A, B, k.numerics.output, 1).c_out;
    r.times_ms = {1.0f};
    r.time_ms_median = r.time_ms_min = r.time_ms_max = 1.0;
    r.launch_seconds = r.wall_seconds = 0.001;
    return r;
  }
  int sm_clock_mhz() override { return 0; }
  void bind_thread() override {}

 private:
  DeviceInfo info_;
};

}  // namespace

TEST(RowNote, BeginsEveryMeasuredRowOfItsKernel) {
  TestKernel host("test_noted_gemm", "testnoted", "runs on the host (test)", "ran on the test host; ");
  TestKernel plain("test_plain_gemm", "testnoted");
  TempDir d("row_note");
  ExactDevice dev;
  RunRequest req;
  req.plan.kernels = {"family:testnoted"};
  req.plan.distributions = {"uniform_0_1"};
  req.plan.sizes = {{32, 24, 16}};
  req.plan.reps = 1;
  req.plan.warmup = 0;
  req.plan.spot_checks = 2;
  req.plan.reference = "cpu";
  req.out_csv = d / "rows.csv";
  req.threads = 1;
  req.log = std::fopen("/dev/null", "w");
  req.live_progress = false;
  ASSERT_EQ(run_experiment(req, dev), 0);
  std::fclose(req.log);
  const Csv csv = read_csv(req.out_csv);
  ASSERT_EQ(csv.rows.size(), 2u);
  for (std::size_t i = 0; i < csv.rows.size(); ++i) {
    EXPECT_EQ(csv.col(i, "status"), "passed");
    const std::string note = csv.col(i, "note");
    if (csv.col(i, "kernel") == "test_noted_gemm") EXPECT_EQ(note.rfind("ran on the test host; ", 0), 0u) << note;
    else EXPECT_FALSE(contains(note, "ran on the test host")) << note;
  }
}
