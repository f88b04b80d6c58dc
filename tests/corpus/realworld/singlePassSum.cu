/*
 * singlePassSum.cu -- sums a float array in ONE kernel launch.
 *
 * Blocks store their partial sums, then take a ticket from a global counter; the
 * block that draws the last ticket knows every partial is in memory (each block
 * fences before taking its ticket), adds them up and writes the grand total to
 * sums[0].  It also puts the counter back to zero for the next launch.
 *
 * Launch: any grid, SPS_THREADS threads per block.
 */
#include <stdio.h>
#include <math.h>
#include <cuda_runtime.h>
#include <helper_cuda.h>

#define SPS_THREADS 256

// how many blocks of the current launch have published their partial sum
__device__ unsigned int blocksDone = 0;

// tree sum of one value per thread; leaves the block's total in buf[0]
__device__ void treeSum(volatile float *buf, float v, unsigned int t)
{
    buf[t] = v;
    __syncthreads();
    for (unsigned int half = SPS_THREADS / 2; half > 0; half >>= 1) {
        if (t < half) {
            v = v + buf[t + half];
            buf[t] = v;
        }
        __syncthreads();
    }
}

__global__ void singlePassSum(const float *data, float *sums, unsigned int n)
{
    __shared__ float buf[SPS_THREADS];
    __shared__ bool lastBlock;
    const unsigned int t = threadIdx.x;

    float v = 0.0f;
    for (unsigned int i = blockIdx.x * SPS_THREADS + t; i < n; i += SPS_THREADS * gridDim.x)
        v += data[i];
    treeSum(buf, v, t);
    if (t == 0) sums[blockIdx.x] = buf[0];

    if (gridDim.x == 1) return;   // nothing to combine

    if (t == 0) {
        __threadfence();
        unsigned int ticket = atomicInc(&blocksDone, gridDim.x);
        lastBlock = (ticket == gridDim.x - 1);
    }
    __syncthreads();

    if (lastBlock) {
        v = 0.0f;
        for (unsigned int b = t; b < gridDim.x; b += SPS_THREADS)
            v += ((volatile float *)sums)[b];
        treeSum(buf, v, t);
        if (t == 0) {
            sums[0] = buf[0];
            blocksDone = 0;
        }
    }
}

float sumOnDevice(const float *d_data, float *d_sums, unsigned int n, int blocks)
{
    const unsigned int zero = 0;
    checkCudaErrors(cudaMemcpyToSymbol(blocksDone, &zero, sizeof(zero)));
    singlePassSum<<<blocks, SPS_THREADS>>>(d_data, d_sums, n);
    getLastCudaError("singlePassSum");
    float total;
    checkCudaErrors(cudaMemcpy(&total, d_sums, sizeof(float), cudaMemcpyDeviceToHost));
    return total;
}

int main(int argc, char **argv)
{
    const unsigned int n = 3u << 20;
    const int blocks = 80;
    findCudaDevice(argc, (const char **)argv);

    float *h = (float *)malloc(n * sizeof(float));
    double ref = 0.0;
    for (unsigned int i = 0; i < n; i++) {
        h[i] = (float)(i % 17) * 0.125f;
        ref += h[i];
    }
    float *d_data, *d_sums;
    checkCudaErrors(cudaMalloc((void **)&d_data, n * sizeof(float)));
    checkCudaErrors(cudaMalloc((void **)&d_sums, blocks * sizeof(float)));
    checkCudaErrors(cudaMemcpy(d_data, h, n * sizeof(float), cudaMemcpyHostToDevice));

    float got = sumOnDevice(d_data, d_sums, n, blocks);
    printf("sum = %.1f (expected %.1f)\n", got, ref);

    cudaFree(d_data);
    cudaFree(d_sums);
    free(h);
    return fabs(got - ref) <= 1e-4 * ref ? 0 : 1;
}
