/*
 * cg_spelled_out.cu -- per-block statistics with cooperative_groups spelled out in
 * full (no alias, no using-directive), including the cooperative_groups::reduce
 * collective.  Blocks of 256 threads.
 */
#include <cooperative_groups.h>
#include <cooperative_groups/reduce.h>

#define CG_THREADS 256

__global__ void blockSumAndCount(const int *in, int threshold, int *sums, int *above, int n)
{
    __shared__ int partialSum[CG_THREADS / 32];
    __shared__ int partialCnt[CG_THREADS / 32];

    cooperative_groups::thread_block block = cooperative_groups::this_thread_block();
    cooperative_groups::thread_block_tile<32> warp = cooperative_groups::tiled_partition<32>(block);

    const int i = blockIdx.x * CG_THREADS + (int)block.thread_rank();
    const int v = i < n ? in[i] : 0;
    const int over = (i < n && v > threshold) ? 1 : 0;

    const int ws = cooperative_groups::reduce(warp, v, cooperative_groups::plus<int>());
    const int wc = cooperative_groups::reduce(warp, over, cooperative_groups::plus<int>());
    if (warp.thread_rank() == 0) {
        partialSum[warp.meta_group_rank()] = ws;
        partialCnt[warp.meta_group_rank()] = wc;
    }
    block.sync();

    if (warp.meta_group_rank() == 0) {
        const int k = (int)warp.thread_rank();
        int s = k < CG_THREADS / 32 ? partialSum[k] : 0;
        int c = k < CG_THREADS / 32 ? partialCnt[k] : 0;
        s = cooperative_groups::reduce(warp, s, cooperative_groups::plus<int>());
        c = cooperative_groups::reduce(warp, c, cooperative_groups::plus<int>());
        if (k == 0) {
            sums[blockIdx.x] = s;
            above[blockIdx.x] = c;
        }
    }
}
