/* gemmlab_plugin.h: the C ABI through which a shared library adds GEMM kernels to gemmlab without
 * rebuilding it (`gemmlab run --plugin libmine.so`, a suite's `plugins = [...]`).
 *
 * Plain C (C89 types, C99 comments avoided), usable from C, C++ and CUDA; it includes no gemmlab
 * header and no CUDA header. A plugin exports one function,
 *
 *     const struct gemmlab_plugin* gemmlab_plugin_v1(void);
 *
 * returning a table that lives as long as the process (a static object): the ABI version, the
 * plugin's name, and its kernels' descriptors. gemmlab checks every field of every descriptor before
 * it registers any (a malformed plugin is refused as a whole, naming the file, the descriptor and
 * the field), then treats each kernel exactly as one of its own: `gemmlab list`, `run` (suites, `all`,
 * `family:<family>`, --gpus, --shard, --resume), `order` and `predict`. The library is never
 * unloaded. Kernel names must be new: a name gemmlab or another plugin already registered is refused.
 *
 * Build (outside gemmlab's tree; the CUDA runtime is the only library a CUDA plugin needs):
 *
 *     nvcc -O3 -arch=sm_90 -shared -Xcompiler -fPIC -I<gemmlab>/kernels/plugin mine.cu -o libmine.so
 *
 * examples/plugin/sgemm_plugin_naive.cu is a complete example.
 *
 * Contract of launch() (the same as gemmlab's own kernels, kernels/kernel.hpp): C = A * B, no alpha
 * or beta, for A (M, K), B (K, N), C (M, N).
 *  - A and B are device pointers in `input_format`, laid out as layout_a / layout_b say: "row"
 *    A(i, k) at A[i*K + k], "col" A(i, k) at A[k*M + i]; likewise B with (K, N): "row" B(k, j) at
 *    B[k*N + j], "col" at B[j*K + k]. tf32 is stored as fp32; fp16/bf16 as 2 bytes, fp8 as 1 byte.
 *  - C is a device pointer, row-major (M, N) in `output_format`, leading dimension N. gemmlab fills it
 *    with NaN before every launch, so an entry the kernel does not write is counted as unwritten.
 *  - launch() enqueues its work on args->stream (a cudaStream_t) and returns at once; gemmlab times
 *    the launch with CUDA events on that stream. It runs on the calling thread's current device
 *    (with --gpus, one thread per GPU). M, N, K already satisfy the multiples and supports().
 *  - It returns 0 on success. Otherwise it returns non-zero and writes a message of at most
 *    error_len bytes (NUL included) into `error`, saying what failed (e.g. cudaGetErrorString of
 *    cudaGetLastError() after the launch); gemmlab records that row with status `error` and the
 *    message in its note, and goes on with the next row. It must not throw or exit.
 */
#ifndef GEMMLAB_PLUGIN_H
#define GEMMLAB_PLUGIN_H

#include <stddef.h>

#ifdef __cplusplus
extern "C" {
#endif

/* Raised only when the structures below change incompatibly; gemmlab refuses any other version. */
#define GEMMLAB_PLUGIN_ABI_VERSION 1

/* The arguments of one launch, gemmlab's GemmArgs in C types. */
struct gemmlab_gemm_args {
  int M, N, K;           /* C (M, N) = A (M, K) * B (K, N) */
  const void* A;         /* device pointer, input_format, layout_a */
  const void* B;         /* device pointer, input_format, layout_b */
  void* C;               /* device pointer, output_format, row-major, leading dimension N */
  void* stream;          /* cudaStream_t to enqueue on */
  void* cublas;          /* cublasHandle_t gemmlab owns for this GPU (use it, do not destroy it) */
  void* cublaslt;        /* cublasLtHandle_t gemmlab owns for this GPU */
  void* workspace;       /* device scratch of workspace_bytes (NULL when the descriptor asks none) */
  size_t workspace_bytes;
};

/* One kernel. Strings are NUL-terminated and must stay valid for the process (string literals).
 * Format words: "fp32", "tf32", "fp16", "bf16", "e4m3", "e5m2". The numerics fields are gemmlab's
 * numerics record (reference/numerics.hpp): every bound, the bit-exact prediction of
 * `gemmlab predict` and the CSV columns are derived from them, so declare what the kernel does. */
struct gemmlab_kernel_desc {
  const char* name;         /* the CSV's `kernel` column and the name in -k: 1 to 128 characters of
                               [A-Za-z0-9_.-], not "all", new to gemmlab */
  const char* family;       /* free label for the `family` column and -k family:<family>, e.g. "plugin"
                               or "cutlass": 1 to 64 characters of [A-Za-z0-9_.-]. "cpu" says the
                               launch is a host computation: `all` leaves such kernels out (as it does
                               gemmlab's own Eigen kernels); their name or family:cpu runs them */
  const char* description;  /* one line for `gemmlab list` (NULL: none) */

  const char* input_format;        /* format of A and B in memory */
  const char* compute_format;      /* format the multiplier sees (fp32 inputs under TF32: "tf32") */
  const char* accumulator_format;  /* format of the running sum */
  const char* output_format;       /* format written to C */
  /* Where the running sum lives: "fma" (one fp32 FMA per k in increasing k from +0, per entry),
   * "in_mma" / "in_wgmma" (D = A*B + D inside mma.sync/wmma or wgmma), "external" (each instruction's
   * A*B + 0 added into fp32 registers), "promoted" (in the instruction for promotion_interval_k
   * elements of K, then added into fp32), "library" (a library call, internals unknown), "unknown"
   * (no bound is claimed: rows get status no_bound). */
  const char* accumulation;
  /* The tensor-core instruction one k-step issues, by gemmlab's name (`gemmlab tc-eval --list`, e.g.
   * "mma_m16n8k16_f16_f32", "wgmma_m64n8k16_f16_f32"), or NULL (fma, library, unknown, or not
   * known). With it and the fields below, `gemmlab predict` computes every output bit. */
  const char* instruction;
  int k_step;                 /* products per instruction along K: 1 for fma, the instruction's k when
                                 one is named, 0 = not known */
  int promotion_interval_k;   /* promoted: elements of K per promotion (> 0); 0 otherwise */
  int split_k;                /* partial sums taking alternate k-steps, added at the end in fp32
                                 round-to-nearest; 1 = none */
  /* How the additions of the running sum round: "nearest_even", "toward_zero", "floor" or "unknown";
   * NULL = what gemmlab assumes for the accumulation (fma: nearest_even; in_mma, in_wgmma, external,
   * promoted: toward_zero; library, unknown: unknown). */
  const char* accumulation_rounding;
  double acc_unit_roundoff;   /* unit roundoff of the running sum where the hardware keeps fewer bits
                                 than accumulator_format (fp8 wgmma: 2^-13); 0 = the format's */
  int subnormals_flushed;     /* 1 if results below the normal range are written as 0, else 0 */

  const char* layout_a;       /* "row" or "col" (see the contract above) */
  const char* layout_b;       /* "row" or "col" */
  int m_multiple, n_multiple, k_multiple;  /* M, N, K must be multiples of these (1 = any size) */
  int min_cc;                 /* minimum compute capability times 10, e.g. 80 for sm_80 */
  int requires_sm90a;         /* 1 if it uses sm_90a-only instructions (wgmma, setmaxnreg): runs only
                                 on compute capability 9.0, and only in a gemmlab built for sm_90a */
  size_t workspace_bytes;     /* device scratch gemmlab allocates for each launch (0 = none) */

  /* Enqueues C = A * B (the contract above). Required. */
  int (*launch)(const struct gemmlab_gemm_args* args, char* error, size_t error_len);
  /* Size rules beyond the multiples, or NULL: returns NULL when (M, N, K) is fine, else a message that
   * stays valid (a literal) saying what the kernel needs. gemmlab asks before anything runs. */
  const char* (*supports)(int M, int N, int K);
};

/* What gemmlab_plugin_v1() returns. */
struct gemmlab_plugin {
  int abi_version;                /* GEMMLAB_PLUGIN_ABI_VERSION */
  size_t descriptor_size;         /* sizeof(struct gemmlab_kernel_desc) as the plugin was compiled */
  const char* name;               /* the plugin's name, for messages and the metadata (non-empty) */
  int count;                      /* number of descriptors: 1 to 256 */
  const struct gemmlab_kernel_desc* kernels;
};

#define GEMMLAB_PLUGIN_ENTRY "gemmlab_plugin_v1"

#if defined(_WIN32)
#define GEMMLAB_PLUGIN_EXPORT __declspec(dllexport)
#else
#define GEMMLAB_PLUGIN_EXPORT __attribute__((visibility("default")))
#endif

/* The one entry point, defined by the plugin: GEMMLAB_PLUGIN_EXPORT const struct gemmlab_plugin*
 * gemmlab_plugin_v1(void) { return &my_plugin; } */
GEMMLAB_PLUGIN_EXPORT const struct gemmlab_plugin* gemmlab_plugin_v1(void);

#ifdef __cplusplus
}
#endif

#endif /* GEMMLAB_PLUGIN_H */
