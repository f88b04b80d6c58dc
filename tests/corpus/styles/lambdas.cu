// Device lambdas and functors passed to a generic kernel (as Thrust-free libraries write
// elementwise code), constexpr functions in array bounds, if constexpr on type traits.
#include <type_traits>
#include <cuda_fp16.h>

constexpr int ceil_div(int a, int b) { return (a + b - 1) / b; }
constexpr int kItems = ceil_div(10, 4);  // 3

template <typename Func>
__global__ void for_each_index(int n, Func f) {
  const int base = (blockIdx.x * blockDim.x + threadIdx.x) * kItems;
#pragma unroll
  for (int k = 0; k < kItems; ++k) {
    if (base + k < n) f(base + k);
  }
}

template <typename T>
__device__ __forceinline__ float as_float(T v) {
  if constexpr (std::is_same_v<T, __half>) {
    return __half2float(v);
  } else {
    return static_cast<float>(v);
  }
}

template <typename T>
__global__ void scale_any(const T* __restrict__ in, float* __restrict__ out, float s, int n) {
  const int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) out[i] = s * as_float(in[i]);
}

struct Saxpy {
  float a;
  const float* x;
  float* y;
  __device__ void operator()(int i) const { y[i] = a * x[i] + y[i]; }
};

__global__ void saxpy_functor(int n, Saxpy op) {
  for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += gridDim.x * blockDim.x) op(i);
}

__global__ void local_lambda(const float* __restrict__ x, float* __restrict__ y, int n) {
  auto square_plus = [](float v, float w) { return v * v + w; };  // a lambda in device code is device code
  const int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) y[i] = square_plus(x[i], 1.0f);
}

// lambdas that capture nothing and read the block: threadIdx is a global, so they compile
// alone; in a part it is the context's, and the lambda must capture it
__global__ void capture_free_index(const float* __restrict__ x, float* __restrict__ y, int n) {
  auto global_index = []() { return static_cast<int>(blockIdx.x * blockDim.x + threadIdx.x); };
  auto lane = [n]() { return static_cast<int>(threadIdx.x % 32) + 0 * n; };
  const int i = global_index();
  if (i < n) y[i] = x[i] * 2.0f + lane();
}

// and one that writes dynamic shared memory, a static array for the original
__global__ void lambda_dynamic_stage(const float* __restrict__ x, float* __restrict__ y, int n) {
  extern __shared__ float stage[];
  auto put = [](int t, float v) { stage[t] = v; };
  const int i = blockIdx.x * blockDim.x + threadIdx.x;
  put(threadIdx.x, i < n ? x[i] : 0.f);
  __syncthreads();
  if (i < n) y[i] = stage[blockDim.x - 1 - threadIdx.x];
}

// Lambdas annotated with their execution space and generic ones, inside device code (a build
// with --extended-lambda): NVRTC has no such flag, and takes a generic lambda's call operator
// for host code without -default-device.
template <typename T>
__global__ void annotated_lambdas(const T* __restrict__ x, T* __restrict__ y, int n) {
  auto index = [] __device__ () { return blockIdx.x * blockDim.x + threadIdx.x; };
  auto twice = [] __host__ __device__ (auto v) { return v + v; };
  auto square = [](auto v) { return v * v; };
  const unsigned i = index();
  if (i < n) y[i] = twice(square(x[i]));
}
template __global__ void annotated_lambdas<float>(const float* __restrict__, float* __restrict__, int);
