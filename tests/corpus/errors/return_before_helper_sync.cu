// An early return before a helper that synchronises: cannot be made safe.

__device__ int rh_exchange(int* buf, int v) {
  buf[threadIdx.x] = v;
  __syncthreads();
  return buf[(threadIdx.x + 1) % blockDim.x];
}

extern "C" __global__ void return_then_helper(const int* in, int* out, int n) {
  __shared__ int rh_buf[256];
  const int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i >= n) return;
  out[i] = rh_exchange(rh_buf, in[i]);  // ERROR-LINE
}
