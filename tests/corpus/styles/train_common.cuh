// What a from-scratch training program's CUDA files share: the activation type picked by a
// macro, a 16-byte packed vector with a static constexpr width, streaming loads and stores,
// warp reductions handed to a block reduction as a function pointer template argument,
// stochastic rounding overloads, and host error checks (left out of the fused file).
#pragma once
#include <cuda_runtime.h>
#include <cuda_bf16.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define LANES 32U

#if defined(TRAIN_FP32)
typedef float act_t;
#else
typedef __nv_bfloat16 act_t;
#endif

inline void check_cuda(cudaError_t status, const char* file, int line) {
  if (status != cudaSuccess) {
    fprintf(stderr, "%s:%d: %s\n", file, line, cudaGetErrorString(status));
    exit(EXIT_FAILURE);
  }
}
#define CHECK_CUDA(call) (check_cuda((call), __FILE__, __LINE__))

template <class T>
struct alignas(16) Vec16 {
  static constexpr const size_t count = sizeof(int4) / sizeof(T);
  T lane[count];

  Vec16() = default;
  __device__ explicit Vec16(int4 raw) { memcpy(&lane, &raw, sizeof(raw)); }
  __device__ static Vec16 filled(T value) {
    Vec16 v;
    for (int k = 0; k < count; ++k) v.lane[k] = value;
    return v;
  }
  __device__ T& operator[](int k) { return lane[k]; }
  __device__ const T& operator[](int k) const { return lane[k]; }
  __device__ int4 raw() const {
    int4 bits;
    memcpy(&bits, &lane, sizeof(bits));
    return bits;
  }
};

typedef Vec16<act_t> actx16;

template <class T>
__device__ Vec16<T> load16(const T* p) { return Vec16<T>{*reinterpret_cast<const int4*>(p)}; }
template <class T>
__device__ Vec16<T> load16_stream(const T* p) { return Vec16<T>{__ldcs(reinterpret_cast<const int4*>(p))}; }
template <class T>
__device__ void store16(T* p, Vec16<T> v) { *reinterpret_cast<int4*>(p) = v.raw(); }
template <class T>
__device__ void store16_stream(T* p, Vec16<T> v) { __stcs(reinterpret_cast<int4*>(p), v.raw()); }

__device__ inline float lane_sum(float v) {
  for (int step = 16; step > 0; step >>= 1) v += __shfl_xor_sync(0xffffffffu, v, step);
  return v;
}
__device__ inline float lane_max(float v) {
  for (int step = 16; step > 0; step >>= 1) v = fmaxf(v, __shfl_xor_sync(0xffffffffu, v, step));
  return v;
}

__device__ inline float mix(float a, float b, float t) { return fma(t, b, fma(-t, a, a)); }

using lane_reduce_t = float (*)(float);

// every thread gets the block's value; 'resync' when the caller reduces again right away
template <lane_reduce_t combine>
__device__ inline float block_combine(float v, bool resync = false, float absent = 0.0f) {
  __shared__ float per_warp[LANES];
  const int lane = threadIdx.x % LANES;
  const int warp = threadIdx.x / LANES;
  const int warps = blockDim.x / LANES;
  v = combine(v);
  if (lane == 0) per_warp[warp] = v;
  __syncthreads();
  v = lane < warps ? per_warp[lane] : absent;
  v = combine(v);
  if (resync) __syncthreads();
  return v;
}

__host__ __device__ constexpr unsigned int mix_bits(unsigned int x, unsigned int seed) {
  constexpr unsigned int kA = 0x9e3779b1u, kB = 0x85ebca77u;
  x *= kA;
  x += seed;
  x ^= x >> 15;
  x *= kB;
  x ^= x >> 13;
  return x;
}

__device__ __forceinline__ void round_to(float v, __nv_bfloat16* out, unsigned int seed) {
  const unsigned int noise = mix_bits(threadIdx.x, blockIdx.x * blockDim.x + blockIdx.y) ^ seed;
  unsigned int bits = __float_as_uint(v);
  bits = (bits & 0xffffu) > (noise & 0xffffu) ? (bits | 0xffffu) : (bits & ~0xffffu);
  *out = __float2bfloat16_rn(__uint_as_float(bits));
}
__device__ __forceinline__ void round_to(float v, float* out, unsigned int) { *out = v; }
