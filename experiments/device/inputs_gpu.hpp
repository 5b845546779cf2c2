// gemmlab's inputs made on the GPU: generation bit for bit the CPU generator's, packing into a
// kernel's storage format, and widening of a kernel's output to binary64.
//
// generate_gpu evaluates reference/distribution_entry.hpp's dist_detail::entry, the very function
// reference/distributions.cpp's generate() evaluates on the CPU (one source, pfp:: operations, no
// fused or approximate arithmetic), so every value is the double generate() returns. pack_gpu
// encodes with CUDA's round-to-nearest conversions (tested against reference/formats' round_to and
// to_bits on the host in tests/cpu/test_formats.cpp) and writes one canonical NaN per format, as
// to_bits does.
//
// Plain C++ header: device data is passed as raw pointers to memory of the current GPU, a stream as
// void* (a cudaStream_t; nullptr is the legacy default stream). Every call is asynchronous on that
// stream; CUDA errors throw std::runtime_error.
#pragma once
#include <cstdint>

#include "kernels/kernel.hpp"
#include "reference/distributions.hpp"
#include "reference/formats.hpp"

namespace gemmlab::device {

// Operand `which` of distribution d, (rows, cols) row-major, on the current GPU as fp32 values,
// every value exactly the double generate() returns on the CPU (all gemmlab input formats but fp64
// are subsets of fp32, so a float holds them exactly). Throws std::invalid_argument where generate()
// does (negative shape, a distribution unusable in fmt) and for fmt = fp64 (a float cannot hold it:
// generate fp64 operands with the binary64 form below).
void generate_gpu(const Distribution& d, Operand which, int rows, int cols, Format fmt, std::uint64_t seed,
                  float* device_out, void* stream = nullptr);
// The same as binary64 values, for any input format (fp64 operands above all): every value the
// double generate() returns, bit for bit. Throws std::invalid_argument where generate() does.
void generate_gpu(const Distribution& d, Operand which, int rows, int cols, Format fmt, std::uint64_t seed,
                  double* device_out, void* stream = nullptr);

// (rows, cols) row-major fp32 values on the GPU -> storage bits of `fmt` (fp32, tf32 as fp32 bits,
// fp16, bf16, e4m3, e5m2), laid out row- or column-major, into device_out (rows * cols * storage
// bytes of fmt). Each entry becomes to_bits(fmt, round_to(fmt, x)): a value exact in fmt (what
// generate_gpu makes) is encoded as is, others are rounded to nearest-even first (e4m3 saturates
// to +-448, the rest overflow to infinity), a NaN becomes the format's canonical NaN. Throws
// std::invalid_argument for fp64 or a negative shape.
void pack_gpu(const float* device_in, int rows, int cols, Format fmt, Layout layout, void* device_out,
              void* stream = nullptr);
// The binary64 form, for fmt = fp64 only: (rows, cols) row-major doubles -> to_bits(fp64, x) (the
// bits themselves, a NaN the canonical 0x7FF8000000000000) in `layout`, 8 bytes an entry. Throws
// std::invalid_argument for another format (pack those from fp32 values) or a negative shape.
void pack_gpu(const double* device_in, int rows, int cols, Format fmt, Layout layout, void* device_out,
              void* stream = nullptr);

// The inverse for outputs: storage bits of `fmt` (fp32, fp16, bf16, fp64) at device_in, (rows, cols)
// row-major with leading dimension ld (elements, ld >= cols) -> binary64 row-major (rows, cols) at
// device_out, each value from_bits(fmt, bits) (exact); a NaN (the poison of unwritten entries)
// stays a NaN (fp64: a copy, every bit kept). Throws std::invalid_argument for another format, a
// negative shape or ld < cols.
void widen_gpu(const void* device_in, Format fmt, int rows, int cols, long long ld, double* device_out,
               void* stream = nullptr);

}  // namespace gemmlab::device
