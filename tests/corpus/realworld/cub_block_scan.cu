// cub_block_scan.cu -- stream compaction of one tile per block with cub::BlockScan.
//
// Every block takes 256 consecutive values, keeps those above `threshold`, and
// writes them (in order) to the start of its own 256-slot segment of `out`; the
// number kept goes to counts[blockIdx.x].
#include <cub/block/block_scan.cuh>

#define SCAN_BLOCK 256

__global__ void compactAboveThreshold(const int *__restrict__ in, int *__restrict__ out, int *__restrict__ counts,
                                      int n, int threshold)
{
    typedef cub::BlockScan<int, SCAN_BLOCK> BlockScanT;
    __shared__ typename BlockScanT::TempStorage scan_storage;

    const int i = blockIdx.x * SCAN_BLOCK + threadIdx.x;
    const int v = i < n ? in[i] : 0;
    const int keep = (i < n && v > threshold) ? 1 : 0;

    int position, kept;
    BlockScanT(scan_storage).ExclusiveSum(keep, position, kept);

    if (keep)
        out[blockIdx.x * SCAN_BLOCK + position] = v;
    if (threadIdx.x == 0)
        counts[blockIdx.x] = kept;
}
