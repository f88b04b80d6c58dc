// Static shared memory reached other than as a kernel's own local: a helper's scratch
// array (a warp-level exchange, no block barrier) and a file-scope __shared__ staging
// buffer. Each block of each kernel had its own; fused side by side, two parts must not
// share one (they once did: both wrote the same addresses, and no error said so).
__device__ float swap_neighbours(float v, int lane_in_block) {
  __shared__ float scratch[1024];
  scratch[lane_in_block] = v;
  __syncwarp();
  return scratch[lane_in_block ^ 1];
}

__shared__ float stage[1024];

__global__ void neighbour_diff(const float* __restrict__ x, float* __restrict__ y, int n) {
  const int t = threadIdx.x;
  const int i = blockIdx.x * blockDim.x + t;
  const float v = i < n ? x[i] : 0.f;
  const float other = swap_neighbours(v, t);
  if (i < n) y[i] = v - other;
}

__global__ void neighbour_sum(const float* __restrict__ x, float* __restrict__ y, int n) {
  const int t = threadIdx.x;
  const int i = blockIdx.x * blockDim.x + t;
  const float v = i < n ? x[i] : 0.f;
  if (i < n) y[i] = v + swap_neighbours(2.f * v, t);
}

__global__ void reverse_block(const float* __restrict__ x, float* __restrict__ y, int n) {
  const int i = blockIdx.x * blockDim.x + threadIdx.x;
  stage[threadIdx.x] = i < n ? x[i] : 0.f;
  __syncthreads();
  const int j = blockIdx.x * blockDim.x + (blockDim.x - 1 - threadIdx.x);
  if (i < n && j < n) y[i] = stage[blockDim.x - 1 - threadIdx.x];
}
