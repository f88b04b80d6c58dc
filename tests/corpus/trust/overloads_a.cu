// One file's overload set of 'nudge' (see overloads_b.cu, which has one more).
// Compiled apart, a.cu's calls choose among its own definition only.
__device__ float nudge(float v) { return v + 1.0f; }

__global__ void nudge_rows(float* out, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) out[i] = nudge(out[i]) * 2.f;  // '2.f' names no 'nudge' nor 'f'
}
