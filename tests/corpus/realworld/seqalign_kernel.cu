/*
 * seqalign_kernel.cu -- global sequence alignment (Needleman-Wunsch) score matrix.
 *
 * score is (n+1) x (n+1); its first row and column hold the gap penalties
 * (nw_init_borders).  The n x n interior is cut into TILE_W x TILE_W tiles, which
 * are filled one anti-diagonal of tiles per launch (tiles (r, c) with r + c ==
 * diag, r = firstTileRow + blockIdx.x).  Inside a tile the TILE_W threads sweep
 * the cells along anti-diagonals too, one per step.
 */
#ifndef SEQALIGN_KERNEL_CU
#define SEQALIGN_KERNEL_CU

#define TILE_W 16   // threads per block == tile width

__host__ __device__ inline int max3(int a, int b, int c)
{
    int m = a > b ? a : b;
    return m > c ? m : c;
}

// score[i][0] = score[0][i] = -i * gap; any 1-D block (the driver uses 256 threads)
__global__ void nw_init_borders(int *score, int n, int gap)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i <= n) {
        score[i * (n + 1)] = -i * gap;
        score[i] = -i * gap;
    }
}

__global__ void nw_tile_diagonal(const int *sim,   // n x n substitution scores
                                 int *score,       // (n+1) x (n+1)
                                 int n,
                                 int diag,
                                 int firstTileRow,
                                 int gap)
{
    __shared__ int s[TILE_W + 1][TILE_W + 1];
    __shared__ int ref[TILE_W][TILE_W];

    const int w = n + 1;
    const int t = threadIdx.x;
    const int tileRow = firstTileRow + blockIdx.x;
    const int tileCol = diag - tileRow;
    const int r0 = tileRow * TILE_W;   // the tile covers score rows r0+1 .. r0+TILE_W
    const int c0 = tileCol * TILE_W;

    // the row above and the column left of the tile are already final
    if (t == 0)
        s[0][0] = score[r0 * w + c0];
    s[0][t + 1] = score[r0 * w + c0 + t + 1];
    s[t + 1][0] = score[(r0 + t + 1) * w + c0];
    for (int r = 0; r < TILE_W; r++)
        ref[r][t] = sim[(r0 + r) * n + c0 + t];
    __syncthreads();

    for (int step = 0; step < 2 * TILE_W - 1; step++) {
        int r = step - t;   // the row column t works on in this step
        if (r >= 0 && r < TILE_W)
            s[r + 1][t + 1] = max3(s[r][t] + ref[r][t],
                                   s[r][t + 1] - gap,
                                   s[r + 1][t] - gap);
        __syncthreads();
    }

    for (int r = 0; r < TILE_W; r++)
        score[(r0 + r + 1) * w + c0 + t + 1] = s[r + 1][t + 1];
}

#endif
