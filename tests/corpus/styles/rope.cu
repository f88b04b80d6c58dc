// Rotary position embedding as LLM inference code writes it: templates on the head size,
// sincos, query and key in one kernel, GPT-NeoX (half-split) and GPT-J (interleaved) forms.
#include <cuda_fp16.h>
#include <cuda_bf16.h>

template <typename scalar_t, bool IS_NEOX>
inline __device__ void apply_token_rotary_embedding(scalar_t* __restrict__ arr, const scalar_t* __restrict__ cos_ptr,
                                                    const scalar_t* __restrict__ sin_ptr, int rot_offset,
                                                    int embed_dim) {
  int x_index, y_index;
  scalar_t cos, sin;
  if (IS_NEOX) {
    x_index = rot_offset;
    y_index = embed_dim + rot_offset;
    cos = __ldg(cos_ptr + x_index);
    sin = __ldg(sin_ptr + x_index);
  } else {
    x_index = 2 * rot_offset;
    y_index = 2 * rot_offset + 1;
    cos = __ldg(cos_ptr + x_index / 2);
    sin = __ldg(sin_ptr + x_index / 2);
  }
  const scalar_t x = arr[x_index];
  const scalar_t y = arr[y_index];
  arr[x_index] = x * cos - y * sin;
  arr[y_index] = y * cos + x * sin;
}

template <typename scalar_t, bool IS_NEOX>
__global__ void rotary_embedding_kernel(const long* __restrict__ positions, scalar_t* __restrict__ query,
                                        scalar_t* __restrict__ key, const scalar_t* __restrict__ cos_sin_cache,
                                        const int rot_dim, const long query_stride, const long key_stride,
                                        const int num_heads, const int num_kv_heads, const int head_size) {
  const int token_idx = blockIdx.x;
  const long pos = positions[token_idx];
  const scalar_t* cache_ptr = cos_sin_cache + pos * rot_dim;
  const int embed_dim = rot_dim / 2;
  const scalar_t* cos_ptr = cache_ptr;
  const scalar_t* sin_ptr = cache_ptr + embed_dim;
  const int nq = num_heads * embed_dim;
  for (int i = threadIdx.x; i < nq; i += blockDim.x) {
    const int head_idx = i / embed_dim;
    const long token_head = token_idx * query_stride + head_idx * head_size;
    apply_token_rotary_embedding<scalar_t, IS_NEOX>(query + token_head, cos_ptr, sin_ptr, i % embed_dim, embed_dim);
  }
  const int nk = num_kv_heads * embed_dim;
  for (int i = threadIdx.x; i < nk; i += blockDim.x) {
    const int head_idx = i / embed_dim;
    const long token_head = token_idx * key_stride + head_idx * head_size;
    apply_token_rotary_embedding<scalar_t, IS_NEOX>(key + token_head, cos_ptr, sin_ptr, i % embed_dim, embed_dim);
  }
}

// a cos/sin table from inverse frequencies
template <int kHeadDim>
__global__ void build_cos_sin(float* __restrict__ cache, int max_pos, float base) {
  const int pos = blockIdx.x;
  const int i = threadIdx.x;
  if (pos >= max_pos || i >= kHeadDim / 2) return;
  const float inv_freq = 1.0f / powf(base, (2.0f * i) / kHeadDim);
  float s, c;
  sincosf(pos * inv_freq, &s, &c);
  cache[pos * kHeadDim + i] = c;
  cache[pos * kHeadDim + kHeadDim / 2 + i] = s;
}
