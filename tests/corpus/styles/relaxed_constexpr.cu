// Written for a build with --expt-relaxed-constexpr, as PyTorch's extension builds are:
// device code calls the C++ library's constexpr functions (std::max, std::numeric_limits)
// and constexpr helpers of the file's own that carry no execution space; kernel templates
// keep small lambdas, some of which read the block.
#include <algorithm>
#include <limits>
#include <cuda_fp16.h>

namespace detail {
constexpr int round_up(int x, int m) { return (x + m - 1) / m * m; }

template <typename T>
constexpr T clamp_to(T v, T lo, T hi) { return v < lo ? lo : (v > hi ? hi : v); }
}  // namespace detail

template <typename scalar_t, int kVec>
__global__ void clamp_rows(const scalar_t* __restrict__ in, scalar_t* __restrict__ out, int cols,
                           float lo, float hi) {
  const int row = blockIdx.x;
  const int padded = detail::round_up(cols, kVec);
  auto at = [](int r, int c, int ld) { return r * ld + c; };
  auto first = [] { return static_cast<int>(threadIdx.x); };  // reads the block
  for (int c = first(); c < cols; c += blockDim.x) {
    const float v = static_cast<float>(in[at(row, c, cols)]);
    out[at(row, c, padded)] = static_cast<scalar_t>(detail::clamp_to(v, lo, hi));
  }
}

template <typename T>
__global__ void row_warp_max(const T* __restrict__ x, T* __restrict__ y, int cols) {
  T m = std::numeric_limits<T>::lowest();
  for (int c = threadIdx.x; c < cols; c += blockDim.x) m = std::max(m, x[blockIdx.x * cols + c]);
#pragma unroll
  for (int offset = 16; offset > 0; offset >>= 1) m = std::max(m, __shfl_xor_sync(0xffffffffu, m, offset));
  const int warps = blockDim.x / 32;
  if ((threadIdx.x & 31) == 0) y[blockIdx.x * warps + threadIdx.x / 32] = m;
}

template __global__ void clamp_rows<__half, 8>(const __half*, __half*, int, float, float);
template __global__ void clamp_rows<float, 4>(const float*, float*, int, float, float);
template __global__ void row_warp_max<float>(const float*, float*, int);
