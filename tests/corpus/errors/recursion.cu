// A kernel that reaches a recursive helper that reads the block: each part needs its own
// copy of such a helper, taking the part's view of the block, and hfuse builds none for a cycle.

__device__ int rec_fact(int n) {  // ERROR-LINE
  return n <= 1 ? 1 + (int)(threadIdx.x & 1) : n * rec_fact(n - 1);
}

extern "C" __global__ void recursive_kernel(const int* in, int* out, int n) {
  const int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) out[i] = rec_fact(in[i] & 7);
}
