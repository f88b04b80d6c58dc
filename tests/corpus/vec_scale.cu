// vec_scale.cu: y[i] = a * x[i] + b over a 1-D grid-stride loop written as a macro.
// Constructs: 1-D block and grid, a user macro inside the kernel body, float math
// (one operation chain per element, so the result does not depend on timing).

#define VS_GRID_STRIDE(i, n) \
  for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < (n); i += blockDim.x * gridDim.x)

#define VS_AFFINE(a, x, b) ((a) * (x) + (b))

extern "C" __global__ void vec_scale(const float* __restrict__ x, float* __restrict__ y,
                                     float a, float b, int n) {
  VS_GRID_STRIDE(i, n) {
    y[i] = VS_AFFINE(a, x[i], b);
  }
}

// A second kernel of the same file: fusing two kernels of one file also works.
extern "C" __global__ void vec_offset(const int* __restrict__ x, int* __restrict__ y, int offset, int n) {
  VS_GRID_STRIDE(i, n) {
    y[i] = x[i] + offset;
  }
}
