// gemmlab's inputs on the GPU (see inputs_gpu.hpp).
//
// generate: one thread per entry (grid-stride), each evaluating dist_detail::entry, the function
// the CPU generator evaluates, compiled for the device (pfp:: operations are __dadd_rn & co., never
// fused; the series coefficients are compile-time constants). The kernel is instantiated per
// distribution kind, so each kind gets only its own code and registers. Cost: the work is binary64
// arithmetic, not memory: a normal_0_1 entry is 10 Philox rounds plus about 100 binary64 operations
// (ln, cos, one division, one square root), expspread about 60 more (its exp and a second Philox
// block); an H100 SXM retires about 1.7e13 binary64 operations per second, so 4096 x 4096 entries
// take about 0.1 to 0.5 ms (writing the 64 MB of floats takes 0.03 ms); tests/gpu/test_inputs_gpu.cpp
// checks that every kind stays under 5 ms there.
//
// pack: row-major output is an elementwise map; column-major output goes through (32, 32) tiles in
// shared memory, so that both the read of the rows and the write of the columns are coalesced.
//
// widen: an elementwise map; fp16 and bf16 widen through float, which holds them exactly; fp64 is a
// copy (every bit of a NaN kept).
//
// fp64 operands are generated as binary64 values (the same kernel with a double output) and packed
// by the same two kernels with an 8-byte element (encode<fp64>: the bits, NaN canonical).
#include "experiments/device/inputs_gpu.hpp"

#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_fp8.h>
#include <cuda_runtime.h>

#include <algorithm>
#include <cstdint>
#include <stdexcept>
#include <string>

#include "kernels/common/cuda_check.cuh"
#include "reference/distribution_entry.hpp"

namespace gemmlab::device {
namespace {

constexpr int kThreads = 256;
constexpr std::size_t kMaxBlocks = 1u << 20;  // grid-stride beyond this

unsigned blocks_for(std::size_t n) {
  return static_cast<unsigned>(std::min((n + kThreads - 1) / kThreads, kMaxBlocks));
}

void check_shape(const char* fn, int rows, int cols) {
  if (rows < 0 || cols < 0)
    throw std::invalid_argument(std::string(fn) + ": negative shape (" + std::to_string(rows) + ", " +
                                std::to_string(cols) + ")");
}

// ---- generate ----------------------------------------------------------------------------------

// (rows, cols) row-major entries of one operand. p.kind == Kind: fixing it at compile time lets the
// compiler drop the other kinds' code from dist_detail::entry's switch. T is float (exact: the value
// is in fmt, and fmt within fp32) or double (any fmt).
template <DistKind Kind, class T>
__global__ void generate_kernel(dist_detail::EntryPlan p, int cols, std::size_t n, T* __restrict__ out) {
  p.kind = Kind;
  for (std::size_t idx = blockIdx.x * static_cast<std::size_t>(blockDim.x) + threadIdx.x; idx < n;
       idx += static_cast<std::size_t>(gridDim.x) * blockDim.x) {
    const int i = static_cast<int>(idx / static_cast<std::size_t>(cols));
    const int j = static_cast<int>(idx - static_cast<std::size_t>(i) * cols);
    out[idx] = static_cast<T>(dist_detail::entry(p, i, j));
  }
}

template <DistKind Kind, class T>
void launch_generate(const dist_detail::EntryPlan& p, int cols, std::size_t n, T* out, cudaStream_t s) {
  generate_kernel<Kind, T><<<blocks_for(n), kThreads, 0, s>>>(p, cols, n, out);
  GEMMLAB_LAUNCH_CHECK("generate_kernel");
}

template <class T>
void generate_into(const Distribution& d, Operand which, int rows, int cols, Format fmt, std::uint64_t seed,
                   T* device_out, void* stream) {
  const dist_detail::EntryPlan p = dist_detail::entry_plan(d, which, rows, cols, fmt, seed);
  const std::size_t n = static_cast<std::size_t>(rows) * cols;
  if (n == 0) return;
  if (!device_out) throw std::invalid_argument("generate_gpu: device_out is null");
  const cudaStream_t s = as_stream(stream);
  switch (d.kind) {
    case DistKind::uniform01: return launch_generate<DistKind::uniform01>(p, cols, n, device_out, s);
    case DistKind::uniform_pm1: return launch_generate<DistKind::uniform_pm1>(p, cols, n, device_out, s);
    case DistKind::normal: return launch_generate<DistKind::normal>(p, cols, n, device_out, s);
    case DistKind::logunif: return launch_generate<DistKind::logunif>(p, cols, n, device_out, s);
    case DistKind::cancel: return launch_generate<DistKind::cancel>(p, cols, n, device_out, s);
    case DistKind::exactint: return launch_generate<DistKind::exactint>(p, cols, n, device_out, s);
    case DistKind::expspread: return launch_generate<DistKind::expspread>(p, cols, n, device_out, s);
  }
  throw std::invalid_argument("generate_gpu: unknown distribution kind " + std::to_string(static_cast<int>(d.kind)));
}

// ---- pack --------------------------------------------------------------------------------------

// Storage bits of one float in format F: to_bits(F, round_to(F, x)). CUDA's conversions round to
// nearest-even (e4m3 with __NV_SATFINITE saturates as round_to does; e5m2 with __NV_NOSAT overflows
// to infinity as round_to does; e4m3 infinity is clamped here, not left to the hardware's
// satfinite); tf32 rounds the fp32 pattern to 10 fraction bits by integer
// arithmetic (a carry into the exponent is the correct next binade, or infinity). A NaN becomes
// to_bits' canonical NaN (CUDA's conversions return other NaN patterns).
template <Format F>
struct Storage;
template <> struct Storage<Format::fp64> { using type = std::uint64_t; };
template <> struct Storage<Format::fp32> { using type = std::uint32_t; };
template <> struct Storage<Format::tf32> { using type = std::uint32_t; };
template <> struct Storage<Format::fp16> { using type = std::uint16_t; };
template <> struct Storage<Format::bf16> { using type = std::uint16_t; };
template <> struct Storage<Format::e4m3> { using type = std::uint8_t; };
template <> struct Storage<Format::e5m2> { using type = std::uint8_t; };

template <Format F>
__device__ __forceinline__ typename Storage<F>::type encode(double x) {  // fp64 values: the bits
  static_assert(F == Format::fp64, "binary64 values are packed into fp64 only");
  return isnan(x) ? 0x7FF8000000000000ull : static_cast<std::uint64_t>(__double_as_longlong(x));
}

template <Format F>
__device__ __forceinline__ typename Storage<F>::type encode(float x) {
  if constexpr (F == Format::fp32) {
    return isnan(x) ? 0x7FC00000u : __float_as_uint(x);
  } else if constexpr (F == Format::tf32) {
    if (isnan(x)) return 0x7FC00000u;
    const std::uint32_t b = __float_as_uint(x);
    return (b + 0xFFFu + ((b >> 13) & 1u)) & ~0x1FFFu;
  } else if constexpr (F == Format::fp16) {
    return isnan(x) ? std::uint16_t{0x7E00} : __half_as_ushort(__float2half_rn(x));
  } else if constexpr (F == Format::bf16) {
    return isnan(x) ? std::uint16_t{0x7FC0} : __bfloat16_as_ushort(__float2bfloat16_rn(x));
  } else if constexpr (F == Format::e4m3) {
    if (isnan(x)) return 0x7F;
    if (isinf(x)) return signbit(x) ? 0xFE : 0x7E;  // +-448: round_to saturates infinity too
    return static_cast<std::uint8_t>(__nv_cvt_float_to_fp8(x, __NV_SATFINITE, __NV_E4M3));
  } else {
    return isnan(x) ? std::uint8_t{0x7E} : static_cast<std::uint8_t>(__nv_cvt_float_to_fp8(x, __NV_NOSAT, __NV_E5M2));
  }
}

template <Format F, class V>
__global__ void pack_row_major_kernel(const V* __restrict__ in, std::size_t n, typename Storage<F>::type* __restrict__ out) {
  for (std::size_t idx = blockIdx.x * static_cast<std::size_t>(blockDim.x) + threadIdx.x; idx < n;
       idx += static_cast<std::size_t>(gridDim.x) * blockDim.x)
    out[idx] = encode<F>(in[idx]);
}

constexpr int kTile = 32, kTileRows = 8;  // (32, 32) tile, block (32, 8): 4 entries per thread

// Entry (i, j) of the (rows, cols) row-major input goes to j * rows + i. Block (bx, by) handles the
// tiles at column tile bx and row tiles by, by + gridDim.y, ...: reads along a row of the tile, writes
// along a column, both coalesced; the padding column avoids shared-memory bank conflicts.
template <Format F, class V>
__global__ void pack_col_major_kernel(const V* __restrict__ in, int rows, int cols,
                                      typename Storage<F>::type* __restrict__ out) {
  using T = typename Storage<F>::type;
  __shared__ T tile[kTile][kTile + 1];
  const int c0 = blockIdx.x * kTile;
  for (long long r0 = blockIdx.y * kTile; r0 < rows; r0 += static_cast<long long>(gridDim.y) * kTile) {
    for (int k = threadIdx.y; k < kTile; k += kTileRows) {
      const long long r = r0 + k;
      const int c = c0 + threadIdx.x;
      if (r < rows && c < cols) tile[k][threadIdx.x] = encode<F>(in[static_cast<std::size_t>(r) * cols + c]);
    }
    __syncthreads();
    for (int k = threadIdx.y; k < kTile; k += kTileRows) {
      const long long r = r0 + threadIdx.x;
      const int c = c0 + k;
      if (r < rows && c < cols) out[static_cast<std::size_t>(c) * rows + r] = tile[threadIdx.x][k];
    }
    __syncthreads();
  }
}

template <Format F, class V>
void launch_pack(const V* in, int rows, int cols, Layout layout, void* out, cudaStream_t s) {
  using T = typename Storage<F>::type;
  if (layout == Layout::row_major) {
    const std::size_t n = static_cast<std::size_t>(rows) * cols;
    pack_row_major_kernel<F, V><<<blocks_for(n), kThreads, 0, s>>>(in, n, static_cast<T*>(out));
    GEMMLAB_LAUNCH_CHECK("pack_row_major_kernel");
  } else {
    const dim3 grid(static_cast<unsigned>((cols + kTile - 1) / kTile),
                    static_cast<unsigned>(std::min((rows + kTile - 1) / kTile, 65535)));
    pack_col_major_kernel<F, V><<<grid, dim3(kTile, kTileRows), 0, s>>>(in, rows, cols, static_cast<T*>(out));
    GEMMLAB_LAUNCH_CHECK("pack_col_major_kernel");
  }
}

// ---- widen -------------------------------------------------------------------------------------

template <Format F>
__device__ __forceinline__ double decode(const void* base, std::size_t at) {
  if constexpr (F == Format::fp64) {
    return static_cast<const double*>(base)[at];
  } else if constexpr (F == Format::fp32) {
    return static_cast<const float*>(base)[at];
  } else if constexpr (F == Format::fp16) {
    return __half2float(static_cast<const __half*>(base)[at]);
  } else if constexpr (F == Format::bf16) {
    return __bfloat162float(static_cast<const __nv_bfloat16*>(base)[at]);
  } else {  // e4m3, e5m2: every value is an fp16 value, so the conversion through fp16 is exact
    static_assert(F == Format::e4m3 || F == Format::e5m2, "widen: a kernel output format");
    const __nv_fp8_storage_t b = static_cast<const __nv_fp8_storage_t*>(base)[at];
    return __half2float(__half(__nv_cvt_fp8_to_halfraw(b, F == Format::e4m3 ? __NV_E4M3 : __NV_E5M2)));
  }
}

template <Format F>
__global__ void widen_kernel(const void* __restrict__ in, int cols, long long ld, std::size_t n, double* __restrict__ out) {
  for (std::size_t idx = blockIdx.x * static_cast<std::size_t>(blockDim.x) + threadIdx.x; idx < n;
       idx += static_cast<std::size_t>(gridDim.x) * blockDim.x) {
    const std::size_t i = idx / static_cast<std::size_t>(cols), j = idx - i * cols;
    out[idx] = decode<F>(in, i * static_cast<std::size_t>(ld) + j);
  }
}

template <Format F>
void launch_widen(const void* in, int cols, long long ld, std::size_t n, double* out, cudaStream_t s) {
  widen_kernel<F><<<blocks_for(n), kThreads, 0, s>>>(in, cols, ld, n, out);
  GEMMLAB_LAUNCH_CHECK("widen_kernel");
}

}  // namespace

void generate_gpu(const Distribution& d, Operand which, int rows, int cols, Format fmt, std::uint64_t seed,
                  float* device_out, void* stream) {
  if (fmt == Format::fp64)
    throw std::invalid_argument("generate_gpu: fp64 values do not fit the fp32 output; generate fp64 operands "
                                "as binary64 values (generate_gpu into a double array), or choose an input format "
                                "within fp32");
  generate_into(d, which, rows, cols, fmt, seed, device_out, stream);
}

void generate_gpu(const Distribution& d, Operand which, int rows, int cols, Format fmt, std::uint64_t seed,
                  double* device_out, void* stream) {
  generate_into(d, which, rows, cols, fmt, seed, device_out, stream);
}

void pack_gpu(const float* device_in, int rows, int cols, Format fmt, Layout layout, void* device_out, void* stream) {
  check_shape("pack_gpu", rows, cols);
  if (fmt == Format::fp64)
    throw std::invalid_argument("pack_gpu: fp64 cannot be packed from fp32 values; the input formats within fp32 "
                                "are fp32, tf32, fp16, bf16, e4m3 and e5m2");
  if (static_cast<std::size_t>(rows) * cols == 0) return;
  if (!device_in || !device_out) throw std::invalid_argument("pack_gpu: a device pointer is null");
  const cudaStream_t s = as_stream(stream);
  switch (fmt) {
    case Format::fp32: return launch_pack<Format::fp32>(device_in, rows, cols, layout, device_out, s);
    case Format::tf32: return launch_pack<Format::tf32>(device_in, rows, cols, layout, device_out, s);
    case Format::fp16: return launch_pack<Format::fp16>(device_in, rows, cols, layout, device_out, s);
    case Format::bf16: return launch_pack<Format::bf16>(device_in, rows, cols, layout, device_out, s);
    case Format::e4m3: return launch_pack<Format::e4m3>(device_in, rows, cols, layout, device_out, s);
    case Format::e5m2: return launch_pack<Format::e5m2>(device_in, rows, cols, layout, device_out, s);
    case Format::fp64: break;
    case Format::e2m1: case Format::e2m3: case Format::e3m2: case Format::ue8m0: case Format::ue4m3:
    case Format::int8: case Format::int4: case Format::uint4: break;  // quantized: packed by quantize_gpu
  }
  throw std::invalid_argument("pack_gpu: unknown format " + std::to_string(static_cast<int>(fmt)));
}

void pack_gpu(const double* device_in, int rows, int cols, Format fmt, Layout layout, void* device_out, void* stream) {
  check_shape("pack_gpu", rows, cols);
  if (fmt != Format::fp64)
    throw std::invalid_argument(std::string("pack_gpu: binary64 values are packed into fp64 only, not ") + info(fmt).name +
                                "; pack the formats within fp32 from fp32 values");
  if (static_cast<std::size_t>(rows) * cols == 0) return;
  if (!device_in || !device_out) throw std::invalid_argument("pack_gpu: a device pointer is null");
  launch_pack<Format::fp64>(device_in, rows, cols, layout, device_out, as_stream(stream));
}

void widen_gpu(const void* device_in, Format fmt, int rows, int cols, long long ld, double* device_out, void* stream) {
  check_shape("widen_gpu", rows, cols);
  if (ld < cols)
    throw std::invalid_argument("widen_gpu: leading dimension " + std::to_string(ld) + " is below the " +
                                std::to_string(cols) + " columns; ld must be >= cols");
  const std::size_t n = static_cast<std::size_t>(rows) * cols;
  if (fmt == Format::tf32)
    throw std::invalid_argument("widen_gpu: cannot widen tf32; kernel outputs are fp64, fp32, fp16, bf16, e4m3 or e5m2");
  if (n == 0) return;
  if (!device_in || !device_out) throw std::invalid_argument("widen_gpu: a device pointer is null");
  const cudaStream_t s = as_stream(stream);
  if (fmt == Format::fp64) launch_widen<Format::fp64>(device_in, cols, ld, n, device_out, s);
  else if (fmt == Format::fp32) launch_widen<Format::fp32>(device_in, cols, ld, n, device_out, s);
  else if (fmt == Format::fp16) launch_widen<Format::fp16>(device_in, cols, ld, n, device_out, s);
  else if (fmt == Format::bf16) launch_widen<Format::bf16>(device_in, cols, ld, n, device_out, s);
  else if (fmt == Format::e4m3) launch_widen<Format::e4m3>(device_in, cols, ld, n, device_out, s);
  else launch_widen<Format::e5m2>(device_in, cols, ld, n, device_out, s);
}

}  // namespace gemmlab::device
