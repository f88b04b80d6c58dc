// libcu++ in device code: cuda::std::array and numeric_limits, cuda::atomic_ref, warp
// reductions and matches, printf and assert, a texture object, unions and bitfields.
#include <cuda/std/array>
#include <cuda/std/limits>
#include <cuda/atomic>
#include <cuda/barrier>
#include <cooperative_groups.h>
#include <cstdio>
#include <cassert>

template <int N>
__global__ void array_minmax(const float* __restrict__ x, float* __restrict__ out, int n) {
  cuda::std::array<float, N> window{};
  const int i = blockIdx.x * blockDim.x + threadIdx.x;
  float lo = cuda::std::numeric_limits<float>::max();
  float hi = cuda::std::numeric_limits<float>::lowest();
#pragma unroll
  for (int k = 0; k < N; ++k) {
    window[k] = (i + k < n) ? x[i + k] : 0.f;
    lo = fminf(lo, window[k]);
    hi = fmaxf(hi, window[k]);
  }
  if (i < n) out[i] = hi - lo;
}

__global__ void atomic_ref_count(const int* __restrict__ labels, int* __restrict__ counts, int n) {
  const int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) {
    cuda::atomic_ref<int, cuda::thread_scope_device> ref(counts[labels[i]]);
    ref.fetch_add(1, cuda::std::memory_order_relaxed);
  }
}

__global__ void warp_reduce_intrinsics(const unsigned* __restrict__ x, unsigned* __restrict__ sums,
                                       unsigned* __restrict__ groups, int n) {
  const int i = blockIdx.x * blockDim.x + threadIdx.x;
  const unsigned v = i < n ? x[i] : 0u;
  const unsigned total = __reduce_add_sync(0xffffffffu, v);
  const unsigned same = __match_any_sync(0xffffffffu, v & 7u);
  if (i < n) {
    groups[i] = __popc(same);
    if ((threadIdx.x & 31) == 0) sums[i / 32] = total;
  }
}

__global__ void checked_scale(const float* __restrict__ x, float* __restrict__ y, float s, int n) {
  assert(n >= 0);
  const int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i == 0 && n == 0) printf("checked_scale: empty input\n");
  if (i < n) y[i] = s * x[i];
}

__global__ void texture_gather(cudaTextureObject_t tex, float* __restrict__ out, int n) {
  const int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) out[i] = tex1Dfetch<float>(tex, i) * 0.5f;
}

union Bits {
  float f;
  unsigned u;
};

struct Packed {
  unsigned sign : 1;
  unsigned exponent : 8;
  unsigned mantissa : 23;
};

__global__ void split_floats(const float* __restrict__ x, unsigned* __restrict__ exps, int n) {
  const int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i >= n) return;
  Bits b;
  b.f = x[i];
  Packed p;
  p.mantissa = b.u & 0x7fffffu;
  p.exponent = (b.u >> 23) & 0xffu;
  p.sign = b.u >> 31;
  exps[i] = p.exponent + (p.sign << 8);
}

// a block barrier object in shared memory, as the CUDA guide writes it (nvcc warns about
// its dynamic initialisation, Clang calls it an error; both read the declaration whole)
#pragma nv_diag_suppress static_var_with_dynamic_init
__global__ void barrier_object_reverse(const float* __restrict__ in, float* __restrict__ out, int n) {
  auto block = cooperative_groups::this_thread_block();
  __shared__ float tile[128];
  __shared__ cuda::barrier<cuda::thread_scope_block> bar;
  if (block.thread_rank() == 0) init(&bar, block.size());
  block.sync();
  const int i = blockIdx.x * 128 + block.thread_rank();
  tile[block.thread_rank()] = i < n ? in[i] : 0.f;
  bar.arrive_and_wait();
  if (i < n) out[i] = tile[127 - block.thread_rank()];
}
