/*
 * early_exit.cu -- kernels that leave early, as a lot of existing code does.
 *
 * pairDifference  threads past the end return BEFORE the block's barrier
 *                 (256 threads per block); the surviving threads still meet
 *                 at __syncthreads()
 * windowMax       every block walks over tilesPerBlock consecutive tiles and
 *                 returns from inside the loop, before the loop's barriers, once
 *                 its tiles run past the end (the whole block leaves at once);
 *                 WIN_TILE (128) threads per block
 */
#include <climits>
#include <cuda_runtime.h>

#define PAIR_THREADS 256
#define WIN_TILE 128
#define WIN_R 3

__global__ void pairDifference(const int *in, int *out, int n)
{
    __shared__ int s[PAIR_THREADS];

    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n) return;

    s[threadIdx.x] = in[i];
    __syncthreads();

    int partner = threadIdx.x ^ 1;
    int j = blockIdx.x * blockDim.x + partner;
    out[i] = (j < n) ? s[threadIdx.x] - s[partner] : s[threadIdx.x];
}

__global__ void windowMax(const int *in, int *out, int n, int tilesPerBlock)
{
    __shared__ int buf[WIN_TILE + 2 * WIN_R];

    for (int t = 0; t < tilesPerBlock; t++) {
        const int base = (blockIdx.x * tilesPerBlock + t) * WIN_TILE;
        if (base >= n)
            return;   // no more tiles for this block

        for (int k = threadIdx.x; k < WIN_TILE + 2 * WIN_R; k += blockDim.x) {
            int g = base - WIN_R + k;
            buf[k] = (g >= 0 && g < n) ? in[g] : INT_MIN;
        }
        __syncthreads();

        int i = base + threadIdx.x;
        if (i < n) {
            int m = INT_MIN;
            for (int d = 0; d <= 2 * WIN_R; d++)
                m = max(m, buf[threadIdx.x + d]);
            out[i] = m;
        }
        __syncthreads();
    }
}
