/* parboil_util.h -- small helpers shared by the benchmark drivers. */
#ifndef PARBOIL_UTIL_H
#define PARBOIL_UTIL_H

#include <stdio.h>
#include <stdlib.h>
#include <cuda_runtime.h>

#define CHECK_ERROR(errorMessage)                                           \
  {                                                                         \
    cudaError_t err = cudaGetLastError();                                   \
    if (cudaSuccess != err) {                                               \
      fprintf(stderr, "[%s:%d] %s -> %s\n", __FILE__, __LINE__,         \
              errorMessage, cudaGetErrorString(err));                       \
      exit(EXIT_FAILURE);                                                   \
    }                                                                       \
  }

#define DIV_UP(a, b) (((a) + (b) - 1) / (b))

#endif
