// axpy_template.cu: y = a * x + y, each thread handling UNROLL elements.
// Constructs: a template kernel (type and value parameters), #pragma unroll.

template <typename T, int UNROLL>
__global__ void axpy_t(const T* __restrict__ x, T* __restrict__ y, T a, int n) {
  const int base = (blockIdx.x * blockDim.x) * UNROLL + threadIdx.x;
#pragma unroll
  for (int u = 0; u < UNROLL; ++u) {
    const int i = base + u * (int)blockDim.x;
    if (i < n) y[i] = a * x[i] + y[i];
  }
}
