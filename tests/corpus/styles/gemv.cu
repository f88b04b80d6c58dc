// GEMV as quantised-inference code writes it: a warp per row, vectorised loads, launch
// bounds from template parameters, a bf16 weight variant and a split-K partial sum.
#include <cuda_bf16.h>
#include <cstdint>

#define WARP_SIZE 32
#define DIV_UP(a, b) (((a) + (b) - 1) / (b))

template <int ROWS_PER_BLOCK, int THREADS>
__global__ void __launch_bounds__(THREADS) gemv_warp_per_row(const float* __restrict__ A, const float* __restrict__ x,
                                                             float* __restrict__ y, int rows, int cols) {
  static_assert(THREADS == ROWS_PER_BLOCK * WARP_SIZE, "one warp per row");
  const int row = blockIdx.x * ROWS_PER_BLOCK + threadIdx.x / WARP_SIZE;
  const int lane = threadIdx.x & (WARP_SIZE - 1);
  if (row >= rows) return;
  const float4* a4 = reinterpret_cast<const float4*>(A + static_cast<int64_t>(row) * cols);
  const float4* x4 = reinterpret_cast<const float4*>(x);
  float acc = 0.f;
  for (int c = lane; c < cols / 4; c += WARP_SIZE) {
    const float4 a = a4[c], b = x4[c];
    acc += a.x * b.x + a.y * b.y + a.z * b.z + a.w * b.w;
  }
#pragma unroll
  for (int o = WARP_SIZE / 2; o > 0; o >>= 1) acc += __shfl_xor_sync(0xffffffff, acc, o);
  if (lane == 0) y[row] = acc;
}

template <int kSplits>
__global__ void gemv_bf16_splitk(const __nv_bfloat16* __restrict__ W, const float* __restrict__ x,
                                 float* __restrict__ partial, int rows, int cols) {
  const int row = blockIdx.x * blockDim.y + threadIdx.y;
  const int split = blockIdx.y;
  if (row >= rows) return;
  const int chunk = DIV_UP(cols, kSplits);
  const int begin = split * chunk, end = min(cols, begin + chunk);
  float acc = 0.f;
  for (int c = begin + threadIdx.x; c < end; c += blockDim.x)
    acc += __bfloat162float(W[static_cast<int64_t>(row) * cols + c]) * x[c];
  for (int o = 16; o > 0; o >>= 1) acc += __shfl_down_sync(0xffffffff, acc, o);
  if (threadIdx.x == 0) partial[split * rows + row] = acc;
}

__global__ void reduce_splits(const float* __restrict__ partial, float* __restrict__ y, int rows, int splits) {
  const int r = blockIdx.x * blockDim.x + threadIdx.x;
  if (r >= rows) return;
  float s = 0.f;
  for (int k = 0; k < splits; ++k) s += partial[k * rows + r];
  y[r] = s;
}
