// transpose.cu -- out-of-place transpose of a rows x cols float matrix.
//
// Two versions, both launched on 32 x 8 threads per 32 x 32 tile (every thread
// moves 4 elements):
//   copyTransposeNaive   reads rows, writes columns straight to global memory
//   copyTransposeTiled   goes through a padded shared-memory tile so that both
//                        the reads and the writes are contiguous
// Any matrix size works; partial tiles are masked.

#include <stdio.h>
#include <iostream>
#include <vector>

#include <helper_cuda.h>
#include <helper_timer.h>

#define TILE 32
#define ROWS_PER_PASS 8

__global__ void copyTransposeNaive(float *out, const float *in, int rows, int cols)
{
    int c = blockIdx.x * TILE + threadIdx.x;
    int r0 = blockIdx.y * TILE + threadIdx.y;

    for (int dr = 0; dr < TILE; dr += ROWS_PER_PASS) {
        int r = r0 + dr;
        if (r < rows && c < cols)
            out[(size_t)c * rows + r] = in[(size_t)r * cols + c];
    }
}

__global__ void copyTransposeTiled(float *out, const float *in, int rows, int cols)
{
    __shared__ float buf[TILE][TILE + 1];   // +1: no bank conflicts on the column reads

    int c = blockIdx.x * TILE + threadIdx.x;
    int r = blockIdx.y * TILE + threadIdx.y;
    for (int dr = 0; dr < TILE; dr += ROWS_PER_PASS)
        if (r + dr < rows && c < cols)
            buf[threadIdx.y + dr][threadIdx.x] = in[(size_t)(r + dr) * cols + c];

    __syncthreads();

    // the block's tile lands at (blockIdx.x, blockIdx.y) swapped
    int oc = blockIdx.y * TILE + threadIdx.x;   // column in out == row in in
    int orow = blockIdx.x * TILE + threadIdx.y;
    for (int dr = 0; dr < TILE; dr += ROWS_PER_PASS)
        if (orow + dr < cols && oc < rows)
            out[(size_t)(orow + dr) * rows + oc] = buf[threadIdx.x][threadIdx.y + dr];
}

int main(int argc, char **argv)
{
    const int rows = 3000, cols = 2000;
    findCudaDevice(argc, (const char **)argv);

    std::vector<float> h_in((size_t)rows * cols), h_out((size_t)rows * cols);
    for (size_t i = 0; i < h_in.size(); ++i) h_in[i] = (float)(i % 9973);

    float *d_in, *d_out;
    const size_t bytes = h_in.size() * sizeof(float);
    checkCudaErrors(cudaMalloc(&d_in, bytes));
    checkCudaErrors(cudaMalloc(&d_out, bytes));
    checkCudaErrors(cudaMemcpy(d_in, h_in.data(), bytes, cudaMemcpyHostToDevice));

    dim3 threads(TILE, ROWS_PER_PASS);
    dim3 tiles(iDivUp(cols, TILE), iDivUp(rows, TILE));

    StopWatch timer;
    for (int variant = 0; variant < 2; ++variant) {
        timer.reset();
        timer.start();
        for (int rep = 0; rep < 50; ++rep) {
            if (variant == 0) copyTransposeNaive<<<tiles, threads>>>(d_out, d_in, rows, cols);
            else copyTransposeTiled<<<tiles, threads>>>(d_out, d_in, rows, cols);
        }
        checkCudaErrors(cudaDeviceSynchronize());
        timer.stop();
        double ms = timer.getTime() / 50;
        std::cout << (variant ? "tiled: " : "naive: ") << 2.0 * bytes / (ms * 1e6) << " GB/s\n";
    }

    checkCudaErrors(cudaMemcpy(h_out.data(), d_out, bytes, cudaMemcpyDeviceToHost));
    size_t wrong = 0;
    for (int r = 0; r < rows; ++r)
        for (int c = 0; c < cols; ++c)
            wrong += h_out[(size_t)c * rows + r] != h_in[(size_t)r * cols + c];
    printf("%zu wrong elements\n", wrong);

    cudaFree(d_in);
    cudaFree(d_out);
    return wrong ? 1 : 0;
}
