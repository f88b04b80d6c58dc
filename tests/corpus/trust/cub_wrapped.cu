// CUB wrapped in a namespace of the library's own, as extensions do to keep their CUB apart
// from PyTorch's: every CUB name then lives in mylib::cub. The block-wide ones must still be
// refused where the block is shared; the warp-level one fuses.
#undef CUB_WRAPPED_NAMESPACE
#define CUB_WRAPPED_NAMESPACE mylib

#include <cub/cub.cuh>

namespace mylib {
namespace ops {

// inside the wrapping namespace, written as plain cub::
template <int kThreads>
__global__ __launch_bounds__(kThreads) void row_sum(const float* __restrict__ in, float* __restrict__ out) {
  using Reduce = cub::BlockReduce<float, kThreads>;
  __shared__ typename Reduce::TempStorage storage;
  float total = Reduce(storage).Sum(in[blockIdx.x * kThreads + threadIdx.x]);
  if (threadIdx.x == 0) out[blockIdx.x] = total;
}

}  // namespace ops
}  // namespace mylib

// outside it, through the wrapped name
__global__ void wrapped_sum(const float* in, float* out) {
  typedef mylib::cub::BlockReduce<float, 128> RowReduce;
  __shared__ RowReduce::TempStorage storage;
  float s = RowReduce(storage).Sum(in[blockIdx.x * 128 + threadIdx.x]);
  if (threadIdx.x == 0) out[blockIdx.x] = s;
}

// through the macro CUB defines for its own qualified name
__global__ void qualified_scan(const float* in, float* out) {
  using Scan = CUB_NS_QUALIFIER::BlockScan<float, 128>;
  __shared__ typename Scan::TempStorage storage;
  float v = in[blockIdx.x * 128 + threadIdx.x];
  Scan(storage).InclusiveSum(v, v);
  out[blockIdx.x * 128 + threadIdx.x] = v;
}

// warp-level: the lane id is the same in a warp-aligned part
__global__ void wrapped_warp_sums(const float* __restrict__ in, float* __restrict__ out) {
  using WarpSum = mylib::cub::WarpReduce<float>;
  __shared__ typename WarpSum::TempStorage storage[4];
  const int warp = threadIdx.x / 32;
  float s = WarpSum(storage[warp]).Sum(in[blockIdx.x * 128 + threadIdx.x]);
  if (threadIdx.x % 32 == 0) out[blockIdx.x * 4 + warp] = s;
}

__global__ void scale_rows(float* __restrict__ data, float factor, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) data[i] = data[i] * factor + 1.0f;
}
