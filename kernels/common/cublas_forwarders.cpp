// Every cuBLAS and cuBLASLt function gemmlab calls, defined here as a forwarder to the library loaded at
// run time (kernels/common/cuda_libraries.hpp), so that the gemmlab command and the tests never link
// cuBLAS: the commands that launch nothing run where it is absent. A forwarder has the header's own
// signature and looks its function up once. Without cuBLAS it returns CUBLAS_STATUS_NOT_INITIALIZED (query_device has
// already said why, so no GPU command gets here).
// A new cuBLAS call is one more line below: the link names the function when it is missing.
#include <cublasLt.h>
#include <cublas_v2.h>
#include <dlfcn.h>

#include "kernels/common/cuda_libraries.hpp"

namespace {

template <class F>
F lookup(bool lt, const char* name) {
  void* lib = gemmlab::cublas_handle(lt);
  return lib ? reinterpret_cast<F>(dlsym(lib, name)) : nullptr;
}

constexpr const char* kNotLoaded = "cuBLAS is not loaded (gemmlab: cuBLAS not found)";

}  // namespace

// LIB: false for libcublas, true for libcublasLt; FAIL: what a forwarder returns without the library.
// extern "C": a signature that differs from the header's is a compile error ("conflicting declaration of
// C function"), never a silent overload (the headers add C++ overloads of some functions themselves).
#define GEMMLAB_CUBLAS_FORWARD(LIB, RET, NAME, FAIL, PARAMS, ARGS)                     \
  extern "C" RET NAME PARAMS {                                                         \
    using Real = RET(*) PARAMS;                                                        \
    static const Real real = lookup<Real>(LIB, #NAME);                                 \
    if (!real) return FAIL;                                                            \
    return real ARGS;                                                                  \
  }
#define GEMMLAB_BLAS(NAME, PARAMS, ARGS) \
  GEMMLAB_CUBLAS_FORWARD(false, cublasStatus_t, NAME, CUBLAS_STATUS_NOT_INITIALIZED, PARAMS, ARGS)
#define GEMMLAB_LT(NAME, PARAMS, ARGS) \
  GEMMLAB_CUBLAS_FORWARD(true, cublasStatus_t, NAME, CUBLAS_STATUS_NOT_INITIALIZED, PARAMS, ARGS)

// --- cuBLAS -------------------------------------------------------------------------------------------
GEMMLAB_BLAS(cublasCreate_v2, (cublasHandle_t* handle), (handle))
GEMMLAB_BLAS(cublasDestroy_v2, (cublasHandle_t handle), (handle))
GEMMLAB_BLAS(cublasSetStream_v2, (cublasHandle_t handle, cudaStream_t stream), (handle, stream))
GEMMLAB_BLAS(cublasSetWorkspace_v2, (cublasHandle_t handle, void* workspace, size_t bytes), (handle, workspace, bytes))
GEMMLAB_BLAS(cublasSetMathMode, (cublasHandle_t handle, cublasMath_t mode), (handle, mode))
GEMMLAB_BLAS(cublasGetProperty, (libraryPropertyType type, int* value), (type, value))
GEMMLAB_BLAS(cublasSetEmulationStrategy, (cublasHandle_t handle, cublasEmulationStrategy_t strategy),
             (handle, strategy))
GEMMLAB_BLAS(cublasSetFixedPointEmulationMantissaBitOffset, (cublasHandle_t handle, int offset), (handle, offset))
GEMMLAB_BLAS(cublasSetFixedPointEmulationMantissaControl,
             (cublasHandle_t handle, cudaEmulationMantissaControl control), (handle, control))
GEMMLAB_BLAS(cublasSetFixedPointEmulationMaxMantissaBitCount, (cublasHandle_t handle, int bits), (handle, bits))
GEMMLAB_BLAS(cublasGemmEx,
             (cublasHandle_t handle, cublasOperation_t transa, cublasOperation_t transb, int m, int n, int k,
              const void* alpha, const void* A, cudaDataType Atype, int lda, const void* B, cudaDataType Btype,
              int ldb, const void* beta, void* C, cudaDataType Ctype, int ldc, cublasComputeType_t computeType,
              cublasGemmAlgo_t algo),
             (handle, transa, transb, m, n, k, alpha, A, Atype, lda, B, Btype, ldb, beta, C, Ctype, ldc, computeType,
              algo))
GEMMLAB_BLAS(cublasGemmStridedBatchedEx,
             (cublasHandle_t handle, cublasOperation_t transa, cublasOperation_t transb, int m, int n, int k,
              const void* alpha, const void* A, cudaDataType Atype, int lda, long long int strideA, const void* B,
              cudaDataType Btype, int ldb, long long int strideB, const void* beta, void* C, cudaDataType Ctype,
              int ldc, long long int strideC, int batchCount, cublasComputeType_t computeType, cublasGemmAlgo_t algo),
             (handle, transa, transb, m, n, k, alpha, A, Atype, lda, strideA, B, Btype, ldb, strideB, beta, C, Ctype,
              ldc, strideC, batchCount, computeType, algo))
GEMMLAB_BLAS(cublasGemmGroupedBatchedEx,
             (cublasHandle_t handle, const cublasOperation_t transa_array[], const cublasOperation_t transb_array[],
              const int m_array[], const int n_array[], const int k_array[], const void* alpha_array,
              const void* const Aarray[], cudaDataType_t Atype, const int lda_array[], const void* const Barray[],
              cudaDataType_t Btype, const int ldb_array[], const void* beta_array, void* const Carray[],
              cudaDataType_t Ctype, const int ldc_array[], int group_count, const int group_size[],
              cublasComputeType_t computeType),
             (handle, transa_array, transb_array, m_array, n_array, k_array, alpha_array, Aarray, Atype, lda_array,
              Barray, Btype, ldb_array, beta_array, Carray, Ctype, ldc_array, group_count, group_size, computeType))
GEMMLAB_CUBLAS_FORWARD(false, const char*, cublasGetStatusName, kNotLoaded, (cublasStatus_t status), (status))
GEMMLAB_CUBLAS_FORWARD(false, const char*, cublasGetStatusString, kNotLoaded, (cublasStatus_t status), (status))

// --- cuBLASLt -----------------------------------------------------------------------------------------
GEMMLAB_LT(cublasLtCreate, (cublasLtHandle_t* handle), (handle))
GEMMLAB_LT(cublasLtDestroy, (cublasLtHandle_t handle), (handle))
GEMMLAB_LT(cublasLtMatmulDescCreate, (cublasLtMatmulDesc_t* desc, cublasComputeType_t computeType,
                                      cudaDataType_t scaleType),
           (desc, computeType, scaleType))
GEMMLAB_LT(cublasLtMatmulDescDestroy, (cublasLtMatmulDesc_t desc), (desc))
GEMMLAB_LT(cublasLtMatmulDescSetAttribute, (cublasLtMatmulDesc_t desc, cublasLtMatmulDescAttributes_t attr,
                                            const void* buf, size_t bytes),
           (desc, attr, buf, bytes))
GEMMLAB_LT(cublasLtMatrixLayoutCreate, (cublasLtMatrixLayout_t* layout, cudaDataType type, uint64_t rows,
                                        uint64_t cols, int64_t ld),
           (layout, type, rows, cols, ld))
GEMMLAB_LT(cublasLtMatrixLayoutDestroy, (cublasLtMatrixLayout_t layout), (layout))
GEMMLAB_LT(cublasLtMatmulPreferenceCreate, (cublasLtMatmulPreference_t* pref), (pref))
GEMMLAB_LT(cublasLtMatmulPreferenceDestroy, (cublasLtMatmulPreference_t pref), (pref))
GEMMLAB_LT(cublasLtMatmulPreferenceSetAttribute, (cublasLtMatmulPreference_t pref,
                                                  cublasLtMatmulPreferenceAttributes_t attr, const void* buf,
                                                  size_t bytes),
           (pref, attr, buf, bytes))
GEMMLAB_LT(cublasLtMatmulAlgoGetHeuristic,
           (cublasLtHandle_t handle, cublasLtMatmulDesc_t desc, cublasLtMatrixLayout_t Adesc,
            cublasLtMatrixLayout_t Bdesc, cublasLtMatrixLayout_t Cdesc, cublasLtMatrixLayout_t Ddesc,
            cublasLtMatmulPreference_t preference, int requestedAlgoCount,
            cublasLtMatmulHeuristicResult_t heuristicResultsArray[], int* returnAlgoCount),
           (handle, desc, Adesc, Bdesc, Cdesc, Ddesc, preference, requestedAlgoCount, heuristicResultsArray,
            returnAlgoCount))
GEMMLAB_LT(cublasLtMatmulAlgoConfigGetAttribute, (const cublasLtMatmulAlgo_t* algo,
                                                  cublasLtMatmulAlgoConfigAttributes_t attr, void* buf,
                                                  size_t bytes, size_t* written),
           (algo, attr, buf, bytes, written))
GEMMLAB_LT(cublasLtMatmul,
           (cublasLtHandle_t handle, cublasLtMatmulDesc_t desc, const void* alpha, const void* A,
            cublasLtMatrixLayout_t Adesc, const void* B, cublasLtMatrixLayout_t Bdesc, const void* beta,
            const void* C, cublasLtMatrixLayout_t Cdesc, void* D, cublasLtMatrixLayout_t Ddesc,
            const cublasLtMatmulAlgo_t* algo, void* workspace, size_t workspaceBytes, cudaStream_t stream),
           (handle, desc, alpha, A, Adesc, B, Bdesc, beta, C, Cdesc, D, Ddesc, algo, workspace, workspaceBytes,
            stream))
