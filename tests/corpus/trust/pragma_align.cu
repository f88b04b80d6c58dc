// A tile kernel as vector-minded code writes it: an aligned shared tile read as float4,
// register arrays indexed in unrolled loops, and a loop kept rolled on purpose.

template <int kTile>
__global__ void tile_dot(const float4* __restrict__ in, float* __restrict__ out, int n) {
  __shared__ __align__(16) float tile[kTile * 4];
  float acc[8];
#pragma unroll
  for (int i = 0; i < 8; ++i) acc[i] = 0.0f;  // stays in registers only when unrolled
  const int base = blockIdx.x * kTile;
  if (threadIdx.x < kTile) {
    reinterpret_cast<float4*>(tile)[threadIdx.x] = in[base + threadIdx.x];
  }
  __syncthreads();
  #pragma unroll
  for (int k = 0; k < kTile; ++k) {
    const float4 v = reinterpret_cast<const float4*>(tile)[k];
    acc[k % 8] += v.x * (threadIdx.x + 1) + v.y - v.z * 0.5f + v.w;
  }
  float s = 0.0f;
#pragma unroll 1
  for (int i = 0; i < 8; ++i) s += acc[i];
  out[blockIdx.x * blockDim.x + threadIdx.x] = s;
}

__global__ void pad_bytes(const int* __restrict__ in, int* __restrict__ out, int n) {
  // 264 bytes of static shared memory: whatever the compiler puts after it starts
  // 8 bytes past a 16-byte boundary unless it asks for more
  __shared__ double partial[33];
  const int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (threadIdx.x < 33) partial[threadIdx.x] = threadIdx.x * 0.5;
  __syncthreads();
  if (i < n) out[i] = in[i] + static_cast<int>(partial[threadIdx.x % 33] * 2.0);
}

// a plain float array read as float4: 16-byte aligned only because it sat at offset 0
__global__ void vec_tile(const float* __restrict__ in, float* __restrict__ out, int n) {
  __shared__ float buffer[256];
  const int i = blockIdx.x * blockDim.x + threadIdx.x;
  buffer[threadIdx.x] = i < n ? in[i] : 0.0f;
  __syncthreads();
  if (threadIdx.x < 64) {
    const float4 v = reinterpret_cast<const float4*>(buffer)[threadIdx.x];
    out[blockIdx.x * 64 + threadIdx.x] = v.x + 2.0f * v.y + 3.0f * v.z + 4.0f * v.w;
  }
}
