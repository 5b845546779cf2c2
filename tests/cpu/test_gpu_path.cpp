// The guard that keeps the main job on the GPU path (issue 33): the default suite, resolved as
// `gemmlab run --suite default` resolves it, holds no (kernel, format) pair that the GPU path cannot
// serve, by the one predicate GpuDevice::measure chooses the path by (experiments/device/gpu_path.hpp).
// A kernel added with an output the GPU cannot widen would otherwise put every one of its rows on
// the host path (packing, upload, download and CPU statistics per row: seconds each at 4096^3).
#include <gtest/gtest.h>

#include <string>

#include "experiments/device/gpu_path.hpp"
#include "experiments/engine/run.hpp"
#include "experiments/plan/plan.hpp"
#include "kernels/registry.hpp"

namespace gemmlab {
namespace {

std::string refusals(const std::vector<const Kernel*>& kernels) {
  std::string out;
  for (const Kernel* k : kernels)
    if (const std::string why = gpu_path_refusal(*k); !why.empty())
      out += std::string("\n  ") + k->name + " (" + info(k->numerics.input).name + " -> " +
             info(k->numerics.output).name + "): " + why;
  return out;
}

TEST(GpuPath, TheDefaultSuiteHoldsOnlyKernelsTheGpuPathServes) {
  const ResolvedPlan r = resolve(load_suite(find_suite("default")));
  ASSERT_FALSE(r.kernels.empty()) << "the default suite resolved to no kernel";
  const std::string refused = refusals(r.kernels);
  EXPECT_TRUE(refused.empty()) << "the default suite holds kernels whose rows would leave the GPU path:" << refused
                               << "\ngive the GPU path their formats (experiments/device/gpu_path.hpp and the "
                                  "widening in experiments/device/inputs_gpu.cu), or keep them out of `all`";
}

TEST(GpuPath, EveryRegisteredKernelIsServed) {
  const std::string refused = refusals(all_kernels());
  EXPECT_TRUE(refused.empty()) << "registered kernels the GPU path cannot serve:" << refused;
}

TEST(GpuPath, ServesEveryInputFormatAndTheOutputsItWidens) {
  for (Format in : all_formats())
    for (Format out : {Format::fp64, Format::fp32, Format::fp16, Format::bf16})
      EXPECT_EQ(gpu_path_refusal(in, out), "") << info(in).name << " -> " << info(out).name;
  for (Format out : {Format::tf32, Format::e4m3, Format::e5m2}) {
    const std::string why = gpu_path_refusal(Format::fp32, out);
    EXPECT_NE(why.find(std::string("output format ") + info(out).name), std::string::npos) << why;
  }
}

}  // namespace
}  // namespace gemmlab
