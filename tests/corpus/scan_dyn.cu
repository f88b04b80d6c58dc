// scan_dyn.cu: per-block inclusive Hillis-Steele scan of integers.
// Constructs: dynamic shared memory declared at file scope (extern __shared__ outside
// the kernel), double buffering, __syncthreads() inside a loop, block-size dependent output.

extern __shared__ int scan_buffer[];

extern "C" __global__ void scan_dyn(const int* __restrict__ in, int* __restrict__ out, int n) {
  const unsigned t = threadIdx.x;
  const int i = blockIdx.x * blockDim.x + t;
  int* src = scan_buffer;
  int* dst = scan_buffer + blockDim.x;
  src[t] = i < n ? in[i] : 0;
  __syncthreads();
  for (unsigned offset = 1; offset < blockDim.x; offset *= 2) {
    dst[t] = t >= offset ? src[t] + src[t - offset] : src[t];
    __syncthreads();
    int* tmp = src;
    src = dst;
    dst = tmp;
  }
  if (i < n) out[i] = src[t];
}
