// CUB as libraries write it: an alias of the block reduction, a warp reduction through a
// namespace alias, a block-level softmax that needs its whole block.
#include <cub/cub.cuh>
#include <cfloat>

namespace kernels {

template <int kThreads>
using BlockReduceT = cub::BlockReduce<float, kThreads>;

struct MaxOp {
  __device__ __forceinline__ float operator()(float a, float b) const { return fmaxf(a, b); }
};

template <int kThreads>
__global__ void row_softmax(const float* __restrict__ x, float* __restrict__ y, int cols) {
  __shared__ typename BlockReduceT<kThreads>::TempStorage storage;
  __shared__ float row_max, row_sum;
  const float* row = x + static_cast<size_t>(blockIdx.x) * cols;
  float m = -FLT_MAX;
  for (int c = threadIdx.x; c < cols; c += kThreads) m = fmaxf(m, row[c]);
  m = BlockReduceT<kThreads>(storage).Reduce(m, MaxOp());
  if (threadIdx.x == 0) row_max = m;
  __syncthreads();
  float s = 0.f;
  for (int c = threadIdx.x; c < cols; c += kThreads) s += __expf(row[c] - row_max);
  s = BlockReduceT<kThreads>(storage).Sum(s);
  if (threadIdx.x == 0) row_sum = s;
  __syncthreads();
  for (int c = threadIdx.x; c < cols; c += kThreads)
    y[static_cast<size_t>(blockIdx.x) * cols + c] = __expf(row[c] - row_max) / row_sum;
}

namespace c = cub;
__global__ void warp_dot(const float* __restrict__ a, const float* __restrict__ b, float* __restrict__ out, int n) {
  using WarpReduce = c::WarpReduce<float>;
  __shared__ typename WarpReduce::TempStorage temp[4];
  const int warp = threadIdx.x / 32;
  const int i = blockIdx.x * blockDim.x + threadIdx.x;
  const float v = i < n ? a[i] * b[i] : 0.f;
  const float s = WarpReduce(temp[warp]).Sum(v);
  if (threadIdx.x % 32 == 0) out[blockIdx.x * 4 + warp] = s;
}

}  // namespace kernels
