// The CUDA libraries gemmlab does not carry, found when a command first needs them, so that the commands
// that launch nothing (list, run --dry-run, inputs, evaluate, tc-eval, ...) run where they are absent:
//  * the NVIDIA driver (libcuda.so.1): the CUDA runtime, linked statically, loads it itself at its first
//    call; driver_missing() says beforehand, in words, why it cannot;
//  * cuBLAS and cuBLASLt (libcublas.so.<major>, libcublasLt.so.<major>, of the toolkit built with): never
//    linked. kernels/common/cuda_libraries.cpp defines every cuBLAS function gemmlab calls as a forwarder
//    that loads the libraries on first use (dlopen) and calls the real one. Where they cannot be loaded, a
//    forwarder returns CUBLAS_STATUS_NOT_INITIALIZED; query_device (experiments/device/runner.cu) asks
//    cublas_missing() first, so no GPU command gets that far.
// Where cuBLAS is looked for, the first place that has both libraries: the folder GEMMLAB_CUDA_LIB_DIR
// names (then nothing else); the dynamic loader's own search (LD_LIBRARY_PATH, ldconfig; the Python
// package's `gemmlab` command puts NVIDIA's pip wheels there: python/gemmlab/_cli.py); CUDA_HOME,
// CUDA_PATH, /usr/local/cuda (lib64, lib, targets/x86_64-linux/lib).
#pragma once
#include <string>

namespace gemmlab {

// "" when the NVIDIA driver can be loaded and supports this build's CUDA; else what is missing and what
// to do ("no NVIDIA driver: libcuda.so.1 was not found ...").
std::string driver_missing();

// "" once cuBLAS and cuBLASLt are loaded (the first call tries); else what is missing and what to install
// ("cuBLAS 13 not found: install ...").
std::string cublas_missing();

// Where the NVIDIA driver or cuBLAS is missing: both reasons, "; "-joined ("" when neither is).
std::string gpu_libraries_missing();

// The handle of the loaded cuBLAS (lt: cuBLASLt) for dlsym, or nullptr when cublas_missing() is not "".
void* cublas_handle(bool lt);

}  // namespace gemmlab
