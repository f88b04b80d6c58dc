/*
 * matrixMul.cu -- dense single-precision matrix product C(M x N) = A(M x K) * B(K x N),
 * all row-major.
 *
 * matMulTiled<TILE> stages TILE x TILE sub-blocks of A and B in shared memory and
 * is launched with TILE x TILE threads; any M, N, K work (edges are zero-padded).
 * main() times the kernel for TILE = 8 and TILE = 16.
 */
#include <stdio.h>
#include <stdlib.h>
#include <assert.h>

#include <chrono>
#include <iostream>
#include <vector>

#include <cuda_runtime.h>
#include <helper_cuda.h>
#include <helper_functions.h>

template <int TILE>
__global__ void matMulTiled(float *C, const float *A, const float *B, int M, int N, int K)
{
    __shared__ float sA[TILE][TILE];
    __shared__ float sB[TILE][TILE];

    const int row = blockIdx.y * TILE + threadIdx.y;   // row of C
    const int col = blockIdx.x * TILE + threadIdx.x;   // column of C

    float dot = 0.0f;
    const int phases = (K + TILE - 1) / TILE;

    for (int p = 0; p < phases; ++p) {
        const int ak = p * TILE + threadIdx.x;     // column of A this thread loads
        const int bk = p * TILE + threadIdx.y;     // row of B this thread loads

        sA[threadIdx.y][threadIdx.x] = (row < M && ak < K) ? A[(size_t)row * K + ak] : 0.0f;
        sB[threadIdx.y][threadIdx.x] = (bk < K && col < N) ? B[(size_t)bk * N + col] : 0.0f;
        __syncthreads();

#pragma unroll
        for (int k = 0; k < TILE; ++k)
            dot += sA[threadIdx.y][k] * sB[k][threadIdx.x];

        __syncthreads();   // before the next phase overwrites the tiles
    }

    if (row < M && col < N)
        C[(size_t)row * N + col] = dot;
}

static void randomFill(std::vector<float> &m)
{
    for (auto &v : m) v = (float)(rand() % 100) / 50.0f - 1.0f;
}

template <int TILE>
static double timeMatMul(float *dC, const float *dA, const float *dB, int M, int N, int K, int reps)
{
    dim3 block(TILE, TILE);
    dim3 grid(iDivUp(N, TILE), iDivUp(M, TILE));
    matMulTiled<TILE><<<grid, block>>>(dC, dA, dB, M, N, K);  // warm-up
    getLastCudaError("matMulTiled");
    checkCudaErrors(cudaDeviceSynchronize());

    auto t0 = std::chrono::high_resolution_clock::now();
    for (int r = 0; r < reps; ++r)
        matMulTiled<TILE><<<grid, block>>>(dC, dA, dB, M, N, K);
    checkCudaErrors(cudaDeviceSynchronize());
    auto t1 = std::chrono::high_resolution_clock::now();
    return std::chrono::duration<double, std::milli>(t1 - t0).count() / reps;
}

int main(int argc, char **argv)
{
    const int M = 640, N = 480, K = 320;
    findCudaDevice(argc, (const char **)argv);

    std::vector<float> hA((size_t)M * K), hB((size_t)K * N), hC((size_t)M * N);
    srand(7);
    randomFill(hA);
    randomFill(hB);

    float *dA, *dB, *dC;
    checkCudaErrors(cudaMalloc(&dA, hA.size() * sizeof(float)));
    checkCudaErrors(cudaMalloc(&dB, hB.size() * sizeof(float)));
    checkCudaErrors(cudaMalloc(&dC, hC.size() * sizeof(float)));
    checkCudaErrors(cudaMemcpy(dA, hA.data(), hA.size() * sizeof(float), cudaMemcpyHostToDevice));
    checkCudaErrors(cudaMemcpy(dB, hB.data(), hB.size() * sizeof(float), cudaMemcpyHostToDevice));

    const double flops = 2.0 * M * N * K;
    double ms8 = timeMatMul<8>(dC, dA, dB, M, N, K, 50);
    double ms16 = timeMatMul<16>(dC, dA, dB, M, N, K, 50);
    std::cout << "TILE  8: " << ms8 << " ms, " << flops / (ms8 * 1e6) << " GFLOP/s\n";
    std::cout << "TILE 16: " << ms16 << " ms, " << flops / (ms16 * 1e6) << " GFLOP/s\n";

    checkCudaErrors(cudaMemcpy(hC.data(), dC, hC.size() * sizeof(float), cudaMemcpyDeviceToHost));

    // spot-check a few entries against a double-precision dot product
    int bad = 0;
    for (int s = 0; s < 64; ++s) {
        int i = (s * 37) % M, j = (s * 91) % N;
        double ref = 0.0;
        for (int k = 0; k < K; ++k) ref += (double)hA[(size_t)i * K + k] * hB[(size_t)k * N + j];
        if (fabs(ref - hC[(size_t)i * N + j]) > 1e-3 * (1.0 + fabs(ref))) ++bad;
    }
    printf("%s\n", bad ? "Result = FAIL" : "Result = PASS");

    checkCudaErrors(cudaFree(dA));
    checkCudaErrors(cudaFree(dB));
    checkCudaErrors(cudaFree(dC));
    return bad ? EXIT_FAILURE : EXIT_SUCCESS;
}
