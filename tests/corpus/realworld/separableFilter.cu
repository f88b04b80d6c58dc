// separableFilter.cu
//
// Blurs a single-channel float image with a separable filter: a horizontal pass
// (filterRows, 32x8 threads, two output pixels per thread) followed by a vertical
// pass (filterColumns, 16x16 threads).  The filter taps sit in constant memory
// and are uploaded once by uploadTaps().  Pixels outside the image repeat the
// nearest edge pixel.

#include <stdio.h>
#include <stdlib.h>
#include <chrono>
#include <iostream>
#include <vector>

#include <helper_cuda.h>

#define FILTER_RADIUS 6
#define FILTER_TAPS (2 * FILTER_RADIUS + 1)

__constant__ float c_taps[FILTER_TAPS];

#define ROW_THREADS_X 32
#define ROW_THREADS_Y 8
#define ROW_OUTPUTS 2                                   // pixels per thread
#define ROW_STRIP (ROW_THREADS_X * ROW_OUTPUTS)         // 64 pixels per block row

#define COL_THREADS 16                                  // 16 x 16 blocks

__device__ __forceinline__ int clampi(int v, int lo, int hi) { return v < lo ? lo : (v > hi ? hi : v); }

__global__ void filterRows(float *dst, const float *src, int width, int height)
{
    __shared__ float line[ROW_THREADS_Y][ROW_STRIP + 2 * FILTER_RADIUS];

    const int y = blockIdx.y * ROW_THREADS_Y + threadIdx.y;
    const int stripStart = blockIdx.x * ROW_STRIP;
    const int yc = clampi(y, 0, height - 1);
    const float *row = src + (size_t)yc * width;

    // stage the strip plus FILTER_RADIUS pixels on each side
    for (int k = threadIdx.x; k < ROW_STRIP + 2 * FILTER_RADIUS; k += ROW_THREADS_X)
        line[threadIdx.y][k] = row[clampi(stripStart - FILTER_RADIUS + k, 0, width - 1)];
    __syncthreads();

    if (y >= height) return;   // nothing below this point touches shared memory

#pragma unroll
    for (int o = 0; o < ROW_OUTPUTS; ++o) {
        const int local = threadIdx.x + o * ROW_THREADS_X;
        const int x = stripStart + local;
        float acc = 0.0f;
#pragma unroll
        for (int t = 0; t < FILTER_TAPS; ++t)
            acc += c_taps[t] * line[threadIdx.y][local + t];
        if (x < width)
            dst[(size_t)y * width + x] = acc;
    }
}

__global__ void filterColumns(float *dst, const float *src, int width, int height)
{
    __shared__ float tile[COL_THREADS + 2 * FILTER_RADIUS][COL_THREADS];

    const int x = blockIdx.x * COL_THREADS + threadIdx.x;
    const int y = blockIdx.y * COL_THREADS + threadIdx.y;
    const int xc = clampi(x, 0, width - 1);
    const int top = blockIdx.y * COL_THREADS - FILTER_RADIUS;

    for (int r = threadIdx.y; r < COL_THREADS + 2 * FILTER_RADIUS; r += COL_THREADS)
        tile[r][threadIdx.x] = src[(size_t)clampi(top + r, 0, height - 1) * width + xc];
    __syncthreads();

    if (x < width && y < height) {
        float acc = 0.0f;
#pragma unroll
        for (int t = 0; t < FILTER_TAPS; ++t)
            acc += c_taps[t] * tile[threadIdx.y + t][threadIdx.x];
        dst[(size_t)y * width + x] = acc;
    }
}

void uploadTaps(const std::vector<float> &taps)
{
    if (taps.size() != FILTER_TAPS) {
        fprintf(stderr, "expected %d taps, got %zu\n", FILTER_TAPS, taps.size());
        exit(EXIT_FAILURE);
    }
    checkCudaErrors(cudaMemcpyToSymbol(c_taps, taps.data(), FILTER_TAPS * sizeof(float)));
}

void blurGPU(float *d_out, float *d_tmp, const float *d_in, int width, int height)
{
    dim3 rowBlock(ROW_THREADS_X, ROW_THREADS_Y);
    dim3 rowGrid(iDivUp(width, ROW_STRIP), iDivUp(height, ROW_THREADS_Y));
    filterRows<<<rowGrid, rowBlock>>>(d_tmp, d_in, width, height);
    getLastCudaError("filterRows");

    dim3 colBlock(COL_THREADS, COL_THREADS);
    dim3 colGrid(iDivUp(width, COL_THREADS), iDivUp(height, COL_THREADS));
    filterColumns<<<colGrid, colBlock>>>(d_out, d_tmp, width, height);
    getLastCudaError("filterColumns");
}

int main(int argc, char **argv)
{
    int width = 1920, height = 1080;
    if (argc > 2) {
        width = atoi(argv[1]);
        height = atoi(argv[2]);
    }
    findCudaDevice(argc, (const char **)argv);

    // binomial-ish weights, normalised
    std::vector<float> taps(FILTER_TAPS);
    float norm = 0.0f;
    for (int t = 0; t < FILTER_TAPS; ++t) {
        int d = t - FILTER_RADIUS;
        taps[t] = 1.0f / (1.0f + d * d);
        norm += taps[t];
    }
    for (float &w : taps) w /= norm;
    uploadTaps(taps);

    std::vector<float> image((size_t)width * height);
    for (size_t i = 0; i < image.size(); ++i) image[i] = (float)((i * 2654435761u) >> 24) / 255.0f;

    float *d_in, *d_tmp, *d_out;
    size_t bytes = image.size() * sizeof(float);
    checkCudaErrors(cudaMalloc(&d_in, bytes));
    checkCudaErrors(cudaMalloc(&d_tmp, bytes));
    checkCudaErrors(cudaMalloc(&d_out, bytes));
    checkCudaErrors(cudaMemcpy(d_in, image.data(), bytes, cudaMemcpyHostToDevice));

    const int reps = 20;
    auto begin = std::chrono::steady_clock::now();
    for (int r = 0; r < reps; ++r) blurGPU(d_out, d_tmp, d_in, width, height);
    checkCudaErrors(cudaDeviceSynchronize());
    auto end = std::chrono::steady_clock::now();
    double ms = std::chrono::duration<double, std::milli>(end - begin).count() / reps;
    std::cout << width << "x" << height << " blur: " << ms << " ms, "
              << (width * (double)height / (ms * 1e3)) << " MPix/s" << std::endl;

    checkCudaErrors(cudaMemcpy(image.data(), d_out, bytes, cudaMemcpyDeviceToHost));
    checkCudaErrors(cudaFree(d_in));
    checkCudaErrors(cudaFree(d_tmp));
    checkCudaErrors(cudaFree(d_out));
    return 0;
}
