// mylib_softmax.cu -- numerically stable softmax over the rows of a matrix.
//
// One block of 128 threads per row: block maximum, then the sum of exp(x - max),
// both with the block reductions of mylib, then the normalised outputs.
#include <cfloat>
#include <cuda_runtime.h>

#include <mylib/block_reduce.cuh>

namespace mylib {
namespace nn {

namespace detail {
// rows are processed in place when in == out
struct RowView {
    const float *in;
    float *out;
};
}  // namespace detail

__global__ void softmax_rows(const float *in, float *out, int cols)
{
    __shared__ float scratch[32];
    detail::RowView row{in + (size_t)blockIdx.x * cols, out + (size_t)blockIdx.x * cols};

    float mx = -FLT_MAX;
    for (int c = threadIdx.x; c < cols; c += blockDim.x)
        mx = fmaxf(mx, row.in[c]);
    mx = mylib::detail::block_max(mx, scratch, -FLT_MAX);

    float s = 0.0f;
    for (int c = threadIdx.x; c < cols; c += blockDim.x)
        s += expf(row.in[c] - mx);
    s = mylib::detail::block_sum(s, scratch);

    const float inv = 1.0f / s;
    for (int c = threadIdx.x; c < cols; c += blockDim.x)
        row.out[c] = expf(row.in[c] - mx) * inv;
}

}  // namespace nn
}  // namespace mylib

void softmax(const float *in, float *out, int rows, int cols, cudaStream_t stream)
{
    mylib::nn::softmax_rows<<<rows, 128, 0, stream>>>(in, out, cols);
}
