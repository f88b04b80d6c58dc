// An early return, then a call of a helper that synchronises inside a loop bounded by its
// parameter: the threads that returned must call it too, and this caller passes each thread
// its own bound (with 'n % 7', a kernel parameter, every thread would pass the same: taken).
// Refused.

__device__ void hlp_rounds(int* buf, int v, int rounds) {
  for (int k = 0; k < rounds; ++k) {
    buf[threadIdx.x] = v + k;
    __syncthreads();
  }
}

extern "C" __global__ void helper_loop_param(const int* in, int* out, int n) {
  __shared__ int hlp_buf[256];
  const int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i >= n) return;
  const int v = in[i];
  hlp_rounds(hlp_buf, v, i % 7);  // ERROR-LINE
  out[i] = hlp_buf[(threadIdx.x + 1) % blockDim.x];
}
