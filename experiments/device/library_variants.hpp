// A library kernel (cublas_gemmex_*, cublaslt_*) under other library settings, as a run-time
// Kernel: its own cuBLAS / cuBLASLt handles, created with CUBLAS_WORKSPACE_CONFIG as asked (the
// library reads it when a handle is created, so each setting gets fresh handles), its own
// workspace, and optionally its own stream (joined to the harness's stream by events, so the
// harness's timing still brackets the launch). `gemmlab invariance` runs every setting beside the
// default to see whether a setting changes the bits or removes a variance (vLLM PR #43337: "cuBLAS
// workspace settings remove split-K").
//
// Plain C++ header (no CUDA types).
#pragma once
#include <cstddef>
#include <memory>
#include <string>
#include <vector>

#include "experiments/device/callable.hpp"
#include "kernels/kernel.hpp"

namespace gemmlab {

struct LibrarySetting {
  std::string workspace = "default";  // "default" (the library's own), "0", "large" (256 MiB), or bytes
  std::string workspace_config;       // CUBLAS_WORKSPACE_CONFIG for the handles; "" leaves the process's
  bool own_stream = false;            // launch on a stream of the variant's own
  // The CSV's `config`: "default", or e.g. "ws=0", "ws=large,cfg=:4096:8,stream=own".
  std::string label() const;
};

// Parses "ws=0,cfg=:4096:8,stream=own" (any of the parts; "default" for none). Throws UsageError
// naming the part that is wrong and the forms that are right.
LibrarySetting parse_library_setting(const std::string& text);

// Whether k is a library kernel the settings apply to (cublas_gemmex_*, cublaslt_*).
bool takes_library_settings(const Kernel& k);

// `base` under setting `s` (base must take library settings). The returned kernel keeps `base`'s
// name and numerics; create it and run it on the GPU that will launch it.
std::unique_ptr<CallableKernel> library_variant(const Kernel& base, const LibrarySetting& s);

// The workspace bytes cuBLASLt is offered under setting s for kernel k (for the heuristic query).
std::size_t lt_workspace_bytes(const Kernel& k, const LibrarySetting& s);

}  // namespace gemmlab
