// stencil2d.cu: 5-point integer stencil on a 2-D image through a shared-memory tile.
// Constructs: 2-D block (16x16), 2-D grid, an early 'return' before __syncthreads(),
// static __shared__ 2-D array, a __device__ helper also defined (identically) in box3d.cu.

#define ST_TILE 16

__device__ int clamp_index(int v, int lo, int hi) {
  return v < lo ? lo : (v > hi ? hi : v);
}

extern "C" __global__ void stencil2d(const int* __restrict__ in, int* __restrict__ out, int w, int h) {
  __shared__ int tile[ST_TILE][ST_TILE];
  const int x = blockIdx.x * blockDim.x + threadIdx.x;
  const int y = blockIdx.y * blockDim.y + threadIdx.y;
  if (x >= w || y >= h) return;
  tile[threadIdx.y][threadIdx.x] = in[y * w + x];
  __syncthreads();
  int acc = 4 * tile[threadIdx.y][threadIdx.x];
  const int dx[4] = {-1, 1, 0, 0};
  const int dy[4] = {0, 0, -1, 1};
  for (int k = 0; k < 4; ++k) {
    const int nx = clamp_index(x + dx[k], 0, w - 1);
    const int ny = clamp_index(y + dy[k], 0, h - 1);
    const int tx = nx - (int)(blockIdx.x * blockDim.x);
    const int ty = ny - (int)(blockIdx.y * blockDim.y);
    int v;
    if (tx >= 0 && tx < (int)blockDim.x && ty >= 0 && ty < (int)blockDim.y)
      v = tile[ty][tx];
    else
      v = in[ny * w + nx];
    acc -= v;
  }
  out[y * w + x] = acc;
}
