#include "include/macro_scale.cuh"
__global__ void scale_b(float* out, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) out[i] = row_scaled(out[i]) + 1.0f;
}
