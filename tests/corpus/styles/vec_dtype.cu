// A serving library's attention scores: the vector layer's primaries in one header, their
// float specialisations in another (once refused: "'Vec' is defined differently").
#include "vec_generic.cuh"
#include "vec_float32.cuh"
namespace attn {
// One warp per (query, key) pair group: q . k over a head of HEAD_SIZE, VEC_SIZE at a time.
template <int HEAD_SIZE, int VEC_SIZE>
__global__ void qk_dot_kernel(float* __restrict__ logits, const float* __restrict__ q, const float* __restrict__ k,
                              int num_keys) {
  using vec_t = typename Vec<float, VEC_SIZE>::Type;
  const int key = blockIdx.x * (blockDim.x / 32) + threadIdx.x / 32;
  const int lane = threadIdx.x % 32;
  if (key >= num_keys) return;
  float acc = 0.f;
  for (int d = lane * VEC_SIZE; d < HEAD_SIZE; d += 32 * VEC_SIZE) {
    vec_t qv = *reinterpret_cast<const vec_t*>(q + d);
    vec_t kv = *reinterpret_cast<const vec_t*>(k + static_cast<int64_t>(key) * HEAD_SIZE + d);
    acc += dot(qv, kv);
  }
#pragma unroll
  for (int mask = 16; mask > 0; mask >>= 1) acc += __shfl_xor_sync(0xffffffffu, acc, mask);
  if (lane == 0) logits[key] = acc;
}
}  // namespace attn
