// Kernels from plugins (experiments/engine/plugin.hpp), on the CPU: every malformed field of a
// descriptor refused with a message naming the file, the descriptor and the field; the loader's
// refusals of real libraries (tests/plugins/fixture.c, built once per flaw) leaving nothing
// registered; and a valid plugin whose kernel runs on the host, through `gemmlab run`'s loop with a
// fake device: its rows equal those of the built-in kernel of the same numerics, a launch failure is
// an `error` row with the plugin's message, the metadata and the plan's identity record the plugin,
// and --resume refuses a journal once the plugin's file changed.
//
// The registry is per process and these tests may share one: every test tolerates kernels that
// another test registered before it (loading a file again is a no-op).
#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cmath>
#include <csignal>
#include <fstream>
#include <functional>

#include "engine_test_util.hpp"
#include "experiments/engine/inputs.hpp"
#include "experiments/engine/journal.hpp"
#include "experiments/engine/plugin.hpp"
#include "experiments/engine/run.hpp"
#include "experiments/engine/session.hpp"
#include "experiments/engine/signals.hpp"
#include "kernels/registry.hpp"
#include "tests/plugin_test_util.hpp"

using namespace engine_test;
using namespace gemmlab;
using gemmlab::UsageError;
using plugin_test::column;
using plugin_test::csv_records;

namespace {

const std::string kFixtures = GEMMLAB_PLUGIN_FIXTURES;
std::string fixture(const std::string& flaw) { return kFixtures + "/libgemmlab_fixture_" + flaw + ".so"; }

int ok_launch(const gemmlab_gemm_args*, char*, std::size_t) { return 0; }

// sgemm_01_naive's numerics, declared through the ABI.
gemmlab_kernel_desc fma_desc(const char* name) {
  gemmlab_kernel_desc d{};
  d.name = name;
  d.family = "plugin";
  d.description = "in-memory test descriptor";
  d.input_format = d.compute_format = d.accumulator_format = d.output_format = "fp32";
  d.accumulation = "fma";
  d.k_step = 1;
  d.split_k = 1;
  d.accumulation_rounding = "nearest_even";
  d.layout_a = d.layout_b = "row";
  d.m_multiple = d.n_multiple = d.k_multiple = 1;
  d.min_cc = 50;
  d.launch = ok_launch;
  return d;
}

struct Table {
  std::vector<gemmlab_kernel_desc> kernels;
  gemmlab_plugin t{GEMMLAB_PLUGIN_ABI_VERSION, sizeof(gemmlab_kernel_desc), "in_memory", 0, nullptr};
  explicit Table(std::vector<gemmlab_kernel_desc> k) : kernels(std::move(k)) {}
  const gemmlab_plugin* get() {
    t.count = static_cast<int>(kernels.size());
    t.kernels = kernels.data();
    return &t;
  }
};

// The message check_plugin_table refuses the table with ("" if it accepts it).
std::string refusal(Table& table) {
  try {
    check_plugin_table(table.get(), "libx.so");
  } catch (const UsageError& e) {
    return e.what();
  }
  return "";
}

std::string refusal_of_file(const std::string& path) {
  try {
    load_plugin(path);
  } catch (const UsageError& e) {
    return e.what();
  }
  return "";
}

bool contains(const std::string& s, const std::string& part) { return s.find(part) != std::string::npos; }

}  // namespace

TEST(PluginTable, DeclaredNumericsBecomeGemmlabsOwnRecord) {
  Table fma({fma_desc("k_fma")});
  auto ks = check_plugin_table(fma.get(), "libx.so");
  ASSERT_EQ(ks.size(), 1u);
  const Kernel& k = ks[0]->kernel;
  EXPECT_STREQ(k.name, "k_fma");
  EXPECT_STREQ(k.family, "plugin");
  EXPECT_STREQ(k.description, "in-memory test descriptor");
  EXPECT_EQ(k.numerics, cuda_core_fp32_fma()) << k.numerics.describe();
  EXPECT_EQ(k.layout_a, Layout::row_major);
  EXPECT_EQ(k.min_cc, 50);
  EXPECT_EQ(k.launch, nullptr) << "bound only when registered";
  EXPECT_EQ(ks[0]->file, "libx.so");

  // A tensor-core declaration gives the record of gemmlab's own wgmma kernels, field for field.
  gemmlab_kernel_desc w = fma_desc("k_wgmma");
  w.input_format = w.compute_format = "e4m3";
  w.accumulation = "promoted";
  w.instruction = "wgmma_m64n8k32_e4m3_f32";
  w.k_step = 32;
  w.promotion_interval_k = 128;
  w.accumulation_rounding = nullptr;  // the accumulation's default: toward_zero
  w.acc_unit_roundoff = 0x1p-13;
  w.subnormals_flushed = 1;
  w.layout_b = "col";
  w.m_multiple = 128;
  w.requires_sm90a = 1;
  w.workspace_bytes = 4096;
  Table tc({w});
  auto ts = check_plugin_table(tc.get(), "libx.so");
  EXPECT_EQ(ts[0]->kernel.numerics, wgmma_f32_numerics(Format::e4m3, 128)) << ts[0]->kernel.numerics.describe();
  EXPECT_TRUE(ts[0]->kernel.numerics.predictable());
  EXPECT_EQ(ts[0]->kernel.layout_b, Layout::col_major);
  EXPECT_EQ(ts[0]->kernel.m_multiple, 128);
  EXPECT_TRUE(ts[0]->kernel.requires_sm90a);
  EXPECT_EQ(ts[0]->kernel.workspace_bytes, 4096u);
}

TEST(PluginTable, EveryMalformedFieldIsRefusedNamingTheFileTheDescriptorAndTheField) {
  struct Case {
    const char* field;  // expected in the message, with the descriptor's index and name
    std::function<void(gemmlab_kernel_desc&)> spoil;
  };
  const std::vector<Case> cases = {
      {"name is NULL", [](auto& d) { d.name = nullptr; }},
      {"name is empty", [](auto& d) { d.name = ""; }},
      {"name 'a,b' has characters other than", [](auto& d) { d.name = "a,b"; }},
      {"name 'my kernel' has characters other than", [](auto& d) { d.name = "my kernel"; }},
      {"name 'all' selects every kernel", [](auto& d) { d.name = "all"; }},
      {"family is NULL", [](auto& d) { d.family = nullptr; }},
      {"family 'a/b' has characters", [](auto& d) { d.family = "a/b"; }},
      {"description must be one line", [](auto& d) { d.description = "two\nlines"; }},
      {"input_format 'float32' is not a format", [](auto& d) { d.input_format = "float32"; }},
      {"compute_format is NULL", [](auto& d) { d.compute_format = nullptr; }},
      {"output_format 'fp64' is not a format gemmlab runs kernels in", [](auto& d) { d.output_format = "fp64"; }},
      {"accumulation 'fused' is not an accumulation (fma, in_mma", [](auto& d) { d.accumulation = "fused"; }},
      {"instruction 'mma_x' is not an instruction", [](auto& d) { d.instruction = "mma_x"; }},
      {"instruction is set, but accumulation fma issues no tensor-core instruction",
       [](auto& d) { d.instruction = "mma_m16n8k16_f16_f32"; d.k_step = 16; }},
      {"k_step is 8, but mma_m16n8k16_f16_f32 takes 16",
       [](auto& d) { d.accumulation = "in_mma"; d.instruction = "mma_m16n8k16_f16_f32"; d.k_step = 8; }},
      {"k_step is 2, but accumulation fma takes one product", [](auto& d) { d.k_step = 2; }},
      {"k_step is -1", [](auto& d) { d.k_step = -1; }},
      {"promotion_interval_k is 0, but accumulation promoted needs", [](auto& d) { d.accumulation = "promoted"; d.k_step = 0; }},
      {"promotion_interval_k is for accumulation promoted only", [](auto& d) { d.promotion_interval_k = 64; }},
      {"split_k is 0", [](auto& d) { d.split_k = 0; }},
      {"accumulation_rounding 'nearest' is not a rounding", [](auto& d) { d.accumulation_rounding = "nearest"; }},
      {"acc_unit_roundoff must be 0", [](auto& d) { d.acc_unit_roundoff = -1; }},
      {"acc_unit_roundoff must be 0", [](auto& d) { d.acc_unit_roundoff = NAN; }},
      {"subnormals_flushed is 2", [](auto& d) { d.subnormals_flushed = 2; }},
      {"layout_a 'rowmajor' is not a layout (row or col)", [](auto& d) { d.layout_a = "rowmajor"; }},
      {"layout_b is NULL", [](auto& d) { d.layout_b = nullptr; }},
      {"m_multiple is 0; it must be between 1", [](auto& d) { d.m_multiple = 0; }},
      {"n_multiple is -4", [](auto& d) { d.n_multiple = -4; }},
      {"k_multiple is 0", [](auto& d) { d.k_multiple = 0; }},
      {"min_cc is -1", [](auto& d) { d.min_cc = -1; }},
      {"requires_sm90a is 2", [](auto& d) { d.requires_sm90a = 2; }},
      {"workspace_bytes is more than 1 TiB", [](auto& d) { d.workspace_bytes = std::size_t{1} << 41; }},
      {"launch is NULL", [](auto& d) { d.launch = nullptr; }},
  };
  for (const Case& c : cases) {
    // The second descriptor is the bad one: the message must say which.
    gemmlab_kernel_desc bad = fma_desc("k_bad");
    c.spoil(bad);
    Table t({fma_desc("k_good"), bad});
    const std::string msg = refusal(t);
    SCOPED_TRACE(c.field);
    EXPECT_TRUE(contains(msg, "plugin libx.so: kernel descriptor 1")) << msg;
    EXPECT_TRUE(contains(msg, c.field)) << msg;
    EXPECT_TRUE(contains(msg, "rebuild the plugin")) << msg;
    if (bad.name && std::string(bad.name) == "k_bad") EXPECT_TRUE(contains(msg, "descriptor 1 ('k_bad')")) << msg;
  }
}

TEST(PluginTable, TheTableItselfIsChecked) {
  Table good({fma_desc("k1")});
  EXPECT_EQ(refusal(good), "");
  EXPECT_TRUE(contains([] {
    try {
      check_plugin_table(nullptr, "libx.so");
    } catch (const UsageError& e) {
      return std::string(e.what());
    }
    return std::string();
  }(), "gemmlab_plugin_v1() returned NULL"));

  Table abi({fma_desc("k1")});
  abi.get();
  abi.t.abi_version = 2;
  EXPECT_TRUE(contains(refusal(abi), "built for plugin ABI version 2, and this gemmlab reads version 1: rebuild"));

  Table size({fma_desc("k1")});
  size.get();
  size.t.descriptor_size = 8;
  EXPECT_TRUE(contains(refusal(size), "its descriptors are 8 bytes"));

  Table unnamed({fma_desc("k1")});
  unnamed.t.name = "";
  EXPECT_TRUE(contains(refusal(unnamed), "the plugin's name is NULL or empty"));

  Table none({});
  EXPECT_TRUE(contains(refusal(none), "count is 0; a plugin holds 1 to 256 kernel descriptors"));
  Table many(std::vector<gemmlab_kernel_desc>(257, fma_desc("k")));
  EXPECT_TRUE(contains(refusal(many), "count is 257"));

  Table twice({fma_desc("same"), fma_desc("same")});
  EXPECT_TRUE(contains(refusal(twice), "kernel descriptor 1: name 'same' is used by an earlier descriptor"));
}

TEST(PluginLoader, RefusedLibrariesRegisterNothing) {
  const std::size_t before = all_kernels().size(), plugins_before = loaded_plugins().size();
  struct Case {
    std::string path, message;
  };
  std::vector<Case> cases = {
      {kFixtures + "/no_such.so", "does not exist or is not a file"},
      {kFixtures, "does not exist or is not a file"},  // a folder
      {std::string(GEMMLAB_SOURCE_DIR) + "/tests/plugins/fixture.c", "cannot be loaded as a shared library: "},
      {fixture("no_entry"), "has no entry point gemmlab_plugin_v1 ("},
      {fixture("abi_version"), "built for plugin ABI version 2, and this gemmlab reads version 1"},
      {fixture("unknown_format"), "kernel descriptor 0 ('plugin_host_fma'): input_format 'float32' is not a format"},
      {fixture("null_launch"), "kernel descriptor 0 ('plugin_host_fma'): launch is NULL"},
      {fixture("bad_multiple"), "kernel descriptor 0 ('plugin_host_fma'): m_multiple is 0"},
  };
  if (find_kernel("sgemm_01_naive"))
    cases.push_back({fixture("duplicate_name"), "kernel 'sgemm_01_naive' is already registered by gemmlab itself"});
  for (const Case& c : cases) {
    const std::string msg = refusal_of_file(c.path);
    EXPECT_TRUE(contains(msg, c.message)) << c.path << ": " << msg;
    EXPECT_TRUE(contains(msg, "plugin " + c.path)) << "the message names the file as given: " << msg;
  }
  EXPECT_EQ(all_kernels().size(), before);
  EXPECT_EQ(loaded_plugins().size(), plugins_before);
}

TEST(PluginLoader, ValidPluginJoinsTheRegistryOnceAndASecondCopyIsRefused) {
  const LoadedPlugin& p = load_plugin(fixture("host"));
  EXPECT_EQ(p.path, fs::canonical(fixture("host")).string());
  EXPECT_EQ(p.sha256, sha256_file(fixture("host")));
  EXPECT_EQ(p.abi_version, 1);
  EXPECT_EQ(p.name, "gemmlab_test_fixture");
  EXPECT_EQ(p.kernels, (std::vector<std::string>{"plugin_host_fma", "plugin_host_fails"}));
  const std::size_t n = all_kernels().size();
  EXPECT_EQ(&load_plugin(fixture("host")), &p) << "loading the same file again is a no-op";
  EXPECT_EQ(all_kernels().size(), n);

  const Kernel* k = find_kernel("plugin_host_fma");
  ASSERT_NE(k, nullptr);
  EXPECT_EQ(k->numerics, cuda_core_fp32_fma());
  EXPECT_NE(k->launch, nullptr);
  EXPECT_EQ(plugin_of("plugin_host_fma"), &p);
  EXPECT_EQ(plugin_of("sgemm_01_naive"), nullptr);
  // After the built-ins; `all` and family:plugin select them (resolve() reads this one list).
  RunPlan all;
  all.kernels = {"all"};
  const ResolvedPlan r = resolve(all);
  ASSERT_GE(r.kernels.size(), 2u);
  EXPECT_NE(std::find(r.kernels.begin(), r.kernels.end(), k), r.kernels.end());
  RunPlan fam;
  fam.kernels = {"family:plugin"};
  EXPECT_GE(resolve(fam).kernels.size(), 2u);

  TempDir d("plugin_copy");
  fs::copy_file(fixture("host"), d / "copy.so");
  const std::string msg = refusal_of_file(d / "copy.so");
  EXPECT_TRUE(contains(msg, "kernel 'plugin_host_fma' is already registered by plugin " + p.path)) << msg;
  EXPECT_EQ(all_kernels().size(), n);
}

namespace {

// A device that runs a plugin's kernel on the host (the `host` fixture computes on host pointers)
// and the built-in sgemm_01_naive as its numerics say (fp32 fmaf chain from +0 in k order).
class HostDevice final : public Device {
 public:
  HostDevice() {
    info_.present = true;
    info_.name = "Host device";
    info_.uuid = "GPU-host";
    info_.cc_major = 9;
    info_.l2_bytes = 1 << 20;
    info_.global_mem_bytes = 1ll << 34;
  }
  const DeviceInfo& info() override { return info_; }
  SoftwareVersions software() override { return {"host", 0, 0, "0", -1}; }
  std::string hardware_support(const Kernel&) override { return ""; }
  KernelRun run(const Kernel& k, const Matrix& A, const Matrix& B, const TimingOptions&) override {
    ++runs;
    if (stop_after_runs > 0 && runs == stop_after_runs) engine::request_stop(SIGTERM);
    const int M = A.rows, K = A.cols, N = B.cols;
    std::vector<float> a(A.v.begin(), A.v.end()), b(B.v.begin(), B.v.end()), c(std::size_t(M) * N, NAN);
    if (plugin_of(k.name)) {
      GemmArgs args;
      args.M = M, args.N = N, args.K = K;
      args.A = a.data(), args.B = b.data(), args.C = c.data();
      k.launch(args);
    } else if (std::string(k.name) == "sgemm_01_naive") {
      for (int i = 0; i < M; ++i)
        for (int j = 0; j < N; ++j) {
          float acc = 0.0f;
          for (int t = 0; t < K; ++t) acc = std::fma(a[std::size_t(i) * K + t], b[std::size_t(t) * N + j], acc);
          c[std::size_t(i) * N + j] = acc;
        }
    } else {
      throw std::logic_error(std::string("HostDevice cannot run ") + k.name);
    }
    KernelRun r;
    r.c.assign(c.begin(), c.end());
    r.times_ms = {1.0f};
    r.time_ms_median = r.time_ms_min = r.time_ms_max = 1.0;
    r.wall_seconds = 0.001;
    return r;
  }
  int sm_clock_mhz() override { return 1000; }
  int runs = 0, stop_after_runs = 0;

 private:
  DeviceInfo info_;
};

RunRequest host_request(const TempDir& d, const std::string& plugin, std::vector<std::string> kernels) {
  RunRequest r = plugin_test::plugin_request(d / "out.csv", {plugin}, std::move(kernels), {24, 20, 36}, 1);
  r.threads = 1;
  return r;
}

}  // namespace

TEST(PluginRun, ItsRowsEqualTheBuiltInKernelsOfTheSameNumericsAndAFailureIsAnErrorRow) {
  if (!find_kernel("sgemm_01_naive")) GTEST_SKIP() << "this build has no simt family (GEMMLAB_FAMILIES)";
  TempDir d("plugin_run");
  HostDevice dev;
  RunRequest req = host_request(d, fixture("host"), {"plugin_host_fma", "sgemm_01_naive", "plugin_host_fails"});
  EXPECT_EQ(run_experiment(req, dev), 3) << "plugin_host_fails raised an error";
  std::fclose(req.log);
  const auto rows = csv_records(req.out_csv);
  ASSERT_EQ(rows.size(), 1u + 3 * 2);
  const auto& h = rows[0];
  for (std::size_t r = 1; r < rows.size(); r += 3) {
    const auto &plugin = rows[r], &builtin = rows[r + 1], &fails = rows[r + 2];
    ASSERT_EQ(plugin[column(h, "kernel")], "plugin_host_fma");
    ASSERT_EQ(builtin[column(h, "kernel")], "sgemm_01_naive");
    EXPECT_EQ(plugin[column(h, "family")], "plugin");
    EXPECT_EQ(plugin[column(h, "status")], "passed") << plugin[column(h, "note")];
    for (std::size_t c = 0; c < h.size(); ++c)
      if (h[c] != "kernel" && h[c] != "family") EXPECT_EQ(plugin[c], builtin[c]) << "column " << h[c];
    EXPECT_EQ(fails[column(h, "status")], "error");
    EXPECT_EQ(fails[column(h, "note")], "plugin_host_fails (plugin " + fixture("host") +
                                            ") failed: fixture launch refused 24x20x36 on purpose");
  }

  const nlohmann::json meta = nlohmann::json::parse(slurp(d / "out.meta.json"));
  ASSERT_EQ(meta["plugins"].size(), 1u);
  EXPECT_EQ(meta["plugins"][0]["path"].get<std::string>(), fs::canonical(fixture("host")).string());
  EXPECT_EQ(meta["plugins"][0]["sha256"].get<std::string>(), sha256_file(fixture("host")));
  EXPECT_EQ(meta["plugins"][0]["abi_version"].get<int>(), 1);
  EXPECT_EQ(meta["plugins"][0]["kernels"].get<std::vector<std::string>>(), (std::vector<std::string>{"plugin_host_fma", "plugin_host_fails"}));
  EXPECT_EQ(meta["plan"]["plugins"].get<std::vector<std::string>>(), std::vector<std::string>{fixture("host")});
  const PlanSpec spec = plan_from_json(meta["engine"]["resolved_plan"]);
  ASSERT_EQ(spec.plugins.size(), 1u);
  EXPECT_EQ(spec.plugins[0].sha256, sha256_file(fixture("host")));
  EXPECT_EQ(plan_hash(spec), meta["engine"]["plan_hash"].get<std::string>()) << "merge rebuilds the plan, plugins included";
}

// The journal of a run stopped by SIGTERM, then a --resume after the plugin's file changed. Each run
// is a child process: a process holds one build of a library, as gemmlab does.
TEST(PluginRun, ResumeIsRefusedOnceThePluginFileChanged) {
  TempDir d("plugin_resume");
  const std::string lib = d / "libmine.so";
  fs::copy_file(fixture("launch_fails"), lib);  // kernel names no other CPU test registers
  auto in_child = [](const std::function<int()>& body) {
    std::fflush(nullptr);
    const pid_t pid = fork();
    if (pid == 0) {
      int rc = 99;
      try {
        rc = body();
      } catch (...) {
      }
      _exit(rc);
    }
    int status = 0;
    waitpid(pid, &status, 0);
    return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  };
  auto request = [&] { return host_request(d, lib, {"plugin_launch_fails"}); };

  EXPECT_EQ(in_child([&] {
              HostDevice dev;
              dev.stop_after_runs = 1;  // the first row finishes, then the run stops
              return run_experiment(request(), dev) == 128 + SIGTERM ? 0 : 1;
            }),
            0);
  ASSERT_TRUE(fs::exists(d / "out.csv.journal"));
  const RecoveredJournal journal = recover_journal(d / "out.csv.journal");
  EXPECT_EQ(journal.rows.size(), 1u);
  EXPECT_EQ(journal.identity.plugins, fs::canonical(lib).string() + " sha256:" + sha256_file(lib));

  const std::string before = slurp(lib), old_sha = sha256_file(lib);
  std::ofstream(lib, std::ios::app | std::ios::binary) << "rebuilt";  // still a loadable library, other bytes
  const std::string message = d / "message.txt";
  EXPECT_EQ(in_child([&] {
              HostDevice dev;
              RunRequest r = request();
              r.resume = true;
              try {
                run_experiment(r, dev);
              } catch (const UsageError& e) {
                std::ofstream(message) << e.what();
                return dev.runs == 0 ? 0 : 2;
              }
              return 1;
            }),
            0)
      << "a journal of the old plugin was resumed";
  const std::string msg = slurp(message);
  const std::string path = fs::canonical(lib).string();
  EXPECT_TRUE(contains(msg, "cannot resume from '" + d / "out.csv.journal" + "': plugins changed: journal has '" + path +
                                " sha256:" + old_sha + "', this run '" + path + " sha256:" + sha256_file(lib) + "'"))
      << msg;
  EXPECT_EQ(recover_journal(d / "out.csv.journal").rows.size(), 1u) << "a refused resume leaves the journal as it was";

  std::ofstream(lib, std::ios::trunc | std::ios::binary) << before;  // the original build back
  EXPECT_EQ(in_child([&] {
              HostDevice dev;
              RunRequest r = request();
              r.resume = true;
              return run_experiment(r, dev) == 3 && dev.runs == 1 ? 0 : 1;
            }),
            0)
      << "the same build resumes the journal and runs only the missing row";
  EXPECT_EQ(csv_records(d / "out.csv").size(), 3u);
}

TEST(PluginPlan, TheHashCoversEachPluginsPathAndBytesAndPlansWithoutPluginsHashAsBefore) {
  PlanSpec p = small_plan();
  const std::string without = canonical_plan(p);
  EXPECT_EQ(without.find("plugins"), std::string::npos) << "a plan of built-ins serialises as before plugins existed";
  p.plugins = {{"/x/libmine.so", std::string(64, 'a')}};
  const std::string h = plan_hash(p);
  EXPECT_NE(h, plan_hash(small_plan()));
  EXPECT_EQ(plan_from_json(plan_to_json(p)), p);
  PlanSpec rebuilt = p;
  rebuilt.plugins[0].sha256 = std::string(64, 'b');
  EXPECT_NE(plan_hash(rebuilt), h);
  PlanSpec moved = p;
  moved.plugins[0].path = "/y/libmine.so";
  EXPECT_NE(plan_hash(moved), h);

  JournalIdentity a = identity(p), b = identity(rebuilt);
  a.plugins = "/x/libmine.so sha256:" + std::string(64, 'a');
  b.plugins = "/x/libmine.so sha256:" + std::string(64, 'b');
  const std::string diff = identity_difference(b, a);
  EXPECT_EQ(diff.rfind("plugins changed: journal has '/x/libmine.so sha256:aaaa", 0), 0u) << diff;
  EXPECT_TRUE(contains(diff, "plan changed")) << diff;
  EXPECT_EQ(JournalIdentity::from_json(a.to_json()).plugins, a.plugins);
  nlohmann::json old = a.to_json();
  old.erase("plugins");  // a journal written before plugins existed
  EXPECT_EQ(JournalIdentity::from_json(old).plugins, "");
}

TEST(PluginPlan, SuitePluginsAreRelativeToTheSuiteFile) {
  TempDir d("plugin_suite");
  fs::create_directories(d.path / "suites");
  const std::string suite = d / "suites/mine.toml";
  std::ofstream(suite) << "kernels = [\"all\"]\nplugins = [\"../build/libmine.so\", \"/abs/libother.so\"]\n";
  const RunPlan p = load_suite(suite);
  EXPECT_EQ(p.plugins, (std::vector<std::string>{(d.path / "build/libmine.so").string(), "/abs/libother.so"}));
  std::ofstream(suite, std::ios::trunc) << "plugins = \"libmine.so\"\n";
  try {
    load_suite(suite);
    ADD_FAILURE() << "a string instead of an array was accepted";
  } catch (const UsageError& e) {
    EXPECT_TRUE(contains(e.what(), "'plugins' must be an array of strings")) << e.what();
  }
}
