// Schedule perturbations on the GPU (experiments/device/perturb.*) and what explain and the timing
// helper do with them, on test kernels whose behaviour under each perturbation is known:
//  * busy_sms_<N> and fewer_sms_<N> keep a kernel's blocks off the SMs they hold back (the SM ids
//    its blocks ran on, read with %smid);
//  * a CUDA-core kernel that splits K in two when its stream has fewer SMs than the GPU (as a library
//    that sizes its split-K by the SMs it sees) is reported by explain as "order depends on
//    scheduling", exposed by the green context, its other order revealed, identified, and judged by a
//    bound covering both orders where the record names them (else by none, saying why); the
//    timing helper's perturbed launch (gemmlab.judge's determinism check) sees its bits change under
//    fewer_sms and not under busy_sms;
//  * a kernel that hits an illegal memory access leaves explain's report unidentified and oracle_lost,
//    the reason naming the CUDA error and what to do (in a child process: the context is lost there).
// Each test skips, saying why, without a GPU or where this driver has no green contexts.
#include <gtest/gtest.h>

#include <cuda.h>
#include <cuda_runtime.h>

#include <cstdlib>
#include <set>
#include <string>
#include <vector>

#include "experiments/device/explain_gpu.hpp"
#include "experiments/device/perturb.hpp"
#include "kernels/common/cuda_check.cuh"
#include "reference/distributions.hpp"
#include "reference/error_stats.hpp"
#include "reference/numerics.hpp"
#include "reference/summation_tree.hpp"
#include "tests/gpu/gpu_test_util.hpp"

using namespace gemmlab;

namespace {

bool contains(const std::string& s, const std::string& part) { return s.find(part) != std::string::npos; }

// The SMs a launch on `s` may use: its green context's where it has one, else the GPU's.
int stream_sms(cudaStream_t s, int device) {
  using GetGreen = CUresult (*)(CUstream, CUgreenCtx*);
  using GetResource = CUresult (*)(CUgreenCtx, CUdevResource*, CUdevResourceType);
  auto entry = [](const char* name) {
    void* fn = nullptr;
    cudaDriverEntryPointQueryResult found{};
    if (cudaGetDriverEntryPointByVersion(name, &fn, 12040, cudaEnableDefault, &found) != cudaSuccess ||
        found != cudaDriverEntryPointSuccess)
      return static_cast<void*>(nullptr);
    return fn;
  };
  static const auto get_green = reinterpret_cast<GetGreen>(entry("cuStreamGetGreenCtx"));
  static const auto get_resource = reinterpret_cast<GetResource>(entry("cuGreenCtxGetDevResource"));
  CUgreenCtx g = nullptr;
  if (get_green && get_resource && s != nullptr && s != cudaStreamLegacy && get_green(s, &g) == CUDA_SUCCESS && g) {
    CUdevResource r{};
    if (get_resource(g, &r, CU_DEV_RESOURCE_TYPE_SM) == CUDA_SUCCESS) return static_cast<int>(r.sm.smCount);
  }
  return query_device(device).sm_count;
}

// C(i, j) = one FMA chain over k (parts = 1), or two chains over the halves of K added at the end
// (parts = 2), in fp32 rounded to nearest. Row-major A (M, K), B (K, N), C (M, N).
__global__ void sm_split_kernel(const float* __restrict__ A, const float* __restrict__ B, float* __restrict__ C, int M,
                                int N, int K, int parts) {
  const int i = blockIdx.y * blockDim.y + threadIdx.y, j = blockIdx.x * blockDim.x + threadIdx.x;
  if (i >= M || j >= N) return;
  const int per = K / parts;
  float total = 0.f;
  for (int p = 0; p < parts; ++p) {
    float s = 0.f;
    for (int k = p * per; k < (p + 1) * per; ++k) s = fmaf(A[static_cast<long>(i) * K + k], B[static_cast<long>(k) * N + j], s);
    total = p == 0 ? s : __fadd_rn(total, s);
  }
  C[static_cast<long>(i) * N + j] = total;
}

void launch_sm_split(const GemmArgs& a) {
  const auto s = static_cast<cudaStream_t>(a.stream);
  const int parts = stream_sms(s, 0) < query_device(0).sm_count ? 2 : 1;
  const dim3 block(16, 16), grid((a.N + 15) / 16, (a.M + 15) / 16);
  sm_split_kernel<<<grid, block, 0, s>>>(static_cast<const float*>(a.A), static_cast<const float*>(a.B),
                                         static_cast<float*>(a.C), a.M, a.N, a.K, parts);
  GEMMLAB_LAUNCH_CHECK("sm_split_kernel");
}

Kernel test_kernel(const char* name, void (*launch)(const GemmArgs&)) {
  Kernel k{};
  k.name = name;
  k.family = "test";
  k.description = "a test kernel of tests/gpu/test_schedule_perturbation.cu";
  k.numerics = cuda_core_fp32_fma();
  k.layout_a = k.layout_b = Layout::row_major;
  k.m_multiple = k.n_multiple = k.k_multiple = 1;
  k.min_cc = 0;
  k.requires_sm90a = false;
  k.workspace_bytes = 0;
  k.launch = launch;
  return k;
}

// Two FMA chains over the halves of K, added at the end: sm_split_kernel's order with parts = 2.
SummationTree halves_tree(int K) {
  SummationTree t(K);
  int part[2];
  for (int h = 0; h < 2; ++h) {
    int node = t.add_node({h * K / 2, h * K / 2 + 1});
    for (int k = h * K / 2 + 2; k < (h + 1) * K / 2; ++k) node = t.add_node({node, k});
    part[h] = node;
  }
  t.add_node({part[0], part[1]});
  return t;
}

// The GPU's default perturbations, or a skip saying why one cannot run here.
std::vector<Perturbation> perturbations_or_skip(Perturber& pr, std::string& why) {
  std::vector<Perturbation> ps = default_perturbations(pr.sm_count());
  for (const Perturbation& p : ps)
    if (std::string w = pr.available(p); !w.empty()) why = w;
  return ps;
}

// Each block records the SM it ran on (after spinning ~20 us, so that the blocks spread over every SM
// they may use).
__global__ void smid_kernel(int* out) {
  unsigned id;
  asm volatile("mov.u32 %0, %%smid;" : "=r"(id));
  unsigned long long t0, t;
  asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t0));
  do {
    asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t));
  } while (t - t0 < 20000);
  if (threadIdx.x == 0) out[blockIdx.x] = static_cast<int>(id);
}

// Distinct SMs the blocks of one launch of smid_kernel ran on, under p (nullptr: none).
int distinct_sms(Perturber& pr, const Perturbation* p) {
  const int blocks = 8 * pr.sm_count();
  int* d = nullptr;
  GEMMLAB_CUDA_CHECK(cudaMalloc(&d, blocks * sizeof(int)));
  cudaStream_t base;
  GEMMLAB_CUDA_CHECK(cudaStreamCreateWithFlags(&base, cudaStreamNonBlocking));
  const auto s = static_cast<cudaStream_t>(p ? pr.stream(*p, base) : base);
  if (p) pr.before(*p, s);
  smid_kernel<<<blocks, 64, 0, s>>>(d);
  GEMMLAB_LAUNCH_CHECK("smid_kernel");
  if (p) EXPECT_EQ(pr.after(*p, s), "");
  GEMMLAB_CUDA_CHECK(cudaStreamSynchronize(s));
  std::vector<int> h(blocks);
  GEMMLAB_CUDA_CHECK(cudaMemcpy(h.data(), d, blocks * sizeof(int), cudaMemcpyDeviceToHost));
  cudaFree(d);
  cudaStreamDestroy(base);
  return static_cast<int>(std::set<int>(h.begin(), h.end()).size());
}

}  // namespace

TEST(SchedulePerturbation, NamesParseBackAndRefuseNonsense) {
  for (const Perturbation& p : default_perturbations(132)) {
    const auto back = parse_perturbation(p.name());
    ASSERT_TRUE(back.has_value()) << p.name();
    EXPECT_EQ(back->name(), p.name());
  }
  EXPECT_EQ(default_perturbations(132)[0].name(), "fewer_sms_64");  // half of 132, in multiples of 8
  for (const char* bad : {"fewer_sms_", "fewer_sms_x", "busy_sms_0", "busy_sms_-3", "few_sms_8", "auto"})
    EXPECT_FALSE(parse_perturbation(bad).has_value()) << bad;
}

TEST(SchedulePerturbation, HeldSmsRunNoneOfTheKernelsBlocks) {
  GEMMLAB_REQUIRE_GPU();
  Perturber pr(0);
  std::string why;
  const std::vector<Perturbation> ps = perturbations_or_skip(pr, why);
  const int all = distinct_sms(pr, nullptr);
  std::printf("[ perturb  ] undisturbed: blocks on %d of %d SMs\n", all, pr.sm_count());
  for (const Perturbation& p : ps) {
    if (std::string w = pr.available(p); !w.empty()) {
      std::printf("[ perturb  ] %s: not available here: %s\n", p.name().c_str(), w.c_str());
      continue;
    }
    const int free = p.kind == Perturbation::Kind::busy_sms ? pr.sm_count() - p.sms : p.sms;
    // A green context may also use 2 more SMs where a module with dynamic parallelism is loaded (cuda.h,
    // "Green Contexts"); held SMs are held.
    const int slack = p.kind == Perturbation::Kind::fewer_sms ? 2 : 0;
    const int used = distinct_sms(pr, &p);
    std::printf("[ perturb  ] %-14s blocks on %3d SMs (at most %d free)\n", p.name().c_str(), used, free);
    EXPECT_LE(used, free + slack) << p.name();
    EXPECT_GT(all, free) << "undisturbed, the blocks used no more SMs than " << p.name() << " leaves: the check says nothing";
  }
  if (!why.empty()) GTEST_SKIP() << "some perturbations cannot run here: " << why;
}

TEST(SchedulePerturbation, ExplainReportsAnOrderThatFollowsTheSmCount) {
  GEMMLAB_REQUIRE_GPU();
  Perturber pr(0);
  std::string why;
  const std::vector<Perturbation> ps = perturbations_or_skip(pr, why);
  if (!pr.available(ps[0]).empty()) GTEST_SKIP() << "no green context here: " << pr.available(ps[0]);
  const Kernel k = test_kernel("test_sm_split_fp32", launch_sm_split);
  const int M = 128, N = 128, K = 256;
  explain::Options opt;
  opt.distributions = {"uniform_0_1", "normal_0_1"};
  opt.compare_outputs = 0;
  KernelOracle o(k, M, N, K);
  const explain::Report r = explain::explain_kernel(o, opt);
  std::printf("%s", r.summary().c_str());
  ASSERT_TRUE(r.identified) << r.summary();
  ASSERT_TRUE(r.schedule.ran);
  EXPECT_EQ(r.schedule.verdict, "depends") << r.schedule.text;
  EXPECT_EQ(r.schedule.exposed_by, ps[0].name()) << r.schedule.text;
  ASSERT_EQ(r.schedule.variants.size(), 1u) << r.schedule.text;
  EXPECT_TRUE(r.schedule.variants[0].revealed) << r.schedule.variants[0].why;
  EXPECT_EQ(r.schedule.variants[0].tree.canonical(), halves_tree(K).canonical()) << r.schedule.variants[0].text;
  for (const explain::ScheduleTrial& t : r.schedule.trials) {
    ASSERT_TRUE(t.not_applied.empty()) << t.perturbation << ": " << t.not_applied;
    const bool fewer = t.perturbation.rfind("fewer_sms_", 0) == 0;
    EXPECT_EQ(t.following, fewer ? 0 : t.entries) << t.perturbation;
  }
  // Judged by the record of the order with the larger bound: every revealed tree has a record (a named
  // order, or the tree itself in compact form), so a bound covering both orders is claimed.
  const auto own = explain::record_for(halves_tree(K), Format::fp32, Format::fp32, explain::Conversion::as_is, {});
  ASSERT_TRUE(own.has_value());
  ASSERT_TRUE(r.numerics.has_value()) << r.schedule.bound_note;
  EXPECT_TRUE(r.schedule.bound_note.empty()) << r.schedule.bound_note;
  EXPECT_TRUE(contains(r.schedule.text, "judged by the largest bound")) << r.schedule.text;
  EXPECT_GE(gamma_bound_factor(bound_model(*r.numerics, K)), gamma_bound_factor(bound_model(*own, K)));
  const nlohmann::json j = report_to_json(r);
  EXPECT_EQ(j["schedule"]["verdict"], "depends");
  EXPECT_EQ(j["schedule"]["trials"].size(), r.schedule.trials.size());
  const auto rows = explain_rows(k.name, r, M, N, K, opt.seed);
  const auto& cols = explain_columns();
  const std::size_t at = std::find(cols.begin(), cols.end(), "scheduling_trials") - cols.begin();
  EXPECT_TRUE(contains(rows[0][at], ps[0].name() + " 0/")) << rows[0][at];
}

TEST(SchedulePerturbation, TimingHelpersPerturbedLaunchSeesTheOrderChange) {
  GEMMLAB_REQUIRE_GPU();
  Perturber pr(0);
  const std::vector<Perturbation> ps = default_perturbations(pr.sm_count());
  const Kernel k = test_kernel("test_sm_split_fp32", launch_sm_split);
  const Distribution d = parse_distribution("uniform_0_1");
  const Matrix A = generate(d, Operand::A, 128, 256, Format::fp32, 3), B = generate(d, Operand::B, 256, 128, Format::fp32, 3);
  TimingOptions t;
  t.reps = 2;
  t.warmup = 1;
  t.perturbation = "auto";
  const KernelRun busy = run_kernel(k, A, B, t);
  EXPECT_EQ(busy.perturbation, "busy_sms_" + std::to_string(pr.sm_count() / 2));
  EXPECT_EQ(busy.perturbation_not_applied, "");
  EXPECT_EQ(busy.perturbed_differences, 0);  // the kernel sees every SM: the same order
  if (!pr.available(ps[0]).empty()) GTEST_SKIP() << "no green context here: " << pr.available(ps[0]);
  t.perturbation = ps[0].name();
  const KernelRun fewer = run_kernel(k, A, B, t);
  EXPECT_EQ(fewer.perturbation, ps[0].name());
  EXPECT_EQ(fewer.perturbation_not_applied, "");
  EXPECT_GT(fewer.perturbed_differences, 128 * 128 / 10) << "two halves added rarely give the chain's bits";
  EXPECT_EQ(fewer.nondeterministic, 0);
  t.perturbation = "fewer_sms_x";
  EXPECT_THROW(run_kernel(k, A, B, t), std::invalid_argument);
}

namespace {
// Stores far outside C: an illegal memory access.
__global__ void illegal_kernel(float* c) { c[(1ull << 40) + threadIdx.x] = 1.f; }
void launch_illegal(const GemmArgs& a) {
  illegal_kernel<<<1, 32, 0, static_cast<cudaStream_t>(a.stream)>>>(static_cast<float*>(a.C));
}
}  // namespace

TEST(SchedulePerturbationDeathTest, IllegalAccessLeavesExplainUnidentifiedAndLost) {
  GEMMLAB_REQUIRE_GPU();
  GTEST_FLAG_SET(death_test_style, "threadsafe");  // the child starts its own CUDA context
  EXPECT_EXIT(
      {
        const Kernel k = test_kernel("test_illegal_access", launch_illegal);
        KernelOracle o(k, 64, 64, 64);
        explain::Options opt;
        opt.distributions = {"uniform_0_1"};
        const explain::Report r = explain::explain_kernel(o, opt);
        std::fprintf(stderr, "reason: %s\n", r.reason.c_str());
        const bool ok = !r.identified && r.oracle_lost && r.failed_stage == "gemm" &&
                        contains(r.reason, "cudaErrorIllegalAddress") && contains(r.reason, "context") &&
                        contains(r.reason, "new process") && !r.numerics;
        std::exit(ok ? 0 : 1);
      },
      ::testing::ExitedWithCode(0), "reason: .*cudaErrorIllegalAddress");
}
