// cg_tile_stats.cu -- per-block sum and maximum using 32-thread tiles of
// cooperative groups for the warp part and plain __syncthreads() for the block
// part.  Blocks of THREADS (192) threads.
#include <climits>
#include <cooperative_groups.h>

namespace cg = cooperative_groups;

#define THREADS 192                 // 6 warps per block
#define WARPS (THREADS / 32)

__device__ int tileSum(cg::thread_block_tile<32> tile, int v)
{
    for (int o = tile.size() / 2; o > 0; o /= 2)
        v += tile.shfl_down(v, o);
    return v;
}

__device__ int tileMax(cg::thread_block_tile<32> tile, int v)
{
    for (int o = tile.size() / 2; o > 0; o /= 2)
        v = max(v, tile.shfl_down(v, o));
    return v;
}

__global__ void tileStats(const int *in, int *blockSum, int *blockMax, int n)
{
    __shared__ int warpSum[WARPS];
    __shared__ int warpMax[WARPS];

    cg::thread_block_tile<32> tile = cg::tiled_partition<32>(cg::this_thread_block());

    int i = blockIdx.x * blockDim.x + threadIdx.x;
    int v = (i < n) ? in[i] : 0;
    int m = (i < n) ? in[i] : INT_MIN;

    v = tileSum(tile, v);
    m = tileMax(tile, m);
    if (tile.thread_rank() == 0) {
        warpSum[tile.meta_group_rank()] = v;
        warpMax[tile.meta_group_rank()] = m;
    }
    __syncthreads();

    if (threadIdx.x == 0) {
        int s = 0, mx = INT_MIN;
        for (int w = 0; w < WARPS; ++w) {
            s += warpSum[w];
            mx = max(mx, warpMax[w]);
        }
        blockSum[blockIdx.x] = s;
        blockMax[blockIdx.x] = mx;
    }
}
