// Prefill attention (FlashAttention-2 style): causal, grouped-query, fp16 or bf16, head
// dimension 64 or 128, for one chunk of query tokens at the end of a context.
//
//   q [chunk, heads, HEAD_DIM]          the chunk's queries (positions context - chunk ...)
//   k, v [context, kv_heads, HEAD_DIM]  the whole context's keys and values
//   o [chunk, heads, HEAD_DIM]
//
// One CTA of 128 threads per (64-query tile, head); each warp owns 16 query rows. Keys and
// values go through shared memory 64 at a time; scores and the output stay in registers
// (mma.sync m16n8k16, fp32 accumulation) with the online softmax applied per row.
#include "mma.cuh"

namespace attn {

template <int HEAD_DIM>
struct PrefillShape {
  static constexpr int kBlockM = 64;          // query rows per CTA (4 warps x 16)
  static constexpr int kBlockN = 64;          // keys per shared-memory tile
  static constexpr int kStride = HEAD_DIM + 8;  // 16-bit words per tile row: padding against bank conflicts
  static constexpr int kSteps = HEAD_DIM / 16;  // k-steps of Q K^T
  static constexpr int kDimTiles = HEAD_DIM / 8;
  static constexpr int kKeyTiles = kBlockN / 8;
  static constexpr int kChunks = HEAD_DIM / 8;  // 16-byte pieces of a row
  static_assert(HEAD_DIM % 16 == 0, "the head dimension is a multiple of 16");
};

template <typename T, int HEAD_DIM>
__global__ void __launch_bounds__(128) prefill_attention(const T* __restrict__ q, const T* __restrict__ k,
                                                         const T* __restrict__ v, T* __restrict__ o, int chunk,
                                                         int context, int heads, int kv_heads, float scale) {
  using Shape = PrefillShape<HEAD_DIM>;
  using Traits = NumberTraits<T>;
  __shared__ __align__(16) uint16_t k_tile[Shape::kBlockN * Shape::kStride];
  __shared__ __align__(16) uint16_t v_tile[Shape::kBlockN * Shape::kStride];

  const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
  const int g = lane / 4, c = lane % 4;
  const int head = blockIdx.y;
  const int kv_head = head / (heads / kv_heads);
  const int row0 = blockIdx.x * Shape::kBlockM + warp * 16;  // this warp's first query row
  const int first_position = context - chunk;                // query row 0's position
  const size_t q_stride = static_cast<size_t>(heads) * HEAD_DIM;
  const size_t kv_stride = static_cast<size_t>(kv_heads) * HEAD_DIM;
  const T* q_head = q + static_cast<size_t>(head) * HEAD_DIM;

  // This warp's queries as A fragments, for the whole loop.
  uint32_t qa[Shape::kSteps][4];
#pragma unroll
  for (int s = 0; s < Shape::kSteps; ++s) {
#pragma unroll
    for (int r = 0; r < 4; ++r) {
      const int row = row0 + g + (r & 1) * 8;
      const int col = s * 16 + 2 * c + (r >> 1) * 8;
      qa[s][r] = row < chunk ? *reinterpret_cast<const uint32_t*>(q_head + row * q_stride + col) : 0u;
    }
  }

  float m[2] = {-INFINITY, -INFINITY};  // running maximum of rows g and g + 8 (log2 units)
  float l[2] = {0.f, 0.f};              // this lane's part of the running sums
  float acc[Shape::kDimTiles][4];
#pragma unroll
  for (int d = 0; d < Shape::kDimTiles; ++d) acc[d][0] = acc[d][1] = acc[d][2] = acc[d][3] = 0.f;

  const int last_row = min(chunk - 1, static_cast<int>(blockIdx.x) * Shape::kBlockM + Shape::kBlockM - 1);
  const int keys = min(context, first_position + last_row + 1);  // causal: no CTA row sees beyond
  const float factor = scale * kLog2e;

  for (int kv0 = 0; kv0 < keys; kv0 += Shape::kBlockN) {
    __syncthreads();  // every warp is done with the previous tile
    for (int i = threadIdx.x; i < Shape::kBlockN * Shape::kChunks; i += blockDim.x) {
      const int r = i / Shape::kChunks, piece = i % Shape::kChunks;
      uint4 kc = make_uint4(0u, 0u, 0u, 0u), vc = kc;
      if (kv0 + r < context) {
        const size_t at = static_cast<size_t>(kv0 + r) * kv_stride + static_cast<size_t>(kv_head) * HEAD_DIM + piece * 8;
        kc = *reinterpret_cast<const uint4*>(k + at);
        vc = *reinterpret_cast<const uint4*>(v + at);
      }
      *reinterpret_cast<uint4*>(&k_tile[r * Shape::kStride + piece * 8]) = kc;
      *reinterpret_cast<uint4*>(&v_tile[r * Shape::kStride + piece * 8]) = vc;
    }
    __syncthreads();

    // S = Q K^T for this warp's 16 rows and the tile's 64 keys.
    float s[Shape::kKeyTiles][4];
#pragma unroll
    for (int j = 0; j < Shape::kKeyTiles; ++j) {
      s[j][0] = s[j][1] = s[j][2] = s[j][3] = 0.f;
#pragma unroll
      for (int st = 0; st < Shape::kSteps; ++st) {
        const uint16_t* key = &k_tile[(j * 8 + g) * Shape::kStride + st * 16 + 2 * c];
        const uint32_t b[2] = {*reinterpret_cast<const uint32_t*>(key), *reinterpret_cast<const uint32_t*>(key + 8)};
        mma_16x8x16<T>(s[j], qa[st], b);
      }
    }

    // Mask (causal, past the context), then the online softmax of each row.
    float tile_max[2] = {m[0], m[1]};
#pragma unroll
    for (int j = 0; j < Shape::kKeyTiles; ++j) {
#pragma unroll
      for (int e = 0; e < 4; ++e) {
        const int key = kv0 + j * 8 + 2 * c + (e & 1);
        const int position = first_position + row0 + g + (e >> 1) * 8;
        s[j][e] = key <= position && key < context ? s[j][e] * factor : -INFINITY;
        tile_max[e >> 1] = fmaxf(tile_max[e >> 1], s[j][e]);
      }
    }
    float base[2];
#pragma unroll
    for (int r = 0; r < 2; ++r) {
      tile_max[r] = quad_max(tile_max[r]);
      base[r] = tile_max[r] == -INFINITY ? 0.f : tile_max[r];  // a row with nothing visible yet
      const float alpha = exp2f(m[r] - base[r]);
      m[r] = tile_max[r];
      l[r] *= alpha;
#pragma unroll
      for (int d = 0; d < Shape::kDimTiles; ++d) {
        acc[d][2 * r] *= alpha;
        acc[d][2 * r + 1] *= alpha;
      }
    }
#pragma unroll
    for (int j = 0; j < Shape::kKeyTiles; ++j) {
#pragma unroll
      for (int e = 0; e < 4; ++e) {
        s[j][e] = exp2f(s[j][e] - base[e >> 1]);
        l[e >> 1] += s[j][e];
      }
    }

    // O += P V: the scores' C fragments are the A fragments of P.
#pragma unroll
    for (int t = 0; t < Shape::kBlockN / 16; ++t) {
      const uint32_t a[4] = {Traits::pack(s[2 * t][0], s[2 * t][1]), Traits::pack(s[2 * t][2], s[2 * t][3]),
                             Traits::pack(s[2 * t + 1][0], s[2 * t + 1][1]),
                             Traits::pack(s[2 * t + 1][2], s[2 * t + 1][3])};
#pragma unroll
      for (int d = 0; d < Shape::kDimTiles; ++d) {
        const uint16_t* value = &v_tile[(t * 16 + 2 * c) * Shape::kStride + d * 8 + g];
        const uint32_t b[2] = {pack_halves(value[0], value[Shape::kStride]),
                               pack_halves(value[8 * Shape::kStride], value[9 * Shape::kStride])};
        mma_16x8x16<T>(acc[d], a, b);
      }
    }
  }

#pragma unroll
  for (int r = 0; r < 2; ++r) {
    const float sum = quad_sum(l[r]);
    const float inverse = sum > 0.f ? 1.f / sum : 0.f;
    const int row = row0 + g + r * 8;
    if (row < chunk) {
      T* out = o + row * q_stride + static_cast<size_t>(head) * HEAD_DIM + 2 * c;
#pragma unroll
      for (int d = 0; d < Shape::kDimTiles; ++d)
        *reinterpret_cast<uint32_t*>(out + d * 8) = Traits::pack(acc[d][2 * r] * inverse, acc[d][2 * r + 1] * inverse);
    }
  }
}

}  // namespace attn
