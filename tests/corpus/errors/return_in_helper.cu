// A helper that returns from inside a loop and then synchronises: a thread that returned
// would never arrive at the part's named barrier. Once refused; now made safe: the loop's
// control is block-uniform, so its return becomes the flag (tests/api/test_fuse_early_exit.py).

__device__ void rih_guarded(int* s, const int* in, int* out, int n) {
  const int i = blockIdx.x * blockDim.x + threadIdx.x;
  for (int j = 0; j < 4; ++j) {
    if (i + j >= n) return;  // (was refused here)
  }
  s[threadIdx.x] = in[i];
  __syncthreads();
  out[i] = s[threadIdx.x ^ 1];
}

extern "C" __global__ void helper_return(const int* in, int* out, int n) {
  __shared__ int rih_buf[256];
  rih_guarded(rih_buf, in, out, n);
}
