// What becomes of a kernel that spins forever when its process ends (issue 44): `kill_spin MODE`
// launches one block that spins on a flag nobody sets, then ends its process after 3 s by MODE:
//   exit   _exit(3) from the host thread (what a gemmlab worker does once its watchdog fires)
//   wait   waits in cudaDeviceSynchronize (its parent SIGKILLs it: scripts/lab/probes/kill_spin.sh)
// `kill_spin probe` creates a context, runs a tiny kernel and synchronizes: "ok SECONDS" once the GPU
// takes new work.
#include <chrono>
#include <cstdio>
#include <cstring>
#include <thread>
#include <unistd.h>
#include <cuda_runtime.h>

__device__ int never_set = 0;
__global__ void spin() { while (*static_cast<volatile int*>(&never_set) == 0) __nanosleep(1000); }
__global__ void tiny(int* p) { *p = 1; }

int main(int argc, char** argv) {
  const char* mode = argc > 1 ? argv[1] : "probe";
  auto t0 = std::chrono::steady_clock::now();
  if (std::strcmp(mode, "probe") == 0) {
    int* p = nullptr;
    cudaError_t e = cudaMalloc(&p, sizeof(int));
    if (e == cudaSuccess) { tiny<<<1, 1>>>(p); e = cudaDeviceSynchronize(); }
    std::printf("%s %.3f\n", e == cudaSuccess ? "ok" : cudaGetErrorName(e),
                std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count());
    return e == cudaSuccess ? 0 : 1;
  }
  spin<<<132, 32>>>();
  std::printf("launched: %s\n", cudaGetErrorName(cudaGetLastError()));
  std::fflush(stdout);
  if (std::strcmp(mode, "exit") == 0) {
    std::this_thread::sleep_for(std::chrono::seconds(3));
    std::printf("_exit(3)\n");
    std::fflush(stdout);
    ::_exit(3);
  }
  cudaDeviceSynchronize();
  return 0;
}
