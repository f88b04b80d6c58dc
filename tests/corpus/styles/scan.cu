// Warp- and block-level scans without CUB: a warp-shuffle inclusive scan, a block scan
// through shared memory with the warp totals, templates on the block size, __ballot_sync.
template <typename T>
__device__ __forceinline__ T warp_inclusive_scan(T v) {
  const int lane = threadIdx.x & 31;
#pragma unroll
  for (int o = 1; o < 32; o <<= 1) {
    const T up = __shfl_up_sync(0xffffffffu, v, o);
    if (lane >= o) v += up;
  }
  return v;
}

template <int kThreads, typename T>
__global__ void block_inclusive_scan(const T* __restrict__ in, T* __restrict__ out, int n) {
  static_assert(kThreads % 32 == 0 && kThreads <= 1024, "whole warps");
  __shared__ T warp_totals[kThreads / 32];
  const int i = blockIdx.x * kThreads + threadIdx.x;
  T v = i < n ? in[i] : T(0);
  v = warp_inclusive_scan(v);
  const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
  if (lane == 31) warp_totals[warp] = v;
  __syncthreads();
  if (warp == 0) {
    T t = lane < kThreads / 32 ? warp_totals[lane] : T(0);
    t = warp_inclusive_scan(t);
    if (lane < kThreads / 32) warp_totals[lane] = t;
  }
  __syncthreads();
  if (warp > 0) v += warp_totals[warp - 1];
  if (i < n) out[i] = v;
}

__global__ void count_positive(const float* __restrict__ x, int* __restrict__ counts, int n) {
  const int i = blockIdx.x * blockDim.x + threadIdx.x;
  const unsigned ballot = __ballot_sync(0xffffffffu, i < n && x[i] > 0.f);
  if ((threadIdx.x & 31) == 0) atomicAdd(counts + blockIdx.x, __popc(ballot));
}

__global__ void stream_compact_flags(const float* __restrict__ x, unsigned* __restrict__ flags, int n) {
  const int i = blockIdx.x * blockDim.x + threadIdx.x;
  const unsigned mask = __ballot_sync(0xffffffffu, i < n && x[i] != 0.f);
  if ((threadIdx.x & 31) == 0 && i < n) flags[i / 32] = mask;
}
