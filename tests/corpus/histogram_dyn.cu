// histogram_dyn.cu: per-block histogram in dynamic shared memory, merged with atomics.
// Constructs: extern __shared__ (dynamic), shared-memory integer atomics, barriers,
// a grid-stride loop, a 1-D block of any size.

extern "C" __global__ void histogram_dyn(const unsigned int* __restrict__ data, int n,
                                         unsigned int* __restrict__ bins, int nbins) {
  extern __shared__ unsigned int hist_smem[];
  for (int b = threadIdx.x; b < nbins; b += blockDim.x) hist_smem[b] = 0u;
  __syncthreads();
  for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += blockDim.x * gridDim.x) {
    atomicAdd(&hist_smem[data[i] % (unsigned)nbins], 1u);
  }
  __syncthreads();
  for (int b = threadIdx.x; b < nbins; b += blockDim.x) {
    if (hist_smem[b]) atomicAdd(&bins[b], hist_smem[b]);
  }
}
