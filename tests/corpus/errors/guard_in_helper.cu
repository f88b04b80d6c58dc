// A helper whose early return is a top-level guard before its barrier: made safe the same
// way as in a kernel body (a flag; every thread still reaches the barrier).

__device__ void gih_guarded(int* s, const int* in, int* out, int n) {
  const int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i >= n) return;
  s[threadIdx.x] = in[i];
  __syncthreads();
  out[i] = s[threadIdx.x ^ 1];
}

extern "C" __global__ void helper_guard(const int* in, int* out, int n) {
  __shared__ int gih_buf[256];
  gih_guarded(gih_buf, in, out, n);
}
