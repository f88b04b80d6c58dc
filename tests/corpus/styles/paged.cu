// Paged KV-cache writes and gathers (as serving engines write them): block tables, 64-bit
// strides, slot mappings with padding slots, templates on the head size and the element.
#include <cstdint>
#include <cuda_fp16.h>

template <typename scalar_t, int HEAD_SIZE>
__global__ void reshape_and_cache(const scalar_t* __restrict__ key, const scalar_t* __restrict__ value,
                                  scalar_t* __restrict__ key_cache, scalar_t* __restrict__ value_cache,
                                  const int64_t* __restrict__ slot_mapping, const int key_stride, const int value_stride,
                                  const int num_heads, const int block_size) {
  const int64_t token_idx = blockIdx.x;
  const int64_t slot_idx = slot_mapping[token_idx];
  if (slot_idx < 0) return;  // a padding token
  const int64_t block_idx = slot_idx / block_size;
  const int64_t block_offset = slot_idx % block_size;
  const int n = num_heads * HEAD_SIZE;
  for (int i = threadIdx.x; i < n; i += blockDim.x) {
    const int head_idx = i / HEAD_SIZE;
    const int head_offset = i % HEAD_SIZE;
    const int64_t tgt = ((block_idx * num_heads + head_idx) * block_size + block_offset) * HEAD_SIZE + head_offset;
    key_cache[tgt] = key[token_idx * key_stride + i];
    value_cache[tgt] = value[token_idx * value_stride + i];
  }
}

template <int HEAD_SIZE>
__global__ void gather_cached_kv(const __half* __restrict__ cache, const int32_t* __restrict__ block_table,
                                 __half* __restrict__ out, int seq_len, int num_heads, int block_size,
                                 int max_blocks) {
  const int pos = blockIdx.x;
  const int seq = blockIdx.y;
  if (pos >= seq_len) return;
  const int physical = block_table[seq * max_blocks + pos / block_size];
  const int offset = pos % block_size;
  for (int i = threadIdx.x; i < num_heads * HEAD_SIZE; i += blockDim.x) {
    const int head = i / HEAD_SIZE;
    out[(static_cast<int64_t>(seq) * seq_len + pos) * num_heads * HEAD_SIZE + i] =
        cache[((static_cast<int64_t>(physical) * num_heads + head) * block_size + offset) * HEAD_SIZE + i % HEAD_SIZE];
  }
}

// Attention over the paged cache as serving engines split it: the body is a __device__
// function, called by thin __global__ wrappers (one pass, or partitions of the sequence);
// a partition past the sequence's end returns before the block's barriers, on a length read
// through a const __restrict__ pointer at a block-uniform index.
#define DIVIDE_ROUND_UP(a, b) (((a) + (b) - 1) / (b))

template <int NUM_WARPS>
__device__ __forceinline__ float warp_then_block_max(float* red_smem, float v) {
  const int warp_idx = threadIdx.x / 32, lane = threadIdx.x % 32;
#pragma unroll
  for (int mask = 16; mask >= 1; mask /= 2) v = fmaxf(v, __shfl_xor_sync(0xffffffffu, v, mask));
  if (lane == 0) red_smem[warp_idx] = v;
  __syncthreads();
  v = lane < NUM_WARPS ? red_smem[lane] : -1e30f;
#pragma unroll
  for (int mask = NUM_WARPS / 2; mask >= 1; mask /= 2) v = fmaxf(v, __shfl_xor_sync(0xffffffffu, v, mask));
  return __shfl_sync(0xffffffffu, v, 0);
}

template <int HEAD_SIZE, int BLOCK_SIZE, int NUM_THREADS, int PARTITION_SIZE = 0>
__device__ void paged_scores(float* __restrict__ max_logits, const __half* __restrict__ q,
                             const __half* __restrict__ k_cache, const int* __restrict__ block_tables,
                             const int* __restrict__ seq_lens, const int max_num_blocks_per_seq, const float scale) {
  const int seq_idx = blockIdx.y;
  const int partition_idx = blockIdx.z;
  const int max_num_partitions = gridDim.z;
  constexpr bool USE_PARTITIONING = PARTITION_SIZE > 0;
  const int seq_len = seq_lens[seq_idx];
  if (USE_PARTITIONING && partition_idx * PARTITION_SIZE >= seq_len) {
    // No work to do. Terminate the thread block.
    return;
  }
  const int num_seq_blocks = DIVIDE_ROUND_UP(seq_len, BLOCK_SIZE);
  const int num_blocks_per_partition = USE_PARTITIONING ? PARTITION_SIZE / BLOCK_SIZE : num_seq_blocks;
  const int start_block_idx = USE_PARTITIONING ? partition_idx * num_blocks_per_partition : 0;
  const int end_block_idx = min(start_block_idx + num_blocks_per_partition, num_seq_blocks);
  constexpr int NUM_WARPS = NUM_THREADS / 32;
  __shared__ float red_smem[NUM_WARPS];
  const int* block_table = block_tables + seq_idx * max_num_blocks_per_seq;
  const int warp_idx = threadIdx.x / 32, lane = threadIdx.x % 32;
  float qk_max = -1e30f;
  for (int block_idx = start_block_idx + warp_idx; block_idx < end_block_idx; block_idx += NUM_WARPS) {
    const int64_t physical_block = block_table[block_idx];
    for (int t = lane; t < BLOCK_SIZE; t += 32) {
      const int token_idx = block_idx * BLOCK_SIZE + t;
      if (token_idx >= seq_len) break;
      const __half* k = k_cache + (physical_block * BLOCK_SIZE + t) * HEAD_SIZE;
      float qk = 0.f;
      for (int d = 0; d < HEAD_SIZE; ++d) qk += __half2float(q[seq_idx * HEAD_SIZE + d]) * __half2float(k[d]);
      qk_max = fmaxf(qk_max, qk * scale);
    }
  }
  qk_max = warp_then_block_max<NUM_WARPS>(red_smem, qk_max);
  if (threadIdx.x == 0) max_logits[seq_idx * max_num_partitions + partition_idx] = qk_max;
}

template <int HEAD_SIZE, int BLOCK_SIZE, int NUM_THREADS, int PARTITION_SIZE>
__global__ void paged_scores_v2(float* __restrict__ max_logits, const __half* __restrict__ q,
                                const __half* __restrict__ k_cache, const int* __restrict__ block_tables,
                                const int* __restrict__ seq_lens, const int max_num_blocks_per_seq, const float scale) {
  paged_scores<HEAD_SIZE, BLOCK_SIZE, NUM_THREADS, PARTITION_SIZE>(
      max_logits, q, k_cache, block_tables, seq_lens, max_num_blocks_per_seq, scale);
}
