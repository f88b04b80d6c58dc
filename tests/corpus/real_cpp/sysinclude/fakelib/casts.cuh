// A library's vector casts written as FlashInfer writes its own: a member template of a
// dependent type called without 'template', which nvcc accepts and Clang does not.
#pragma once
#include <cuda_fp16.h>

namespace fakelib {
template <typename To, typename From> struct vec_cast;
template <> struct vec_cast<float, __half> {
  template <int N>
  __device__ static void cast(float* d, const __half* s) {
#pragma unroll
    for (int i = 0; i < N; ++i) d[i] = __half2float(s[i]);
  }
};
template <> struct vec_cast<__half, float> {
  template <int N>
  __device__ static void cast(__half* d, const float* s) {
#pragma unroll
    for (int i = 0; i < N; ++i) d[i] = __float2half_rn(s[i]);
  }
};

template <typename T, int N>
struct vec {
  T data[N];
  template <typename S>
  __device__ void cast_load(const S* p) { vec_cast<T, S>::cast<N>(data, p); }
  template <typename S>
  __device__ void cast_store(S* p) const { vec_cast<S, T>::cast<N>(p, data); }
};
}  // namespace fakelib
