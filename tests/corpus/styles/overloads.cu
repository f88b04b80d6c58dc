// Kernel templates that share a name, told apart as the compiler tells them apart (SFINAE on
// the return type, SFINAE on a defaulted template parameter), beside a conversion-traits
// family and a packed vector with operators: a residual RMSNorm as serving libraries write it.
#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <type_traits>

namespace serve {

template <typename T>
struct Convert {
  static constexpr bool kPacked = false;
};

template <>
struct Convert<__half> {
  static constexpr bool kPacked = true;
  using Scalar = __half;
  __device__ static inline float to(Scalar x) { return __half2float(x); }
  __device__ static inline Scalar from(float x) { return __float2half_rn(x); }
};

template <>
struct Convert<__nv_bfloat16> {
  static constexpr bool kPacked = true;
  using Scalar = __nv_bfloat16;
  __device__ static inline float to(Scalar x) { return __bfloat162float(x); }
  __device__ static inline Scalar from(float x) { return __float2bfloat16(x); }
};

template <typename T, int W>
struct alignas(sizeof(T) * W) Pack {
  static_assert(W > 0 && (W & (W - 1)) == 0, "a power of two");
  using C = Convert<T>;
  T v[W];

  __device__ Pack& operator+=(const Pack& other) {
#pragma unroll
    for (int i = 0; i < W; ++i) v[i] = C::from(C::to(v[i]) + C::to(other.v[i]));
    return *this;
  }

  __device__ float squares() const {
    float total = 0.f;
#pragma unroll
    for (int i = 0; i < W; ++i) {
      const float x = C::to(v[i]);
      total += x * x;
    }
    return total;
  }

  __device__ Pack& scale(float s, const Pack& weight) {
#pragma unroll
    for (int i = 0; i < W; ++i) v[i] = C::from(C::to(v[i]) * s * C::to(weight.v[i]));
    return *this;
  }
};

template <int kThreads>
__device__ float block_total(float v, float* shared) {
#pragma unroll
  for (int o = 16; o > 0; o >>= 1) v += __shfl_xor_sync(0xffffffffu, v, o);
  if ((threadIdx.x & 31) == 0) shared[threadIdx.x >> 5] = v;
  __syncthreads();
  if (threadIdx.x < 32) {
    v = threadIdx.x < kThreads / 32 ? shared[threadIdx.x] : 0.f;
#pragma unroll
    for (int o = 16; o > 0; o >>= 1) v += __shfl_xor_sync(0xffffffffu, v, o);
    if (threadIdx.x == 0) shared[0] = v;
  }
  __syncthreads();
  return shared[0];
}

// 16-bit types in packs of W: x += residual; residual = x; x = rmsnorm(x) * w (one block per row)
template <typename T, int W, int kThreads>
__global__ std::enable_if_t<(W > 1) && Convert<T>::kPacked>
add_rms_norm(T* __restrict__ x, T* __restrict__ residual, const T* __restrict__ weight, float eps, int hidden) {
  static_assert(sizeof(Pack<T, W>) == sizeof(T) * W, "no padding");
  __shared__ float partial[kThreads / 32];
  auto* xs = reinterpret_cast<Pack<T, W>*>(x) + static_cast<size_t>(blockIdx.x) * (hidden / W);
  auto* rs = reinterpret_cast<Pack<T, W>*>(residual) + static_cast<size_t>(blockIdx.x) * (hidden / W);
  const auto* ws = reinterpret_cast<const Pack<T, W>*>(weight);
  float ss = 0.f;
  for (int i = threadIdx.x; i < hidden / W; i += kThreads) {
    Pack<T, W> p = xs[i];
    p += rs[i];
    ss += p.squares();
    rs[i] = p;
  }
  const float inv = rsqrtf(block_total<kThreads>(ss, partial) / hidden + eps);
  for (int i = threadIdx.x; i < hidden / W; i += kThreads) {
    Pack<T, W> p = rs[i];
    xs[i] = p.scale(inv, ws[i]);
  }
}

// everything else, one value at a time
template <typename T, int W, int kThreads>
__global__ std::enable_if_t<(W == 1) || !Convert<T>::kPacked>
add_rms_norm(T* __restrict__ x, T* __restrict__ residual, const T* __restrict__ weight, float eps, int hidden) {
  __shared__ float partial[kThreads / 32];
  T* xr = x + static_cast<size_t>(blockIdx.x) * hidden;
  T* rr = residual + static_cast<size_t>(blockIdx.x) * hidden;
  float ss = 0.f;
  for (int i = threadIdx.x; i < hidden; i += kThreads) {
    const float v = static_cast<float>(xr[i]) + static_cast<float>(rr[i]);
    rr[i] = static_cast<T>(v);
    ss += v * v;
  }
  const float inv = rsqrtf(block_total<kThreads>(ss, partial) / hidden + eps);
  for (int i = threadIdx.x; i < hidden; i += kThreads)
    xr[i] = static_cast<T>(static_cast<float>(rr[i]) * inv * static_cast<float>(weight[i]));
}

// SFINAE on a defaulted template parameter: vectorised where kVec > 1
template <typename T, int kVec, std::enable_if_t<(kVec > 1), int> = 0>
__global__ void scale_rows(const T* __restrict__ in, T* __restrict__ out, float s, int n) {
  const int i = (blockIdx.x * blockDim.x + threadIdx.x) * kVec;
  if (i + kVec > n) return;
  Pack<T, kVec> p = *reinterpret_cast<const Pack<T, kVec>*>(in + i);
#pragma unroll
  for (int j = 0; j < kVec; ++j) p.v[j] = static_cast<T>(static_cast<float>(p.v[j]) * s);
  *reinterpret_cast<Pack<T, kVec>*>(out + i) = p;
}

template <typename T, int kVec, std::enable_if_t<(kVec == 1), int> = 0>
__global__ void scale_rows(const T* __restrict__ in, T* __restrict__ out, float s, int n) {
  const int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) out[i] = static_cast<T>(static_cast<float>(in[i]) * s - 1.f);
}

}  // namespace serve

void add_rms_norm_half(__half* x, __half* r, const __half* w, int tokens, int hidden) {
  serve::add_rms_norm<__half, 8, 128><<<tokens, 128>>>(x, r, w, 1e-6f, hidden);
}
