// Which kernels a GPU row serves on the GPU path: operands generated in GPU memory and packed there
// once per problem, the kernel's C judged where it lies (widened to binary64 on the GPU, GPU
// statistics against the GPU's exact reference), buffers and workspaces kept from row to row
// (experiments/device/runner.cu, GpuDevice::measure and measure_scaled). A row that leaves it is
// judged on the host (Device::measure: the operands packed and uploaded for the kernel, C
// downloaded, statistics on the CPU), a hundred times slower at 4096^3, and says so in its note.
//
// The one predicate GpuDevice::measure chooses the path by, and the one a CPU test holds the default
// suite to (tests/cpu/test_gpu_path.cpp). A format added to Format without a case here draws a
// -Wswitch warning from the switches below, rather than slipping onto the host path unseen.
//
// Plain C++: no CUDA header.
#pragma once
#include <string>

#include "kernels/kernel.hpp"
#include "reference/formats.hpp"

namespace gemmlab {

// Empty when the GPU path serves a kernel reading `input` and writing `output`, else why not.
//  inputs:  every format within fp32 is generated as fp32 values (generate_gpu) and packed into the
//           kernel's storage and layout by pack_gpu; fp64 is generated as binary64 values and packed
//           by pack_gpu's binary64 form.
//  outputs: fp32, fp16, bf16, e4m3 and e5m2 are widened to binary64 on the GPU; fp64 is binary64
//           already (a copy). No kernel writes tf32, and the GPU path has no widening for it.
inline std::string gpu_path_refusal(Format input, Format output) {
  switch (input) {  // every input format is generated and packed on the GPU
    case Format::fp64:
    case Format::fp32:
    case Format::tf32:
    case Format::fp16:
    case Format::bf16:
    case Format::e4m3:
    case Format::e5m2: break;
    case Format::e2m1: case Format::e2m3: case Format::e3m2: case Format::ue8m0: case Format::ue4m3:
    case Format::int8: case Format::int4: case Format::uint4:
      return std::string("its input format ") + info(input).name +
             " is a quantized element format, which reaches a kernel as a quantized operand (reference/quantized.hpp), "
             "not as a plain one";
  }
  switch (output) {
    case Format::fp64:
    case Format::fp32:
    case Format::fp16:
    case Format::bf16:
    case Format::e4m3:
    case Format::e5m2: return {};
    case Format::tf32: break;
    case Format::e2m1: case Format::e2m3: case Format::e3m2: case Format::ue8m0: case Format::ue4m3:
    case Format::int8: case Format::int4: case Format::uint4: break;
  }
  return std::string("its output format ") + info(output).name +
         " has no widening to binary64 on the GPU (the GPU path judges fp64, fp32, fp16, bf16, e4m3 and e5m2 outputs)";
}

inline std::string gpu_path_refusal(const Kernel& k) { return gpu_path_refusal(k.numerics.input, k.numerics.output); }

}  // namespace gemmlab
