// The Kernel descriptor: everything the harness needs to know about one GEMM variant, with no CUDA
// type leaking out (streams and handles travel as void*). A variant is one file plus one line:
// the .cu file defines `const Kernel& <name>()` in namespace gemmlab::kernels, and one line
// `GEMMLAB_KERNEL(<name>)` in its family's kernel_list.inc registers it.
//
// Contract of launch(): C = A * B (no alpha/beta) for A (M, K), B (K, N), C (M, N).
//  * A and B are device pointers in `input` format, laid out as layout_a / layout_b say
//    (row_major A: A(i,k) at A[i*K + k]; col_major A: at A[k*M + i]; likewise B with (K, N)).
//  * C is a device pointer, row-major (M, N) in `output` format, leading dimension N.
//  * It enqueues on args.stream and returns; it throws std::runtime_error on a launch error
//    (use GEMMLAB_CUDA_CHECK / GEMMLAB_LAUNCH_CHECK from kernels/common/cuda_check.cuh).
//  * The harness has already checked M, N, K against the multiples and supports() below.
//  * A scaled fp8 kernel (scale_a / scale_b not none) also gets scale_a and scale_b: device arrays of
//    fp32 dequantization scales in the layouts of reference/scaled_fp8.hpp's kernel_scales (cuBLASLt's:
//    A's 1 x 128 grid M-contiguous, B's 128 x 128 grid K-contiguous with the K blocks padded to a
//    multiple of 4). It computes C = (s_a q_a)(s_b q_b), q the fp8 values of A and B.
//  * A quantized kernel (Kernel::quantized, a recipe of reference/quantized_recipe.hpp) gets A and B as its
//    recipe's element tensors and GemmArgs::quantized the rest (scales, zeros, tensor scales), every tensor in
//    the layouts of reference/quantized_layout.hpp. It computes C from them: judged against the exact product
//    of the dequantized operands.
//  * A kernel that takes forms beyond C = A*B (Kernel::forms; reference/gemm_form.hpp) computes, on a row of
//    such a form, C_t = s (alpha A_t B_t + beta C0_t + bias) for every part t (batch or group) with the fields
//    of GemmArgs below; on a plain row they are at their neutral values (batch 1, no groups, alpha 1, no C0, no
//    bias, scale 1), and it computes C = A*B.
#pragma once
#include <cstddef>
#include <stdexcept>
#include <string>
#include "reference/distributions.hpp"
#include "reference/gemm_form.hpp"
#include "reference/numerics.hpp"
#include "reference/quantized.hpp"

namespace gemmlab {

enum class Layout { row_major, col_major };

const char* to_string(Layout l);

// A quantized kernel's tensors beside its elements (reference/quantized_layout.hpp), device pointers (nullptr
// where its recipe has none).
struct QuantizedArgs {
  const void* scale_a = nullptr;
  const void* scale_b = nullptr;
  const void* zero_a = nullptr;
  const void* zero_b = nullptr;
  double tensor_scale_a = 1.0, tensor_scale_b = 1.0;  // NVFP4's fp32 tensor scales
};

struct GemmArgs {
  int M = 0, N = 0, K = 0;
  const void* A = nullptr;
  const void* B = nullptr;
  void* C = nullptr;
  void* stream = nullptr;         // cudaStream_t
  void* cublas = nullptr;         // cublasHandle_t owned by the harness (nullptr if none)
  void* cublaslt = nullptr;       // cublasLtHandle_t owned by the harness
  void* workspace = nullptr;      // device scratch of Kernel::workspace_bytes
  std::size_t workspace_bytes = 0;
  const void* context = nullptr;  // Kernel::context of the kernel launched (run-time kernels' state)
  const float* scale_a = nullptr;  // scaled fp8 kernels: A's and B's scale grids (see above)
  const float* scale_b = nullptr;
  // A form (reference/gemm_form.hpp), for kernels that take it; M, N, K are one part's (a batch's; for groups,
  // M is the total). Batch t reads A + t M K, B + t K N elements and writes C + t M N (C0 likewise), each part
  // in the kernel's layouts. Group g: rows [o_g, o_g + group_rows[g]) of A and C (o_g the sum of the rows
  // before; a column-major A stacks its groups' (m_g, K) blocks in turn), B_g at B + g K N.
  int batch = 1;
  int groups = 0;                   // 0: not grouped
  const int* group_rows = nullptr;  // host array of `groups` row counts
  float alpha = 1.0f, beta = 0.0f;
  const void* C0 = nullptr;         // (rows, N) row-major in Kernel::epilogue.c0 (nullptr: no C0)
  const void* bias = nullptr;       // the bias vector in Kernel::epilogue.bias (nullptr: none)
  BiasKind bias_kind = BiasKind::none;
  float output_scale = 1.0f;        // s: C = RN_out(s T), saturating for fp8 outputs
  const float* output_scale_device = nullptr;  // the same s in device memory (cuBLASLt's D scale)
  float* output_amax = nullptr;     // device fp32: a kernel that reports amax = max |T| writes it here
  const QuantizedArgs* quantized = nullptr;  // a quantized kernel's scales (see above)
};

// Thrown by a launcher when the library or the GPU refuses the kernel's setting at run time (a cuBLAS
// emulation setting the library does not offer): the engine writes a not_supported row with the
// message, as for a GPU below min_cc, instead of an error row.
class KernelNotSupported : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

struct Kernel {
  const char* name;               // == file stem (+ variant suffix) == registry id == CSV `kernel`
  const char* family;             // simt, cublas, mma, wmma, hopper, fp64, cpu
  const char* description;        // one line: what this variant does
  Numerics numerics;              // formats, accumulation, instruction, rounding (reference/numerics.hpp)
  Layout layout_a, layout_b;
  int m_multiple, n_multiple, k_multiple;  // required multiples of M, N, K (1 = any)
  int min_cc;                     // minimum compute capability, e.g. 80 for sm_80
  bool requires_sm90a;            // uses wgmma / setmaxnreg: needs an sm_90a build and a cc 9.0 GPU
  std::size_t workspace_bytes;    // device scratch the launcher needs (0 = none)
  void (*launch)(const GemmArgs&);
  // Extra size rules beyond the multiples (nullptr = none): returns nullptr if (M, N, K) is fine,
  // else a static message saying what the kernel needs.
  const char* (*supports)(int M, int N, int K) = nullptr;
  // Numerics::k_chunked kernels only (nullptr otherwise): where the kernel cuts each output's K
  // range at (M, N, K) on the current GPU (the cut depends on how many blocks are co-resident
  // there). Host code; may throw std::runtime_error on a CUDA error.
  KChunkMap (*k_chunks)(int M, int N, int K) = nullptr;
  // Kernels made at run time (plugins, Python callables) keep their state here; every launch gets
  // it as GemmArgs::context. Built-in kernels leave it null.
  const void* context = nullptr;
  // Optional, for kernels that return their output instead of writing C (a Python callable
  // `fn(A, B) -> C`): called after each launch, outside the timed region, to move that output into
  // C. Throws std::runtime_error saying what is wrong with the output (shape, dtype, device).
  void (*collect)(const GemmArgs&) = nullptr;
  // Scaled fp8 kernels: the scale granularity of A and B they take (reference/distributions.hpp's
  // ScaleGranularity). They run only on distributions with a recipe of exactly these granularities
  // (SOURCE@RECIPE); an unscaled kernel (none, none) runs on none.
  ScaleGranularity scale_a = ScaleGranularity::none, scale_b = ScaleGranularity::none;
  // Why `all` leaves this kernel out (nullptr: `all` runs it). Every kernel whose launch is a CPU
  // computation sets it (family cpu): at 4096^3 a launch takes far longer than a GPU kernel's, so
  // the main job would spend most of its time there. Its name, family:<family> or a suite that names
  // it still runs it; `gemmlab list` shows the reason.
  const char* left_out_of_all = nullptr;
  // Optional: called before each launch, outside the timed region (after the L2 flush and the NaN
  // poison of C): a host kernel copies A and B from the GPU to its host buffers here, so that the
  // timed launch is its product alone. Throws std::runtime_error on a CUDA error.
  void (*prepare)(const GemmArgs&) = nullptr;
  // Optional: said at the start of every measured row's note (a host kernel: which SIMD path and how
  // many threads ran it, and that it ran on the CPU). Lives for the process.
  const char* row_note = nullptr;
  // The forms beyond C = A*B it takes (reference/gemm_form.hpp; none: plain problems only, and rows of other
  // forms are not_applicable saying why), how it computes their epilogue (its part of the numerics record:
  // C0's and the bias's formats, where they enter), and its own form: the problem it is a baseline of, run
  // where a plan asks for each kernel's own form (suites' default; nullptr: plain).
  FormSupport forms{};
  Epilogue epilogue{};
  const char* form = nullptr;
  // A quantized kernel: the recipe of the operands it reads (reference/quantized_recipe.hpp, e.g. "mxfp4",
  // "bf16_x_uint4_g128"; nullptr: plain operands). It runs only on distributions SOURCE@<recipe>, and is
  // judged by the bound of where it applies the scales (reference/quantized.hpp quantized_bound_model).
  const char* quantized = nullptr;
  QuantScales quantized_scales = QuantScales::unknown;
  int quantized_scale_roundings = 0;  // QuantScales::output: roundings before the output's
};

}  // namespace gemmlab
