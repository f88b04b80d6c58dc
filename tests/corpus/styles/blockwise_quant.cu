// Blockwise 8-bit / 4-bit quantisation as optimiser and quantisation libraries write it:
// CUB block loads, stores and reductions through typedefs in the kernel, a C-style enum as
// a template argument, a __device__ lookup table, '#pragma unroll' with a template count,
// explicit instantiations stamped out by a macro, the <cub/cub.cuh> umbrella, float.h.
#include <cuda_fp16.h>
#include <cub/cub.cuh>
#include <float.h>

#define CODE_SIZE 256

typedef enum QuantKind_t { Linear8 = 0, Table4 = 1 } QuantKind_t;

// sixteen levels of a 4-bit code, ascending in [-1, 1]
__device__ static float table4_levels[16] = {-1.0f, -0.75f, -0.5625f, -0.4375f, -0.3125f, -0.1875f, -0.0625f, 0.0f,
                                             0.0625f, 0.1875f, 0.3125f, 0.4375f, 0.5625f, 0.6875f, 0.8125f, 1.0f};

// nearest level of table4_levels by bisection over its 16 entries
__device__ __forceinline__ unsigned char nearest_table4(float x) {
  int lo = 0, hi = 15;
  while (hi - lo > 1) {
    const int mid = (lo + hi) >> 1;
    if (x >= table4_levels[mid]) lo = mid; else hi = mid;
  }
  return (x - table4_levels[lo] <= table4_levels[hi] - x) ? lo : hi;
}

// a linear 8-bit code: 0..255 over [-1, 1]
template <bool kClamp>
__device__ unsigned char linear8(float x) {
  float scaled = (x + 1.0f) * 127.5f;
  if (kClamp) scaled = fminf(fmaxf(scaled, 0.0f), 255.0f);
  return static_cast<unsigned char>(__float2int_rn(scaled));
}

template <typename T, int TILE, int PER_THREAD, int KIND>
__global__ void quantize_blockwise(const T* __restrict__ in, float* __restrict__ scales, unsigned char* __restrict__ out,
                                   const int n) {
  constexpr int kThreads = TILE / PER_THREAD;
  constexpr int kOut = (KIND == Table4) ? PER_THREAD / 2 : PER_THREAD;
  typedef cub::BlockLoad<T, kThreads, PER_THREAD, cub::BLOCK_LOAD_WARP_TRANSPOSE> Loader;
  typedef cub::BlockStore<unsigned char, kThreads, kOut, cub::BLOCK_STORE_WARP_TRANSPOSE> Storer;
  typedef cub::BlockReduce<float, kThreads> Reducer;
  __shared__ typename Loader::TempStorage load_space;
  __shared__ typename Storer::TempStorage store_space;
  __shared__ typename Reducer::TempStorage reduce_space;
  __shared__ float tile_scale;

  T values[PER_THREAD];
  unsigned char codes[kOut];
  for (int base = blockIdx.x * TILE; base < n; base += gridDim.x * TILE) {
    const int valid = min(TILE, n - base);
    __syncthreads();
    Loader(load_space).Load(in + base, values, valid, T(0.0f));
    float local = -FLT_MAX;
#pragma unroll PER_THREAD
    for (int j = 0; j < PER_THREAD; ++j) local = fmaxf(local, fabsf(static_cast<float>(values[j])));
    const float amax = Reducer(reduce_space).Reduce(local, cuda::maximum<>{}, valid);
    if (threadIdx.x == 0) {
      tile_scale = amax;
      scales[base / TILE] = amax;
    }
    __syncthreads();
    const float inv = tile_scale > 0.0f ? 1.0f / tile_scale : 0.0f;
    if (KIND == Linear8) {
#pragma unroll PER_THREAD
      for (int j = 0; j < PER_THREAD; ++j) codes[j] = linear8<true>(static_cast<float>(values[j]) * inv);
    } else {
#pragma unroll
      for (int j = 0; j < kOut; ++j)
        codes[j] = (nearest_table4(static_cast<float>(values[2 * j]) * inv) << 4) |
                   nearest_table4(static_cast<float>(values[2 * j + 1]) * inv);
    }
    __syncthreads();
    Storer(store_space).Store(out + (KIND == Table4 ? base / 2 : base), codes, KIND == Table4 ? (valid + 1) / 2 : valid);
  }
}

template <typename T, int TILE, int THREADS, int PER_THREAD, int KIND>
__global__ void dequantize_blockwise(const unsigned char* __restrict__ codes, const float* __restrict__ scales,
                                     T* __restrict__ out, const int group, const int n) {
  constexpr int kValues = PER_THREAD * (KIND == Table4 ? 2 : 1);
  typedef cub::BlockLoad<unsigned char, THREADS, PER_THREAD, cub::BLOCK_LOAD_WARP_TRANSPOSE> Loader;
  typedef cub::BlockStore<T, THREADS, kValues, cub::BLOCK_STORE_WARP_TRANSPOSE> Storer;
  __shared__ typename Loader::TempStorage load_space;
  __shared__ typename Storer::TempStorage store_space;
  unsigned char q[PER_THREAD];
  T values[kValues];
  const int packed = KIND == Table4 ? (n + 1) / 2 : n;
  for (int base = blockIdx.x * TILE; base < packed; base += gridDim.x * TILE) {
    const int valid = min(TILE, packed - base);
    const int valid_out = KIND == Table4 ? min(2 * TILE, n - 2 * base) : valid;
    __syncthreads();
    Loader(load_space).Load(codes + base, q, valid, 0);
    const int first = (KIND == Table4 ? 2 * base : base) + threadIdx.x * kValues;
    const float scale = __ldg(&scales[min(first, n - 1) / group]);
    switch (KIND) {
      case Linear8:
#pragma unroll PER_THREAD
        for (int j = 0; j < PER_THREAD; ++j) values[j] = static_cast<T>((q[j] / 127.5f - 1.0f) * scale);
        break;
      case Table4:
#pragma unroll PER_THREAD
        for (int j = 0; j < PER_THREAD; ++j) {
          values[2 * j] = static_cast<T>(table4_levels[q[j] >> 4] * scale);
          values[2 * j + 1] = static_cast<T>(table4_levels[q[j] & 0x0F] * scale);
        }
        break;
    }
    __syncthreads();
    Storer(store_space).Store(out + (KIND == Table4 ? 2 * base : base), values, valid_out);
  }
}

#define INSTANTIATE_QUANTIZE(T, TILE, PER_THREAD, KIND)                                                   \
  template __global__ void quantize_blockwise<T, TILE, PER_THREAD, KIND>(const T* __restrict__, float* __restrict__, \
                                                                          unsigned char* __restrict__, const int);

INSTANTIATE_QUANTIZE(half, 1024, 4, Linear8)
INSTANTIATE_QUANTIZE(float, 256, 2, Table4)

template __global__ void dequantize_blockwise<half, 512, 64, 8, Linear8>(const unsigned char* __restrict__,
                                                                         const float* __restrict__, half* __restrict__,
                                                                         const int, const int);
template __global__ void dequantize_blockwise<float, 512, 64, 8, Table4>(const unsigned char* __restrict__,
                                                                         const float* __restrict__, float* __restrict__,
                                                                         const int, const int);
