// cg_segment_min.cu -- minimum of every 8 consecutive values, and of every block.
//
// Written against cooperative groups under the short alias `g`.  Blocks hold 120
// threads (15 tiles of 8); the last warp of a block is partial, which tiles of 8
// do not mind.
#include <cooperative_groups.h>

namespace g = cooperative_groups;

#define SEG 8
#define SEG_THREADS 120   // threads per block; a multiple of SEG

__global__ void segmentMin8(const unsigned int *in, unsigned int *segMin, unsigned int *blockMin, unsigned int n)
{
    __shared__ unsigned int tileMins[SEG_THREADS / SEG];

    g::thread_block block = g::this_thread_block();
    g::thread_block_tile<SEG> seg = g::tiled_partition<SEG>(block);

    unsigned int idx = blockIdx.x * block.size() + block.thread_rank();
    unsigned int v = idx < n ? in[idx] : 0xffffffffu;

    for (int o = SEG / 2; o > 0; o >>= 1)
        v = min(v, seg.shfl_xor(v, o));

    if (seg.thread_rank() == 0) {
        tileMins[block.thread_rank() / SEG] = v;
        if (idx < n)
            segMin[idx / SEG] = v;
    }
    g::sync(block);

    if (block.thread_rank() == 0) {
        unsigned int m = 0xffffffffu;
        for (unsigned int t = 0; t < block.size() / SEG; ++t)
            m = min(m, tileMins[t]);
        blockMin[blockIdx.x] = m;
    }
}
