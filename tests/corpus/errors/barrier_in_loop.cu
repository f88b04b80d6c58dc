// A barrier inside a loop after an early return. Once refused; now made safe: the loop's
// control is block-uniform, so the threads that returned run it too and arrive at its
// barriers (tests/api/test_fuse_early_exit.py).

extern "C" __global__ void return_then_loop(const int* in, int* out, int n) {
  __shared__ int bl_buf[256];
  const int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i >= n) return;
  int v = in[i];
  for (int k = 1; k < 8; k *= 2) {  // (was refused here)
    bl_buf[threadIdx.x] = v;
    __syncthreads();
    v += bl_buf[(threadIdx.x + k) % blockDim.x];
    __syncthreads();
  }
  out[i] = v;
}
