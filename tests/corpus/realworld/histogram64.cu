// histogram64.cu
//
// Counts the 6-bit fields of 32-bit words into 64 bins.
//
//   blockHist64   every block builds a private histogram in shared memory over its
//                 grid-stride share of the words and stores it as one row of
//                 `partials` (gridDim.x rows of 64 counters)
//   mergeHist64   one block per bin adds that bin's column of `partials`
//
// Word w contributes bins (w >> 2) & 63, (w >> 10) & 63, (w >> 18) & 63, (w >> 26) & 63.
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <helper_cuda.h>
#include <helper_functions.h>

#define BIN_COUNT 64
#define HIST_THREADS 192   // 6 warps per block
#define HIST_BLOCKS 32     // rows of the partial histogram
#define MERGE_THREADS 256

__device__ inline void countFields(unsigned int *bins, unsigned int w)
{
    atomicAdd(&bins[(w >> 2) & 63u], 1u);
    atomicAdd(&bins[(w >> 10) & 63u], 1u);
    atomicAdd(&bins[(w >> 18) & 63u], 1u);
    atomicAdd(&bins[(w >> 26) & 63u], 1u);
}

__global__ void blockHist64(unsigned int *partials, const unsigned int *words, unsigned int count)
{
    __shared__ unsigned int bins[BIN_COUNT];

    for (unsigned int b = threadIdx.x; b < BIN_COUNT; b += blockDim.x)
        bins[b] = 0;
    __syncthreads();

    const unsigned int stride = gridDim.x * blockDim.x;
    for (unsigned int i = blockIdx.x * blockDim.x + threadIdx.x; i < count; i += stride)
        countFields(bins, words[i]);
    __syncthreads();

    unsigned int *myRow = partials + blockIdx.x * BIN_COUNT;
    for (unsigned int b = threadIdx.x; b < BIN_COUNT; b += blockDim.x)
        myRow[b] = bins[b];
}

__global__ void mergeHist64(unsigned int *hist, const unsigned int *partials, unsigned int rows)
{
    __shared__ unsigned int acc[MERGE_THREADS];
    const unsigned int bin = blockIdx.x;

    unsigned int s = 0;
    for (unsigned int r = threadIdx.x; r < rows; r += MERGE_THREADS)
        s += partials[r * BIN_COUNT + bin];
    acc[threadIdx.x] = s;
    __syncthreads();

    for (unsigned int half = MERGE_THREADS / 2; half > 0; half /= 2) {
        if (threadIdx.x < half)
            acc[threadIdx.x] += acc[threadIdx.x + half];
        __syncthreads();
    }
    if (threadIdx.x == 0)
        hist[bin] = acc[0];
}

static void hist64Host(unsigned int *hist, const unsigned int *words, unsigned int count)
{
    memset(hist, 0, BIN_COUNT * sizeof(unsigned int));
    for (unsigned int i = 0; i < count; ++i)
        for (int shift = 2; shift < 32; shift += 8)
            hist[(words[i] >> shift) & 63u]++;
}

int main(int argc, char **argv)
{
    const unsigned int count = 1u << 24;
    findCudaDevice(argc, (const char **)argv);

    unsigned int *h_words = (unsigned int *)malloc(count * sizeof(unsigned int));
    unsigned int h_ref[BIN_COUNT], h_gpu[BIN_COUNT];
    unsigned int seed = 12345u;
    for (unsigned int i = 0; i < count; ++i) {
        seed = seed * 1664525u + 1013904223u;
        h_words[i] = seed;
    }

    unsigned int *d_words, *d_partials, *d_hist;
    checkCudaErrors(cudaMalloc((void **)&d_words, count * sizeof(unsigned int)));
    checkCudaErrors(cudaMalloc((void **)&d_partials, HIST_BLOCKS * BIN_COUNT * sizeof(unsigned int)));
    checkCudaErrors(cudaMalloc((void **)&d_hist, BIN_COUNT * sizeof(unsigned int)));
    checkCudaErrors(cudaMemcpy(d_words, h_words, count * sizeof(unsigned int), cudaMemcpyHostToDevice));

    StopWatch sw;
    sw.start();
    blockHist64<<<HIST_BLOCKS, HIST_THREADS>>>(d_partials, d_words, count);
    getLastCudaError("blockHist64");
    mergeHist64<<<BIN_COUNT, MERGE_THREADS>>>(d_hist, d_partials, HIST_BLOCKS);
    getLastCudaError("mergeHist64");
    checkCudaErrors(cudaDeviceSynchronize());
    sw.stop();

    checkCudaErrors(cudaMemcpy(h_gpu, d_hist, sizeof(h_gpu), cudaMemcpyDeviceToHost));
    hist64Host(h_ref, h_words, count);
    bool ok = compareData(h_ref, h_gpu, BIN_COUNT);
    printf("histogram64: %.3f ms, %s\n", sw.getTime(), ok ? "OK" : "MISMATCH");

    cudaFree(d_words);
    cudaFree(d_partials);
    cudaFree(d_hist);
    free(h_words);
    return ok ? 0 : 1;
}
