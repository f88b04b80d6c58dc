// A kernel with a grid-wide cooperative-groups barrier.
#include <cooperative_groups.h>
namespace cg = cooperative_groups;

extern "C" __global__ void grid_synced(int* data, int n) {
  const int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) data[i] += 1;
  cg::grid_group grid = cg::this_grid();
  grid.sync();  // ERROR-LINE
  if (i < n) data[i] += data[(i + 1) % n];
}
