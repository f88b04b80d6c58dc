// early_exit/shapes.cu: early returns before barriers that hfuse makes safe (see
// src/hfuse/transform/early_exit.py). Every kernel works for any even block size (120
// included) and is deterministic: a value read from a thread that returned is never used.
#include <cooperative_groups.h>


// A return, then a tree reduction whose loop holds the barrier.
extern "C" __global__ void ee_tree_sum(const int* __restrict__ in, int* __restrict__ out, int n) {
  __shared__ int ts_buf[1024];
  const unsigned t = threadIdx.x;
  const int i = blockIdx.x * blockDim.x + t;
  if (i >= n) return;
  ts_buf[t] = in[i];
  __syncthreads();
  for (unsigned stride = 1; stride < blockDim.x; stride *= 2) {
    if (t % (2 * stride) == 0 && t + stride < blockDim.x && i + stride < n) ts_buf[t] += ts_buf[t + stride];
    __syncthreads();
  }
  if (t == 0) out[blockIdx.x] = ts_buf[0];
  out[gridDim.x + i] = ts_buf[t];
}

// A return that splits a warp, a full-mask shuffle after it, then a barrier: natively the
// threads that returned have exited and the shuffle does not wait for them.
extern "C" __global__ void ee_warp_first(const int* __restrict__ in, int* __restrict__ out, int n) {
  __shared__ int wf_buf[1024];
  const unsigned t = threadIdx.x;
  const int i = blockIdx.x * blockDim.x + t;
  if (i >= n) return;
  const int v = in[i];
  const int first = __shfl_sync(0xffffffffu, v, 0);  // lane 0 stays whenever any lane of its warp does
  wf_buf[t] = v - first;
  __syncthreads();
  out[i] = (i ^ 1) < n ? wf_buf[t ^ 1] : -1;
}

// A helper that writes shared memory and synchronises, called twice after a return.
__device__ int ee_exchange(int* buf, int v) {
  buf[threadIdx.x] = v;
  __syncthreads();
  const int r = buf[threadIdx.x ^ 1];
  __syncthreads();  // buf is reused by the next call
  return r;
}

extern "C" __global__ void ee_helper(const int* __restrict__ in, int* __restrict__ out, int n) {
  __shared__ int eh_buf[1024];
  const int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i >= n) return;
  const int v = in[i];
  const int r = ee_exchange(eh_buf, v * 3);
  out[i] = (i ^ 1) < n ? r : -1;
  const int s = ee_exchange(eh_buf, r + 1);
  out[n + i] = (i ^ 1) < n ? s : -1;
}

// __syncthreads_or in a loop condition and __syncthreads_count after a return: the
// threads that returned must not count.
extern "C" __global__ void ee_vote(const int* __restrict__ in, int* __restrict__ out, int n) {
  const int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i >= n) return;
  int left = in[i] & 7;
  int rounds = 0;
  while (__syncthreads_or(left > 0)) {
    left--;
    rounds++;
  }
  const int positive = __syncthreads_count(in[i] > 0);
  out[i] = rounds * 10000 + positive;
}

// A parameter block taken by value, as decode-attention kernels take theirs: a return, then
// a constant the compiler computes (and a static_assert of it), then a branch on one member
// around barriers while another member's elements are written, and a member passed by value
// to an overloaded helper. Each thread pairs with its neighbour only where both stayed.
struct EeParams {
  const int* in;
  int* out;
  int* trace;
  int n;
  int rounds;
};

__device__ void ee_bump(int& v, int r) { v += r; }
__device__ void ee_bump(int& v, int r, int s) { v = v * s + r; }

extern "C" __global__ void ee_params(EeParams p) {
  __shared__ int ep_buf[1024];
  const unsigned t = threadIdx.x;
  const int i = blockIdx.x * blockDim.x + t;
  if (i >= p.n) return;
  constexpr int kLanes = sizeof(int4) / sizeof(int);
  static_assert(kLanes == 4, "an int4 holds four ints");
  int v = p.in[i] * kLanes;
  if (p.rounds > 0) {
    p.trace[i] = v;
    ee_bump(v, p.rounds, 3);
    ep_buf[t] = v;
    __syncthreads();
    v += (i ^ 1) < p.n ? ep_buf[t ^ 1] : 0;
    __syncthreads();
  }
  p.out[i] = v + kLanes;
}

// A tile renderer's shape: the tile from the thread block's index, a read-only table moved to
// that tile, a thread whose input is masked writing its own mark before returning, then
// rounds (counted from the table, alike in every thread) around the block's barriers.
extern "C" __global__ void ee_tiles(const int* __restrict__ rounds_of, const int* __restrict__ in,
                                    int* __restrict__ out, int n) {
  __shared__ int et_buf[1024];
  auto block = cooperative_groups::this_thread_block();
  const int tile = block.group_index().x;
  rounds_of += tile;
  const int rounds = rounds_of[0] & 3;
  const unsigned t = block.thread_rank();
  const int i = tile * block.size() + t;
  if (i < n && in[i] % 7 == 0) {
#pragma unroll 1
    for (int k = 0; k < 2; ++k) out[i] = -1 - k;
    return;
  }
  if (i >= n) return;
  int v = in[i];
  const int j = i ^ 1;
  const bool paired = j < n && in[j] % 7 != 0;
  for (int r = 0; r < rounds; ++r) {
    et_buf[t] = v;
    block.sync();
    v += paired ? et_buf[t ^ 1] : r;
    block.sync();
  }
  out[i] = v;
}

// A quantised GEMV's shape: the block stages a slice of the input in shared memory, threads past
// the row's end return before the block's barrier, and the survivors accumulate into a register
// array zeroed by '= {}' (declared after a comment closes the guarded work), then add it out.
template <int kRows>
__global__ void ee_accumulate(const int* __restrict__ in, const int* __restrict__ weights, int* __restrict__ out,
                              int n) {
  __shared__ int ea_slice[kRows][128];
  const int t = threadIdx.x;
  const int col = blockIdx.x * blockDim.x + t;
  for (int r = 0; r < kRows; ++r) ea_slice[r][t % 128] = in[r * 128 + t % 128];

  // threads past the end of the row leave here
  if (col >= n) return;

  __syncthreads();

  // column result
  int acc[kRows][2] = {};

  // dot products over the staged slice
#pragma unroll
  for (int r = 0; r < kRows; ++r) {
    for (int k = 0; k < 128; ++k) {
      acc[r][k & 1] += ea_slice[r][k] * weights[k * n + col];
    }
  }
  for (int r = 0; r < kRows; ++r) atomicAdd(&out[r * n + col], acc[r][0] - acc[r][1]);
}
