// Dynamic shared memory reached through its storage, as Mamba's scans and TMA code write it:
// a reinterpret_cast to a storage struct's reference, and the array's own address. (Once the
// part's array was a pointer variable of the thread's, and both named that pointer, not the
// shared memory: the const one compiled.)
struct Tile {
  float v[128];
};

// each block's 128 values reversed through the tile
__global__ void storage_reverse(const float* in, float* out) {
  extern __shared__ char smem_[];
  auto& tile = reinterpret_cast<Tile&>(smem_);
  const Tile& seen = *reinterpret_cast<const Tile*>(&smem_);
  tile.v[threadIdx.x] = in[blockIdx.x * 128 + threadIdx.x];
  __syncthreads();
  out[blockIdx.x * 128 + threadIdx.x] = seen.v[127 - threadIdx.x];
}
