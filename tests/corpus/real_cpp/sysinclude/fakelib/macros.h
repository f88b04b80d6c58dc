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
// as CuTe's CUTE_UNROLL for nvcc's device pass: a pragma as a macro's body, not _Pragma
#define FAKELIB_UNROLL #pragma unroll

namespace fakelib {
FAKELIB_HOST_DEVICE inline float squared(float v) { return v * v; }
}  // namespace fakelib

// as ATen's cub.cuh and c10's Macros.h: a macro naming a namespace, one of the compiler's
// builtins, and a function template spelt like a macro (ATen's WARP_SHFL_XOR)
#define FAKELIB_NAMESPACE(x) x
#define FAKELIB_UNLIKELY(expr) (__builtin_expect(static_cast<bool>(expr), 0))
#define FAKELIB_HAS_FAST_PATH() (FAKELIB_API_LEVEL >= 2)
#define FAKELIB_API_LEVEL 3

template <typename T>
__device__ __forceinline__ T FAKELIB_SHFL_XOR(T value, int mask, int width = 32) {
  return __shfl_xor_sync(0xffffffffu, value, mask, width);
}

template <typename T>
__device__ __forceinline__ T FAKELIB_LANE_SUM(T value) {
  return value + static_cast<T>(threadIdx.x & 31);
}
