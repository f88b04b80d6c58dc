// Asynchronous copies into shared memory as CUDA's programming guide writes them: cooperative
// groups' memcpy_async and wait over the block (through an alias; unqualified after a using
// directive, two tiles in flight with wait_prior), libcu++'s cuda::memcpy_async completing on a
// block barrier object, and threads past the end leaving before the block's barrier.
#include <cooperative_groups.h>
#include <cooperative_groups/memcpy_async.h>
#include <cuda/barrier>

namespace cg = cooperative_groups;

constexpr int kTile = 128;

// one tile per block, copied by the whole block and read reversed; the last tile is short
__global__ void async_tile_reverse(const float* __restrict__ in, float* __restrict__ out, int n) {
  __shared__ float tile[kTile];
  cg::thread_block block = cg::this_thread_block();
  const int base = blockIdx.x * kTile;
  const int count = min(kTile, n - base);
  if (count <= 0) return;  // the whole block leaves
  cg::memcpy_async(block, tile, in + base, sizeof(float) * count);
  cg::wait(block);
  const int t = block.thread_rank();
  if (t < count) out[base + t] = tile[count - 1 - t] * 2.0f;
}

// the tile lands on a barrier object: with 16-byte alignment, sm_90 copies it in bulk and
// the barrier counts the bytes
#pragma nv_diag_suppress static_var_with_dynamic_init
__global__ void barrier_copy_scale(const float* __restrict__ in, float* __restrict__ out, float s, int n) {
  auto block = cg::this_thread_block();
  __shared__ alignas(16) float tile[kTile];
  __shared__ cuda::barrier<cuda::thread_scope_block> bar;
  if (block.thread_rank() == 0) init(&bar, block.size());
  block.sync();
  const int base = blockIdx.x * kTile;
  cuda::memcpy_async(block, tile, in + base, cuda::aligned_size_t<16>(sizeof(float) * kTile), bar);
  bar.arrive_and_wait();
  const int t = block.thread_rank();
  if (base + t < n) out[base + t] = s * tile[kTile - 1 - t];
}

namespace staged {
using namespace cooperative_groups;

// two tiles in flight: the first is read while the second lands; threads past the end leave
// first (the live ones read only what live threads copied)
__global__ void pair_sums(const float* __restrict__ in, float* __restrict__ out, int n) {
  __shared__ float tiles[2][kTile];
  thread_block block = this_thread_block();
  const int t = block.thread_rank();
  const int base = blockIdx.x * 2 * kTile;
  if (base + t >= n) return;
  memcpy_async(block, tiles[0], in + base, sizeof(float) * kTile);
  memcpy_async(block, tiles[1], in + base + kTile, sizeof(float) * kTile);
  const int live = min(kTile, n - base);
  wait_prior<1>(block);
  const float first = tiles[0][live - 1 - t];
  wait(block);
  out[base + t] = first + tiles[1][live - 1 - t];
}

// threads past the end leave before the block's barrier, called by its name alone
__global__ void rotate_tile(const float* __restrict__ in, float* __restrict__ out, int n) {
  __shared__ float tile[kTile];
  thread_block block = this_thread_block();
  const int t = block.thread_rank();
  const int i = blockIdx.x * kTile + t;
  if (i >= n) return;
  tile[t] = in[i];
  sync(block);
  const int live = min(kTile, n - static_cast<int>(blockIdx.x) * kTile);
  out[i] = tile[(t + 1) % live];
}
}  // namespace staged

// a two-stage pipeline over the block, as the programming guide writes it: each block sums
// `tiles` consecutive tiles, copying the next while reading the current one
#include <cuda/pipeline>
constexpr int kStages = 2;
__global__ void pipeline_sum(const float* __restrict__ in, float* __restrict__ out, int tiles) {
  auto block = cg::this_thread_block();
  __shared__ alignas(16) float stage[kStages][kTile];
  __shared__ cuda::pipeline_shared_state<cuda::thread_scope_block, kStages> state;
  auto pipe = cuda::make_pipeline(block, &state);
  const int t = block.thread_rank();
  const float* base = in + static_cast<size_t>(blockIdx.x) * tiles * kTile;
  float acc = 0.f;
  for (int fetch = 0, use = 0; use < tiles; ++use) {
    for (; fetch < tiles && fetch < use + kStages; ++fetch) {
      pipe.producer_acquire();
      cuda::memcpy_async(block, stage[fetch % kStages], base + fetch * kTile, sizeof(float) * kTile, pipe);
      pipe.producer_commit();
    }
    pipe.consumer_wait();
    acc += stage[use % kStages][kTile - 1 - t] * static_cast<float>(use + 1);
    pipe.consumer_release();
  }
  out[blockIdx.x * kTile + t] = acc;
}
