// Forms on the GPU: operands, exact reference and measurement (see form_gpu.hpp).
#include "experiments/device/form_gpu.hpp"
#include "experiments/device/device_free.hpp"

#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_runtime.h>
#include <thrust/count.h>
#include <thrust/device_ptr.h>
#include <thrust/execution_policy.h>
#include <thrust/functional.h>
#include <thrust/transform_reduce.h>

#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <future>
#include <map>
#include <memory>
#include <mutex>
#include <stdexcept>

#include "experiments/device/error_stats_gpu.hpp"
#include "experiments/device/inputs_gpu.hpp"
#include "kernels/common/cuda_check.cuh"
#include "reference/formats.hpp"

namespace gemmlab::device {
namespace {

double seconds_since(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

std::size_t storage_bytes(Format f) { return static_cast<std::size_t>((info(f).storage_bits + 7) / 8); }

// RAII device memory.
struct Buf {
  void* p = nullptr;
  std::size_t bytes = 0;
  Buf() = default;
  explicit Buf(std::size_t n) : bytes(n) {
    if (n) GEMMLAB_CUDA_CHECK(cudaMalloc(&p, n));
  }
  ~Buf() {
    if (p) device_free(p);
  }
  Buf(Buf&& o) noexcept : p(o.p), bytes(o.bytes) { o.p = nullptr, o.bytes = 0; }
  Buf& operator=(Buf&& o) noexcept {
    std::swap(p, o.p);
    std::swap(bytes, o.bytes);
    return *this;
  }
  Buf(const Buf&) = delete;
  template <class T>
  T* as() const {
    return static_cast<T*>(p);
  }
};

// Device memory kept from row to row on each GPU and grown when a row needs more (a cudaMalloc of hundreds of MB
// costs milliseconds, as much as a row's statistics): the widened output, the augmented operands of the
// reference, the fresh packing the inputs are checked against.
struct Scratch {
  void* p = nullptr;
  std::size_t bytes = 0;
  void* get(std::size_t n) {
    if (n > bytes) {
      if (p) GEMMLAB_CUDA_CHECK(cudaFree(p));
      p = nullptr, bytes = 0;
      GEMMLAB_CUDA_CHECK(cudaMalloc(&p, n));
      bytes = n;
    }
    return p;
  }
};
struct FormScratch {
  Scratch widened, aug_a, aug_bt, check, part;
};
FormScratch& scratch() {
  static std::mutex mu;
  static std::map<int, std::unique_ptr<FormScratch>> per_device;  // never destroyed before exit
  int dev = 0;
  GEMMLAB_CUDA_CHECK(cudaGetDevice(&dev));
  std::lock_guard<std::mutex> lock(mu);
  auto& s = per_device[dev];
  if (!s) s = std::make_unique<FormScratch>();
  return *s;
}

// ---- kernels ---------------------------------------------------------------------------------

// Row i (of m) of A'_t, entry k (of Kp): gemm_form.cpp's a_aug on the GPU (the same values: every product
// is exact in binary64, so one multiplication gives it on either side).
__device__ double a_aug(const float* A, const float* C0, const float* bias, int row0, int i, int k, int K, int N,
                        double alpha, bool c0, int bias_kind, bool grouped) {
  const int row = row0 + i;
  if (k < K) return __dmul_rn(alpha, static_cast<double>(A[static_cast<std::size_t>(row) * K + k]));
  k -= K;
  if (c0) {
    if (k < N) return static_cast<double>(C0[static_cast<std::size_t>(row) * N + k]);
    k -= N;
  }
  return bias_kind == 1 ? static_cast<double>(bias[grouped ? row : i]) : 1.0;
}

// Entry (k, j) of B'_t: gemm_form.cpp's b_aug. B (K, parts N) row-major, part t's columns at t N.
__device__ double b_aug(const float* B, const float* bias, int part, int parts, int k, int j, int K, int N,
                        double beta, double scale, bool c0, int bias_kind) {
  if (k < K) return __dmul_rn(scale, static_cast<double>(B[static_cast<std::size_t>(k) * parts * N + part * N + j]));
  k -= K;
  if (c0) {
    if (k < N) return k == j ? __dmul_rn(beta, scale) : 0.0;
    k -= N;
  }
  return bias_kind == 2 ? __dmul_rn(scale, static_cast<double>(bias[j])) : scale;
}

struct AugParams {
  const float *A, *B, *C0, *bias;
  int part, parts, row0, m, K, N, Kp;
  double alpha, beta, scale;
  bool c0, grouped;
  int bias_kind;  // 0 none, 1 row, 2 column
};

__global__ void augment_a_kernel(AugParams p, double* __restrict__ out) {
  const std::size_t n = static_cast<std::size_t>(p.m) * p.Kp;
  for (std::size_t idx = blockIdx.x * static_cast<std::size_t>(blockDim.x) + threadIdx.x; idx < n;
       idx += static_cast<std::size_t>(gridDim.x) * blockDim.x) {
    const int i = static_cast<int>(idx / p.Kp), k = static_cast<int>(idx % p.Kp);
    out[idx] = a_aug(p.A, p.C0, p.bias, p.row0, i, k, p.K, p.N, p.alpha, p.c0, p.bias_kind, p.grouped);
  }
}

// B'_t transposed, (N, Kp) row-major, through 32 x 32 tiles (B is read along j, the output written along k).
__global__ void augment_bt_kernel(AugParams p, double* __restrict__ out) {
  __shared__ double tile[32][33];
  const int j0 = blockIdx.x * 32, k0 = blockIdx.y * 32;
  for (int y = threadIdx.y; y < 32; y += blockDim.y) {
    const int k = k0 + y, j = j0 + threadIdx.x;
    if (k < p.Kp && j < p.N)
      tile[y][threadIdx.x] = b_aug(p.B, p.bias, p.part, p.parts, k, j, p.K, p.N, p.beta, p.scale, p.c0, p.bias_kind);
  }
  __syncthreads();
  for (int y = threadIdx.y; y < 32; y += blockDim.y) {
    const int j = j0 + y, k = k0 + threadIdx.x;
    if (k < p.Kp && j < p.N) out[static_cast<std::size_t>(j) * p.Kp + k] = tile[threadIdx.x][y];
  }
}

// Storage bits of `fmt` -> binary64 (exact); the NaN poison stays NaN. fmt: 0 fp32, 1 fp16, 2 bf16, 3 e4m3, 4 e5m2.
__device__ double widen_one(const unsigned char* c, int fmt, std::size_t i) {
  switch (fmt) {
    case 0: return static_cast<double>(reinterpret_cast<const float*>(c)[i]);
    case 1: return static_cast<double>(__half2float(reinterpret_cast<const __half*>(c)[i]));
    case 2: return static_cast<double>(__bfloat162float(reinterpret_cast<const __nv_bfloat16*>(c)[i]));
    case 3: {  // e4m3: bias 7, no infinity, S.1111.111 NaN
      const unsigned b = c[i], e = (b >> 3) & 15u, m = b & 7u;
      const double sign = (b & 0x80u) ? -1.0 : 1.0;
      if (e == 15 && m == 7) return __longlong_as_double(0x7ff8000000000000ll);
      return sign * (e == 0 ? ldexp(static_cast<double>(m), -9) : ldexp(static_cast<double>(8 + m), static_cast<int>(e) - 10));
    }
    default: {  // e5m2: bias 15, IEEE-like
      const unsigned b = c[i], e = (b >> 2) & 31u, m = b & 3u;
      const double sign = (b & 0x80u) ? -1.0 : 1.0;
      if (e == 31) return m ? __longlong_as_double(0x7ff8000000000000ll) : sign * __longlong_as_double(0x7ff0000000000000ll);
      return sign * (e == 0 ? ldexp(static_cast<double>(m), -16) : ldexp(static_cast<double>(4 + m), static_cast<int>(e) - 17));
    }
  }
}

__global__ void widen_kernel(const unsigned char* __restrict__ c, int fmt, std::size_t n, double* __restrict__ out) {
  for (std::size_t i = blockIdx.x * static_cast<std::size_t>(blockDim.x) + threadIdx.x; i < n;
       i += static_cast<std::size_t>(gridDim.x) * blockDim.x)
    out[i] = widen_one(c, fmt, i);
}

__global__ void count_diff_kernel(const unsigned char* __restrict__ a, const unsigned char* __restrict__ b, std::size_t n,
                                  unsigned long long* __restrict__ out) {
  unsigned long long mine = 0;
  for (std::size_t i = blockIdx.x * static_cast<std::size_t>(blockDim.x) + threadIdx.x; i < n;
       i += static_cast<std::size_t>(gridDim.x) * blockDim.x)
    mine += a[i] != b[i];
  if (mine) atomicAdd(out, mine);
}

int widen_code(Format f) {
  switch (f) {
    case Format::fp32: return 0;
    case Format::fp16: return 1;
    case Format::bf16: return 2;
    case Format::e4m3: return 3;
    case Format::e5m2: return 4;
    default: return -1;
  }
}

unsigned blocks_for(std::size_t n) { return static_cast<unsigned>(std::max<std::size_t>(1, std::min<std::size_t>((n + 255) / 256, 65535))); }

// Bytes that differ between two device buffers of n bytes.
long long differing_bytes(const void* a, const void* b, std::size_t n) {
  if (n == 0) return 0;
  Buf count(sizeof(unsigned long long));
  GEMMLAB_CUDA_CHECK(cudaMemset(count.p, 0, sizeof(unsigned long long)));
  count_diff_kernel<<<blocks_for(n), 256>>>(static_cast<const unsigned char*>(a), static_cast<const unsigned char*>(b), n,
                                            count.as<unsigned long long>());
  GEMMLAB_LAUNCH_CHECK("count_diff_kernel");
  unsigned long long h = 0;
  GEMMLAB_CUDA_CHECK(cudaMemcpy(&h, count.p, sizeof h, cudaMemcpyDeviceToHost));
  return static_cast<long long>(h);
}

// ---- the operands ------------------------------------------------------------------------------

class GpuFormInputs final : public FormInputs {
 public:
  GpuFormInputs(const Distribution& d, const GemmForm& f, const FormShape& s, Format in, const Epilogue& e,
                std::uint64_t seed) {
    form = f, shape = s, input = in, epilogue = e;
    if (std::string why = form_problem(f, in, e); !why.empty()) throw std::invalid_argument(why);
    a_ = Buf(static_cast<std::size_t>(s.rows) * s.K * sizeof(float));
    b_ = Buf(static_cast<std::size_t>(s.K) * s.parts() * s.N * sizeof(float));
    generate_gpu(d, Operand::A, s.rows, s.K, in, seed, a_.as<float>());
    generate_gpu(d, Operand::B, s.K, s.parts() * s.N, in, seed, b_.as<float>());
    if (!f.c0.empty()) {
      c0_ = Buf(static_cast<std::size_t>(s.rows) * s.N * sizeof(float));
      generate_gpu(parse_distribution(f.c0), Operand::C0, s.rows, s.N, e.c0, seed, c0_.as<float>());
    }
    if (f.bias != BiasKind::none) {
      bias_ = Buf(static_cast<std::size_t>(s.bias_length) * sizeof(float));
      generate_gpu(parse_distribution(f.bias_distribution), Operand::bias, 1, s.bias_length, e.bias, seed,
                   bias_.as<float>());
    }
    GEMMLAB_CUDA_CHECK(cudaDeviceSynchronize());
  }

  const FormOperands& host() override {
    if (!host_) {
      auto o = std::make_unique<FormOperands>();
      o->form = form, o->shape = shape, o->input = input, o->epilogue = epilogue;
      o->A = download(a_, shape.rows, shape.K);
      o->B = download(b_, shape.K, shape.parts() * shape.N);
      if (c0_.p) o->C0 = download(c0_, shape.rows, shape.N);
      if (bias_.p) o->bias = download(bias_, 1, shape.bias_length);
      host_ = std::move(o);
    }
    return *host_;
  }

  const float* a() const { return a_.as<const float>(); }
  const float* b() const { return b_.as<const float>(); }
  const float* c0() const { return c0_.as<const float>(); }
  const float* bias() const { return bias_.as<const float>(); }

  // The operands packed for a kernel: A and B in its input format and layouts (each part in its place), C0 and
  // the bias in the epilogue's formats. Made once per layout pair.
  struct Packed {
    Buf A, B, C0, bias;
  };
  Packed& packed(Layout la, Layout lb) {
    auto& slot = packed_[{la, lb}];
    if (!slot) {
      slot = std::make_unique<Packed>();
      pack(la, lb, *slot);
    }
    return *slot;
  }
  // Bytes of A, B, C0 and the bias that differ from a fresh packing (a kernel that wrote into its inputs); a
  // damaged packing is dropped, so that the next kernel gets clean operands. Names the first operand written.
  std::string written(Layout la, Layout lb) {
    auto it = packed_.find({la, lb});
    if (it == packed_.end()) return "";
    const Packed& used = *it->second;
    const std::pair<const char*, const Buf*> all[] = {{"A", &used.A}, {"B", &used.B}, {"C0", &used.C0}, {"the bias", &used.bias}};
    for (int which = 0; which < 4; ++which) {
      const Buf& b = *all[which].second;
      if (!b.p) continue;
      void* fresh = scratch().check.get(b.bytes);
      pack_one(which, la, lb, fresh);
      if (const long long n = differing_bytes(b.p, fresh, b.bytes)) {
        packed_.erase(it);
        return std::string(all[which].first) + ": " + std::to_string(n) + " of its " + std::to_string(b.bytes) +
               " bytes changed";
      }
    }
    return "";
  }

 private:
  static Matrix download(const Buf& b, int rows, int cols) {
    std::vector<float> f(static_cast<std::size_t>(rows) * cols);
    if (!f.empty()) GEMMLAB_CUDA_CHECK(cudaMemcpy(f.data(), b.p, f.size() * sizeof(float), cudaMemcpyDeviceToHost));
    Matrix m(rows, cols);
    std::copy(f.begin(), f.end(), m.v.begin());
    return m;
  }

  void pack(Layout la, Layout lb, Packed& p) {
    const FormShape& s = shape;
    const std::size_t ein = storage_bytes(input);
    p.A = Buf(static_cast<std::size_t>(s.rows) * s.K * ein);
    p.B = Buf(static_cast<std::size_t>(s.parts()) * s.K * s.N * ein);
    if (c0_.p) p.C0 = Buf(static_cast<std::size_t>(s.rows) * s.N * storage_bytes(epilogue.c0));
    if (bias_.p) p.bias = Buf(static_cast<std::size_t>(s.bias_length) * storage_bytes(epilogue.bias));
    const void* dst[4] = {p.A.p, p.B.p, p.C0.p, p.bias.p};
    for (int which = 0; which < 4; ++which)
      if (dst[which]) pack_one(which, la, lb, const_cast<void*>(dst[which]));
  }

  // Operand `which` (0 A, 1 B, 2 C0, 3 the bias) packed into dst: A and B in the input format and each part in
  // its place, C0 and the bias in the epilogue's formats.
  void pack_one(int which, Layout la, Layout lb, void* dst) {
    const FormShape& s = shape;
    const std::size_t ein = storage_bytes(input);
    auto* out = static_cast<unsigned char*>(dst);
    if (which == 0) {
      if (la == Layout::row_major) {
        pack_gpu(a(), s.rows, s.K, input, la, out);
      } else {
        for (int t = 0; t < s.parts(); ++t)
          pack_gpu(a() + static_cast<std::size_t>(s.part_row0[t]) * s.K, s.part_rows[t], s.K, input, la,
                   out + static_cast<std::size_t>(s.part_row0[t]) * s.K * ein);
      }
    } else if (which == 1) {
      if (s.parts() == 1) {
        pack_gpu(b(), s.K, s.N, input, lb, out);
      } else {
        auto* part = static_cast<float*>(scratch().part.get(static_cast<std::size_t>(s.K) * s.N * sizeof(float)));
        for (int t = 0; t < s.parts(); ++t) {
          // Part t's (K, N) block: columns [t N, (t + 1) N) of B (K, parts N).
          GEMMLAB_CUDA_CHECK(cudaMemcpy2D(part, s.N * sizeof(float), b() + static_cast<std::size_t>(t) * s.N,
                                          static_cast<std::size_t>(s.parts()) * s.N * sizeof(float),
                                          s.N * sizeof(float), s.K, cudaMemcpyDeviceToDevice));
          pack_gpu(part, s.K, s.N, input, lb, out + static_cast<std::size_t>(t) * s.K * s.N * ein);
          GEMMLAB_CUDA_CHECK(cudaDeviceSynchronize());  // `part` is reused
        }
      }
    } else if (which == 2) {
      pack_gpu(c0(), s.rows, s.N, epilogue.c0, Layout::row_major, out);
    } else {
      pack_gpu(bias(), 1, s.bias_length, epilogue.bias, Layout::row_major, out);
    }
    GEMMLAB_CUDA_CHECK(cudaDeviceSynchronize());
  }

  Buf a_, b_, c0_, bias_;
  std::unique_ptr<FormOperands> host_;
  std::map<std::pair<Layout, Layout>, std::unique_ptr<Packed>> packed_;
};

// ---- the reference -------------------------------------------------------------------------------

struct BeyondRange {
  double max_finite;
  __device__ bool operator()(double c) const { return !(fabs(c) <= max_finite); }
};
struct Magnitude {
  __device__ double operator()(double c) const { return fabs(c); }
};

// A form's reference kept on the GPU (the stacked parts).
class GpuFormReference final : public ProblemReference {
 public:
  explicit GpuFormReference(GpuReference g) : g(std::move(g)) {}
  long long count_beyond(double max_finite) override {
    if (auto it = beyond_.find(max_finite); it != beyond_.end()) return it->second;
    const auto c = thrust::device_pointer_cast(g.device_c());
    const auto n = static_cast<std::ptrdiff_t>(g.M) * g.N;
    const long long over = thrust::count_if(thrust::device, c, c + n, BeyondRange{max_finite});
    GEMMLAB_CUDA_CHECK(cudaGetLastError());
    return beyond_[max_finite] = over;
  }
  const GemmReference& host() override {
    wait_verified();
    if (!host_) host_ = std::make_unique<GemmReference>(g.to_host(Format::fp32));
    return *host_;
  }
  void wait_verified() override {
    if (verifying.valid()) verifying.get();
  }
  double max_abs() override {
    const auto c = thrust::device_pointer_cast(g.device_c());
    const auto n = static_cast<std::ptrdiff_t>(g.M) * g.N;
    const double m = thrust::transform_reduce(thrust::device, c, c + n, Magnitude{}, 0.0, thrust::maximum<double>());
    GEMMLAB_CUDA_CHECK(cudaGetLastError());
    return m;
  }
  ~GpuFormReference() override {
    if (verifying.valid()) verifying.wait();
  }
  GpuReference g;
  std::future<void> verifying;

 private:
  std::unique_ptr<GemmReference> host_;
  std::map<double, long long> beyond_;
};

// An entry of the MPFR spot checks: row i of A'_t and column j of B'_t as the GPU built them, and its c.
struct SpotEntry {
  std::vector<double> a, b;
  double c = 0;
};

// The parts' references, each from its augmented operands; the spot-checked entries' lines read back.
GpuReference exact_form_gpu_checked(GpuFormInputs& in, const std::vector<long long>& spots,
                                    std::map<long long, SpotEntry>* got) {
  const GemmForm& f = in.form;
  const FormShape& s = in.shape;
  const int Kp = augmented_depth(f, s);
  std::vector<GpuReference> parts;
  for (int t = 0; t < s.parts(); ++t) {
    const int m = s.part_rows[t];
    AugParams p{in.a(), in.b(), in.c0(), in.bias(), t, s.parts(), s.part_row0[t], m, s.K, s.N, Kp,
                f.alpha, f.beta, f.scale, !f.c0.empty(), f.grouped(),
                f.bias == BiasKind::row ? 1 : f.bias == BiasKind::column ? 2 : 0};
    auto* A = static_cast<double*>(scratch().aug_a.get(static_cast<std::size_t>(m) * Kp * sizeof(double)));
    auto* Bt = static_cast<double*>(scratch().aug_bt.get(static_cast<std::size_t>(s.N) * Kp * sizeof(double)));
    augment_a_kernel<<<blocks_for(static_cast<std::size_t>(m) * Kp), 256>>>(p, A);
    GEMMLAB_LAUNCH_CHECK("augment_a_kernel");
    augment_bt_kernel<<<dim3((s.N + 31) / 32, (Kp + 31) / 32), dim3(32, 8)>>>(p, Bt);
    GEMMLAB_LAUNCH_CHECK("augment_bt_kernel");
    GEMMLAB_CUDA_CHECK(cudaDeviceSynchronize());
    parts.push_back(exact_gemm_gpu_device_bt(A, Bt, m, s.N, Kp));
    if (got)
      for (long long idx : spots) {
        const int row = static_cast<int>(idx / s.N), j = static_cast<int>(idx % s.N);
        if (part_of_row(s, row) != t) continue;
        const int i = row - s.part_row0[t];
        SpotEntry e{std::vector<double>(Kp), std::vector<double>(Kp), 0};
        GEMMLAB_CUDA_CHECK(cudaMemcpy(e.a.data(), A + static_cast<std::size_t>(i) * Kp, Kp * sizeof(double),
                                      cudaMemcpyDeviceToHost));
        GEMMLAB_CUDA_CHECK(cudaMemcpy(e.b.data(), Bt + static_cast<std::size_t>(j) * Kp, Kp * sizeof(double),
                                      cudaMemcpyDeviceToHost));
        GEMMLAB_CUDA_CHECK(cudaMemcpy(&e.c, parts.back().device_c() + static_cast<std::size_t>(i) * s.N + j,
                                      sizeof(double), cudaMemcpyDeviceToHost));
        (*got)[idx] = std::move(e);
      }
  }
  GpuReference r = stack_rows(std::move(parts));
  r.K = s.K;
  return r;
}

}  // namespace

std::unique_ptr<FormInputs> gpu_form_inputs(int device, const Distribution& d, const GemmForm& f, const FormShape& s,
                                            Format in, const Epilogue& e, std::uint64_t seed, int) {
  GEMMLAB_CUDA_CHECK(cudaSetDevice(device));
  const auto t0 = std::chrono::steady_clock::now();
  auto p = std::make_unique<GpuFormInputs>(d, f, s, in, e, seed);
  p->seconds = seconds_since(t0);
  return p;
}

GpuReference exact_form_gpu(FormInputs& in) {
  auto* g = dynamic_cast<GpuFormInputs*>(&in);
  if (!g) throw std::invalid_argument("exact_form_gpu: the operands were not made on the GPU (gpu_form_inputs)");
  return exact_form_gpu_checked(*g, {}, nullptr);
}

std::unique_ptr<ProblemReference> gpu_form_reference(int device, FormInputs& in, const ReferenceOptions& opt) {
  auto* gin = dynamic_cast<GpuFormInputs*>(&in);
  if (opt.mode == "cpu" || opt.mode == "mpfr" || !gin) return cpu_form_reference(in.host(), opt);
  GEMMLAB_CUDA_CHECK(cudaSetDevice(device));
  const auto t0 = std::chrono::steady_clock::now();
  const FormShape& s = in.shape;
  const bool check = opt.mode != "exact" && opt.spot_checks > 0;
  const int n = check ? static_cast<int>(std::min<long long>(opt.spot_checks, static_cast<long long>(s.rows) * s.N)) : 0;
  const std::vector<long long> spots = check ? spot_check_entries(s.rows, s.N, n, opt.seed) : std::vector<long long>{};
  auto entries = std::make_shared<std::map<long long, SpotEntry>>();
  std::unique_ptr<GpuFormReference> ref;
  try {
    ref = std::make_unique<GpuFormReference>(exact_form_gpu_checked(*gin, spots, entries.get()));
  } catch (const GpuReferenceUnavailable& e) {
    if (opt.mode == "gpu") throw std::runtime_error(std::string("--reference gpu: ") + e.what());
    std::fprintf(stderr, "[gemmlab] the GPU cannot compute this form's reference exactly (%s): the CPU engine does\n",
                 e.what());
    return cpu_form_reference(in.host(), opt);
  }
  ref->label = ref->g.engine;
  if (check) {
    const int Kp = augmented_depth(in.form, s);
    ref->verifying = std::async(std::launch::async, [entries, M = s.rows, N = s.N, Kp, n, seed = opt.seed,
                                                     engine = ref->g.engine] {
      spot_check(M, N, Kp, n, seed, engine, [&](int i, int j, Matrix& a, Matrix& b) {
        const SpotEntry& e = entries->at(static_cast<long long>(i) * N + j);
        std::copy(e.a.begin(), e.a.end(), a.v.begin());
        std::copy(e.b.begin(), e.b.end(), b.v.begin());
      }, [&](long long idx) { return entries->at(idx).c; });
    });
    ref->label += "+mpfr_spot" + std::to_string(n);
  }
  ref->seconds = seconds_since(t0);
  return ref;
}

Measurement gpu_measure_form(int device, const Kernel& k, FormInputs& in, ProblemReference& ref,
                             const TimingOptions& opt, const BoundModel& model, bool keep_output, int threads) {
  auto* gin = dynamic_cast<GpuFormInputs*>(&in);
  if (!gin) throw std::invalid_argument("gpu_measure_form: the operands were not made on the GPU (gpu_form_inputs)");
  const Format out = k.numerics.output;
  const int code = widen_code(out);
  if (code < 0)
    throw std::runtime_error(std::string(k.name) + ": a form's output in " + info(out).name +
                             " is not read on the GPU (fp32, fp16, bf16, e4m3, e5m2)");
  GEMMLAB_CUDA_CHECK(cudaSetDevice(device));
  const auto wall_start = std::chrono::steady_clock::now();
  const GemmForm& f = in.form;
  const FormShape& s = in.shape;
  const std::size_t n = static_cast<std::size_t>(s.rows) * s.N;
  auto& packed = gin->packed(k.layout_a, k.layout_b);
  // The output scale in device memory, and amax poisoned with NaN (a kernel that reports none leaves it).
  Buf scalars(2 * sizeof(float));
  const float host_scalars[2] = {static_cast<float>(f.scale), std::nanf("")};
  GEMMLAB_CUDA_CHECK(cudaMemcpy(scalars.p, host_scalars, sizeof host_scalars, cudaMemcpyHostToDevice));
  const std::vector<int> group_rows = f.grouped() ? s.part_rows : std::vector<int>{};
  auto adjust = [&](GemmArgs& a) {
    a.M = f.grouped() ? s.M : s.part_rows.front();
    a.batch = f.batch;
    a.groups = static_cast<int>(group_rows.size());
    a.group_rows = group_rows.empty() ? nullptr : group_rows.data();
    a.alpha = static_cast<float>(f.alpha);
    a.beta = static_cast<float>(f.beta);
    a.C0 = packed.C0.p;
    a.bias = packed.bias.p;
    a.bias_kind = f.bias;
    a.output_scale = static_cast<float>(f.scale);
    a.output_scale_device = scalars.as<const float>();
    a.output_amax = k.forms.scale ? scalars.as<float>() + 1 : nullptr;
  };
  auto* widened = static_cast<double*>(scratch().widened.get(n * sizeof(double)));
  std::vector<double> c;
  Measurement m;
  m.run = time_form_launches(k, s.rows, s.N, s.K, packed.A.p, packed.B.p, opt, device, adjust,
                             [&](const void* dC, void* stream) {
                               const auto st = static_cast<cudaStream_t>(stream);
                               widen_kernel<<<blocks_for(n), 256, 0, st>>>(static_cast<const unsigned char*>(dC), code, n,
                                                                           widened);
                               GEMMLAB_CUDA_CHECK(cudaGetLastError());
                               GEMMLAB_CUDA_CHECK(cudaStreamSynchronize(st));
                             });
  if (const std::string w = gin->written(k.layout_a, k.layout_b); !w.empty())
    throw std::runtime_error(std::string(k.name) + " wrote into its input " + w +
                             "; a GEMM must leave A, B, C0 and the bias as it found them");
  float amax = std::nanf("");
  GEMMLAB_CUDA_CHECK(cudaMemcpy(&amax, scalars.as<float>() + 1, sizeof amax, cudaMemcpyDeviceToHost));
  if (!std::isnan(amax)) m.run.amax = amax;
  const auto t0 = std::chrono::steady_clock::now();
  if (auto* g = dynamic_cast<GpuFormReference*>(&ref)) {
    m.stats = compute_error_stats_gpu(widened, g->g, out, model);
    if (keep_output) {
      c.resize(n);
      GEMMLAB_CUDA_CHECK(cudaMemcpy(c.data(), widened, n * sizeof(double), cudaMemcpyDeviceToHost));
    }
  } else {  // a reference the CPU computed: the output judged on the host, and the row says so
    m.host_path = "the form's exact reference was computed on the CPU (" + ref.label + ")";
    c.resize(n);
    GEMMLAB_CUDA_CHECK(cudaMemcpy(c.data(), widened, n * sizeof(double), cudaMemcpyDeviceToHost));
    m.stats = compute_error_stats(c, ref.host(), out, model, threads);
    if (!keep_output) c.clear();
  }
  m.stats_seconds = seconds_since(t0);
  m.run.c = std::move(c);
  m.run.unwritten = m.stats.unwritten;
  m.run.wall_seconds = std::chrono::duration<double>(t0 - wall_start).count();
  return m;
}

}  // namespace gemmlab::device
