/*
 * reduction_kernel.cu -- block-level sum reductions, from simple to fast.
 *
 *   reduceInterleaved<T>          pairwise tree with a stride that doubles; the
 *                                 block size must be a power of two
 *   reduceUnrolled<T, blockSize>  each thread first adds two inputs, then a tree in
 *                                 shared memory down to 64 partials, then the first
 *                                 warp finishes with shuffles on a 32-thread tile
 *
 * Both write one sum per block to out[blockIdx.x] and take blockDim.x * sizeof(T)
 * bytes of dynamic shared memory.  reduceUnrolled needs blockSize >= 64.
 */

#ifndef REDUCTION_KERNEL_CU
#define REDUCTION_KERNEL_CU

#include <stdio.h>
#include <cooperative_groups.h>

namespace cg = cooperative_groups;

// A templated kernel cannot declare extern __shared__ T[] for several T in one
// translation unit, hence this accessor.
template <class T>
struct SharedMemory {
  __device__ inline operator T *() {
    extern __shared__ int __smem[];
    return (T *)__smem;
  }
  __device__ inline operator const T *() const {
    extern __shared__ int __smem[];
    return (T *)__smem;
  }
};

// doubles get their own, 8-byte aligned, buffer
template <>
struct SharedMemory<double> {
  __device__ inline operator double *() {
    extern __shared__ double __smem_d[];
    return (double *)__smem_d;
  }
  __device__ inline operator const double *() const {
    extern __shared__ double __smem_d[];
    return (double *)__smem_d;
  }
};

template <class T>
__global__ void reduceInterleaved(const T *in, T *out, unsigned int n) {
  cg::thread_block block = cg::this_thread_block();
  T *partial = SharedMemory<T>();

  const unsigned int t = threadIdx.x;
  const unsigned int idx = blockIdx.x * blockDim.x + t;
  partial[t] = idx < n ? in[idx] : (T)0;
  cg::sync(block);

  for (unsigned int width = 1; width < blockDim.x; width <<= 1) {
    if (t % (2 * width) == 0)
      partial[t] += partial[t + width];
    cg::sync(block);
  }

  if (t == 0) out[blockIdx.x] = partial[0];
}

template <class T, unsigned int blockSize>
__global__ void reduceUnrolled(const T *in, T *out, unsigned int n) {
  cg::thread_block block = cg::this_thread_block();
  T *partial = SharedMemory<T>();

  const unsigned int t = threadIdx.x;
  const unsigned int idx = blockIdx.x * (2 * blockSize) + t;

  T sum = idx < n ? in[idx] : (T)0;
  if (idx + blockSize < n) sum += in[idx + blockSize];
  partial[t] = sum;
  block.sync();

  for (unsigned int half = blockSize / 2; half >= 64; half >>= 1) {
    if (t < half) partial[t] = sum = sum + partial[t + half];
    block.sync();
  }

  cg::thread_block_tile<32> warp = cg::tiled_partition<32>(block);
  if (block.thread_rank() < 32) {
    sum += partial[t + 32];
    for (unsigned int lane = warp.size() / 2; lane > 0; lane >>= 1)
      sum += warp.shfl_down(sum, lane);
    if (warp.thread_rank() == 0) out[blockIdx.x] = sum;
  }
}

// Host entry point: kind 0 = interleaved, 1 = unrolled.
template <class T>
void runReduction(int kind, const T *d_in, T *d_out, unsigned int n, int threads) {
  const size_t smem = threads * sizeof(T);
  if (kind == 0) {
    int blocks = (n + threads - 1) / threads;
    reduceInterleaved<T><<<blocks, threads, smem>>>(d_in, d_out, n);
    return;
  }
  int blocks = (n + 2 * threads - 1) / (2 * threads);
  switch (threads) {
    case 64:  reduceUnrolled<T, 64><<<blocks, 64, smem>>>(d_in, d_out, n); break;
    case 128: reduceUnrolled<T, 128><<<blocks, 128, smem>>>(d_in, d_out, n); break;
    case 256: reduceUnrolled<T, 256><<<blocks, 256, smem>>>(d_in, d_out, n); break;
    case 512: reduceUnrolled<T, 512><<<blocks, 512, smem>>>(d_in, d_out, n); break;
    default: fprintf(stderr, "runReduction: %d threads not supported\n", threads);
  }
}

template void runReduction<int>(int, const int *, int *, unsigned int, int);
template void runReduction<float>(int, const float *, float *, unsigned int, int);
template void runReduction<double>(int, const double *, double *, unsigned int, int);

#endif  // REDUCTION_KERNEL_CU
