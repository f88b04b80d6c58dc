// cg_row_scan.cu -- inclusive prefix sums along the rows of an image, in
// segments of 16 pixels, with the total of every segment and a bitmask of its
// odd pixels.
//
// Blocks are 16 x 16: each row of the block (16 threads, threadIdx.x fastest) is
// one tile of a tiled_partition<16>.  Outputs per segment are indexed
// [row][blockIdx.x] with gridDim.x segments per image row.
#include <cooperative_groups.h>

using namespace cooperative_groups;

__global__ void rowSegmentScan(const int *img, int *scan, int *segTotals, unsigned int *oddMask, int width,
                               int height)
{
    __shared__ int rowTotals[16];

    thread_block block = this_thread_block();
    thread_block_tile<16> row = tiled_partition<16>(block);

    const int x = blockIdx.x * 16 + threadIdx.x;
    const int y = blockIdx.y * 16 + threadIdx.y;
    const bool inside = x < width && y < height;
    const int pixel = inside ? img[y * width + x] : 0;

    // Hillis-Steele scan within the 16-thread tile
    int v = pixel;
    for (int o = 1; o < 16; o <<= 1) {
        int up = row.shfl_up(v, o);
        if ((int)row.thread_rank() >= o)
            v += up;
    }

    unsigned int odd = row.ballot(inside && (pixel & 1));
    bool empty = row.all(!inside);   // a segment wholly outside the image
    if (inside)
        scan[y * width + x] = v;
    if (row.thread_rank() == 0 && y < height)
        oddMask[y * gridDim.x + blockIdx.x] = empty ? 0xffffffffu : odd;
    if (row.thread_rank() == 15)
        rowTotals[threadIdx.y] = v;
    sync(block);

    // the first row of threads writes the 16 segment totals of the block
    if (threadIdx.y == 0) {
        int yy = blockIdx.y * 16 + threadIdx.x;
        if (yy < height)
            segTotals[yy * gridDim.x + blockIdx.x] = rowTotals[threadIdx.x];
    }
}
