// Reductions in the CUDA samples' style: a SharedMemory<T> helper for templated dynamic
// shared memory, a block-size template with a volatile warp-synchronous tail, a histogram
// with dynamic shared memory and atomics, an argmax over (value, index) pairs.
#include <cfloat>

template <class T>
struct SharedMemory {
  __device__ inline operator T*() {
    extern __shared__ int __smem[];
    return (T*)__smem;
  }
  __device__ inline operator const T*() const {
    extern __shared__ int __smem[];
    return (T*)__smem;
  }
};

template <class T, unsigned int blockSize>
__global__ void reduce_sum(const T* __restrict__ g_idata, T* __restrict__ g_odata, unsigned int n) {
  T* sdata = SharedMemory<T>();
  unsigned int tid = threadIdx.x;
  unsigned int i = blockIdx.x * (blockSize * 2) + threadIdx.x;
  T mySum = (i < n) ? g_idata[i] : 0;
  if (i + blockSize < n) mySum += g_idata[i + blockSize];
  sdata[tid] = mySum;
  __syncthreads();
  for (unsigned int s = blockSize / 2; s > 32; s >>= 1) {
    if (tid < s) sdata[tid] = mySum = mySum + sdata[tid + s];
    __syncthreads();
  }
  if (tid < 32) {
    if (blockSize >= 64) mySum += sdata[tid + 32];
    for (int offset = 16; offset > 0; offset /= 2) mySum += __shfl_down_sync(0xffffffff, mySum, offset);
  }
  if (tid == 0) g_odata[blockIdx.x] = mySum;
}

__global__ void histogram_smem(const unsigned char* __restrict__ data, unsigned int* __restrict__ bins, int n,
                               int nbins) {
  extern __shared__ unsigned int local_bins[];
  for (int b = threadIdx.x; b < nbins; b += blockDim.x) local_bins[b] = 0;
  __syncthreads();
  for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += blockDim.x * gridDim.x)
    atomicAdd(&local_bins[data[i] % nbins], 1u);
  __syncthreads();
  for (int b = threadIdx.x; b < nbins; b += blockDim.x) atomicAdd(&bins[b], local_bins[b]);
}

struct ValueIndex {
  float value;
  int index;
};

__device__ __forceinline__ ValueIndex better(ValueIndex a, ValueIndex b) {
  return (b.value > a.value || (b.value == a.value && b.index < a.index)) ? b : a;
}

// one warp per row: the row's largest value and its first index
__global__ void argmax_rows(const float* __restrict__ x, int* __restrict__ out, int rows, int cols) {
  const int row = (blockIdx.x * blockDim.x + threadIdx.x) >> 5;
  const int lane = threadIdx.x & 31;
  if (row >= rows) return;
  ValueIndex best{-FLT_MAX, 0x7fffffff};
  for (int c = lane; c < cols; c += 32) best = better(best, ValueIndex{x[row * cols + c], c});
  for (int o = 16; o > 0; o >>= 1) {
    ValueIndex other{__shfl_xor_sync(0xffffffffu, best.value, o), __shfl_xor_sync(0xffffffffu, best.index, o)};
    best = better(best, other);
  }
  if (lane == 0) out[row] = best.index;
}

// the classic two-level block sum with a static tile and an early return of idle blocks
template <int kThreads>
__global__ void block_sums(const float* __restrict__ in, float* __restrict__ out, int n) {
  __shared__ float tile[kThreads];
  const int i = blockIdx.x * kThreads + threadIdx.x;
  tile[threadIdx.x] = i < n ? in[i] : 0.f;
  __syncthreads();
#pragma unroll
  for (int s = kThreads / 2; s > 0; s >>= 1) {
    if (threadIdx.x < s) tile[threadIdx.x] += tile[threadIdx.x + s];
    __syncthreads();
  }
  if (threadIdx.x == 0) out[blockIdx.x] = tile[0];
}
