// Elementwise kernels the way ML libraries write them: functors, a template-template
// parameter for the vector width policy, variadic packs of inputs, kernels in a header.
#pragma once
#include <cstdint>
#include <type_traits>

namespace ew {

template <typename T>
struct Relu {
  __device__ __forceinline__ T operator()(T x) const { return x > T(0) ? x : T(0); }
};

template <typename T>
struct Scale {
  T s;
  __device__ __forceinline__ T operator()(T x) const { return x * s; }
};

struct AddAll {
  template <typename T, typename... Rest>
  __device__ __forceinline__ T operator()(T first, Rest... rest) const {
    if constexpr (sizeof...(Rest) == 0) {
      return first;
    } else {
      return first + (*this)(rest...);
    }
  }
};

template <int N>
struct Unrolled {
  static constexpr int kWidth = N;
};

template <typename T, typename Op, template <int> class Policy = Unrolled, int kVec = 4>
__global__ void unary_kernel(const T* __restrict__ in, T* __restrict__ out, int64_t n, Op op) {
  constexpr int kWidth = Policy<kVec>::kWidth;
  const int64_t base = (static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x) * kWidth;
#pragma unroll
  for (int i = 0; i < kWidth; ++i) {
    const int64_t idx = base + i;
    if (idx < n) out[idx] = op(in[idx]);
  }
}

template <typename T, typename... Ins>
__global__ void sum_n_kernel(T* __restrict__ out, int n, const Ins* __restrict__... ins) {
  const int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) out[i] = AddAll{}(static_cast<T>(ins[i])...);
}

template <typename T, typename U, typename = std::enable_if_t<std::is_floating_point<U>::value>>
__global__ void cast_kernel(const T* __restrict__ in, U* __restrict__ out, int n) {
  for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += gridDim.x * blockDim.x) {
    out[i] = static_cast<U>(in[i]);
  }
}

}  // namespace ew
