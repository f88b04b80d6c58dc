// mylib/grid.cuh -- thread indexing helpers (1-D launches).
#pragma once

#include "config.cuh"

namespace mylib {

MYLIB_DEVICE int global_thread_id() { return blockIdx.x * blockDim.x + threadIdx.x; }

MYLIB_DEVICE int grid_stride() { return blockDim.x * gridDim.x; }

MYLIB_DEVICE unsigned lane_id() { return threadIdx.x & (kWarpSize - 1); }

MYLIB_DEVICE unsigned warp_id() { return threadIdx.x / kWarpSize; }

}  // namespace mylib
