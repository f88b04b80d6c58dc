// Per-channel mean and biased variance of an (N, C, L) float32 tensor: the
// "collect statistics" step of batch normalisation (the paper's "Batchnorm" kernel).
//
// One block per channel (grid = C). The block is 2-D (default 32 x 16; any shape
// whose size is a multiple of 32, up to 1024): threadIdx.x walks the L axis,
// threadIdx.y the N axis. Each thread runs Welford's algorithm over its elements,
// then the threads' (count, mean, M2) are merged (Chan et al.) first inside each warp
// with __shfl_down_sync, then across warps through shared memory; thread 0 writes
// mean[c] and var[c] = M2 / (N * L). The merge order depends only on the block
// shape, so the result is deterministic for a fixed block shape.

#define BATCHNORM_WARP_SIZE 32
#define BATCHNORM_MAX_WARPS 32
#define BATCHNORM_FULL_MASK 0xffffffffu

// Merge the partial statistics (n_b, mean_b, m2_b) into (n_a, mean_a, m2_a).
__device__ __forceinline__ void batchnorm_welford_combine(int& n_a, float& mean_a, float& m2_a,
                                                          int n_b, float mean_b, float m2_b) {
  const int n = n_a + n_b;
  const float factor = n > 0 ? (float)n_b / (float)n : 0.0f;
  const float delta = mean_b - mean_a;
  mean_a = mean_a + delta * factor;
  m2_a = m2_a + m2_b + delta * delta * (float)n_a * factor;
  n_a = n;
}

// Sum the statistics of a warp into its lane 0.
__device__ __forceinline__ void batchnorm_warp_reduce(int& n, float& mean, float& m2) {
  for (int offset = BATCHNORM_WARP_SIZE / 2; offset > 0; offset >>= 1) {
    const int n_o = __shfl_down_sync(BATCHNORM_FULL_MASK, n, offset);
    const float mean_o = __shfl_down_sync(BATCHNORM_FULL_MASK, mean, offset);
    const float m2_o = __shfl_down_sync(BATCHNORM_FULL_MASK, m2, offset);
    batchnorm_welford_combine(n, mean, m2, n_o, mean_o, m2_o);
  }
}

__global__ void batchnorm_collect_statistics(const float* __restrict__ input,
                                             float* __restrict__ mean_out,
                                             float* __restrict__ var_out,
                                             int batch, int channels, int length) {
  __shared__ int batchnorm_shared_n[BATCHNORM_MAX_WARPS];
  __shared__ float batchnorm_shared_mean[BATCHNORM_MAX_WARPS];
  __shared__ float batchnorm_shared_m2[BATCHNORM_MAX_WARPS];

  const int channel = blockIdx.x;
  const int tid = threadIdx.y * blockDim.x + threadIdx.x;
  const int lane = tid % BATCHNORM_WARP_SIZE;
  const int warp = tid / BATCHNORM_WARP_SIZE;
  const int num_warps = (blockDim.x * blockDim.y) / BATCHNORM_WARP_SIZE;

  // Welford over this thread's elements.
  int n = 0;
  float mean = 0.0f;
  float m2 = 0.0f;
  for (int b = threadIdx.y; b < batch; b += blockDim.y) {
    const float* row = input + ((long long)b * channels + channel) * (long long)length;
    for (int l = threadIdx.x; l < length; l += blockDim.x) {
      const float v = row[l];
      ++n;
      const float delta = v - mean;
      mean += delta / (float)n;
      m2 += delta * (v - mean);
    }
  }

  // Inside each warp, then across the warps.
  batchnorm_warp_reduce(n, mean, m2);
  if (lane == 0) {
    batchnorm_shared_n[warp] = n;
    batchnorm_shared_mean[warp] = mean;
    batchnorm_shared_m2[warp] = m2;
  }
  __syncthreads();
  if (warp == 0) {
    n = lane < num_warps ? batchnorm_shared_n[lane] : 0;
    mean = lane < num_warps ? batchnorm_shared_mean[lane] : 0.0f;
    m2 = lane < num_warps ? batchnorm_shared_m2[lane] : 0.0f;
    batchnorm_warp_reduce(n, mean, m2);
    if (lane == 0) {
      mean_out[channel] = mean;
      var_out[channel] = m2 / (float)n;
    }
  }
}
