// mylib_reduce.cu -- reductions built on mylib/block_reduce.cuh.
#include <climits>
#include <cuda_runtime.h>

#include <mylib/block_reduce.cuh>
#include <mylib/grid.cuh>

namespace mylib {

// One partial sum per block over a grid-stride slice; BLOCK must equal blockDim.x.
template <typename T, int BLOCK>
__global__ void reduce_sum(const T *__restrict__ in, T *__restrict__ block_sums, int n)
{
    __shared__ T scratch[32];
    T acc = T(0);
    for (int i = blockIdx.x * BLOCK + threadIdx.x; i < n; i += BLOCK * gridDim.x)
        acc += in[i];
    acc = detail::block_sum(acc, scratch);
    if (threadIdx.x == 0)
        block_sums[blockIdx.x] = acc;
}

// the instantiations the library ships
template __global__ void reduce_sum<int, 256>(const int *__restrict__, int *__restrict__, int);
template __global__ void reduce_sum<float, 192>(const float *__restrict__, float *__restrict__, int);

}  // namespace mylib

using namespace mylib;

// Row-wise maximum and sum of an int matrix: one block (128 threads) per row.
__global__ void row_max_sum(const int *m, int *row_max, int *row_sum, int cols)
{
    __shared__ int scratch[32];
    const int *row = m + (size_t)blockIdx.x * cols;

    int mx = INT_MIN, s = 0;
    for (int c = threadIdx.x; c < cols; c += blockDim.x) {
        int v = row[c];
        mx = v > mx ? v : mx;
        s += v;
    }
    mx = detail::block_max(mx, scratch, INT_MIN);
    s = detail::block_sum(s, scratch);
    if (threadIdx.x == 0) {
        row_max[blockIdx.x] = mx;
        row_sum[blockIdx.x] = s;
    }
}
