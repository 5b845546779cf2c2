// Host-side values that belong to one GPU, computed once per device: a kernel's function
// attributes (cudaFuncSetAttribute acts on the current device only), its occupancy, the SM count.
// `gemmlab run --gpus` runs one worker thread per GPU, so a function-local `static` computed on
// the first GPU would be missing or wrong on the others.
#pragma once
#include <cuda_runtime.h>

#include <map>
#include <mutex>

#include "kernels/common/cuda_check.cuh"

namespace gemmlab {

template <class T>
class PerDevice {
 public:
  // The value for the current device: init() on the first call there, the stored value after.
  template <class F>
  T get(F&& init) {
    int dev = 0;
    GEMMLAB_CUDA_CHECK(cudaGetDevice(&dev));
    std::lock_guard<std::mutex> lock(mu_);
    auto it = values_.find(dev);
    if (it == values_.end()) it = values_.emplace(dev, init()).first;
    return it->second;
  }

 private:
  std::mutex mu_;
  std::map<int, T> values_;
};

}  // namespace gemmlab
