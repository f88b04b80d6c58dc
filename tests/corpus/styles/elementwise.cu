// A translation unit that instantiates the header's kernels (as a library's .cu does).
#include "elementwise.cuh"

namespace ew {

template __global__ void unary_kernel<float, Relu<float>, Unrolled, 4>(const float*, float*, int64_t, Relu<float>);

// a kernel that names the header's functor through an alias
using ScaleF = Scale<float>;
__global__ void scale_inplace(float* __restrict__ x, int n, ScaleF op) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) x[i] = op(x[i]);
}

}  // namespace ew

void launch_relu(const float* in, float* out, int64_t n, cudaStream_t stream) {
  const int threads = 256;
  const int blocks = static_cast<int>((n + threads * 4 - 1) / (threads * 4));
  ew::unary_kernel<float, ew::Relu<float>><<<blocks, threads, 0, stream>>>(in, out, n, ew::Relu<float>{});
}
