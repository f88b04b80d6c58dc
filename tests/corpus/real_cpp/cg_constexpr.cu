// A cooperative-groups reduction with its tile size a constexpr, as libraries write it.
#include <cooperative_groups.h>
#include <cooperative_groups/reduce.h>
namespace cg = cooperative_groups;

__global__ void warp_sums(const float* __restrict__ in, float* __restrict__ out) {
  constexpr int kWarp = 32;
  constexpr int kTile = kWarp / 2;
  cg::thread_block block = cg::this_thread_block();
  auto tile = cg::tiled_partition<kTile>(block);
  const float v = in[blockIdx.x * blockDim.x + threadIdx.x];
  const float s = cg::reduce(tile, v, cg::plus<float>());
  if (tile.thread_rank() == 0) out[(blockIdx.x * blockDim.x + threadIdx.x) / kTile] = s;
}

__global__ void scale(float* out, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) out[i] *= 3.0f;
}

// The reduction helper a library keeps in a header, its tile size a file-scope constant of its
// namespace (DeepSpeed's `tiled_partition<hw_warp_size>(tb)`): each tile writes its sum at its
// rank among the block's tiles.
namespace util {
constexpr int kHalfWarp = 16;

__device__ float tile_sum_to(float v, float* partial) {
  cg::thread_block block = cg::this_thread_block();
  cg::thread_block_tile<kHalfWarp> tile = cg::tiled_partition<kHalfWarp>(block);
  const float s = cg::reduce(tile, v, cg::plus<float>());
  if (tile.thread_rank() == 0) partial[tile.meta_group_rank()] = s;
  return s;
}
}  // namespace util

__global__ void tile_sums(const float* __restrict__ in, float* __restrict__ out) {
  const float v = in[blockIdx.x * blockDim.x + threadIdx.x];
  util::tile_sum_to(v, out + blockIdx.x * (blockDim.x / util::kHalfWarp));
}
