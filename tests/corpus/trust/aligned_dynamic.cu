// Dynamic shared memory that asks for more than 16-byte alignment (as TMA and ldmatrix
// code does), fused after a part whose slice is not a multiple of 128 bytes.
__global__ void aligned_slice(unsigned* __restrict__ out, int n) {
  extern __shared__ __align__(128) unsigned char smem[];
  const unsigned misaligned = static_cast<unsigned>(__cvta_generic_to_shared(smem) % 128);
  smem[threadIdx.x] = static_cast<unsigned char>(threadIdx.x);
  const int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) out[i] = misaligned * 1000u + smem[threadIdx.x];
}

__global__ void odd_dynamic(const float* __restrict__ in, float* __restrict__ out, int n) {
  extern __shared__ float buf[];  // 25 floats: a 100-byte slice
  const int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (threadIdx.x < 25) buf[threadIdx.x] = 1.0f + threadIdx.x;
  if (i < n) out[i] = in[i] * 2.0f;
}
