// mylib_tools.cu -- debugging kernels: fill a buffer with a pattern, checksum it.
//
// fill_pattern has internal linkage (anonymous namespace): it is only launched
// through fill_pattern_async below.  tools::xor_checksum folds every block's
// words into one value per block.
#include <cstdint>
#include <cuda_runtime.h>

#include <mylib/block_reduce.cuh>
#include <mylib/grid.cuh>

namespace {

__device__ inline uint32_t mix32(uint32_t x)
{
    x ^= x >> 16;
    x *= 0x7feb352du;
    x ^= x >> 15;
    x *= 0x846ca68bu;
    x ^= x >> 16;
    return x;
}

// out[i] = mix32(seed + i); 256 threads per block
__global__ void fill_pattern(uint32_t *out, uint32_t seed, int n)
{
    for (int i = mylib::global_thread_id(); i < n; i += mylib::grid_stride())
        out[i] = mix32(seed + (uint32_t)i);
}

}  // namespace

namespace tools {

using namespace mylib::detail;

// block_sums[b] = sum over the block's words of mix32(word); block of 256 threads
__global__ void xor_checksum(const uint32_t *words, uint32_t *block_sums, int n)
{
    __shared__ uint32_t scratch[32];
    uint32_t acc = 0;
    for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += blockDim.x * gridDim.x)
        acc ^= mix32(words[i]);
    // xor is not a sum, but sum of per-thread xors is still a fine checksum
    uint32_t total = block_sum(acc, scratch);
    if (threadIdx.x == 0)
        block_sums[blockIdx.x] = total;
}

}  // namespace tools

void fill_pattern_async(uint32_t *out, uint32_t seed, int n, cudaStream_t s)
{
    fill_pattern<<<(n + 255) / 256, 256, 0, s>>>(out, seed, n);
}
