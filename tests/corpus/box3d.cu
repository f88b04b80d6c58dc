// box3d.cu: 7-point integer box sum on a 3-D volume.
// Constructs: 3-D block (8x8x4), 3-D grid, threadIdx/blockIdx/blockDim .z, an early
// return with no barrier, and clamp_index() defined identically to stencil2d.cu.

__device__ int clamp_index(int v, int lo, int hi) {
  return v < lo ? lo : (v > hi ? hi : v);
}

__device__ int box_at(const int* v, int x, int y, int z, int nx, int ny, int nz) {
  x = clamp_index(x, 0, nx - 1);
  y = clamp_index(y, 0, ny - 1);
  z = clamp_index(z, 0, nz - 1);
  return v[(z * ny + y) * nx + x];
}

extern "C" __global__ void box3d(const int* __restrict__ vol, int* __restrict__ out, int nx, int ny, int nz) {
  const int x = blockIdx.x * blockDim.x + threadIdx.x;
  const int y = blockIdx.y * blockDim.y + threadIdx.y;
  const int z = blockIdx.z * blockDim.z + threadIdx.z;
  if (x >= nx || y >= ny || z >= nz) return;
  int s = box_at(vol, x, y, z, nx, ny, nz);
  s += box_at(vol, x - 1, y, z, nx, ny, nz) + box_at(vol, x + 1, y, z, nx, ny, nz);
  s += box_at(vol, x, y - 1, z, nx, ny, nz) + box_at(vol, x, y + 1, z, nx, ny, nz);
  s += box_at(vol, x, y, z - 1, nx, ny, nz) + box_at(vol, x, y, z + 1, nx, ny, nz);
  // which thread of the block wrote it, to catch a wrong thread-index mapping
  out[(z * ny + y) * nx + x] = s * 1024 + (int)((threadIdx.z * blockDim.y + threadIdx.y) * blockDim.x + threadIdx.x);
}
