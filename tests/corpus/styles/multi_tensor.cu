// Multi-tensor optimiser steps as training frameworks write them: one variadic kernel
// template that hands a chunk table (a big struct by value, its array sizes taken from a
// constexpr table) and trailing arguments to a functor; functors with operator() taking
// the table by reference; aligned vector loads through std::aligned_storage; a C-style enum.
#include <cuda.h>
#include <cuda_runtime.h>
#include <cuda_fp16.h>
#include <type_traits>

constexpr int kMaxTensors[4] = {96, 64, 48, 32};
constexpr int kMaxChunks[4] = {256, 256, 256, 256};

template <int kLists>
struct ChunkTable {
  void* lists[kLists][kMaxTensors[kLists - 1]];
  int numel[kMaxTensors[kLists - 1]];
  unsigned char tensor_of_block[kMaxChunks[kLists - 1]];
  int chunk_of_block[kMaxChunks[kLists - 1]];
};

template <typename Table, typename Functor, typename... Extra>
__global__ void apply_chunks(int64_t chunk, volatile int* overflow, Table table, Functor step, Extra... extra) {
  step(chunk, overflow, table, extra...);
}

#define VEC 4

template <typename T>
__device__ __forceinline__ bool vector_ready(const T* p) {
  return reinterpret_cast<uint64_t>(p) % (VEC * sizeof(T)) == 0;
}

template <typename T>
__device__ __forceinline__ void copy_vec(T* dst, const T* src, int dst_at, int src_at) {
  using Vec = typename std::aligned_storage<VEC * sizeof(T), VEC * alignof(T)>::type;
  reinterpret_cast<Vec*>(dst)[dst_at] = reinterpret_cast<const Vec*>(src)[src_at];
}

typedef enum { DECAY_IN_GRAD = 0, DECAY_DECOUPLED = 1 } decay_mode_t;

template <typename T>
struct AdamStep {
  __device__ __forceinline__ void operator()(int64_t chunk, volatile int*, ChunkTable<4>& t, float b1, float b2,
                                             float c1, float c2, float eps, float lr, decay_mode_t mode, float decay) {
    const int tensor = t.tensor_of_block[blockIdx.x];
    const int64_t offset = t.chunk_of_block[blockIdx.x] * chunk;
    const int64_t n = min(static_cast<int64_t>(t.numel[tensor]) - offset, chunk);
    T* grad = static_cast<T*>(t.lists[0][tensor]) + offset;
    T* param = static_cast<T*>(t.lists[1][tensor]) + offset;
    T* m1 = static_cast<T*>(t.lists[2][tensor]) + offset;
    T* m2 = static_cast<T*>(t.lists[3][tensor]) + offset;
    for (int64_t start = 0; start < n; start += static_cast<int64_t>(blockDim.x) * VEC) {
      float g[VEC], p[VEC], m[VEC], v[VEC];
#pragma unroll
      for (int k = 0; k < VEC; ++k) {
        const int64_t i = start + threadIdx.x + k * blockDim.x;
        const bool in = i < n;
        g[k] = in ? static_cast<float>(grad[i]) : 0.f;
        p[k] = in ? static_cast<float>(param[i]) : 0.f;
        m[k] = in ? static_cast<float>(m1[i]) : 0.f;
        v[k] = in ? static_cast<float>(m2[i]) : 0.f;
      }
#pragma unroll
      for (int k = 0; k < VEC; ++k) {
        if (mode == DECAY_IN_GRAD) g[k] += decay * p[k];
        m[k] = b1 * m[k] + (1.f - b1) * g[k];
        v[k] = b2 * v[k] + (1.f - b2) * g[k] * g[k];
        float update = (m[k] / c1) / (sqrtf(v[k] / c2) + eps);
        if (mode == DECAY_DECOUPLED) update += decay * p[k];
        p[k] -= lr * update;
      }
#pragma unroll
      for (int k = 0; k < VEC; ++k) {
        const int64_t i = start + threadIdx.x + k * blockDim.x;
        if (i < n) {
          param[i] = static_cast<T>(p[k]);
          m1[i] = static_cast<T>(m[k]);
          m2[i] = static_cast<T>(v[k]);
        }
      }
    }
  }
};

template <typename In, typename Out>
struct ScaleStep {
  __device__ __forceinline__ void operator()(int64_t chunk, volatile int* overflow, ChunkTable<2>& t, float scale) {
    const int tensor = t.tensor_of_block[blockIdx.x];
    const int64_t offset = t.chunk_of_block[blockIdx.x] * chunk;
    const int64_t n = min(static_cast<int64_t>(t.numel[tensor]) - offset, chunk);
    const In* in = static_cast<const In*>(t.lists[0][tensor]) + offset;
    Out* out = static_cast<Out*>(t.lists[1][tensor]) + offset;
    bool finite = true;
    In a[VEC];
    Out b[VEC];
    if (n % VEC == 0 && vector_ready(in) && vector_ready(out)) {
      for (int64_t v = threadIdx.x; v * VEC < n; v += blockDim.x) {
        copy_vec(a, in, 0, static_cast<int>(v));
#pragma unroll
        for (int k = 0; k < VEC; ++k) {
          b[k] = static_cast<Out>(static_cast<float>(a[k]) * scale);
          finite = finite && isfinite(static_cast<float>(a[k]));
        }
        copy_vec(out, b, static_cast<int>(v), 0);
      }
    } else {
      for (int64_t i = threadIdx.x; i < n; i += blockDim.x) {
        const float x = static_cast<float>(in[i]);
        out[i] = static_cast<Out>(x * scale);
        finite = finite && isfinite(x);
      }
    }
    if (!finite) *overflow = 1;
  }
};
