/*
 * vectorAdd.cu
 *
 * Smallest possible CUDA program: element-wise sum of two float vectors.
 * Allocates host and device buffers, copies the inputs over, runs one thread per
 * element (blocks of 256 threads) and checks every element on the host.
 */

#include <stdio.h>
#include <stdlib.h>
#include <math.h>

#include <cuda_runtime.h>
#include <helper_cuda.h>

// sum[k] = lhs[k] + rhs[k] for k < count
__global__ void vectorAdd(const float *lhs, const float *rhs, float *sum, int count)
{
    int k = blockIdx.x * blockDim.x + threadIdx.x;
    if (k < count)
        sum[k] = lhs[k] + rhs[k];
}

static void fillRandom(float *v, int count)
{
    for (int k = 0; k < count; k++)
        v[k] = (float)rand() / (float)RAND_MAX;
}

int main(int argc, char **argv)
{
    const int count = 1 << 16;
    const size_t bytes = count * sizeof(float);

    findCudaDevice(argc, (const char **)argv);
    printf("Adding two vectors of %d floats\n", count);

    float *hostLhs = (float *)malloc(bytes);
    float *hostRhs = (float *)malloc(bytes);
    float *hostSum = (float *)malloc(bytes);
    if (!hostLhs || !hostRhs || !hostSum) {
        fprintf(stderr, "out of host memory\n");
        return EXIT_FAILURE;
    }
    fillRandom(hostLhs, count);
    fillRandom(hostRhs, count);

    float *devLhs, *devRhs, *devSum;
    checkCudaErrors(cudaMalloc((void **)&devLhs, bytes));
    checkCudaErrors(cudaMalloc((void **)&devRhs, bytes));
    checkCudaErrors(cudaMalloc((void **)&devSum, bytes));
    checkCudaErrors(cudaMemcpy(devLhs, hostLhs, bytes, cudaMemcpyHostToDevice));
    checkCudaErrors(cudaMemcpy(devRhs, hostRhs, bytes, cudaMemcpyHostToDevice));

    const int threads = 256;
    const int blocks = (count + threads - 1) / threads;
    vectorAdd<<<blocks, threads>>>(devLhs, devRhs, devSum, count);
    getLastCudaError("vectorAdd");
    checkCudaErrors(cudaMemcpy(hostSum, devSum, bytes, cudaMemcpyDeviceToHost));

    int errors = 0;
    for (int k = 0; k < count; k++)
        if (fabsf(hostLhs[k] + hostRhs[k] - hostSum[k]) > 1e-5f)
            errors++;
    printf("%s (%d mismatches)\n", errors ? "FAILED" : "PASSED", errors);

    cudaFree(devLhs);
    cudaFree(devRhs);
    cudaFree(devSum);
    free(hostLhs);
    free(hostRhs);
    free(hostSum);
    return errors ? EXIT_FAILURE : EXIT_SUCCESS;
}
