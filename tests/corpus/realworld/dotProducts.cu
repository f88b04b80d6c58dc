/*
 * dotProducts.cu -- many independent dot products, one block per pair of vectors
 * (blocks loop over pairs when there are more pairs than blocks).
 *
 * Each thread accumulates every DOT_THREADS-th element of the pair; thread 0 then
 * adds the DOT_THREADS partial sums in index order.
 */
#include <stdio.h>
#include <stdlib.h>
#include <vector>

#include <helper_cuda.h>
#include <helper_functions.h>

#define DOT_THREADS 120   // threads per block: 3.75 warps, tuned for pairs of ~1000 elements
#define DOT_BLOCKS 48

__global__ void batchedDot(float *results, const float *a, const float *b, int pairs, int length)
{
    __shared__ float partial[DOT_THREADS];

    for (int p = blockIdx.x; p < pairs; p += gridDim.x)
    {
        const float *x = a + (size_t)p * length;
        const float *y = b + (size_t)p * length;

        float s = 0.0f;
        for (int i = threadIdx.x; i < length; i += DOT_THREADS)
            s += x[i] * y[i];
        partial[threadIdx.x] = s;
        __syncthreads();

        if (threadIdx.x == 0)
        {
            float total = 0.0f;
            for (int t = 0; t < DOT_THREADS; t++)
                total += partial[t];
            results[p] = total;
        }
        __syncthreads();   // partial[] is rewritten for the next pair
    }
}

int main(int argc, char **argv)
{
    const int pairs = 512, length = 1000;
    findCudaDevice(argc, (const char **)argv);

    std::vector<float> hA((size_t)pairs * length), hB((size_t)pairs * length), hR(pairs);
    for (size_t i = 0; i < hA.size(); i++) {
        hA[i] = (float)((i * 7) % 13) / 13.0f;
        hB[i] = (float)((i * 5) % 11) / 11.0f;
    }

    float *dA, *dB, *dR;
    checkCudaErrors(cudaMalloc((void **)&dA, hA.size() * sizeof(float)));
    checkCudaErrors(cudaMalloc((void **)&dB, hB.size() * sizeof(float)));
    checkCudaErrors(cudaMalloc((void **)&dR, pairs * sizeof(float)));
    checkCudaErrors(cudaMemcpy(dA, hA.data(), hA.size() * sizeof(float), cudaMemcpyHostToDevice));
    checkCudaErrors(cudaMemcpy(dB, hB.data(), hB.size() * sizeof(float), cudaMemcpyHostToDevice));

    batchedDot<<<DOT_BLOCKS, DOT_THREADS>>>(dR, dA, dB, pairs, length);
    getLastCudaError("batchedDot");
    checkCudaErrors(cudaMemcpy(hR.data(), dR, pairs * sizeof(float), cudaMemcpyDeviceToHost));

    std::vector<float> ref(pairs);
    for (int p = 0; p < pairs; p++) {
        double s = 0;
        for (int i = 0; i < length; i++) s += (double)hA[(size_t)p * length + i] * hB[(size_t)p * length + i];
        ref[p] = (float)s;
    }
    bool ok = compareL2fe(ref.data(), hR.data(), pairs, 1e-5f);
    printf("batchedDot: %s\n", ok ? "PASSED" : "FAILED");

    cudaFree(dA);
    cudaFree(dB);
    cudaFree(dR);
    return ok ? 0 : 1;
}
