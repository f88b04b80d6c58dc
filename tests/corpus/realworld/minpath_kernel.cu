/*
 * minpath_kernel.cu -- cheapest top-to-bottom path through a grid of costs, where
 * a path moves to the cell below or one of its two diagonal neighbours.
 *
 * One launch advances `nrows` rows.  A block of BLOCK_SIZE threads (set by the
 * build, e.g. -DBLOCK_SIZE=256) covers BLOCK_SIZE columns, but every row it
 * advances makes the HALO outermost columns on each side stale, so it only
 * writes the BLOCK_SIZE - 2*nrows*HALO columns in its middle.
 */
#ifndef MINPATH_KERNEL_CU
#define MINPATH_KERNEL_CU

#define HALO 1 /* stale columns per side per row advanced */

#define MIN2(a, b) ((a) < (b) ? (a) : (b))

__global__ void minpath_rows(const int *cost,    /* rows x cols */
                             const int *prevRow, /* best cost so far, cols entries */
                             int *nextRow,       /* result after nrows more rows */
                             int cols,
                             int firstRow,
                             int nrows)
{
    __shared__ int acc[2][BLOCK_SIZE];

    const int t = threadIdx.x;
    const int owned = BLOCK_SIZE - 2 * nrows * HALO;
    const int col = blockIdx.x * owned - nrows * HALO + t;
    const int colc = col < 0 ? 0 : (col >= cols ? cols - 1 : col);

    acc[0][t] = prevRow[colc];
    __syncthreads();

    int cur = 0;
    for (int r = 0; r < nrows; r++)
    {
        const int lo = (r + 1) * HALO, hi = BLOCK_SIZE - 1 - (r + 1) * HALO;
        if (t >= lo && t <= hi)
        {
            int best = acc[cur][t];
            if (col > 0)
                best = MIN2(best, acc[cur][t - 1]);
            if (col < cols - 1)
                best = MIN2(best, acc[cur][t + 1]);
            acc[cur ^ 1][t] = best + cost[(firstRow + r) * cols + colc];
        }
        cur ^= 1;
        __syncthreads();
    }

    if (t >= nrows * HALO && t < BLOCK_SIZE - nrows * HALO && col >= 0 && col < cols)
        nextRow[col] = acc[cur][t];
}

#endif
