// SFINAE, if constexpr, a specialisation family, overloads by type, enums as template
// arguments and a struct forward-declared before its definition.
#include <type_traits>
#include <cuda_fp16.h>

struct Params;

template <typename T, typename Enable = void>
struct Accum;  // primary: declared only

template <typename T>
struct Accum<T, std::enable_if_t<std::is_integral<T>::value>> {
  using type = long long;
};

template <typename T>
struct Accum<T, std::enable_if_t<std::is_floating_point<T>::value>> {
  using type = double;
};

template <>
struct Accum<__half> {
  using type = float;
};

template <typename T>
using accum_t = typename Accum<T>::type;

__device__ __forceinline__ float widen(float v) { return v; }
__device__ __forceinline__ float widen(__half v) { return __half2float(v); }
__device__ __forceinline__ int widen(int v) { return v; }

struct Params {
  int n;
  float alpha;
};

enum Mode { kCopy = 0, kSquare = 1, kCube = 2 };

template <Mode M, typename T>
__device__ __forceinline__ T apply(T v) {
  if constexpr (M == kCopy) {
    return v;
  } else if constexpr (M == kSquare) {
    return v * v;
  } else {
    return v * v * v;
  }
}

template <typename T, Mode M, std::enable_if_t<std::is_arithmetic<T>::value, int> = 0>
__global__ void power_kernel(const T* __restrict__ in, T* __restrict__ out, Params p) {
  const int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < p.n) out[i] = apply<M>(in[i]);
}

// per-block sums in the accumulation type of T (a strided loop, no barrier)
template <typename T>
__global__ void chunk_sums(const T* __restrict__ in, accum_t<T>* __restrict__ out, int n, int chunk) {
  const int c = blockIdx.x * blockDim.x + threadIdx.x;
  if (c * chunk >= n) return;
  accum_t<T> s = 0;
  for (int i = c * chunk; i < min(n, (c + 1) * chunk); ++i) s += static_cast<accum_t<T>>(widen(in[i]));
  out[c] = s;
}

__global__ void scaled_copy(const float* __restrict__ in, float* __restrict__ out, const Params p) {
  const int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < p.n) out[i] = p.alpha * in[i];
}

// a kernel template with explicit specialisations, as libraries write fast paths: the
// instance runs the specialisation's body, never the primary's
template <typename T, int kVec = 1>
__global__ void fill_pattern(T* __restrict__ out, int n) {
  const int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) out[i] = static_cast<T>(i % 7) * static_cast<T>(kVec);
}

template <>
__global__ void fill_pattern<float, 4>(float* __restrict__ out, int n) {
  const int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (4 * i + 3 < n) reinterpret_cast<float4*>(out)[i] = make_float4(i, -i, 0.5f * i, 2.0f);
}

template <>
__global__ void fill_pattern<int>(int* __restrict__ out, int n) {
  const int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) out[i] = -i;
}
