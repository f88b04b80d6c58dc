// An early return inside a loop, before a barrier. Once refused; now made safe: the loop's
// control is block-uniform, so every thread runs it and the return becomes the flag
// (tests/api/test_fuse_early_exit.py).

extern "C" __global__ void loop_return(const int* in, int* out, int n) {
  __shared__ int lr_buf[256];
  const int i = blockIdx.x * blockDim.x + threadIdx.x;
  for (int k = 0; k < 4; ++k) {
    if (i + k >= n) return;  // (was refused here)
    lr_buf[threadIdx.x] = in[i + k];
  }
  __syncthreads();
  out[i] = lr_buf[(threadIdx.x + 1) % blockDim.x];
}
