// Kernels declared through export macros in a namespace, extern "C", two-argument launch
// bounds from macros, unroll counts from template parameters.
#include <cstdint>

#define KERNEL_API extern "C" __global__
#define MAX_THREADS 256
#define MIN_BLOCKS 2

namespace ops {

KERNEL_API void __launch_bounds__(MAX_THREADS, MIN_BLOCKS) fill_ints(int32_t* __restrict__ out, int32_t value, int n) {
  const int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) out[i] = value + i;
}

template <int kUnroll>
__global__ void __launch_bounds__(MAX_THREADS) unrolled_add(const float* __restrict__ a, float* __restrict__ b, int n) {
  const int base = (blockIdx.x * blockDim.x + threadIdx.x) * kUnroll;
#pragma unroll kUnroll
  for (int k = 0; k < kUnroll; ++k) {
    if (base + k < n) b[base + k] += a[base + k];
  }
}

}  // namespace ops
