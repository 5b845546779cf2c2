// Error statistics on the GPU (see error_stats_gpu.hpp): two passes over the entries, each a grid
// of blocks of kLeafBlock consecutive entries (256 threads x 4 leaves), then a CUB radix sort of
// the relative errors for the order statistics. Everything order-dependent is either integer
// (counts, maxima on bit patterns) or the fixed tree of error_stats.hpp.
#include "experiments/device/error_stats_gpu.hpp"

#include <cub/device/device_radix_sort.cuh>
#include <cuda_runtime.h>

#include <algorithm>
#include <chrono>
#include <cstdint>

#include "kernels/common/cuda_check.cuh"

namespace gemmlab::device {
namespace {

using pfp::DD;
using stats_detail::kLeafBlock;
constexpr int kThreads = 256;
constexpr int kLeavesPerThread = kLeafBlock / kThreads;  // 4
static_assert(kLeavesPerThread == 4, "the thread-level reduction below pairs 4 leaves");
// Pass-1 sums, in the order of error_stats.cpp: r, e, d^2, c^2, and over F (x and c finite): d^2,
// c^2, x^2.
constexpr int kSums = 7;

template <class T>
struct DevBuf {
  T* p = nullptr;
  std::size_t n = 0;
  explicit DevBuf(std::size_t count) : n(count) {
    if (count) GEMMLAB_CUDA_CHECK(cudaMalloc(&p, count * sizeof(T)));
  }
  ~DevBuf() {
    if (p) cudaFree(p);
  }
  DevBuf(const DevBuf&) = delete;
};

// Counters of pass 1 (unsigned long long for atomicAdd / atomicMax).
struct Counters {
  unsigned long long zero_reference, zero_ref_nonzero, nonfinite, unwritten, correct, rel, cw, subnormal, violations;
  unsigned long long close_mismatches;
  unsigned long long rel_max_bits, cw_max_bits, abs_err_max_bits;  // bit patterns of non-negative doubles
};

// Block reduction of NS sums: thread t holds the node covering leaves 4t..4t+3 of the block; the
// shared-memory tree pairs (2i, 2i+1) level by level, as stats_detail::tree_reduce does.
template <int NS>
__device__ void block_tree(DD (&node)[NS], DD* out, std::size_t b, std::size_t nblocks) {
  __shared__ DD sh[NS][kThreads];
  for (int q = 0; q < NS; ++q) sh[q][threadIdx.x] = node[q];
  __syncthreads();
  for (int w = kThreads / 2; w >= 1; w /= 2) {
    DD v[NS];
    if (static_cast<int>(threadIdx.x) < w)
      for (int q = 0; q < NS; ++q) v[q] = pfp::dd_add(sh[q][2 * threadIdx.x], sh[q][2 * threadIdx.x + 1]);
    __syncthreads();
    if (static_cast<int>(threadIdx.x) < w)
      for (int q = 0; q < NS; ++q) sh[q][threadIdx.x] = v[q];
    __syncthreads();
  }
  if (threadIdx.x == 0)
    for (int q = 0; q < NS; ++q) out[q * nblocks + b] = sh[q][0];
}

__device__ __forceinline__ void max_bits(unsigned long long* at, double v) {
  if (!pfp::is_nan(v) && v > 0) atomicMax(at, pfp::bits(v));
}

// Pass 1: counts, maxima, the kSums sums, and the keys to sort (r, or +NaN).
__global__ void pass1_kernel(const double* __restrict__ x, const double* __restrict__ c,
                             const double* __restrict__ c_odd, const double* __restrict__ ab, std::size_t n,
                             pfp::FormatParams fp, stats_detail::Judge judge, std::size_t nblocks,
                             DD* __restrict__ part, Counters* __restrict__ cnt, double* __restrict__ keys) {
  const std::size_t b = blockIdx.x;
  const std::size_t base = b * kLeafBlock + static_cast<std::size_t>(threadIdx.x) * kLeavesPerThread;
  DD leaf[kSums][kLeavesPerThread];
  unsigned long long zr = 0, zrn = 0, nf = 0, nan = 0, corr = 0, rel = 0, cw = 0, sub = 0, viol = 0, mis = 0;
  double rmax = 0, cmax = 0, amax = 0;
  for (int l = 0; l < kLeavesPerThread; ++l) {
    for (int q = 0; q < kSums; ++q) leaf[q][l] = DD{};
    const std::size_t i = base + l;
    if (i >= n) continue;
    const double ci = c[i];
    const double c_out = fp.identity ? ci : pfp::round_format(c_odd[i], fp);  // fp64: c itself
    const stats_detail::Entry t = stats_detail::entry(x[i], ci, c_out, ab[i], judge);
    corr += t.correct;
    zr += t.zero_ref;
    zrn += t.zero_ref_nonzero;
    mis += t.close_mismatch;
    keys[i] = pfp::from_bits(0x7FF8000000000000ull);  // sorts after every r (r is never NaN)
    if (t.nonfinite) {
      ++nf;
      nan += t.nan;
      continue;
    }
    sub += t.subnormal_ref;
    viol += t.violation;
    leaf[2][l] = pfp::square(t.d);
    leaf[3][l] = pfp::square(ci);
    if (t.in_f) {
      leaf[4][l] = leaf[2][l];
      leaf[5][l] = leaf[3][l];
      leaf[6][l] = pfp::square(x[i]);
      amax = fmax(amax, pfp::fabs(t.d));
    }
    cmax = fmax(cmax, t.cw_abs);
    if (t.has_cw) ++cw, leaf[1][l] = DD{t.e, 0};
    if (t.has_rel) {
      ++rel, leaf[0][l] = DD{t.r, 0};
      keys[i] = t.r;
      rmax = fmax(rmax, pfp::fabs(t.r));
    }
  }
  DD node[kSums];
  for (int q = 0; q < kSums; ++q)
    node[q] = pfp::dd_add(pfp::dd_add(leaf[q][0], leaf[q][1]), pfp::dd_add(leaf[q][2], leaf[q][3]));
  block_tree<kSums>(node, part, b, nblocks);
  // Integer counts: warp sums, then one atomic per warp (any order gives the same totals).
  for (int o = 16; o > 0; o >>= 1) {
    zr += __shfl_xor_sync(0xffffffffu, zr, o);
    zrn += __shfl_xor_sync(0xffffffffu, zrn, o);
    nf += __shfl_xor_sync(0xffffffffu, nf, o);
    nan += __shfl_xor_sync(0xffffffffu, nan, o);
    corr += __shfl_xor_sync(0xffffffffu, corr, o);
    rel += __shfl_xor_sync(0xffffffffu, rel, o);
    cw += __shfl_xor_sync(0xffffffffu, cw, o);
    sub += __shfl_xor_sync(0xffffffffu, sub, o);
    viol += __shfl_xor_sync(0xffffffffu, viol, o);
    mis += __shfl_xor_sync(0xffffffffu, mis, o);
  }
  if (threadIdx.x % 32 == 0) {
    if (zr) atomicAdd(&cnt->zero_reference, zr);
    if (zrn) atomicAdd(&cnt->zero_ref_nonzero, zrn);
    if (nf) atomicAdd(&cnt->nonfinite, nf);
    if (nan) atomicAdd(&cnt->unwritten, nan);
    if (corr) atomicAdd(&cnt->correct, corr);
    if (rel) atomicAdd(&cnt->rel, rel);
    if (cw) atomicAdd(&cnt->cw, cw);
    if (sub) atomicAdd(&cnt->subnormal, sub);
    if (viol) atomicAdd(&cnt->violations, viol);
    if (mis) atomicAdd(&cnt->close_mismatches, mis);
  }
  max_bits(&cnt->rel_max_bits, rmax);
  max_bits(&cnt->cw_max_bits, cmax);
  max_bits(&cnt->abs_err_max_bits, amax);
}

// Pass 2: the sums of squared deviations from the rounded means.
__global__ void pass2_kernel(const double* __restrict__ x, const double* __restrict__ c,
                             const double* __restrict__ ab, std::size_t n, stats_detail::Judge judge,
                             double mean_r, double mean_e, std::size_t nblocks, DD* __restrict__ part) {
  const std::size_t b = blockIdx.x;
  const std::size_t base = b * kLeafBlock + static_cast<std::size_t>(threadIdx.x) * kLeavesPerThread;
  DD leaf[2][kLeavesPerThread];
  for (int l = 0; l < kLeavesPerThread; ++l) {
    leaf[0][l] = leaf[1][l] = DD{};
    const std::size_t i = base + l;
    if (i >= n) continue;
    const stats_detail::Entry t = stats_detail::entry(x[i], c[i], 0.0, ab[i], judge);
    if (t.nonfinite) continue;
    if (t.has_rel) leaf[0][l] = pfp::square(pfp::sub(t.r, mean_r));
    if (t.has_cw) leaf[1][l] = pfp::square(pfp::sub(t.e, mean_e));
  }
  DD node[2];
  for (int q = 0; q < 2; ++q)
    node[q] = pfp::dd_add(pfp::dd_add(leaf[q][0], leaf[q][1]), pfp::dd_add(leaf[q][2], leaf[q][3]));
  block_tree<2>(node, part, b, nblocks);
}

std::size_t tree_leaves(std::size_t n) {
  std::size_t p = kLeafBlock;
  while (p < n) p *= 2;
  return p;
}

ErrorStats run_stats(const double* x, const double* c, const double* c_odd, const double* ab, int M, int N,
                     Format out, const BoundModel& model) {
  const std::size_t n = static_cast<std::size_t>(M) * N;
  const std::size_t nblocks = tree_leaves(n) / kLeafBlock;
  stats_detail::Raw raw;
  raw.entries = static_cast<std::int64_t>(n);
  DevBuf<DD> part(kSums * nblocks);
  DevBuf<Counters> cnt(1);
  DevBuf<double> keys(std::max<std::size_t>(n, 1)), sorted(std::max<std::size_t>(n, 1));
  GEMMLAB_CUDA_CHECK(cudaMemset(cnt.p, 0, sizeof(Counters)));
  const stats_detail::Judge judge = stats_detail::judge_of(out, model);
  pass1_kernel<<<static_cast<unsigned>(nblocks), kThreads>>>(x, c, c_odd, ab, n, stats_detail::format_params(out),
                                                             judge, nblocks, part.p, cnt.p, keys.p);
  GEMMLAB_LAUNCH_CHECK("pass1_kernel");
  std::vector<DD> h(kSums * nblocks);
  Counters hc{};
  GEMMLAB_CUDA_CHECK(cudaMemcpy(h.data(), part.p, h.size() * sizeof(DD), cudaMemcpyDeviceToHost));
  GEMMLAB_CUDA_CHECK(cudaMemcpy(&hc, cnt.p, sizeof hc, cudaMemcpyDeviceToHost));
  raw.zero_reference = static_cast<std::int64_t>(hc.zero_reference);
  raw.zero_ref_nonzero = static_cast<std::int64_t>(hc.zero_ref_nonzero);
  raw.nonfinite = static_cast<std::int64_t>(hc.nonfinite);
  raw.unwritten = static_cast<std::int64_t>(hc.unwritten);
  raw.correct = static_cast<std::int64_t>(hc.correct);
  raw.rel_count = static_cast<std::int64_t>(hc.rel);
  raw.cw_count = static_cast<std::int64_t>(hc.cw);
  raw.subnormal_reference = static_cast<std::int64_t>(hc.subnormal);
  raw.bound_violations = static_cast<std::int64_t>(hc.violations);
  raw.close_mismatches = static_cast<std::int64_t>(hc.close_mismatches);
  raw.rel_max_abs = pfp::from_bits(hc.rel_max_bits);
  raw.componentwise = pfp::from_bits(hc.cw_max_bits);
  raw.max_abs_err = pfp::from_bits(hc.abs_err_max_bits);
  raw.rel_sum = stats_detail::tree_reduce(h.data() + 0 * nblocks, nblocks);
  raw.cw_sum = stats_detail::tree_reduce(h.data() + 1 * nblocks, nblocks);
  raw.err2_sum = stats_detail::tree_reduce(h.data() + 2 * nblocks, nblocks);
  raw.ref2_sum = stats_detail::tree_reduce(h.data() + 3 * nblocks, nblocks);
  raw.f_err2_sum = stats_detail::tree_reduce(h.data() + 4 * nblocks, nblocks);
  raw.f_ref2_sum = stats_detail::tree_reduce(h.data() + 5 * nblocks, nblocks);
  raw.f_x2_sum = stats_detail::tree_reduce(h.data() + 6 * nblocks, nblocks);

  pass2_kernel<<<static_cast<unsigned>(nblocks), kThreads>>>(
      x, c, ab, n, judge, stats_detail::mean_of(raw.rel_sum, raw.rel_count),
      stats_detail::mean_of(raw.cw_sum, raw.cw_count),
      nblocks, part.p);
  GEMMLAB_LAUNCH_CHECK("pass2_kernel");
  GEMMLAB_CUDA_CHECK(cudaMemcpy(h.data(), part.p, 2 * nblocks * sizeof(DD), cudaMemcpyDeviceToHost));
  raw.rel_dev2_sum = stats_detail::tree_reduce(h.data() + 0 * nblocks, nblocks);
  raw.cw_dev2_sum = stats_detail::tree_reduce(h.data() + 1 * nblocks, nblocks);

  if (raw.rel_count > 0) {
    std::size_t temp_bytes = 0;
    GEMMLAB_CUDA_CHECK(cub::DeviceRadixSort::SortKeys(nullptr, temp_bytes, keys.p, sorted.p, static_cast<std::int64_t>(n)));
    DevBuf<char> temp(std::max<std::size_t>(temp_bytes, 1));
    GEMMLAB_CUDA_CHECK(cub::DeviceRadixSort::SortKeys(temp.p, temp_bytes, keys.p, sorted.p, static_cast<std::int64_t>(n)));
    GEMMLAB_LAUNCH_CHECK("cub::DeviceRadixSort::SortKeys");
    for (int q = 0; q < 3; ++q) {
      std::int64_t k;
      double f;
      stats_detail::quantile_position(raw.rel_count, stats_detail::kQuantiles[q], k, f);
      const int take = k + 1 < raw.rel_count ? 2 : 1;
      double v[2];
      GEMMLAB_CUDA_CHECK(cudaMemcpy(v, sorted.p + k, take * sizeof(double), cudaMemcpyDeviceToHost));
      raw.q_lo[q] = v[0];
      raw.q_hi[q] = take == 2 ? v[1] : v[0];
    }
  }
  return stats_detail::assemble(raw, out, model);
}

}  // namespace

ErrorStats compute_error_stats_gpu(const double* device_computed, const GpuReference& ref, Format out,
                                   const BoundModel& model, GpuStatsTiming* timing) {
  const auto t0 = std::chrono::steady_clock::now();
  ErrorStats s = run_stats(device_computed, ref.device_c(), ref.device_c_odd(), ref.device_abs_ab(), ref.M, ref.N,
                           out, model);
  if (timing) timing->total = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  return s;
}

ErrorStats compute_error_stats_gpu(const std::vector<double>& computed, const GpuReference& ref, Format out,
                                   const BoundModel& model, GpuStatsTiming* timing) {
  const std::size_t n = static_cast<std::size_t>(ref.M) * ref.N;
  if (computed.size() != n)
    throw std::invalid_argument("compute_error_stats_gpu: computed has " + std::to_string(computed.size()) +
                                " entries, the reference M*N = " + std::to_string(n));
  DevBuf<double> x(std::max<std::size_t>(n, 1));
  GEMMLAB_CUDA_CHECK(cudaMemcpy(x.p, computed.data(), n * sizeof(double), cudaMemcpyHostToDevice));
  return compute_error_stats_gpu(x.p, ref, out, model, timing);
}

ErrorStats compute_error_stats_gpu(const std::vector<double>& computed, const GemmReference& ref, Format out,
                                   const BoundModel& model, GpuStatsTiming* timing) {
  const auto t0 = std::chrono::steady_clock::now();
  const std::size_t n = static_cast<std::size_t>(ref.M) * ref.N;
  if (computed.size() != n || ref.c.size() != n || ref.c_odd.size() != n || ref.abs_ab.size() != n)
    throw std::invalid_argument("compute_error_stats_gpu: sizes disagree: M*N = " + std::to_string(n) + ", computed " +
                                std::to_string(computed.size()) + ", c " + std::to_string(ref.c.size()) + ", c_odd " +
                                std::to_string(ref.c_odd.size()) + ", abs_ab " + std::to_string(ref.abs_ab.size()));
  const std::size_t bytes = n * sizeof(double);
  DevBuf<double> x(std::max<std::size_t>(n, 1)), c(std::max<std::size_t>(n, 1)), co(std::max<std::size_t>(n, 1)),
      ab(std::max<std::size_t>(n, 1));
  GEMMLAB_CUDA_CHECK(cudaMemcpy(x.p, computed.data(), bytes, cudaMemcpyHostToDevice));
  GEMMLAB_CUDA_CHECK(cudaMemcpy(c.p, ref.c.data(), bytes, cudaMemcpyHostToDevice));
  GEMMLAB_CUDA_CHECK(cudaMemcpy(co.p, ref.c_odd.data(), bytes, cudaMemcpyHostToDevice));
  GEMMLAB_CUDA_CHECK(cudaMemcpy(ab.p, ref.abs_ab.data(), bytes, cudaMemcpyHostToDevice));
  ErrorStats s = run_stats(x.p, c.p, co.p, ab.p, ref.M, ref.N, out, model);
  if (timing) timing->total = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  return s;
}

}  // namespace gemmlab::device
