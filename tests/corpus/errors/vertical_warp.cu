// An early return before a barrier, with a full-mask warp shuffle in between. Horizontal
// fusion lets the threads that returned exit (as natively); vertical fusion keeps them
// alive for the next part, and the shuffle would wait for them forever. Refused there.

extern "C" __global__ void vertical_warp(const int* in, int* out, int n) {
  __shared__ int vw_buf[256];
  const int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i >= n) return;
  const int first = __shfl_sync(0xffffffffu, in[i], 0);  // ERROR-LINE
  vw_buf[threadIdx.x] = first;
  __syncthreads();
  out[i] = vw_buf[threadIdx.x ^ 1];
}
