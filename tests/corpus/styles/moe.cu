// Mixture-of-experts routing as inference engines write it: a warp top-k over expert
// logits with (value, index) shuffles, and a one-block count and prefix sum of tokens per
// expert through shared-memory counters.
#include <cfloat>
#include <cstdint>

template <int kExperts, int kTopK>
__global__ void topk_gating(const float* __restrict__ logits, float* __restrict__ weights, int32_t* __restrict__ ids,
                            int tokens) {
  static_assert(kExperts % 32 == 0 && kTopK <= 8, "experts in whole warps");
  const int token = blockIdx.x * (blockDim.x / 32) + threadIdx.x / 32;
  const int lane = threadIdx.x % 32;
  if (token >= tokens) return;
  float v[kExperts / 32];
#pragma unroll
  for (int k = 0; k < kExperts / 32; ++k) v[k] = logits[token * kExperts + k * 32 + lane];
  float total = 0.f;
  for (int pick = 0; pick < kTopK; ++pick) {
    float best = -FLT_MAX;
    int best_id = kExperts;
#pragma unroll
    for (int k = 0; k < kExperts / 32; ++k) {
      if (v[k] > best) {
        best = v[k];
        best_id = k * 32 + lane;
      }
    }
    for (int o = 16; o > 0; o >>= 1) {
      const float other = __shfl_xor_sync(0xffffffffu, best, o);
      const int other_id = __shfl_xor_sync(0xffffffffu, best_id, o);
      if (other > best || (other == best && other_id < best_id)) {
        best = other;
        best_id = other_id;
      }
    }
    if (best_id % 32 == lane) v[best_id / 32] = -FLT_MAX;
    const float w = __expf(best);
    total += w;
    if (lane == 0) {
      weights[token * kTopK + pick] = w;
      ids[token * kTopK + pick] = best_id;
    }
  }
  if (lane < kTopK) weights[token * kTopK + lane] /= total;
}

// one block: tokens per expert and their exclusive prefix sum
__global__ void count_and_offsets(const int32_t* __restrict__ ids, int32_t* __restrict__ counts,
                                  int32_t* __restrict__ offsets, int n, int experts) {
  extern __shared__ int32_t shared_counts[];
  for (int e = threadIdx.x; e < experts; e += blockDim.x) shared_counts[e] = 0;
  __syncthreads();
  for (int i = threadIdx.x; i < n; i += blockDim.x) atomicAdd(&shared_counts[ids[i]], 1);
  __syncthreads();
  if (threadIdx.x == 0) {
    int running = 0;
    for (int e = 0; e < experts; ++e) {
      offsets[e] = running;
      running += shared_counts[e];
    }
  }
  for (int e = threadIdx.x; e < experts; e += blockDim.x) counts[e] = shared_counts[e];
}
