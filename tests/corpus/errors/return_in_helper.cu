// A helper that returns from inside a loop and then synchronises: a thread that returned
// never arrives at the part's named barrier, and the loop's return cannot be turned into
// a flag. Must be refused (emitting it unchanged would hang the fused kernel).

__device__ void rih_guarded(int* s, const int* in, int* out, int n) {
  const int i = blockIdx.x * blockDim.x + threadIdx.x;
  for (int j = 0; j < 4; ++j) {
    if (i + j >= n) return;  // ERROR-LINE
  }
  s[threadIdx.x] = in[i];
  __syncthreads();
  out[i] = s[threadIdx.x ^ 1];
}

extern "C" __global__ void helper_return(const int* in, int* out, int n) {
  __shared__ int rih_buf[256];
  rih_guarded(rih_buf, in, out, n);
}
