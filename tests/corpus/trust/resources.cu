// Kernels whose fusions only launch if the fused kernel is bounded and its launch
// helper counts every byte of shared memory.

// Many live values per thread: alone at 128 threads ptxas gives it well over 64 registers.
__global__ void heavy_mix(const float* __restrict__ in, float* __restrict__ out, int n) {
  float r[96];
  const int t = blockIdx.x * blockDim.x + threadIdx.x;
#pragma unroll
  for (int i = 0; i < 96; ++i) r[i] = in[(t * 96 + i) % n];
  float s = 0.0f;
  for (int rep = 0; rep < 4; ++rep) {
#pragma unroll
    for (int i = 0; i < 96; ++i) s = fmaf(r[i], r[(i * 7 + 3) % 96], s) * 0.999f + r[(i * 13 + 1) % 96];
  }
  if (t < n) out[t] = s;
}

__global__ void light_copy(const float* __restrict__ in, float* __restrict__ out, int n) {
  const int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) out[i] = in[i] + 1.0f;
}

// 32 KiB of static shared memory
__global__ void static_tile(const float* __restrict__ in, float* __restrict__ out, int n) {
  __shared__ float tile[8192];
  for (int i = threadIdx.x; i < 8192; i += blockDim.x) tile[i] = in[(blockIdx.x * 8192 + i) % n];
  __syncthreads();
  const int t = blockIdx.x * blockDim.x + threadIdx.x;
  if (t < n) out[t] = tile[(threadIdx.x * 37) % 8192] + tile[8191 - threadIdx.x];
}

// dynamic shared memory, 30 KiB at its launch
__global__ void dynamic_tile(const int* __restrict__ in, int* __restrict__ out, int n) {
  extern __shared__ int scratch[];
  const int count = 30 * 1024 / sizeof(int);
  for (int i = threadIdx.x; i < count; i += blockDim.x) scratch[i] = in[(blockIdx.x + i) % n];
  __syncthreads();
  const int t = blockIdx.x * blockDim.x + threadIdx.x;
  if (t < n) out[t] = scratch[(threadIdx.x * 11) % count] - scratch[count - 1 - threadIdx.x];
}
