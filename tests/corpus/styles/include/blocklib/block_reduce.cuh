// An installed library's block reduction (kept as an #include, given with -isystem), written
// the way PyTorch's ATen/native/cuda/block_reduce.cuh is: the block's shape comes from a
// policy type parameter (B::tid(), B::warps()), so inside the template nothing names the
// code that reads threadIdx and blockDim until it is instantiated.
#pragma once

namespace blocklib {

struct Block1D {
  static __device__ __forceinline__ int tid() { return threadIdx.x; }
  static __device__ __forceinline__ int warps() { return (blockDim.x + 31) / 32; }
};

template <typename T>
__device__ __forceinline__ T warp_sum(T v) {
#pragma unroll
  for (int offset = 16; offset > 0; offset >>= 1) v += __shfl_xor_sync(0xffffffffu, v, offset);
  return v;
}

// Every thread gets the block's total; shared holds one value per warp.
template <typename T, typename B = Block1D>
__device__ T block_sum(T v, T* shared) {
  const int lane = B::tid() % 32, warp = B::tid() / 32;
  v = warp_sum(v);
  __syncthreads();  // shared may still be read by a previous call
  if (lane == 0) shared[warp] = v;
  __syncthreads();
  return warp_sum(lane < B::warps() ? shared[lane] : T(0));
}

template <typename T>
struct Reducer {
  T* shared;
  __device__ explicit Reducer(T* s) : shared(s) {}
  __device__ T sum(T v) { return block_sum<T>(v, shared); }
};

template <typename T>
__device__ Reducer<T> make_reducer(T* shared) { return Reducer<T>(shared); }

}  // namespace blocklib
