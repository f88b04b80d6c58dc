// 1-D histogram of float32 values (the paper's "Hist" kernel), torch.histc semantics:
// nbins equal bins over [min_value, max_value]; values outside are ignored, a value
// equal to max_value goes to the last bin, and
//   bin = (int)((x - min_value) * nbins / (max_value - min_value))   (float arithmetic).
//
// Each block counts into nbins unsigned counters in dynamic shared memory
// (nbins * 4 bytes), with shared atomics over a grid-stride loop, then adds its
// non-zero counters to the global counts (which must be zero before the first
// launch) with global atomics. Any 1-D block and grid size.

#define HIST_KERNEL_LOOP(i, n)                                                  \
  for (long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x; i < (n); \
       i += (long long)blockDim.x * gridDim.x)

__device__ __forceinline__ int hist_bin(float x, float min_value, float max_value, int nbins) {
  int bin = (int)((x - min_value) * (float)nbins / (max_value - min_value));
  return bin == nbins ? bin - 1 : bin;
}

__global__ void histogram(const float* __restrict__ data,
                          unsigned int* __restrict__ counts,
                          long long n, int nbins,
                          float min_value, float max_value) {
  extern __shared__ unsigned int hist_smem[];

  for (int b = threadIdx.x; b < nbins; b += blockDim.x) {
    hist_smem[b] = 0u;
  }
  __syncthreads();

  HIST_KERNEL_LOOP(i, n) {
    const float x = data[i];
    if (x >= min_value && x <= max_value) {
      atomicAdd(&hist_smem[hist_bin(x, min_value, max_value, nbins)], 1u);
    }
  }
  __syncthreads();

  for (int b = threadIdx.x; b < nbins; b += blockDim.x) {
    const unsigned int c = hist_smem[b];
    if (c != 0u) {
      atomicAdd(&counts[b], c);
    }
  }
}
