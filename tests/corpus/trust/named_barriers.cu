// CUDA's named barriers by id (sm_30_intrinsics.h). In a shared fused block their ids and
// counts would be the fused kernel's (hfuse gives each part barriers of its own), so hfuse
// fuses them only where each fused block runs one whole block of the kernel. (Once: fused
// horizontally as written, next to another part.)

__global__ void scale(float* a, float s, int n) {
  const int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) a[i] *= s;
}

// reverses each block's 128 values through shared memory
__global__ void reverse_named(const float* in, float* out) {
  __shared__ float s[128];
  s[threadIdx.x] = in[blockIdx.x * 128 + threadIdx.x];
  __barrier_sync(0);
  out[blockIdx.x * 128 + threadIdx.x] = s[127 - threadIdx.x];
}

// the same with barrier 1 over the block's 128 threads
__global__ void reverse_counted(const float* in, float* out) {
  __shared__ float s[128];
  s[threadIdx.x] = in[blockIdx.x * 128 + threadIdx.x];
  __barrier_sync_count(1, 128);
  out[blockIdx.x * 128 + threadIdx.x] = s[127 - threadIdx.x];
}
