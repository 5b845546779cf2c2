# The source lists that the root build and the Python package's build (python/CMakeLists.txt) both
# compile, so that the Python package runs the same C++ as the gemmlab CLI, never a copy.
# GEMMLAB_ROOT: the repository's root.
#
#  GEMMLAB_REFERENCE_SOURCES   reference/ and its stage folders (reference/explain/): plain C++ (MPFR,
#                              Eigen), no CUDA
#  GEMMLAB_CORE_SOURCES        experiments/plan, report, engine: plain C++ (the run loop, the CSV,
#                              journals), reaching a GPU only through the Device interface
#  GEMMLAB_GPU_ENGINE_SOURCES  experiments/device's engine: the timing helper and Device of a GPU
#                              (runner.cu), inputs generated on the GPU, the exact GPU reference, the
#                              GPU statistics and run-time (callable) kernels. CUDA, but no kernel
#                              of kernels/: the Python package's gemmlab._gpu is built from these.
#  GEMMLAB_CUDA_LIBRARIES_SOURCES  finding the NVIDIA driver and cuBLAS at run time (the root build has it
#                              in kernels/common/ with the cuBLAS forwarders; gemmlab._gpu, which links
#                              cuBLAS, takes it alone)
file(GLOB GEMMLAB_REFERENCE_SOURCES CONFIGURE_DEPENDS ${GEMMLAB_ROOT}/reference/*.cpp
     ${GEMMLAB_ROOT}/reference/explain/*.cpp)
file(GLOB GEMMLAB_CORE_SOURCES CONFIGURE_DEPENDS ${GEMMLAB_ROOT}/experiments/plan/*.cpp
     ${GEMMLAB_ROOT}/experiments/report/*.cpp ${GEMMLAB_ROOT}/experiments/engine/*.cpp)
set(GEMMLAB_GPU_ENGINE_SOURCES
    ${GEMMLAB_ROOT}/experiments/device/runner.cu
    ${GEMMLAB_ROOT}/experiments/device/perturb.cu
    ${GEMMLAB_ROOT}/experiments/device/inputs_gpu.cu
    ${GEMMLAB_ROOT}/experiments/device/quantize_gpu.cu
    ${GEMMLAB_ROOT}/experiments/device/quantized_gpu.cu
    ${GEMMLAB_ROOT}/experiments/device/exact_reference_gpu.cu
    ${GEMMLAB_ROOT}/experiments/device/form_gpu.cu
    ${GEMMLAB_ROOT}/experiments/device/error_stats_gpu.cu
    ${GEMMLAB_ROOT}/experiments/device/callable.cu
    ${GEMMLAB_ROOT}/experiments/device/evaluate_gpu.cu
    ${GEMMLAB_ROOT}/experiments/device/emulate_gpu.cu
    ${GEMMLAB_ROOT}/experiments/device/explain_gpu.cpp
    ${GEMMLAB_ROOT}/experiments/device/explain_diff.cpp)
set(GEMMLAB_CUDA_LIBRARIES_SOURCES ${GEMMLAB_ROOT}/kernels/common/cuda_libraries.cpp)
