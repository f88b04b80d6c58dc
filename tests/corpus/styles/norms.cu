// Normalisation kernels: RMSNorm with a shared-memory block reduction, LayerNorm with
// cooperative groups' constexpr tiles, templates on the type and the block size.
#include <cooperative_groups.h>
#include <cooperative_groups/reduce.h>
#include <cuda_fp16.h>

namespace cg = cooperative_groups;

namespace norms {

constexpr int kWarp = 32;

template <typename T>
__device__ __forceinline__ float to_float(T v) { return static_cast<float>(v); }
template <>
__device__ __forceinline__ float to_float<__half>(__half v) { return __half2float(v); }

template <typename T>
__device__ __forceinline__ T from_float(float v) { return static_cast<T>(v); }
template <>
__device__ __forceinline__ __half from_float<__half>(float v) { return __float2half_rn(v); }

template <int kThreads>
__device__ float block_sum(float v, float* shared) {
  static_assert(kThreads % kWarp == 0, "whole warps");
  for (int o = kWarp / 2; o > 0; o /= 2) v += __shfl_down_sync(0xffffffffu, v, o);
  const int warp = threadIdx.x / kWarp, lane = threadIdx.x % kWarp;
  if (lane == 0) shared[warp] = v;
  __syncthreads();
  v = threadIdx.x < kThreads / kWarp ? shared[lane] : 0.f;
  if (warp == 0) {
    for (int o = kWarp / 2; o > 0; o /= 2) v += __shfl_down_sync(0xffffffffu, v, o);
    if (lane == 0) shared[0] = v;
  }
  __syncthreads();
  return shared[0];
}

// one block per row
template <typename T, int kThreads>
__global__ void __launch_bounds__(kThreads) rms_norm(const T* __restrict__ x, const T* __restrict__ w,
                                                     T* __restrict__ y, int cols, float eps) {
  __shared__ float partial[kThreads / kWarp];
  const T* row = x + static_cast<size_t>(blockIdx.x) * cols;
  float ss = 0.f;
  for (int c = threadIdx.x; c < cols; c += kThreads) {
    const float v = to_float(row[c]);
    ss += v * v;
  }
  const float total = block_sum<kThreads>(ss, partial);
  const float inv = rsqrtf(total / cols + eps);
  for (int c = threadIdx.x; c < cols; c += kThreads)
    y[static_cast<size_t>(blockIdx.x) * cols + c] = from_float<T>(to_float(row[c]) * inv * to_float(w[c]));
}

// one warp-sized tile per row, LayerNorm without affine
template <int kTile>
__global__ void layer_norm_tiles(const float* __restrict__ x, float* __restrict__ y, int rows, int cols) {
  auto block = cg::this_thread_block();
  auto tile = cg::tiled_partition<kTile>(block);
  const int row = blockIdx.x * (blockDim.x / kTile) + tile.meta_group_rank();
  if (row >= rows) return;
  const float* r = x + static_cast<size_t>(row) * cols;
  float s = 0.f;
  for (int c = tile.thread_rank(); c < cols; c += kTile) s += r[c];
  const float mean = cg::reduce(tile, s, cg::plus<float>()) / cols;
  float v = 0.f;
  for (int c = tile.thread_rank(); c < cols; c += kTile) v += (r[c] - mean) * (r[c] - mean);
  const float rstd = rsqrtf(cg::reduce(tile, v, cg::plus<float>()) / cols + 1e-5f);
  for (int c = tile.thread_rank(); c < cols; c += kTile) y[static_cast<size_t>(row) * cols + c] = (r[c] - mean) * rstd;
}

}  // namespace norms
