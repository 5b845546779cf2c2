/* Test plugins for gemmlab's plugin loader (experiments/engine/plugin.cpp), in plain C99 against
 * kernels/plugin/gemmlab_plugin.h. CMake builds this file once per FIXTURE_<flaw> as
 * tests/plugins/libgemmlab_fixture_<flaw>.so:
 *
 *   host            valid: plugin_host_fma and plugin_host_fails. plugin_host_fma computes on the
 *                   HOST (fp32, one fmaf per k in increasing k from +0: sgemm_01_naive's numerics),
 *                   for the CPU tests' fake device, which hands it host pointers. Never run it on a GPU.
 *   launch_fails    valid: plugin_launch_fails, whose launch always fails with a message (safe on a GPU:
 *                   it touches no pointer)
 *   abi_version     abi_version 2
 *   no_entry        no gemmlab_plugin_v1 (the table is exported under another name)
 *   duplicate_name  a kernel named sgemm_01_naive, as gemmlab's own
 *   unknown_format  input_format "float32"
 *   null_launch     launch NULL
 *   bad_multiple    m_multiple 0
 */
#include <math.h>
#include <stdio.h>

#include "gemmlab_plugin.h"

/* C (M, N) = A (M, K) B (K, N), fp32, row-major, on the host: acc = fmaf(a, b, acc) from +0 in k order.
 * (Not static: each build of this file uses some of these functions, and none may warn.) */
int fixture_host_fma(const struct gemmlab_gemm_args* g, char* error, size_t error_len) {
  const float* A = (const float*)g->A;
  const float* B = (const float*)g->B;
  float* C = (float*)g->C;
  int i, j, k;
  (void)error;
  (void)error_len;
  for (i = 0; i < g->M; ++i)
    for (j = 0; j < g->N; ++j) {
      float acc = 0.0f;
      for (k = 0; k < g->K; ++k) acc = fmaf(A[(size_t)i * g->K + k], B[(size_t)k * g->N + j], acc);
      C[(size_t)i * g->N + j] = acc;
    }
  return 0;
}

int fixture_always_fails(const struct gemmlab_gemm_args* g, char* error, size_t error_len) {
  snprintf(error, error_len, "fixture launch refused %dx%dx%d on purpose", g->M, g->N, g->K);
  return 7;
}

/* Everything but the name, the input format, the M multiple and the launch. */
#define FP32_FMA_NUMERICS                                                                          \
  .compute_format = "fp32", .accumulator_format = "fp32", .output_format = "fp32", \
  .accumulation = "fma", .instruction = NULL, .k_step = 1, .promotion_interval_k = 0, .split_k = 1,      \
  .accumulation_rounding = "nearest_even", .acc_unit_roundoff = 0.0, .subnormals_flushed = 0,            \
  .layout_a = "row", .layout_b = "row", .n_multiple = 1, .k_multiple = 1, .min_cc = 50,                  \
  .requires_sm90a = 0, .workspace_bytes = 0, .supports = NULL

#if defined(FIXTURE_DUPLICATE_NAME)
#define FIRST_NAME "sgemm_01_naive"
#elif defined(FIXTURE_LAUNCH_FAILS)
#define FIRST_NAME "plugin_launch_fails"
#else
#define FIRST_NAME "plugin_host_fma"
#endif

#if defined(FIXTURE_UNKNOWN_FORMAT)
#define FIRST_FORMAT "float32"
#else
#define FIRST_FORMAT "fp32"
#endif

#if defined(FIXTURE_NULL_LAUNCH)
#define FIRST_LAUNCH NULL
#elif defined(FIXTURE_LAUNCH_FAILS)
#define FIRST_LAUNCH fixture_always_fails
#else
#define FIRST_LAUNCH fixture_host_fma
#endif

#if defined(FIXTURE_BAD_MULTIPLE)
#define FIRST_M_MULTIPLE 0
#else
#define FIRST_M_MULTIPLE 1
#endif

static const struct gemmlab_kernel_desc kernels[] = {
    {.name = FIRST_NAME, .family = "plugin", .description = "test fixture (tests/plugins/fixture.c)",
     FP32_FMA_NUMERICS, .input_format = FIRST_FORMAT, .m_multiple = FIRST_M_MULTIPLE, .launch = FIRST_LAUNCH},
#if defined(FIXTURE_HOST)
    {.name = "plugin_host_fails", .family = "plugin", .description = "test fixture whose launch always fails",
     FP32_FMA_NUMERICS, .input_format = "fp32", .m_multiple = 1, .launch = fixture_always_fails},
#endif
};

static const struct gemmlab_plugin table = {
#if defined(FIXTURE_ABI_VERSION)
    2,
#else
    GEMMLAB_PLUGIN_ABI_VERSION,
#endif
    sizeof(struct gemmlab_kernel_desc), "gemmlab_test_fixture", (int)(sizeof kernels / sizeof kernels[0]), kernels};

#if defined(FIXTURE_NO_ENTRY)
GEMMLAB_PLUGIN_EXPORT const struct gemmlab_plugin* gemmlab_plugin_v0(void);
const struct gemmlab_plugin* gemmlab_plugin_v0(void) { return &table; }
#else
const struct gemmlab_plugin* gemmlab_plugin_v1(void) { return &table; }
#endif
