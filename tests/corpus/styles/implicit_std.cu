// What nvcc gives device code without an #include (its implicit cuda_runtime.h brings the
// host's <cmath>, <climits>, <cstddef> and <sys/types.h>): std::exp, std::max,
// std::numeric_limits, INT_MAX, offsetof, ssize_t. NVRTC has none of them.
__global__ void softish(const float* x, float* y, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n)
    y[i] = std::exp(-std::fabs(x[i])) + std::sqrt(std::fabs(x[i])) + std::numeric_limits<float>::epsilon()
           + std::max(x[i], 0.f) + std::fmaxf(x[i], -1.f);
}

struct Record { int key; float value; double weight; };

__global__ void limits_offsets(const int* in, int* out, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i >= n) return;
  ssize_t wide = in[i];
  u_int32_t bits = (u_int32_t)in[i];
  int clamp = wide > INT_MAX / 2 ? INT_MAX / 2 : (int)wide;
  out[i] = clamp + (int)(bits >> (CHAR_BIT * sizeof(int) - 4)) + (int)offsetof(Record, weight);
}
