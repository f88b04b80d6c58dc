// A library's block reduction kept as an #include (include/blocklib, given with -isystem),
// reached the ways ML code reaches PyTorch's: from a kernel template with a dependent call,
// through the user's own helper template holding an auto object, and at warp level.
#include <cuda_fp16.h>
#include <blocklib/block_reduce.cuh>

template <typename scalar_t>
__global__ void rms_scale(scalar_t* __restrict__ out, const scalar_t* __restrict__ in, int hidden) {
  __shared__ float shared[32];
  __shared__ float s_inv;
  float sum = 0.f;
  for (int i = threadIdx.x; i < hidden; i += blockDim.x) {
    const float x = static_cast<float>(in[blockIdx.x * hidden + i]);
    sum += x * x;
  }
  sum = blocklib::block_sum<float>(sum, shared);
  if (threadIdx.x == 0) s_inv = rsqrtf(sum / hidden + 1e-6f);
  __syncthreads();
  for (int i = threadIdx.x; i < hidden; i += blockDim.x) {
    out[blockIdx.x * hidden + i] = static_cast<scalar_t>(static_cast<float>(in[blockIdx.x * hidden + i]) * s_inv);
  }
}

template <typename T>
__device__ T row_total(T v, T* shared) {
  auto reducer = blocklib::make_reducer(shared);
  return reducer.sum(v);
}

__global__ void row_sums(const float* __restrict__ in, float* __restrict__ out, int cols) {
  __shared__ float shared[32];
  float v = 0.f;
  for (int i = threadIdx.x; i < cols; i += blockDim.x) v += in[blockIdx.x * cols + i];
  v = row_total<float>(v, shared);
  if (threadIdx.x == 0) out[blockIdx.x] = v;
}

template <typename T>
__global__ void warp_totals(const T* __restrict__ in, T* __restrict__ out, int n) {
  const int i = blockIdx.x * blockDim.x + threadIdx.x;
  const T v = blocklib::warp_sum<T>(i < n ? in[i] : T(0));
  if ((threadIdx.x & 31) == 0 && i < n) out[i / 32] = v;
}

// the user's helper template calling the library's reduction with its policy, as ATen's batch
// norm's reduce<scalar_t, Op, PTA> calls cuda_utils::BlockReduce<scalar_t, Op, Block2D>: read as
// written, the helper names no code (block_sum's B::tid()); its instance, reached from the
// kernel's, reads threadIdx and blockDim: whole blocks of the kernel's own size
struct Square {
  template <typename T>
  __device__ T operator()(T x) const { return x * x; }
};

template <typename T, typename Op>
__device__ T reduce_rows(Op op, const T* __restrict__ in, int cols, T* shared) {
  T v = T(0);
  for (int i = threadIdx.x; i < cols; i += blockDim.x) v += op(in[blockIdx.x * cols + i]);
  return blocklib::block_sum<T, blocklib::Block1D>(v, shared);
}

template <typename T>
__global__ void row_squares(const T* __restrict__ in, T* __restrict__ out, int cols) {
  __shared__ T shared[32];
  const T v = reduce_rows<T>(Square{}, in, cols, shared);
  if (threadIdx.x == 0) out[blockIdx.x] = v;
}
