// block_reduce.cu: per-block sum and max of integers through static shared memory.
// Constructs: static __shared__ in the kernel, __device__ helpers that read threadIdx
// and blockDim and call __syncthreads() (inside a loop), a 1-D block of any size.

#define BR_MAX_THREADS 1024

// Tree reduction over the first blockDim.x entries of s (works for any block size).
__device__ int br_block_sum(int* s, int v) {
  const unsigned t = threadIdx.x;
  s[t] = v;
  __syncthreads();
  for (unsigned stride = 1; stride < blockDim.x; stride *= 2) {
    if (t % (2 * stride) == 0 && t + stride < blockDim.x) s[t] += s[t + stride];
    __syncthreads();
  }
  const int total = s[0];
  __syncthreads();  // s is reused by the caller
  return total;
}

__device__ int br_block_max(int* s, int v) {
  s[threadIdx.x] = v;
  __syncthreads();
  for (unsigned stride = 1; stride < blockDim.x; stride *= 2) {
    if (threadIdx.x % (2 * stride) == 0 && threadIdx.x + stride < blockDim.x)
      s[threadIdx.x] = max(s[threadIdx.x], s[threadIdx.x + stride]);
    __syncthreads();
  }
  return s[0];
}

extern "C" __global__ void block_reduce(const int* __restrict__ in, int* __restrict__ sums,
                                        int* __restrict__ maxima, int n) {
  __shared__ int br_scratch[BR_MAX_THREADS];
  const int i = blockIdx.x * blockDim.x + threadIdx.x;
  const int v = i < n ? in[i] : 0;
  const int sum = br_block_sum(br_scratch, v);
  const int big = br_block_max(br_scratch, i < n ? v : -2147483647 - 1);
  if (threadIdx.x == 0) {
    sums[blockIdx.x] = sum;
    maxima[blockIdx.x] = big;
  }
}
