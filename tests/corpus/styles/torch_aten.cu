// A PyTorch extension the way ATen-adjacent code is written: accessors as kernel
// parameters, c10 scalar types, opmath types, ATen's block reduction (which reads
// threadIdx inside PyTorch's header: the kernel must keep its block whole), launch-bound
// macros, host code with a device guard, a dispatch macro and an op registration.
#include <ATen/ATen.h>
#include <ATen/cuda/CUDAContext.h>
#include <ATen/OpMathType.h>
#include <ATen/native/cuda/block_reduce.cuh>
#include <c10/cuda/CUDAGuard.h>
#include <c10/macros/Macros.h>
#include <torch/extension.h>

namespace my_ext {

constexpr int kThreads = 256;

template <typename scalar_t>
__global__ void C10_LAUNCH_BOUNDS_1(kThreads)
scale_rows_kernel(torch::PackedTensorAccessor32<scalar_t, 2, torch::RestrictPtrTraits> x,
                  torch::PackedTensorAccessor32<scalar_t, 2, torch::RestrictPtrTraits> y,
                  const float alpha) {
  using opmath_t = at::opmath_type<scalar_t>;
  const int row = blockIdx.x;
  for (int c = threadIdx.x; c < x.size(1); c += blockDim.x) {
    y[row][c] = static_cast<scalar_t>(static_cast<opmath_t>(x[row][c]) * alpha);
  }
}

template <typename scalar_t>
__global__ void rms_norm_kernel(const scalar_t* __restrict__ in, const scalar_t* __restrict__ w,
                                scalar_t* __restrict__ out, int hidden, float eps) {
  using opmath_t = at::opmath_type<scalar_t>;
  __shared__ opmath_t shared[C10_WARP_SIZE];
  opmath_t acc = 0;
  for (int c = threadIdx.x; c < hidden; c += blockDim.x) {
    const opmath_t v = static_cast<opmath_t>(in[blockIdx.x * hidden + c]);
    acc += v * v;
  }
  acc = at::native::cuda_utils::BlockReduceSum<opmath_t>(acc, shared);
  __shared__ opmath_t inv;
  if (threadIdx.x == 0) inv = rsqrtf(acc / hidden + eps);
  __syncthreads();
  for (int c = threadIdx.x; c < hidden; c += blockDim.x) {
    out[blockIdx.x * hidden + c] =
        static_cast<scalar_t>(static_cast<opmath_t>(in[blockIdx.x * hidden + c]) * inv * static_cast<opmath_t>(w[c]));
  }
}

template <typename scalar_t>
__global__ void gelu_kernel(const scalar_t* __restrict__ in, scalar_t* __restrict__ out, int64_t n) {
  using opmath_t = at::opmath_type<scalar_t>;
  const int64_t i = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (i >= n) return;
  const opmath_t v = static_cast<opmath_t>(in[i]);
  out[i] = static_cast<scalar_t>(v * opmath_t(0.5) * (opmath_t(1) + ::erff(v * opmath_t(M_SQRT1_2))));
}

}  // namespace my_ext

void scale_rows(torch::Tensor x, torch::Tensor y, double alpha) {
  const at::cuda::OptionalCUDAGuard device_guard(device_of(x));
  const auto stream = at::cuda::getCurrentCUDAStream();
  AT_DISPATCH_FLOATING_TYPES_AND2(at::ScalarType::Half, at::ScalarType::BFloat16, x.scalar_type(), "scale_rows", [&] {
    my_ext::scale_rows_kernel<scalar_t><<<x.size(0), my_ext::kThreads, 0, stream>>>(
        x.packed_accessor32<scalar_t, 2, torch::RestrictPtrTraits>(),
        y.packed_accessor32<scalar_t, 2, torch::RestrictPtrTraits>(), static_cast<float>(alpha));
    C10_CUDA_KERNEL_LAUNCH_CHECK();
  });
}

TORCH_LIBRARY_FRAGMENT(my_ext, m) { m.def("scale_rows(Tensor x, Tensor(a!) y, float alpha) -> ()"); }
