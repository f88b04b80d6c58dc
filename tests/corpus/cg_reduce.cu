// cg_reduce.cu: per-block sum of squares with cooperative groups.
// Constructs: #include <cooperative_groups.h>, cg::this_thread_block(), block.sync(),
// cg::sync(block), thread_rank(), size(), cg::tiled_partition<32>(block), tile.shfl_down.

#include <cooperative_groups.h>
namespace cg = cooperative_groups;

__device__ int cg_warp_sum(cg::thread_block_tile<32> tile, int v) {
  for (int offset = 16; offset > 0; offset /= 2) v += tile.shfl_down(v, offset);
  return v;
}

extern "C" __global__ void cg_reduce(const int* __restrict__ in, int* __restrict__ out, int n) {
  __shared__ int cg_partials[32];
  cg::thread_block block = cg::this_thread_block();
  cg::thread_block_tile<32> tile = cg::tiled_partition<32>(block);
  const unsigned rank = block.thread_rank();
  const int i = blockIdx.x * block.size() + rank;
  const int v = i < n ? in[i] % 1000 : 0;
  const int warp_total = cg_warp_sum(tile, v * v);
  if (tile.thread_rank() == 0) cg_partials[rank / 32] = warp_total;
  block.sync();
  if (rank < 32) {
    const int w = rank < block.size() / 32 ? cg_partials[rank] : 0;
    const int total = cg_warp_sum(tile, w);
    if (rank == 0) out[blockIdx.x] = total;
  }
  cg::sync(block);
  // and a second round through this_thread_block() directly
  if (rank == 0) cg_partials[0] = out[blockIdx.x] & 1;
  cg::this_thread_block().sync();
  if (i < n) out[gridDim.x + i] = cg_partials[0] + (int)rank;
}
