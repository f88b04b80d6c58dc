// Modern C++ in device code: a variable template, an alignas vector of a computed width, a
// compile-time loop over an integer_sequence with a fold expression and a generic lambda,
// if constexpr, a __grid_constant__ parameter block, a SFINAE default template argument,
// cuda::std::array with structured bindings.
#include <cuda/std/array>
#include <cuda/std/utility>
#include <cuda/std/type_traits>
#include <cuda_fp16.h>

template <class T> inline constexpr int kVec = 16 / sizeof(T);

template <class T, int N> struct alignas(sizeof(T) * N) Vec { T v[N]; };

template <class T> using Vec16 = Vec<T, kVec<T>>;

struct Params {
  const float* __restrict__ x;
  float* __restrict__ y;
  float scale;
  int n;
};

template <class F, int... Is>
__device__ __forceinline__ void unroll(F&& f, cuda::std::integer_sequence<int, Is...>) {
  (f(cuda::std::integral_constant<int, Is>{}), ...);
}

template <int N, class F>
__device__ __forceinline__ void static_for(F&& f) {
  unroll(static_cast<F&&>(f), cuda::std::make_integer_sequence<int, N>{});
}

template <class... Ts>
__device__ constexpr auto sum_all(Ts... ts) { return (ts + ... + 0); }

__global__ void __launch_bounds__(256) scale_params(const __grid_constant__ Params p) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < p.n) p.y[i] = p.x[i] * p.scale + sum_all(1, 2, 3);
}

template <class T>
__global__ void vec_copy(const T* __restrict__ in, T* __restrict__ out, int n) {
  using V = Vec16<T>;
  constexpr int W = kVec<T>;
  const int base = (blockIdx.x * blockDim.x + threadIdx.x) * W;
  if (base + W <= n) {
    V v = *reinterpret_cast<const V*>(in + base);
    static_for<W>([&](auto k) {
      constexpr int j = decltype(k)::value;
      if constexpr (cuda::std::is_same_v<T, float>) v.v[j] = v.v[j] * 2.f;
      else v.v[j] = v.v[j] + v.v[j];
    });
    *reinterpret_cast<V*>(out + base) = v;
  } else {
    for (int j = base; j < n; ++j) out[j] = in[j];
  }
}

template <class T, class = cuda::std::enable_if_t<cuda::std::is_floating_point_v<T>>>
__global__ void arr_reduce(const T* in, T* out, int n) {
  cuda::std::array<T, 4> acc{};
  for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += gridDim.x * blockDim.x)
    acc[i & 3] += in[i];
  auto [a, b, c, d] = acc;
  if (a + b + c + d != T(0)) atomicAdd(out, a + b + c + d);
}

template __global__ void vec_copy<float>(const float*, float*, int);
template __global__ void vec_copy<__half>(const __half*, __half*, int);
template __global__ void arr_reduce<float>(const float*, float*, int);
