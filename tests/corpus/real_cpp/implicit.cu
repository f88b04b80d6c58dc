// Names nvcc's implicit cuda_runtime.h gives device code without an #include (math.h's
// constants, glibc's uint): the fused file must compile under NVRTC too.
__global__ void phase(float* out, uint n) {
  uint i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) out[i] = sinf(out[i] * (float)M_PI) + (out[i] > 1e30f ? INFINITY : 0.0f);
}

__global__ void halve(float* out, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) out[i] *= 0.5f;
}
