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
