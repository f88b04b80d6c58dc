// Two independent kernels of a small recommendation-style model, written as a PyTorch
// extension author would: an embedding-bag gather (each bag sums rows picked by random
// indices: latency-bound, it waits on DRAM) and a feature-hashing kernel (rounds of
// integer mixing per element: compute-bound). hfuse runs them in one block so the
// hashing warps fill the gather's stalls.
#include <cstdint>

#ifndef HASH_ROUNDS
#define HASH_ROUNDS 64  // mixing rounds per element; -DHASH_ROUNDS=... to change
#endif

// out[b, :] = sum over the bag's indices i of table[i, :]; one warp per bag, grid-stride.
__global__ void embedding_bag_sum(const float* __restrict__ table, const int64_t* __restrict__ indices,
                                  const int64_t* __restrict__ offsets, float* __restrict__ out,
                                  int num_bags, int dim) {
  const int lane = threadIdx.x % 32;
  const int warps = (blockDim.x / 32) * gridDim.x;
  for (int bag = (blockIdx.x * blockDim.x + threadIdx.x) / 32; bag < num_bags; bag += warps) {
    const int64_t begin = offsets[bag], end = offsets[bag + 1];
    for (int d = lane; d < dim; d += 32) {
      float acc = 0.f;
      for (int64_t j = begin; j < end; ++j) acc += __ldg(&table[indices[j] * dim + d]);
      out[(int64_t)bag * dim + d] = acc;
    }
  }
}

__device__ __forceinline__ uint32_t mix32(uint32_t h) {
  h ^= h >> 16; h *= 0x7feb352dU; h ^= h >> 15; h *= 0x846ca68bU; h ^= h >> 16;
  return h;
}

// buckets[i] = hash of keys[i] (HASH_ROUNDS rounds, salted) modulo num_buckets.
__global__ void feature_hash(const uint32_t* __restrict__ keys, int32_t* __restrict__ buckets, int n,
                             uint32_t salt, int num_buckets) {
  for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += blockDim.x * gridDim.x) {
    uint32_t h = keys[i] ^ salt;
#pragma unroll 4
    for (int r = 0; r < HASH_ROUNDS; ++r) h = mix32(h + r);
    buckets[i] = (int32_t)(h % (uint32_t)num_buckets);
  }
}
