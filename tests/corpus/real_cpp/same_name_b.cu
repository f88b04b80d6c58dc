// The other definition of helper (see same_name_a.cu).
__device__ float helper(float v) { return v - 3.0f; }
__device__ float twice_plus(float v) { return helper(v) + 1.0f; }
__global__ void kb(float* out, int n) { int i = blockIdx.x * blockDim.x + threadIdx.x; if (i < n) out[i] = helper(out[i]) * twice_plus(out[i]); }
