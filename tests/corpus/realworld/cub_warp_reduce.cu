// cub_warp_reduce.cu -- warp-level reductions with cub::WarpReduce.
//
//   warpRowSums     one warp per matrix row, WARPS_PER_BLOCK warps per block
//                   (128 threads); a warp whose row does not exist leaves early
//   segmentSums16   logical warps of 16 threads: every 16 consecutive floats are
//                   summed into one output (256 threads per block)
#include <cub/warp/warp_reduce.cuh>

#define WARPS_PER_BLOCK 4

__global__ void warpRowSums(const int *in, int *out, int rows, int cols)
{
    typedef cub::WarpReduce<int> WarpReduce;
    __shared__ typename WarpReduce::TempStorage temp_storage[WARPS_PER_BLOCK];

    int warp_id = threadIdx.x / 32;
    int lane = threadIdx.x % 32;
    int row = blockIdx.x * WARPS_PER_BLOCK + warp_id;
    if (row >= rows) return;   // the whole warp leaves together

    int acc = 0;
    for (int c = lane; c < cols; c += 32)
        acc += in[row * cols + c];

    int total = WarpReduce(temp_storage[warp_id]).Sum(acc);
    if (lane == 0)
        out[row] = total;
}

__global__ void segmentSums16(const float *in, float *out, int n)
{
    typedef cub::WarpReduce<float, 16> HalfWarpReduce;
    __shared__ typename HalfWarpReduce::TempStorage temp_storage[256 / 16];

    const int i = blockIdx.x * blockDim.x + threadIdx.x;
    const int segment = threadIdx.x / 16;
    float v = i < n ? in[i] : 0.0f;
    float s = HalfWarpReduce(temp_storage[segment]).Sum(v);
    if (threadIdx.x % 16 == 0 && i < n)
        out[i / 16] = s;
}
