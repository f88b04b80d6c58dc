/******************************************************************************
 * cub_block_reduce.cu -- block-wide reductions with CUB collectives.
 *
 *   tileSums<THREADS, ITEMS>   every block loads one tile of THREADS * ITEMS ints
 *                              (warp-striped, transposed to blocked order by
 *                              cub::BlockLoad) and stores the tile's sum; the
 *                              input is a whole number of tiles
 *   blockMax192                192 threads, one value each, maximum through
 *                              the warp-reductions variant of cub::BlockReduce
 ******************************************************************************/
#include <stdio.h>
#include <climits>

#include <cub/block/block_load.cuh>
#include <cub/block/block_reduce.cuh>

template <int THREADS, int ITEMS>
__global__ void tileSums(const int *in, int *tileTotals)
{
    using Loader = cub::BlockLoad<int, THREADS, ITEMS, cub::BLOCK_LOAD_WARP_TRANSPOSE>;
    using Reducer = cub::BlockReduce<int, THREADS>;

    __shared__ typename Loader::TempStorage loadSpace;
    __shared__ typename Reducer::TempStorage reduceSpace;

    int v[ITEMS];
    Loader(loadSpace).Load(in + (size_t)blockIdx.x * THREADS * ITEMS, v);

    const int total = Reducer(reduceSpace).Sum(v);
    if (threadIdx.x == 0)
        tileTotals[blockIdx.x] = total;
}

struct MaxOp {
    __device__ __forceinline__ int operator()(const int &a, const int &b) const { return b > a ? b : a; }
};

#define MAX_THREADS 192

__global__ void blockMax192(const int *in, int *blockMax, int n)
{
    typedef cub::BlockReduce<int, MAX_THREADS, cub::BLOCK_REDUCE_WARP_REDUCTIONS> BlockReduceT;
    __shared__ typename BlockReduceT::TempStorage temp;

    int i = blockIdx.x * MAX_THREADS + threadIdx.x;
    int v = (i < n) ? in[i] : INT_MIN;
    int m = BlockReduceT(temp).Reduce(v, MaxOp());
    if (threadIdx.x == 0)
        blockMax[blockIdx.x] = m;
}

void tile_sums_128x4(const int *d_in, int *d_out, int tiles, cudaStream_t s)
{
    tileSums<128, 4><<<tiles, 128, 0, s>>>(d_in, d_out);
}
