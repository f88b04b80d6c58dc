// A vector type with load/store members and a cast_load (as attention and norm libraries
// write it), a fused residual-add RMSNorm, __grid_constant__ parameters, arch guards.
#include <cuda_fp16.h>
#include <cuda_bf16.h>
#include <cstdint>

template <typename T, size_t N>
struct vec_t {
  static_assert(sizeof(T) * N % 4 == 0, "whole words");
  T data[N];
  __device__ __forceinline__ T& operator[](size_t i) { return data[i]; }
  __device__ __forceinline__ const T& operator[](size_t i) const { return data[i]; }
  __device__ __forceinline__ void load(const T* ptr) {
#pragma unroll
    for (size_t i = 0; i < N; ++i) data[i] = ptr[i];
  }
  __device__ __forceinline__ void store(T* ptr) const {
#pragma unroll
    for (size_t i = 0; i < N; ++i) ptr[i] = data[i];
  }
  template <typename U>
  __device__ __forceinline__ void cast_load(const U* ptr) {
#pragma unroll
    for (size_t i = 0; i < N; ++i) data[i] = static_cast<T>(static_cast<float>(ptr[i]));
  }
};

struct NormParams {
  int d;
  float eps;
};

// one block per row; the residual is added first and written back
template <uint32_t VEC_SIZE, typename T>
__global__ void fused_add_rmsnorm_kernel(T* __restrict__ input, T* __restrict__ residual, const T* __restrict__ weight,
                                         const __grid_constant__ NormParams p) {
  const uint32_t row = blockIdx.x;
  __shared__ float partial[32];
  float sum_sq = 0.f;
  for (uint32_t i = threadIdx.x * VEC_SIZE; i < p.d; i += blockDim.x * VEC_SIZE) {
    vec_t<T, VEC_SIZE> x, r;
    x.load(input + row * p.d + i);
    r.load(residual + row * p.d + i);
#pragma unroll
    for (uint32_t j = 0; j < VEC_SIZE; ++j) {
      const float v = static_cast<float>(x[j]) + static_cast<float>(r[j]);
      r[j] = static_cast<T>(v);
      sum_sq += v * v;
    }
    r.store(residual + row * p.d + i);
  }
  for (int o = 16; o > 0; o >>= 1) sum_sq += __shfl_xor_sync(0xffffffffu, sum_sq, o);
  if (threadIdx.x % 32 == 0) partial[threadIdx.x / 32] = sum_sq;
  __syncthreads();
  if (threadIdx.x < 32) {
    float s = threadIdx.x < blockDim.x / 32 ? partial[threadIdx.x] : 0.f;
    for (int o = 16; o > 0; o >>= 1) s += __shfl_xor_sync(0xffffffffu, s, o);
    if (threadIdx.x == 0) partial[0] = s;
  }
  __syncthreads();
  const float rms = rsqrtf(partial[0] / p.d + p.eps);
  for (uint32_t i = threadIdx.x * VEC_SIZE; i < p.d; i += blockDim.x * VEC_SIZE) {
    vec_t<T, VEC_SIZE> r, w;
    r.load(residual + row * p.d + i);
    w.load(weight + i);
#pragma unroll
    for (uint32_t j = 0; j < VEC_SIZE; ++j) r[j] = static_cast<T>(static_cast<float>(r[j]) * rms * static_cast<float>(w[j]));
    r.store(input + row * p.d + i);
  }
}

__global__ void relu_half2(half2* __restrict__ x, int n2) {
  const int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i >= n2) return;
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 800
  x[i] = __hmax2(x[i], __float2half2_rn(0.f));
#else
  const float2 f = __half22float2(x[i]);
  x[i] = __floats2half2_rn(fmaxf(f.x, 0.f), fmaxf(f.y, 0.f));
#endif
}

template <typename T>
__global__ void strided_copy(const T* __restrict__ src, T* __restrict__ dst, int n, int stride = 1) {
  static_assert(sizeof(T) <= 16, "small elements");
  const int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) dst[i] = src[static_cast<int64_t>(i) * stride];
}
