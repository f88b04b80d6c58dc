// Kernel attributes of CUDA 12 that tree-sitter's grammar does not know.
#include <cooperative_groups.h>
namespace cg = cooperative_groups;

// a register cap of its own (CUDA 12.4): it caps the kernel alone
__global__ void __maxnreg__(64) capped(float* __restrict__ x, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) x[i] = x[i] * 0.5f + 1.0f;
}

// a third bound, the most blocks of a cluster
__global__ void __launch_bounds__(256, 2, 4) three_bounds(float* __restrict__ x, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) x[i] = -x[i];
}

// thread block clusters: blocks share distributed shared memory
__global__ void __cluster_dims__(2, 1, 1) cluster_pairs(float* __restrict__ x) {
  __shared__ float mine;
  cg::cluster_group cluster = cg::this_cluster();
  if (threadIdx.x == 0) mine = blockIdx.x;
  cluster.sync();
  float* other = cluster.map_shared_rank(&mine, cluster.block_rank() ^ 1);
  if (threadIdx.x == 0) x[blockIdx.x] = *other;
  cluster.sync();
}
