// Macro-heavy code in the style of older frameworks: a grid-stride loop macro, inline and
// launch-bounds macros, and kernels stamped out by a macro.
#include <cstdint>

#define DEVICE_INLINE __device__ __forceinline__
#define LAUNCH_BOUNDS_1(max_threads) __launch_bounds__((max_threads))
#define CUDA_KERNEL_LOOP(i, n) \
  for (int64_t i = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < (n); \
       i += static_cast<int64_t>(blockDim.x) * gridDim.x)

constexpr int kMaxThreads = 512;

DEVICE_INLINE float leaky(float x, float slope) { return x > 0.f ? x : slope * x; }

__global__ void LAUNCH_BOUNDS_1(kMaxThreads) leaky_relu_kernel(const float* in, float* out, float slope, int64_t n) {
  CUDA_KERNEL_LOOP(i, n) { out[i] = leaky(in[i], slope); }
}

#define DEFINE_UNARY_KERNEL(NAME, EXPR)                                        \
  __global__ void NAME(const float* __restrict__ in, float* __restrict__ out, \
                       int64_t n) {                                            \
    CUDA_KERNEL_LOOP(i, n) {                                                   \
      const float x = in[i];                                                   \
      out[i] = (EXPR);                                                         \
    }                                                                          \
  }

DEFINE_UNARY_KERNEL(square_kernel, x * x)
DEFINE_UNARY_KERNEL(softplus_kernel, log1pf(expf(x)))
DEFINE_UNARY_KERNEL(gelu_tanh_kernel, 0.5f * x * (1.f + tanhf(0.7978845608f * (x + 0.044715f * x * x * x))))

#define CHECK_BOUNDS(i, n) if ((i) >= (n)) return

__global__ void masked_fill_kernel(float* __restrict__ x, const uint8_t* __restrict__ mask, float value, int n) {
  const int i = blockIdx.x * blockDim.x + threadIdx.x;
  CHECK_BOUNDS(i, n);
  if (mask[i]) x[i] = value;
}
