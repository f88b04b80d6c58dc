// An installed library's macros, as PyTorch's c10 and ATen write theirs (C10_LAUNCH_BOUNDS_1,
// CUDA_KERNEL_LOOP, C10_HOST_DEVICE, C10_WARP_SIZE): given with -isystem, hfuse keeps this
// header as an #include and asks the host compiler what it defines.
#pragma once
#if defined(__CUDACC__)
#define FAKELIB_HOST_DEVICE __host__ __device__
#else
#define FAKELIB_HOST_DEVICE
#endif
#define FAKELIB_MAX_THREADS(n) (n)
#define FAKELIB_LAUNCH_BOUNDS_1(n) __launch_bounds__(FAKELIB_MAX_THREADS(n))
#define FAKELIB_LAUNCH_BOUNDS_2(n, m) __launch_bounds__(FAKELIB_MAX_THREADS(n), m)
#define FAKELIB_KERNEL_LOOP(i, n) \
  for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < (n); i += blockDim.x * gridDim.x)
#define FAKELIB_RESTRICT __restrict__
#define FAKELIB_WARP_SIZE 32
#define FAKELIB_GLOBAL_TID (blockIdx.x * blockDim.x + threadIdx.x)
#define FAKELIB_SYNC() __syncthreads()

namespace fakelib {
FAKELIB_HOST_DEVICE inline float squared(float v) { return v * v; }
}  // namespace fakelib
