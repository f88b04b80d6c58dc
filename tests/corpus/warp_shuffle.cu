// warp_shuffle.cu: per-warp butterfly sum and xor-reduction of integers.
// Constructs: __shfl_xor_sync, __shfl_sync, __syncwarp, __activemask-free full masks,
// a 2-D block (32 x k) whose warps are its rows.

#define WS_FULL_MASK 0xffffffffu

__device__ int ws_lane() { return (int)(threadIdx.x % 32); }

extern "C" __global__ void warp_shuffle(const int* __restrict__ in, int* __restrict__ sums,
                                        int* __restrict__ xors, int n) {
  const int row = blockIdx.x * blockDim.y + threadIdx.y;   // one warp per row
  const int i = row * 32 + ws_lane();
  int v = i < n ? in[i] : 0;
  int x = v;
  for (int mask = 16; mask > 0; mask >>= 1) {
    v += __shfl_xor_sync(WS_FULL_MASK, v, mask);
    x ^= __shfl_xor_sync(WS_FULL_MASK, x, mask);
  }
  __syncwarp();
  const int first = __shfl_sync(WS_FULL_MASK, i < n ? in[i] : 0, 0);
  __syncwarp(WS_FULL_MASK);
  if (ws_lane() == 0 && row * 32 < n) {
    sums[row] = v;
    xors[row] = x ^ first;
  }
}
