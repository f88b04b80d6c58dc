// Packed vector types: half2, __nv_bfloat162, float4 and an aligned vector struct.
#include <cuda_fp16.h>
#include <cuda_bf16.h>
#include <cstdint>

template <typename T, int N>
struct alignas(sizeof(T) * N) AlignedVector {
  T val[N];
  __device__ __forceinline__ T& operator[](int i) { return val[i]; }
  __device__ __forceinline__ const T& operator[](int i) const { return val[i]; }
};

template <typename T, int N>
__device__ __forceinline__ void load_vec(const T* ptr, AlignedVector<T, N>& v) {
  v = *reinterpret_cast<const AlignedVector<T, N>*>(ptr);
}

template <typename T, int N>
__device__ __forceinline__ void store_vec(T* ptr, const AlignedVector<T, N>& v) {
  *reinterpret_cast<AlignedVector<T, N>*>(ptr) = v;
}

// y = x * w, eight halves per thread through one 16-byte load
template <int kVec>
__global__ void mul_half_vec(const __half* __restrict__ x, const __half* __restrict__ w, __half* __restrict__ y,
                             int n) {
  static_assert(kVec * sizeof(__half) <= 16, "one 16-byte access per thread");
  const int base = (blockIdx.x * blockDim.x + threadIdx.x) * kVec;
  if (base + kVec > n) return;
  AlignedVector<__half, kVec> a, b;
  load_vec(x + base, a);
  load_vec(w + base, b);
#pragma unroll
  for (int i = 0; i < kVec; ++i) a[i] = __hmul(a[i], b[i]);
  store_vec(y + base, a);
}

__global__ void add_half2(const half2* __restrict__ a, const half2* __restrict__ b, half2* __restrict__ c, int n2) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n2) c[i] = __hadd2(a[i], b[i]);
}

__global__ void bf16x2_fma(const __nv_bfloat162* __restrict__ a, const __nv_bfloat162* __restrict__ b,
                           __nv_bfloat162* __restrict__ c, int n2) {
  const int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i >= n2) return;
  c[i] = __hfma2(a[i], b[i], c[i]);
}

__global__ void float4_copy(const float4* __restrict__ src, float4* __restrict__ dst, int n4) {
  for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n4; i += blockDim.x * gridDim.x) {
    float4 v = __ldg(src + i);
    v.x *= 2.f; v.y *= 2.f; v.z *= 2.f; v.w *= 2.f;
    dst[i] = v;
  }
}

// bf16 -> float widening, one pair per thread
__global__ void widen_bf16(const __nv_bfloat16* __restrict__ in, float* __restrict__ out, int n) {
  const int i = 2 * (blockIdx.x * blockDim.x + threadIdx.x);
  if (i + 1 >= n) return;
  const float2 f = __bfloat1622float2(*reinterpret_cast<const __nv_bfloat162*>(in + i));
  out[i] = f.x;
  out[i + 1] = f.y;
}
