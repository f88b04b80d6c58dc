// scan_kernel.cu -- exclusive prefix sum of int arrays of any length.
//
//   scan_blocks     Blelloch (up-sweep / down-sweep) scan of 2*blockDim.x elements
//                   per block in shared memory; when `partial` is given, the
//                   total of every block is stored there for the second level
//   add_partials    adds the scanned block totals back to every block
//
// Both kernels run on SCAN_THREADS threads per block; scan_blocks takes
// 2 * SCAN_THREADS * sizeof(int) bytes of dynamic shared memory.
#ifndef SCAN_KERNEL_CU
#define SCAN_KERNEL_CU

#include <stddef.h>
#include <cuda_runtime.h>

#define SCAN_THREADS 128
#define SCAN_ELEMS (2 * SCAN_THREADS)

__global__ void scan_blocks(const int *in, int *out, int n, int *partial = NULL)
{
    extern __shared__ int temp[];

    const int t = threadIdx.x;
    const int m = 2 * blockDim.x;
    const int base = blockIdx.x * m;

    temp[2 * t] = (base + 2 * t < n) ? in[base + 2 * t] : 0;
    temp[2 * t + 1] = (base + 2 * t + 1 < n) ? in[base + 2 * t + 1] : 0;

    // up-sweep: build partial sums in place
    int offset = 1;
    for (int d = m >> 1; d > 0; d >>= 1) {
        __syncthreads();
        if (t < d) {
            int ai = offset * (2 * t + 1) - 1;
            int bi = offset * (2 * t + 2) - 1;
            temp[bi] += temp[ai];
        }
        offset <<= 1;
    }

    __syncthreads();
    if (t == 0) {
        if (partial != NULL) partial[blockIdx.x] = temp[m - 1];
        temp[m - 1] = 0;
    }

    // down-sweep
    for (int d = 1; d < m; d <<= 1) {
        offset >>= 1;
        __syncthreads();
        if (t < d) {
            int ai = offset * (2 * t + 1) - 1;
            int bi = offset * (2 * t + 2) - 1;
            int v = temp[ai];
            temp[ai] = temp[bi];
            temp[bi] += v;
        }
    }
    __syncthreads();

    if (base + 2 * t < n) out[base + 2 * t] = temp[2 * t];
    if (base + 2 * t + 1 < n) out[base + 2 * t + 1] = temp[2 * t + 1];
}

__global__ void add_partials(int *out, const int *scanned_partials, int n)
{
    const int base = blockIdx.x * SCAN_ELEMS;
    const int add = scanned_partials[blockIdx.x];
    for (int k = threadIdx.x; k < SCAN_ELEMS; k += blockDim.x)
        if (base + k < n) out[base + k] += add;
}

// host: scans d_in into d_out (n <= SCAN_ELEMS^2)
void exclusive_scan(const int *d_in, int *d_out, int n, int *d_partial, int *d_partial_scanned)
{
    const int blocks = (n + SCAN_ELEMS - 1) / SCAN_ELEMS;
    const size_t smem = SCAN_ELEMS * sizeof(int);
    if (blocks == 1) {
        scan_blocks<<<1, SCAN_THREADS, smem>>>(d_in, d_out, n);
        return;
    }
    scan_blocks<<<blocks, SCAN_THREADS, smem>>>(d_in, d_out, n, d_partial);
    scan_blocks<<<1, SCAN_THREADS, smem>>>(d_partial, d_partial_scanned, blocks);
    add_partials<<<blocks, SCAN_THREADS>>>(d_out, d_partial_scanned, n);
}

#endif
