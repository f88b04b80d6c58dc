// An early return, then a loop around a barrier bounded by a value loaded from memory
// after the return (only the threads that stay load it). Refused.

extern "C" __global__ void loop_bound_loaded(const int* in, const int* rounds, int* out, int n) {
  __shared__ int lbl_buf[256];
  const int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i >= n) return;
  const int r = rounds[blockIdx.x];
  int v = in[i];
  for (int k = 0; k < r; ++k) {  // ERROR-LINE
    lbl_buf[threadIdx.x] = v;
    __syncthreads();
    v += lbl_buf[(threadIdx.x + 1) % blockDim.x];
    __syncthreads();
  }
  out[i] = v;
}
