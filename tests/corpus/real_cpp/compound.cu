// C99 compound literals in device code (nvcc takes them; NVRTC does not).
typedef struct { float x, y; } vec2;
struct pt { float x, y; };

__device__ float len2(struct pt p) { return p.x * p.x + p.y * p.y; }
__device__ float dot_half(vec2 a) { return len2((struct pt){a.x, a.y}) * 0.5f; }

__global__ void literal_kernel(const float* __restrict__ a, float* __restrict__ o, int n) {
  const int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) o[i] = len2((struct pt){a[i], 2.0f * a[i]}) + dot_half((vec2){a[i], 1.0f});
}
