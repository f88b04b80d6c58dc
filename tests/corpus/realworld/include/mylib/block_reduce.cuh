// mylib/block_reduce.cuh -- warp and block reductions for 1-D blocks.
//
// Requirements: blockDim.x is a multiple of 32 (at most 1024), every thread of the
// block calls the block-wide functions (they contain __syncthreads()), and `scratch`
// points to at least 32 elements of __shared__ memory.
#pragma once

#include "config.cuh"

namespace mylib {
namespace detail {

template <typename T>
MYLIB_DEVICE T warp_sum(T v)
{
#pragma unroll
    for (int offset = kWarpSize / 2; offset > 0; offset >>= 1)
        v += __shfl_down_sync(kFullMask, v, offset);
    return v;
}

template <typename T>
MYLIB_DEVICE T warp_max(T v)
{
#pragma unroll
    for (int offset = kWarpSize / 2; offset > 0; offset >>= 1) {
        T other = __shfl_down_sync(kFullMask, v, offset);
        v = other > v ? other : v;
    }
    return v;
}

// Sum of v over the block; every thread receives the total.
template <typename T>
__device__ T block_sum(T v, T *scratch)
{
    const unsigned lane = threadIdx.x % kWarpSize;
    const unsigned warp = threadIdx.x / kWarpSize;
    const unsigned nwarps = (blockDim.x + kWarpSize - 1) / kWarpSize;

    v = warp_sum(v);
    __syncthreads();  // scratch may still be read from a previous call
    if (lane == 0) scratch[warp] = v;
    __syncthreads();
    if (warp == 0) {
        T w = lane < nwarps ? scratch[lane] : T(0);
        w = warp_sum(w);
        if (lane == 0) scratch[0] = w;
    }
    __syncthreads();
    return scratch[0];
}

// Maximum of v over the block; every thread receives it.  `lowest` pads idle lanes.
template <typename T>
__device__ T block_max(T v, T *scratch, T lowest)
{
    const unsigned lane = threadIdx.x % kWarpSize;
    const unsigned warp = threadIdx.x / kWarpSize;
    const unsigned nwarps = (blockDim.x + kWarpSize - 1) / kWarpSize;

    v = warp_max(v);
    __syncthreads();
    if (lane == 0) scratch[warp] = v;
    __syncthreads();
    if (warp == 0) {
        T w = lane < nwarps ? scratch[lane] : lowest;
        w = warp_max(w);
        if (lane == 0) scratch[0] = w;
    }
    __syncthreads();
    return scratch[0];
}

}  // namespace detail
}  // namespace mylib
