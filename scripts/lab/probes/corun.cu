// Whether a kernel on one stream runs beside a kernel that holds some SMs on another (gemmlab's busy_sms
// perturbation, experiments/device/perturb.cu): `corun THREADS SMEM_BYTES` launches 66 holding blocks of
// THREADS threads and SMEM_BYTES of dynamic shared memory (-1: the SM's whole) spinning for at most 2 s on
// stream 1, then one block on stream 2, and prints when that block ran (ms after the launch) and whether
// the holding blocks were still there then. CUDA_DEVICE_MAX_CONNECTIONS etc. come from the environment.
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cuda_runtime.h>

__device__ unsigned resident, done_flag;
__device__ unsigned long long seen_at;

__device__ unsigned long long now_ns() { unsigned long long t; asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t)); return t; }

__global__ void hold(unsigned long long limit_ns) {
  extern __shared__ unsigned char held[];
  if (threadIdx.x == 0) {
    held[0] = 1;
    atomicAdd(&resident, 1u);
    const unsigned long long t0 = now_ns();
    while (atomicAdd(&done_flag, 0u) == 0 && now_ns() - t0 < limit_ns) __nanosleep(2000);
  }
  __syncthreads();
}
__global__ void probe() { seen_at = now_ns(); atomicExch(&done_flag, 1u); }
__global__ void stamp(unsigned long long* t) { *t = now_ns(); }

int main(int argc, char** argv) {
  const int threads = argc > 1 ? std::atoi(argv[1]) : 1024;
  int smem = argc > 2 ? std::atoi(argv[2]) : -1;
  int optin = 0;
  cudaDeviceGetAttribute(&optin, cudaDevAttrMaxSharedMemoryPerBlockOptin, 0);
  if (smem < 0) smem = optin;
  cudaFuncSetAttribute(hold, cudaFuncAttributeMaxDynamicSharedMemorySize, optin);
  cudaStream_t a, b;
  cudaStreamCreateWithFlags(&a, cudaStreamNonBlocking);
  cudaStreamCreateWithFlags(&b, cudaStreamNonBlocking);
  unsigned long long* t0d;
  cudaMalloc(&t0d, sizeof *t0d);
  unsigned zero = 0;
  cudaMemcpyToSymbol(resident, &zero, sizeof zero);
  cudaMemcpyToSymbol(done_flag, &zero, sizeof zero);
  stamp<<<1, 1, 0, a>>>(t0d);
  hold<<<66, threads, smem, a>>>(2000000000ull);
  probe<<<1, 1, 0, b>>>();
  cudaError_t e = cudaDeviceSynchronize();
  unsigned long long t0 = 0, seen = 0;
  unsigned res = 0;
  cudaMemcpy(&t0, t0d, sizeof t0, cudaMemcpyDeviceToHost);
  cudaMemcpyFromSymbol(&seen, seen_at, sizeof seen);
  cudaMemcpyFromSymbol(&res, resident, sizeof res);
  const char* conn = std::getenv("CUDA_DEVICE_MAX_CONNECTIONS");
  std::printf("threads %4d smem %6d MAX_CONNECTIONS=%s: probe ran %.3f ms after the hold's launch (%s; %u resident)\n",
              threads, smem, conn ? conn : "(unset)", (seen - t0) * 1e-6,
              (seen - t0) < 1900000000ull ? "BESIDE the hold" : "only after the hold ended", res);
  return e == cudaSuccess ? 0 : 1;
}
