// What nvcc's front end accepts and Clang does not: a member template of a dependent type
// called without 'template' (FlashInfer's vector casts are written so). hfuse reads the
// instance with Clang (the kernel calls through a template parameter and keeps a library
// header), which must read it as nvcc compiles it; the output keeps the text as written.
#include <cuda_fp16.h>
#include <cuda/std/limits>

template <typename To, typename From> struct convert;
template <> struct convert<float, __half> {
  template <int N>
  __device__ static void run(float* d, const __half* s) {
#pragma unroll
    for (int i = 0; i < N; ++i) d[i] = __half2float(s[i]);
  }
};

template <typename To, typename From, int N>
__device__ void convert_n(To* d, const From* s) { convert<To, From>::run<N>(d, s); }

__device__ float twice(float v) { return 2.f * v; }

template <typename T, float (*F)(float)>
__global__ void apply4(const T* x, float* y, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (4 * i + 3 < n) {
    float v[4];
    convert_n<float, T, 4>(v, x + 4 * i);
#pragma unroll
    for (int k = 0; k < 4; ++k) y[4 * i + k] = fmaxf(F(v[k]), cuda::std::numeric_limits<float>::lowest());
  }
}
