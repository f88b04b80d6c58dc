// A conversion family as half/bf16 libraries write it: a primary template that compiles
// for every pair of types, and explicit specialisations that must win where they exist.
#include <cuda_fp16.h>

template <typename To, typename From>
__device__ __forceinline__ To convert(From v) {
  return static_cast<To>(v);
}

template <>
__device__ __forceinline__ float convert<float, int>(int v) {
  return static_cast<float>(v) * 0.5f + 3.0f;  // the primary would give static_cast<float>(v)
}

template <>
__device__ __forceinline__ __half2 convert<__half2, float>(float v) {
  return __floats2half2_rn(v, -v);
}

template <typename T>
struct Scale {
  __device__ static T apply(T v) { return v; }
};

template <>
struct Scale<float> {
  __device__ static float apply(float v) { return v * 4.0f; }
};

// a specialisation that reads the thread index: each part gets its own copy of the
// family, the specialisation renamed with its template
template <typename T>
__device__ T with_lane(T v) { return v; }

template <>
__device__ float with_lane<float>(float v) { return v + static_cast<float>(threadIdx.x % 32); }

__global__ void convert_rows(const int* __restrict__ in, float* __restrict__ out, __half2* __restrict__ pairs, int n) {
  const int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) {
    const float f = with_lane<float>(Scale<float>::apply(convert<float, int>(in[i])));
    out[i] = f;
    pairs[i] = convert<__half2, float>(f);
  }
}
