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

// blockwise absmax quantisation as bitsandbytes writes it: CUB's block load, store and
// reduction typedef'd with item counts that are conditional expressions of the template
// arguments (a '>' in a template argument: once read as an unknown CUB name, refused)
template <int kBlock, int kPerThread, int kPacked>
__global__ void quantize_blockwise(const float* __restrict__ a, float* __restrict__ absmax,
                                   unsigned char* __restrict__ out, int n) {
  constexpr int kThreads = kBlock / kPerThread;
  constexpr int kStored = (kPacked > 0) ? kPerThread / 2 : kPerThread;
  typedef cub::BlockLoad<float, kThreads, kPerThread, cub::BLOCK_LOAD_WARP_TRANSPOSE> Load;
  typedef cub::BlockStore<unsigned char, kThreads, (kPacked > 0) ? kPerThread / 2 : kPerThread,
                          cub::BLOCK_STORE_WARP_TRANSPOSE> Store;
  typedef cub::BlockReduce<float, kThreads> Reduce;
  __shared__ typename Load::TempStorage load;
  __shared__ typename Store::TempStorage store;
  __shared__ typename Reduce::TempStorage reduce;
  __shared__ float scale;
  float vals[kPerThread];
  unsigned char q[kStored];
  const int base = blockIdx.x * kBlock;
  const int valid = n - base > kBlock ? kBlock : n - base;
  Load(load).Load(a + base, vals, valid, 0.f);
  float m = 0.f;
#pragma unroll kPerThread
  for (int j = 0; j < kPerThread; ++j) m = fmaxf(m, fabsf(vals[j]));
  m = Reduce(reduce).Reduce(m, MaxOp(), valid);
  if (threadIdx.x == 0) {
    absmax[blockIdx.x] = m;
    scale = m > 0.f ? 7.f / m : 0.f;
  }
  __syncthreads();
#pragma unroll
  for (int j = 0; j < kStored; ++j) {
    if (kPacked > 0) {
      const int hi = __float2int_rn(vals[2 * j] * scale) + 8, lo = __float2int_rn(vals[2 * j + 1] * scale) + 8;
      q[j] = static_cast<unsigned char>((hi << 4) | (lo & 15));
    } else {
      q[j] = static_cast<unsigned char>(__float2int_rn(vals[j] * scale) + 8);
    }
  }
  Store(store).Store(out + ((kPacked > 0) ? base / 2 : base), q, (kPacked > 0) ? (valid + 1) / 2 : valid);
}

}  // namespace kernels
