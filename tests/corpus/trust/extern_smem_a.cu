// File-scope dynamic shared memory under a common name, as CUDA's samples write it; the
// other file (extern_smem_b.cu) declares the same name with another element type. Each
// part's code means its own file's (once: "two rewrites of hfuse claim the same code").
extern __shared__ float smem[];

__global__ void reverse_floats(float* data, int n) {
  const int t = threadIdx.x, i = blockIdx.x * blockDim.x + t;
  smem[t] = i < n ? data[i] : 0.f;
  __syncthreads();
  const int j = blockIdx.x * blockDim.x + (blockDim.x - 1 - t);
  if (i < n && j < n) data[i] = smem[blockDim.x - 1 - t];
}
