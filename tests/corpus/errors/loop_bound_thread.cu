// An early return, then a loop around a barrier whose trip count depends on the thread:
// the threads that returned cannot be made to run it as often as the others. Refused.

extern "C" __global__ void loop_bound_thread(const int* in, int* out, int n) {
  __shared__ int lbt_buf[256];
  const int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i >= n) return;
  for (int k = threadIdx.x; k < n; k += 4 * blockDim.x) {  // ERROR-LINE
    lbt_buf[threadIdx.x] = in[k];
    __syncthreads();
    out[i] += lbt_buf[(threadIdx.x + 1) % blockDim.x];
    __syncthreads();
  }
}
