// Kernels that reach an installed library (tests/corpus/real_cpp/sysinclude, given with
// -isystem) the way PyTorch's own kernels reach ATen and c10: a namespace alias through a
// macro (ATen's ROCM_HIPCUB), a branch hint (C10_UNLIKELY), a condition on a macro of the
// file whose value names the library's (SortUtils' HAS_WARP_MERGE_SORT), and a function
// template spelt like a macro (WARP_SHFL_XOR). Before, the first three did not parse, were
// "a macro nobody defines", or dropped the kernel; the last was refused as a macro.
#include <cub/cub.cuh>
#include <fakelib/macros.h>

#define HAS_FAST_PATH() FAKELIB_HAS_FAST_PATH()

namespace kernels {

__global__ void warp_sums(const float* x, float* out, int n) {
  namespace wcub = FAKELIB_NAMESPACE(cub);
  using Reduce = wcub::WarpReduce<float>;
  __shared__ typename Reduce::TempStorage storage[4];
  const int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (FAKELIB_UNLIKELY(i >= n)) return;
  float v = x[i];
  for (int m = 16; m > 0; m >>= 1) v += FAKELIB_SHFL_XOR(v, m);
  const float total = Reduce(storage[threadIdx.x / 32]).Sum(x[i]);
  if ((threadIdx.x & 31) == 0) out[i / 32] = v + total;
}

#if HAS_FAST_PATH()
__global__ void fast_path(float* x, int n) {
  const int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) x[i] *= 2.f;
}
#endif

__global__ void lane_sums(float* x, int n) {
  const int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) x[i] = FAKELIB_LANE_SUM(x[i]);
}

}  // namespace kernels
