// A helper of one name, defined one way here and another way in same_name_b.cu; an
// identical caller in both. Compiled apart each file has its own: fused, each part gets its own.
__device__ float helper(float v) { return v * 2.0f; }
__device__ float twice_plus(float v) { return helper(v) + 1.0f; }
__global__ void ka(float* out, int n) { int i = blockIdx.x * blockDim.x + threadIdx.x; if (i < n) out[i] = twice_plus(out[i]); }
