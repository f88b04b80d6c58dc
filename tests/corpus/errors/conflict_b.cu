// ... and this file defines it another way: fusing conflict_a with conflict_b is refused.

__device__ int mix_bits(int v) { return v * 31 + 7; }  // ERROR-LINE

extern "C" __global__ void conflict_b(const int* in, int* out, int n) {
  const int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) out[i] = mix_bits(in[i]) + 1;
}
