// The exact reference on the GPU: per-row integer scaling, 7-bit int8 digits, cuBLAS int8 GEMMs per
// digit pair, exact multi-limb composition and one rounding (see exact_reference_gpu.hpp).
//
// Layout: A is kept (Mp, Kp) row-major and B transposed, (Np, Kp), so both operands have K
// contiguous; M, N, K are padded to multiples of 16 with zero digits. cuBLAS (column-major) then
// computes C^T = B^T A^T as an (Np x rows) column-major matrix, which is the (rows, Np) row-major
// block of C ("TN": op(A) = T on the digits of B, op(B) = N on the digits of A).
// The output is produced in blocks of rows so that the int64 level buffers stay below
// kLevelBudgetBytes.
#include "experiments/device/exact_reference_gpu.hpp"
#include "experiments/device/device_free.hpp"

#include <cublas_v2.h>
#include <cuda_runtime.h>

#include <algorithm>
#include <atomic>
#include <memory>
#include <map>
#include <chrono>
#include <climits>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <mutex>
#include <thread>
#include <vector>

#include "kernels/common/cuda_check.cuh"
#include "reference/crt_split.hpp"
#include "reference/int8_split.hpp"
#include "reference/portable_fp.hpp"

namespace gemmlab::device {
namespace {

constexpr int kDigitBits = split::kDigitBits;
constexpr long kMaxTermsInt32 = 1L << 17;  // 2^17 * 127^2 < 2^31
constexpr std::size_t kLevelBudgetBytes = std::size_t{4} << 30;
constexpr std::size_t kCublasWorkspace = std::size_t{64} << 20;
constexpr int kMaxLimbs = 12;  // 2 * kMaxDigits * 7 + log2 K + 1 <= 768 bits

long round_up(long x, long m) { return (x + m - 1) / m * m; }

// Device memory of the references, kept for reuse (a reference at 4096^3 allocates and frees about a
// dozen buffers of up to gigabytes: cudaMalloc and cudaFree, which waits for the device, cost it 2 to 4 ms,
// a quarter of an fp16 reference). A freed block goes to a per-process cache; an allocation takes a cached
// block of the same device at least as large and at most twice as large, else cudaMalloc (after freeing the
// cache when the GPU has no room). The cache is capped at pool_cap_bytes(), and a block is kept only while
// a quarter of the GPU's memory is free besides.
// The cache's cap: an eighth of the GPU's memory, at most 12 GiB (room for the kernels under test).
std::size_t pool_cap_bytes() {
  static const std::size_t cap = [] {
    std::size_t free_b = 0, total_b = 0;
    if (cudaMemGetInfo(&free_b, &total_b) != cudaSuccess) return std::size_t{0};
    return std::min(std::size_t{12} << 30, total_b / 8);
  }();
  return cap;
}
struct Pool {
  struct Block {
    void* p;
    std::size_t bytes;
    int device;
  };
  std::mutex mu;
  std::vector<Block> cached;
  std::map<void*, std::pair<std::size_t, int>> live;  // bytes and device of each block handed out
  std::size_t cached_bytes = 0;
  void free_cached_locked(int device) {  // device < 0: every device's
    for (auto it = cached.begin(); it != cached.end();) {
      if (device >= 0 && it->device != device) {
        ++it;
        continue;
      }
      device_free(it->p);
      cached_bytes -= it->bytes;
      it = cached.erase(it);
    }
  }
};
Pool& pool() {
  static Pool* p = new Pool;  // never destroyed: blocks may outlive static destruction
  return *p;
}
void* pool_alloc(std::size_t bytes) {
  int dev = 0;
  GEMMLAB_CUDA_CHECK(cudaGetDevice(&dev));
  Pool& pl = pool();
  std::lock_guard<std::mutex> lock(pl.mu);
  auto best = pl.cached.end();
  for (auto it = pl.cached.begin(); it != pl.cached.end(); ++it)
    if (it->device == dev && it->bytes >= bytes && it->bytes / 2 <= bytes && (best == pl.cached.end() || it->bytes < best->bytes))
      best = it;
  if (best != pl.cached.end()) {
    void* p = best->p;
    pl.live[p] = {best->bytes, dev};
    pl.cached_bytes -= best->bytes;
    pl.cached.erase(best);
    return p;
  }
  void* p = nullptr;
  cudaError_t e = cudaMalloc(&p, bytes);
  if (e == cudaErrorMemoryAllocation) {
    (void)cudaGetLastError();
    pl.free_cached_locked(dev);
    e = cudaMalloc(&p, bytes);
  }
  GEMMLAB_CUDA_CHECK(e);
  pl.live[p] = {bytes, dev};
  return p;
}
void pool_release(void* p) noexcept {
  if (!p) return;
  Pool& pl = pool();
  std::lock_guard<std::mutex> lock(pl.mu);
  const auto it = pl.live.find(p);
  if (it == pl.live.end()) return;  // not ours (cannot happen)
  const auto [bytes, dev] = it->second;
  pl.live.erase(it);
  const std::size_t cap = pool_cap_bytes();
  // Kept only while the GPU has a quarter of its memory free besides: near a size's limit the kernels'
  // own buffers come first.
  std::size_t free_b = 0, total_b = 0;
  if (bytes > cap || cudaMemGetInfo(&free_b, &total_b) != cudaSuccess || free_b < total_b / 4) {
    device_free(p);
    return;
  }
  pl.cached.push_back({p, bytes, dev});
  pl.cached_bytes += bytes;
  while (pl.cached_bytes > cap) {  // the oldest first
    device_free(pl.cached.front().p);
    pl.cached_bytes -= pl.cached.front().bytes;
    pl.cached.erase(pl.cached.begin());
  }
}
// Bytes cached for the current device: free for this engine's next buffers though not for cudaMalloc.
std::size_t pool_cached_bytes() {
  int dev = 0;
  GEMMLAB_CUDA_CHECK(cudaGetDevice(&dev));
  Pool& pl = pool();
  std::lock_guard<std::mutex> lock(pl.mu);
  std::size_t b = 0;
  for (const auto& blk : pl.cached)
    if (blk.device == dev) b += blk.bytes;
  return b;
}
// GpuReferenceUnavailable unless `need` bytes are free for this engine (the GPU's free memory and the pool's
// cache): "exact_gemm_gpu: <what> need(s) N MiB, M MiB free".
void require_free(std::size_t need, const std::string& what) {
  std::size_t free_b = 0, total_b = 0;
  GEMMLAB_CUDA_CHECK(cudaMemGetInfo(&free_b, &total_b));
  free_b += pool_cached_bytes();
  if (need > free_b)
    throw GpuReferenceUnavailable("exact_gemm_gpu: " + what + " " + std::to_string(need >> 20) + " MiB of GPU memory, " +
                                  std::to_string(free_b >> 20) + " MiB free");
}

// RAII device allocation (from the pool above).
template <class T>
struct DevBuf {
  T* p = nullptr;
  std::size_t n = 0;
  DevBuf() = default;
  explicit DevBuf(std::size_t count) : n(count) {
    if (count) p = static_cast<T*>(pool_alloc(count * sizeof(T)));
  }
  ~DevBuf() { pool_release(p); }
  DevBuf(DevBuf&& o) noexcept : p(o.p), n(o.n) { o.p = nullptr, o.n = 0; }
  DevBuf& operator=(DevBuf&& o) noexcept {
    std::swap(p, o.p);
    std::swap(n, o.n);
    return *this;
  }
  DevBuf(const DevBuf&) = delete;
  void zero() {
    if (n) GEMMLAB_CUDA_CHECK(cudaMemset(p, 0, n * sizeof(T)));
  }
};

// ---- kernels ---------------------------------------------------------------------------------

// (R, C) row-major -> (C, R) row-major, widened to double (exact).
template <class T>
__global__ void transpose_kernel(const T* __restrict__ in, double* __restrict__ out, int R, int C) {
  __shared__ double tile[32][33];
  const int c0 = blockIdx.x * 32, r0 = blockIdx.y * 32;
  for (int y = threadIdx.y; y < 32; y += blockDim.y) {
    const int r = r0 + y, c = c0 + threadIdx.x;
    if (r < R && c < C) tile[y][threadIdx.x] = static_cast<double>(in[static_cast<std::size_t>(r) * C + c]);
  }
  __syncthreads();
  for (int y = threadIdx.y; y < 32; y += blockDim.y) {
    const int c = c0 + y, r = r0 + threadIdx.x;
    if (r < R && c < C) out[static_cast<std::size_t>(c) * R + r] = tile[threadIdx.x][y];
  }
}

__global__ void widen_kernel(const float* __restrict__ in, double* __restrict__ out, std::size_t n) {
  const std::size_t i = static_cast<std::size_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (i < n) out[i] = static_cast<double>(in[i]);
}

struct Dec {
  std::uint64_t m;  // odd significand, 0 for zero
  int lsb;
  bool neg;
};
__device__ __forceinline__ Dec decompose(double x) {
  const std::uint64_t b = pfp::bits(x);
  const auto [m, e] = pfp::split_magnitude(b & 0x7FFFFFFFFFFFFFFFull);
  Dec d{0, 0, (b >> 63) != 0};
  if (m == 0) return d;
  const int tz = __ffsll(static_cast<long long>(m)) - 1;
  d.m = m >> tz;
  d.lsb = e + tz;
  return d;
}

// Per row of X (rows, K): smallest lsb and largest top (lsb + bit width) of its non-zero entries
// (INT_MAX / INT_MIN for an all-zero row), and the largest magnitude (exact: a maximum; 0 for an
// all-zero row); a non-finite entry sets bit 0 of *flags, a negative entry bit 1.
__global__ void scan_rows_kernel(const double* __restrict__ X, int K, int* __restrict__ lsb_min,
                                 int* __restrict__ top_max, double* __restrict__ abs_max, int* __restrict__ flags) {
  const int r = blockIdx.x;
  const double* row = X + static_cast<std::size_t>(r) * K;
  int lo = INT_MAX, hi = INT_MIN, bad = 0;
  double amax = 0;
  for (int k = threadIdx.x; k < K; k += blockDim.x) {
    const double x = row[k];
    if (!pfp::is_finite(x)) {
      bad |= 1;
      continue;
    }
    if (x < 0) bad |= 2;
    amax = fmax(amax, pfp::fabs(x));
    const Dec d = decompose(x);
    if (d.m == 0) continue;
    lo = min(lo, d.lsb);
    hi = max(hi, d.lsb + 64 - __clzll(static_cast<long long>(d.m)));
  }
  for (int o = 16; o > 0; o >>= 1) {
    lo = min(lo, __shfl_xor_sync(0xffffffffu, lo, o));
    hi = max(hi, __shfl_xor_sync(0xffffffffu, hi, o));
    bad |= __shfl_xor_sync(0xffffffffu, bad, o);
    amax = fmax(amax, __shfl_xor_sync(0xffffffffu, amax, o));
  }
  __shared__ int slo[32], shi[32], sbad[32];
  __shared__ double samax[32];
  const int w = threadIdx.x / 32, lane = threadIdx.x % 32;
  if (lane == 0) slo[w] = lo, shi[w] = hi, sbad[w] = bad, samax[w] = amax;
  __syncthreads();
  if (threadIdx.x == 0) {
    for (int i = 1; i < static_cast<int>(blockDim.x / 32); ++i)
      lo = min(lo, slo[i]), hi = max(hi, shi[i]), bad |= sbad[i], amax = fmax(amax, samax[i]);
    lsb_min[r] = lo;
    top_max[r] = hi;
    abs_max[r] = amax;
    if (bad) atomicOr(flags, bad);
  }
}

// Digits of row r of X (rows, K) on the row's grid 2^e[r]: slice s of `sig` (and `mag`) is
// (rows_p, Kp) int8 at offset s * slice; digit s of entry (r, k) is bits [7s, 7s+7) of
// m << (lsb - e[r]), with the entry's sign in sig and without it in mag.
__global__ void digits_kernel(const double* __restrict__ X, int rows, int K, const int* __restrict__ e,
                              int S, int Kp, std::size_t slice, std::int8_t* __restrict__ sig,
                              std::int8_t* __restrict__ mag) {
  const std::size_t idx = static_cast<std::size_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (idx >= static_cast<std::size_t>(rows) * K) return;
  const int r = static_cast<int>(idx / K), k = static_cast<int>(idx % K);
  const Dec d = decompose(X[idx]);
  if (d.m == 0) return;  // zero digits (buffers are zeroed)
  const int shift = d.lsb - e[r];
  const std::size_t at = static_cast<std::size_t>(r) * Kp + k;
  for (int s = 0; s < S; ++s) {
    const int dv = split::digit(d.m, shift, s);
    sig[s * slice + at] = static_cast<std::int8_t>(d.neg ? -dv : dv);
    mag[s * slice + at] = static_cast<std::int8_t>(dv);
  }
}

__global__ void accumulate_kernel(const std::int32_t* __restrict__ t, long long* __restrict__ L, std::size_t n) {
  const std::size_t i = static_cast<std::size_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (i < n) L[i] += t[i];
}

// Residues of row r of X (rows, K) on the row's grid 2^e[r] (reference/crt_split.hpp): slice p of `sig`
// (and `mag`) is (rows_p, Kp) int8 at offset p * slice; entry (r, k) of slice p is the symmetric residue
// modulo m_p of the integer m << (lsb - e[r]) (< 2^120), with the entry's sign in sig and without it in
// mag. Zeros are written too (the padding is zeroed by the caller where there is any).
__global__ void residues_kernel(const double* __restrict__ X, int rows, int K, const int* __restrict__ e,
                                crt::Plan plan, int Kp, std::size_t slice, std::int8_t* __restrict__ sig,
                                std::int8_t* __restrict__ mag) {
  const std::size_t idx = static_cast<std::size_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (idx >= static_cast<std::size_t>(rows) * K) return;
  const int r = static_cast<int>(idx / K), k = static_cast<int>(idx % K);
  const Dec d = decompose(X[idx]);
  const std::size_t at = static_cast<std::size_t>(r) * Kp + k;
  std::uint64_t hi = 0, lo = 0;
  crt::shifted(d.m, d.m == 0 ? 0 : d.lsb - e[r], hi, lo);
#pragma unroll
  for (int p = 0; p < crt::kMaxModuli; ++p) {
    if (p < plan.P) {  // plan.m[p] == crt::modulus(p): a constant divisor
      const int v = crt::residue(hi, lo, false, crt::modulus(p));
      sig[p * slice + at] = static_cast<std::int8_t>(d.neg ? -v : v);
      mag[p * slice + at] = static_cast<std::int8_t>(v);
    }
  }
}

template <int NL>
__device__ __forceinline__ std::uint64_t limb_at(const std::uint64_t (&a)[NL], long idx) {
  std::uint64_t r = 0;
#pragma unroll
  for (int w = 0; w < NL; ++w)
    if (w == idx) r = a[w];
  return r;
}

// Bits [pos, pos + 64) of a (zero beyond the top).
template <int NL>
__device__ __forceinline__ std::uint64_t bits_from(const std::uint64_t (&a)[NL], long pos) {
  const long w = pos >> 6;
  const int sh = static_cast<int>(pos & 63);
  std::uint64_t v = limb_at(a, w) >> sh;
  if (sh != 0) v |= limb_at(a, w + 1) << (64 - sh);
  return v;
}

// sign * mag * 2^e0 rounded to binary64 (nearest-even, or round-to-odd with overflow to the largest
// finite number), gradual underflow: reference/exact_gemm.cpp's round_bigint.
template <int NL>
__device__ double round_mag(const std::uint64_t (&mag)[NL], long e0, bool neg, bool odd) {
  long L = 0;
#pragma unroll
  for (int w = 0; w < NL; ++w)
    if (mag[w] != 0) L = 64L * w + 64 - __clzll(static_cast<long long>(mag[w]));
  if (L == 0) return 0.0;
  const long E = e0 + L - 1;
  const std::uint64_t sign = neg ? 0x8000000000000000ull : 0;
  if (E > 1023) return pfp::from_bits(sign | (odd ? 0x7FEFFFFFFFFFFFFFull : 0x7FF0000000000000ull));
  const long q = max(E - 52, -1074L);  // exponent of the result's last bit
  const long dsh = q - e0;             // bits of mag below it
  std::uint64_t kept;
  if (dsh <= 0) {
    kept = mag[0] << (-dsh);  // mag < 2^53 and the result is exact
  } else {
    kept = bits_from(mag, dsh) & ((1ull << 53) - 1);  // at most 53 bits remain above dsh
    const std::uint64_t half = (bits_from(mag, dsh - 1)) & 1u;
    bool sticky = false;
    const long sb = dsh - 1;  // bits [0, sb)
#pragma unroll
    for (int w = 0; w < NL; ++w) {
      const long lo = 64L * w;
      if (lo + 64 <= sb) sticky |= mag[w] != 0;
      else if (lo < sb) sticky |= (mag[w] & ((1ull << (sb - lo)) - 1)) != 0;
    }
    if (odd) {
      if (half | sticky) kept |= 1;
    } else if (half && (sticky || (kept & 1))) {
      ++kept;  // may reach 2^53: the exponent field below absorbs the carry (up to infinity)
    }
  }
  // kept * 2^q with kept <= 2^53 and q the grid of the result: exponent field q + 1074 plus kept
  // (kept >= 2^52 carries the implicit bit into the field; subnormals have q = -1074).
  return pfp::from_bits(sign | ((static_cast<std::uint64_t>(q + 1074) << 52) + kept));
}

// This thread's entry (i, j) of a row block of `rows` rows from row i0: its place in the level buffers (at,
// rows of Np), in C (out, rows of N), and its grid e0 = ea(i0 + i) + eb(j). False beyond the block.
struct BlockEntry {
  std::size_t at, out;
  long e0;
};
__device__ __forceinline__ bool block_entry(int rows, int Np, int N, int i0, const int* __restrict__ ea,
                                            const int* __restrict__ eb, BlockEntry& e) {
  const std::size_t idx = static_cast<std::size_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (idx >= static_cast<std::size_t>(rows) * N) return false;
  const int i = static_cast<int>(idx / N), j = static_cast<int>(idx % N);
  e.at = static_cast<std::size_t>(i) * Np + j;
  e.out = static_cast<std::size_t>(i0 + i) * N + j;
  const int ai = ea[i0 + i], bj = eb[j];
  // All-zero rows or columns have no grid: their sum is an exact +0 whatever e0 is.
  e.e0 = (ai == INT_MAX || bj == INT_MAX) ? 0 : static_cast<long>(ai) + bj;
  return true;
}

// Entry (i, j) of the row block: X = sum_d L[d] 2^(7d) for the signed and the magnitude levels, then
// c, c_odd, abs_ab of C(i0 + i, j).
template <int NL>
__global__ void compose_kernel(const long long* __restrict__ Ls, const long long* __restrict__ La, int D,
                               std::size_t level, int rows, int Np, int N, int i0, const int* __restrict__ ea,
                               const int* __restrict__ eb, double* __restrict__ c, double* __restrict__ c_odd,
                               double* __restrict__ abs_ab) {
  BlockEntry be;
  if (!block_entry(rows, Np, N, i0, ea, eb, be)) return;
  const std::size_t at = be.at, out = be.out;
  const long e0 = be.e0;
  for (int pass = 0; pass < 2; ++pass) {
    const long long* L = pass == 0 ? Ls : La;
    std::uint64_t acc[NL];
#pragma unroll
    for (int w = 0; w < NL; ++w) acc[w] = 0;
    for (int d = D - 1; d >= 0; --d) {  // acc = acc * 2^7 + L[d], two's complement mod 2^(64 NL)
#pragma unroll
      for (int w = NL - 1; w > 0; --w) acc[w] = (acc[w] << kDigitBits) | (acc[w - 1] >> (64 - kDigitBits));
      acc[0] <<= kDigitBits;
      const long long v = L[d * level + at];
      const std::uint64_t ext = v < 0 ? ~0ull : 0ull;
      std::uint64_t carry = 0;
#pragma unroll
      for (int w = 0; w < NL; ++w) {
        const std::uint64_t add = w == 0 ? static_cast<std::uint64_t>(v) : ext;
        const std::uint64_t s1 = acc[w] + add;
        const std::uint64_t c1 = s1 < add;
        const std::uint64_t s2 = s1 + carry;
        carry = c1 | (s2 < carry);
        acc[w] = s2;
      }
    }
    const bool neg = (acc[NL - 1] >> 63) != 0;
    if (neg) {  // magnitude of the two's complement value
      std::uint64_t carry = 1;
#pragma unroll
      for (int w = 0; w < NL; ++w) {
        acc[w] = ~acc[w] + carry;
        carry = carry && acc[w] == 0;
      }
    }
    if (pass == 0) {
      c[out] = round_mag<NL>(acc, e0, neg, false);
      c_odd[out] = round_mag<NL>(acc, e0, neg, true);
    } else {
      abs_ab[out] = round_mag<NL>(acc, e0, false, false);
    }
  }
}

template <int NL>
void launch_compose(const long long* Ls, const long long* La, int D, std::size_t level, int rows, int Np, int N,
                    int i0, const int* ea, const int* eb, double* c, double* c_odd, double* abs_ab) {
  const std::size_t n = static_cast<std::size_t>(rows) * N;
  const unsigned blocks = static_cast<unsigned>((n + 255) / 256);
  compose_kernel<NL><<<blocks, 256>>>(Ls, La, D, level, rows, Np, N, i0, ea, eb, c, c_odd, abs_ab);
  GEMMLAB_LAUNCH_CHECK("compose_kernel");
}

void compose(int NL, const long long* Ls, const long long* La, int D, std::size_t level, int rows, int Np, int N,
             int i0, const int* ea, const int* eb, double* c, double* c_odd, double* abs_ab) {
#define GEMMLAB_COMPOSE_CASE(n) \
  if (NL <= n) return launch_compose<n>(Ls, La, D, level, rows, Np, N, i0, ea, eb, c, c_odd, abs_ab);
  GEMMLAB_COMPOSE_CASE(2)
  GEMMLAB_COMPOSE_CASE(3)
  GEMMLAB_COMPOSE_CASE(4)
  GEMMLAB_COMPOSE_CASE(6)
  GEMMLAB_COMPOSE_CASE(8)
  GEMMLAB_COMPOSE_CASE(12)
#undef GEMMLAB_COMPOSE_CASE
  throw std::logic_error("exact_gemm_gpu: " + std::to_string(NL) + " limbs exceed the compiled maximum (a bug)");
}

// Entry (i, j) of the row block: X rebuilt from its residue sums (Gs signed, Ga magnitudes; P int32
// slices of `level` entries), then c, c_odd, abs_ab of C(i0 + i, j) as compose_kernel rounds them.
__global__ void crt_compose_kernel(const std::int32_t* __restrict__ Gs, const std::int32_t* __restrict__ Ga,
                                   crt::Plan plan, std::size_t level, int rows, int Np, int N, int i0,
                                   const int* __restrict__ ea, const int* __restrict__ eb, double* __restrict__ c,
                                   double* __restrict__ c_odd, double* __restrict__ abs_ab) {
  BlockEntry be;
  if (!block_entry(rows, Np, N, i0, ea, eb, be)) return;
  const std::size_t at = be.at, out = be.out;
  const long e0 = be.e0;
  std::uint64_t mag[crt::kLimbs];
  bool neg = false;
  crt::reconstruct(plan, [&](int p) { return Gs[p * level + at]; }, mag, neg);
  c[out] = round_mag<crt::kLimbs>(mag, e0, neg, false);
  c_odd[out] = round_mag<crt::kLimbs>(mag, e0, neg, true);
  crt::reconstruct(plan, [&](int p) { return Ga[p * level + at]; }, mag, neg);
  abs_ab[out] = round_mag<crt::kLimbs>(mag, e0, false, false);
}

// One cuBLAS handle per GPU (creating one per call costs milliseconds; a handle belongs to the
// device that was current when it was made, and `gemmlab run --gpus` has one worker thread per GPU).
struct Cublas {
  cublasHandle_t h = nullptr;
  DevBuf<char> workspace;
};
Cublas& cublas() {
  static std::mutex mu;
  static std::map<int, std::unique_ptr<Cublas>> per_device;  // never destroyed before exit
  int dev = 0;
  GEMMLAB_CUDA_CHECK(cudaGetDevice(&dev));
  std::lock_guard<std::mutex> lock(mu);
  auto& c = per_device[dev];
  if (!c) {
    c = std::make_unique<Cublas>();
    GEMMLAB_CUBLAS_CHECK(cublasCreate(&c->h));
    c->workspace = DevBuf<char>(kCublasWorkspace);
    GEMMLAB_CUBLAS_CHECK(cublasSetWorkspace(c->h, c->workspace.p, kCublasWorkspace));
  }
  return *c;
}

int ceil_log2(long n) {
  int b = 0;
  while ((1L << b) < n) ++b;
  return b;
}

// Rows per block so that the two level buffers fit kLevelBudgetBytes.
long rows_per_block(long Mp, long Np, int D) {
  const std::size_t per_row = 2 * static_cast<std::size_t>(D) * Np * sizeof(long long);
  long rows = static_cast<long>(kLevelBudgetBytes / std::max<std::size_t>(per_row, 1)) / 16 * 16;
  return std::clamp(rows, 16L, Mp);
}

double seconds_since(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

// GEMMLAB_PROFILE_REFERENCE=1: each phase's wall time (after a device synchronisation) on stderr, one
// line per reference ("[reference] M N K SA SB D pass phase ms ..."), for issue 42's time split.
struct RefPhases {
  bool on = std::getenv("GEMMLAB_PROFILE_REFERENCE") != nullptr;
  std::chrono::steady_clock::time_point t = std::chrono::steady_clock::now();
  std::string line;
  void mark(const char* what) {
    if (!on) return;
    cudaDeviceSynchronize();
    const auto now = std::chrono::steady_clock::now();
    char b[64];
    std::snprintf(b, sizeof b, " %s %.3f", what, std::chrono::duration<double, std::milli>(now - t).count());
    line += b;
    t = now;
  }
};

}  // namespace

struct GpuReference::Buffers {
  DevBuf<double> c, c_odd, abs_ab;
  DevBuf<double> row_max_a, col_max_b;  // (M), (N)
};

GpuReference::GpuReference() = default;
// Its buffers go back to the pool, where the next reference's work (on the default stream) may overwrite
// them: whatever still reads them on another stream ends first (unless a kernel under test holds the GPU).
GpuReference::~GpuReference() {
  if (buffers && !gpu_held_by_a_kernel()) (void)cudaDeviceSynchronize();
}
GpuReference::GpuReference(GpuReference&&) noexcept = default;
GpuReference& GpuReference::operator=(GpuReference&&) noexcept = default;
const double* GpuReference::device_c() const { return buffers ? buffers->c.p : nullptr; }
const double* GpuReference::device_c_odd() const { return buffers ? buffers->c_odd.p : nullptr; }
const double* GpuReference::device_abs_ab() const { return buffers ? buffers->abs_ab.p : nullptr; }
const double* GpuReference::device_row_max_a() const { return buffers ? buffers->row_max_a.p : nullptr; }
const double* GpuReference::device_col_max_b() const { return buffers ? buffers->col_max_b.p : nullptr; }

GemmReference GpuReference::to_host(Format out) const {
  if (!buffers) throw std::logic_error("GpuReference::to_host: this reference holds no data (moved from?)");
  GemmReference r;
  r.M = M, r.N = N, r.K = K, r.out = out, r.engine = engine, r.seconds = timing.total;
  const std::size_t n = static_cast<std::size_t>(M) * N;
  r.c.resize(n);
  r.c_odd.resize(n);
  r.abs_ab.resize(n);
  if (n) {
    GEMMLAB_CUDA_CHECK(cudaMemcpy(r.c.data(), buffers->c.p, n * sizeof(double), cudaMemcpyDeviceToHost));
    GEMMLAB_CUDA_CHECK(cudaMemcpy(r.c_odd.data(), buffers->c_odd.p, n * sizeof(double), cudaMemcpyDeviceToHost));
    GEMMLAB_CUDA_CHECK(cudaMemcpy(r.abs_ab.data(), buffers->abs_ab.p, n * sizeof(double), cudaMemcpyDeviceToHost));
  }
  // The maxima exist where the reference kept them (a plain problem's; a form's reference has none,
  // as the CPU's form reference has none).
  if (M && buffers->row_max_a.p) {
    r.row_max_a.resize(static_cast<std::size_t>(M));
    GEMMLAB_CUDA_CHECK(cudaMemcpy(r.row_max_a.data(), buffers->row_max_a.p, M * sizeof(double), cudaMemcpyDeviceToHost));
  }
  if (N && buffers->col_max_b.p) {
    r.col_max_b.resize(static_cast<std::size_t>(N));
    GEMMLAB_CUDA_CHECK(cudaMemcpy(r.col_max_b.data(), buffers->col_max_b.p, N * sizeof(double), cudaMemcpyDeviceToHost));
  }
  r.c_out = output_reference(r, out);
  return r;
}

namespace {
constexpr int kSplitFromEnvironment = -1;  // not chosen yet: GEMMLAB_REFERENCE_SPLIT's at the first reference
std::atomic<int> the_split{kSplitFromEnvironment};
}  // namespace
void set_reference_split(ReferenceSplit s) { the_split = static_cast<int>(s); }
ReferenceSplit reference_split() {
  int s = the_split.load();
  if (s == kSplitFromEnvironment) {
    const char* e = std::getenv("GEMMLAB_REFERENCE_SPLIT");
    s = static_cast<int>(parse_reference_split(e ? e : ""));  // throws on a bad value, every time it is read
    int expected = kSplitFromEnvironment;
    the_split.compare_exchange_strong(expected, s);
    s = the_split.load();
  }
  return static_cast<ReferenceSplit>(s);
}

int worst_case_digits(Format in) {
  const FormatInfo& fi = info(in);
  if (in == Format::fp64) return kMaxDigits + 1;
  // From the smallest subnormal 2^(emin - p + 1) to 2^(emax + 1).
  const int bits = (fi.emax + 1) - (fi.emin - fi.precision + 1);
  return (bits + kDigitBits - 1) / kDigitBits;
}

std::size_t gpu_oracle_bytes(long M, long N, long K, int digits_a, int digits_b) {
  const std::size_t Mp = round_up(std::max(M, 1L), 16), Np = round_up(std::max(N, 1L), 16),
                    Kp = round_up(std::max(K, 1L), 16);
  const int D = digits_a + digits_b - 1;
  const std::size_t rows = static_cast<std::size_t>(rows_per_block(static_cast<long>(Mp), static_cast<long>(Np), std::max(D, 1)));
  const std::size_t mn = static_cast<std::size_t>(M) * N;
  std::size_t b = 0;
  b += 8 * (static_cast<std::size_t>(M) * K + 2 * static_cast<std::size_t>(K) * N);  // A, B, B^T
  b += 4 * (static_cast<std::size_t>(M) * K + static_cast<std::size_t>(K) * N);      // fp32 upload
  b += 2 * (static_cast<std::size_t>(digits_a) * Mp * Kp + static_cast<std::size_t>(digits_b) * Np * Kp);
  b += 2 * static_cast<std::size_t>(std::max(D, 1)) * rows * Np * 8 + rows * Np * 4;  // levels, int32
  b += 3 * 8 * mn;                   // c, c_odd, abs_ab
  b += 16 * (M + N) + 4096;          // grids, row and column maxima
  b += 4 * 8 * mn + (64u << 20);     // statistics: computed, keys, sorted keys, CUB scratch (~ keys)
  b += kCublasWorkspace;
  return b;
}

std::size_t gpu_oracle_bytes(long M, long N, long K, Format in) {
  const int d = std::min(worst_case_digits(in), kMaxDigits);
  return gpu_oracle_bytes(M, N, K, d, d);
}

namespace {

// Pinned host staging for uploads (grown on demand, kept for the process): pageable copies run at
// a third of the bus's speed.
struct Staging {
  std::mutex m;
  float* p = nullptr;
  std::size_t n = 0;
  float* get(std::size_t count) {
    if (count > n) {
      if (p) GEMMLAB_CUDA_CHECK(cudaFreeHost(p));
      p = nullptr, n = 0;
      GEMMLAB_CUDA_CHECK(cudaMallocHost(&p, count * sizeof(float)));
      n = count;
    }
    return p;
  }
};
Staging& staging() {
  static Staging s;
  return s;
}

// Copies A then B into dst as float on all host threads; false if some value is not exactly a
// float (fp64 data), in which case the caller uploads doubles.
bool to_float(const Matrix& A, const Matrix& B, float* dst) {
  const std::size_t na = A.v.size(), n = na + B.v.size();
  const unsigned nt = std::max(1u, std::min(std::thread::hardware_concurrency(), 32u));
  std::vector<std::thread> pool;
  std::vector<char> ok(nt, 1);
  for (unsigned t = 0; t < nt; ++t)
    pool.emplace_back([&, t] {
      const std::size_t i0 = n * t / nt, i1 = n * (t + 1) / nt;
      bool good = true;
      for (std::size_t i = i0; i < i1; ++i) {
        const double x = i < na ? A.v[i] : B.v[i - na];
        const float f = static_cast<float>(x);
        good &= static_cast<double>(f) == x || x != x;
        dst[i] = f;
      }
      ok[t] = good;
    });
  for (auto& th : pool) th.join();
  return std::all_of(ok.begin(), ok.end(), [](char c) { return c != 0; });
}

GpuReference new_reference(int M, int N, int K) {
  GpuReference ref;
  ref.M = M, ref.N = N, ref.K = K;
  ref.buffers = std::make_unique<GpuReference::Buffers>();
  const std::size_t mn = static_cast<std::size_t>(M) * N;
  require_free(8 * (static_cast<std::size_t>(M) * K + 2 * static_cast<std::size_t>(K) * N) + 3 * 8 * mn,
               "the inputs and outputs alone need");
  ref.buffers->c = DevBuf<double>(mn);
  ref.buffers->c_odd = DevBuf<double>(mn);
  ref.buffers->abs_ab = DevBuf<double>(mn);
  ref.buffers->row_max_a = DevBuf<double>(static_cast<std::size_t>(M));
  ref.buffers->col_max_b = DevBuf<double>(static_cast<std::size_t>(N));
  return ref;
}

// The reference from A (M, K) and B^T (N, K) as doubles on the device.
void compute(GpuReference& ref, const double* dA, const double* dBt, std::chrono::steady_clock::time_point t0);

void check_shape(int M, int N, int K, int brows) {
  if (M < 0 || N < 0 || K < 0 || K != brows)
    throw std::invalid_argument("exact_gemm_gpu: A is " + std::to_string(M) + "x" + std::to_string(K) + " but B is " +
                                std::to_string(brows) + "x" + std::to_string(N) + "; A's columns must equal B's rows (K)");
}

bool trivial(GpuReference& ref, std::chrono::steady_clock::time_point t0) {
  if (static_cast<std::size_t>(ref.M) * ref.N != 0 && ref.K != 0) return false;
  ref.buffers->c.zero();
  ref.buffers->c_odd.zero();
  ref.buffers->abs_ab.zero();
  ref.buffers->row_max_a.zero();  // K = 0: every maximum is 0 (an empty row or column holds none)
  ref.buffers->col_max_b.zero();
  GEMMLAB_CUDA_CHECK(cudaDeviceSynchronize());
  ref.timing.total = seconds_since(t0);
  return true;
}

}  // namespace

long gpu_oracle_max_square(Format in, std::size_t bytes) {
  long lo = 0, hi = 1L << 20;  // gpu_oracle_bytes grows with n
  while (lo < hi) {
    const long mid = (lo + hi + 1) / 2;
    if (gpu_oracle_bytes(mid, mid, mid, in) <= bytes) lo = mid;
    else hi = mid - 1;
  }
  return lo;
}

GpuReference exact_gemm_gpu(const Matrix& A, const Matrix& B) {
  const auto t0 = std::chrono::steady_clock::now();
  if (A.v.size() != static_cast<std::size_t>(A.rows) * A.cols || B.v.size() != static_cast<std::size_t>(B.rows) * B.cols)
    throw std::invalid_argument("exact_gemm_gpu: a matrix's storage does not match its rows x cols");
  check_shape(A.rows, B.cols, A.cols, B.rows);
  const int M = A.rows, K = A.cols, N = B.cols;
  GpuReference ref = new_reference(M, N, K);
  if (trivial(ref, t0)) return ref;
  const std::size_t na = static_cast<std::size_t>(M) * K, nb = static_cast<std::size_t>(K) * N;
  DevBuf<double> dA(na), dBt(nb);
  {
    Staging& st = staging();
    std::lock_guard<std::mutex> lock(st.m);
    float* h = st.get(na + nb);
    if (to_float(A, B, h)) {  // every gemmlab input format is a subset of fp32: half the bytes
      DevBuf<float> f(na + nb);
      GEMMLAB_CUDA_CHECK(cudaMemcpy(f.p, h, (na + nb) * sizeof(float), cudaMemcpyHostToDevice));
      ref.timing.upload = seconds_since(t0);
      widen_kernel<<<static_cast<unsigned>((na + 255) / 256), 256>>>(f.p, dA.p, na);
      GEMMLAB_LAUNCH_CHECK("widen_kernel");
      transpose_kernel<float><<<dim3((N + 31) / 32, (K + 31) / 32), dim3(32, 8)>>>(f.p + na, dBt.p, K, N);
      GEMMLAB_LAUNCH_CHECK("transpose_kernel");
      GEMMLAB_CUDA_CHECK(cudaDeviceSynchronize());
    } else {
      DevBuf<double> dB(nb);
      GEMMLAB_CUDA_CHECK(cudaMemcpy(dA.p, A.v.data(), na * sizeof(double), cudaMemcpyHostToDevice));
      GEMMLAB_CUDA_CHECK(cudaMemcpy(dB.p, B.v.data(), nb * sizeof(double), cudaMemcpyHostToDevice));
      ref.timing.upload = seconds_since(t0);
      transpose_kernel<double><<<dim3((N + 31) / 32, (K + 31) / 32), dim3(32, 8)>>>(dB.p, dBt.p, K, N);
      GEMMLAB_LAUNCH_CHECK("transpose_kernel");
      GEMMLAB_CUDA_CHECK(cudaDeviceSynchronize());
    }
  }
  compute(ref, dA.p, dBt.p, t0);
  return ref;
}

GpuReference exact_gemm_gpu_device(const float* dA, const float* dB, int M, int N, int K) {
  const auto t0 = std::chrono::steady_clock::now();
  check_shape(M, N, K, K);
  GpuReference ref = new_reference(M, N, K);
  if (trivial(ref, t0)) return ref;
  const std::size_t na = static_cast<std::size_t>(M) * K, nb = static_cast<std::size_t>(K) * N;
  DevBuf<double> wA(na), wBt(nb);
  widen_kernel<<<static_cast<unsigned>((na + 255) / 256), 256>>>(dA, wA.p, na);
  GEMMLAB_LAUNCH_CHECK("widen_kernel");
  transpose_kernel<float><<<dim3((N + 31) / 32, (K + 31) / 32), dim3(32, 8)>>>(dB, wBt.p, K, N);
  GEMMLAB_LAUNCH_CHECK("transpose_kernel");
  compute(ref, wA.p, wBt.p, t0);
  return ref;
}

GpuReference exact_gemm_gpu_device(const double* dA, const double* dB, int M, int N, int K) {
  const auto t0 = std::chrono::steady_clock::now();
  check_shape(M, N, K, K);
  GpuReference ref = new_reference(M, N, K);
  if (trivial(ref, t0)) return ref;
  DevBuf<double> wBt(static_cast<std::size_t>(K) * N);  // A is read where it lies
  transpose_kernel<double><<<dim3((N + 31) / 32, (K + 31) / 32), dim3(32, 8)>>>(dB, wBt.p, K, N);
  GEMMLAB_LAUNCH_CHECK("transpose_kernel");
  compute(ref, dA, wBt.p, t0);
  return ref;
}

namespace {

// The residue split (reference/crt_split.hpp) of compute(): residues of A's rows and B's columns on their
// grids (ea, eb on the device), one int8 GEMM per modulus and pass, per block of rows, then the CRT
// composition and the roundings.
void compute_residues(GpuReference& ref, const double* dA, const double* dBt, const crt::Plan& plan, const int* ea,
                      const int* eb, bool nonneg, long Mp, long Np, long Kp, RefPhases& ph) {
  const int M = ref.M, N = ref.N, K = ref.K, P = plan.P;
  ref.split = "residues";
  const int passes = nonneg ? 1 : 2;
  const std::size_t per_row = static_cast<std::size_t>(passes) * P * Np * sizeof(std::int32_t);
  const long rows = std::clamp(static_cast<long>(kLevelBudgetBytes / per_row) / 16 * 16, 16L, Mp);
  const std::size_t level = static_cast<std::size_t>(rows) * Np;
  const std::size_t slice_a = static_cast<std::size_t>(Mp) * Kp, slice_b = static_cast<std::size_t>(Np) * Kp;
  require_free(2 * static_cast<std::size_t>(P) * (slice_a + slice_b) +
                   static_cast<std::size_t>(passes) * P * level * sizeof(std::int32_t) + (64u << 20),
               std::to_string(P) + " residues need");
  DevBuf<std::int8_t> sa(P * slice_a), ma(P * slice_a), sb(P * slice_b), mb(P * slice_b);
  if (Mp != M || Kp != K) sa.zero(), ma.zero();
  if (Np != N || Kp != K) sb.zero(), mb.zero();
  {
    const std::size_t na = static_cast<std::size_t>(M) * K, nb = static_cast<std::size_t>(N) * K;
    residues_kernel<<<static_cast<unsigned>((na + 255) / 256), 256>>>(dA, M, K, ea, plan, static_cast<int>(Kp), slice_a,
                                                                      sa.p, ma.p);
    GEMMLAB_LAUNCH_CHECK("residues_kernel");
    residues_kernel<<<static_cast<unsigned>((nb + 255) / 256), 256>>>(dBt, N, K, eb, plan, static_cast<int>(Kp), slice_b,
                                                                      sb.p, mb.p);
    GEMMLAB_LAUNCH_CHECK("residues_kernel");
  }
  ph.mark("residues");
  DevBuf<std::int32_t> Gs(P * level), Ga(nonneg ? 0 : P * level);
  ph.mark("levels_alloc");
  cublasHandle_t h = cublas().h;
  GEMMLAB_CUBLAS_CHECK(cublasSetStream(h, 0));
  const std::int32_t alpha = 1, beta = 0;
  for (long i0 = 0; i0 < M; i0 += rows) {
    const int nrows = static_cast<int>(std::min<long>(rows, Mp - i0));
    for (int pass = 0; pass < passes; ++pass) {
      const std::int8_t* da = pass == 0 ? sa.p : ma.p;
      const std::int8_t* db = pass == 0 ? sb.p : mb.p;
      std::int32_t* G = pass == 0 ? Gs.p : Ga.p;
      for (int p = 0; p < P; ++p) {
        GEMMLAB_CUBLAS_CHECK(cublasGemmEx(h, CUBLAS_OP_T, CUBLAS_OP_N, static_cast<int>(Np), nrows, static_cast<int>(Kp),
                                          &alpha, db + p * slice_b, CUDA_R_8I, static_cast<int>(Kp),
                                          da + p * slice_a + static_cast<std::size_t>(i0) * Kp, CUDA_R_8I,
                                          static_cast<int>(Kp), &beta, G + p * level, CUDA_R_32I, static_cast<int>(Np),
                                          CUBLAS_COMPUTE_32I, CUBLAS_GEMM_DEFAULT));
        ++ref.gemms;
      }
    }
    ph.mark("gemms");
    const int out_rows = static_cast<int>(std::min<long>(nrows, M - i0));
    const std::size_t n = static_cast<std::size_t>(out_rows) * N;
    crt_compose_kernel<<<static_cast<unsigned>((n + 255) / 256), 256>>>(
        Gs.p, nonneg ? Gs.p : Ga.p, plan, level, out_rows, static_cast<int>(Np), N, static_cast<int>(i0), ea, eb,
        ref.buffers->c.p, ref.buffers->c_odd.p, ref.buffers->abs_ab.p);
    GEMMLAB_LAUNCH_CHECK("crt_compose_kernel");
    ph.mark("compose");
  }
}

void compute(GpuReference& ref, const double* dA, const double* dBt, std::chrono::steady_clock::time_point t0) {
  const int M = ref.M, N = ref.N, K = ref.K;
  const std::size_t mn = static_cast<std::size_t>(M) * N;
  const auto t_compute = std::chrono::steady_clock::now();
  const ReferenceSplit want = reference_split();  // first: a bad GEMMLAB_REFERENCE_SPLIT stops before any work
  RefPhases ph;
  {
  // Grids: per row of A and of B^T.
  DevBuf<int> ea(M), ta(M), eb(N), tb(N), flag(1);
  flag.zero();
  scan_rows_kernel<<<M, 256>>>(dA, K, ea.p, ta.p, ref.buffers->row_max_a.p, flag.p);
  GEMMLAB_LAUNCH_CHECK("scan_rows_kernel");
  scan_rows_kernel<<<N, 256>>>(dBt, K, eb.p, tb.p, ref.buffers->col_max_b.p, flag.p);
  GEMMLAB_LAUNCH_CHECK("scan_rows_kernel");
  std::vector<int> hea(M), hta(M), heb(N), htb(N);
  int flags = 0;  // bit 0: an infinity or NaN; bit 1: a negative entry
  GEMMLAB_CUDA_CHECK(cudaMemcpy(hea.data(), ea.p, M * sizeof(int), cudaMemcpyDeviceToHost));
  GEMMLAB_CUDA_CHECK(cudaMemcpy(hta.data(), ta.p, M * sizeof(int), cudaMemcpyDeviceToHost));
  GEMMLAB_CUDA_CHECK(cudaMemcpy(heb.data(), eb.p, N * sizeof(int), cudaMemcpyDeviceToHost));
  GEMMLAB_CUDA_CHECK(cudaMemcpy(htb.data(), tb.p, N * sizeof(int), cudaMemcpyDeviceToHost));
  GEMMLAB_CUDA_CHECK(cudaMemcpy(&flags, flag.p, sizeof(int), cudaMemcpyDeviceToHost));
  if (flags & 1)
    throw GpuReferenceUnavailable("exact_gemm_gpu: A or B holds an infinity or NaN (the CPU engine follows IEEE for those)");
  ph.mark("scan");
  auto width = [](const std::vector<int>& lo, const std::vector<int>& hi) {
    int w = 0;
    for (std::size_t r = 0; r < lo.size(); ++r)
      if (lo[r] != INT_MAX) w = std::max(w, hi[r] - lo[r]);
    return w;
  };
  const int wa = width(hea, hta), wb = width(heb, htb);
  const int SA = split::digits_for(wa), SB = split::digits_for(wb);
  ref.digits_a = SA, ref.digits_b = SB;
  if (SA > kMaxDigits || SB > kMaxDigits)
    throw GpuReferenceUnavailable("exact_gemm_gpu: the rows of A need " + std::to_string(SA) + " and the columns of B " +
                                  std::to_string(SB) + " 7-bit digits (exponent spread within a row or column of " +
                                  std::to_string(wa) + " / " + std::to_string(wb) + " bits); the GPU engine takes at most " +
                                  std::to_string(kMaxDigits));
  const int D = SA + SB - 1;
  const int NL = (SA * kDigitBits + SB * kDigitBits + ceil_log2(K) + 1 + 63) / 64;
  if (NL > kMaxLimbs) throw std::logic_error("exact_gemm_gpu: limb count beyond the compiled maximum (a bug)");
  const long Mp = round_up(M, 16), Np = round_up(N, 16), Kp = round_up(K, 16);
  crt::Plan plan;
  const bool residues = want != ReferenceSplit::digits && wa <= crt::kMaxSpread && wb <= crt::kMaxSpread &&
                        Kp <= crt::kMaxTerms && crt::make_plan(wa + wb + ceil_log2(K) + 1, plan) &&
                        (want == ReferenceSplit::residues || plan.P < SA * SB);
  if (residues) {
    compute_residues(ref, dA, dBt, plan, ea.p, eb.p, (flags & 2) == 0, Mp, Np, Kp, ph);
  } else {
  ref.split = "digits";
  require_free(gpu_oracle_bytes(M, N, K, SA, SB) -
                   (8 * (static_cast<std::size_t>(M) * K + 2 * static_cast<std::size_t>(K) * N) + 3 * 8 * mn),
               std::to_string(SA) + " x " + std::to_string(SB) + " digits need");

  // Digits.
  const std::size_t slice_a = static_cast<std::size_t>(Mp) * Kp, slice_b = static_cast<std::size_t>(Np) * Kp;
  DevBuf<std::int8_t> sa(SA * slice_a), ma(SA * slice_a), sb(SB * slice_b), mb(SB * slice_b);
  sa.zero(), ma.zero(), sb.zero(), mb.zero();
  {
    const std::size_t na = static_cast<std::size_t>(M) * K, nb = static_cast<std::size_t>(N) * K;
    digits_kernel<<<static_cast<unsigned>((na + 255) / 256), 256>>>(dA, M, K, ea.p, SA, static_cast<int>(Kp), slice_a, sa.p, ma.p);
    GEMMLAB_LAUNCH_CHECK("digits_kernel");
    digits_kernel<<<static_cast<unsigned>((nb + 255) / 256), 256>>>(dBt, N, K, eb.p, SB, static_cast<int>(Kp), slice_b, sb.p, mb.p);
    GEMMLAB_LAUNCH_CHECK("digits_kernel");
  }
  ph.mark("digits");

  // Int8 GEMMs per digit pair, levels in int64, per block of rows.
  cublasHandle_t h = cublas().h;
  GEMMLAB_CUBLAS_CHECK(cublasSetStream(h, 0));
  const long rows = rows_per_block(Mp, Np, D);
  const std::size_t level = static_cast<std::size_t>(rows) * Np;
  DevBuf<long long> Ls(static_cast<std::size_t>(D) * level), La(static_cast<std::size_t>(D) * level);
  // (La is left unused when A and B are non-negative.)
  DevBuf<std::int32_t> tmp(level);
  ph.mark("levels_alloc");
  const long kchunk = std::min<long>(Kp, kMaxTermsInt32);  // a multiple of 16
  for (long i0 = 0; i0 < M; i0 += rows) {
    const int nrows = static_cast<int>(std::min<long>(rows, Mp - i0));
    const std::size_t used = static_cast<std::size_t>(nrows) * Np;
    Ls.zero(), La.zero();
    // With no negative entry in A or B, |A||B| = A B: the magnitude pass is the signed one.
    const bool nonneg = (flags & 2) == 0;
    for (int pass = 0; pass < (nonneg ? 1 : 2); ++pass) {
      const std::int8_t* da = pass == 0 ? sa.p : ma.p;
      const std::int8_t* db = pass == 0 ? sb.p : mb.p;
      long long* L = pass == 0 ? Ls.p : La.p;
      for (int d = 0; d < D; ++d) {
        long terms = 0;  // terms accumulated in tmp since it was last flushed
        auto flush = [&] {
          if (terms == 0) return;
          accumulate_kernel<<<static_cast<unsigned>((used + 255) / 256), 256>>>(tmp.p, L + d * level, used);
          GEMMLAB_LAUNCH_CHECK("accumulate_kernel");
          terms = 0;
        };
        for (int s = std::max(0, d - SB + 1); s <= std::min(d, SA - 1); ++s) {
          const int t = d - s;
          for (long k0 = 0; k0 < Kp; k0 += kchunk) {
            const int kc = static_cast<int>(std::min(kchunk, Kp - k0));
            if (terms + kc > kMaxTermsInt32) flush();
            const std::int32_t alpha = 1, beta = terms == 0 ? 0 : 1;
            GEMMLAB_CUBLAS_CHECK(cublasGemmEx(
                h, CUBLAS_OP_T, CUBLAS_OP_N, static_cast<int>(Np), nrows, kc, &alpha, db + t * slice_b + k0,
                CUDA_R_8I, static_cast<int>(Kp), da + s * slice_a + static_cast<std::size_t>(i0) * Kp + k0, CUDA_R_8I,
                static_cast<int>(Kp), &beta, tmp.p, CUDA_R_32I, static_cast<int>(Np), CUBLAS_COMPUTE_32I,
                CUBLAS_GEMM_DEFAULT));
            ++ref.gemms;
            terms += kc;
          }
        }
        flush();
      }
    }
    ph.mark("gemms");
    compose(NL, Ls.p, nonneg ? Ls.p : La.p, D, level, static_cast<int>(std::min<long>(nrows, M - i0)), static_cast<int>(Np), N,
            static_cast<int>(i0), ea.p, eb.p, ref.buffers->c.p, ref.buffers->c_odd.p, ref.buffers->abs_ab.p);
    ph.mark("compose");
  }
  }  // digits
  }  // the scratch buffers are freed here
  GEMMLAB_CUDA_CHECK(cudaDeviceSynchronize());
  ph.mark("free");
  if (ph.on)
    std::fprintf(stderr, "[reference] %d %d %d SA %d SB %d %s gemms %d%s total %.3f\n", M, N, K, ref.digits_a,
                 ref.digits_b, ref.split.c_str(), ref.gemms, ph.line.c_str(), 1e3 * seconds_since(t0));
  ref.timing.compute = seconds_since(t_compute);
  ref.timing.total = seconds_since(t0);
}

}  // namespace

GpuReference exact_gemm_gpu_device_bt(const double* dA, const double* dBt, int M, int N, int K) {
  const auto t0 = std::chrono::steady_clock::now();
  check_shape(M, N, K, K);
  GpuReference ref = new_reference(M, N, K);
  if (trivial(ref, t0)) return ref;
  compute(ref, dA, dBt, t0);
  return ref;
}

GpuReference stack_rows(std::vector<GpuReference> parts) {
  if (parts.empty()) throw std::invalid_argument("stack_rows: no part");
  if (parts.size() == 1) return std::move(parts.front());
  const auto t0 = std::chrono::steady_clock::now();
  long rows = 0;
  for (const GpuReference& p : parts) {
    if (p.N != parts.front().N || !p.buffers)
      throw std::invalid_argument("stack_rows: parts of different N, or a part without data");
    rows += p.M;
  }
  GpuReference out;
  out.M = static_cast<int>(rows), out.N = parts.front().N, out.K = parts.front().K;
  out.buffers = std::make_unique<GpuReference::Buffers>();
  const std::size_t mn = static_cast<std::size_t>(out.M) * out.N;
  out.buffers->c = DevBuf<double>(mn);
  out.buffers->c_odd = DevBuf<double>(mn);
  out.buffers->abs_ab = DevBuf<double>(mn);
  std::size_t at = 0;
  for (GpuReference& p : parts) {
    const std::size_t n = static_cast<std::size_t>(p.M) * p.N, bytes = n * sizeof(double);
    if (n) {
      GEMMLAB_CUDA_CHECK(cudaMemcpy(out.buffers->c.p + at, p.buffers->c.p, bytes, cudaMemcpyDeviceToDevice));
      GEMMLAB_CUDA_CHECK(cudaMemcpy(out.buffers->c_odd.p + at, p.buffers->c_odd.p, bytes, cudaMemcpyDeviceToDevice));
      GEMMLAB_CUDA_CHECK(cudaMemcpy(out.buffers->abs_ab.p + at, p.buffers->abs_ab.p, bytes, cudaMemcpyDeviceToDevice));
    }
    at += n;
    out.digits_a = std::max(out.digits_a, p.digits_a);
    out.digits_b = std::max(out.digits_b, p.digits_b);
    out.timing.upload += p.timing.upload;
    out.timing.compute += p.timing.compute;
    out.timing.total += p.timing.total;
    p = GpuReference();  // frees the part
  }
  out.timing.total += seconds_since(t0);
  return out;
}

GemmReference exact_reference(const Matrix& A, const Matrix& B, Format out, int threads, std::string* fallback_reason) {
  if (fallback_reason) fallback_reason->clear();
  try {
    return exact_gemm_gpu_host(A, B, out);
  } catch (const GpuReferenceUnavailable& e) {
    if (fallback_reason) *fallback_reason = e.what();
  }
  return exact_gemm(A, B, out, threads);
}

GemmReference exact_gemm_gpu_host(const Matrix& A, const Matrix& B, Format out) {
  const auto t0 = std::chrono::steady_clock::now();
  GpuReference g = exact_gemm_gpu(A, B);
  GemmReference r = g.to_host(out);
  r.seconds = seconds_since(t0);
  return r;
}

}  // namespace gemmlab::device
