// mylib_norms.cu -- squared row norms of a dense matrix, templated on precision.
//
// One block per row; dynamic shared memory of blockDim.x * sizeof(T) bytes,
// obtained through mylib::SharedMemory so that float and double instances can
// live in the same program.  blockDim.x must be a power of two.
#include <cuda_runtime.h>

#include <mylib/shared_memory.cuh>

namespace {

template <typename T>
__device__ inline T square(T v) { return v * v; }

constexpr int kNormThreads = 128;

}  // namespace

using namespace mylib;

template <typename T>
__global__ void row_sumsq(const T *__restrict__ a, T *__restrict__ out, int cols)
{
    T *sdata = SharedMemory<T>();
    const T *row = a + (size_t)blockIdx.x * cols;

    T acc = 0;
    for (int c = threadIdx.x; c < cols; c += blockDim.x)
        acc += square(row[c]);
    sdata[threadIdx.x] = acc;
    __syncthreads();

    for (unsigned int s = blockDim.x / 2; s > 0; s >>= 1) {
        if (threadIdx.x < s)
            sdata[threadIdx.x] += sdata[threadIdx.x + s];
        __syncthreads();
    }
    if (threadIdx.x == 0)
        out[blockIdx.x] = sdata[0];
}

template <typename T>
void row_sumsq_async(const T *a, T *out, int rows, int cols, cudaStream_t stream)
{
    row_sumsq<T><<<rows, kNormThreads, kNormThreads * sizeof(T), stream>>>(a, out, cols);
}

template void row_sumsq_async<float>(const float *, float *, int, int, cudaStream_t);
template void row_sumsq_async<double>(const double *, double *, int, int, cudaStream_t);
