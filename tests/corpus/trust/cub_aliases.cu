// CUB reached the ways library code reaches it. Every block-wide use must be refused
// for the horizontal layout (CUB reads the raw threadIdx and synchronises the whole block
// inside its headers); the warp-level ones fuse.
#include <cstdint>
#include <cub/block/block_load.cuh>
#include <cub/block/block_reduce.cuh>
#include <cub/block/block_scan.cuh>
#include <cub/block/block_store.cuh>
#include <cub/warp/warp_reduce.cuh>
#include <cooperative_groups.h>

namespace mycub = cub;
namespace cg = cooperative_groups;

namespace quant {

// int8 dequantisation with the CUB block primitives behind a namespace alias
template <int kThreads, int kItems>
__global__ void dequant_alias(const int8_t* __restrict__ q, const float* __restrict__ scale, float* __restrict__ out) {
  using Load = mycub::BlockLoad<int8_t, kThreads, kItems, mycub::BLOCK_LOAD_DIRECT>;
  using Store = mycub::BlockStore<float, kThreads, kItems, mycub::BLOCK_STORE_DIRECT>;
  __shared__ typename Load::TempStorage load_storage;
  __shared__ typename Store::TempStorage store_storage;
  int8_t v[kItems];
  float f[kItems];
  const int base = blockIdx.x * kThreads * kItems;
  Load(load_storage).Load(q + base, v);
#pragma unroll
  for (int i = 0; i < kItems; ++i) f[i] = static_cast<float>(v[i]) * scale[blockIdx.x];
  Store(store_storage).Store(out + base, f);
}

}  // namespace quant

// a using-declaration
using cub::BlockReduce;
__global__ void sum_using_declaration(const float* in, float* out) {
  __shared__ BlockReduce<float, 128>::TempStorage storage;
  float s = BlockReduce<float, 128>(storage).Sum(in[blockIdx.x * 128 + threadIdx.x]);
  if (threadIdx.x == 0) out[blockIdx.x] = s;
}

// a typedef of a typedef
typedef mycub::BlockReduce<float, 128> Reduce128;
typedef Reduce128 RowReduce;
__global__ void sum_typedef(const float* in, float* out) {
  __shared__ RowReduce::TempStorage storage;
  float s = RowReduce(storage).Sum(in[blockIdx.x * 128 + threadIdx.x]);
  if (threadIdx.x == 0) out[blockIdx.x] = s;
}

// an alias template
template <typename T>
using BlockSum = cub::BlockReduce<T, 128>;
__global__ void sum_alias_template(const float* in, float* out) {
  __shared__ typename BlockSum<float>::TempStorage storage;
  float s = BlockSum<float>(storage).Sum(in[blockIdx.x * 128 + threadIdx.x]);
  if (threadIdx.x == 0) out[blockIdx.x] = s;
}

// a struct that wraps one, used through a member function only
struct RowReducer {
  typedef mycub::BlockReduce<float, 128> Impl;
  typename Impl::TempStorage* storage;
  __device__ float sum(float v) { return Impl(*storage).Sum(v); }
};
__global__ void sum_wrapper(const float* in, float* out) {
  __shared__ RowReducer::Impl::TempStorage storage;
  RowReducer r{&storage};
  float s = r.sum(in[blockIdx.x * 128 + threadIdx.x]);
  if (threadIdx.x == 0) out[blockIdx.x] = s;
}

// a macro that expands to one
#define BLOCK_REDUCE_T mycub::BlockReduce<float, 128>
__global__ void sum_macro(const float* in, float* out) {
  __shared__ BLOCK_REDUCE_T::TempStorage storage;
  float s = BLOCK_REDUCE_T(storage).Sum(in[blockIdx.x * 128 + threadIdx.x]);
  if (threadIdx.x == 0) out[blockIdx.x] = s;
}

// a helper template instantiated with a CUB block type
template <class Reduce>
__device__ float block_total(typename Reduce::TempStorage& storage, float v) { return Reduce(storage).Sum(v); }
__global__ void sum_helper_template(const float* in, float* out) {
  __shared__ mycub::BlockReduce<float, 128>::TempStorage storage;
  float s = block_total<mycub::BlockReduce<float, 128>>(storage, in[blockIdx.x * 128 + threadIdx.x]);
  if (threadIdx.x == 0) out[blockIdx.x] = s;
}

// unqualified under a using-directive inside the kernel
__global__ void scan_directive(const int* in, int* out) {
  using namespace mycub;
  __shared__ BlockScan<int, 128>::TempStorage storage;
  int v = in[blockIdx.x * 128 + threadIdx.x], sum;
  BlockScan<int, 128>(storage).ExclusiveSum(v, sum);
  out[blockIdx.x * 128 + threadIdx.x] = sum;
}

// cooperative groups' thread_block behind an alias: a helper syncs through it
using Block = cg::thread_block;
__device__ void block_barrier(Block& b) { b.sync(); }
__global__ void cg_alias(float* data) {
  Block b = cg::this_thread_block();
  float v = data[blockIdx.x * 128 + threadIdx.x];
  block_barrier(b);
  data[blockIdx.x * 128 + (threadIdx.x + 1) % 128] = v;
}

// warp-level CUB through the alias: each warp reduces its own lanes (the lane id, not
// threadIdx), so it stays correct in a warp-aligned part at any offset
__global__ void warp_sums_alias(const float* __restrict__ in, float* __restrict__ out) {
  using WarpSum = mycub::WarpReduce<float>;
  __shared__ typename WarpSum::TempStorage storage[4];
  const int warp = threadIdx.x / 32;
  float s = WarpSum(storage[warp]).Sum(in[blockIdx.x * 128 + threadIdx.x]);
  if (threadIdx.x % 32 == 0) out[blockIdx.x * 4 + warp] = s;
}

__global__ void scale_rows(float* __restrict__ data, float factor, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) data[i] = data[i] * factor + 1.0f;
}
