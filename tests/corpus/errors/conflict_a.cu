// Defines mix_bits one way ...

__device__ int mix_bits(int v) { return v ^ (v >> 7); }

extern "C" __global__ void conflict_a(const int* in, int* out, int n) {
  const int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) out[i] = mix_bits(in[i]);
}
