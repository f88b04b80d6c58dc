// Decode attention (FlashDecoding style): one new token per sequence attends over its KV
// cache; grouped-query (GROUP query heads share a KV head), fp16 or bf16, head dimension
// 64 or 128. The keys of a sequence are split over `splits` CTAs; the last of them to
// finish combines the splits, so one launch does all of it.
//
//   q [batch, heads, HEAD_DIM]                        this step's queries
//   k_cache, v_cache [batch, max_context, kv_heads, HEAD_DIM]
//   lengths [batch]                                   each sequence's context length
//   o [batch, heads, HEAD_DIM]
//   partial_o [batch, kv_heads, splits, GROUP, HEAD_DIM], partial_ml [..., GROUP, 2]  (fp32 scratch)
//   arrivals [batch * kv_heads]                       zero; the combining CTA sets it back to zero
//
// Grid (splits, kv_heads, batch), 128 threads. A KV row is read once and used for the
// GROUP query heads; HEAD_DIM / 8 lanes share a key (16 bytes each), so a warp reads
// 32 / (HEAD_DIM / 8) keys at a time.
#include "mma.cuh"

namespace attn {

template <int HEAD_DIM>
struct DecodeShape {
  static constexpr int kWarps = 4;
  static constexpr int kLanesPerKey = HEAD_DIM / 8;
  static constexpr int kKeysPerWarp = 32 / kLanesPerKey;
  static constexpr int kKeysPerStep = kWarps * kKeysPerWarp;
  static_assert(HEAD_DIM == 64 || HEAD_DIM == 128, "head dimension 64 or 128");
};

// One running softmax state of a query head, over some keys: the maximum (log2 units),
// the sum of exponentials, and this lane's 8 output dimensions, not yet divided by the sum.
template <int GROUP>
struct Running {
  float m[GROUP];
  float l[GROUP];
  float acc[GROUP][8];
};

// Weight of a state with maximum `m` in a combination whose maximum is `top`.
__device__ __forceinline__ float rescale(float m, float top) { return m == -INFINITY ? 0.f : exp2f(m - top); }

template <typename T, int HEAD_DIM, int GROUP>
__global__ void __launch_bounds__(128) decode_attention(const T* __restrict__ q, const T* __restrict__ k_cache,
                                                        const T* __restrict__ v_cache, const int* __restrict__ lengths,
                                                        T* __restrict__ o, float* __restrict__ partial_o,
                                                        float* __restrict__ partial_ml, unsigned* __restrict__ arrivals,
                                                        int max_context, int heads, int kv_heads, int splits,
                                                        float scale) {
  using Shape = DecodeShape<HEAD_DIM>;
  using Traits = NumberTraits<T>;
  __shared__ float warp_o[Shape::kWarps][GROUP][HEAD_DIM];
  __shared__ float warp_ml[Shape::kWarps][GROUP][2];
  __shared__ bool combine;

  const int split = blockIdx.x, kv_head = blockIdx.y, sequence = blockIdx.z;
  const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
  const int slot = lane / Shape::kLanesPerKey, part = lane % Shape::kLanesPerKey;
  const int length = lengths[sequence];
  const int per_split = (length + splits - 1) / splits;
  const int begin = split * per_split, end = min(length, begin + per_split);

  // This lane's 8 dimensions of the group's queries, pre-scaled to log2 units.
  float query[GROUP][8];
#pragma unroll
  for (int h = 0; h < GROUP; ++h) {
    const T* row = q + (static_cast<size_t>(sequence) * heads + kv_head * GROUP + h) * HEAD_DIM + part * 8;
    const uint4 packed = *reinterpret_cast<const uint4*>(row);
    const T* values = reinterpret_cast<const T*>(&packed);
#pragma unroll
    for (int e = 0; e < 8; ++e) query[h][e] = Traits::to_float(values[e]) * scale * kLog2e;
  }

  Running<GROUP> run;
#pragma unroll
  for (int h = 0; h < GROUP; ++h) {
    run.m[h] = -INFINITY;
    run.l[h] = 0.f;
#pragma unroll
    for (int e = 0; e < 8; ++e) run.acc[h][e] = 0.f;
  }

  const size_t row_stride = static_cast<size_t>(kv_heads) * HEAD_DIM;
  const size_t sequence_base = static_cast<size_t>(sequence) * max_context * row_stride +
                               static_cast<size_t>(kv_head) * HEAD_DIM + part * 8;
  // Every lane of a warp runs the same steps (the shuffles need them all); a key past the
  // split's end is read as nothing.
  for (int base = begin + warp * Shape::kKeysPerWarp; base < end; base += Shape::kKeysPerStep) {
    const int key = base + slot;
    const bool valid = key < end;
    uint4 kp = make_uint4(0u, 0u, 0u, 0u), vp = kp;
    if (valid) {
      kp = *reinterpret_cast<const uint4*>(k_cache + sequence_base + static_cast<size_t>(key) * row_stride);
      vp = *reinterpret_cast<const uint4*>(v_cache + sequence_base + static_cast<size_t>(key) * row_stride);
    }
    const T* kv = reinterpret_cast<const T*>(&kp);
    const T* vv = reinterpret_cast<const T*>(&vp);
    float score[GROUP];
#pragma unroll
    for (int h = 0; h < GROUP; ++h) {
      float dot = 0.f;
#pragma unroll
      for (int e = 0; e < 8; ++e) dot += query[h][e] * Traits::to_float(kv[e]);
#pragma unroll
      for (int offset = Shape::kLanesPerKey / 2; offset > 0; offset /= 2)
        dot += __shfl_xor_sync(0xffffffffu, dot, offset);
      score[h] = dot;
    }
    if (valid) {
#pragma unroll
      for (int h = 0; h < GROUP; ++h) {
        const float top = fmaxf(run.m[h], score[h]);
        const float alpha = rescale(run.m[h], top), p = exp2f(score[h] - top);
        run.m[h] = top;
        run.l[h] = run.l[h] * alpha + p;
#pragma unroll
        for (int e = 0; e < 8; ++e) run.acc[h][e] = run.acc[h][e] * alpha + p * Traits::to_float(vv[e]);
      }
    }
  }

  // The warp's key slots into one state (lanes kLanesPerKey apart hold the same dimensions).
#pragma unroll
  for (int offset = Shape::kLanesPerKey; offset < 32; offset *= 2) {
#pragma unroll
    for (int h = 0; h < GROUP; ++h) {
      const float other_m = __shfl_xor_sync(0xffffffffu, run.m[h], offset);
      const float other_l = __shfl_xor_sync(0xffffffffu, run.l[h], offset);
      const float top = fmaxf(run.m[h], other_m);
      const float mine = rescale(run.m[h], top), theirs = rescale(other_m, top);
      run.l[h] = run.l[h] * mine + other_l * theirs;
#pragma unroll
      for (int e = 0; e < 8; ++e) {
        const float other = __shfl_xor_sync(0xffffffffu, run.acc[h][e], offset);
        run.acc[h][e] = run.acc[h][e] * mine + other * theirs;
      }
      run.m[h] = top;
    }
  }
  if (slot == 0) {
#pragma unroll
    for (int h = 0; h < GROUP; ++h) {
#pragma unroll
      for (int e = 0; e < 8; ++e) warp_o[warp][h][part * 8 + e] = run.acc[h][e];
      if (part == 0) {
        warp_ml[warp][h][0] = run.m[h];
        warp_ml[warp][h][1] = run.l[h];
      }
    }
  }
  __syncthreads();

  // The warps into this split's state: thread t takes elements t, t + 128, ... of GROUP x HEAD_DIM.
  const size_t pair = static_cast<size_t>(sequence) * kv_heads + kv_head;
  for (int i = threadIdx.x; i < GROUP * HEAD_DIM; i += blockDim.x) {
    const int h = i / HEAD_DIM, d = i % HEAD_DIM;
    float top = -INFINITY;
#pragma unroll
    for (int w = 0; w < Shape::kWarps; ++w) top = fmaxf(top, warp_ml[w][h][0]);
    float sum = 0.f, value = 0.f;
#pragma unroll
    for (int w = 0; w < Shape::kWarps; ++w) {
      const float weight = rescale(warp_ml[w][h][0], top);
      sum += warp_ml[w][h][1] * weight;
      value += warp_o[w][h][d] * weight;
    }
    if (splits == 1) {
      o[(static_cast<size_t>(sequence) * heads + kv_head * GROUP + h) * HEAD_DIM + d] =
          Traits::from_float(sum > 0.f ? value / sum : 0.f);
    } else {
      const size_t at = (pair * splits + split) * GROUP + h;
      partial_o[at * HEAD_DIM + d] = value;
      if (d == 0) {
        partial_ml[at * 2] = top;
        partial_ml[at * 2 + 1] = sum;
      }
    }
  }
  if (splits == 1) return;

  // The last split of this (sequence, KV head) to arrive combines all of them.
  __threadfence();
  __syncthreads();
  if (threadIdx.x == 0) combine = atomicAdd(&arrivals[pair], 1u) == static_cast<unsigned>(splits - 1);
  __syncthreads();
  if (!combine) return;
  __threadfence();
  for (int i = threadIdx.x; i < GROUP * HEAD_DIM; i += blockDim.x) {
    const int h = i / HEAD_DIM, d = i % HEAD_DIM;
    float top = -INFINITY;
    for (int s = 0; s < splits; ++s) top = fmaxf(top, __ldcg(&partial_ml[((pair * splits + s) * GROUP + h) * 2]));
    float sum = 0.f, value = 0.f;
    for (int s = 0; s < splits; ++s) {
      const size_t at = (pair * splits + s) * GROUP + h;
      const float weight = rescale(__ldcg(&partial_ml[at * 2]), top);
      sum += __ldcg(&partial_ml[at * 2 + 1]) * weight;
      value += __ldcg(&partial_o[at * HEAD_DIM + d]) * weight;
    }
    o[(static_cast<size_t>(sequence) * heads + kv_head * GROUP + h) * HEAD_DIM + d] =
        Traits::from_float(sum > 0.f ? value / sum : 0.f);
  }
  if (threadIdx.x == 0) arrivals[pair] = 0u;  // for the next launch
}

}  // namespace attn
