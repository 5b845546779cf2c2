// Error statistics on the GPU (see error_stats_gpu.hpp): two passes over the entries, each a grid
// of blocks of kLeafBlock consecutive entries (256 threads x 4 leaves), then an exact radix select
// of the order statistics' ranks among the relative errors. Everything order-dependent is either
// integer (counts, maxima on bit patterns) or the fixed tree of error_stats.hpp. Device scratch is
// kept per GPU and host thread from call to call (the run loop judges hundreds of outputs of one
// size: a cudaMalloc and cudaFree of the sort's hundreds of MB per call cost more than the work).
#include "experiments/device/error_stats_gpu.hpp"
#include "experiments/device/device_free.hpp"

#include <cub/device/device_radix_sort.cuh>
#include <cuda_runtime.h>

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <map>
#include <memory>
#include <stdexcept>
#include <vector>

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
    if (p) device_free(p);
  }
  DevBuf(const DevBuf&) = delete;
};

// Counters of pass 1 (unsigned long long for atomicAdd / atomicMax).
struct Counters {
  unsigned long long zero_reference, zero_ref_nonzero, nonfinite, unwritten, correct, rel, cw, subnormal, violations;
  unsigned long long close_mismatches;
  unsigned long long rel_max_bits, cw_max_bits, abs_err_max_bits, ratio_max_bits;  // bit patterns of non-negative doubles
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

// --- Exact order statistics by radix select ------------------------------------------------------
// The ranks a quantile needs (r_(k), r_(k+1)) among the relative errors, in the order of a radix sort
// of doubles (bits with the sign bit flipped for positives, all bits for negatives: the sort the
// statistics were defined with; the sentinels of entries without r are NaNs, last). Level 1
// counts the top 12 bits of every key, level 2 the next 12 bits of the keys in the bins that hold a
// wanted rank; the keys whose 24-bit prefix holds a wanted rank are gathered and sorted (CUB), and
// the rank's place among them follows from the counts. Exact: the same order as the full sort,
// reading the keys three times instead of sorting them.
constexpr int kBins = 4096;

__device__ __forceinline__ std::uint64_t order_key(double d) {
  const std::uint64_t b = pfp::bits(d);
  return (b >> 63) ? ~b : (b | 0x8000000000000000ull);
}
__device__ __forceinline__ double from_order_key(std::uint64_t k) {
  return pfp::from_bits((k >> 63) ? (k & 0x7FFFFFFFFFFFFFFFull) : ~k);
}

// One atomic per distinct bin in the warp: errors of one kernel fall into few bins, and 32 lanes
// adding to one address one after another cost more than the whole pass.
__device__ __forceinline__ void warp_count(unsigned* at_base, int bin) {
  const unsigned active = __activemask();
  const unsigned same = __match_any_sync(active, bin);
  if ((threadIdx.x & 31) == __ffs(same) - 1) atomicAdd(at_base + bin, static_cast<unsigned>(__popc(same)));
}

// Pass 1: counts, maxima, the kSums sums, and the keys to sort (r, or +NaN). row_max_a (M) and
// col_max_b (N) are read only for fixed-point operands (judge.h > 0).
__global__ void __launch_bounds__(kThreads, 3)
    pass1_kernel(const double* __restrict__ x, const double* __restrict__ c,
                             const double* __restrict__ c_odd, const double* __restrict__ ab,
                             const double* __restrict__ row_max_a, const double* __restrict__ col_max_b, int N,
                             std::size_t n, pfp::FormatParams fp, stats_detail::Judge judge, std::size_t nblocks,
                             DD* __restrict__ part, Counters* __restrict__ cnt, double* __restrict__ keys,
                             double* __restrict__ evals, unsigned* __restrict__ hist1) {
  const std::size_t b = blockIdx.x;
  // The selection's level-1 histogram of the keys (hist1_kernel's), counted here as the keys are made.
  __shared__ unsigned h1[kBins];
  for (int j = threadIdx.x; j < kBins; j += blockDim.x) h1[j] = 0;
  __syncthreads();
  const std::size_t base = b * kLeafBlock + static_cast<std::size_t>(threadIdx.x) * kLeavesPerThread;
  // The thread's 4 leaves are added as (l0 + l1) + (l2 + l3), each pair as soon as it is complete: two
  // leaves and one pair live at a time, not all four, and at most 80 registers (__launch_bounds__):
  // three blocks per SM instead of one (ncu on an H100 at 4096^2 entries: 150 registers, 12.5%
  // occupancy, 1.58 ms). The same additions in the same order.
  // A leaf's sums, stored compactly: r and e (their low parts are 0), d^2, c^2, x^2, and whether the
  // entry is in F (then its F-sums are its d^2 and c^2 again, and x^2); leaf(q, l) rebuilds sum q.
  double r_[2], e_[2];
  DD d2_[2], c2_[2], x2_[2];
  bool in_f_[2];
  auto leaf = [&](int q, int l) -> DD {
    switch (q) {
      case 0: return DD{r_[l], 0};
      case 1: return DD{e_[l], 0};
      case 2: return d2_[l];
      case 3: return c2_[l];
      case 4: return in_f_[l] ? d2_[l] : DD{};
      case 5: return in_f_[l] ? c2_[l] : DD{};
      default: return in_f_[l] ? x2_[l] : DD{};
    }
  };
  DD pair[kSums], node[kSums];
  unsigned zr = 0, zrn = 0, nf = 0, nan = 0, corr = 0, rel = 0, cw = 0, sub = 0, viol = 0, mis = 0;  // <= 4 each
  double rmax = 0, cmax = 0, amax = 0, bmax = 0;
#pragma unroll
  for (int ll = 0; ll < kLeavesPerThread; ++ll) {
    const int l = ll & 1;
    r_[l] = e_[l] = 0;
    d2_[l] = c2_[l] = x2_[l] = DD{};
    in_f_[l] = false;
    const std::size_t i = base + ll;
    if (i < n) {
      const double ci = c[i];
      const double c_out = fp.identity ? ci : pfp::round_format(c_odd[i], fp);  // fp64: c itself
      const double ab_max = judge.h > 0 ? pfp::mul(row_max_a[i / N], col_max_b[i % N]) : 0.0;
      const stats_detail::Entry t = stats_detail::entry(x[i], ci, c_out, ab[i], ab_max, judge);
      corr += t.correct;
      zr += t.zero_ref;
      zrn += t.zero_ref_nonzero;
      mis += t.close_mismatch;
      // r and e for pass 2 (NaN where the entry has none: r and e are never NaN).
      double key = pfp::from_bits(0x7FF8000000000000ull), eval = key;  // NaN sorts after every r
      if (t.nonfinite) {
        ++nf;
        nan += t.nan;
      } else {
        sub += t.subnormal_ref;
        viol += t.violation;
        d2_[l] = pfp::square(t.d);
        c2_[l] = pfp::square(ci);
        if (t.in_f) {
          in_f_[l] = true;
          x2_[l] = pfp::square(x[i]);
          amax = fmax(amax, pfp::fabs(t.d));
        }
        cmax = fmax(cmax, t.cw_abs);
        bmax = fmax(bmax, t.bound_ratio);
        if (t.has_cw) ++cw, e_[l] = t.e, eval = t.e;
        if (t.has_rel) ++rel, r_[l] = t.r, key = t.r, rmax = fmax(rmax, pfp::fabs(t.r));
      }
      keys[i] = key;
      evals[i] = eval;
      warp_count(h1, static_cast<int>(order_key(key) >> 52));
    }
    if (ll == 1)
#pragma unroll
      for (int q = 0; q < kSums; ++q) pair[q] = pfp::dd_add(leaf(q, 0), leaf(q, 1));
    if (ll == 3)
#pragma unroll
      for (int q = 0; q < kSums; ++q) node[q] = pfp::dd_add(pair[q], pfp::dd_add(leaf(q, 0), leaf(q, 1)));
  }
  block_tree<kSums>(node, part, b, nblocks);  // ends with a barrier: h1 is complete
  for (int j = threadIdx.x; j < kBins; j += blockDim.x)
    if (h1[j]) atomicAdd(&hist1[j], h1[j]);
  // Integer counts and maxima: warp sums (maxima on the bit patterns of non-negative doubles, which
  // order as the values do), then the block's warps in shared memory, then one atomic per block and
  // counter (any order gives the same totals). One atomic per thread on a single address costs more
  // than the whole pass.
  constexpr int kCounts = 10, kMaxima = 4, kAll = kCounts + kMaxima;
  auto max_of = [](double m) { return (!pfp::is_nan(m) && m > 0) ? pfp::bits(m) : 0ull; };
  unsigned long long v[kAll] = {zr,  zrn, nf,  nan, corr,         rel,          cw,
                                sub, viol, mis, max_of(rmax), max_of(cmax), max_of(amax), max_of(bmax)};
  for (int o = 16; o > 0; o >>= 1)
    for (int q = 0; q < kAll; ++q) {
      const unsigned long long other = __shfl_xor_sync(0xffffffffu, v[q], o);
      v[q] = q < kCounts ? v[q] + other : (other > v[q] ? other : v[q]);
    }
  __shared__ unsigned long long warp_v[kThreads / 32][kAll];
  if (threadIdx.x % 32 == 0)
    for (int q = 0; q < kAll; ++q) warp_v[threadIdx.x / 32][q] = v[q];
  __syncthreads();
  if (threadIdx.x < kAll) {
    const int q = static_cast<int>(threadIdx.x);
    unsigned long long t = 0;
    for (int w = 0; w < kThreads / 32; ++w)
      t = q < kCounts ? t + warp_v[w][q] : (warp_v[w][q] > t ? warp_v[w][q] : t);
    unsigned long long* at = q == 0    ? &cnt->zero_reference
                             : q == 1  ? &cnt->zero_ref_nonzero
                             : q == 2  ? &cnt->nonfinite
                             : q == 3  ? &cnt->unwritten
                             : q == 4  ? &cnt->correct
                             : q == 5  ? &cnt->rel
                             : q == 6  ? &cnt->cw
                             : q == 7  ? &cnt->subnormal
                             : q == 8  ? &cnt->violations
                             : q == 9  ? &cnt->close_mismatches
                             : q == 10 ? &cnt->rel_max_bits
                             : q == 11 ? &cnt->cw_max_bits
                             : q == 12 ? &cnt->abs_err_max_bits
                                       : &cnt->ratio_max_bits;
    if (t) {
      if (q < kCounts) atomicAdd(at, t);
      else atomicMax(at, t);
    }
  }
}

// Pass 2: the sums of squared deviations from the rounded means, of the r and e pass 1 kept (NaN:
// none); the same values entry() gives, read instead of computed again.
__global__ void __launch_bounds__(kThreads)
    pass2_kernel(const double* __restrict__ keys, const double* __restrict__ evals, std::size_t n, double mean_r,
                 double mean_e, std::size_t nblocks, DD* __restrict__ part) {
  const std::size_t b = blockIdx.x;
  const std::size_t base = b * kLeafBlock + static_cast<std::size_t>(threadIdx.x) * kLeavesPerThread;
  DD leaf[2][kLeavesPerThread];
  for (int l = 0; l < kLeavesPerThread; ++l) {
    leaf[0][l] = leaf[1][l] = DD{};
    const std::size_t i = base + l;
    if (i >= n) continue;
    const double r = keys[i], e = evals[i];
    if (!pfp::is_nan(r)) leaf[0][l] = pfp::square(pfp::sub(r, mean_r));
    if (!pfp::is_nan(e)) leaf[1][l] = pfp::square(pfp::sub(e, mean_e));
  }
  DD node[2];
  for (int q = 0; q < 2; ++q)
    node[q] = pfp::dd_add(pfp::dd_add(leaf[q][0], leaf[q][1]), pfp::dd_add(leaf[q][2], leaf[q][3]));
  block_tree<2>(node, part, b, nblocks);
}

__global__ void hist1_kernel(const double* __restrict__ keys, std::size_t n, unsigned* __restrict__ hist) {
  __shared__ unsigned h[kBins];
  for (int i = threadIdx.x; i < kBins; i += blockDim.x) h[i] = 0;
  __syncthreads();
  for (std::size_t i = blockIdx.x * static_cast<std::size_t>(blockDim.x) + threadIdx.x; i < n;
       i += static_cast<std::size_t>(gridDim.x) * blockDim.x)
    warp_count(h, static_cast<int>(order_key(keys[i]) >> 52));
  __syncthreads();
  for (int i = threadIdx.x; i < kBins; i += blockDim.x)
    if (h[i]) atomicAdd(&hist[i], h[i]);
}

// Level 2 for the level-1 bins targets[t0 .. t0 + ng) (ng <= kHist2Group), hist[t * kBins + next 12 bits]:
// counted in the block's shared memory, then added to hist once a bin (a level-1 bin can hold most keys,
// each of its 4096 sub-bins thousands: one global atomic per warp and key cost 0.5 ms at 4096^2).
constexpr int kHist2Group = 3;  // 3 x 4096 counts: 48 KiB of shared memory
__global__ void hist2_kernel(const double* __restrict__ keys, std::size_t n, const int* __restrict__ targets, int t0,
                             int ng, unsigned* __restrict__ hist) {
  extern __shared__ unsigned h2[];
  for (int j = threadIdx.x; j < ng * kBins; j += blockDim.x) h2[j] = 0;
  __syncthreads();
  for (std::size_t i = blockIdx.x * static_cast<std::size_t>(blockDim.x) + threadIdx.x; i < n;
       i += static_cast<std::size_t>(gridDim.x) * blockDim.x) {
    const std::uint64_t k = order_key(keys[i]);
    const int b1 = static_cast<int>(k >> 52);
    int bin = -1;
    for (int t = 0; t < ng; ++t)
      if (targets[t0 + t] == b1) bin = t * kBins + static_cast<int>((k >> 40) & (kBins - 1));
    if (bin >= 0) warp_count(h2, bin);
  }
  __syncthreads();
  for (int j = threadIdx.x; j < ng * kBins; j += blockDim.x)
    if (h2[j]) atomicAdd(&hist[static_cast<std::size_t>(t0) * kBins + j], h2[j]);
}

// The keys whose 24-bit prefix is one of prefixes[0..np), packed into out (any order).
__global__ void gather_kernel(const double* __restrict__ keys, std::size_t n, const unsigned* __restrict__ prefixes,
                              int np, std::uint64_t* __restrict__ out, unsigned long long* __restrict__ count) {
  for (std::size_t i = blockIdx.x * static_cast<std::size_t>(blockDim.x) + threadIdx.x; i < n;
       i += static_cast<std::size_t>(gridDim.x) * blockDim.x) {
    const std::uint64_t k = order_key(keys[i]);
    const unsigned p = static_cast<unsigned>(k >> 40);
    bool want = false;
    for (int t = 0; t < np; ++t) want |= prefixes[t] == p;
    // One atomic a warp (a prefix can hold nearly every key: exact outputs' zero errors).
    const unsigned active = __activemask();
    const unsigned mask = __ballot_sync(active, want);
    if (!mask) continue;
    const int lane = static_cast<int>(threadIdx.x & 31), leader = __ffs(mask) - 1;
    unsigned long long base = 0;
    if (lane == leader) base = atomicAdd(count, static_cast<unsigned long long>(__popc(mask)));
    base = __shfl_sync(active, base, leader);
    if (want) out[base + static_cast<unsigned>(__popc(mask & ((1u << lane) - 1u)))] = k;
  }
}

__global__ void decode_kernel(const std::uint64_t* __restrict__ sorted, const long long* __restrict__ pos, int n,
                              double* __restrict__ out) {
  const int i = threadIdx.x;
  if (i < n) out[i] = from_order_key(sorted[pos[i]]);
}

// stats_detail::tree_reduce on the GPU, one block per sum (blockIdx.x): the count (a power of two)
// partial sums of part + blockIdx.x * count paired (2i, 2i + 1) level by level with the same pfp
// additions, so the same bits as on the host; each level reads one buffer and writes the other (no
// thread overwrites a value another still reads), and only the roots cross to the host.
__global__ void __launch_bounds__(1024)
    tree_reduce_kernel(DD* part, std::size_t count, DD* scratch, DD* __restrict__ roots) {
  DD* src = part + blockIdx.x * count;
  DD* dst = scratch + blockIdx.x * (count / 2);
  for (std::size_t w = count / 2; w >= 1; w /= 2) {
    for (std::size_t i = threadIdx.x; i < w; i += blockDim.x) dst[i] = pfp::dd_add(src[2 * i], src[2 * i + 1]);
    __syncthreads();
    DD* t = src;
    src = dst;
    dst = t;
  }
  if (threadIdx.x == 0) roots[blockIdx.x] = src[0];
}

// Device memory kept from call to call, grown when a call needs more.
struct Grow {
  void* p = nullptr;
  std::size_t bytes = 0;
  template <class T>
  T* get(std::size_t count) {
    const std::size_t need = std::max<std::size_t>(count, 1) * sizeof(T);
    if (need > bytes) {
      if (p) GEMMLAB_CUDA_CHECK(cudaFree(p));
      p = nullptr, bytes = 0;
      GEMMLAB_CUDA_CHECK(cudaMalloc(&p, need));
      bytes = need;
    }
    return static_cast<T*>(p);
  }
  Grow() = default;
  Grow(const Grow&) = delete;
  ~Grow() {
    if (p) device_free(p);
  }
};

struct Scratch {
  Grow part, cnt, keys, evals, hist, small, gathered, sorted, temp, count, tree, roots, roots2;
  // Pass 2 runs on `side` while the selection runs on the default stream (both only read the keys);
  // its two roots come back into pinned memory, so that the copy does not wait on the host.
  cudaStream_t side = nullptr;
  DD* pinned = nullptr;
  Scratch() = default;
  Scratch(const Scratch&) = delete;
  ~Scratch() {
    if (side) cudaStreamDestroy(side);
    if (pinned) cudaFreeHost(pinned);
  }
  cudaStream_t side_stream() {
    if (!side) GEMMLAB_CUDA_CHECK(cudaStreamCreateWithFlags(&side, cudaStreamNonBlocking));
    if (!pinned) GEMMLAB_CUDA_CHECK(cudaMallocHost(&pinned, 2 * sizeof(DD)));
    return side;
  }
};

// The current GPU's scratch for this host thread (one worker per GPU runs statistics at a time).
Scratch& scratch() {
  thread_local std::map<int, std::unique_ptr<Scratch>> per_device;
  int dev = 0;
  GEMMLAB_CUDA_CHECK(cudaGetDevice(&dev));
  auto& s = per_device[dev];
  if (!s) s = std::make_unique<Scratch>();
  return *s;
}

// GEMMLAB_PROFILE_STATS=1: each phase's wall time (after a device synchronisation) on stderr.
struct PhaseTimer {
  bool on = std::getenv("GEMMLAB_PROFILE_STATS") != nullptr;
  std::chrono::steady_clock::time_point t = std::chrono::steady_clock::now();
  void mark(const char* what) {
    if (!on) return;
    cudaDeviceSynchronize();
    const auto now = std::chrono::steady_clock::now();
    std::fprintf(stderr, "[stats] %-10s %8.3f ms\n", what, std::chrono::duration<double, std::milli>(now - t).count());
    t = now;
  }
};

// Values of rank ranks[i] (0-based, ascending order) among the n keys: out[i].
// `level1_ready`: sc.hist already holds the level-1 histogram (pass 1 counted it).
void select_ranks(const double* keys, std::size_t n, const std::vector<long long>& ranks, std::vector<double>& out,
                  Scratch& sc, bool level1_ready) {
  const unsigned blocks = static_cast<unsigned>(std::min<std::size_t>((n + 255) / 256, 1024));
  unsigned* hist = sc.hist.get<unsigned>(8 * kBins);
  if (!level1_ready) {
    GEMMLAB_CUDA_CHECK(cudaMemset(hist, 0, kBins * sizeof(unsigned)));
    hist1_kernel<<<blocks, 256>>>(keys, n, hist);
    GEMMLAB_LAUNCH_CHECK("hist1_kernel");
  }
  PhaseTimer timer;
  std::vector<unsigned> h1(kBins);
  GEMMLAB_CUDA_CHECK(cudaMemcpy(h1.data(), hist, kBins * sizeof(unsigned), cudaMemcpyDeviceToHost));
  // Level 1: each rank's bin and its rank within the bin.
  struct Where {
    int b1 = 0, b2 = 0;
    long long in_b1 = 0, in_b2 = 0;
  };
  std::vector<Where> w(ranks.size());
  std::vector<int> targets;
  for (std::size_t r = 0; r < ranks.size(); ++r) {
    long long before = 0;
    int b = 0;
    while (before + h1[b] <= ranks[r]) before += h1[b++];
    w[r].b1 = b, w[r].in_b1 = ranks[r] - before;
    if (std::find(targets.begin(), targets.end(), b) == targets.end()) targets.push_back(b);
  }
  // Level 2 within those bins.
  const int nt = static_cast<int>(targets.size());
  int* dtargets = sc.small.get<int>(64);
  GEMMLAB_CUDA_CHECK(cudaMemcpy(dtargets, targets.data(), nt * sizeof(int), cudaMemcpyHostToDevice));
  GEMMLAB_CUDA_CHECK(cudaMemset(hist, 0, nt * kBins * sizeof(unsigned)));
  {
    // Two blocks an SM: each adds its shared counts to hist once.
    static const unsigned per_sm = [] {
      int dev = 0, sms = 0;
      if (cudaGetDevice(&dev) != cudaSuccess || cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, dev) != cudaSuccess)
        sms = 64;
      return static_cast<unsigned>(2 * std::max(sms, 1));
    }();
    const unsigned b2 = std::min(blocks, per_sm);
    for (int t0 = 0; t0 < nt; t0 += kHist2Group) {
      const int ng = std::min(kHist2Group, nt - t0);
      hist2_kernel<<<b2, 256, static_cast<std::size_t>(ng) * kBins * sizeof(unsigned)>>>(keys, n, dtargets, t0, ng, hist);
      GEMMLAB_LAUNCH_CHECK("hist2_kernel");
    }
  }
  timer.mark("sel:hist2");
  std::vector<unsigned> h2(static_cast<std::size_t>(nt) * kBins);
  GEMMLAB_CUDA_CHECK(cudaMemcpy(h2.data(), hist, h2.size() * sizeof(unsigned), cudaMemcpyDeviceToHost));
  std::vector<unsigned> prefixes;  // 24-bit prefixes holding a rank, ascending
  std::map<unsigned, long long> size_of;
  for (auto& x : w) {
    const int t = static_cast<int>(std::find(targets.begin(), targets.end(), x.b1) - targets.begin());
    const unsigned* h = h2.data() + static_cast<std::size_t>(t) * kBins;
    long long before = 0;
    int b = 0;
    while (before + h[b] <= x.in_b1) before += h[b++];
    x.b2 = b, x.in_b2 = x.in_b1 - before;
    const unsigned p = (static_cast<unsigned>(x.b1) << 12) | static_cast<unsigned>(b);
    size_of[p] = h[b];
  }
  for (auto& [p, size] : size_of) prefixes.push_back(p);
  long long total = 0;
  for (auto& [p, size] : size_of) total += size;
  // Gather the keys of those prefixes, sort them, and read each rank at its place.
  unsigned* dpref = reinterpret_cast<unsigned*>(dtargets + 16);
  GEMMLAB_CUDA_CHECK(cudaMemcpy(dpref, prefixes.data(), prefixes.size() * sizeof(unsigned), cudaMemcpyHostToDevice));
  auto* gathered = sc.gathered.get<std::uint64_t>(total);
  auto* sorted = sc.sorted.get<std::uint64_t>(total);
  auto* count = sc.count.get<unsigned long long>(1);
  GEMMLAB_CUDA_CHECK(cudaMemset(count, 0, sizeof *count));
  gather_kernel<<<blocks, 256>>>(keys, n, dpref, static_cast<int>(prefixes.size()), gathered, count);
  GEMMLAB_LAUNCH_CHECK("gather_kernel");
  timer.mark("sel:gather");
  if (timer.on) std::fprintf(stderr, "[stats] gathered %lld of %zu keys\n", total, n);
  std::size_t temp_bytes = 0;
  GEMMLAB_CUDA_CHECK(cub::DeviceRadixSort::SortKeys(nullptr, temp_bytes, gathered, sorted, static_cast<std::int64_t>(total)));
  void* temp = sc.temp.get<char>(temp_bytes);
  GEMMLAB_CUDA_CHECK(cub::DeviceRadixSort::SortKeys(temp, temp_bytes, gathered, sorted, static_cast<std::int64_t>(total)));
  GEMMLAB_LAUNCH_CHECK("cub::DeviceRadixSort::SortKeys");
  timer.mark("sel:sort");
  std::vector<long long> pos(w.size());
  for (std::size_t r = 0; r < w.size(); ++r) {
    const unsigned p = (static_cast<unsigned>(w[r].b1) << 12) | static_cast<unsigned>(w[r].b2);
    long long before = 0;
    for (auto& [q, size] : size_of)
      if (q < p) before += size;
    pos[r] = before + w[r].in_b2;
  }
  auto* dpos = reinterpret_cast<long long*>(dtargets + 32);
  auto* dout = reinterpret_cast<double*>(dtargets + 48);
  GEMMLAB_CUDA_CHECK(cudaMemcpy(dpos, pos.data(), pos.size() * sizeof(long long), cudaMemcpyHostToDevice));
  decode_kernel<<<1, 32>>>(sorted, dpos, static_cast<int>(pos.size()), dout);
  GEMMLAB_LAUNCH_CHECK("decode_kernel");
  out.resize(pos.size());
  GEMMLAB_CUDA_CHECK(cudaMemcpy(out.data(), dout, out.size() * sizeof(double), cudaMemcpyDeviceToHost));
}

std::size_t tree_leaves(std::size_t n) {
  std::size_t p = kLeafBlock;
  while (p < n) p *= 2;
  return p;
}

ErrorStats run_stats(const double* x, const double* c, const double* c_odd, const double* ab, const double* row_max_a,
                     const double* col_max_b, int M, int N, Format out, const BoundModel& model) {
  const std::size_t n = static_cast<std::size_t>(M) * N;
  const std::size_t nblocks = tree_leaves(n) / kLeafBlock;
  stats_detail::Raw raw;
  raw.entries = static_cast<std::int64_t>(n);
  PhaseTimer timer;
  timer.mark("start");
  Scratch& sc = scratch();
  DD* const part = sc.part.get<DD>(kSums * nblocks);
  Counters* const cnt = sc.cnt.get<Counters>(1);
  double* const keys = sc.keys.get<double>(n);
  double* const evals = sc.evals.get<double>(n);
  GEMMLAB_CUDA_CHECK(cudaMemset(cnt, 0, sizeof(Counters)));
  unsigned* const hist1 = sc.hist.get<unsigned>(8 * kBins);
  GEMMLAB_CUDA_CHECK(cudaMemset(hist1, 0, kBins * sizeof(unsigned)));
  const stats_detail::Judge judge = stats_detail::judge_of(out, model);
  if (judge.h > 0 && ((M > 0 && !row_max_a) || (N > 0 && !col_max_b)))
    throw std::invalid_argument("compute_error_stats_gpu: the bound of fixed-point operands needs the reference's row "
                                "maxima of A and column maxima of B, which this reference lacks");
  pass1_kernel<<<static_cast<unsigned>(nblocks), kThreads>>>(x, c, c_odd, ab, row_max_a, col_max_b, N, n,
                                                             format_params(out), judge, nblocks, part, cnt, keys,
                                                             evals, hist1);
  GEMMLAB_LAUNCH_CHECK("pass1_kernel");
  timer.mark("pass1");
  // The blocks' partial sums reduced on the GPU in the host's pairing (tree_reduce_kernel): only the
  // roots come back (the host's reduction of kSums x nblocks double-doubles cost about 1 ms a row).
  DD* const tree = sc.tree.get<DD>(kSums * std::max<std::size_t>(nblocks / 2, 1));
  DD* const roots = sc.roots.get<DD>(kSums);
  DD h[kSums];
  tree_reduce_kernel<<<kSums, 1024>>>(part, nblocks, tree, roots);
  GEMMLAB_LAUNCH_CHECK("tree_reduce_kernel");
  GEMMLAB_CUDA_CHECK(cudaMemcpy(h, roots, kSums * sizeof(DD), cudaMemcpyDeviceToHost));
  Counters hc{};
  GEMMLAB_CUDA_CHECK(cudaMemcpy(&hc, cnt, sizeof hc, cudaMemcpyDeviceToHost));
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
  raw.bound_ratio = pfp::from_bits(hc.ratio_max_bits);
  raw.rel_sum = h[0];
  raw.cw_sum = h[1];
  raw.err2_sum = h[2];
  raw.ref2_sum = h[3];
  raw.f_err2_sum = h[4];
  raw.f_ref2_sum = h[5];
  raw.f_x2_sum = h[6];

  // Pass 2 and its reduction on the side stream, overlapping the selection below (pass 1 has ended:
  // its roots were copied synchronously above). Its own tree buffer: the selection touches none of
  // part, tree2 or roots2.
  const cudaStream_t side = sc.side_stream();
  DD* const tree2 = sc.tree.get<DD>(kSums * std::max<std::size_t>(nblocks / 2, 1));
  DD* const roots2 = sc.roots2.get<DD>(2);
  pass2_kernel<<<static_cast<unsigned>(nblocks), kThreads, 0, side>>>(
      keys, evals, n, stats_detail::mean_of(raw.rel_sum, raw.rel_count), stats_detail::mean_of(raw.cw_sum, raw.cw_count),
      nblocks, part);
  GEMMLAB_LAUNCH_CHECK("pass2_kernel");
  tree_reduce_kernel<<<2, 1024, 0, side>>>(part, nblocks, tree2, roots2);
  GEMMLAB_LAUNCH_CHECK("tree_reduce_kernel");
  GEMMLAB_CUDA_CHECK(cudaMemcpyAsync(sc.pinned, roots2, 2 * sizeof(DD), cudaMemcpyDeviceToHost, side));
  timer.mark("pass2");

  if (raw.rel_count > 0) {
    std::vector<long long> ranks;
    int take[3];
    for (int q = 0; q < 3; ++q) {
      std::int64_t k;
      double f;
      stats_detail::quantile_position(raw.rel_count, stats_detail::kQuantiles[q], k, f);
      take[q] = k + 1 < raw.rel_count ? 2 : 1;
      ranks.push_back(k);
      if (take[q] == 2) ranks.push_back(k + 1);
    }
    std::vector<double> v;
    timer.mark("reduce");
    select_ranks(keys, n, ranks, v, sc, true);
    timer.mark("select");
    for (int q = 0, i = 0; q < 3; ++q) {
      raw.q_lo[q] = v[i++];
      raw.q_hi[q] = take[q] == 2 ? v[i++] : raw.q_lo[q];
    }
  }
  GEMMLAB_CUDA_CHECK(cudaStreamSynchronize(side));
  raw.rel_dev2_sum = sc.pinned[0];
  raw.cw_dev2_sum = sc.pinned[1];
  return stats_detail::assemble(raw, out, model);
}

}  // namespace

ErrorStats compute_error_stats_gpu(const double* device_computed, const GpuReference& ref, Format out,
                                   const BoundModel& model, GpuStatsTiming* timing) {
  const auto t0 = std::chrono::steady_clock::now();
  ErrorStats s = run_stats(device_computed, ref.device_c(), ref.device_c_odd(), ref.device_abs_ab(),
                           ref.device_row_max_a(), ref.device_col_max_b(), ref.M, ref.N, out, model);
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
  // The row and column maxima where the reference has them (fixed-point operands need them).
  const bool maxima = ref.row_max_a.size() == static_cast<std::size_t>(ref.M) &&
                      ref.col_max_b.size() == static_cast<std::size_t>(ref.N);
  DevBuf<double> ra(maxima ? std::max(ref.M, 1) : 0), cb(maxima ? std::max(ref.N, 1) : 0);
  if (maxima && ref.M)
    GEMMLAB_CUDA_CHECK(cudaMemcpy(ra.p, ref.row_max_a.data(), ref.M * sizeof(double), cudaMemcpyHostToDevice));
  if (maxima && ref.N)
    GEMMLAB_CUDA_CHECK(cudaMemcpy(cb.p, ref.col_max_b.data(), ref.N * sizeof(double), cudaMemcpyHostToDevice));
  ErrorStats s = run_stats(x.p, c.p, co.p, ab.p, ra.p, cb.p, ref.M, ref.N, out, model);
  if (timing) timing->total = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  return s;
}

}  // namespace gemmlab::device
