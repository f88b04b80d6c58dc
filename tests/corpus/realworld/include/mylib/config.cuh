// mylib/config.cuh -- common macros and small host/device utilities.
#pragma once

#include <cuda_runtime.h>

#define MYLIB_HOST_DEVICE __host__ __device__
#define MYLIB_DEVICE __device__ __forceinline__

#ifndef MYLIB_WARP_SIZE
#define MYLIB_WARP_SIZE 32
#endif

namespace mylib {

constexpr int kWarpSize = MYLIB_WARP_SIZE;
constexpr unsigned kFullMask = 0xffffffffu;

MYLIB_HOST_DEVICE inline int ceil_div(int a, int b) { return (a + b - 1) / b; }

}  // namespace mylib
