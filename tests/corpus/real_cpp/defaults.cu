// A kernel template with a default template argument, instantiated without it.
template <class T, int R, class U = T>
__global__ void k(T* out, U scale, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) out[i] = out[i] * (T)scale + R;
}
__global__ void z(float* out, int n) { int i = blockIdx.x * blockDim.x + threadIdx.x; if (i < n) out[i] = 0; }
