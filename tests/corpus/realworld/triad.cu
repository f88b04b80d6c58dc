// triad.cu -- memory bandwidth of the "triad" c = a + scalar * b, swept over
// block sizes 128 .. 1024.
//
// The kernel has no bounds check: n is a multiple of every block size of the
// sweep and the host launches exactly n / blockSize blocks.  Results are
// reported for the default of 128 threads per block.

#include <stdio.h>
#include <stdlib.h>
#include <iostream>
#include <vector>

#include <cuda_runtime.h>

#define CUDA_OK(expr)                                                                 \
    do {                                                                              \
        cudaError_t status_ = (expr);                                                 \
        if (status_ != cudaSuccess) {                                                 \
            fprintf(stderr, "%s failed at %s:%d: %s\n", #expr, __FILE__, __LINE__,     \
                    cudaGetErrorString(status_));                                     \
            exit(1);                                                                  \
        }                                                                             \
    } while (0)

__global__ void triad(const float *a, const float *b, float *c, float scalar)
{
    const int i = blockIdx.x * blockDim.x + threadIdx.x;
    c[i] = a[i] + scalar * b[i];
}

struct Sample {
    int threads;
    double gbPerSec;
};

static std::vector<Sample> sweep(int n, int reps)
{
    std::vector<Sample> out;
    std::vector<float> host(n);
    for (int i = 0; i < n; i++) host[i] = (float)(i & 1023) * 0.25f;

    float *a, *b, *c;
    CUDA_OK(cudaMalloc(&a, n * sizeof(float)));
    CUDA_OK(cudaMalloc(&b, n * sizeof(float)));
    CUDA_OK(cudaMalloc(&c, n * sizeof(float)));
    CUDA_OK(cudaMemcpy(a, host.data(), n * sizeof(float), cudaMemcpyHostToDevice));
    CUDA_OK(cudaMemcpy(b, host.data(), n * sizeof(float), cudaMemcpyHostToDevice));

    cudaEvent_t t0, t1;
    CUDA_OK(cudaEventCreate(&t0));
    CUDA_OK(cudaEventCreate(&t1));
    for (int threads = 128; threads <= 1024; threads <<= 1) {
        if (n % threads) continue;
        CUDA_OK(cudaEventRecord(t0));
        for (int r = 0; r < reps; r++) triad<<<n / threads, threads>>>(a, b, c, 1.75f);
        CUDA_OK(cudaEventRecord(t1));
        CUDA_OK(cudaEventSynchronize(t1));
        float ms = 0.0f;
        CUDA_OK(cudaEventElapsedTime(&ms, t0, t1));
        out.push_back({threads, 3.0 * sizeof(float) * n * reps / (ms * 1.0e6)});
    }
    CUDA_OK(cudaEventDestroy(t0));
    CUDA_OK(cudaEventDestroy(t1));
    CUDA_OK(cudaFree(a));
    CUDA_OK(cudaFree(b));
    CUDA_OK(cudaFree(c));
    return out;
}

int main(int argc, char **argv)
{
    const int n = argc > 1 ? atoi(argv[1]) : (1 << 24);
    for (const Sample &s : sweep(n, 10))
        std::cout << "triad threads=" << s.threads << " bandwidth=" << s.gbPerSec << " GB/s\n";
    return 0;
}
