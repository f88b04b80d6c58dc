// A kernel that declares it runs at most 128 threads per block.

extern "C" __global__ void __launch_bounds__(128) bounded(const int* in, int* out, int n) {  // ERROR-LINE
  const int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) out[i] = in[i] * 2;
}
