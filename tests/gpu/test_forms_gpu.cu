// Forms on the GPU (reference/gemm_form.hpp, experiments/device/form_gpu.*): the operands bit for bit generate()'s,
// the GPU's exact reference of a form bit for bit the CPU engine's (which tests/cpu/test_gemm_form.cpp proves equal
// to MPFR), a form row's GPU statistics bit for bit the CPU's on the same output, an fp8 output with its scale and
// amax through a reference kernel written here, and the cuBLAS baselines of forms (cublaslt_bias_*,
// cublas_strided_batched_bf16, cublas_grouped_bf16) within the bound of their forms at small sizes. Skips (saying
// why) without a GPU. The last test prints one line per baseline row: kernel, form, status, bias and spread in u.
#include <cuda_fp16.h>
#include <cuda_fp8.h>
#include <cuda_runtime.h>
#include <gtest/gtest.h>

#include <cmath>
#include <cstdio>
#include <string>

#include <filesystem>
#include <fstream>
#include <sstream>

#include "experiments/device/form_gpu.hpp"
#include "experiments/engine/files.hpp"
#include "experiments/engine/run.hpp"
#include "gpu_test_util.hpp"
#include "kernels/common/cuda_check.cuh"
#include "kernels/registry.hpp"
#include "reference/gemm_form.hpp"
#include "reference/numerics.hpp"

namespace gemmlab {
namespace {

using testing::expect_same_reference;
using testing::same_bits;

ReferenceOptions opts(const char* mode = "auto", int spots = 8) { return ReferenceOptions{mode, spots, 5, 0}; }

// A result CSV's rows, typed.
std::vector<ResultRow> csv_rows(const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  std::stringstream text;
  text << f.rdbuf();
  const auto recs = engine::parse_csv(text.str()).records;
  std::vector<ResultRow> out;
  for (std::size_t i = 1; i < recs.size(); ++i) out.push_back(from_fields(recs[0], recs[i]));
  return out;
}

struct Case {
  const char* form;
  int M, N, K;
  Format in;
  Epilogue e;
  const char* dist;
};

Epilogue epi(Format c0, Format bias) {
  Epilogue e = epilogue_of_output(Format::fp32);
  e.c0 = c0, e.bias = bias;
  return e;
}

const Case kCases[] = {
    {"alpha=0.1,beta=0.7,c0=normal_0_1,bias=column:uniform_-1_1", 200, 136, 520, Format::fp16, epi(Format::fp16, Format::fp16), "normal_0_1"},
    {"batch=3,alpha=-1.3,beta=2,c0=uniform_0_1,bias=row:normal_0_1", 96, 80, 300, Format::bf16, epi(Format::bf16, Format::bf16), "uniform_0_1"},
    {"groups=128+512+1000+*,alpha=0.3", 2000, 64, 256, Format::bf16, epi(Format::bf16, Format::bf16), "logunif_-8_8"},
    {"scale=0.3,bias=column:uniform_0_1,c0=normal_0_1,beta=0.5", 64, 72, 1024, Format::e4m3, epi(Format::bf16, Format::fp32), "uniform_0_1"},
    {"alpha=0.7,c0=logunif_-8_8", 128, 128, 4096, Format::fp32, epi(Format::fp32, Format::fp32), "normal_0_1"},
};

TEST(FormsGpu, OperandsAndExactReferenceEqualTheCpuEngineBitForBit) {
  GEMMLAB_REQUIRE_GPU();
  for (const Case& c : kCases) {
    SCOPED_TRACE(c.form);
    const GemmForm f = parse_form(c.form);
    const FormShape s = form_shape(f, c.M, c.N, c.K);
    const Distribution d = parse_distribution(c.dist);
    auto in = device::gpu_form_inputs(0, d, f, s, c.in, c.e, 9, 0);
    const FormOperands cpu = make_form_operands(f, s, d, c.in, c.e, 9, 0);
    const FormOperands& gpu = in->host();
    EXPECT_TRUE(same_bits(gpu.A.v, cpu.A.v, s.K));
    EXPECT_TRUE(same_bits(gpu.B.v, cpu.B.v, s.parts() * s.N));
    EXPECT_TRUE(same_bits(gpu.C0.v, cpu.C0.v, s.N));
    EXPECT_TRUE(same_bits(gpu.bias.v, cpu.bias.v, std::max(1, s.bias_length)));
    const device::GpuReference g = device::exact_form_gpu(*in);
    expect_same_reference(g.to_host(Format::bf16), exact_form(cpu, Format::bf16, 0), c.form);
    // Through the Device interface: the GPU engine with its MPFR spot checks on the augmented lines.
    auto ref = gpu_device(0).form_reference(*in, opts());
    EXPECT_NO_THROW(ref->wait_verified());
    EXPECT_EQ(ref->label, "gpu_int8_ozaki+mpfr_spot8");
  }
}

// ---- a reference kernel of every form, written here: binary64 sums, one rounding to the output ----------------

__device__ double load(const void* p, Format f, std::size_t i) {
  if (f == Format::fp16) return __half2float(static_cast<const __half*>(p)[i]);
  return static_cast<const float*>(p)[i];  // fp32 C0 and bias
}

// One thread per entry of the stacked C: s (alpha sum a b + beta c0 + b) in binary64, rounded once to e4m3
// (satfinite) or fp32; amax = max |T| by atomicMax on the bits of a non-negative float.
__global__ void naive_form_kernel(GemmArgs a, int rows, Format out, int bias_kind, bool grouped, int* part_of_row,
                                  int* row0) {
  const std::size_t n = static_cast<std::size_t>(rows) * a.N;
  for (std::size_t idx = blockIdx.x * static_cast<std::size_t>(blockDim.x) + threadIdx.x; idx < n;
       idx += static_cast<std::size_t>(gridDim.x) * blockDim.x) {
    const int r = static_cast<int>(idx / a.N), j = static_cast<int>(idx % a.N);
    const int t = part_of_row[r], i = r - row0[t];
    const __half* B = static_cast<const __half*>(a.B) + static_cast<std::size_t>(t) * a.K * a.N;
    double s = 0;
    for (int k = 0; k < a.K; ++k)
      s += static_cast<double>(__half2float(static_cast<const __half*>(a.A)[static_cast<std::size_t>(r) * a.K + k])) *
           static_cast<double>(__half2float(B[static_cast<std::size_t>(k) * a.N + j]));
    double T = static_cast<double>(a.alpha) * s;
    if (a.C0) T += static_cast<double>(a.beta) * load(a.C0, Format::fp32, idx);
    if (a.bias) T += load(a.bias, Format::fp32, bias_kind == 1 ? (grouped ? r : i) : j);
    if (a.output_amax) atomicMax(reinterpret_cast<int*>(a.output_amax), __float_as_int(static_cast<float>(fabs(T))));
    const double v = static_cast<double>(a.output_scale) * T;
    if (out == Format::e4m3) {
      static_cast<__nv_fp8_e4m3*>(a.C)[idx] = __nv_fp8_e4m3(v);
    } else {
      static_cast<float*>(a.C)[idx] = static_cast<float>(v);
    }
  }
}

struct NaiveState {
  Format out;
};

void naive_launch(const GemmArgs& a) {
  const auto* st = static_cast<const NaiveState*>(a.context);
  const int parts = a.groups > 0 ? a.groups : a.batch;
  std::vector<int> row0(parts), part(a.groups > 0 ? a.M : a.batch * a.M);
  int r = 0;
  for (int t = 0; t < parts; ++t) {
    row0[t] = r;
    const int m = a.groups > 0 ? a.group_rows[t] : a.M;
    for (int i = 0; i < m; ++i) part[r + i] = t;
    r += m;
  }
  int* d = nullptr;
  GEMMLAB_CUDA_CHECK(cudaMallocAsync(reinterpret_cast<void**>(&d), (part.size() + row0.size()) * sizeof(int), as_stream(a.stream)));
  GEMMLAB_CUDA_CHECK(cudaMemcpyAsync(d, part.data(), part.size() * sizeof(int), cudaMemcpyHostToDevice, as_stream(a.stream)));
  GEMMLAB_CUDA_CHECK(cudaMemcpyAsync(d + part.size(), row0.data(), row0.size() * sizeof(int), cudaMemcpyHostToDevice,
                                     as_stream(a.stream)));
  if (a.output_amax) GEMMLAB_CUDA_CHECK(cudaMemsetAsync(a.output_amax, 0, sizeof(float), as_stream(a.stream)));
  naive_form_kernel<<<256, 256, 0, as_stream(a.stream)>>>(a, r, st->out, static_cast<int>(a.bias_kind), a.groups > 0, d,
                                                          d + part.size());
  GEMMLAB_LAUNCH_CHECK("naive_form_kernel");
  GEMMLAB_CUDA_CHECK(cudaFreeAsync(d, as_stream(a.stream)));
  GEMMLAB_CUDA_CHECK(cudaStreamSynchronize(as_stream(a.stream)));  // `part` and `row0` go out of scope
}

Kernel naive_kernel(const char* name, Format out, const NaiveState* st) {
  Kernel k{};
  k.name = name;
  k.family = "user";
  k.description = "binary64 sums, one rounding to the output: a reference kernel of every form (test)";
  k.numerics = Numerics{.input = Format::fp16, .compute = Format::fp16, .accumulator = Format::fp64, .output = out,
                        .accumulation = Accumulation::fma, .k_step = 1, .accumulation_rounding = Rounding::nearest_even};
  k.layout_a = k.layout_b = Layout::row_major;
  k.m_multiple = k.n_multiple = k.k_multiple = 1;
  k.launch = naive_launch;
  k.context = st;
  k.forms = all_forms();
  k.epilogue = epilogue_of_output(Format::fp32);
  k.epilogue.arithmetic = Format::fp64;
  k.epilogue.c0_placement = k.epilogue.bias_placement = Placement::before_output_rounding;
  return k;
}

const NaiveState kE4m3{Format::e4m3}, kFp32{Format::fp32};
const Kernel kNaiveE4m3 = naive_kernel("test_naive_form_e4m3", Format::e4m3, &kE4m3);
const Kernel kNaiveFp32 = naive_kernel("test_naive_form_fp32", Format::fp32, &kFp32);

TEST(FormsGpu, StatisticsOnTheGpuEqualTheCpusOnTheSameOutput) {
  GEMMLAB_REQUIRE_GPU();
  for (const char* form : {"batch=2,alpha=0.3,beta=1.5,c0=normal_0_1,bias=row:uniform_-1_1,scale=4",
                           "groups=40+*,bias=column:normal_0_1,scale=0.5", "alpha=0.7"}) {
    for (const Kernel* k : {&kNaiveE4m3, &kNaiveFp32}) {
      SCOPED_TRACE(std::string(form) + " " + k->name);
      const GemmForm f = parse_form(form);
      const FormShape s = form_shape(f, 96, 64, 128);
      Device& dev = gpu_device(0);
      auto in = dev.form_inputs(parse_distribution("uniform_0_1"), f, s, Format::fp16, k->epilogue, 3, 0);
      auto ref = dev.form_reference(*in, opts());
      TimingOptions t;
      t.warmup = 0, t.reps = 2;
      const BoundModel model = form_bound_model(k->numerics, k->epilogue, f, s.K);
      const Measurement m = dev.measure_form(*k, *in, *ref, t, model, /*keep_output=*/true, 0);
      const ErrorStats cpu = compute_error_stats(m.run.c, exact_form(in->host(), Format::fp32, 0), k->numerics.output, model, 0);
      EXPECT_EQ(m.stats.bound_violations, 0);
      EXPECT_EQ(m.stats.unwritten, 0);
      EXPECT_EQ(m.stats.entries, static_cast<std::int64_t>(s.rows) * s.N);
#define GEMMLAB_SAME(type, name, doc) EXPECT_EQ(std::memcmp(&m.stats.name, &cpu.name, sizeof(type)), 0) << #name;
      GEMMLAB_ERROR_STATS_FIELDS(GEMMLAB_SAME)
#undef GEMMLAB_SAME
      ASSERT_TRUE(m.run.amax);  // the kernel reports amax: max |T|, before the scale
      EXPECT_NEAR(*m.run.amax, ref->max_abs() / std::fabs(f.scale), 1e-6 * *m.run.amax);
    }
  }
}

// ---- the cuBLAS baselines of forms ---------------------------------------------------------------------------

TEST(FormsGpu, CublasBaselinesWithinTheBoundOfTheirForms) {
  GEMMLAB_REQUIRE_GPU();
  GEMMLAB_REQUIRE_FAMILY("cublas");
  const char* names[] = {"cublaslt_bias_fp16", "cublaslt_bias_bf16", "cublas_strided_batched_bf16", "cublas_grouped_bf16"};
  for (const Kernel* k : {&kNaiveE4m3, &kNaiveFp32})
    if (!find_kernel(k->name)) register_kernel(*k);
  RunRequest req;
  req.plan.name = "forms_gpu";
  req.plan.kernels = {names[0], names[1], names[2], names[3], kNaiveFp32.name};
  req.plan.distributions = {"uniform_0_1", "normal_0_1"};
  req.plan.sizes = {{2048, 384, 1024}};
  req.plan.seeds = {7};
  req.plan.reps = 3;
  req.plan.warmup = 1;
  // Each kernel's own form, and one form every baseline but the bias ones takes (alpha and beta C0).
  req.plan.forms = {"default", "alpha=0.5,beta=2,c0=normal_0_1"};
  const std::string out = (std::filesystem::temp_directory_path() / "gemmlab_forms_gpu.csv").string();
  std::filesystem::remove(out);
  req.out_csv = out;
  req.force = true;
  req.log = std::fopen("/dev/null", "w");
  req.live_progress = false;
  ASSERT_EQ(run_experiment(req, gpu_device(0)), 0);
  std::fclose(req.log);
  const auto recs = csv_rows(out);
  int measured = 0;
  std::printf("%-28s %-48s %-14s %12s %12s\n", "kernel", "form", "status", "bias_u", "spread_u");
  for (const ResultRow& r : recs) {
    std::printf("%-28s %-48s %-14s %12.4g %12.4g\n", r.kernel.c_str(), r.form.c_str(), to_string(r.status),
                r.stats ? r.stats->rel_mean_u : NAN, r.stats ? r.stats->rel_std_u : NAN);
    if (r.status == Status::not_applicable) continue;
    ++measured;
    EXPECT_EQ(r.status, Status::passed) << r.kernel << " " << r.form << ": " << r.note;
    ASSERT_TRUE(r.stats);
    EXPECT_EQ(r.stats->bound_violations, 0) << r.kernel << " " << r.form;
    if (r.kernel != kNaiveFp32.name) EXPECT_NE(r.form, "plain") << r.kernel << ": a baseline runs its own form";
  }
  // 2 distributions x (own forms: 4 baselines + the reference kernel's plain; the addmm form: all 5 take it).
  EXPECT_EQ(measured, 2 * (5 + 5));
}

}  // namespace
}  // namespace gemmlab
