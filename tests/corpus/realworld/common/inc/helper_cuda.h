/*
 * helper_cuda.h
 *
 * Error handling and device selection shared by the sample programs in this tree.
 * Host code only.  Reached through the include path:  nvcc -I common/inc ...
 *
 *     checkCudaErrors(cudaMalloc(&p, bytes));    // aborts with file:line on failure
 *     myKernel<<<grid, block>>>(...);
 *     getLastCudaError("myKernel");              // catches launch failures
 */
#ifndef SAMPLES_HELPER_CUDA_H
#define SAMPLES_HELPER_CUDA_H

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cuda_runtime.h>

#define SAMPLE_EXIT_WAIVED 2

template <typename Status>
void check(Status status, const char *expr, const char *file, int line)
{
    if (status != 0) {
        cudaError_t err = (cudaError_t)status;
        fprintf(stderr, "%s:%d: %s failed: %s (%s, %d)\n", file, line, expr,
                cudaGetErrorString(err), cudaGetErrorName(err), (int)status);
        cudaDeviceReset();
        exit(EXIT_FAILURE);
    }
}

#define checkCudaErrors(val) check((val), #val, __FILE__, __LINE__)

#define getLastCudaError(msg) reportLastCudaError((msg), __FILE__, __LINE__)

inline void reportLastCudaError(const char *what, const char *file, int line)
{
    cudaError_t err = cudaGetLastError();
    if (err != cudaSuccess) {
        fprintf(stderr, "%s:%d: %s: %s\n", file, line, what, cudaGetErrorString(err));
        exit(EXIT_FAILURE);
    }
}

// Rounds a / b up; for grid sizes.
inline int iDivUp(int a, int b) { return (a + b - 1) / b; }

// Parses "--device=N" (or "-device=N"); falls back to the device with the most SMs.
inline int findCudaDevice(int argc, const char **argv)
{
    int count = 0;
    checkCudaErrors(cudaGetDeviceCount(&count));
    if (count == 0) {
        fprintf(stderr, "This sample needs a CUDA device; none was found.\n");
        exit(SAMPLE_EXIT_WAIVED);
    }

    int chosen = -1;
    for (int a = 1; a < argc; ++a) {
        const char *arg = argv[a];
        while (*arg == '-') ++arg;
        if (strncmp(arg, "device=", 7) == 0) chosen = atoi(arg + 7);
    }

    if (chosen < 0 || chosen >= count) {
        int bestSMs = -1;
        for (int d = 0; d < count; ++d) {
            int sms = 0;
            checkCudaErrors(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, d));
            if (sms > bestSMs) { bestSMs = sms; chosen = d; }
        }
    }

    checkCudaErrors(cudaSetDevice(chosen));
    cudaDeviceProp prop;
    checkCudaErrors(cudaGetDeviceProperties(&prop, chosen));
    printf("Using device %d: %s (sm_%d%d, %d SMs)\n", chosen, prop.name, prop.major, prop.minor,
           prop.multiProcessorCount);
    return chosen;
}

#endif /* SAMPLES_HELPER_CUDA_H */
