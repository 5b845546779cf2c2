// gemmlab.evaluate on the GPU (see evaluate_gpu.hpp).
#include "experiments/device/evaluate_gpu.hpp"
#include "experiments/device/device_free.hpp"

#include <cuda_fp16.h>
#include <cuda_runtime.h>
#include <thrust/count.h>
#include <thrust/device_ptr.h>
#include <thrust/execution_policy.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <vector>

#include "experiments/device/error_stats_gpu.hpp"
#include "experiments/device/exact_reference_gpu.hpp"
#include "experiments/device/runner.hpp"
#include "experiments/plan/plan.hpp"
#include "kernels/common/cuda_check.cuh"

namespace gemmlab::device {
namespace {

template <class T>
struct Buf {
  T* p = nullptr;
  explicit Buf(std::size_t n) { GEMMLAB_CUDA_CHECK(cudaMalloc(&p, std::max<std::size_t>(n, 1) * sizeof(T))); }
  ~Buf() { device_free(p); }
  Buf(const Buf&) = delete;
  Buf& operator=(const Buf&) = delete;
};

// The value of a storage pattern, exactly (every format here is a subset of fp32).
__device__ float decode(const unsigned char* base, std::size_t off, int fmt) {
  switch (fmt) {
    case 0: return reinterpret_cast<const float*>(base)[off];  // fp32, tf32
    case 1: return __half2float(reinterpret_cast<const __half*>(base)[off]);
    case 2: return __uint_as_float(static_cast<unsigned>(reinterpret_cast<const unsigned short*>(base)[off]) << 16);
    case 3: {  // e4m3 (fn: no infinity; S.1111.111 is NaN)
      const unsigned b = base[off], e = (b >> 3) & 15u, m = b & 7u;
      const float sign = (b & 0x80u) ? -1.0f : 1.0f;
      if (e == 15u && m == 7u) return __int_as_float(0x7fc00000);
      return sign * (e == 0 ? ldexpf(static_cast<float>(m), -9) : ldexpf(static_cast<float>(8u + m), static_cast<int>(e) - 10));
    }
    default: {  // e5m2
      const unsigned b = base[off], e = (b >> 2) & 31u, m = b & 3u;
      const float sign = (b & 0x80u) ? -1.0f : 1.0f;
      if (e == 31u) return m ? __int_as_float(0x7fc00000) : sign * __int_as_float(0x7f800000);
      return sign * (e == 0 ? ldexpf(static_cast<float>(m), -16) : ldexpf(static_cast<float>(4u + m), static_cast<int>(e) - 17));
    }
  }
}

__global__ void to_float_kernel(const unsigned char* __restrict__ src, int fmt, int rows, int cols, long long s0,
                                long long s1, float* __restrict__ dst) {
  const std::size_t n = static_cast<std::size_t>(rows) * cols;
  for (std::size_t idx = blockIdx.x * static_cast<std::size_t>(blockDim.x) + threadIdx.x; idx < n;
       idx += static_cast<std::size_t>(gridDim.x) * blockDim.x) {
    const long long i = static_cast<long long>(idx / cols), j = static_cast<long long>(idx % cols);
    dst[idx] = decode(src, static_cast<std::size_t>(i * s0 + j * s1), fmt);
  }
}

__global__ void to_double_kernel(const float* __restrict__ src, std::size_t n, double* __restrict__ dst) {
  for (std::size_t i = blockIdx.x * static_cast<std::size_t>(blockDim.x) + threadIdx.x; i < n;
       i += static_cast<std::size_t>(gridDim.x) * blockDim.x)
    dst[i] = src[i];
}

int code_of(Format f) {
  switch (f) {
    case Format::fp32:
    case Format::tf32: return 0;
    case Format::fp16: return 1;
    case Format::bf16: return 2;
    case Format::e4m3: return 3;
    case Format::e5m2: return 4;
    default:
      throw UsageError(std::string("a GPU tensor of format ") + info(f).name +
                       " cannot be evaluated on the GPU (fp32, tf32, fp16, bf16, e4m3 and e5m2 can)");
  }
}

struct Unrepresentable {
  unsigned low_mask;  // fraction bits the format lacks (tf32: the low 13)
  __device__ bool operator()(float x) const {
    const unsigned b = __float_as_uint(x);
    return (b & 0x7f800000u) == 0x7f800000u || (b & low_mask) != 0;
  }
};

struct Beyond {
  double max_finite;
  __device__ bool operator()(double v) const { return !(fabs(v) <= max_finite); }
};

unsigned blocks_for(std::size_t n) { return static_cast<unsigned>(std::max<std::size_t>(1, std::min<std::size_t>((n + 255) / 256, 65535))); }

double since(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

}  // namespace

void to_float(const DeviceMatrix& m, float* dst, void* stream) {
  const std::size_t n = static_cast<std::size_t>(m.rows) * m.cols;
  if (!n) return;
  to_float_kernel<<<blocks_for(n), 256, 0, static_cast<cudaStream_t>(stream)>>>(
      static_cast<const unsigned char*>(m.data), code_of(m.format), m.rows, m.cols, m.s0, m.s1, dst);
  GEMMLAB_LAUNCH_CHECK("to_float");
}

long long count_unrepresentable(const float* data, std::size_t n, Format format, void* stream) {
  const unsigned mask = format == Format::tf32 ? 0x1fffu : 0u;
  const auto p = thrust::device_pointer_cast(data);
  const long long bad = thrust::count_if(thrust::cuda::par.on(static_cast<cudaStream_t>(stream)), p, p + n, Unrepresentable{mask});
  GEMMLAB_CUDA_CHECK(cudaGetLastError());
  return bad;
}

GpuEvaluation evaluate_gpu(const DeviceMatrix& A, const DeviceMatrix& B, const DeviceMatrix& C, const Declared& d,
                           int spot_checks, std::uint64_t seed, bool allow_nonfinite, void* stream) {
  const auto t0 = std::chrono::steady_clock::now();
  const int M = A.rows, K = A.cols, N = B.cols;
  if (B.rows != K)
    throw UsageError("A is " + std::to_string(M) + "x" + std::to_string(K) + " but B is " + std::to_string(B.rows) + "x" +
                     std::to_string(N) + ": A's columns must equal B's rows (K)");
  if (C.rows != M || C.cols != N)
    throw UsageError("C is " + std::to_string(C.rows) + "x" + std::to_string(C.cols) + " but A B is " +
                     std::to_string(M) + "x" + std::to_string(N));
  const Format out = d.numerics.output;
  if (out != Format::fp32 && out != Format::fp16 && out != Format::bf16)
    throw UsageError(std::string("output format ") + info(out).name + " cannot be evaluated on the GPU (fp32, fp16, bf16 can)");
  const cudaStream_t s = static_cast<cudaStream_t>(stream);
  Buf<float> a(static_cast<std::size_t>(M) * K), b(static_cast<std::size_t>(K) * N), cf(static_cast<std::size_t>(M) * N);
  to_float(A, a.p, stream);
  to_float(B, b.p, stream);
  to_float(C, cf.p, stream);
  // Operands must be values of the input format and finite (the reference is of exactly these).
  for (auto [m, p, name] : {std::tuple{&A, a.p, "A"}, std::tuple{&B, b.p, "B"}})
    if (const long long bad = count_unrepresentable(p, static_cast<std::size_t>(m->rows) * m->cols, d.numerics.input, stream))
      throw UsageError(std::string(name) + " has " + std::to_string(bad) + " entries that are NaN, infinite or not " +
                       info(d.numerics.input).name + " values: pass inputs exactly as the kernel read them");
  const std::size_t n = static_cast<std::size_t>(M) * N;
  if (!allow_nonfinite)
    if (const long long bad = count_unrepresentable(cf.p, n, Format::fp32, stream))
      throw UsageError("C has " + std::to_string(bad) +
                       " NaN or infinite entries; pass allow_nonfinite=True to count them in the row (status failed_bound)");
  GEMMLAB_CUDA_CHECK(cudaStreamSynchronize(s));

  // The exact reference (the engine `gemmlab run` uses), with its MPFR spot checks.
  const auto tr = std::chrono::steady_clock::now();
  GpuReference ref = exact_gemm_gpu_device(a.p, b.p, M, N, K);
  std::string label = ref.engine;
  if (spot_checks > 0) {
    const int nc = static_cast<int>(std::min<long long>(spot_checks, static_cast<long long>(M) * N));
    spot_check(M, N, K, nc, seed, ref.engine,
               [&](int i, int j, Matrix& ra, Matrix& rb) {
                 std::vector<float> row(K), col(K);
                 GEMMLAB_CUDA_CHECK(cudaMemcpy(row.data(), a.p + static_cast<std::size_t>(i) * K, K * sizeof(float),
                                               cudaMemcpyDeviceToHost));
                 GEMMLAB_CUDA_CHECK(cudaMemcpy2D(col.data(), sizeof(float), b.p + j, N * sizeof(float), sizeof(float), K,
                                                 cudaMemcpyDeviceToHost));
                 std::copy(row.begin(), row.end(), ra.v.begin());
                 std::copy(col.begin(), col.end(), rb.v.begin());
               },
               [&](long long idx) {
                 double v = 0;
                 GEMMLAB_CUDA_CHECK(cudaMemcpy(&v, ref.device_c() + idx, sizeof v, cudaMemcpyDeviceToHost));
                 return v;
               });
    label += "+mpfr_spot" + std::to_string(nc);
  }
  GpuEvaluation r;
  r.reference_seconds = since(tr);

  const double maxf = info(out).max_finite;
  const auto c = thrust::device_pointer_cast(ref.device_c());
  const long long over = thrust::count_if(thrust::device, c, c + n, Beyond{maxf});
  GEMMLAB_CUDA_CHECK(cudaGetLastError());
  if (over) {
    r.row = evaluated_row(d, M, N, K, label, over, nullptr);
  } else {
    Buf<double> x(n);
    to_double_kernel<<<blocks_for(n), 256, 0, s>>>(cf.p, n, x.p);
    GEMMLAB_LAUNCH_CHECK("to_double");
    GEMMLAB_CUDA_CHECK(cudaStreamSynchronize(s));
    const ErrorStats st = compute_error_stats_gpu(x.p, ref, out, bound_model(d.numerics, K));
    r.row = evaluated_row(d, M, N, K, label, 0, &st);
  }
  r.seconds = since(t0);
  return r;
}

}  // namespace gemmlab::device
