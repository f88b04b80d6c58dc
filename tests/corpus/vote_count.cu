// vote_count.cu: per-block predicate statistics with barrier reductions.
// Constructs: __syncthreads_count, __syncthreads_and, __syncthreads_or.

extern "C" __global__ void vote_count(const int* __restrict__ in, int* __restrict__ stats, int n, int threshold) {
  const int i = blockIdx.x * blockDim.x + threadIdx.x;
  const int v = i < n ? in[i] : 0;
  const int above = __syncthreads_count(v > threshold);
  const int all_pos = __syncthreads_and(i >= n || v > 0);
  const int any_neg = __syncthreads_or(v < 0);
  if (threadIdx.x == 0) {
    stats[4 * blockIdx.x + 0] = above;
    stats[4 * blockIdx.x + 1] = all_pos;
    stats[4 * blockIdx.x + 2] = any_neg;
    stats[4 * blockIdx.x + 3] = (int)blockDim.x;
  }
}
