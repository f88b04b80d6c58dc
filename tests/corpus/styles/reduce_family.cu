// A training library's block reductions: an enum picks the operation, the primary template is
// only declared, and each (operation, count) has an explicit specialisation that synchronises
// the block through shared memory; row norms built on them, one row per block.
#include <cuda_fp16.h>

enum class Reduce { kSum = 0, kMax };
constexpr unsigned kFullMask = 0xffffffffu;

template <Reduce R, int N>
__inline__ __device__ void block_reduce(float* values);

template <>
__inline__ __device__ void block_reduce<Reduce::kSum, 2>(float* values) {
  __shared__ float partial[32][2];
  const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
  for (int k = 0; k < 2; ++k)
    for (int offset = 16; offset > 0; offset >>= 1) values[k] += __shfl_xor_sync(kFullMask, values[k], offset);
  if (lane == 0) {
    partial[warp][0] = values[0];
    partial[warp][1] = values[1];
  }
  __syncthreads();
  const bool live = threadIdx.x < (blockDim.x >> 5);
  for (int k = 0; k < 2; ++k) {
    values[k] = live ? partial[lane][k] : 0.f;
    for (int offset = 16; offset > 0; offset >>= 1) values[k] += __shfl_xor_sync(kFullMask, values[k], offset);
  }
}

template <>
__inline__ __device__ void block_reduce<Reduce::kMax, 1>(float* values) {
  __shared__ float partial[32];
  const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
  for (int offset = 16; offset > 0; offset >>= 1)
    values[0] = fmaxf(values[0], __shfl_xor_sync(kFullMask, values[0], offset));
  if (lane == 0) partial[warp] = values[0];
  __syncthreads();
  values[0] = threadIdx.x < (blockDim.x >> 5) ? partial[lane] : -1e30f;
  for (int offset = 16; offset > 0; offset >>= 1)
    values[0] = fmaxf(values[0], __shfl_xor_sync(kFullMask, values[0], offset));
}

template <typename T>
__global__ void layer_norm_rows(T* out, const T* in, const float* gamma, const float* beta, int cols, float eps) {
  const T* row = in + blockIdx.x * cols;
  float stats[2] = {0.f, 0.f};
  for (int c = threadIdx.x; c < cols; c += blockDim.x) {
    const float v = float(row[c]);
    stats[0] += v;
    stats[1] += v * v;
  }
  block_reduce<Reduce::kSum, 2>(stats);
  __shared__ float mean, rstd;
  if (threadIdx.x == 0) {
    mean = stats[0] / cols;
    rstd = rsqrtf(stats[1] / cols - mean * mean + eps);
  }
  __syncthreads();
  for (int c = threadIdx.x; c < cols; c += blockDim.x)
    out[blockIdx.x * cols + c] = T((float(row[c]) - mean) * rstd * gamma[c] + beta[c]);
}

__global__ void row_exp_minus_max(float* out, const float* in, int cols) {
  const float* row = in + blockIdx.x * cols;
  float top[1] = {-1e30f};
  for (int c = threadIdx.x; c < cols; c += blockDim.x) top[0] = fmaxf(top[0], row[c]);
  block_reduce<Reduce::kMax, 1>(top);
  __shared__ float row_max;
  if (threadIdx.x == 0) row_max = top[0];
  __syncthreads();
  for (int c = threadIdx.x; c < cols; c += blockDim.x) out[blockIdx.x * cols + c] = __expf(row[c] - row_max);
}
