// What newer library code reaches for: traits read as ns::Trait<T>::member (a primary
// declared only, its specialisations defined), CRTP functors, if constexpr on types,
// fold expressions, _Pragma in macros, __builtin_expect, cuda::std::bit_cast and
// structured bindings, warp match/reduce intrinsics, fp8 conversions, cuda::atomic_ref,
// extern "C", static and anonymous-namespace kernels, a __grid_constant__ parameter block,
// __maxnreg__, Hopper thread block clusters (refused: a fused grid cannot keep them).
#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_fp8.h>
#include <cooperative_groups.h>
#include <cuda/atomic>
#include <cuda/std/bit>
#include <cuda/std/type_traits>
#include <cuda/std/utility>
#include <cstdint>

_Pragma("nv_diag_suppress 177")

#define UNROLL _Pragma("unroll")
#define LIKELY(x) __builtin_expect(!!(x), 1)

namespace cg = cooperative_groups;

namespace kern {
namespace detail {

template <typename T> struct PackOf;
template <> struct PackOf<half> { using type = half2; static constexpr int width = 2; };
template <> struct PackOf<__nv_bfloat16> { using type = __nv_bfloat162; static constexpr int width = 2; };
template <> struct PackOf<float> { using type = float2; static constexpr int width = 2; };

template <typename Derived>
struct Activation {
  template <typename T>
  __device__ __forceinline__ T operator()(T x) const { return static_cast<const Derived*>(this)->apply(x); }
};

struct Silu : Activation<Silu> {
  __device__ __forceinline__ float apply(float x) const { return x / (1.f + __expf(-x)); }
};
struct GeluTanh : Activation<GeluTanh> {
  __device__ __forceinline__ float apply(float x) const {
    constexpr float kSqrt2OverPi = 0.7978845608f;
    return 0.5f * x * (1.f + tanhf(kSqrt2OverPi * (x + 0.044715f * x * x * x)));
  }
};

template <typename T>
__device__ __forceinline__ float widen(T v) {
  if constexpr (cuda::std::is_same_v<T, half>) return __half2float(v);
  else if constexpr (cuda::std::is_same_v<T, __nv_bfloat16>) return __bfloat162float(v);
  else return static_cast<float>(v);
}

template <typename T>
__device__ __forceinline__ T narrow(float v) {
  if constexpr (cuda::std::is_same_v<T, half>) return __float2half_rn(v);
  else if constexpr (cuda::std::is_same_v<T, __nv_bfloat16>) return __float2bfloat16_rn(v);
  else return static_cast<T>(v);
}

template <typename... Ts>
__device__ __forceinline__ float sum_of(Ts... vs) { return (0.f + ... + vs); }

}  // namespace detail

// out[t, i] = act(x[t, i]) * x[t, d + i], 16-byte vectors where the row allows
template <typename T, typename Act, int kVec = 8>
__global__ void __launch_bounds__(256) act_and_mul(T* __restrict__ out, const T* __restrict__ in, int64_t d) {
  static_assert(kVec % detail::PackOf<T>::width == 0, "whole packs per vector");
  const int64_t token = blockIdx.x;
  const T* x = in + token * 2 * d;
  const T* y = x + d;
  T* o = out + token * d;
  const Act act{};
  for (int64_t i = static_cast<int64_t>(threadIdx.x) * kVec; i < d; i += static_cast<int64_t>(blockDim.x) * kVec) {
    if (LIKELY(i + kVec <= d)) {
      alignas(16) T xv[kVec];
      alignas(16) T yv[kVec];
      *reinterpret_cast<uint4*>(xv) = __ldg(reinterpret_cast<const uint4*>(x + i));
      *reinterpret_cast<uint4*>(yv) = __ldg(reinterpret_cast<const uint4*>(y + i));
      UNROLL
      for (int k = 0; k < kVec; ++k) xv[k] = detail::narrow<T>(act(detail::widen(xv[k])) * detail::widen(yv[k]));
      *reinterpret_cast<uint4*>(o + i) = *reinterpret_cast<uint4*>(xv);
    } else {
      for (int64_t k = i; k < d; ++k) o[k] = detail::narrow<T>(act(detail::widen(x[k])) * detail::widen(y[k]));
    }
  }
}

// a histogram of the top byte of each float's bits: one atomic per group of equal keys
__global__ void top_byte_histogram(const float* __restrict__ in, uint32_t* __restrict__ out, int* __restrict__ hist,
                                   int n) {
  const int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i >= n) return;
  const unsigned active = __activemask();
  const uint32_t bits = cuda::std::bit_cast<uint32_t>(in[i]);
  const uint32_t key = bits >> 24;
  const unsigned peers = __match_any_sync(active, key);
  if ((threadIdx.x & 31) == __ffs(peers) - 1) atomicAdd(&hist[key], __popc(peers));
  const unsigned odd = __reduce_add_sync(active, bits & 1u);
  const auto [hi, lo] = cuda::std::pair<uint32_t, uint32_t>{bits >> 16, bits & 0xffffu};
  out[i] = __byte_perm(hi, lo, 0x5410) + odd + static_cast<uint32_t>(detail::sum_of(1.f, 2.f, 3.f));
}

}  // namespace kern

template __global__ void kern::act_and_mul<half, kern::detail::Silu>(half*, const half*, int64_t);
template __global__ void kern::act_and_mul<__nv_bfloat16, kern::detail::GeluTanh>(__nv_bfloat16*,
                                                                                   const __nv_bfloat16*, int64_t);

extern "C" __global__ void c_scale(float* __restrict__ out, const float* __restrict__ in, float s, int n) {
  const int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) out[i] = in[i] * s;
}

static __global__ void static_relu(float* out, const float* in, int n) {
  for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += gridDim.x * blockDim.x) out[i] = fmaxf(in[i], 0.f);
}

namespace {
__global__ void anonymous_square(float* out, const float* in, int n) {
  const int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) out[i] = in[i] * in[i];
}
}  // namespace

struct ScaleParams {
  const float* in;
  float* out;
  int n;
  float scale;
};

__global__ void scale_by_params(const __grid_constant__ ScaleParams p) {
  const int i = blockIdx.x * blockDim.x + threadIdx.x;
  const ScaleParams* q = &p;  // the address of a __grid_constant__ parameter
  if (i < q->n) q->out[i] = q->in[i] * q->scale;
}

__global__ void __maxnreg__(64) capped_sin(float* out, const float* in, int n) {
  const int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) out[i] = sinf(in[i]);
}

__global__ void to_fp8(__nv_fp8_e4m3* out, const float* in, float inv_scale, int n) {
  const int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) out[i] = __nv_fp8_e4m3(in[i] * inv_scale);
}

// max |x| over the grid: warp shuffles, one shared slot per warp, a CAS loop on the result
__global__ void abs_max(const float* in, float* result, int n) {
  __shared__ float per_warp[32];
  float m = 0.f;
  for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += gridDim.x * blockDim.x) m = fmaxf(m, fabsf(in[i]));
  for (int o = 16; o > 0; o >>= 1) m = fmaxf(m, __shfl_xor_sync(0xffffffffu, m, o));
  if ((threadIdx.x & 31) == 0) per_warp[threadIdx.x >> 5] = m;
  __syncthreads();
  if (threadIdx.x < 32) {
    m = threadIdx.x < (blockDim.x >> 5) ? per_warp[threadIdx.x] : 0.f;
    for (int o = 16; o > 0; o >>= 1) m = fmaxf(m, __shfl_xor_sync(0xffffffffu, m, o));
    if (threadIdx.x == 0) {
      cuda::atomic_ref<float, cuda::thread_scope_device> r(*result);
      float seen = r.load();
      while (seen < m && !r.compare_exchange_weak(seen, m)) {
      }
    }
  }
}

// blocks of a pair of a cluster read each other's shared memory
__global__ void __cluster_dims__(2, 1, 1) swap_in_cluster(float* out, const float* in) {
  cg::cluster_group cluster = cg::this_cluster();
  __shared__ float mine[128];
  mine[threadIdx.x] = in[blockIdx.x * blockDim.x + threadIdx.x];
  cluster.sync();
  const float* other = cluster.map_shared_rank(mine, cluster.block_rank() ^ 1);
  out[blockIdx.x * blockDim.x + threadIdx.x] = other[threadIdx.x];
  cluster.sync();
}
