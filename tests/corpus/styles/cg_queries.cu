// Cooperative groups asked for indices, ranks and sizes instead of threadIdx: a thread
// block's group_index/thread_index/dim_threads, the grid's thread_rank/block_rank/
// num_blocks/block_index/dim_blocks, a tile's meta_group_rank, a coalesced group's size.
#include <cooperative_groups.h>
#include <cooperative_groups/reduce.h>
namespace cg = cooperative_groups;

__global__ void cg_index(float* out, int n) {
  cg::thread_block b = cg::this_thread_block();
  unsigned i = b.group_index().x * b.dim_threads().x + b.thread_index().x;
  if (i < n) out[i] = (float)b.thread_rank() + b.num_threads();
}

__global__ void cg_grid_rank(float* out, int n) {
  auto g = cg::this_grid();
  unsigned long long i = g.thread_rank();
  if (i < n) out[i] = (float)g.block_rank() + g.num_blocks() * 0.5f + g.num_threads();
}

__global__ void cg_grid_index(float* out, int n) {
  cg::grid_group g = cg::this_grid();
  dim3 bi = g.block_index();
  dim3 d = g.dim_blocks();
  unsigned i = bi.x * blockDim.x + threadIdx.x;
  if (i < n) out[i] = (float)d.x;
}

__global__ void cg_tile_meta(float* out, int n) {
  auto tile = cg::tiled_partition<32>(cg::this_thread_block());
  unsigned i = blockIdx.x * blockDim.x + threadIdx.x;
  float v = i < n ? out[i] : 0.f;
  float s = cg::reduce(tile, v, cg::plus<float>());
  if (tile.thread_rank() == 0 && i < n) out[i] = s + tile.meta_group_rank() * 1000 + tile.meta_group_size();
}

__global__ void cg_coalesced(int* out, int n) {
  unsigned i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n && (i & 1)) {
    cg::coalesced_group act = cg::coalesced_threads();
    out[i] = act.thread_rank() + act.size() * 100;
  }
}

__global__ void cg_sync_block(float* out, int n) {
  __shared__ float s[256];
  auto b = cg::this_thread_block();
  s[b.thread_rank()] = b.thread_rank();
  cg::sync(b);
  unsigned i = blockIdx.x * b.size() + b.thread_rank();
  if (i < n) out[i] = s[(b.thread_rank() + 1) % b.size()];
}
