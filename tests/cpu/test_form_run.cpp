// Forms in `gemmlab run` (reference/gemm_form.hpp, experiments/engine/form_rows.hpp) end to end on the CPU: the
// plan's forms and each kernel's own, the CSV's form columns, not_applicable rows that say why, the exact
// reference of the form and its bound, resume and dry runs with forms, and the row keys; with a fake Device whose
// run_form returns the exact result of the form rounded once to the output (within every bound), or, for one
// kernel, the result without its bias (which the bound must catch).
#include <gtest/gtest.h>

#include <csignal>

#include "engine_test_util.hpp"
#include "experiments/engine/signals.hpp"
#include "experiments/engine/form_rows.hpp"
#include "experiments/engine/session.hpp"
#include "experiments/engine/run.hpp"
#include "experiments/report/result.hpp"
#include "kernels/registry.hpp"
#include "reference/gemm_form.hpp"

using namespace engine_test;
using namespace gemmlab;

namespace {

void no_launch(const GemmArgs&) { throw std::logic_error("the fake device never launches"); }

// Test kernels: fp16 in, fp32 accumulate, bf16 out, every form; one that drops its bias; one with its own form.
Kernel test_kernel(const char* name, const char* form = nullptr) {
  Kernel k{};
  k.name = name;
  k.family = "user";
  k.description = "a test kernel of forms";
  k.numerics = Numerics{.input = Format::fp16, .compute = Format::fp16, .accumulator = Format::fp32,
                        .output = Format::bf16, .accumulation = Accumulation::fma, .k_step = 1,
                        .accumulation_rounding = Rounding::nearest_even};
  k.layout_a = k.layout_b = Layout::row_major;
  k.m_multiple = k.n_multiple = k.k_multiple = 1;
  k.min_cc = 0;
  k.launch = no_launch;
  k.forms = all_forms();
  k.epilogue = epilogue_of_output(Format::bf16);
  k.epilogue.c0_placement = k.epilogue.bias_placement = Placement::before_output_rounding;
  k.form = form;
  return k;
}
const Kernel kForms = test_kernel("test_forms_bf16");
const Kernel kNoBias = test_kernel("test_forms_bf16_drops_bias");
const Kernel kOwn = test_kernel("test_forms_bf16_own", "batch=2,alpha=0.75");

struct Registered {
  Registered() {
    for (const Kernel* k : {&kForms, &kNoBias, &kOwn})
      if (!find_kernel(k->name)) register_kernel(*k);
  }
};

class FormDevice final : public Device {
 public:
  const DeviceInfo& info() override { return info_; }
  SoftwareVersions software() override { return {"fake", 13000, 13000, "13.0.0", 1980}; }
  std::string hardware_support(const Kernel&) override { return ""; }
  KernelRun run(const Kernel& k, const Matrix& A, const Matrix& B, const TimingOptions&) override {
    return result(exact_gemm(A, B, k.numerics.output, 1).c_out, A.rows, B.cols, A.cols);
  }
  KernelRun run_form(const Kernel& k, FormInputs& in, const TimingOptions&) override {
    if (++form_runs == stop_after) engine::request_stop(SIGTERM);  // as `kill -TERM` would
    FormOperands o = in.host();
    if (std::string(k.name) == kNoBias.name && o.form.bias != BiasKind::none)
      for (double& b : o.bias.v) b = 0;  // the kernel forgets its bias
    GemmReference r = exact_form(o, Format::fp32, 1);
    return result(output_reference(r, k.numerics.output), in.shape.rows, in.shape.N, in.shape.K);
  }
  int sm_clock_mhz() override { return 1755; }
  int form_runs = 0;
  int stop_after = 0;

 private:
  static KernelRun result(std::vector<double> c, int M, int N, int K) {
    KernelRun r;
    r.c = std::move(c);
    r.times_ms = {1.0f};
    r.time_ms_median = r.time_ms_min = r.time_ms_max = 1.0;
    r.tflops = 2.0 * M * N * double(K) / 1e-3 / 1e12;
    r.launch_seconds = r.wall_seconds = 0.001;
    return r;
  }
  DeviceInfo info_ = fake_gpu_info("GPU-fake-forms");
};

RunRequest request(const TempDir& d, const std::string& name) {
  RunRequest r;
  r.plan.name = "forms";
  r.plan.kernels = {"sgemm_01_naive", kForms.name, kNoBias.name};
  r.plan.distributions = {"uniform_0_1"};
  r.plan.sizes = {{40, 24, 48}};
  r.plan.seeds = {3};
  r.plan.reps = 1;
  r.plan.warmup = 0;
  r.plan.spot_checks = 4;
  r.plan.forms = {"plain", "beta=2,c0=normal_0_1,alpha=0.5,bias=column:uniform_-1_1", "batch=3", "groups=16+*"};
  r.out_csv = d / name;
  r.threads = 2;
  r.command_line = "gemmlab run (test)";
  r.log = std::fopen("/dev/null", "w");
  r.live_progress = false;
  return r;
}

// The CSV's rows as typed rows.
std::vector<ResultRow> rows_of(const std::string& csv) {
  const Csv c = read_csv(csv);
  std::vector<ResultRow> out;
  for (const auto& r : c.rows) out.push_back(from_fields(c.header, r));
  return out;
}

const ResultRow& find(const std::vector<ResultRow>& rows, const std::string& kernel, const std::string& form) {
  for (const auto& r : rows)
    if (r.kernel == kernel && r.form == form) return r;
  throw std::logic_error("no row " + kernel + " " + form);
}

TEST(FormRun, EveryFormOfThePlanWithItsColumnsAndReasons) {
  Registered reg;
  TempDir d("form_run");
  FormDevice dev;
  RunRequest req = request(d, "out.csv");
  EXPECT_EQ(run_experiment(req, dev), 0);
  std::fclose(req.log);
  const auto rows = rows_of(req.out_csv);
  ASSERT_EQ(rows.size(), 12u);  // 3 kernels x 4 forms
  const std::string addmm = "alpha=0.5,beta=2,c0=normal_0_1,bias=column:uniform_-1_1";
  // Plain rows: every kernel runs, no epilogue columns.
  for (const char* k : {"sgemm_01_naive", kForms.name, kNoBias.name}) {
    const ResultRow& r = find(rows, k, "plain");
    EXPECT_EQ(r.status, Status::passed) << k << ": " << r.note;
    EXPECT_FALSE(r.epilogue);
  }
  // The CUDA-core kernel takes no forms: not_applicable, saying what it lacks.
  const ResultRow& na = find(rows, "sgemm_01_naive", addmm);
  EXPECT_EQ(na.status, Status::not_applicable);
  EXPECT_NE(na.note.find("takes no alpha, beta C0 or a column bias"), std::string::npos) << na.note;
  EXPECT_NE(find(rows, "sgemm_01_naive", "groups=16+*").note.find("takes no groups"), std::string::npos);
  // The form kernel: correctly rounded, so passed, with its epilogue record in the row.
  for (const std::string form : {addmm, std::string("batch=3"), std::string("groups=16+*")}) {
    const ResultRow& r = find(rows, kForms.name, form);
    EXPECT_EQ(r.status, Status::passed) << form << ": " << r.note;
    ASSERT_TRUE(r.stats);
    EXPECT_EQ(r.stats->frac_correctly_rounded, 1.0) << form;
    EXPECT_EQ(r.stats->entries, form == "batch=3" ? 3 * 40 * 24 : 40 * 24) << form;
    ASSERT_TRUE(r.epilogue);
    EXPECT_EQ(r.epilogue->bias, Format::bf16);
    EXPECT_EQ(r.epilogue->bias_placement, Placement::before_output_rounding);
    EXPECT_NE(r.reference.find("+mpfr_spot4"), std::string::npos) << r.reference;
    EXPECT_EQ(r.M, 40);  // the plan's size: one batch's
  }
  // The bound sees a bias of U[-1, 1) left out.
  const ResultRow& nb = find(rows, kNoBias.name, addmm);
  EXPECT_EQ(nb.status, Status::failed_bound) << nb.note;
  EXPECT_GT(nb.stats->bound_violations, 0);
  EXPECT_NE(nb.note.find("form " + addmm), std::string::npos) << nb.note;
  // Without a bias the same kernel is right.
  EXPECT_EQ(find(rows, kNoBias.name, "batch=3").status, Status::passed);
  // Keys: the form is part of each row's identity; the plain rows keep the key they had.
  EXPECT_EQ(find(rows, kForms.name, "plain").key(), std::string(kForms.name) + "|uniform_0_1|40x24x48|3");
  EXPECT_EQ(find(rows, kForms.name, "batch=3").key(), std::string(kForms.name) + "|uniform_0_1|40x24x48|3|batch=3");
  const auto meta = nlohmann::json::parse(slurp(engine::OutputPaths::for_csv(req.out_csv).meta));
  EXPECT_EQ(meta["plan"]["forms"].size(), 4u);
}

TEST(FormRun, ResumeSkipsFinishedFormRowsAndDryRunPlansThem) {
  Registered reg;
  TempDir d("form_resume");
  RunRequest full = request(d, "full.csv");
  int all_runs = 0;
  {
    FormDevice dev;
    ASSERT_EQ(run_experiment(full, dev), 0);
    std::fclose(full.log);
    all_runs = dev.form_runs;
  }
  EXPECT_EQ(all_runs, 2 * 3);  // two form kernels x three forms that are not plain
  RunRequest dry = request(d, "dry.csv");
  dry.dry_run = true;
  ASSERT_EQ(run_experiment(dry, std::vector<Device*>{}), 0);
  std::fclose(dry.log);
  const auto planned = rows_of(dry.out_csv), done = rows_of(full.out_csv);
  ASSERT_EQ(planned.size(), 12u);
  for (std::size_t i = 0; i < planned.size(); ++i) {
    EXPECT_EQ(planned[i].key(), done[i].key());  // the same rows in the same order
    EXPECT_EQ(planned[i].status, Status::planned);
    EXPECT_EQ(planned[i].form, done[i].form);
  }
  // Stopped after the third form run (as SIGTERM would), then resumed: only the unfinished rows run again,
  // and the CSV is the uninterrupted run's.
  RunRequest req = request(d, "resumed.csv");
  {
    FormDevice dev;
    dev.stop_after = 3;
    EXPECT_EQ(run_experiment(req, dev), 128 + SIGTERM);
  }
  FormDevice dev;
  req.resume = true;
  ASSERT_EQ(run_experiment(req, dev), 0);
  std::fclose(req.log);
  EXPECT_EQ(dev.form_runs, all_runs - 3);
  EXPECT_EQ(slurp(req.out_csv), slurp(full.out_csv));
}

TEST(FormRun, DefaultRunsEachKernelsOwnFormAndFormsThatDoNotFitAreRefusedPerRow) {
  Registered reg;
  TempDir d("form_default");
  FormDevice dev;
  RunRequest req = request(d, "out.csv");
  req.plan.kernels = {"sgemm_01_naive", kOwn.name};
  req.plan.forms = {"default", "groups=1000+*"};
  ASSERT_EQ(run_experiment(req, dev), 0);
  std::fclose(req.log);
  const auto rows = rows_of(req.out_csv);
  ASSERT_EQ(rows.size(), 4u);
  EXPECT_EQ(find(rows, "sgemm_01_naive", "plain").status, Status::passed);
  const ResultRow& own = find(rows, kOwn.name, "batch=2,alpha=0.75");
  EXPECT_EQ(own.status, Status::passed) << own.note;
  EXPECT_EQ(own.stats->entries, 2 * 40 * 24);
  const ResultRow& too_big = find(rows, kOwn.name, "groups=1000+*");
  EXPECT_EQ(too_big.status, Status::not_applicable);
  EXPECT_NE(too_big.note.find("M is 40"), std::string::npos) << too_big.note;
}

TEST(FormRun, PlanFormsAreCheckedAndKeyed) {
  RunPlan p;
  p.forms = {"default", "alpha=nope"};
  EXPECT_THROW(validate_numbers(p), UsageError);
  p.forms = {"plain", "batch=2"};
  EXPECT_NO_THROW(validate_numbers(p));
  engine::PlanSpec s;
  s.kernels = {{"k1", "fp16", ""}, {"k2", "fp16", "batch=2"}, {"k3", "fp32", ""}};
  s.distributions = {"uniform_0_1"};
  s.sizes = {{8, 8, 8}};
  s.seeds = {1};
  // Default forms: each kernel's own, kernels of one form together (one problem each).
  auto rows = engine::plan_rows(s);
  ASSERT_EQ(rows.size(), 3u);
  EXPECT_EQ(rows[0].kernel, "k1");
  EXPECT_EQ(rows[1].str(), "k2|uniform_0_1|8x8x8|1|batch=2");
  EXPECT_EQ(engine::group_by_problem(rows).size(), 3u);
  // A plan of built-in, plain kernels and default forms serialises as it did before forms.
  engine::PlanSpec old = s;
  old.kernels = {{"k1", "fp16", ""}};
  EXPECT_EQ(engine::canonical_plan(old).find("\"forms\""), std::string::npos);
  EXPECT_EQ(engine::canonical_plan(old), R"({"distributions":["uniform_0_1"],"format":"gemmlab-plan-1","kernels":[["k1","fp16"]],)"
                                         R"("reference":"auto","reps":20,"seeds":[1],"sizes":[[8,8,8]],"spot_checks":16,"warmup":3})");
  // The same row twice is refused.
  s.forms = {"default", ""};
  EXPECT_THROW(engine::plan_rows(s), UsageError);
  // A CSV without a form column reads back as plain rows with the old keys.
  const std::vector<std::string> cols = {"kernel", "distribution", "M", "N", "K", "seed", "input_format"};
  EXPECT_EQ(engine::key_of_row(cols, {"k1", "uniform_0_1", "8", "8", "8", "1", "fp16"}).str(), "k1|uniform_0_1|8x8x8|1");
  const ResultRow r = from_fields({"kernel", "status"}, {"k1", "passed"});
  EXPECT_EQ(r.form, "plain");
  EXPECT_FALSE(r.epilogue);
  EXPECT_THROW(from_fields({"kernel", "form"}, {"k1", "batch=zero"}), std::invalid_argument);
}

TEST(FormRun, NotApplicableReasons) {
  const Kernel& k = kForms;
  EXPECT_EQ(form_not_applicable(k, parse_form("batch=2"), 8, 8, 8, Format::fp16), "");
  EXPECT_NE(form_not_applicable(k, parse_form("c0=cancel"), 8, 8, 8, Format::fp16).find("couples A and B"),
            std::string::npos);
  Kernel multiple = kForms;
  multiple.m_multiple = 16;
  EXPECT_NE(form_not_applicable(multiple, parse_form("groups=16+*"), 40, 8, 8, Format::fp16).find("a part of 24 rows"),
            std::string::npos);
  EXPECT_NE(form_not_applicable(k, parse_form("alpha=2"), 8, 8, 8, Format::fp64).find("fp64 GEMMs run plain"),
            std::string::npos);
}

}  // namespace

namespace {

// A kernel's own form must parse, be one it takes, and fit its input and epilogue formats: `all` runs it.
TEST(FormRun, EveryRegisteredKernelsOwnFormIsOneItTakes) {
  int with_forms = 0;
  for (const Kernel* k : all_kernels()) {
    if (!k->forms.any()) {
      EXPECT_EQ(k->form, nullptr) << k->name << " has a form of its own but takes none";
      continue;
    }
    ++with_forms;
    if (!k->form) continue;
    GemmForm f;
    ASSERT_NO_THROW(f = parse_form(k->form)) << k->name;
    EXPECT_EQ(form_unsupported(k->forms, f), "") << k->name;
    EXPECT_EQ(form_problem(f, k->numerics.input, k->epilogue), "") << k->name;
    EXPECT_EQ(form_not_applicable(*k, f, 4096, 4096, 4096, k->numerics.input), "") << k->name << " at 4096^3";
  }
  // The cuBLAS baselines of forms (kernels/cublas/kernel_list.inc) where the family is built.
  if (find_kernel("cublas_gemmex_fp16_f32")) {
    for (const char* name : {"cublaslt_bias_fp16", "cublaslt_bias_bf16", "cublas_strided_batched_bf16", "cublas_grouped_bf16"}) {
      const Kernel* k = find_kernel(name);
      ASSERT_NE(k, nullptr) << name;
      EXPECT_NE(k->form, nullptr) << name << ": a baseline of a form runs it in the default suite";
    }
    EXPECT_GE(with_forms, 4);
  }
}

}  // namespace
