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

// producers and consumers of one block meeting at a named barrier in inline PTX, as
// FlashAttention and CUTLASS write it: the same ids and counts, fused where the block is whole
__device__ __forceinline__ void named_arrive(int id, int threads) {
  asm volatile("bar.arrive %0, %1;" :: "r"(id), "r"(threads) : "memory");
}
__device__ __forceinline__ void named_wait(int id, int threads) {
  asm volatile("bar.sync %0, %1;" :: "r"(id), "r"(threads) : "memory");
}

// the first 128 threads stage a tile that the other 128 read reversed
__global__ void produce_consume(const float* in, float* out) {
  __shared__ float s[128];
  const int t = threadIdx.x;
  if (t < 128) {
    s[t] = in[blockIdx.x * 128 + t];
    named_arrive(1, 256);
  } else {
    named_wait(1, 256);
    out[blockIdx.x * 128 + t - 128] = s[255 - t];
  }
}

// the thread's index read in PTX, as the kernel's own launch gives it (a 1-D block)
__global__ void tid_from_ptx(const float* in, float* out) {
  unsigned t;
  asm("mov.u32 %0, %%tid.x;" : "=r"(t));
  out[blockIdx.x * 128 + t] = in[blockIdx.x * 128 + (t ^ 5u)];
}
