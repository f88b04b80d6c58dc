// mylib_elementwise.cu -- element-wise kernels of mylib.
//
// Host wrappers launch with kDefaultThreads threads and as many blocks as needed,
// capped; the kernels are grid-stride loops, so any grid is correct.
#include <algorithm>
#include <cuda_runtime.h>

#include <mylib/config.cuh>
#include <mylib/grid.cuh>
#include <mylib/math.cuh>

namespace mylib {

constexpr int kDefaultThreads = 256;

// x[i] *= a  (the per-element work is detail::scale, a device function)
__global__ void scale(float *__restrict__ x, float a, int n)
{
    for (int i = global_thread_id(); i < n; i += grid_stride())
        x[i] = detail::scale(x[i], a);
}

// z = a*x + b*y, clamped to [lo, hi]; launched with 128 threads per block
__global__ void axpby_clamped(const float *__restrict__ x, const float *__restrict__ y, float *__restrict__ z,
                              float a, float b, float lo, float hi, int n)
{
    for (int i = global_thread_id(); i < n; i += grid_stride())
        z[i] = detail::clamp(a * x[i] + b * y[i], lo, hi);
}

void scale_async(float *x, float a, int n, cudaStream_t stream)
{
    int blocks = std::min(ceil_div(n, kDefaultThreads), 1024);
    scale<<<blocks, kDefaultThreads, 0, stream>>>(x, a, n);
}

void axpby_clamped_async(const float *x, const float *y, float *z, float a, float b, float lo, float hi, int n,
                         cudaStream_t stream)
{
    axpby_clamped<<<std::min(ceil_div(n, 128), 1024), 128, 0, stream>>>(x, y, z, a, b, lo, hi, n);
}

}  // namespace mylib
