// Quantized recipes on the GPU (see quantized_gpu.hpp). Passes:
//  tensor amax (NVFP4 only): every |x| joins one maximum by atomicMax on the fp32 bit pattern (for
//              non-negative floats the bit order is the value order); the tensor scale is computed on the
//              host by the same function the CPU uses;
//  blocks:     one thread per scale block walks its (at most K) entries: amax, min, max (exact in any
//              order), then the scale (and zero) by quantized_entry.hpp, a problem recorded per block;
//  elements:   one thread per entry: the element and its dequantized value, uint4's exactness per block.
#include "experiments/device/quantized_gpu.hpp"
#include "experiments/device/device_free.hpp"

#include <cuda_runtime.h>

#include <algorithm>
#include <climits>
#include <cstring>
#include <stdexcept>

#include "experiments/device/inputs_gpu.hpp"
#include "kernels/common/cuda_check.cuh"
#include "reference/quantized_entry.hpp"

namespace gemmlab::device {

struct QuantizedDeviceOperand::Buffers {
  float* q = nullptr;
  double* dequantized = nullptr;
  float* scales = nullptr;
  float* zeros = nullptr;
  ~Buffers() {
    device_free(q);
    device_free(dequantized);
    device_free(scales);
    device_free(zeros);
  }
};

QuantizedDeviceOperand::QuantizedDeviceOperand() = default;
QuantizedDeviceOperand::~QuantizedDeviceOperand() = default;
QuantizedDeviceOperand::QuantizedDeviceOperand(QuantizedDeviceOperand&&) noexcept = default;
QuantizedDeviceOperand& QuantizedDeviceOperand::operator=(QuantizedDeviceOperand&&) noexcept = default;
const float* QuantizedDeviceOperand::q() const { return buffers->q; }
const double* QuantizedDeviceOperand::dequantized() const { return buffers->dequantized; }
const float* QuantizedDeviceOperand::scales() const { return buffers->scales; }
const float* QuantizedDeviceOperand::zeros() const { return buffers->zeros; }

namespace {

using quant_detail::QuantPlan;
constexpr int kThreads = 256;

unsigned blocks_for(std::size_t n) {
  return static_cast<unsigned>(std::max<std::size_t>(1, std::min<std::size_t>((n + kThreads - 1) / kThreads, 1u << 20)));
}

__global__ void tensor_amax_kernel(const float* __restrict__ x, std::size_t n, unsigned* __restrict__ amax_bits,
                                   int* __restrict__ nonfinite) {
  unsigned m = 0;
  for (std::size_t idx = blockIdx.x * static_cast<std::size_t>(blockDim.x) + threadIdx.x; idx < n;
       idx += static_cast<std::size_t>(gridDim.x) * blockDim.x) {
    const float v = x[idx];
    if (!isfinite(v)) *nonfinite = 1;
    else m = max(m, __float_as_uint(fabsf(v)));
  }
  for (int o = 16; o > 0; o >>= 1) m = max(m, __shfl_down_sync(0xffffffffu, m, o));
  if ((threadIdx.x & 31) == 0) atomicMax(amax_bits, m);
}

// One thread per scale block: its statistics, scale and zero; problem[c] (0: none).
__global__ void block_kernel(const float* __restrict__ x, QuantPlan p, int rows, int cols, int grid_rows,
                             double tensor_scale, float* __restrict__ scales, float* __restrict__ zeros,
                             int* __restrict__ problem) {
  const int c = blockIdx.x * blockDim.x + threadIdx.x;
  if (c >= grid_rows * p.grid_cols) return;
  const int gi = c / p.grid_cols, gj = c % p.grid_cols;
  double amax = 0.0, mn = INFINITY, mx = -INFINITY;
  bool nonfinite = false;
  for (int i = gi * p.block_rows; i < min(rows, (gi + 1) * p.block_rows); ++i)
    for (int j = gj * p.block_cols; j < min(cols, (gj + 1) * p.block_cols); ++j) {
      const double v = x[static_cast<std::size_t>(i) * cols + j];
      if (!gemmlab::pfp::is_finite(v)) {
        nonfinite = true;
        continue;
      }
      amax = fmax(amax, fabs(v));
      mn = fmin(mn, v);
      mx = fmax(mx, v);
    }
  int prob = 0;
  double s = 0.0, z = 0.0;
  if (nonfinite) {
    prob = quant_detail::quant_nonfinite;
  } else {
    switch (p.scheme) {
      case 1: s = quant_detail::mx_scale(amax, p, &prob); break;
      case 2: s = quant_detail::ratio_scale(amax, gemmlab::pfp::mul(6.0, tensor_scale), p.scale, &prob); break;
      case 3: s = quant_detail::ratio_scale(amax, 127.0, p.scale, &prob); break;
      case 4:
        if (p.zero) {
          s = quant_detail::uint4_scale(mn, mx, p, &prob);
          if (!prob) z = quant_detail::uint4_zero(mn, s, p);
        } else {
          s = quant_detail::ratio_scale(amax, 7.0, p.scale, &prob);
        }
        break;
      default: s = 1.0; break;  // plain: one unused cell
    }
  }
  scales[c] = static_cast<float>(s);  // exact: a value of the scale format (0 where there is a problem)
  if (zeros) zeros[c] = static_cast<float>(z);
  problem[c] = prob;
}

__global__ void element_kernel(const float* __restrict__ x, QuantPlan p, int cols, std::size_t n, double tensor_scale,
                               const float* __restrict__ scales, const float* __restrict__ zeros, float* __restrict__ q,
                               double* __restrict__ dq, int* __restrict__ inexact) {
  for (std::size_t idx = blockIdx.x * static_cast<std::size_t>(blockDim.x) + threadIdx.x; idx < n;
       idx += static_cast<std::size_t>(gridDim.x) * blockDim.x) {
    const int i = static_cast<int>(idx / static_cast<std::size_t>(cols));
    const int j = static_cast<int>(idx - static_cast<std::size_t>(i) * cols);
    const long long c = quant_detail::scale_index(p, i, j);
    const double s = scales[c], z = zeros ? static_cast<double>(zeros[c]) : 0.0;
    double v;
    if (p.scheme == 0) v = gemmlab::pfp::round_format(x[idx], p.element);
    else if (p.zero) v = quant_detail::quantize_uint4(x[idx], s, z, p);
    else v = quant_detail::quantize_element(x[idx], p.scheme == 2 ? gemmlab::pfp::mul(s, tensor_scale) : s, p);
    bool bad = false;
    q[idx] = static_cast<float>(v);  // exact: an element value
    dq[idx] = quant_detail::dequantize(v, s, z, tensor_scale, p, &bad);
    if (bad) atomicMin(inexact, static_cast<int>(c));
  }
}

// Element and grid accessors for quantized_entry.hpp's element_word / scale_word (host-callable too, so that the
// __host__ __device__ templates instantiate; only the kernels below call them).
struct ValuesOf {
  const float* q;
  int cols;
  GEMMLAB_HD double operator()(int i, int j) const { return q[static_cast<std::size_t>(i) * cols + j]; }
};
struct GridOf {
  const float* g;
  GEMMLAB_HD double operator()(long long t) const { return g[t]; }
};

template <class Word>
__global__ void element_pack_kernel(ValuesOf q, quant_detail::ElementPack p, std::size_t n, Word* __restrict__ out) {
  for (std::size_t t = blockIdx.x * static_cast<std::size_t>(blockDim.x) + threadIdx.x; t < n;
       t += static_cast<std::size_t>(gridDim.x) * blockDim.x)
    out[t] = static_cast<Word>(quant_detail::element_word(q, static_cast<long long>(t), p));
}
template <class Word>
__global__ void scale_pack_kernel(GridOf g, quant_detail::ScalePack p, std::size_t n, Word* __restrict__ out) {
  for (std::size_t t = blockIdx.x * static_cast<std::size_t>(blockDim.x) + threadIdx.x; t < n;
       t += static_cast<std::size_t>(gridDim.x) * blockDim.x)
    out[t] = static_cast<Word>(quant_detail::scale_word(g, static_cast<long long>(t), p));
}

template <class Kernel>
void launch_words(std::size_t width, std::size_t n, void* out, cudaStream_t s, const Kernel& k) {
  if (n == 0) return;
  if (width == 1) k(static_cast<std::uint8_t*>(out));
  else if (width == 2) k(static_cast<std::uint16_t*>(out));
  else k(static_cast<std::uint32_t*>(out));
  (void)s;
}

__global__ void unrepresentable_kernel(const double* __restrict__ x, std::size_t n, gemmlab::pfp::FormatParams f,
                                       int* __restrict__ flag) {
  for (std::size_t t = blockIdx.x * static_cast<std::size_t>(blockDim.x) + threadIdx.x; t < n;
       t += static_cast<std::size_t>(gridDim.x) * blockDim.x)
    if (gemmlab::pfp::round_format(x[t], f) != x[t]) *flag = 1;
}

__global__ void epilogue_kernel(const double* __restrict__ x, const double* __restrict__ c,
                                const float* __restrict__ sa, const float* __restrict__ sb, int M, int N,
                                unsigned long long* __restrict__ differ) {
  const std::size_t n = static_cast<std::size_t>(M) * N;
  unsigned long long local[quant_detail::kEpilogueCandidates] = {};
  for (std::size_t t = blockIdx.x * static_cast<std::size_t>(blockDim.x) + threadIdx.x; t < n;
       t += static_cast<std::size_t>(gridDim.x) * blockDim.x) {
    const double a = sa[t / N], b = sb[t % N];
    const double S = rint(gemmlab::pfp::div(c[t], gemmlab::pfp::mul(a, b)));
    double cand[quant_detail::kEpilogueCandidates];
    quant_detail::epilogue_candidates(S, a, b, cand);
    for (int k = 0; k < quant_detail::kEpilogueCandidates; ++k)
      if (gemmlab::pfp::bits(cand[k]) != gemmlab::pfp::bits(x[t])) ++local[k];
  }
  for (int k = 0; k < quant_detail::kEpilogueCandidates; ++k)
    if (local[k]) atomicAdd(differ + k, local[k]);
}

__global__ void unit_scale_kernel(const double* __restrict__ v, QuantPlan p, std::size_t n, float* __restrict__ q,
                                  int* __restrict__ bad) {
  for (std::size_t t = blockIdx.x * static_cast<std::size_t>(blockDim.x) + threadIdx.x; t < n;
       t += static_cast<std::size_t>(gridDim.x) * blockDim.x) {
    double e = 0;
    if (!quant_detail::unit_scale_element(v[t], p, &e)) *bad = 1;
    q[t] = static_cast<float>(e);  // exact: an element value
  }
}

__global__ void fill_kernel(float* __restrict__ x, std::size_t n, float value) {
  for (std::size_t t = blockIdx.x * static_cast<std::size_t>(blockDim.x) + threadIdx.x; t < n;
       t += static_cast<std::size_t>(gridDim.x) * blockDim.x)
    x[t] = value;
}

template <class T>
T* device_alloc(std::size_t n) {
  T* p = nullptr;
  GEMMLAB_CUDA_CHECK(cudaMalloc(&p, std::max<std::size_t>(n, 1) * sizeof(T)));
  return p;
}

using Scratch = DeviceScratch;  // kernels/common/cuda_check.cuh

}  // namespace

namespace {
// An operand's shape and plan (quant_plan refuses a K that is not a multiple of the block), its buffers empty.
QuantizedDeviceOperand planned_operand(Operand which, const QuantSpec& spec, int rows, int cols) {
  QuantizedDeviceOperand r;
  r.spec = spec;
  r.which = which;
  r.rows = rows, r.cols = cols;
  r.plan = quant_plan(which, spec, rows, cols);
  r.grid_rows = (rows + r.plan.block_rows - 1) / r.plan.block_rows;
  r.grid_cols = r.plan.grid_cols;
  r.buffers = std::make_unique<QuantizedDeviceOperand::Buffers>();
  return r;
}
}  // namespace

QuantizedDeviceOperand quantize_gpu(const float* device_source, Operand which, const QuantSpec& spec, int rows, int cols,
                                    void* stream) {
  QuantizedDeviceOperand r = planned_operand(which, spec, rows, cols);
  const std::size_t n = static_cast<std::size_t>(rows) * cols;
  const int cells = r.grid_rows * r.grid_cols;
  auto s = static_cast<cudaStream_t>(stream);
  auto& b = *r.buffers;
  b.q = device_alloc<float>(n);
  b.dequantized = device_alloc<double>(n);
  b.scales = device_alloc<float>(cells);
  if (spec.has_zero()) b.zeros = device_alloc<float>(cells);
  auto fail = [&](int problem, int cell) {
    throw std::invalid_argument(quant_problem_message(problem, which, spec, cell < 0 ? -1 : cell / r.grid_cols,
                                                      cell < 0 ? -1 : cell % r.grid_cols));
  };
  if (spec.scheme == QuantScheme::nvfp4) {
    Scratch amax(sizeof(unsigned)), bad(sizeof(int));
    GEMMLAB_CUDA_CHECK(cudaMemsetAsync(amax.p, 0, sizeof(unsigned), s));
    GEMMLAB_CUDA_CHECK(cudaMemsetAsync(bad.p, 0, sizeof(int), s));
    tensor_amax_kernel<<<blocks_for(n), kThreads, 0, s>>>(device_source, n, static_cast<unsigned*>(amax.p),
                                                          static_cast<int*>(bad.p));
    GEMMLAB_LAUNCH_CHECK("tensor_amax_kernel");
    unsigned bits = 0;
    int nonfinite = 0;
    GEMMLAB_CUDA_CHECK(cudaMemcpyAsync(&bits, amax.p, sizeof bits, cudaMemcpyDeviceToHost, s));
    GEMMLAB_CUDA_CHECK(cudaMemcpyAsync(&nonfinite, bad.p, sizeof nonfinite, cudaMemcpyDeviceToHost, s));
    GEMMLAB_CUDA_CHECK(cudaStreamSynchronize(s));
    float a = 0;
    std::memcpy(&a, &bits, sizeof a);
    int problem = 0;
    r.tensor_scale = nonfinite ? (problem = quant_detail::quant_nonfinite, 0.0)
                               : quant_detail::ratio_scale(a, 448.0 * 6.0, format_params(Format::fp32), &problem);
    if (problem) fail(problem, -1);
  }
  if (spec.scheme == QuantScheme::plain) {  // no scale: one cell holding 1, as quantize() makes it
    const float one = 1.0f;
    GEMMLAB_CUDA_CHECK(cudaMemcpyAsync(b.scales, &one, sizeof one, cudaMemcpyHostToDevice, s));
  } else {
    Scratch problems(static_cast<std::size_t>(cells) * sizeof(int));
    block_kernel<<<(cells + kThreads - 1) / kThreads, kThreads, 0, s>>>(device_source, r.plan, rows, cols, r.grid_rows,
                                                                         r.tensor_scale, b.scales, b.zeros,
                                                                         static_cast<int*>(problems.p));
    GEMMLAB_LAUNCH_CHECK("quantized block_kernel");
    std::vector<int> host(static_cast<std::size_t>(cells));
    GEMMLAB_CUDA_CHECK(cudaMemcpyAsync(host.data(), problems.p, host.size() * sizeof(int), cudaMemcpyDeviceToHost, s));
    GEMMLAB_CUDA_CHECK(cudaStreamSynchronize(s));
    for (int c = 0; c < cells; ++c)
      if (host[static_cast<std::size_t>(c)]) fail(host[static_cast<std::size_t>(c)], c);
  }
  Scratch inexact(sizeof(int));
  const int none = INT_MAX;
  GEMMLAB_CUDA_CHECK(cudaMemcpyAsync(inexact.p, &none, sizeof none, cudaMemcpyHostToDevice, s));
  element_kernel<<<blocks_for(n), kThreads, 0, s>>>(device_source, r.plan, cols, n, r.tensor_scale, b.scales, b.zeros,
                                                    b.q, b.dequantized, static_cast<int*>(inexact.p));
  GEMMLAB_LAUNCH_CHECK("quantized element_kernel");
  int first = none;
  GEMMLAB_CUDA_CHECK(cudaMemcpyAsync(&first, inexact.p, sizeof first, cudaMemcpyDeviceToHost, s));
  GEMMLAB_CUDA_CHECK(cudaStreamSynchronize(s));
  if (first != none) fail(quant_detail::quant_inexact, first);
  return r;
}

void pack_kernel_tensors_gpu(const QuantizedDeviceOperand& op, void* elements, void* scales, void* zeros, void* stream) {
  const KernelOperandLayout l = kernel_layout(op.spec, op.which, op.rows, op.cols);
  auto s = static_cast<cudaStream_t>(stream);
  quant_detail::ElementPack ep;
  ep.code = element_code(op.spec);
  ep.two_per_byte = op.spec.element == Format::e2m1 || op.spec.element == Format::int4 || op.spec.element == Format::uint4;
  ep.operand_a = op.which == Operand::A;
  ep.rows = op.rows, ep.cols = op.cols;
  const ValuesOf q{op.q(), op.cols};
  const std::size_t ne = l.elements.count();
  launch_words(bytes_of(l.elements.type), ne, elements, s, [&](auto* out) {
    element_pack_kernel<<<blocks_for(ne), kThreads, 0, s>>>(q, ep, ne, out);
  });
  GEMMLAB_LAUNCH_CHECK("element_pack_kernel");
  auto grid = [&](const TensorLayout& t, const float* values, void* out) {
    if (!t.present() || !out) return;
    quant_detail::ScalePack sp;
    sp.code = scale_code(op.spec);
    sp.transposed = op.which == Operand::B && (op.spec.scheme == QuantScheme::mx || op.spec.scheme == QuantScheme::nvfp4);
    sp.grid_rows = op.grid_rows, sp.grid_cols = op.grid_cols;
    const std::size_t n = t.count();
    launch_words(bytes_of(t.type), n, out, s, [&](auto* w) {
      scale_pack_kernel<<<blocks_for(n), kThreads, 0, s>>>(GridOf{values}, sp, n, w);
    });
    GEMMLAB_LAUNCH_CHECK("scale_pack_kernel");
  };
  grid(l.scales, op.scales(), scales);
  grid(l.zeros, op.zeros(), zeros);
}

QuantizedDeviceOperand unit_scale_operand_gpu(Operand which, const QuantSpec& spec, int rows, int cols) {
  QuantizedDeviceOperand r = planned_operand(which, spec, rows, cols);
  r.tensor_scale = 1.0;
  const std::size_t n = static_cast<std::size_t>(rows) * cols, cells = static_cast<std::size_t>(r.grid_rows) * r.grid_cols;
  auto& b = *r.buffers;
  b.q = device_alloc<float>(n);
  b.scales = device_alloc<float>(cells);
  fill_kernel<<<blocks_for(cells), kThreads>>>(b.scales, cells, 1.0f);
  GEMMLAB_LAUNCH_CHECK("fill_kernel");
  if (spec.has_zero()) {
    b.zeros = device_alloc<float>(cells);
    GEMMLAB_CUDA_CHECK(cudaMemset(b.zeros, 0, cells * sizeof(float)));
  }
  GEMMLAB_CUDA_CHECK(cudaMemset(b.q, 0, n * sizeof(float)));
  GEMMLAB_CUDA_CHECK(cudaDeviceSynchronize());
  return r;
}

void set_unit_scale_values_gpu(QuantizedDeviceOperand& op, const double* values, int* bad, void* stream) {
  const std::size_t n = static_cast<std::size_t>(op.rows) * op.cols;
  unit_scale_kernel<<<blocks_for(n), kThreads, 0, static_cast<cudaStream_t>(stream)>>>(values, op.plan, n, op.buffers->q,
                                                                                      bad);
  GEMMLAB_LAUNCH_CHECK("unit_scale_kernel");
}

bool all_representable_gpu(const QuantizedDeviceOperand& op, Format f) {
  const std::size_t n = static_cast<std::size_t>(op.rows) * op.cols;
  Scratch flag(sizeof(int));
  GEMMLAB_CUDA_CHECK(cudaMemset(flag.p, 0, sizeof(int)));
  unrepresentable_kernel<<<blocks_for(n), kThreads>>>(op.dequantized(), n, format_params(f), static_cast<int*>(flag.p));
  GEMMLAB_LAUNCH_CHECK("unrepresentable_kernel");
  int bad = 0;
  GEMMLAB_CUDA_CHECK(cudaMemcpy(&bad, flag.p, sizeof bad, cudaMemcpyDeviceToHost));
  return bad == 0;
}

std::array<long long, quant_detail::kEpilogueCandidates> epilogue_mismatches_gpu(const double* x, const double* c,
                                                                                 const float* scale_a,
                                                                                 const float* scale_b, int M, int N) {
  constexpr int kC = quant_detail::kEpilogueCandidates;
  Scratch differ(kC * sizeof(unsigned long long));
  GEMMLAB_CUDA_CHECK(cudaMemset(differ.p, 0, kC * sizeof(unsigned long long)));
  const std::size_t n = static_cast<std::size_t>(M) * N;
  epilogue_kernel<<<blocks_for(n), kThreads>>>(x, c, scale_a, scale_b, M, N, static_cast<unsigned long long*>(differ.p));
  GEMMLAB_LAUNCH_CHECK("epilogue_kernel");
  unsigned long long h[kC];
  GEMMLAB_CUDA_CHECK(cudaMemcpy(h, differ.p, sizeof h, cudaMemcpyDeviceToHost));
  std::array<long long, kC> out{};
  for (int k = 0; k < kC; ++k) out[static_cast<std::size_t>(k)] = static_cast<long long>(h[k]);
  return out;
}

QuantizedOperand QuantizedDeviceOperand::to_host() const {
  QuantizedOperand h;
  h.spec = spec;
  h.which = which;
  h.plan = plan;
  h.grid_rows = grid_rows, h.grid_cols = grid_cols;
  h.tensor_scale = tensor_scale;
  const std::size_t n = static_cast<std::size_t>(rows) * cols, cells = static_cast<std::size_t>(grid_rows) * grid_cols;
  std::vector<float> q(n), sc(cells), z(zeros() ? cells : 0);
  GEMMLAB_CUDA_CHECK(cudaMemcpy(q.data(), buffers->q, n * sizeof(float), cudaMemcpyDeviceToHost));
  GEMMLAB_CUDA_CHECK(cudaMemcpy(sc.data(), buffers->scales, cells * sizeof(float), cudaMemcpyDeviceToHost));
  if (!z.empty()) GEMMLAB_CUDA_CHECK(cudaMemcpy(z.data(), buffers->zeros, cells * sizeof(float), cudaMemcpyDeviceToHost));
  h.q = Matrix(rows, cols);
  h.q.v.assign(q.begin(), q.end());
  h.scales.assign(sc.begin(), sc.end());
  h.zeros.assign(z.begin(), z.end());
  return h;
}

QuantizedDeviceProblem make_quantized_problem_gpu(const Distribution& d, int M, int N, int K, std::uint64_t seed) {
  if (!d.quant)
    throw std::invalid_argument("make_quantized_problem_gpu: " + d.name() + " has no quantized recipe (SOURCE@RECIPE)");
  QuantizedDeviceProblem p;
  p.M = M, p.N = N, p.K = K;
  p.recipe = *d.quant;
  // Refuse a K the recipe cannot block before anything is generated.
  quant_plan(Operand::A, p.recipe.a, M, K);
  quant_plan(Operand::B, p.recipe.b, K, N);
  auto owned = [](std::size_t n) { return std::shared_ptr<float>(device_alloc<float>(n), [](float* q) { device_free(q); }); };
  p.A0 = owned(static_cast<std::size_t>(M) * K);
  p.B0 = owned(static_cast<std::size_t>(K) * N);
  generate_gpu(d.source(), Operand::A, M, K, Format::fp32, seed, p.A0.get(), nullptr);
  generate_gpu(d.source(), Operand::B, K, N, Format::fp32, seed, p.B0.get(), nullptr);
  p.A = quantize_gpu(p.A0.get(), Operand::A, p.recipe.a, M, K);
  p.B = quantize_gpu(p.B0.get(), Operand::B, p.recipe.b, K, N);
  GEMMLAB_CUDA_CHECK(cudaDeviceSynchronize());
  return p;
}

}  // namespace gemmlab::device
